//! gpsense's side of the SPARQL algebra measurement against Oxigraph (`cargo xtask bench --only
//! sparql` runs both sides and prints the table): the embedded ConceptNet-100K loaded once, each
//! query of the set answered warm, one JSON line per query (`gpsense_benches::sparql_run`):
//!
//! `cargo run --release -p gpsense-benches --example sparql_algebra -- benches/sparql/algebra.rq [--runs N] [--dump FILE]`

/// The allocator the `gpsense` binary uses, so that this measures what users run.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    if let Err(e) = gpsense_benches::sparql_run::main_with(std::env::args().skip(1)) {
        eprintln!("sparql_algebra: {e}");
        std::process::exit(2);
    }
}

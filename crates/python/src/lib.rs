//! The gpsense Python package's native module (`gpsense._gpsense`), built by maturin: `Graph`
//! (load, ingest, save, summary, queries, TruST, networkx), `QueryResult` (rows streamed from a
//! query thread, or collected on the calling thread), `TrustMatch`. Matching runs with the GIL
//! released; errors become the exceptions of `gpsense._errors` with the CLI's messages.

mod algebra;
mod errors;
mod graph;
mod interrupt;
mod options;
mod result;
mod shared;
mod stream;
mod trust;

use pyo3::prelude::*;

/// The allocator the `gpsense` CLI uses (a small answer makes a few hundred small allocations),
/// so that Python pays what the Rust API pays. Only Rust's own allocations go through it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _gpsense(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<graph::Graph>()?;
    m.add_class::<result::QueryResult>()?;
    m.add_class::<trust::TrustMatch>()?;
    Ok(())
}

//! Writes seeded synthetic triples (`relation<TAB>head<TAB>tail`) for memory and speed checks at
//! scale: `cargo run --release -p gpsense-benches --example synth_triples -- 34000000 /tmp/synth.tsv`.

use std::io::Write;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let edges: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let path = args.next().unwrap_or_else(|| "synthetic.tsv".into());
    let mut out = std::io::BufWriter::new(std::fs::File::create(&path)?);
    // In blocks, so the text never has to fit in memory at once.
    let block = 1_000_000;
    for (i, start) in (0..edges).step_by(block).enumerate() {
        let n = block.min(edges - start);
        out.write_all(
            gpsense_benches::synth::triples_tsv_block(n, edges, 7 + i as u64).as_bytes(),
        )?;
    }
    out.flush()
}

//! The README's first query from Rust: `cargo run -p gpsense --example five_lines`.

fn main() -> Result<(), gpsense::Error> {
    let graph = gpsense::Graph::embedded()?; // ConceptNet-100K, built in
    let q = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";
    for row in graph.query(q).run()?.rows() {
        println!("{}", row.get("x").unwrap_or_default());
    }
    Ok(())
}

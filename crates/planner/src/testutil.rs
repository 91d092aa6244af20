//! Fixtures shared by the unit tests.

use gpsense_graph::{GraphBuilder, KnowledgeGraph};

/// A small ConceptNet-like graph.
pub(crate) fn small() -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    let triples = [
        ("cat", "IsA", "animal"),
        ("dog", "IsA", "animal"),
        ("lizard", "IsA", "animal"),
        ("dog", "AtLocation", "home"),
        ("cat", "AtLocation", "home"),
        ("lizard", "AtLocation", "desert"),
        ("chocolate cake", "IsA", "dessert"),
        ("chocolate", "HasProperty", "sweet"),
        ("chocolate cake", "HasA", "chocolate"),
        ("cat", "Desires", "chocolate"),
        ("кошка", "IsA", "животное"),
    ];
    for (h, r, t) in triples {
        b.add_triple(h, r, t, 1.0).unwrap();
    }
    b.build().unwrap().0
}

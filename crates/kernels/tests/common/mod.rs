//! Shared by the kernel tests: a seeded generator and the graph crate's arrays as kernels see them.
#![allow(dead_code)] // each test file uses a different subset

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::{Adjacency, GraphView};

/// SplitMix64: seeded, so failures repeat.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}

pub fn adjacency(c: &gpsense_graph::Csr) -> Adjacency<'_> {
    Adjacency::new(c.offsets(), c.targets(), c.labels())
}

pub fn view(g: &KnowledgeGraph) -> GraphView<'_> {
    GraphView {
        out: adjacency(g.out()),
        inc: adjacency(g.inc()),
        node_labels: g.node_labels(),
    }
}

//! A graph with the engines that borrow it, in one owner the Python objects share.

use std::sync::OnceLock;

use gpsense::{Loaded, Matcher};
use gpsense_trust::{Opened, Trust};

/// What borrows the graph: the matcher (built with the graph) and TruST's name index (built on
/// the first `trust` call, then kept), and TruST's devices (opened and given the graph on the
/// first `trust` call that asks for each, then kept: `auto`'s (the GPU, or the CPU and why) and the
/// emulator).
pub struct Engines<'g> {
    pub matcher: Matcher<'g>,
    pub trust: OnceLock<Trust<'g>>,
    pub trust_gpu: OnceLock<Result<Opened, String>>,
    pub trust_emulated: OnceLock<Result<Opened, String>>,
}

self_cell::self_cell!(
    /// A loaded graph and its engines; held in an `Arc` by `Graph` and by running queries.
    pub struct Shared {
        owner: Loaded,
        #[not_covariant]
        dependent: Engines,
    }
);

impl Shared {
    pub fn open(loaded: Loaded) -> Result<Shared, gpsense::Error> {
        Shared::try_new(loaded, |l| {
            Ok(Engines {
                matcher: Matcher::new(l).map_err(gpsense::Error::Compress)?,
                trust: OnceLock::new(),
                trust_gpu: OnceLock::new(),
                trust_emulated: OnceLock::new(),
            })
        })
    }

    pub fn loaded(&self) -> &Loaded {
        self.borrow_owner()
    }

    /// `text` read as every front end reads it: standard SPARQL when it parses as such (the graph
    /// path or the full evaluator), else the short dialect.
    pub fn read(&self, text: &str) -> Result<gpsense::Reading, gpsense::Error> {
        self.with_dependent(|_, e| gpsense::read(&e.matcher, text, None))
    }

    pub fn graph(&self) -> &gpsense_graph::KnowledgeGraph {
        &self.borrow_owner().graph
    }
}

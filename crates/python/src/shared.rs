//! A graph with the engines that borrow it, in one owner the Python objects share.

use gpsense::{Loaded, Matcher};

/// What borrows the graph: the matcher (built with the graph) and TruST's name index and devices
/// (each made by the first `trust` call that needs it, then kept; a device on the matcher's own).
pub struct Engines<'g> {
    pub matcher: Matcher<'g>,
    pub trusts: gpsense::Trusts<'g>,
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
                trusts: gpsense::Trusts::default(),
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

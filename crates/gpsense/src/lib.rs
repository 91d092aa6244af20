//! The gpsense library: what an application needs to answer queries on a knowledge graph, above
//! the engine crates. It owns where a graph comes from ([`Loaded`]: the embedded ConceptNet-100K, a
//! snapshot, a compressed `.gpsc` file, or text ingested on the fly), the engine a graph is matched
//! with ([`Matcher`]: the plain engine, or matching on a compressed graph then exact expansion), and
//! what SPARQL adds around a graph pattern ([`solutions`]: FILTERs, OFFSET, ORDER BY, `COUNT(*)`,
//! ASK). The `gpsense` CLI, its SPARQL endpoint and the Python package are built on it.
//!
//! ```no_run
//! use gpsense::{Dialect, Loaded, Matcher, MatchOptions};
//! use gpsense_graph::ingest::NoProgress;
//!
//! let loaded = Loaded::open(None, &NoProgress)?; // the embedded ConceptNet-100K
//! let matcher = Matcher::new(&loaded)?;
//! let p = matcher.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", Dialect::Short)?;
//! let opts = gpsense::solutions::options_for(&p, &MatchOptions::default(), false);
//! let g = matcher.graph();
//! gpsense::solutions::select(&matcher, &p, &opts, &mut |batch| {
//!     for row in batch.iter() {
//!         println!("{}", g.node_name(row[0]));
//!     }
//!     true // go on
//! })?;
//! # Ok::<(), gpsense::Error>(())
//! ```

mod error;
pub mod explain;
pub mod fmt;
pub mod info;
mod matcher;
mod reading;
pub mod solutions;
mod source;

pub use error::Error;
pub use gpsense_planner::{Dialect, Form, Prepared};
pub use gpsense_runtime::{EngineKind, MatchOptions, MatchReport, RowBatch, Semantics};
pub use gpsense_sparql as sparql;
pub use matcher::{Matcher, Reported};
pub use reading::{read, Reading};
pub use source::{Loaded, DEFAULT_NAME};

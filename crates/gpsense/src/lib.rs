//! The gpsense library: what an application needs to answer queries on a knowledge graph, above
//! the engine crates. Most programs need only [`Graph`]: open a graph (the embedded ConceptNet-100K,
//! a snapshot, a compressed `.gpsc` file, or text ingested on the fly), then ask it a query in
//! either dialect, with the engine and limits as a builder:
//!
//! ```
//! let graph = gpsense::Graph::embedded()?;
//! let q = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";
//! for row in graph.query(q).run()?.rows() {
//!     println!("{}", row.get("x").unwrap_or_default());
//! }
//! # Ok::<(), gpsense::Error>(())
//! ```
//!
//! [`Query::count`] counts without listing where the engine can, [`Query::explain`] says how the
//! query ran, [`Graph::trust`] ranks near matches (TruST), [`Graph::compress`] builds the
//! compressed graph. Below the builders, the crate owns where a graph comes from ([`Loaded`]), the
//! engine a graph is matched with ([`Matcher`]: the plain engine, or matching on a compressed graph
//! then exact expansion), how a text is read ([`read`]), and what SPARQL adds around a graph
//! pattern ([`solutions`]: FILTERs, OFFSET, ORDER BY, `COUNT(*)`, ASK), streamed. The `gpsense`
//! CLI, its SPARQL endpoint and the Python package are built on those.

#![warn(missing_docs)]

mod error;
pub mod explain;
pub mod fmt;
mod graph;
pub mod info;
mod matcher;
mod reading;
pub mod solutions;
mod source;
mod trusts;

pub use error::Error;
pub use gpsense_compress::CompressOptions;
pub use gpsense_graph::ingest::{NoProgress, Progress};
pub use gpsense_planner::{Dialect, Form, Prepared};
pub use gpsense_runtime::{
    BatchReport, DeviceCounters, EngineKind, MatchOptions, MatchReport, Outgrown, RowBatch,
    Semantics,
};
pub use gpsense_sparql as sparql;
pub use gpsense_trust as trust;
pub use graph::{Answer, Graph, Query, Row, Trust};
pub use matcher::{Matcher, Reported};
pub use reading::{Reading, read};
pub use source::{DEFAULT_NAME, Loaded};
pub use trusts::Trusts;

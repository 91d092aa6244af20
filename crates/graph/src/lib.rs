//! The knowledge-graph model of gpsense: what every other crate reads.
//!
//! Owns the [`KnowledgeGraph`] (a directed, edge-labelled multigraph with a name [`Dictionary`] and a
//! [`Csr`] in each direction), its [`GraphBuilder`], streaming [`ingest`] of the common-sense formats
//! (ConceptNet, triples TSV, CSV, WordNet, the subgraph-matching benchmark format, N-Triples,
//! N-Quads, Turtle, TriG, RDF/XML, KGTK), the RDF naming convention ([`rdf`]), [`export`] back to N-Triples or
//! TSV, checksummed [`snapshot`]s, and conversion to and from `petgraph`. It knows nothing about
//! queries.

mod aliases;
mod builder;
mod csr;
mod dict;
mod error;
pub mod export;
mod graph;
pub mod ingest;
mod petgraph_conv;
pub mod rdf;
pub mod snapshot;

pub use aliases::Aliases;
pub use builder::GraphBuilder;
pub use csr::Csr;
pub use dict::{Dictionary, MAX_NAME_LEN};
pub use error::GraphError;
pub use graph::{GraphParts, GraphStats, KnowledgeGraph};
pub use snapshot::SnapshotError;

/// A node (concept) id: dense, `0..node_count()`.
pub type NodeId = u32;
/// A relation (edge label) id: dense, `0..relation_count()`. 16 bits keep the topology at 12 bytes
/// per edge for both directions; more than 65,536 relations is refused with an error.
pub type LabelId = u16;

//! Matching across processes on timely dataflow: owns partitioned graphs and the distributed join.
//!
//! The graph is split by node ([`partition`]): each part holds the out- and in-lists of its own
//! nodes, and each process loads one part. A query is planned identically on every worker
//! ([`plan`]), and the join runs as a timely dataflow in BiGJoin's style ([`dataflow`]): a partial
//! match is extended by one query node per level, *proposed* by the bound neighbour with the fewest
//! candidates (the *count*, carried in the partial match since that neighbour was bound) at its
//! owner, and *intersected* at the owner of each proposed node, which holds both of its lists and so
//! checks every edge back to the match, the node filters and injectivity in one place. Rows or
//! counts stream to worker 0. [`cluster`] connects the processes (bounded, with a handshake that
//! checks they agree, and a heartbeat) and turns a peer that dies or stops into an error on every
//! other process.

mod error;
pub mod partition;

pub use error::DistError;
pub use partition::{
    fingerprint, load_part, owner, part_path, write_parts, write_parts_with, PartWritten,
    Partition, Vocab,
};
pub mod cluster;
mod connect;
pub mod dataflow;
mod frames;
pub mod hostfile;
pub mod job;
pub mod plan;
mod reading;
mod run;

pub use run::{run, Outcome};
pub mod filter;

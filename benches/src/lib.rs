//! Shared workloads for the criterion benches: synthetic graphs of a chosen size and the raw
//! little-endian snapshot layout that the bincode snapshot is measured against; common-sense query
//! generation as in the GpSense paper; the SPARQL algebra query set and its answer digest.

pub mod querygen;
pub mod raw;
pub mod sparql_run;
pub mod sparql_set;
pub mod suite;
pub mod synth;
pub mod trust_trials;

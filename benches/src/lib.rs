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

/// Stops an example with `what`'s error on stderr (exit status 1): the examples' one way out on
/// bad input.
pub fn or_exit<T, E: std::fmt::Display>(r: Result<T, E>, what: &dyn std::fmt::Display) -> T {
    r.unwrap_or_else(|e| {
        eprintln!("error: {what}: {e}");
        std::process::exit(1)
    })
}

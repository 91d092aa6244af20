//! Why a TruST search cannot run.

use gpsense_planner::ParseError;
use gpsense_runtime::device::DeviceError;
use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Error)]
pub enum TrustError {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error("the template has no nodes")]
    EmptyTemplate,
    #[error("the data graph has no nodes")]
    EmptyData,
    #[error("template edge {edge} refers to node {node}, but the template has {nodes} nodes")]
    BadEdge {
        edge: usize,
        node: usize,
        nodes: usize,
    },
    #[error("the template has {count} {what}; TruST supports at most {limit}")]
    TooLarge {
        what: &'static str,
        count: usize,
        limit: usize,
    },
    #[error(
        "template node {name:?} has {degree} incident edges; TruST supports at most {limit} per node"
    )]
    DegreeTooLarge {
        name: String,
        degree: usize,
        limit: usize,
    },
    #[error(
        "the score tables need {bytes} bytes ({template} template nodes x {data} data nodes x 2 \
         tables of 4-byte scores), more than the memory budget of {budget} bytes; raise \
         --memory-budget or use fewer template nodes"
    )]
    MemoryBudget {
        bytes: u64,
        budget: u64,
        template: usize,
        data: usize,
    },
    #[error(
        "{phase} needs {bytes} bytes of device memory with the score tables, more than the \
         {budget} bytes the memory budget and the device's free memory allow; raise \
         --memory-budget, use a smaller --beam, fewer template nodes or --engine cpu"
    )]
    DeviceBudget {
        phase: &'static str,
        bytes: u64,
        budget: u64,
    },
    #[error(transparent)]
    Device(DeviceError),
    /// The GPU engine asked for by name and none opened: why (the driver's or the self-check's
    /// words).
    #[error("{0}")]
    NoGpu(String),
    #[error("{name} = {value}: {why}")]
    BadParameter {
        name: &'static str,
        value: String,
        why: &'static str,
    },
}

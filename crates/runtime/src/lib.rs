//! The gpsense matching engine: owns executing a query graph on a data graph.
//!
//! [`Engine`] plans a [`QueryGraph`](gpsense_planner::QueryGraph) (planner crate), then either
//! builds a candidate space (candidates per query node from its neighbours' adjacency, candidate edges
//! per query edge, refined to a fixpoint; the per-candidate work is `gpsense-kernels` bodies) and
//! searches it on the CPU ([`EngineKind::Dfs`]: DAF's DAG and adaptive order, failing sets, leaves
//! counted combinatorially, work stealing), or runs the GpSense filtering phase (candidate bitsets,
//! compaction, neighbour filtering over both CSR directions, refinement in reversed order) and the
//! GPU-shaped join ([`EngineKind::Kernels`], the emulator, the GPU). All give identical answers. Rows
//! stream out in batches through a callback, with projection, DISTINCT and LIMIT applied here.
//!
//! [`EngineKind::Auto`] picks `dfs` or the device per query from a cost model ([`cost`]): both times
//! estimated from the plan and the graph's degree statistics, with constants calibrated on a device.

pub mod compressed;
pub mod cost;
pub mod device;
mod engine;
mod error;
mod executor;
mod filtering;
mod gpu_leaves;
mod gpu_pipeline;
mod kernel_join;
pub mod layout;
mod options;
mod order;
mod output;
mod prefetch;
mod samples;
mod search;
mod segments;
mod space;
mod spares;
mod two_ends;
mod users;
mod warm;

pub use compressed::{CompressedEngine, CompressedReport, ExpansionStats};
pub use cost::{AutoChoice, CostFileError, DeviceCosts, Reason};
pub use device::DeviceCounters;
pub use engine::{
    component_query, count_product, counts_multiply, look_ahead, self_check, Answered, BatchPhases,
    BatchQuery, BatchReport, DeviceState, Engine, MatchReport, Outgrown, SearchSummary, Timings,
    SHARE_AFTER,
};
pub use error::MatchError;
pub use filtering::FilterReport;
pub use gpu_pipeline::{DeviceGraph, DeviceReport};
pub use layout::MAX_QUERY_NODES;
pub use options::{
    default_memory_budget, parse_bytes, physical_memory, EngineKind, MatchOptions, Semantics,
};
pub use output::RowBatch;
pub use users::{thread_work_time, DeviceUser};

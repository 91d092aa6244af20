//! The gpsense matching engine: owns executing a query graph on a data graph.
//!
//! [`Engine`] plans a [`QueryGraph`](gpsense_planner::QueryGraph) (planner crate), runs the GpSense
//! filtering phase (candidate bitsets, compaction, neighbour filtering over both CSR directions,
//! refinement in reversed order) with the kernel bodies of `gpsense-kernels` on the CPU executor, then
//! one of two joins: [`EngineKind::Dfs`] (CPU-first, depth-first set intersections) or
//! [`EngineKind::Kernels`] (the GPU-shaped join: edge candidates and level-by-level combine with the
//! two-step output, batched under a memory budget). Both give identical answers. Rows stream out in
//! batches through a callback, with projection, DISTINCT and LIMIT applied here.

pub mod compressed;
pub mod device;
mod engine;
mod error;
mod executor;
mod filtering;
mod gpu_pipeline;
mod kernel_join;
mod layout;
mod options;
mod order;
mod output;
mod search;
mod space;

pub use compressed::{CompressedEngine, CompressedReport, ExpansionStats};
pub use engine::{Engine, MatchReport, SearchSummary, Timings};
pub use error::MatchError;
pub use filtering::FilterReport;
pub use layout::MAX_QUERY_NODES;
pub use options::{default_memory_budget, parse_bytes, EngineKind, MatchOptions, Semantics};
pub use output::RowBatch;

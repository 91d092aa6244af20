//! Why a match could not be answered.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum MatchError {
    #[error("the query has {found} {what}; the engine supports at most {limit}")]
    QueryTooLarge {
        what: &'static str,
        found: usize,
        limit: usize,
    },
    #[error(
        "the query is disconnected: its {components} components have {product} combined matches, more \
         than the limit of {limit}; add LIMIT (or --limit), count them (--count), or connect the components"
    )]
    CartesianExplosion {
        components: usize,
        product: String,
        limit: u64,
    },
    #[error(
        "a single partial match has {rows} extensions, more than the memory budget of {budget_rows} rows; \
         raise --memory-budget or use --engine dfs"
    )]
    MemoryBudget { rows: u64, budget_rows: u64 },
    #[error(
        "the query's {} on the device needs {bytes} bytes, more than the memory budget of {budget} \
         bytes (--memory-budget, or the device's free memory if less); raise --memory-budget{}, \
         free the device, or use --engine dfs",
        if *.filtering { "filtering" } else { "candidate space" },
        if *.filtering { " well past it (its candidate space, sized once filtered, needs more)" } else { "" }
    )]
    DeviceBudget {
        bytes: u64,
        budget: u64,
        /// Refused before filtering, for filtering's bytes alone: what the candidate space needs
        /// besides is known only once filtered.
        filtering: bool,
    },
    #[error(
        "the query's candidate space outgrew the memory budget of {budget} bytes ({bytes} needed \
         when the build stopped); raise --memory-budget, or anchor the query with a concept"
    )]
    SpaceBudget { bytes: u64, budget: u64 },
    #[error(
        "the count is more than 2^128 - 1 (340282366920938463463374607431768211455): too many \
         matches to count; anchor the query with a concept, or count its parts"
    )]
    CountOverflow,
    #[error("DISTINCT needs more than the memory budget ({bytes} bytes) to remember the rows seen; raise --memory-budget or drop DISTINCT")]
    DistinctTooLarge { bytes: u64 },
    #[error("ORDER BY needs more than the memory budget ({bytes} bytes) to hold the rows it sorts; raise --memory-budget, or narrow the query")]
    OrderTooLarge { bytes: u64 },
    #[error(
        "level {level} of the query found {rows} partial matches, more than its room of {room} in \
         its device batch; the batch left it to be answered alone"
    )]
    OutgrewBatch { level: usize, rows: u64, room: u64 },
    /// A LIMIT query of a batch whose root's first part did not complete its answer. Under
    /// [`crate::Outgrown::Leave`] the batch leaves it to its caller, whose query alone runs the
    /// rest: the parts after the first would hold up the batching thread.
    #[error(
        "the first {first} of the query's {candidates} root candidates did not reach its LIMIT in \
         its device batch; the batch left it to be answered alone"
    )]
    LimitPastFirstPart { first: u64, candidates: u64 },
    /// A batched query refused for device memory that its own budget allows: other users held
    /// it. Under [`crate::Outgrown::Leave`] the batch leaves it to its caller, whose query alone
    /// waits for them and tries again.
    #[error("{0}; the batch left it to be answered alone")]
    BatchShortOfMemory(Box<MatchError>),
    #[error("invalid plan: {0}")]
    Plan(String),
    #[error(transparent)]
    Device(#[from] crate::device::DeviceError),
}

impl MatchError {
    /// Whether a device batch left the query to its caller to be answered alone
    /// ([`crate::Outgrown::Leave`]): its level outgrew its batch room, its root's first part did
    /// not reach its LIMIT, or other users held the device memory it needed.
    pub fn left_by_batch(&self) -> bool {
        matches!(
            self,
            MatchError::OutgrewBatch { .. }
                | MatchError::LimitPastFirstPart { .. }
                | MatchError::BatchShortOfMemory(_)
        )
    }
}

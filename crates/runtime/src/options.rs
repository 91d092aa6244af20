//! What a user chooses for a match: semantics, engine, limits, memory.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Which maps count as matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Semantics {
    /// Subgraph isomorphism (GpSense's Definition 1): injective over all query nodes, concept nodes
    /// included, non-induced. Two query nodes never map to one data node.
    #[default]
    Iso,
    /// Homomorphism (SPARQL's basic graph patterns): query nodes may map to the same data node.
    Hom,
}

impl Semantics {
    pub fn describe(self) -> &'static str {
        match self {
            Semantics::Iso => "iso (subgraph isomorphism: injective over all query nodes, concepts included; non-induced)",
            Semantics::Hom => "hom (homomorphism, as SPARQL: query nodes may share a data node)",
        }
    }
}

impl FromStr for Semantics {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "iso" => Ok(Semantics::Iso),
            "hom" => Ok(Semantics::Hom),
            _ => Err(format!("unknown semantics {s:?} (expected iso or hom)")),
        }
    }
}

impl fmt::Display for Semantics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Semantics::Iso => "iso",
            Semantics::Hom => "hom",
        })
    }
}

/// Which join runs after the (shared) filtering phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// The GPU when a driver and a device are found, else `dfs` (the fastest on a CPU).
    #[default]
    Auto,
    /// CPU-first: a candidate space searched depth-first (DAF's adaptive order and failing sets,
    /// leaves counted without enumeration, work stealing across threads).
    Dfs,
    /// The GpSense join as a GPU runs it, on the CPU executor: edge candidates (count, scan, write),
    /// then level-by-level combine with the two-step output, batched under the memory budget.
    Kernels,
    /// The whole pipeline as kernel launches on an NVIDIA GPU (cudarc; PTX from `cargo xtask ptx`).
    Gpu,
    /// The GPU pipeline with every launch's threads run on the CPU by the host emulator: the same
    /// launch sequence and entry functions as `gpu`, without a GPU.
    Emulated,
}

impl FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(EngineKind::Auto),
            "dfs" => Ok(EngineKind::Dfs),
            "kernels" => Ok(EngineKind::Kernels),
            "gpu" => Ok(EngineKind::Gpu),
            "emulated" => Ok(EngineKind::Emulated),
            _ => Err(format!(
                "unknown engine {s:?} (expected auto, dfs, kernels, gpu or emulated)"
            )),
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EngineKind::Auto => "auto",
            EngineKind::Dfs => "dfs",
            EngineKind::Kernels => "kernels",
            EngineKind::Gpu => "gpu",
            EngineKind::Emulated => "emulated",
        })
    }
}

/// Settings of one match.
#[derive(Clone, Debug)]
pub struct MatchOptions {
    pub semantics: Semantics,
    pub engine: EngineKind,
    /// Refinement rounds after the forward filtering pass (the paper's best variant: one, in reversed
    /// plan order).
    pub refine_rounds: u32,
    /// Bytes the join may hold in partial matches at once; beyond it, it works in batches.
    pub memory_budget: u64,
    /// Stop after this many rows (the query's LIMIT and this, whichever is smaller).
    pub limit: Option<u64>,
    /// A disconnected query whose components' match counts multiply beyond this is refused (unless
    /// limited).
    pub max_cartesian: u64,
    /// Lanes per work-item group in the kernels engine (32 = a warp; 1 = one thread per partial match).
    pub lanes: usize,
    /// Run on one thread (for repeatable timings and tests).
    pub single_thread: bool,
    /// Stop a match after this long; the report then says `timed_out` and holds the answer so far.
    pub timeout: Option<std::time::Duration>,
    /// Set (from another thread, or a signal handler) to stop the match as if its time limit had
    /// passed: the report says `timed_out` and holds the answer so far. Seen where the time limit
    /// is (the search's checks, the candidate-space build, between device launches).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Search nodes (dfs) between two looks at the clock, the stop flag and idle workers. The default
    /// costs nothing measurable; tests set 1 to make work stealing split at every step.
    pub check_every: u32,
    /// Fill the report's explanations (the join plan's reasons), for `--explain`.
    pub explain: bool,
    /// The row callback may block for as long as its reader likes (a stream read half-way, then
    /// left). Such a match must hold nothing other matches need while it waits: the compressed
    /// engine then expands on threads of this match's own rather than its shared pool, and the
    /// caller runs the match inside a rayon pool of its own (`ThreadPool::install`). The device
    /// engines call back while holding the device; a caller must not block there.
    pub blocking_rows: bool,
}

impl Default for MatchOptions {
    fn default() -> Self {
        MatchOptions {
            semantics: Semantics::Iso,
            engine: EngineKind::Auto,
            refine_rounds: 1,
            memory_budget: default_memory_budget(),
            limit: None,
            max_cartesian: 1_000_000_000,
            lanes: 1,
            single_thread: false,
            timeout: None,
            cancel: None,
            check_every: 1024,
            explain: false,
            blocking_rows: false,
        }
    }
}

impl MatchOptions {
    /// The row limit of a match: the query's LIMIT and this option's, whichever is smaller.
    pub fn limit_for(&self, query_limit: Option<u64>) -> Option<u64> {
        match (query_limit, self.limit) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A quarter of physical memory (from `/proc/meminfo`), or 1 GiB where it cannot be read.
pub fn default_memory_budget() -> u64 {
    // Read once: `MatchOptions::default()` is built per query, and reading /proc/meminfo took
    // about half of a small anchored query's time.
    static BUDGET: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(read_memory_budget)
}

fn read_memory_budget() -> u64 {
    physical_memory().map_or(1 << 30, |bytes| bytes / 4)
}

/// This machine's memory in bytes (`MemTotal` of `/proc/meminfo`), or `None` where it cannot be
/// read.
pub fn physical_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib = line.split_whitespace().nth(1)?.parse::<u64>().ok()?;
    kib.checked_mul(1024)
}

/// Parses sizes such as `512M`, `4G`, `1073741824`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (digits, unit) = match s.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 512M, 4G)"))?;
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        other => return Err(format!("unknown size unit {other:?} (use K, M, G or T)")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes_and_names() {
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("4G"), Ok(4 << 30));
        assert_eq!(parse_bytes("1000"), Ok(1000));
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("4X").is_err());
        assert!(parse_bytes("99999999999T").is_err());
        assert_eq!("hom".parse(), Ok(Semantics::Hom));
        assert!("iso2".parse::<Semantics>().is_err());
        assert_eq!("kernels".parse(), Ok(EngineKind::Kernels));
        assert!(default_memory_budget() > 0);
    }
}

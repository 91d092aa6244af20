//! Time, cancellation and memory for the parts spareval runs (the matcher has its own): checked as
//! quads are read, as the matcher's rows are handed over and as answers leave, so a `*` path, a
//! GROUP BY or an ORDER BY stops when asked, or when it has grown past the memory budget.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why an evaluation stopped before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Interrupted {
    #[error("the query ran out of time")]
    TimedOut,
    /// The process grew by more than the budget while the query ran (what spareval holds for a
    /// GROUP BY, ORDER BY, DISTINCT or a hash join is not counted row by row: resident memory is).
    #[error(
        "the query held {grown} bytes more than at its start, past the memory budget of {budget} \
         bytes (a GROUP BY, ORDER BY, DISTINCT or join over too many rows); raise \
         --memory-budget or make the query more selective"
    )]
    Memory { grown: u64, budget: u64 },
}

/// A deadline, a stop flag and a memory budget, looked at every [`Watch::EVERY`] ticks.
#[derive(Debug, Default)]
pub struct Watch {
    deadline: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
    budget: u64,
    /// Resident memory at the first look (after [`Watch::EVERY`] ticks, so that a short query
    /// never reads `/proc`): growth is counted from there.
    resident_at_start: std::sync::OnceLock<Option<u64>>,
    ticks: AtomicU32,
    /// Why it stopped, once it has: from then on every look says so at once. spareval's path
    /// closures keep going past an error (they collect errors and finish the closure), so the
    /// dataset must also stop handing out quads (`GraphDataset`).
    stopped: std::sync::Mutex<Option<Interrupted>>,
    /// Whether `stopped` holds a reason: read on every tick instead of taking the lock.
    has_stopped: AtomicBool,
}

impl Watch {
    const EVERY: u32 = 4096;

    pub fn new(deadline: Option<Instant>, cancel: Option<Arc<AtomicBool>>, budget: u64) -> Self {
        Watch {
            deadline,
            cancel,
            budget,
            resident_at_start: std::sync::OnceLock::new(),
            ticks: AtomicU32::new(0),
            stopped: std::sync::Mutex::new(None),
            has_stopped: AtomicBool::new(false),
        }
    }

    /// Why the evaluation stopped, if it has.
    pub fn stopped(&self) -> Option<Interrupted> {
        if !self.has_stopped.load(Ordering::Acquire) {
            return None;
        }
        *self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one unit of work; every so often, whether to stop.
    pub fn tick(&self) -> Result<(), Interrupted> {
        if let Some(why) = self.stopped() {
            return Err(why);
        }
        if self
            .ticks
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_add(1)
            .is_multiple_of(Self::EVERY)
        {
            self.check()
        } else {
            Ok(())
        }
    }

    pub fn check(&self) -> Result<(), Interrupted> {
        let result = self.look();
        if let Err(why) = result {
            *self.stopped.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            self.has_stopped.store(true, Ordering::Release);
        }
        result
    }

    fn look(&self) -> Result<(), Interrupted> {
        let cancelled = self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        let late = self.deadline.is_some_and(|d| Instant::now() >= d);
        if cancelled || late {
            return Err(Interrupted::TimedOut);
        }
        let start = *self.resident_at_start.get_or_init(resident_bytes);
        if let (Some(start), Some(now)) = (start, resident_bytes()) {
            let grown = now.saturating_sub(start);
            if grown > self.budget {
                return Err(Interrupted::Memory {
                    grown,
                    budget: self.budget,
                });
            }
        }
        Ok(())
    }
}

/// This process's resident memory (Linux: `/proc/self/statm`; elsewhere unknown).
fn resident_bytes() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * 4096)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

//! Time limit and cancellation for the parts spareval runs (the matcher has its own): checked as
//! quads are read and as answers leave, so a `*` path or a GROUP BY stops when asked.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why an evaluation stopped before its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Interrupted {
    #[error("the query ran out of time")]
    TimedOut,
}

/// A deadline and a stop flag, looked at every [`Watch::EVERY`] ticks.
#[derive(Debug, Default)]
pub struct Watch {
    deadline: Option<Instant>,
    cancel: Option<Arc<AtomicBool>>,
    ticks: AtomicU32,
}

impl Watch {
    const EVERY: u32 = 4096;

    pub fn new(deadline: Option<Instant>, cancel: Option<Arc<AtomicBool>>) -> Self {
        Watch {
            deadline,
            cancel,
            ticks: AtomicU32::new(0),
        }
    }

    /// Counts one unit of work; every so often, whether to stop.
    pub fn tick(&self) -> Result<(), Interrupted> {
        if self
            .ticks
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(Self::EVERY)
        {
            self.check()
        } else {
            Ok(())
        }
    }

    pub fn check(&self) -> Result<(), Interrupted> {
        let cancelled = self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        let late = self.deadline.is_some_and(|d| Instant::now() >= d);
        if cancelled || late {
            Err(Interrupted::TimedOut)
        } else {
            Ok(())
        }
    }
}

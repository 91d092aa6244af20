//! The server's bounds: how many queries run at once, how many wait and for how long, and each
//! query's time limit and row cap (a request may lower those two, never raise them).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::protocol::Params;

/// Server-wide bounds, from the command line.
#[derive(Clone, Debug)]
pub struct Limits {
    pub max_concurrent: usize,
    pub max_queued: usize,
    pub queue_wait: Duration,
    pub timeout: Duration,
    pub max_rows: u64,
    pub max_body_bytes: usize,
    pub max_query_bytes: usize,
}

impl Limits {
    /// The time limit and row cap of one request: its own where lower than the server's.
    pub fn for_request(&self, p: &Params) -> (Duration, u64) {
        let timeout = p.timeout_ms.map_or(self.timeout, |ms| {
            Duration::from_millis(ms).min(self.timeout)
        });
        let rows = p.max_rows.map_or(self.max_rows, |r| r.min(self.max_rows));
        (timeout, rows)
    }
}

/// Why a query was not admitted (a 503 with `Retry-After`).
#[derive(Debug, PartialEq, Eq)]
pub enum Busy {
    /// Every slot busy and the queue full.
    QueueFull,
    /// Waited the longest a request may wait for a slot.
    Waited(Duration),
}

impl Busy {
    pub fn message(&self, limits: &Limits) -> String {
        match self {
            Busy::QueueFull => format!(
                "server busy: {} queries running and {} waiting, the most it allows; retry later",
                limits.max_concurrent, limits.max_queued
            ),
            Busy::Waited(d) => format!(
                "server busy: no query slot came free within {} ms ({} queries run at once); \
                 retry later",
                d.as_millis(),
                limits.max_concurrent
            ),
        }
    }
}

/// Admission: a fair semaphore of `max_concurrent` slots, before it a queue of at most
/// `max_queued` requests, each waiting at most `queue_wait`. A slot is held until the query's
/// thread is done with it, even if the client has gone (the thread still runs to its time limit).
pub struct Admission {
    slots: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_queued: usize,
    queue_wait: Duration,
}

impl Admission {
    pub fn new(limits: &Limits) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(limits.max_concurrent.max(1))),
            waiting: AtomicUsize::new(0),
            max_queued: limits.max_queued,
            queue_wait: limits.queue_wait,
        }
    }

    /// A slot, at once or after waiting in the queue.
    pub async fn admit(&self) -> Result<OwnedSemaphorePermit, Busy> {
        if let Ok(slot) = self.slots.clone().try_acquire_owned() {
            return Ok(slot);
        }
        let Some(_place) = Place::take(&self.waiting, self.max_queued) else {
            return Err(Busy::QueueFull);
        };
        match tokio::time::timeout(self.queue_wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(slot)) => Ok(slot),
            // The semaphore is never closed; a closed one would mean no slot ever comes.
            Ok(Err(_)) | Err(_) => Err(Busy::Waited(self.queue_wait)),
        }
    }

    /// Queries running now.
    pub fn running(&self, limits: &Limits) -> usize {
        limits
            .max_concurrent
            .max(1)
            .saturating_sub(self.slots.available_permits())
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(SeqCst)
    }
}

/// A place in the queue, given back on every path (also when the client goes away and the
/// request's future is dropped mid-wait).
struct Place<'a>(&'a AtomicUsize);

impl<'a> Place<'a> {
    fn take(count: &'a AtomicUsize, max: usize) -> Option<Self> {
        count
            .fetch_update(SeqCst, SeqCst, |n| (n < max).then_some(n + 1))
            .ok()
            .map(|_| Place(count))
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(concurrent: usize, queued: usize, wait_ms: u64) -> Limits {
        Limits {
            max_concurrent: concurrent,
            max_queued: queued,
            queue_wait: Duration::from_millis(wait_ms),
            timeout: Duration::from_secs(10),
            max_rows: 100,
            max_body_bytes: 1 << 20,
            max_query_bytes: 1 << 16,
        }
    }

    #[test]
    fn a_request_may_lower_its_limits_but_not_raise_them() {
        let l = limits(1, 0, 0);
        let asked = |timeout_ms, max_rows| Params {
            query: String::new(),
            timeout_ms,
            max_rows,
        };
        assert_eq!(
            l.for_request(&asked(None, None)),
            (Duration::from_secs(10), 100)
        );
        assert_eq!(
            l.for_request(&asked(Some(50), Some(7))),
            (Duration::from_millis(50), 7)
        );
        assert_eq!(
            l.for_request(&asked(Some(60_000), Some(1_000))),
            (Duration::from_secs(10), 100)
        );
    }

    #[tokio::test]
    async fn beyond_the_slots_requests_queue_then_are_refused() {
        let l = limits(1, 1, 50);
        let a = Admission::new(&l);
        let first = a.admit().await.expect("a free slot");
        assert_eq!(a.running(&l), 1);
        // One may wait; it gives up after the queue wait.
        assert_eq!(a.admit().await.unwrap_err(), Busy::Waited(l.queue_wait));
        assert_eq!(a.waiting(), 0, "the place is given back");
        // With the queue full, the next is refused at once.
        let (waiting, refused) = tokio::join!(a.admit(), async {
            tokio::task::yield_now().await;
            a.admit().await
        });
        assert_eq!(refused.unwrap_err(), Busy::QueueFull);
        assert!(waiting.is_err());
        drop(first);
        assert!(a.admit().await.is_ok(), "a slot given back is free again");
    }
}

//! The server's bounds: how many queries run at once, in which lane, how many wait and for how
//! long, and each query's time limit and row cap (a request may lower those two, never raise them).

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
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
    /// Bytes per answer; beyond, the answer is cut at a row and says so.
    pub max_response_bytes: u64,
    pub max_body_bytes: usize,
    pub max_query_bytes: usize,
    /// Slots for light queries beside the `max_concurrent` ones (0: none).
    pub light_slots: usize,
    /// A query in a light slot past this long is heavy: it restarts in a main slot.
    pub light_limit: Duration,
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

/// Which slots a query runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// The `max_concurrent` slots, with the full time limit.
    Main,
    /// The light slots: a short time limit and a small answer, or the query is heavy and goes to
    /// the main lane (its text remembered, so the next time it goes there at once).
    Light,
}

/// A slot, given back when dropped (it travels with the response body: a slot is busy until
/// the last byte is sent or the client is dropped).
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    pub lane: Lane,
}

/// Admission: a fair semaphore of `max_concurrent` slots and a second one of `light_slots`, before
/// them a queue of at most `max_queued` requests, each waiting at most `queue_wait`.
///
/// Fairness: queries that ran past the light limit are remembered (by their text) as heavy and
/// wait for the main slots only; any other query may also take a light slot. A client looping
/// heavy queries then fills the main slots, never the light ones, and a cheap query from anyone
/// is answered beside them.
pub struct Admission {
    slots: Arc<Semaphore>,
    light: Arc<Semaphore>,
    light_slots: usize,
    waiting: AtomicUsize,
    max_queued: usize,
    queue_wait: Duration,
    heavy: Mutex<HeavySet>,
}

impl Admission {
    pub fn new(limits: &Limits) -> Self {
        Admission {
            slots: Arc::new(Semaphore::new(limits.max_concurrent.max(1))),
            light: Arc::new(Semaphore::new(limits.light_slots)),
            light_slots: limits.light_slots,
            waiting: AtomicUsize::new(0),
            max_queued: limits.max_queued,
            queue_wait: limits.queue_wait,
            heavy: Mutex::new(HeavySet::default()),
        }
    }

    /// A slot, at once or after waiting in the queue; a query known heavy takes a main slot only.
    pub async fn admit(&self, heavy: bool) -> Result<Slot, Busy> {
        let light_ok = !heavy && self.light_slots > 0;
        if let Some(slot) = self.try_admit(light_ok) {
            return Ok(slot);
        }
        let Some(_place) = Place::take(&self.waiting, self.max_queued) else {
            return Err(Busy::QueueFull);
        };
        let main = async {
            let permit = self.slots.clone().acquire_owned().await;
            permit.map(|p| Slot {
                _permit: p,
                lane: Lane::Main,
            })
        };
        let light = async {
            if !light_ok {
                return std::future::pending().await;
            }
            let permit = self.light.clone().acquire_owned().await;
            permit.map(|p| Slot {
                _permit: p,
                lane: Lane::Light,
            })
        };
        let either = async {
            tokio::select! {
                slot = main => slot,
                slot = light => slot,
            }
        };
        match tokio::time::timeout(self.queue_wait, either).await {
            Ok(Ok(slot)) => Ok(slot),
            // The semaphores are never closed; a closed one would mean no slot ever comes.
            Ok(Err(_)) | Err(_) => Err(Busy::Waited(self.queue_wait)),
        }
    }

    fn try_admit(&self, light_ok: bool) -> Option<Slot> {
        if let Ok(p) = self.slots.clone().try_acquire_owned() {
            return Some(Slot {
                _permit: p,
                lane: Lane::Main,
            });
        }
        let p = light_ok
            .then(|| self.light.clone().try_acquire_owned().ok())
            .flatten()?;
        Some(Slot {
            _permit: p,
            lane: Lane::Light,
        })
    }

    /// Whether a query with this text ran past the light limit lately.
    pub fn is_heavy(&self, text: &str) -> bool {
        self.heavy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(text_key(text))
    }

    pub fn mark_heavy(&self, text: &str) {
        self.heavy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(text_key(text));
    }

    /// Queries running now, in both lanes.
    pub fn running(&self, limits: &Limits) -> usize {
        let main = limits.max_concurrent.max(1) - self.slots.available_permits();
        main + (self.light_slots - self.light.available_permits())
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(SeqCst)
    }
}

/// A query's text with its white space collapsed, hashed: the same query sent twice, however
/// it is laid out, is known.
fn text_key(text: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    for word in text.split_whitespace() {
        word.hash(&mut h);
    }
    h.finish()
}

/// The texts known heavy: at most [`HeavySet::MAX`], the oldest forgotten first.
#[derive(Default)]
struct HeavySet {
    keys: HashSet<u64>,
    order: VecDeque<u64>,
}

impl HeavySet {
    const MAX: usize = 4096;

    fn contains(&self, key: u64) -> bool {
        self.keys.contains(&key)
    }

    fn insert(&mut self, key: u64) {
        if !self.keys.insert(key) {
            return;
        }
        self.order.push_back(key);
        if self.order.len() > Self::MAX {
            if let Some(old) = self.order.pop_front() {
                self.keys.remove(&old);
            }
        }
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
            max_response_bytes: 1 << 20,
            max_body_bytes: 1 << 20,
            max_query_bytes: 1 << 16,
            light_slots: 0,
            light_limit: Duration::from_millis(100),
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
        let first = a.admit(false).await.expect("a free slot");
        assert_eq!(a.running(&l), 1);
        // One may wait; it gives up after the queue wait.
        assert_eq!(a.admit(false).await.err(), Some(Busy::Waited(l.queue_wait)));
        assert_eq!(a.waiting(), 0, "the place is given back");
        // With the queue full, the next is refused at once.
        let (waiting, refused) = tokio::join!(a.admit(false), async {
            tokio::task::yield_now().await;
            a.admit(false).await
        });
        assert_eq!(refused.err(), Some(Busy::QueueFull));
        assert!(waiting.is_err());
        drop(first);
        assert!(
            a.admit(false).await.is_ok(),
            "a slot given back is free again"
        );
    }

    #[tokio::test]
    async fn heavy_queries_leave_the_light_slot_to_others() {
        let mut l = limits(1, 4, 50);
        l.light_slots = 1;
        let a = Admission::new(&l);
        let heavy = "SELECT  (COUNT(*) AS ?n)\nWHERE { ?a ?r ?b }";
        a.mark_heavy(heavy);
        assert!(a.is_heavy("SELECT (COUNT(*) AS ?n) WHERE { ?a ?r ?b }"));
        assert!(!a.is_heavy("ASK { ?a ?r ?b }"));
        let main = a.admit(true).await.expect("the main slot");
        assert_eq!(main.lane, Lane::Main);
        // A second heavy query waits for the main slot only, and gives up.
        assert_eq!(a.admit(true).await.err(), Some(Busy::Waited(l.queue_wait)));
        // A light one takes the light slot at once.
        let light = a.admit(false).await.expect("the light slot");
        assert_eq!(light.lane, Lane::Light);
        assert_eq!(a.running(&l), 2);
        // A light query queued behind both gets whichever frees first.
        let (queued, ()) = tokio::join!(a.admit(false), async {
            tokio::task::yield_now().await;
            drop(light);
        });
        assert_eq!(queued.map(|s| s.lane).ok(), Some(Lane::Light));
    }

    #[test]
    fn the_heavy_set_forgets_the_oldest() {
        let mut set = HeavySet::default();
        for k in 0..(HeavySet::MAX as u64 + 10) {
            set.insert(k);
        }
        assert!(!set.contains(0) && !set.contains(9));
        assert!(set.contains(10) && set.contains(HeavySet::MAX as u64 + 9));
        assert_eq!(set.keys.len(), HeavySet::MAX);
    }
}

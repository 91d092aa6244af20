//! A queue worked from both ends: `auto`'s batch ranks the counts it could give either engine,
//! the device most favoured first, and the CPU's workers take from the back one at a time while
//! the device takes growing chunks from the front. Where they meet is found at run time, not
//! estimated: the cost model ranks yeast's queries well but is 10-170x off in scale there.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

pub(crate) struct TwoEnds<T> {
    items: Mutex<VecDeque<T>>,
    /// Items it was made with.
    total: usize,
    /// Signalled when the back takes the last item (a waiting front gives up).
    emptied: Condvar,
}

impl<T> TwoEnds<T> {
    pub(crate) fn new(items: Vec<T>) -> Self {
        TwoEnds {
            total: items.len(),
            items: Mutex::new(items.into()),
            emptied: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<T>> {
        // A worker that panicked holding the lock left the queue whole: take it as it is.
        self.items.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Waits until `deadline`, or until the back has taken everything; whether items remain.
    pub(crate) fn wait_until(&self, deadline: Instant) -> bool {
        let items = self.lock();
        let wait = deadline.saturating_duration_since(Instant::now());
        let (items, _) = self
            .emptied
            .wait_timeout_while(items, wait, |items| !items.is_empty())
            .unwrap_or_else(|e| e.into_inner());
        !items.is_empty()
    }

    /// Up to `n` items from the front, in order.
    pub(crate) fn front(&self, n: usize) -> Vec<T> {
        let mut items = self.lock();
        let n = n.min(items.len());
        items.drain(..n).collect()
    }

    /// One item from the back.
    pub(crate) fn back(&self) -> Option<T> {
        let mut items = self.lock();
        let item = items.pop_back();
        if items.is_empty() {
            self.emptied.notify_all();
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_front_takes_chunks_in_order_and_the_back_one_at_a_time() {
        let q = TwoEnds::new((0..6).collect());
        assert_eq!(q.front(1), [0]);
        assert_eq!(q.back(), Some(5));
        assert_eq!(q.front(2), [1, 2]);
        assert_eq!(q.front(8), [3, 4]);
        assert_eq!((q.front(1), q.back()), (vec![], None));
    }

    #[test]
    fn a_waiting_front_wakes_when_the_back_takes_the_last_item() {
        let q = TwoEnds::new(vec![1, 2]);
        let start = Instant::now();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                while q.back().is_some() {}
            });
            assert!(!q.wait_until(start + Duration::from_secs(3600)));
        });
        assert!(start.elapsed() < Duration::from_secs(60));
    }

    #[test]
    fn a_front_waits_out_its_deadline_while_items_remain() {
        let q = TwoEnds::new(vec![1]);
        let start = Instant::now();
        assert!(q.wait_until(start + Duration::from_millis(30)));
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert!(q.wait_until(start));
    }
}

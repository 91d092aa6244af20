//! Where matches go: projection, DISTINCT, LIMIT and the caller's callback, shared by all workers.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hashbrown::HashSet;

use crate::MatchError;

/// A batch of projected rows: `rows` rows of `width` values each (data node ids for node columns,
/// relation ids for edge-variable columns).
#[derive(Clone, Copy, Debug)]
pub struct RowBatch<'a> {
    pub data: &'a [u32],
    pub width: usize,
    pub rows: usize,
}

impl<'a> RowBatch<'a> {
    pub fn iter(&self) -> impl Iterator<Item = &'a [u32]> + '_ {
        (0..self.rows).map(move |i| &self.data[i * self.width..(i + 1) * self.width])
    }
}

/// The callback receiving rows; returns whether to go on.
pub type OnRows<'a> = &'a mut (dyn FnMut(RowBatch) -> bool + Send);

struct State<'a> {
    emitted: u64,
    seen: HashSet<Box<[u32]>>,
    on_rows: OnRows<'a>,
    batch: Vec<u32>,
    error: Option<MatchError>,
}

/// Collects full rows (slot layout) from the joins, projects them and hands them on.
pub struct Output<'a> {
    /// Slots of the projected columns.
    columns: Vec<usize>,
    distinct: bool,
    limit: Option<u64>,
    /// Whether the join may count leaf matches instead of producing rows.
    count_only: bool,
    distinct_budget: u64,
    /// Matches counted (count-only mode), exact: leaf products pass 2^64 on real graphs. Added
    /// in batches (a worker's flush), so a lock costs little.
    counted: Mutex<u128>,
    /// `counted` capped at `u64::MAX`, read without the lock by [`Output::count_wanted`] (limits
    /// are `u64`).
    counted_capped: AtomicU64,
    /// Rows handed out so far (`State::emitted`), read without the lock by [`Output::rows_wanted`].
    emitted: AtomicU64,
    limit_reached: AtomicBool,
    stop: AtomicBool,
    /// When the caller's time limit ends the match.
    deadline: Option<Instant>,
    /// Nanoseconds the deadline was moved back by ([`Output::postpone_deadline`]).
    postponed: AtomicU64,
    /// The caller's stop flag (`MatchOptions::cancel`), seen as a passed deadline.
    cancel: Option<Arc<AtomicBool>>,
    timed_out: AtomicBool,
    state: Mutex<State<'a>>,
}

impl<'a> Output<'a> {
    pub fn new(
        columns: Vec<usize>,
        distinct: bool,
        limit: Option<u64>,
        count_only: bool,
        distinct_budget: u64,
        on_rows: OnRows<'a>,
    ) -> Self {
        Output {
            columns,
            distinct,
            limit,
            count_only: count_only && !distinct,
            distinct_budget,
            counted: Mutex::new(0),
            counted_capped: AtomicU64::new(0),
            emitted: AtomicU64::new(0),
            limit_reached: AtomicBool::new(false),
            // Even LIMIT 0 runs until a first row, to tell whether the limit cut anything.
            stop: AtomicBool::new(false),
            deadline: None,
            postponed: AtomicU64::new(0),
            cancel: None,
            timed_out: AtomicBool::new(false),
            state: Mutex::new(State {
                emitted: 0,
                seen: HashSet::new(),
                on_rows,
                batch: Vec::new(),
                error: None,
            }),
        }
    }

    /// Whether the join may count instead of producing rows.
    pub fn count_only(&self) -> bool {
        self.count_only
    }

    /// Stops the match at `deadline` (the answer so far is kept and reported as timed out).
    pub fn with_deadline(mut self, deadline: Option<Instant>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Stops the match when `cancel` is set, as at a deadline.
    pub fn with_cancel(mut self, cancel: Option<Arc<AtomicBool>>) -> Self {
        self.cancel = cancel;
        self
    }

    pub fn stopped(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return true;
        }
        let cancelled = self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed));
        if cancelled || self.deadline().is_some_and(|d| Instant::now() >= d) {
            self.timed_out.store(true, Ordering::Relaxed);
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Records that the time limit cut the match short where the host did not see it: a device's
    /// kernels stopped on their own clock.
    pub fn time_out(&self) {
        self.timed_out.store(true, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
    }

    fn deadline(&self) -> Option<Instant> {
        let by = std::time::Duration::from_nanos(self.postponed.load(Ordering::Relaxed));
        self.deadline.map(|d| d + by)
    }

    /// Moves the deadline back by `by`: a query of a device batch that goes on alone was charged
    /// only its share of the batch's time, not the time the others took.
    pub fn postpone_deadline(&self, by: std::time::Duration) {
        let ns = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.postponed.fetch_add(ns, Ordering::Relaxed);
    }

    /// Time left before the deadline (`None`: no deadline).
    pub fn remaining(&self) -> Option<std::time::Duration> {
        self.deadline()
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// Whether the deadline cut the match short.
    pub fn timed_out(&self) -> bool {
        self.timed_out.load(Ordering::Relaxed)
    }

    /// Count-only mode under a limit: the matches still to count before the limit is known to cut
    /// the answer (one past it).
    pub fn count_wanted(&self) -> Option<u64> {
        let counted = self.counted_capped.load(Ordering::Relaxed);
        self.limit
            .map(|l| l.saturating_add(1).saturating_sub(counted))
    }

    /// Whether a LIMIT (ASK's included) may end the answer early.
    pub(crate) fn limited(&self) -> bool {
        self.limit.is_some()
    }

    /// Row mode under a limit, without DISTINCT (where a row may be a repeat): the rows still to
    /// produce before the limit is known to cut the answer (one past it).
    pub fn rows_wanted(&self) -> Option<u64> {
        if self.distinct || self.count_only {
            return None;
        }
        let emitted = self.emitted.load(Ordering::Relaxed);
        self.limit
            .map(|l| l.saturating_add(1).saturating_sub(emitted))
    }

    /// Rows handed to the callback so far.
    pub(crate) fn handed_out(&self) -> u64 {
        self.emitted.load(Ordering::Relaxed)
    }

    /// Count-only mode: `n` more matches. A total past `u128::MAX` is the count's overflow.
    pub fn add_count(&self, n: u128) {
        let total = {
            let mut counted = self.counted.lock().unwrap_or_else(|p| p.into_inner());
            let Some(total) = counted.checked_add(n) else {
                drop(counted);
                self.count_overflowed();
                return;
            };
            *counted = total;
            total
        };
        let capped = u64::try_from(total).unwrap_or(u64::MAX);
        self.counted_capped.store(capped, Ordering::Relaxed);
        if self.limit.is_some_and(|l| total > u128::from(l)) {
            self.limit_reached.store(true, Ordering::Relaxed);
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Whether `n` more matches counted would stop the answer at its LIMIT (or it is stopped
    /// already), without counting them: a device batch asks before it hands over a count that
    /// may be only part of the answer.
    pub(crate) fn count_would_stop(&self, n: u128) -> bool {
        let counted = *self.counted.lock().unwrap_or_else(|p| p.into_inner());
        self.stopped()
            || self
                .limit
                .is_some_and(|l| counted.saturating_add(n) > u128::from(l))
    }

    /// Whether full rows of `width` slots would stop the answer at its LIMIT (or it is stopped
    /// already), without handing them out: as [`Output::rows`] would take them, a repeat under
    /// DISTINCT not counted.
    pub(crate) fn rows_would_stop(&self, rows: &[u32], width: usize) -> bool {
        if self.stopped() {
            return true;
        }
        let Some(limit) = self.limit else {
            return false;
        };
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        // The limit stops the answer at a new row past it.
        let wanted = limit.saturating_add(1).saturating_sub(state.emitted);
        if !self.distinct {
            return (rows.len() / width.max(1)) as u64 >= wanted;
        }
        let mut new: HashSet<Vec<u32>> = HashSet::new();
        for row in rows.chunks_exact(width.max(1)) {
            let projected: Vec<u32> = self.columns.iter().map(|&s| row[s]).collect();
            if !state.seen.contains(projected.as_slice()) {
                new.insert(projected);
                if new.len() as u64 >= wanted {
                    return true;
                }
            }
        }
        false
    }

    /// The count passed `u128::MAX`: the match stops with [`MatchError::CountOverflow`].
    pub fn count_overflowed(&self) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.error.get_or_insert(MatchError::CountOverflow);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Full rows of `width` slots; returns whether to go on.
    pub fn rows(&self, rows: &[u32], width: usize) -> bool {
        if self.stopped() {
            return false;
        }
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        self.take(&mut state, rows.chunks_exact(width))
    }

    fn take<'r>(&self, state: &mut State<'a>, rows: impl Iterator<Item = &'r [u32]>) -> bool {
        let width = self.columns.len();
        let mut batch = std::mem::take(&mut state.batch);
        batch.clear();
        let mut n = 0usize;
        for row in rows {
            let start = batch.len();
            batch.extend(self.columns.iter().map(|&s| row[s]));
            // A repeated row under DISTINCT is not "more": it neither counts nor reaches the limit.
            if self.distinct && state.seen.contains(&batch[start..]) {
                batch.truncate(start);
                continue;
            }
            if self.limit.is_some_and(|l| state.emitted >= l) {
                batch.truncate(start);
                self.limit_reached.store(true, Ordering::Relaxed);
                self.stop.store(true, Ordering::Relaxed);
                break;
            }
            if self.distinct && !self.remember(state, &batch[start..]) {
                batch.truncate(start);
                break;
            }
            state.emitted += 1;
            n += 1;
        }
        self.emitted.store(state.emitted, Ordering::Relaxed);
        let go_on = n == 0
            || (state.on_rows)(RowBatch {
                data: &batch,
                width,
                rows: n,
            });
        state.batch = batch;
        if !go_on {
            self.stop.store(true, Ordering::Relaxed);
        }
        !self.stopped()
    }

    /// Remembers a new projected row; records an error, stops and returns false when the set would
    /// outgrow the budget.
    fn remember(&self, state: &mut State<'a>, row: &[u32]) -> bool {
        let bytes = (state.seen.len() as u64 + 1) * (row.len() as u64 * 4 + 32);
        if bytes > self.distinct_budget {
            state.error.get_or_insert(MatchError::DistinctTooLarge {
                bytes: self.distinct_budget,
            });
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        state.seen.insert(row.into());
        true
    }

    /// Rows (or matches counted), whether the limit cut the answer short, and any error.
    pub fn finish(self) -> (u128, bool, Option<MatchError>) {
        self.outcome()
    }

    /// [`Output::finish`] without giving the output up: a query of a device batch is answered
    /// while the batch still holds its output (its sink stays borrowed until the batch ends).
    pub(crate) fn outcome(&self) -> (u128, bool, Option<MatchError>) {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let limit_reached = self.limit_reached.load(Ordering::Relaxed);
        let total = if self.count_only {
            let counted = *self.counted.lock().unwrap_or_else(|p| p.into_inner());
            self.limit.map_or(counted, |l| counted.min(u128::from(l)))
        } else {
            u128::from(state.emitted)
        };
        (total, limit_reached, state.error.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What a batch asks before it hands over a first part: whether it would stop the answer,
    /// as `rows` and `add_count` would take it (a repeat under DISTINCT not counted), with
    /// nothing handed out by the asking.
    #[test]
    fn a_first_part_stops_the_answer_only_past_its_limit() {
        let mut handed = 0;
        let mut sink = |b: RowBatch| {
            handed += b.rows;
            true
        };
        // Rows of two slots, the first projected, under DISTINCT and LIMIT 2.
        let out = Output::new(vec![0], true, Some(2), false, 1 << 20, &mut sink);
        let repeats = [7, 1, 7, 2, 8, 3];
        assert!(
            !out.rows_would_stop(&repeats, 2),
            "two distinct rows, no third"
        );
        assert!(out.rows_would_stop(&[7, 1, 8, 2, 9, 3], 2));
        assert!(out.rows(&[7, 1], 2));
        assert!(
            !out.rows_would_stop(&[7, 5, 8, 6], 2),
            "7 was seen: one new row"
        );
        assert!(out.rows_would_stop(&[5, 5, 8, 6], 2));
        drop(out);
        assert_eq!(handed, 1);
        let mut sink = |_: RowBatch| true;
        let out = Output::new(vec![0], false, Some(10), true, 0, &mut sink);
        out.add_count(4);
        assert!(
            !out.count_would_stop(6),
            "a limit is known to cut only past it"
        );
        assert!(out.count_would_stop(7));
        assert_eq!(out.finish().0, 4);
    }

    #[test]
    fn a_postponed_deadline_gives_back_the_time_it_was_moved_by() {
        let mut sink = |_: RowBatch| true;
        let past = Instant::now() - Duration::from_millis(1);
        let out = Output::new(vec![0], false, None, true, 0, &mut sink).with_deadline(Some(past));
        // A batched query charged only its share: the others' time is given back.
        out.postpone_deadline(Duration::from_secs(3600));
        assert!(!out.stopped());
        assert!(out
            .remaining()
            .is_some_and(|r| r > Duration::from_secs(3500)));
        assert!(!out.timed_out());
    }
}

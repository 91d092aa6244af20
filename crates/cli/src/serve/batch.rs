//! Requests answered together. On a device engine (`gpu`, `emulated`, or `auto` with a GPU), the
//! COUNT(*), ASK and SELECT requests that `solutions::match_batch` answers whole (graph path, no
//! FILTER; a SELECT without OFFSET or ORDER BY) go to one thread, which gathers those arriving
//! within a short window, at most `--device-batch` of them, and answers them with one
//! `match_batch` call: one sequence of device launches instead of one per request. Each request
//! keeps its own time limit (counted from when its thread took it up, in its slot: the batch gets
//! what is left of it), cancel flag, LIMIT, errors and format; its thread waits for its count or
//! its rows (held by the batch, at most its LIMIT's) and writes the answer as before. Each is
//! replied to as soon as its own answer is final, and a query whose level outgrows its batch room
//! is left to its own thread to be answered alone (`Outgrown::Leave`), on device buffers of its
//! own: the batching thread goes on to the next batch instead of running it.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gpsense::solutions::{self, Asked};
use gpsense::{Matcher, Reported};
use gpsense_planner::{Form, Prepared};
use gpsense_runtime::{BatchReport, EngineKind, MatchError, MatchOptions, Outgrown, RowBatch};
use serde_json::{json, Value};

use super::execute::Failure;

/// `--batch-window-ms`: its default and its most.
pub const DEFAULT_WINDOW_MS: u64 = 2;
pub const MAX_WINDOW_MS: u64 = 1_000;
/// How often a gathering batch looks for requests whose clients left.
const POLL: Duration = Duration::from_millis(10);

/// How requests are gathered.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// How long the first request of a batch waits for others.
    pub window: Duration,
    /// Requests per batch at most.
    pub max: usize,
}

/// Whether `engine` batches at all: a device engine, or `auto` where a GPU was found, on a graph
/// that is not compressed, with batches of more than one.
pub fn applies(matcher: &Matcher, engine: EngineKind, settings: &Settings) -> bool {
    let device = match engine {
        EngineKind::Gpu | EngineKind::Emulated => true,
        EngineKind::Auto => matcher.engine().gpu().is_ok(),
        _ => false,
    };
    device && settings.max > 1 && matcher.compressed().is_none()
}

/// Whether `p` goes to the batcher: COUNT(*) or ASK on the graph path without FILTER, or a
/// SELECT without FILTER, OFFSET or ORDER BY (the ones `match_batch` answers whole; the others it
/// would answer one by one anyway).
pub fn batchable(p: &Prepared) -> bool {
    match p.form {
        Form::Ask | Form::Count { .. } => p.filters.is_empty(),
        Form::Select => !solutions::needs_stage(p),
    }
}

/// A request's answer from its batch: its report, and for a SELECT its projected rows (row after
/// row, as many values each as it has columns).
pub type Batched = (Reported, Vec<u32>);

/// One request waiting for its batch.
struct Job {
    prepared: Prepared,
    /// Its options, `timeout` its whole time limit (a SELECT's `limit`: the rows it may take).
    opts: MatchOptions,
    arrived: Instant,
    cancel: Arc<AtomicBool>,
    /// For a SELECT, the row values it may hold (beyond, its byte cap would cut the answer
    /// anyway); `None`: it is counted.
    rows: Option<usize>,
    reply: mpsc::SyncSender<Result<Batched, Failure>>,
}

impl Job {
    fn gone(&self) -> bool {
        self.cancel.load(Relaxed)
    }
}

/// The endpoint's batching figures since start, for `/health`.
#[derive(Default)]
pub struct Stats {
    /// Requests handed to the batcher.
    requests: AtomicU64,
    /// Of them, waiting for their batch now.
    waiting: AtomicUsize,
    /// Dropped before their batch ran: the client went away.
    dropped: AtomicU64,
    /// Answered as timed out before their batch ran (their time was up).
    expired: AtomicU64,
    /// `match_batch` calls.
    rounds: AtomicU64,
    /// Device batches run and queries answered in them (the engine's `BatchReport`).
    batches: AtomicU64,
    batched: AtomicU64,
    launches: AtomicU64,
    reads: AtomicU64,
    /// Queries answered on the CPU after the GPU failed during a batch (`auto`).
    on_cpu: AtomicU64,
    /// Queries whose level outgrew their batch room, or refused for device memory that other
    /// users held, left to their own threads to be answered
    /// alone (beside the next batches, not ahead of them).
    left: AtomicU64,
}

impl Stats {
    fn add(&self, b: &BatchReport) {
        self.rounds.fetch_add(1, Relaxed);
        self.batches.fetch_add(b.batches as u64, Relaxed);
        self.batched.fetch_add(b.batched as u64, Relaxed);
        self.launches.fetch_add(b.counters.launches, Relaxed);
        self.reads.fetch_add(b.counters.syncs, Relaxed);
        self.on_cpu.fetch_add(b.on_cpu as u64, Relaxed);
    }
}

/// The batching thread's door.
pub struct Batcher {
    jobs: mpsc::Sender<Job>,
    settings: Settings,
    stats: Arc<Stats>,
}

impl Batcher {
    /// Starts the thread that gathers and answers requests over `matcher`.
    pub fn start(
        matcher: &'static Matcher<'static>,
        settings: Settings,
    ) -> std::io::Result<Batcher> {
        let (jobs, rx) = mpsc::channel();
        let stats = Arc::new(Stats::default());
        let shared = stats.clone();
        std::thread::Builder::new()
            .name("gpsense-batch".into())
            .spawn(move || gather_loop(matcher, &rx, settings, &shared))?;
        Ok(Batcher {
            jobs,
            settings,
            stats,
        })
    }

    /// Answers `p` in the next batch, waiting for it: its count, or given `rows` its rows (at most
    /// `opts.limit` of them and about `rows` values); `opts.timeout` is the request's whole time
    /// limit, counted from `arrived`. Answered alone if the batching thread is gone.
    pub fn answer(
        &self,
        matcher: &Matcher,
        p: Prepared,
        opts: MatchOptions,
        arrived: Instant,
        rows: Option<usize>,
    ) -> Result<Batched, Failure> {
        let (reply, answer) = mpsc::sync_channel(1);
        let Some(cancel) = opts.cancel.clone() else {
            return alone(matcher, &p, &opts, rows);
        };
        let job = Job {
            prepared: p,
            opts,
            arrived,
            cancel,
            rows,
            reply,
        };
        self.stats.requests.fetch_add(1, Relaxed);
        self.stats.waiting.fetch_add(1, Relaxed);
        if let Err(mpsc::SendError(job)) = self.jobs.send(job) {
            self.stats.waiting.fetch_sub(1, Relaxed);
            return alone(matcher, &job.prepared, &job.opts, rows);
        }
        answer
            .recv()
            .unwrap_or(Err(Failure::Internal("a batch of queries failed")))
    }

    /// `/health`'s `batching` object.
    pub fn health(&self) -> Value {
        let s = &self.stats;
        json!({
            "on": true,
            "window_ms": self.settings.window.as_millis() as u64,
            "max": self.settings.max,
            "requests": s.requests.load(Relaxed),
            "waiting": s.waiting.load(Relaxed),
            "dropped": s.dropped.load(Relaxed),
            "expired": s.expired.load(Relaxed),
            "rounds": s.rounds.load(Relaxed),
            "batches": s.batches.load(Relaxed),
            "batched": s.batched.load(Relaxed),
            "launches": s.launches.load(Relaxed),
            "reads": s.reads.load(Relaxed),
            "on_cpu": s.on_cpu.load(Relaxed),
            "left": s.left.load(Relaxed),
        })
    }
}

/// `p` answered alone: counted, or its rows held.
fn alone(
    matcher: &Matcher,
    p: &Prepared,
    opts: &MatchOptions,
    rows: Option<usize>,
) -> Result<Batched, Failure> {
    let Some(most) = rows else {
        return Ok((solutions::count(matcher, p, opts)?, Vec::new()));
    };
    let mut held = Vec::new();
    let reported = solutions::select(matcher, p, opts, &mut |b| hold(&mut held, b, most))?;
    Ok((reported, held))
}

/// Adds `b`'s rows to `held` up to `most` values (whole rows, at least one past `most`); returns
/// whether to go on.
fn hold(held: &mut Vec<u32>, b: RowBatch, most: usize) -> bool {
    for row in b.iter() {
        if held.len() >= most {
            return false;
        }
        held.extend_from_slice(row);
    }
    held.len() < most
}

/// The batching thread: a first request opens a window; those arriving within it (at most
/// `max` in all) join; requests whose clients left are dropped as they are seen. Ends when the
/// server drops the door.
fn gather_loop(
    matcher: &'static Matcher<'static>,
    rx: &mpsc::Receiver<Job>,
    settings: Settings,
    stats: &Stats,
) {
    while let Ok(first) = rx.recv() {
        let until = Instant::now() + settings.window;
        let mut pending = vec![first];
        while pending.len() < settings.max {
            let now = Instant::now();
            if now >= until {
                break;
            }
            match rx.recv_timeout((until - now).min(POLL)) {
                Ok(job) => pending.push(job),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            drop_gone(&mut pending, stats);
        }
        drop_gone(&mut pending, stats);
        if !pending.is_empty() {
            run_batch(matcher, pending, stats);
        }
    }
}

/// Answers and forgets the requests whose clients went away.
fn drop_gone(pending: &mut Vec<Job>, stats: &Stats) {
    pending.retain(|job| {
        if !job.gone() {
            return true;
        }
        stats.waiting.fetch_sub(1, Relaxed);
        stats.dropped.fetch_add(1, Relaxed);
        let _ = job.reply.try_send(Err(Failure::Cancelled));
        false
    });
}

/// Answers `pending` with one `match_batch` call, each with what is left of its time limit, a
/// SELECT's rows held for its thread.
fn run_batch(matcher: &Matcher, pending: Vec<Job>, stats: &Stats) {
    let started = Instant::now();
    stats.waiting.fetch_sub(pending.len(), Relaxed);
    let mut jobs = Vec::with_capacity(pending.len());
    for mut job in pending {
        let limit = job.opts.timeout.unwrap_or(Duration::MAX);
        let left = limit.saturating_sub(job.arrived.elapsed());
        if left.is_zero() {
            stats.expired.fetch_add(1, Relaxed);
            let _ = job.reply.try_send(Err(Failure::TimedOut(limit)));
            continue;
        }
        job.opts.timeout = Some(left);
        jobs.push(job);
    }
    if jobs.is_empty() {
        return;
    }
    let held: Vec<Mutex<Vec<u32>>> = jobs.iter().map(|_| Mutex::default()).collect();
    let mut sinks: Vec<_> = held
        .iter()
        .zip(&jobs)
        .map(|(h, j)| {
            let most = j.rows.unwrap_or(0);
            move |b: RowBatch| hold(&mut h.lock().unwrap_or_else(|e| e.into_inner()), b, most)
        })
        .collect();
    let asked: Vec<Asked> = jobs
        .iter()
        .zip(sinks.iter_mut())
        .map(|(j, sink)| {
            let rows: Option<&mut (dyn FnMut(RowBatch) -> bool + Send)> =
                if j.rows.is_some() { Some(sink) } else { None };
            Asked {
                p: &j.prepared,
                opts: &j.opts,
                rows,
            }
        })
        .collect();
    // Each request is replied to as soon as its answer is final: one whose levels fit its batch
    // room does not wait for a heavy one, which its own thread answers alone.
    let reply = |i: usize, answer: &Result<Reported, MatchError>| {
        if answer.as_ref().is_err_and(MatchError::left_by_batch) {
            stats.left.fetch_add(1, Relaxed);
        }
        let rows = std::mem::take(&mut *held[i].lock().unwrap_or_else(|e| e.into_inner()));
        let answer = answer.clone().map(|r| (r, rows)).map_err(Failure::from);
        let _ = jobs[i].reply.try_send(answer);
    };
    // A panic in the engine answers this batch's requests not replied to yet with an error (their
    // senders dropped) and keeps the thread.
    let answered = std::panic::catch_unwind(AssertUnwindSafe(|| {
        solutions::match_batch_each(matcher, asked, Outgrown::Leave, &reply)
    }));
    drop(sinks);
    let Ok(answered) = answered else {
        eprintln!("error: a batch of {} queries failed", jobs.len());
        return;
    };
    let b = &answered.batch;
    stats.add(b);
    let selects = jobs.iter().filter(|j| j.rows.is_some()).count();
    log_batch(jobs.len(), selects, b, started.elapsed());
}

/// The batch on stderr: always when the GPU failed during it (as `query` says so), with `-v`
/// its size and counters.
fn log_batch(requests: usize, selects: usize, b: &BatchReport, took: Duration) {
    if let Some(why) = &b.fallback {
        eprintln!(
            "note: the GPU failed during a batch ({why}); {} of its {requests} queries were \
             answered on the CPU (dfs engine)",
            b.on_cpu
        );
    }
    if crate::out::verbose() {
        eprintln!(
            "batch: {requests} requests ({selects} SELECT), {} in {} device batches: {} launches, \
             {} reads, {:.1} ms",
            b.batched,
            b.batches,
            b.counters.launches,
            b.counters.syncs,
            took.as_secs_f64() * 1000.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SELECT's held rows stop at the first whole row at or past its bound, and say so.
    #[test]
    fn held_rows_stop_at_their_bound() {
        let data = [1u32, 2, 3, 4, 5, 6];
        let b = RowBatch {
            data: &data,
            width: 2,
            rows: 3,
        };
        let mut held = Vec::new();
        assert!(hold(&mut held, b, 8));
        assert_eq!(held, data);
        assert!(!hold(&mut held, b, 8));
        assert_eq!(held.len(), 8);
        let mut held = Vec::new();
        assert!(!hold(&mut held, b, 3));
        assert_eq!(held, [1, 2, 3, 4]);
    }
}

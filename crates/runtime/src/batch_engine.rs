//! [`Engine::match_batch`] (and [`Engine::count_batch`], its counting case): many queries, those on
//! a device engine answered as one batch (`gpu_batch`), each with its own count or rows, error and
//! limits.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::*;
use crate::device::DeviceCounters;
use crate::gpu_pipeline::BatchItem;
use crate::two_ends::TwoEnds;

/// How long `auto`'s batch leaves the counts it could give either engine to the CPU alone before
/// the device starts taking them: a suite the CPU answers within it never waits for a device
/// (HPRD-200 takes `dfs` 3.5 ms on the H200's host), and past it the device's first chunk is a
/// single query (a few milliseconds).
pub const SHARE_AFTER: Duration = Duration::from_millis(20);
/// The largest chunk the device takes from the shared queue at once: chunks double from one
/// query up to it, so that the device does not claim what the CPU would have answered sooner.
const LARGEST_CHUNK: usize = 16;

/// One query of [`Engine::match_batch`]: counted when `rows` is `None`, else its projected rows
/// handed to `rows` in batches, as [`Engine::run`] hands them (`rows` returns false to stop).
pub struct BatchQuery<'q, 'o> {
    pub q: &'q QueryGraph,
    pub opts: &'q MatchOptions,
    pub rows: Option<OnRows<'o>>,
}

/// `queries` as a batch of counts.
fn counting<'q>(queries: &[(&'q QueryGraph, &'q MatchOptions)]) -> Vec<BatchQuery<'q, 'static>> {
    queries
        .iter()
        .map(|&(q, opts)| BatchQuery {
            q,
            opts,
            rows: None,
        })
        .collect()
}

/// A query's row sink, if it wants rows, in the order of the batch.
type Sinks<'o> = Vec<Option<OnRows<'o>>>;
/// Answers by query index.
type Answers = Vec<(usize, Result<MatchReport, MatchError>)>;

/// What a device batch does with a query whose level outgrew its room in the batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outgrown {
    /// It goes on alone after the batch, on the batch's thread and buffers (a file of queries).
    #[default]
    GoOn,
    /// It is answered [`MatchError::OutgrewBatch`] with the others, for the caller to answer it
    /// alone elsewhere (`serve`: on the request's own thread, beside the next batches).
    Leave,
}

/// What [`Engine::match_batch_each`] hands each query's final answer to, with its index.
pub type Answered<'h> = dyn Fn(usize, &Result<MatchReport, MatchError>) + Sync + 'h;

/// Hands each query's final answer to the caller once, as soon as it is known: the paths that
/// answer a query tell as they go, and the batch's end tells whatever they left.
struct Tell<'h> {
    answered: &'h Answered<'h>,
    told: Vec<AtomicBool>,
}

impl<'h> Tell<'h> {
    fn new(answered: &'h Answered<'h>, queries: usize) -> Self {
        Tell {
            answered,
            told: (0..queries).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn answer(&self, index: usize, a: &Result<MatchReport, MatchError>) {
        if !self.told[index].swap(true, Ordering::Relaxed) {
            (self.answered)(index, a);
        }
    }
}

/// Whether the device could not hold a query (its candidate space, or one partial match's
/// extensions, past the memory budget): a count `auto` shares is then dfs's to answer.
fn refused(e: &MatchError) -> bool {
    matches!(
        e,
        MatchError::DeviceBudget { .. } | MatchError::MemoryBudget { .. }
    )
}

/// Under [`Outgrown::Leave`], a batched query refused for device memory that its own budget
/// allows (other users held it: the device refused an allocation, or its free memory left the
/// query less than it needed), before it handed out rows, is left to its caller:
/// [`MatchError::BatchShortOfMemory`]. Alone, it waits for the others and tries again.
fn leave_if_short(
    key: Key,
    opts: &MatchOptions,
    a: Result<MatchReport, MatchError>,
    handed_out: bool,
) -> Result<MatchReport, MatchError> {
    let short = match &a {
        Err(MatchError::Device(DeviceError::OutOfMemory(_))) => true,
        Err(MatchError::DeviceBudget { bytes, .. }) => *bytes <= opts.memory_budget,
        _ => false,
    };
    match a {
        Err(e) if short && key.outgrown == Outgrown::Leave && !key.auto && !handed_out => {
            Err(MatchError::BatchShortOfMemory(Box::new(e)))
        }
        a => a,
    }
}

/// Whether a batched query's answer is a device failure that `auto` answers again on the CPU
/// (unless it handed out rows already: on the CPU they would be handed out again).
fn on_cpu_after(key: Key, a: &Result<MatchReport, MatchError>, handed_out: bool) -> bool {
    key.auto && !handed_out && matches!(a, Err(MatchError::Device(_)))
}

/// What [`Engine::match_batch`] did: each query's report or its own error, in order, and the
/// device calls of the batched queries together.
#[derive(Debug, Default)]
pub struct BatchReport {
    pub reports: Vec<Result<MatchReport, MatchError>>,
    /// Launches, reads (waits), bytes of the batches (zero when no query was batched).
    pub counters: DeviceCounters,
    /// Queries answered in a batch; the others ran alone (another engine than `gpu` or
    /// `emulated`, `auto` picking `dfs`, or a disconnected query without a limit).
    pub batched: usize,
    /// Batches run: one per engine, semantics and refinement rounds among the batched queries.
    pub batches: usize,
    /// Under `auto`: the device's failure during a batch, after which its unanswered queries
    /// were answered on the CPU (`on_cpu` of them; each report's `fallback` says so too).
    pub fallback: Option<String>,
    pub on_cpu: usize,
    /// Counts outside the batches that ran out of half their time limit while sharing the cores
    /// with the others and were counted again alone, within the half left.
    pub again: usize,
    /// Under `auto` with a device: counts whose estimate picked `dfs`, shared between the CPU
    /// (from the back of their ranking) and the device (from the front, after
    /// [`SHARE_AFTER`]); `shared_on_device` of them were taken by the device.
    pub shared: usize,
    pub shared_on_device: usize,
    /// Where the batches' time went.
    pub phases: BatchPhases,
}

/// Where a batch's time went, on the host's clock. Each device phase ends with its read, so it
/// holds the device's work as well as the host's preparation of it.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct BatchPhases {
    /// Plans, `auto`'s estimates and filtering layouts of every query (host only).
    pub plan: Duration,
    /// Filtering of every query, to the read of the candidate counts; of it, the host's time in
    /// that read (the device's work queued before it included) and in queueing its launches.
    pub filter: Duration,
    pub filter_read: Duration,
    pub filter_launch: Duration,
    /// Of filtering, the host's preparation of every query (`Prepared::new`, `FilterQuery::at`)
    /// and its uploads.
    pub filter_prepare: Duration,
    pub filter_write: Duration,
    /// Join orders, candidate arrays and candidate-edge lists.
    pub space: Duration,
    /// The join's depths of every query, to the read of their counters.
    pub levels: Duration,
    /// Queries that went on alone after the batch (a level outgrew its room, an edge variable).
    pub alone: Duration,
    /// The emulator only: of filtering, of the candidate space and of the rest (join and queries
    /// alone), the time its kernels ran; the remainder is the host's own work.
    pub emulated: [Duration; 3],
}

impl std::ops::AddAssign for BatchPhases {
    fn add_assign(&mut self, b: BatchPhases) {
        self.plan += b.plan;
        self.filter += b.filter;
        self.filter_read += b.filter_read;
        self.filter_launch += b.filter_launch;
        self.filter_prepare += b.filter_prepare;
        self.filter_write += b.filter_write;
        self.space += b.space;
        self.levels += b.levels;
        self.alone += b.alone;
        for (a, b) in self.emulated.iter_mut().zip(b.emulated) {
            *a += b;
        }
    }
}

/// A query's place in the batch, and what its report is built from.
struct Pending<'q> {
    index: usize,
    q: &'q QueryGraph,
    opts: &'q MatchOptions,
    plan: Plan,
    limit: Option<u64>,
    /// `auto`'s estimates and pick, when `auto` sent the query to the device.
    auto: Option<AutoChoice>,
}

/// A query bound for a device batch: its device layout beside the rest.
struct Planned<'q> {
    pending: Pending<'q>,
    layout: Layout,
}

impl<'q> std::ops::Deref for Planned<'q> {
    type Target = Pending<'q>;

    fn deref(&self) -> &Pending<'q> {
        &self.pending
    }
}

/// A shared count and its rank (from 1, the device's most favoured) by its estimates. Its
/// device layout is built only if the device takes it (the CPU takes most of them).
type Ranked<'q> = (usize, Pending<'q>);

/// `list` ranked by the ratio of its estimates, device over dfs: the model's scale is far off on
/// yeast (its dfs estimates 170x low on the heavy queries), but its order holds (on the H200's
/// heavy yeast, the best split of this order costs 1.17x the best split of the measured times).
fn ranked(mut list: Vec<Pending>) -> Vec<Ranked> {
    let ratio = |p: &Pending| {
        p.auto.as_ref().map_or(f64::INFINITY, |c| {
            c.device_ms / c.dfs_ms.max(f64::MIN_POSITIVE)
        })
    };
    list.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
    list.into_iter()
        .enumerate()
        .map(|(i, p)| (i + 1, p))
        .collect()
}

/// What one batch shares: the engine it runs on, the semantics and the refinement rounds, and
/// whether `auto` chose the device (then a device failure sends its queries to the CPU).
#[derive(Clone, Copy, PartialEq)]
struct Key {
    engine: EngineKind,
    semantics: Semantics,
    refine_rounds: u32,
    auto: bool,
    outgrown: Outgrown,
}

/// Where a query of [`Engine::match_batch`] goes.
enum Entry<'q> {
    Batch(Key, Box<Planned<'q>>),
    /// Under `auto` with a device, a count whose estimate picks dfs: either engine may take it.
    Either(Key, Box<Pending<'q>>),
    /// On its own engine, or on dfs where `auto`'s estimate (kept for its report) picked it.
    Alone(Option<AutoChoice>),
    Failed(MatchError),
}

impl Engine<'_> {
    /// Counts the matches of each query with its own options. Queries on the `gpu` or `emulated`
    /// engine, and those for which `auto` picks the device, are answered in batches of one
    /// sequence of launches each (one batch per engine, semantics and refinement rounds); the
    /// others one by one. A query's failure (memory budget, time limit, a refused shape) is its
    /// own entry in the report. Under `auto`, a device failure during a batch drops the device
    /// state and answers the batch's queries on the CPU (`BatchReport::fallback`).
    pub fn count_batch(&self, queries: &[(&QueryGraph, &MatchOptions)]) -> BatchReport {
        self.match_batch(counting(queries))
    }

    /// [`Engine::count_batch`] for queries that may want rows: a query with a row sink has its
    /// rows found in the batch too (no leaves counted; its last level read back with the others')
    /// and handed to its sink after the batch, within its own LIMIT, DISTINCT and time limit; a
    /// query whose level outgrows its batch room goes on alone after the batch. Each report's
    /// `rows` is the rows handed out (or the count).
    pub fn match_batch(&self, queries: Vec<BatchQuery>) -> BatchReport {
        self.match_batch_each(queries, Outgrown::GoOn, &|_, _| {})
    }

    /// [`Engine::match_batch`], each query's answer also handed to `answered` (with its index)
    /// as soon as it is final, from whichever thread found it: a query whose levels fit its batch
    /// room is answered when the batch's reads return, not after the queries that go on alone
    /// (a server replies to each request then; its rows, if it wanted them, are all handed out by
    /// then). Each index is handed over once. `outgrown` says what a batch does with a query
    /// whose level outgrew its room.
    pub fn match_batch_each(
        &self,
        queries: Vec<BatchQuery>,
        outgrown: Outgrown,
        answered: &Answered<'_>,
    ) -> BatchReport {
        self.match_batch_on(
            queries,
            None::<&DeviceState<HostDevice>>,
            outgrown,
            answered,
        )
    }

    /// Whether [`Engine::count_batch`] would count `q` on the device: on `gpu` and `emulated`,
    /// and under `auto` where a GPU is present and the estimate for `q` alone picks it. A front
    /// end that gathers queries into batches asks first, so that a query `auto` leaves to `dfs`
    /// does not wait for a batch.
    pub fn counts_on_device(&self, q: &QueryGraph, opts: &MatchOptions) -> bool {
        match opts.engine {
            EngineKind::Gpu | EngineKind::Emulated => true,
            EngineKind::Auto if self.gpu().is_ok() => {
                let plan = plan_brief(q, self.graph, &self.stats);
                self.auto_choice(q, &plan, opts, true).pick != EngineKind::Dfs
            }
            _ => false,
        }
    }

    /// [`Engine::count_batch`] on `device` (see [`Engine::match_batch_on`]).
    #[cfg(test)]
    fn count_batch_on<D: Device>(
        &self,
        queries: &[(&QueryGraph, &MatchOptions)],
        device: Option<&DeviceState<D>>,
    ) -> BatchReport {
        self.match_batch_on(counting(queries), device, Outgrown::GoOn, &|_, _| {})
    }

    /// [`Engine::match_batch`], with `device` standing in for the GPU that `auto` would take (the
    /// tests' emulator with a failing kernel).
    fn match_batch_on<D: Device>(
        &self,
        queries: Vec<BatchQuery>,
        device: Option<&DeviceState<D>>,
        outgrown: Outgrown,
        answered: &Answered<'_>,
    ) -> BatchReport {
        let start = Instant::now();
        let tell = Tell::new(answered, queries.len());
        let (queries, sinks): (Vec<_>, Sinks) =
            queries.into_iter().map(|b| ((b.q, b.opts), b.rows)).unzip();
        let mut reports: Vec<Option<Result<MatchReport, MatchError>>> =
            queries.iter().map(|_| None).collect();
        // Plans, estimates and layouts are the host's share of a batch: every core takes part
        // (HPRD-200 on one core: about as long as dfs answering the whole suite).
        let wants_rows: Vec<bool> = sinks.iter().map(Option::is_some).collect();
        let entries: Vec<Entry> = queries
            .par_iter()
            .zip(&wants_rows)
            .enumerate()
            .with_min_len(8)
            .map(|(index, (&(q, opts), &rows))| self.entry(index, q, opts, !rows, device.is_some()))
            .collect();
        let mut batch = BatchReport::default();
        batch.phases.plan = start.elapsed();
        let mut groups: Vec<(Key, Vec<Planned>, Sinks)> = Vec::new();
        let mut alone = Vec::new();
        let mut either: Vec<(Key, Vec<Pending>)> = Vec::new();
        for (index, (entry, sink)) in entries.into_iter().zip(sinks).enumerate() {
            let entry = match entry {
                Entry::Batch(key, p) => Entry::Batch(Key { outgrown, ..key }, p),
                Entry::Either(key, p) => Entry::Either(Key { outgrown, ..key }, p),
                e => e,
            };
            match entry {
                Entry::Either(key, p) => match either.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, list)) => list.push(*p),
                    None => either.push((key, vec![*p])),
                },
                Entry::Batch(key, p) => match groups.iter_mut().find(|(k, ..)| *k == key) {
                    Some((_, group, sinks)) => {
                        group.push(*p);
                        sinks.push(sink);
                    }
                    None => groups.push((key, vec![*p], vec![sink])),
                },
                Entry::Alone(auto) => alone.push((index, auto, sink)),
                Entry::Failed(e) => {
                    let e = Err(e);
                    tell.answer(index, &e);
                    reports[index] = Some(e);
                }
            }
        }
        let either: Vec<(Key, TwoEnds<Ranked>)> = either
            .into_iter()
            .map(|(key, list)| (key, TwoEnds::new(ranked(list))))
            .collect();
        batch.shared = either.iter().map(|(_, q)| q.total()).sum();
        // The queries on the CPU run beside the batches, whose host thread mostly waits on the
        // device; after them, they would eat the batched queries' time limits.
        let (answers, (on_cpu, again)) = rayon::join(
            || {
                let told = |i: usize, a: &Result<MatchReport, MatchError>| tell.answer(i, a);
                let mut answers = self.run_groups(&mut groups, device, start, &mut batch, &told);
                answers.extend(self.run_either(&either, device, start, &mut batch, &tell));
                answers
            },
            || self.answer_beside(&queries, alone, &either, &tell),
        );
        batch.again = again;
        for (index, a) in answers.into_iter().chain(on_cpu) {
            reports[index] = Some(a);
        }
        batch.reports = reports
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let r = r.unwrap_or(Err(MatchError::Plan("query not answered".into())));
                tell.answer(i, &r);
                r
            })
            .collect();
        batch
    }

    /// The device's side of the shared counts: once the CPU has had them alone for
    /// [`SHARE_AFTER`], chunks from the front of each ranking (1, 2, 4, ... up to
    /// [`LARGEST_CHUNK`] queries), each one batch, until the CPU's side meets it or the device
    /// fails (the CPU then takes the rest).
    fn run_either<D: Device>(
        &self,
        either: &[(Key, TwoEnds<Ranked>)],
        device: Option<&DeviceState<D>>,
        start: Instant,
        batch: &mut BatchReport,
        tell: &Tell,
    ) -> Answers {
        let deadline = start + self.share_after();
        let mut out = Vec::new();
        for (key, queue) in either {
            if !queue.wait_until(deadline) {
                continue;
            }
            let mut n = 1;
            while batch.fallback.is_none() {
                let chunk = queue.front(n);
                if chunk.is_empty() {
                    break;
                }
                n = (2 * n).min(LARGEST_CHUNK);
                batch.shared_on_device += chunk.len();
                let of = queue.total();
                // Each with its estimate as it was, for a count the device refuses.
                let (mut planned, mut queries) = (Vec::new(), Vec::new());
                for (rank, mut p) in chunk {
                    let Ok(layout) = Layout::new(p.q, &p.plan, p.opts.semantics, self.shape) else {
                        // A shape the device refuses is still dfs's to answer.
                        let a = self.answer_on_dfs(p.q, p.opts, p.auto, None);
                        tell.answer(p.index, &a);
                        out.push((p.index, a));
                        continue;
                    };
                    queries.push((p.q, p.opts, p.auto.clone()));
                    if let Some(choice) = &mut p.auto {
                        choice.taken_by_device(rank, of);
                    }
                    planned.push(Planned { pending: p, layout });
                }
                if planned.is_empty() {
                    continue;
                }
                let sinks = planned.iter().map(|_| None).collect();
                // A count the device could not hold is not final: dfs answers it below.
                let told = |i: usize, a: &Result<MatchReport, MatchError>| {
                    if !a.as_ref().is_err_and(refused) {
                        tell.answer(i, a);
                    }
                };
                let group = &mut [(*key, planned, sinks)];
                let answers = self.run_groups(group, device, start, batch, &told);
                for ((index, a), (q, opts, auto)) in answers.into_iter().zip(queries) {
                    let a = self.unless_refused(q, opts, auto, a);
                    tell.answer(index, &a);
                    out.push((index, a));
                }
            }
        }
        out
    }

    /// A shared count the device could not hold (its candidate space, or one partial match's
    /// extensions, past the memory budget) is answered by `dfs`, the engine its estimate picked,
    /// rather than failing.
    fn unless_refused(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        auto: Option<AutoChoice>,
        a: Result<MatchReport, MatchError>,
    ) -> Result<MatchReport, MatchError> {
        let e = match a {
            Err(e) if refused(&e) => e,
            a => return a,
        };
        let mut report = self.answer_on_dfs(q, opts, auto, None)?;
        report.fallback = Some(format!(
            "the device could not hold it ({e}); answered on the CPU"
        ));
        Ok(report)
    }

    /// Runs each group as one batch on its device, each answer handed to `told` as it becomes
    /// final; under `auto`, a device failure sends the group's unanswered queries to the CPU
    /// after the batch (their sinks are the batch's until it ends). Returns each query's index
    /// and answer.
    fn run_groups<D: Device>(
        &self,
        groups: &mut [(Key, Vec<Planned>, Sinks)],
        device: Option<&DeviceState<D>>,
        start: Instant,
        batch: &mut BatchReport,
        told: &(dyn Fn(usize, &Result<MatchReport, MatchError>) + Sync),
    ) -> Answers {
        let mut out = Vec::new();
        for (key, planned, sinks) in groups {
            batch.batched += planned.len();
            batch.batches += 1;
            let (shape, key) = (self.shape, *key);
            let mut answers: Vec<Option<(Result<MatchReport, MatchError>, bool)>> =
                planned.iter().map(|_| None).collect();
            let mut answered = |i: usize, a: Result<MatchReport, MatchError>, handed_out: bool| {
                let a = leave_if_short(key, planned[i].opts, a, handed_out);
                if !on_cpu_after(key, &a, handed_out) {
                    told(planned[i].index, &a);
                }
                answers[i] = Some((a, handed_out));
            };
            let view = self.view();
            let done = match (key.engine, device) {
                (EngineKind::Emulated, _) => {
                    self.emulator().map_err(MatchError::from).and_then(|d| {
                        d.match_batch(planned, sinks, key, shape, view, start, &mut answered)
                    })
                }
                (_, Some(d)) if key.auto => {
                    d.match_batch(planned, sinks, key, shape, view, start, &mut answered)
                }
                _ => self.gpu().map_err(MatchError::from).and_then(|d| {
                    d.match_batch(planned, sinks, key, shape, view, start, &mut answered)
                }),
            };
            let failed = match done {
                Ok((c, phases)) => {
                    batch.counters += c;
                    batch.phases += BatchPhases {
                        plan: Duration::ZERO,
                        ..phases
                    };
                    None
                }
                Err(e) => Some(e),
            };
            for ((p, sink), a) in planned.iter().zip(sinks.iter_mut()).zip(answers) {
                // The batch's error concerns the queries it had not answered.
                let (a, handed_out) = match (a, &failed) {
                    (Some(a), _) => a,
                    (None, Some(e)) => (leave_if_short(key, p.opts, Err(e.clone()), false), false),
                    (None, None) => (Err(MatchError::Plan("query not answered".into())), false),
                };
                // A query that handed out rows before the failure keeps its error: on the CPU
                // they would be handed out again.
                let a = match a {
                    Err(MatchError::Device(e)) if key.auto && !handed_out => {
                        batch.fallback.get_or_insert_with(|| e.to_string());
                        batch.on_cpu += 1;
                        // Memory others hold is no fault of the device: it stays open.
                        if !matches!(e, DeviceError::OutOfMemory(_)) {
                            self.forget_gpu();
                        }
                        let sink: Option<OnRows> = match sink {
                            Some(s) => Some(&mut **s),
                            None => None,
                        };
                        self.answer_on_cpu(p, sink, &e)
                    }
                    a => a,
                };
                told(p.index, &a);
                out.push((p.index, a));
            }
        }
        out
    }

    /// The queries outside the batches (`alone`), several at a time, one worker each (splitting
    /// further as workers free up), and beside them the shared counts of `either`, taken from
    /// the back of their rankings down half the threads' worth of lanes. Sharing the cores must
    /// not cost a query its time limit: a count that runs out of half its limit among the others
    /// is stopped and counted again afterwards, alone on every core, within the half left
    /// (HPRD's and yeast's queries run 3-4x faster together than one by one, but on the H100
    /// three of yeast's 241 heavy ones hit a 3 s limit together that they keep well inside
    /// alone).
    fn answer_beside(
        &self,
        queries: &[(&QueryGraph, &MatchOptions)],
        alone: Vec<(usize, Option<AutoChoice>, Option<OnRows<'_>>)>,
        either: &[(Key, TwoEnds<Ranked>)],
        tell: &Tell,
    ) -> (Answers, usize) {
        let together = alone.len() + either.iter().map(|(_, q)| q.total()).sum::<usize>() > 1;
        let first_try = |(index, auto, sink): (usize, Option<AutoChoice>, Option<OnRows>)| {
            let (q, opts) = queries[index];
            let shared = match (&sink, opts.timeout) {
                (None, Some(limit)) if together => Some(limit / 2),
                _ => None,
            };
            let Some(shared) = shared else {
                let a = self.answer_alone(q, opts, auto, sink);
                tell.answer(index, &a);
                return (index, a, None);
            };
            let start = Instant::now();
            let first = MatchOptions {
                timeout: Some(shared),
                ..opts.clone()
            };
            let a = self.answer_alone(q, &first, auto.clone(), None);
            let again = matches!(&a, Ok(r) if r.timed_out && !r.limit_reached);
            // Charged at most its share: a first try that overran it among the others (a
            // stop is seen only between search steps) still leaves the half to count alone
            // (on the H200 two heavy yeast queries were left nothing and reported 0).
            let spent = start.elapsed().min(shared);
            if !again {
                tell.answer(index, &a);
            }
            (index, a, again.then_some((auto, spent)))
        };
        // The shared counts go down lanes, each taking the next from the back as it finishes one:
        // half the threads' worth, so that a few heavy counts do not all start on the CPU at
        // once and leave the device nothing (the threads left over split the counts in flight).
        let lanes = (rayon::current_num_threads() / 2).max(1);
        let next = || either.iter().find_map(|(_, q)| q.back());
        let (mut first, shared): (Vec<_>, Vec<_>) = rayon::join(
            || {
                alone
                    .into_par_iter()
                    .with_max_len(1)
                    .map(&first_try)
                    .collect()
            },
            || {
                (0..lanes)
                    .into_par_iter()
                    .with_max_len(1)
                    .flat_map_iter(|_| {
                        std::iter::from_fn(next).map(|(_, p)| first_try((p.index, p.auto, None)))
                    })
                    .collect()
            },
        );
        first.extend(shared);
        let mut out = Vec::with_capacity(first.len());
        let mut counted_again = 0;
        for (index, a, again) in first {
            let a = match again {
                Some((auto, spent)) => {
                    counted_again += 1;
                    let (q, opts) = queries[index];
                    let left = MatchOptions {
                        timeout: opts.timeout.map(|t| t.saturating_sub(spent)),
                        ..opts.clone()
                    };
                    self.answer_alone(q, &left, auto, None).map(|mut r| {
                        r.times.total += spent;
                        r
                    })
                }
                None => a,
            };
            tell.answer(index, &a);
            out.push((index, a));
        }
        (out, counted_again)
    }

    /// A query outside the batches, counted or its rows to `sink`: on its own engine, or on dfs
    /// where `auto`'s estimate in a batch picked it (its report then carries that estimate).
    fn answer_alone(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        auto: Option<AutoChoice>,
        sink: Option<OnRows>,
    ) -> Result<MatchReport, MatchError> {
        match (auto, sink) {
            (Some(choice), sink) => self.answer_on_dfs(q, opts, Some(choice), sink),
            (None, Some(sink)) => self.run(q, opts, sink),
            (None, None) => self.count(q, opts),
        }
    }

    /// `q` counted (or its rows to `sink`) by dfs whatever `opts` names, its report carrying
    /// `auto`'s estimate.
    fn answer_on_dfs(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        auto: Option<AutoChoice>,
        sink: Option<OnRows>,
    ) -> Result<MatchReport, MatchError> {
        let dfs = MatchOptions {
            engine: EngineKind::Dfs,
            ..opts.clone()
        };
        let mut report = match sink {
            Some(sink) => self.run(q, &dfs, sink)?,
            None => self.count(q, &dfs)?,
        };
        report.auto = auto;
        Ok(report)
    }

    /// Whether `q` joins a batch, and which: a device engine's query, or one for which `auto`
    /// picks a device that is there (`stand_in`: the tests' device); under `auto`, a count it
    /// leaves to dfs may be taken by either.
    fn entry<'q>(
        &self,
        index: usize,
        q: &'q QueryGraph,
        opts: &'q MatchOptions,
        count_only: bool,
        stand_in: bool,
    ) -> Entry<'q> {
        if !matches!(
            opts.engine,
            EngineKind::Gpu | EngineKind::Emulated | EngineKind::Auto
        ) {
            return Entry::Alone(None);
        }
        let limit = opts.limit_for(q.limit);
        let plan = if opts.explain {
            plan_with(q, self.graph, &self.stats)
        } else {
            plan_brief(q, self.graph, &self.stats)
        };
        if plan.components.len() > 1 && limit.is_none() {
            return Entry::Alone(None);
        }
        let (engine, auto) = match opts.engine {
            EngineKind::Auto => {
                if !(stand_in || self.gpu().is_ok()) {
                    return Entry::Alone(None);
                }
                // The lone query's estimate, not its share of a batch: the model underestimates
                // dense queries' levels (yeast's heavy ones by 100x and more), and at the share
                // it sent 110 of the 241 heavy yeast queries to the H200 (22 s, against dfs's 8 s
                // for all 241). The queries it leaves to dfs run beside the batch.
                let choice = self.auto_choice(q, &plan, opts, true);
                if choice.pick == EngineKind::Dfs && !count_only {
                    return Entry::Alone(Some(choice));
                }
                (EngineKind::Gpu, Some(choice))
            }
            kind => (kind, None),
        };
        let shared = auto.as_ref().is_some_and(|c| c.pick == EngineKind::Dfs);
        let key = Key {
            engine,
            semantics: opts.semantics,
            refine_rounds: opts.refine_rounds,
            auto: auto.is_some(),
            outgrown: Outgrown::GoOn,
        };
        let pending = Pending {
            index,
            q,
            opts,
            plan,
            limit,
            auto,
        };
        if shared {
            return Entry::Either(key, Box::new(pending));
        }
        match Layout::new(q, &pending.plan, opts.semantics, self.shape) {
            Ok(layout) => Entry::Batch(key, Box::new(Planned { pending, layout })),
            Err(e) => Entry::Failed(e),
        }
    }

    /// A query of a batch that the device failed under `auto`, answered by `dfs` instead.
    fn answer_on_cpu(
        &self,
        p: &Planned,
        sink: Option<OnRows>,
        e: &DeviceError,
    ) -> Result<MatchReport, MatchError> {
        let mut report = self.answer_on_dfs(p.q, p.opts, p.auto.clone(), sink)?;
        report.fallback = Some(match e {
            DeviceError::OutOfMemory(_) => format!("the GPU had no memory to spare ({e})"),
            _ => format!("the GPU failed during a batch ({e})"),
        });
        Ok(report)
    }
}

/// A batched query's answer as the device batch finds it final: its place in the batch, its
/// report or error, whether it handed out rows.
type OnDeviceAnswer<'h> = dyn FnMut(usize, Result<MatchReport, MatchError>, bool) + 'h;

impl<D: Device> DeviceState<D> {
    /// The batch on this device: each query's report (or error) handed to `answered` as soon as
    /// it is final (a query with a sink in `sinks` has its rows handed to it first); returns the
    /// device calls of the whole batch. An error returned concerns the queries not answered.
    #[allow(clippy::too_many_arguments)]
    fn match_batch(
        &self,
        planned: &[Planned],
        sinks: &mut [Option<OnRows>],
        key: Key,
        shape: DataShape,
        host: GraphView,
        start: Instant,
        answered: &mut OnDeviceAnswer,
    ) -> Result<(DeviceCounters, BatchPhases), MatchError> {
        let Key {
            engine,
            semantics,
            refine_rounds,
            outgrown,
            ..
        } = key;
        let mut arena = self.arenas.take();
        let held = arena.bytes();
        let _running = self.users.start();
        let _on_device = crate::users::OnDevice::new(&self.dev);
        let free = self.dev.free_memory()?;
        let mut uncounted: Vec<_> = planned.iter().map(|_| |_: RowBatch| true).collect();
        let outs: Vec<Output> = planned
            .iter()
            .zip(sinks.iter_mut())
            .zip(uncounted.iter_mut())
            .map(|((p, sink), none)| {
                let count_only = sink.is_none();
                let on_rows: OnRows = match sink {
                    Some(s) => &mut **s,
                    None => none,
                };
                output(
                    p.q,
                    by_node(p.q),
                    p.opts,
                    p.limit,
                    count_only,
                    on_rows,
                    start,
                )
            })
            .collect();
        let mut items: Vec<BatchItem> = planned
            .iter()
            .zip(&outs)
            .map(|(p, out)| BatchItem {
                q: p.q,
                plan: &p.plan,
                layout: &p.layout,
                out,
                memory_budget: crate::device::memory::query_budget(
                    p.opts.memory_budget,
                    free,
                    held,
                ),
                result: None,
            })
            .collect();
        let before = self.dev.counters();
        // A query's report carries the batch's device calls up to its answer.
        let mut on_answer = |i: usize, it: &mut BatchItem, arena_bytes: u64| {
            let p = &planned[i];
            let report = it
                .result
                .take()
                .unwrap_or(Err(MatchError::Plan("query not answered".into())))
                .and_then(|(join_plan, filter, device)| {
                    let report = MatchReport {
                        fallback: None,
                        auto: p.auto.clone(),
                        device: Some(self.dev.describe()),
                        timed_out: false,
                        rows: 0,
                        limit_reached: false,
                        engine,
                        semantics,
                        join_plan,
                        plan: p.plan.clone(),
                        times: Timings::default(),
                        filter,
                        edge_candidates: None,
                        search: None,
                        device_report: Some(DeviceReport {
                            arena_bytes,
                            counters: self.dev.counters() - before,
                            batch: planned.len() as u64,
                            ..device
                        }),
                    };
                    let times = Timings {
                        filter: report.filter.filter_time,
                        ..Default::default()
                    };
                    finish(it.out, report, times, start)
                });
            answered(i, report, it.out.handed_out() > 0);
        };
        let phases = Pipeline {
            dev: &self.dev,
            graph: &self.graph,
            host,
            arena: &mut arena,
            semantics,
            shape,
            memory_budget: 0,
            refine_rounds,
            segments: &self.segments,
        }
        .run_batch(&mut items, outgrown, &mut on_answer)?;
        Ok((self.dev.counters() - before, phases))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::host::{Hooked, LaunchHook};
    use crate::device::Launch;
    use crate::Reason;
    use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
    use gpsense_planner::benchmark_query;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn hprd(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/subgraph-matching/hprd-study")
            .join(rel)
    }

    fn load(path: std::path::PathBuf) -> KnowledgeGraph {
        ingest(&[path], &IngestOptions::default(), &NoProgress)
            .expect("loads")
            .0
    }

    /// HPRD's `query_dense_16_N` for each N.
    fn dense_16(g: &KnowledgeGraph, names: &[&str]) -> Vec<QueryGraph> {
        names
            .iter()
            .map(|n| {
                benchmark_query(
                    &load(hprd(&format!("query_graph/query_dense_16_{n}.graph"))),
                    g,
                )
            })
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// What the emulator of [`CancelInFiltering::new`] saw: it counts the launches and
    /// work-items of the filtering kernels, and sets `cancel` as its first `identify_nodes`
    /// launch returns (a limit passing during filtering).
    struct CancelInFiltering {
        cancel: Arc<AtomicBool>,
        /// Launches and work-items of `identify_nodes`, `mark_steps` and `refine_nodes`.
        filtering: Arc<Mutex<(u64, u64)>>,
    }

    impl CancelInFiltering {
        fn new() -> (Self, Hooked<impl LaunchHook>) {
            let mut inner = HostDevice::default();
            inner.check_writes = true;
            let watch = CancelInFiltering {
                cancel: Arc::default(),
                filtering: Arc::default(),
            };
            let (cancel, filtering) = (watch.cancel.clone(), watch.filtering.clone());
            let hook = move |d: &HostDevice, launch: &Launch, items: u64| {
                let name = launch.sig().name;
                d.launch(launch, items)?;
                if matches!(name, "identify_nodes" | "mark_steps" | "refine_nodes") {
                    let mut f = filtering.lock().unwrap();
                    *f = (f.0 + 1, f.1 + items);
                }
                if name == "identify_nodes" {
                    cancel.store(true, Ordering::Relaxed);
                }
                Ok(())
            };
            (watch, Hooked { inner, hook })
        }

        fn filtering(&self) -> (u64, u64) {
            *self.filtering.lock().unwrap()
        }
    }

    /// A batch in which one query's cancel flag is set after the first filtering launch: that
    /// query is reported timed out, the others give dfs's counts, and its jobs leave the later
    /// filtering launches (fewer work-items than the same batch with no query stopped).
    #[test]
    fn a_query_stopped_during_filtering_leaves_the_batch_and_the_others_are_exact() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        assert!(engine.set_device_costs(DeviceCosts::parse("dfs_query_us = 1e9").unwrap()));
        let queries = dense_16(&g, &["1", "2", "3", "4"]);
        let auto = auto_iso();
        let want = dfs_counts(&engine, &queries);
        let run = |stop: usize| {
            let (watch, dev) = CancelInFiltering::new();
            let cancelled = MatchOptions {
                cancel: Some(watch.cancel.clone()),
                ..auto.clone()
            };
            let list: Vec<_> = queries
                .iter()
                .enumerate()
                .map(|(k, q)| (q, if k == stop { &cancelled } else { &auto }))
                .collect();
            let state = DeviceState::new(dev, &g).unwrap();
            let batch = engine.count_batch_on(&list, Some(&state));
            assert_eq!((batch.batched, batch.batches, batch.on_cpu), (4, 1, 0));
            (batch.reports, watch.filtering())
        };
        let (all, all_work) = run(usize::MAX);
        let (one_off, work) = run(1);
        for (k, (a, b)) in all.iter().zip(&one_off).enumerate() {
            let (a, b) = (a.as_ref().unwrap(), b.as_ref().unwrap());
            assert_eq!((a.rows, a.timed_out), (want[k], false), "query {k}");
            if k == 1 {
                assert_eq!((b.rows, b.timed_out), (0, true));
                assert!(b.filter.after_refine.is_empty());
            } else {
                assert_eq!((b.rows, b.timed_out), (want[k], false), "query {k}");
            }
        }
        assert!(work.1 < all_work.1, "{work:?} against {all_work:?}");
    }

    /// A query alone whose cancel flag is set as its first filtering launch returns: no launch
    /// follows (no more filtering, no counts, no join), and it is reported timed out.
    #[test]
    fn a_query_alone_stopped_during_filtering_stops_after_that_launch() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        let q = &dense_16(&g, &["1"])[0];
        let (watch, dev) = CancelInFiltering::new();
        let opts = MatchOptions {
            engine: EngineKind::Emulated,
            semantics: Semantics::Iso,
            cancel: Some(watch.cancel.clone()),
            ..MatchOptions::default()
        };
        let state = DeviceState::new(dev, &g).unwrap();
        let report = engine
            .execute_on(q, &opts, true, &mut |_| true, Some(&state))
            .unwrap();
        assert_eq!((report.rows, report.timed_out), (0, true));
        assert_eq!(watch.filtering().0, 1);
        assert_eq!(report.device_report.unwrap().counters.launches, 1);
    }

    /// dfs's counts of `queries` under iso: what a batch must answer.
    fn dfs_counts(engine: &Engine, queries: &[QueryGraph]) -> Vec<u128> {
        let dfs = MatchOptions {
            engine: EngineKind::Dfs,
            ..auto_iso()
        };
        queries
            .iter()
            .map(|q| engine.count(q, &dfs).unwrap().rows)
            .collect()
    }

    fn yeast(rel: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../datasets/subgraph-matching/yeast")
            .join(rel)
    }

    /// Counts answered beside the batches share the cores, so one that runs out of half its time
    /// limit among the others is counted again alone within the half left; a query alone, and
    /// one that finishes, is counted once.
    #[test]
    fn a_count_stopped_among_others_is_counted_again_alone() {
        let g = load(yeast("data_graph/yeast.graph"));
        let query = |name: &str| {
            benchmark_query(&load(yeast(&format!("query_graph/{name}.graph"))), &g).unwrap()
        };
        // 720 matches in microseconds; 608,551,307 in about 0.6 s on 16 threads.
        let (quick, heavy) = (query("query_dense_4_1"), query("query_sparse_16_17"));
        let engine = Engine::new(&g);
        let opts = MatchOptions {
            engine: EngineKind::Dfs,
            timeout: Some(Duration::from_millis(60)),
            ..MatchOptions::default()
        };
        let batch = engine.count_batch(&[(&quick, &opts), (&heavy, &opts)]);
        assert_eq!(batch.again, 1);
        let quick_report = batch.reports[0].as_ref().unwrap();
        assert_eq!((quick_report.rows, quick_report.timed_out), (720, false));
        let heavy_report = batch.reports[1].as_ref().unwrap();
        assert!(heavy_report.timed_out && heavy_report.rows < 608_551_307);
        // Both tries are in its time, and together they keep within the limit (with slack for
        // the stop's own latency).
        assert!(heavy_report.times.total >= Duration::from_millis(55));
        assert!(heavy_report.times.total < Duration::from_millis(600));

        let alone = engine.count_batch(&[(&heavy, &opts)]);
        assert_eq!(alone.again, 0);
        assert!(alone.reports[0].as_ref().unwrap().timed_out);
    }

    fn auto_iso() -> MatchOptions {
        MatchOptions {
            engine: EngineKind::Auto,
            semantics: Semantics::Iso,
            ..MatchOptions::default()
        }
    }

    /// Under `auto` with a device that fails mid-batch (the emulator's `extend_warp_batch` raising
    /// the fault flag), every query of the batch is answered on the CPU, with dfs's counts, and the
    /// batch and each report say why; the same device without the fault answers them itself.
    #[test]
    fn a_device_fault_mid_batch_under_auto_answers_the_batch_on_the_cpu() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        // Constants under which the device wins every query, so that `auto` batches them.
        assert!(engine.set_device_costs(DeviceCosts::parse("dfs_query_us = 1e9").unwrap()));
        let queries = dense_16(&g, &["1", "2", "3", "4"]);
        let auto = auto_iso();
        let list: Vec<_> = queries.iter().map(|q| (q, &auto)).collect();
        let want = dfs_counts(&engine, &queries);
        let device = |fault: Option<&str>| {
            let mut dev = HostDevice::default();
            dev.check_writes = true;
            dev.fault_in = fault.map(str::to_owned);
            DeviceState::new(dev, &g).unwrap()
        };

        let sound = engine.count_batch_on(&list, Some(&device(None)));
        assert_eq!((sound.batched, sound.batches, sound.on_cpu), (4, 1, 0));
        assert!(sound.fallback.is_none() && sound.counters.launches > 0);
        for (r, &n) in sound.reports.iter().zip(&want) {
            let r = r.as_ref().unwrap();
            assert_eq!((r.rows, r.engine), (n, EngineKind::Gpu));
            assert!(r.fallback.is_none() && r.auto.as_ref().unwrap().pick == EngineKind::Gpu);
        }

        let faulty = engine.count_batch_on(&list, Some(&device(Some("extend_warp_batch"))));
        assert_eq!((faulty.batched, faulty.on_cpu), (4, 4));
        let why = faulty.fallback.as_deref().unwrap();
        assert!(
            why.contains("extend_warp_batch raised the fault flag"),
            "{why}"
        );
        for (r, &n) in faulty.reports.iter().zip(&want) {
            let r = r.as_ref().unwrap();
            assert_eq!((r.rows, r.engine), (n, EngineKind::Dfs));
            let note = r.fallback.as_deref().unwrap();
            assert!(note.starts_with("the GPU failed during a batch"), "{note}");
            assert_eq!(r.auto.as_ref().unwrap().pick, EngineKind::Gpu);
        }
    }

    /// Under `auto` with a device that fails mid-batch, queries that want rows get dfs's rows,
    /// each once (none was handed out before the failure), and say they ran on the CPU.
    #[test]
    fn a_device_fault_mid_batch_under_auto_gives_the_rows_on_the_cpu() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        assert!(engine.set_device_costs(DeviceCosts::parse("dfs_query_us = 1e9").unwrap()));
        let queries = dense_16(&g, &["1", "2", "3", "4"]);
        let auto = auto_iso();
        let dfs = MatchOptions {
            engine: EngineKind::Dfs,
            ..auto.clone()
        };
        let mut dev = HostDevice::default();
        dev.fault_in = Some("extend_warp_batch".to_owned());
        let state = DeviceState::new(dev, &g).unwrap();
        let mut rows: Vec<Vec<Vec<u32>>> = queries.iter().map(|_| Vec::new()).collect();
        let mut sinks: Vec<_> = rows
            .iter_mut()
            .map(|r| {
                move |b: RowBatch| {
                    r.extend(b.iter().map(<[u32]>::to_vec));
                    true
                }
            })
            .collect();
        let list = queries
            .iter()
            .zip(sinks.iter_mut())
            .map(|(q, sink)| BatchQuery {
                q,
                opts: &auto,
                rows: Some(sink),
            })
            .collect();
        // The device's failures are not told: the CPU's answers are, each once.
        let told = Mutex::new(Vec::new());
        let batch = engine.match_batch_on(list, Some(&state), Outgrown::GoOn, &|i, a| {
            let engine = a.as_ref().map(|r| r.engine).ok();
            told.lock().unwrap().push((i, engine));
        });
        drop(sinks);
        let mut told = told.into_inner().unwrap();
        told.sort_by_key(|t| t.0);
        assert_eq!(
            told,
            (0..4)
                .map(|i| (i, Some(EngineKind::Dfs)))
                .collect::<Vec<_>>()
        );
        assert_eq!((batch.batched, batch.on_cpu), (4, 4));
        for ((q, r), mut got) in queries.iter().zip(&batch.reports).zip(rows) {
            let r = r.as_ref().unwrap();
            assert_eq!(r.engine, EngineKind::Dfs);
            assert!(r.fallback.is_some());
            let mut want = engine.collect(q, &dfs).unwrap().0;
            got.sort();
            want.sort();
            assert!(!want.is_empty());
            assert_eq!(got, want);
            assert_eq!(r.rows, want.len() as u128);
        }
    }

    /// Under `Outgrown::Leave` (a server's batches), a query refused for device memory that its
    /// own budget allows (other users held it) is left to its caller, whose query alone waits for
    /// them and tries again; before, the refusal was its answer. Under `GoOn`, or when its own
    /// budget refuses it, the refusal stays its answer.
    #[test]
    fn a_batch_leaves_a_query_short_of_device_memory_to_its_caller() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        let mut dev = HostDevice::default();
        // What a device that others use up reports.
        dev.free_memory = Some(4 << 10);
        let state = DeviceState::new(dev, &g).map(std::sync::Arc::new);
        assert!(engine.emulator.set(state).is_ok());
        let queries = eight(&g);
        let roomy = MatchOptions {
            engine: EngineKind::Emulated,
            ..MatchOptions::default()
        };
        let tight = MatchOptions {
            memory_budget: 1 << 10,
            ..roomy.clone()
        };
        let run = |outgrown, opts: &MatchOptions| {
            let list = queries.iter().map(|q| BatchQuery {
                q,
                opts,
                rows: None,
            });
            engine
                .match_batch_each(list.collect(), outgrown, &|_, _| {})
                .reports
        };
        for r in run(Outgrown::Leave, &roomy) {
            assert!(
                matches!(&r, Err(e @ MatchError::BatchShortOfMemory(_)) if e.left_by_batch()),
                "{r:?}"
            );
        }
        for (outgrown, opts) in [(Outgrown::GoOn, &roomy), (Outgrown::Leave, &tight)] {
            for r in run(outgrown, opts) {
                assert!(
                    matches!(r, Err(MatchError::DeviceBudget { .. })),
                    "{outgrown:?}: {r:?}"
                );
            }
        }
    }

    /// HPRD's first eight `query_dense_16_N`.
    fn eight(g: &KnowledgeGraph) -> Vec<QueryGraph> {
        dense_16(g, &["1", "2", "3", "4", "5", "6", "7", "8"])
    }

    /// `queries` counted as one batch under `opts` on the emulator, with no share wait and one
    /// thread: the device's side starts first and takes the front of the ranking at once.
    fn shared_at_once(
        engine: &Engine,
        g: &KnowledgeGraph,
        queries: &[QueryGraph],
        opts: &MatchOptions,
    ) -> BatchReport {
        engine.set_share_after(Duration::ZERO);
        let list: Vec<_> = queries.iter().map(|q| (q, opts)).collect();
        let device = DeviceState::new(HostDevice::default(), g).unwrap();
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        one.install(|| engine.count_batch_on(&list, Some(&device)))
    }

    /// Under `auto` with a device, the counts estimated for dfs are shared: with no wait, the
    /// device takes the front of their ranking at once (on one thread the CPU's side runs only
    /// when the device's waits let it), and every count is dfs's.
    #[test]
    fn auto_shares_the_counts_it_estimates_for_dfs_with_the_device() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        let queries = eight(&g);
        let want = dfs_counts(&engine, &queries);
        let batch = shared_at_once(&engine, &g, &queries, &auto_iso());
        assert_eq!(batch.shared, 8);
        assert!(batch.shared_on_device >= 1, "{}", batch.shared_on_device);
        assert_eq!(batch.batched, batch.shared_on_device);
        let mut ranks = Vec::new();
        for (r, &n) in batch.reports.iter().zip(&want) {
            let r = r.as_ref().unwrap();
            assert_eq!(r.rows, n);
            let choice = r.auto.as_ref().unwrap();
            match choice.reason {
                Reason::Shared { rank, of } => {
                    assert_eq!(
                        (r.engine, choice.pick, of),
                        (EngineKind::Gpu, EngineKind::Gpu, 8)
                    );
                    ranks.push(rank);
                }
                _ => assert_eq!((r.engine, choice.pick), (EngineKind::Dfs, EngineKind::Dfs)),
            }
        }
        // The device's chunks come from the front: ranks 1, 2, ... in some order.
        ranks.sort();
        assert_eq!(ranks, (1..=ranks.len()).collect::<Vec<_>>());
    }

    /// A shared count the device cannot hold in its memory budget is answered by `dfs` (which
    /// fits in it), with a note, not failed.
    #[test]
    fn a_shared_count_the_device_cannot_hold_is_answered_on_the_cpu() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        let queries = eight(&g);
        let want = dfs_counts(&engine, &queries);
        // dfs's bitsets take 16 x 296 words; the device's filtering several times that.
        let tight = MatchOptions {
            memory_budget: 40_000,
            ..auto_iso()
        };
        let batch = shared_at_once(&engine, &g, &queries, &tight);
        assert!(batch.shared_on_device >= 1);
        let mut refused = 0;
        for (r, &n) in batch.reports.iter().zip(&want) {
            let r = r.as_ref().unwrap();
            assert_eq!((r.rows, r.engine), (n, EngineKind::Dfs));
            if let Some(note) = &r.fallback {
                assert!(note.starts_with("the device could not hold it"), "{note}");
                refused += 1;
            }
        }
        assert_eq!(refused, batch.shared_on_device);
    }

    /// A batch whose CPU side answers every shared count before the wait is over does not wait
    /// for it: the device takes nothing and the batch returns as the CPU finishes.
    #[test]
    fn a_batch_the_cpu_answers_first_does_not_wait_for_the_device() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        engine.set_share_after(Duration::from_secs(30));
        let queries = eight(&g);
        let auto = auto_iso();
        let list: Vec<_> = queries.iter().map(|q| (q, &auto)).collect();
        let want = dfs_counts(&engine, &queries);
        let device = DeviceState::new(HostDevice::default(), &g).unwrap();
        let start = Instant::now();
        let batch = engine.count_batch_on(&list, Some(&device));
        assert!(start.elapsed() < Duration::from_secs(30));
        assert_eq!(
            (batch.shared, batch.shared_on_device, batch.batched),
            (8, 0, 0)
        );
        for (r, &n) in batch.reports.iter().zip(&want) {
            let r = r.as_ref().unwrap();
            assert_eq!((r.rows, r.engine), (n, EngineKind::Dfs));
        }
    }

    /// Under `auto` with a device, a query whose estimate picks dfs runs on dfs beside the batch,
    /// its report carrying the estimate, while the picked ones share the batch.
    #[test]
    fn auto_sends_each_query_where_its_estimate_points() {
        let g = load(hprd("data_graph/HPRD.graph"));
        let engine = Engine::new(&g);
        // With the calibrated constants every HPRD query picks dfs (the device's fixed cost
        // outweighs its work); the middle one is sent to the device by name.
        let queries = dense_16(&g, &["1", "2", "3"]);
        let auto = auto_iso();
        let gpu = MatchOptions {
            engine: EngineKind::Emulated,
            ..auto.clone()
        };
        let list = vec![
            (&queries[0], &auto),
            (&queries[1], &gpu),
            (&queries[2], &auto),
        ];
        let device = DeviceState::new(HostDevice::default(), &g).unwrap();
        // The CPU's side answers the shared counts long before the device could take one.
        engine.set_share_after(Duration::from_secs(30));
        let batch = engine.count_batch_on(&list, Some(&device));
        assert_eq!((batch.batched, batch.batches, batch.shared), (1, 1, 2));
        let engines: Vec<_> = batch
            .reports
            .iter()
            .map(|r| r.as_ref().unwrap().engine)
            .collect();
        assert_eq!(
            engines,
            [EngineKind::Dfs, EngineKind::Emulated, EngineKind::Dfs]
        );
        for r in [&batch.reports[0], &batch.reports[2]] {
            let choice = r.as_ref().unwrap().auto.as_ref().unwrap();
            assert_eq!(choice.pick, EngineKind::Dfs, "{choice}");
        }
    }
}

//! [`Engine::count_batch`]: many counting queries, those on a device engine answered as one batch
//! (`gpu_batch`), each with its own answer, error and limits.

use rayon::prelude::*;

use super::*;
use crate::device::DeviceCounters;
use crate::gpu_pipeline::BatchItem;

/// What [`Engine::count_batch`] did: each query's report or its own error, in order, and the
/// device calls of the batched queries together.
#[derive(Debug, Default)]
pub struct BatchReport {
    pub reports: Vec<Result<MatchReport, MatchError>>,
    /// Launches, reads (waits), bytes of the batch (zero when no query was batched).
    pub counters: DeviceCounters,
    /// Queries answered in the batch; the others ran alone (another engine or semantics than
    /// the first batched query's, or a disconnected query without a limit).
    pub batched: usize,
    /// Where the batch's time went.
    pub phases: BatchPhases,
}

/// Where a batch's time went, on the host's clock. Each device phase ends with its read, so it
/// holds the device's work as well as the host's preparation of it.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct BatchPhases {
    /// Plans and filtering layouts of every query (host only).
    pub plan: Duration,
    /// Filtering of every query, to the read of the candidate counts.
    pub filter: Duration,
    /// Join orders, candidate arrays and candidate-edge lists.
    pub space: Duration,
    /// The join's depths of every query, to the read of their counters.
    pub levels: Duration,
    /// Queries that went on alone after the batch (a level outgrew its room, an edge variable).
    pub alone: Duration,
}

impl std::ops::AddAssign for BatchPhases {
    fn add_assign(&mut self, b: BatchPhases) {
        self.plan += b.plan;
        self.filter += b.filter;
        self.space += b.space;
        self.levels += b.levels;
        self.alone += b.alone;
    }
}

/// A query's place in the batch, and what its report is built from.
struct Planned<'q> {
    index: usize,
    q: &'q QueryGraph,
    opts: &'q MatchOptions,
    plan: Plan,
    layout: Layout,
    limit: Option<u64>,
    /// `auto`'s estimates in a batch, which picked the device.
    auto: Option<AutoChoice>,
}

/// Each batched query's report (or error), the device's calls, where the time went.
type DeviceAnswers = (
    Vec<Result<MatchReport, MatchError>>,
    DeviceCounters,
    BatchPhases,
);

/// A query's plan, its filtering layout when it joins the batch, and `auto`'s estimates.
type Prepared = (Plan, Option<Result<Layout, MatchError>>, Option<AutoChoice>);

impl Engine<'_> {
    /// Counts the matches of each query with its own options. Queries on the `gpu` or
    /// `emulated` engine that share the first such query's engine, semantics and refinement rounds
    /// are answered together in one sequence of launches; the others one by one. A query's
    /// failure (memory budget, time limit, a refused shape) is its own entry in the report.
    pub fn count_batch(&self, queries: &[(&QueryGraph, &MatchOptions)]) -> BatchReport {
        let start = Instant::now();
        let mut reports: Vec<Option<Result<MatchReport, MatchError>>> =
            queries.iter().map(|_| None).collect();
        // `auto` joins a batch on the GPU when one is found, where its estimate of the query in a
        // batch picks the device; its other queries go to dfs.
        let gpu_found =
            queries.iter().any(|(_, o)| o.engine == EngineKind::Auto) && self.gpu().is_ok();
        let batch_kind = |o: &MatchOptions| match o.engine {
            EngineKind::Auto if gpu_found => Some(EngineKind::Gpu),
            k @ (EngineKind::Gpu | EngineKind::Emulated) => Some(k),
            _ => None,
        };
        let key = queries
            .iter()
            .find_map(|(_, o)| batch_kind(o).map(|k| (k, o.semantics, o.refine_rounds)));
        let same = |o: &MatchOptions| {
            batch_kind(o).is_some_and(|k| key == Some((k, o.semantics, o.refine_rounds)))
        };
        // Plans, `auto`'s estimates and layouts are the host's share of a batch: every core takes
        // part (HPRD-200: about as long as dfs answering the whole suite, on one core).
        let prepared: Vec<Prepared> = queries
            .par_iter()
            .with_min_len(8)
            .map(|&(q, opts)| {
                let plan = if opts.explain {
                    plan_with(q, self.graph, &self.stats)
                } else {
                    plan_brief(q, self.graph, &self.stats)
                };
                let auto = (opts.engine == EngineKind::Auto && gpu_found)
                    .then(|| self.auto_choice_in_batch(q, &plan, opts));
                let alone = !same(opts)
                    || auto.as_ref().is_some_and(|c| c.pick != EngineKind::Gpu)
                    || (plan.components.len() > 1 && opts.limit_for(q.limit).is_none());
                let layout = (!alone).then(|| Layout::new(q, &plan, opts.semantics, self.shape));
                (plan, layout, auto)
            })
            .collect();
        let mut planned = Vec::new();
        for (index, (&(q, opts), (plan, layout, auto))) in queries.iter().zip(prepared).enumerate()
        {
            match layout {
                None => reports[index] = Some(self.count_alone(q, opts, auto)),
                Some(Ok(layout)) => planned.push(Planned {
                    index,
                    q,
                    opts,
                    plan,
                    layout,
                    limit: opts.limit_for(q.limit),
                    auto,
                }),
                Some(Err(e)) => reports[index] = Some(Err(e)),
            }
        }
        let batched = planned.len();
        let mut phases = BatchPhases {
            plan: start.elapsed(),
            ..Default::default()
        };
        let mut counters = DeviceCounters::default();
        if let Some((engine, semantics, rounds)) = key.filter(|_| batched > 0) {
            let done =
                match engine {
                    EngineKind::Gpu => self.gpu().map_err(MatchError::from).and_then(|d| {
                        d.count_batch(&planned, semantics, rounds, self.shape, start)
                    }),
                    _ => self.emulator().map_err(MatchError::from).and_then(|d| {
                        d.count_batch(&planned, semantics, rounds, self.shape, start)
                    }),
                };
            match done {
                Ok((answers, c, p)) => {
                    counters = c;
                    phases = BatchPhases {
                        plan: phases.plan,
                        ..p
                    };
                    for (p, a) in planned.iter().zip(answers) {
                        reports[p.index] = Some(a.map(|mut r| {
                            if let Some(c) = &p.auto {
                                r.auto = Some(c.clone());
                                r.engine = EngineKind::Gpu;
                            }
                            r
                        }));
                    }
                }
                Err(e) => {
                    for p in &planned {
                        reports[p.index] = Some(Err(e.clone()));
                    }
                }
            }
        }
        BatchReport {
            reports: reports
                .into_iter()
                .map(|r| r.unwrap_or(Err(MatchError::Plan("query not answered".into()))))
                .collect(),
            counters,
            batched,
            phases,
        }
    }
}

impl Engine<'_> {
    /// A query outside the batch: on its own engine, or on dfs where `auto`'s estimate in the
    /// batch picked it (the report then carries that estimate).
    fn count_alone(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        auto: Option<AutoChoice>,
    ) -> Result<MatchReport, MatchError> {
        let Some(choice) = auto.filter(|c| c.pick == EngineKind::Dfs) else {
            return self.count(q, opts);
        };
        let dfs = MatchOptions {
            engine: EngineKind::Dfs,
            ..opts.clone()
        };
        let mut report = self.count(q, &dfs)?;
        report.auto = Some(choice);
        Ok(report)
    }
}

impl<D: Device> DeviceState<D> {
    /// The batch on this device: each query's report (or error) and the device calls it made.
    fn count_batch(
        &self,
        planned: &[Planned],
        semantics: Semantics,
        refine_rounds: u32,
        shape: DataShape,
        start: Instant,
    ) -> Result<DeviceAnswers, MatchError> {
        let mut arena = self.arena.lock().unwrap_or_else(|e| e.into_inner());
        let free = self.dev.free_memory()?;
        let mut sinks: Vec<_> = planned.iter().map(|_| |_: RowBatch| true).collect();
        let outs: Vec<Output> = planned
            .iter()
            .zip(sinks.iter_mut())
            .map(|(p, sink)| output(p.q, by_node(p.q), p.opts, p.limit, true, sink, start))
            .collect();
        let held = arena.bytes();
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
                limit: p.limit,
                result: None,
            })
            .collect();
        let before = self.dev.counters();
        let phases = Pipeline {
            dev: &self.dev,
            graph: &self.graph,
            arena: &mut arena,
            semantics,
            shape,
            memory_budget: 0,
            refine_rounds,
            limit: None,
            segment: self.segment,
        }
        .run_batch(&mut items)?;
        let counters = self.dev.counters() - before;
        let results: Vec<_> = items.into_iter().map(|it| it.result).collect();
        let reports = planned
            .iter()
            .zip(outs)
            .zip(results)
            .map(|((p, out), result)| {
                let (join_plan, filter, device) =
                    result.unwrap_or(Err(MatchError::Plan("query not answered".into())))?;
                let report = MatchReport {
                    fallback: None,
                    auto: None,
                    device: Some(self.dev.describe()),
                    timed_out: false,
                    rows: 0,
                    limit_reached: false,
                    engine: p.opts.engine,
                    semantics,
                    join_plan,
                    plan: p.plan.clone(),
                    times: Timings::default(),
                    filter,
                    edge_candidates: None,
                    search: None,
                    device_report: Some(DeviceReport {
                        arena_bytes: arena.bytes(),
                        ..device
                    }),
                };
                let times = Timings {
                    filter: report.filter.filter_time,
                    ..Default::default()
                };
                finish(out, report, times, start)
            })
            .collect();
        Ok((reports, counters, phases))
    }
}

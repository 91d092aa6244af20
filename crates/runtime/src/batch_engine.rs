//! [`Engine::count_batch`]: many counting queries, those on a device engine answered as one batch
//! (`gpu_batch`), each with its own answer, error and limits.

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
}

/// A query's place in the batch, and what its report is built from.
struct Planned<'q> {
    index: usize,
    q: &'q QueryGraph,
    opts: &'q MatchOptions,
    plan: Plan,
    layout: Layout,
    limit: Option<u64>,
}

impl Engine<'_> {
    /// Counts the matches of each query with its own options. Queries on the `gpu` or
    /// `emulated` engine that share the first such query's engine, semantics and refinement rounds
    /// are answered together in one sequence of launches; the others one by one. A query's
    /// failure (memory budget, time limit, a refused shape) is its own entry in the report.
    pub fn count_batch(&self, queries: &[(&QueryGraph, &MatchOptions)]) -> BatchReport {
        let start = Instant::now();
        let mut reports: Vec<Option<Result<MatchReport, MatchError>>> =
            queries.iter().map(|_| None).collect();
        let key = queries
            .iter()
            .find(|(_, o)| matches!(o.engine, EngineKind::Gpu | EngineKind::Emulated))
            .map(|(_, o)| (o.engine, o.semantics, o.refine_rounds));
        let mut planned = Vec::new();
        for (index, &(q, opts)) in queries.iter().enumerate() {
            let limit = opts.limit_for(q.limit);
            let same = key == Some((opts.engine, opts.semantics, opts.refine_rounds));
            let plan = if opts.explain {
                plan_with(q, self.graph, &self.stats)
            } else {
                plan_brief(q, self.graph, &self.stats)
            };
            if !same || (plan.components.len() > 1 && limit.is_none()) {
                reports[index] = Some(self.count(q, opts));
                continue;
            }
            match Layout::new(q, &plan, opts.semantics, self.shape) {
                Ok(layout) => planned.push(Planned {
                    index,
                    q,
                    opts,
                    plan,
                    layout,
                    limit,
                }),
                Err(e) => reports[index] = Some(Err(e)),
            }
        }
        let batched = planned.len();
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
                Ok((answers, c)) => {
                    counters = c;
                    for (p, a) in planned.iter().zip(answers) {
                        reports[p.index] = Some(a);
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
        }
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
    ) -> Result<(Vec<Result<MatchReport, MatchError>>, DeviceCounters), MatchError> {
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
        Pipeline {
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
        Ok((reports, counters))
    }
}

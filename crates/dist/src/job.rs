//! One query on every worker: resolve its names across the parts, plan, run the join, and gather
//! what each worker saw at worker 0.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpsense_planner::{
    nearest_names, Dialect, Form, Projected, QueryError, QueryGraph, Vocabulary,
};
use gpsense_runtime::{MatchError, Semantics};
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::{InputHandleVec, ProbeHandle};
use timely::worker::Worker;

use crate::dataflow::{self, Finish, RowSink, Settings, Topology};
use crate::plan::DistPlan;
use crate::{DistError, Partition, Vocab};

/// The query: text in either dialect, or a query graph resolved already (benchmark queries).
#[derive(Clone, Debug)]
pub enum Request {
    Text { text: String, prefer: Dialect },
    Graph(QueryGraph),
}

/// One query and its limits, the same on every process.
#[derive(Clone, Debug)]
pub struct Job {
    pub request: Request,
    /// `None`: the query's own (standard SPARQL), else iso.
    pub semantics: Option<Semantics>,
    /// Count instead of producing rows (`--count`).
    pub count_only: bool,
    /// The caller's row limit (the query's LIMIT applies too).
    pub limit: Option<u64>,
    pub timeout: Option<Duration>,
    /// A disconnected query without a limit whose components' counts multiply beyond this is
    /// refused (`--max-cartesian`).
    pub max_cartesian: u64,
    /// Bytes each worker may hold in queued partial matches and in its DISTINCT set.
    pub memory_budget: u64,
    /// Seeds per epoch per worker.
    pub batch: usize,
}

/// What a query did, as worker 0 reports it.
#[derive(Clone, Debug)]
pub struct Report {
    /// Rows handed to the sink, or the count (COUNT, ASK, `--count`), exact in `u128`.
    pub rows: u128,
    pub limit_reached: bool,
    pub timed_out: bool,
    pub form: Form,
    pub semantics: Semantics,
    pub columns: Vec<String>,
    /// Partial matches produced on all workers, every level.
    pub partial_matches: u64,
    /// The most partial matches one stage queue of one worker held (the memory bound at work).
    pub peak_queued: u64,
    pub workers: usize,
    pub elapsed: Duration,
    /// Names the graph lacks in a standard SPARQL query (whose answer is then empty, as the
    /// standard asks), each with its "did you mean" suggestion.
    pub notes: Vec<String>,
}

/// Makes worker 0's sink once the columns are known.
pub type SinkFactory = Box<dyn FnOnce(&[String]) -> Box<dyn RowSink> + Send>;

/// Runs `job` on this worker; worker 0 returns the report, the others `None`.
pub fn run_worker(
    worker: &mut Worker,
    part: &Arc<Partition>,
    topo: Topology,
    workers_here: usize,
    job: &Job,
    sink: Option<SinkFactory>,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Option<Report>, DistError> {
    let start = Instant::now();
    let (q, form, offset, injective) = match prepare(worker, part, topo, &job.request, failed)? {
        Prepared::Query(resolved) => resolved,
        Prepared::Unknown { resolved, note } => {
            return Ok(empty_answer(worker, resolved, job, sink, note, start))
        }
    };
    let semantics = match (job.semantics, injective) {
        (Some(s), _) => s,
        (None, Some(false)) => Semantics::Hom,
        (None, _) => Semantics::Iso,
    };
    let columns = column_names(&q);
    let limit = match (q.limit, job.limit) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let (count_only, distinct, limit) = match &form {
        Form::Select => (job.count_only, q.distinct, limit),
        Form::Ask => (true, false, Some(1)),
        Form::Count { distinct, .. } => (true, *distinct || q.distinct, limit),
    };
    let finish = Finish {
        count_only,
        distinct,
        offset,
        limit,
        distinct_budget: job.memory_budget / 2 / workers_here as u64,
    };
    let run = Run {
        part,
        topo,
        workers_here,
        job,
        semantics,
        deadline: job.timeout.map(|t| start + t),
    };
    if count_only && limit.is_none() && offset == 0 && !distinct {
        if let Some(c) = cartesian_count(worker, &run, &q, failed)? {
            let report = Report {
                rows: c.rows,
                limit_reached: false,
                timed_out: c.timed_out,
                form,
                semantics,
                columns,
                partial_matches: c.partial_matches,
                peak_queued: c.peak_queued,
                workers: worker.peers(),
                elapsed: start.elapsed(),
                notes: Vec::new(),
            };
            return Ok((worker.index() == 0).then_some(report));
        }
    }
    if !count_only && limit.is_none() {
        cartesian_guard(worker, &run, &q, failed)?;
    }
    let sink = match (worker.index(), sink) {
        (0, Some(make)) if !count_only => Some(make(&columns)),
        _ => None,
    };
    let answer = run.answer(worker, &q, finish, sink, failed)?;
    // Every worker's share: timed out, partial matches, an error.
    let mine = (
        worker.index() as u32,
        u32::from(answer.timed_out),
        answer.partial_matches,
        answer.error.clone().unwrap_or_default(),
        answer.peak_queued,
    );
    let all = all_gather(worker, vec![mine], failed)?;
    if let Some((_, _, _, e, _)) = all.iter().find(|x| !x.3.is_empty()) {
        return Err(DistError::Unsupported(e.clone()));
    }
    if worker.index() != 0 {
        return Ok(None);
    }
    Ok(Some(Report {
        rows: answer.rows,
        limit_reached: answer.limit_reached,
        timed_out: all.iter().any(|x| x.1 != 0),
        form,
        semantics,
        columns,
        partial_matches: all.iter().map(|x| x.2).sum(),
        peak_queued: all.iter().map(|x| x.4).max().unwrap_or(0),
        workers: worker.peers(),
        elapsed: start.elapsed(),
        notes: Vec::new(),
    }))
}

/// The answer to a standard SPARQL query naming something the graph lacks: no rows (the header
/// still written), a count of 0, or `no`, with the name's note. Every worker reaches this alike.
fn empty_answer(
    worker: &Worker,
    (q, form, _, injective): Resolved,
    job: &Job,
    sink: Option<SinkFactory>,
    note: String,
    start: Instant,
) -> Option<Report> {
    if worker.index() != 0 {
        return None;
    }
    let columns = column_names(&q);
    if let (Form::Select, false, Some(make)) = (&form, job.count_only, sink) {
        drop(make(&columns));
    }
    let semantics = match (job.semantics, injective) {
        (Some(s), _) => s,
        (None, Some(false)) => Semantics::Hom,
        (None, _) => Semantics::Iso,
    };
    Some(Report {
        rows: 0,
        limit_reached: false,
        timed_out: false,
        form,
        semantics,
        columns,
        partial_matches: 0,
        peak_queued: 0,
        workers: worker.peers(),
        elapsed: start.elapsed(),
        notes: vec![note],
    })
}

/// What one match on this worker needs besides the query and how its matches end.
struct Run<'a> {
    part: &'a Arc<Partition>,
    topo: Topology,
    workers_here: usize,
    job: &'a Job,
    semantics: Semantics,
    deadline: Option<Instant>,
}

impl Run<'_> {
    /// Plans `q`, filters its candidates across the parts and joins it: what this worker saw.
    fn answer(
        &self,
        worker: &mut Worker,
        q: &QueryGraph,
        finish: Finish,
        sink: Option<Box<dyn RowSink>>,
        failed: &dyn Fn() -> Option<String>,
    ) -> Result<dataflow::Answer, DistError> {
        let plan = Arc::new(DistPlan::new(q, self.semantics, &self.part.vocab)?);
        // The budget is the process's: shared by its workers and, on each, by the queues of every
        // stage (two per level); a queued partial match costs its row plus the vector around it.
        let row_bytes = 4 * plan.row_width() as u64 + 48;
        let queues = 2 * plan.levels.len() as u64 * self.workers_here as u64;
        let high_water =
            (self.job.memory_budget / 2 / (row_bytes * queues).max(1)).clamp(64, 1 << 20) as usize;
        let settings = Settings {
            finish,
            deadline: self.deadline,
            batch: self.job.batch.max(1),
            in_flight: 2,
            high_water,
        };
        let deadline = self.deadline;
        let stopped = move || deadline.is_some_and(|d| Instant::now() >= d);
        let cands = Rc::new(crate::filter::filter(
            worker, self.part, self.topo, &plan, &stopped, failed,
        )?);
        let shared = dataflow::Shared {
            part: Arc::clone(self.part),
            topo: self.topo,
            plan,
            cands,
        };
        dataflow::run(worker, &shared, &settings, sink, failed)
    }
}

/// A disconnected query asked for rows without a limit: each component is counted alone (up to
/// `max_cartesian + 1`), and a product of the counts beyond `max_cartesian` is refused with the
/// single-machine engine's error, before any row is produced. Every worker learns worker 0's
/// counts, so all decide alike. A count cut by the time limit refuses nothing (the join then
/// stops at once and reports the answer timed out).
fn cartesian_guard(
    worker: &mut Worker,
    run: &Run,
    q: &QueryGraph,
    failed: &dyn Fn() -> Option<String>,
) -> Result<(), DistError> {
    let components = q.components();
    if components.len() < 2 {
        return Ok(());
    }
    let max = run.job.max_cartesian;
    let cap = Some(max.saturating_add(1));
    let Some(counts) = component_counts(worker, run, q, &components, cap, failed)? else {
        return Ok(());
    };
    let product = gpsense_runtime::count_product(counts.rows.iter().copied());
    if product.is_none_or(|p| p > u128::from(max)) {
        let at_least = if counts.capped { "at least " } else { "" };
        let product = product.map_or_else(|| "more than 2^128 - 1".to_string(), |p| p.to_string());
        return Err(DistError::Match(MatchError::CartesianExplosion {
            components: components.len(),
            product: format!("{at_least}{product}"),
            limit: max,
        }));
    }
    Ok(())
}

/// The count of a disconnected query that is the product of its components' (hom, no edge variable
/// shared; the caller checked no limit, OFFSET or DISTINCT): the components counted alone and
/// multiplied, as the single-machine engine does, instead of the join enumerating the product (past
/// 2^64 on a real graph). `None`: the join counts it.
fn cartesian_count(
    worker: &mut Worker,
    run: &Run,
    q: &QueryGraph,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Option<Product>, DistError> {
    let components = q.components();
    if components.len() < 2 || !gpsense_runtime::counts_multiply(q, &components, run.semantics) {
        return Ok(None);
    }
    let counts = component_counts(worker, run, q, &components, None, failed)?;
    let rows = match &counts {
        Some(c) => gpsense_runtime::count_product(c.rows.iter().copied())
            .ok_or(DistError::Match(MatchError::CountOverflow))?,
        None => 0,
    };
    let (partial_matches, peak_queued) = counts
        .as_ref()
        .map_or((0, 0), |c| (c.partial_matches, c.peak));
    Ok(Some(Product {
        rows,
        timed_out: counts.is_none(),
        partial_matches,
        peak_queued,
    }))
}

/// A count [`cartesian_count`] multiplied (0 and timed out when the time limit cut a component's).
struct Product {
    rows: u128,
    timed_out: bool,
    partial_matches: u64,
    peak_queued: u64,
}

/// What counting each component of a query alone found, the same on every worker.
struct ComponentCounts {
    /// Worker 0's count of each component.
    rows: Vec<u128>,
    /// Whether a cap cut a count.
    capped: bool,
    /// Partial matches produced on all workers, all components.
    partial_matches: u64,
    /// The most partial matches one stage queue held.
    peak: u64,
}

/// Counts each of `components` on the cluster alone, up to `cap` each. `None` when the time limit
/// cut a count on some worker.
fn component_counts(
    worker: &mut Worker,
    run: &Run,
    q: &QueryGraph,
    components: &[Vec<usize>],
    cap: Option<u64>,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Option<ComponentCounts>, DistError> {
    let mut counts = ComponentCounts {
        rows: Vec::with_capacity(components.len()),
        capped: false,
        partial_matches: 0,
        peak: 0,
    };
    for nodes in components {
        let finish = Finish {
            count_only: true,
            distinct: false,
            offset: 0,
            limit: cap,
            distinct_budget: 0,
        };
        let sub = gpsense_runtime::component_query(q, nodes);
        let a = run.answer(worker, &sub, finish, None, failed)?;
        let mine = (
            worker.index() as u32,
            a.rows,
            a.limit_reached,
            a.timed_out,
            a.partial_matches,
            a.peak_queued,
        );
        let all = all_gather(worker, vec![mine], failed)?;
        let Some(&(_, rows, limited, _, _, _)) = all.iter().find(|x| x.0 == 0) else {
            return Ok(None);
        };
        if all.iter().any(|x| x.3) {
            return Ok(None);
        }
        counts.rows.push(rows);
        counts.capped |= limited;
        counts.partial_matches += all.iter().map(|x| x.4).sum::<u64>();
        counts.peak = counts.peak.max(all.iter().map(|x| x.5).max().unwrap_or(0));
    }
    Ok(Some(counts))
}

/// The query graph, its form, OFFSET and whether it asks for injective matches.
type Resolved = (QueryGraph, Form, u64, Option<bool>);

/// A query ready to run, or one in standard SPARQL whose answer is empty because the graph lacks a
/// name it uses (its shape resolved against a vocabulary that knows every name).
enum Prepared {
    Query(Resolved),
    Unknown { resolved: Resolved, note: String },
}

/// Resolves the query's names on every part: each round looks up, on all parts at once, the names
/// the last try asked for, until a try asks for nothing new. Every worker runs the same rounds and
/// gets the same answers, so all reach the same query graph (or the same error).
fn prepare(
    worker: &mut Worker,
    part: &Partition,
    topo: Topology,
    request: &Request,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Prepared, DistError> {
    let (text, prefer) = match request {
        Request::Graph(q) => return Ok(Prepared::Query((q.clone(), Form::Select, 0, None))),
        Request::Text { text, prefer } => (text, *prefer),
    };
    let mut names = Fetched {
        vocab: &part.vocab,
        nodes: HashMap::new(),
        suggestions: HashMap::new(),
        asked: RefCell::new(Vec::new()),
    };
    // Each round settles at least one name; a query names far fewer than this.
    for _ in 0..256 {
        let result = gpsense_planner::prepare(text, &names, prefer);
        let asked = std::mem::take(&mut *names.asked.borrow_mut());
        if asked.is_empty() {
            let p = match result {
                Err(
                    e @ (QueryError::UnknownConcept { .. } | QueryError::UnknownRelation { .. }),
                ) if prefer == Dialect::Sparql => {
                    return unknown_name(text, prefer, &e);
                }
                r => r?,
            };
            if !p.filters.is_empty() {
                return Err(DistError::Unsupported(
                    "FILTER is not supported across processes yet: run the query without \
                     --workers/--processes, or drop the FILTER"
                        .into(),
                ));
            }
            if !p.order.is_empty() {
                return Err(DistError::Unsupported(
                    "ORDER BY is not supported across processes yet: run the query without \
                     --workers/--processes, or sort the rows afterwards"
                        .into(),
                ));
            }
            return Ok(Prepared::Query((p.graph, p.form, p.offset, p.injective)));
        }
        lookup(worker, part, topo, &mut names, asked, failed)?;
    }
    Err(DistError::Unsupported(
        "the query's names did not resolve in 256 rounds".into(),
    ))
}

/// The empty answer's shape, and the note `gpsense query` prints for the same name on one machine.
fn unknown_name(text: &str, prefer: Dialect, e: &QueryError) -> Result<Prepared, DistError> {
    let p = gpsense_planner::prepare(text, &crate::reading::EveryName, prefer)?;
    let message = e.to_string();
    // "line 1, column 9: " places the name in the text; the note names it already.
    let note = match message.split_once(": ") {
        Some((place, rest)) if place.starts_with("line ") => rest.to_owned(),
        _ => message,
    };
    Ok(Prepared::Unknown {
        resolved: (p.graph, p.form, p.offset, p.injective),
        note,
    })
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Ask {
    Nodes(String),
    Suggest(String, usize),
}

/// Names looked up on every part so far; what a try asked for and was not known yet.
struct Fetched<'a> {
    vocab: &'a Vocab,
    nodes: HashMap<String, Vec<u32>>,
    suggestions: HashMap<String, Vec<String>>,
    asked: RefCell<Vec<Ask>>,
}

impl Vocabulary for Fetched<'_> {
    fn nodes_named(&self, name: &str) -> Vec<u32> {
        match self.nodes.get(name) {
            Some(v) => v.clone(),
            None => {
                self.asked.borrow_mut().push(Ask::Nodes(name.to_owned()));
                Vec::new()
            }
        }
    }

    fn relation_id(&self, name: &str) -> Option<u16> {
        self.vocab.relations.get(name).map(|r| r as u16)
    }

    fn concept_suggestions(&self, name: &str, limit: usize) -> Vec<String> {
        match self.suggestions.get(name) {
            Some(v) => v.clone(),
            // Suggestions scan every name of every part: ask for them only once the name is
            // known to be missing, not in the round that first looks it up.
            None if !self.nodes.get(name).is_some_and(Vec::is_empty) => Vec::new(),
            None => {
                self.asked
                    .borrow_mut()
                    .push(Ask::Suggest(name.to_owned(), limit));
                Vec::new()
            }
        }
    }

    fn relation_suggestions(&self, name: &str, limit: usize) -> Vec<String> {
        let names = self.vocab.relations.iter().map(|(id, n)| {
            let popularity = self.vocab.relation_edges.get(id as usize).copied();
            (n, popularity.unwrap_or(0))
        });
        nearest_names(name, names, limit)
    }
}

/// One lookup round: the first worker of each part answers from its part; all workers get every
/// answer. Node lists are merged (ascending, distinct); suggestions are ranked again over the
/// union of each part's nearest, with popularity summed per name.
fn lookup(
    worker: &mut Worker,
    part: &Partition,
    topo: Topology,
    names: &mut Fetched,
    mut asked: Vec<Ask>,
    failed: &dyn Fn() -> Option<String>,
) -> Result<(), DistError> {
    asked.sort_by_key(|a| format!("{a:?}"));
    asked.dedup();
    // (question index, node ids, suggestions with popularity)
    type Answer = (u32, Vec<u32>, Vec<(String, u64)>);
    let answers: Vec<Answer> = if worker.index().is_multiple_of(topo.per_part) {
        asked
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Ask::Nodes(n) => (i as u32, part.nodes_named(n), Vec::new()),
                Ask::Suggest(n, limit) => {
                    (i as u32, Vec::new(), part.suggestion_candidates(n, *limit))
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let all = all_gather(worker, answers, failed)?;
    let mut nodes: Vec<Vec<u32>> = vec![Vec::new(); asked.len()];
    let mut candidates: Vec<HashMap<String, u64>> = vec![HashMap::new(); asked.len()];
    for (i, ids, sugg) in all {
        let i = i as usize;
        if i >= asked.len() {
            continue;
        }
        nodes[i].extend(ids);
        for (n, pop) in sugg {
            *candidates[i].entry(n).or_insert(0) += pop;
        }
    }
    for (i, a) in asked.into_iter().enumerate() {
        match a {
            Ask::Nodes(n) => {
                let mut ids = std::mem::take(&mut nodes[i]);
                ids.sort_unstable();
                ids.dedup();
                names.nodes.insert(n, ids);
            }
            Ask::Suggest(n, limit) => {
                let mut pool: Vec<(&String, &u64)> = candidates[i].iter().collect();
                pool.sort();
                let ranked =
                    nearest_names(&n, pool.into_iter().map(|(s, &p)| (s.as_str(), p)), limit);
                names.suggestions.insert(n, ranked);
            }
        }
    }
    Ok(())
}

/// Every worker's `items` on every worker, sorted (so all see the same sequence).
pub fn all_gather<D>(
    worker: &mut Worker,
    items: Vec<D>,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Vec<D>, DistError>
where
    D: timely::ExchangeData + Clone + Ord,
{
    let mut input: InputHandleVec<u64, D> = InputHandleVec::new();
    let probe = ProbeHandle::new();
    let got = Rc::new(RefCell::new(Vec::new()));
    let sink = Rc::clone(&got);
    worker.dataflow::<u64, _, _>(|scope| {
        scope
            .input_from(&mut input)
            .broadcast()
            .inspect(move |x: &D| sink.borrow_mut().push(x.clone()))
            .probe_with(&probe);
    });
    for x in items {
        input.send(x);
    }
    drop(input);
    while !probe.done() {
        dataflow::step(worker, failed)?;
    }
    let mut out = std::mem::take(&mut *got.borrow_mut());
    out.sort();
    Ok(out)
}

/// Column names as `gpsense query` prints them (without `?`).
pub fn column_names(q: &QueryGraph) -> Vec<String> {
    q.projection
        .iter()
        .map(|p| match *p {
            Projected::Node(u) => q.nodes[u].name.trim_start_matches('?').to_owned(),
            Projected::Edge(k) => q.edge_variables[k].trim_start_matches('?').to_owned(),
        })
        .collect()
}

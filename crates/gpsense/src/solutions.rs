//! What SPARQL adds around the graph pattern, applied to the engine's rows: FILTERs (tested on full
//! rows), OFFSET, ORDER BY, `COUNT(*)` and `ASK`. A query without any of them streams straight from
//! the engine, as before; one with them streams as far as it can (filters, DISTINCT, OFFSET and
//! LIMIT row by row) and holds rows only for ORDER BY, within the memory budget.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use gpsense_graph::KnowledgeGraph;
use gpsense_graph::rdf::TermKind;
use gpsense_planner::{Form, OrderKey, Prepared, Projected, QueryGraph};
use gpsense_runtime::{
    BatchQuery, BatchReport, MatchError, MatchOptions, MatchReport, Outgrown, RowBatch, Semantics,
};
use hashbrown::HashSet;

use crate::matcher::{Matcher, Reported};
use gpsense_graph::rdf::Term;

/// Bytes a held row costs beyond its values (vector and hash-set overhead), for the budget.
const ROW_OVERHEAD: u64 = 48;

/// Whether `p` needs more than the engine's own projection, DISTINCT and LIMIT.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let text = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> SELECT ?x WHERE { ?x r:IsA c:animal } ORDER BY ?x";
/// let p = m.prepare(text, gpsense::Dialect::Sparql)?;
/// assert!(gpsense::solutions::needs_stage(&p));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn needs_stage(p: &Prepared) -> bool {
    !p.filters.is_empty() || p.offset > 0 || !p.order.is_empty()
}

/// The rows of a SELECT, projected, in batches to `on_rows` (which returns whether to go on).
/// `report.rows` is the number of rows handed on.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let text = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> SELECT ?x WHERE { ?x r:IsA c:animal } ORDER BY ?x LIMIT 3";
/// let p = m.prepare(text, gpsense::Dialect::Sparql)?;
/// let opts = gpsense::solutions::options_for(&p, &gpsense::MatchOptions::default(), None);
/// let mut rows = 0;
/// gpsense::solutions::select(&m, &p, &opts, &mut |batch| {
///     rows += batch.rows;
///     true
/// })?;
/// assert_eq!(rows, 3);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn select(
    m: &Matcher,
    p: &Prepared,
    opts: &MatchOptions,
    on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
) -> Result<Reported, MatchError> {
    if !needs_stage(p) {
        return m.run(&p.graph, opts, on_rows);
    }
    let limit = min_limit(p.graph.limit, opts.limit);
    let (full, inner_opts) = inner_query(p, opts, limit);
    // Half the budget, as the engine's own DISTINCT takes: the join has the rest.
    let mut stage = Stage::new(p, &full, opts.memory_budget / 2, limit);
    let mut reported = {
        let mut take = |batch: RowBatch| stage.take(batch, on_rows);
        m.run(&full, &inner_opts, &mut take)?
    };
    if !p.order.is_empty() {
        stage.emit_sorted(m.graph(), on_rows)?;
    }
    stage.error.take().map_or(Ok(()), Err)?;
    reported.report.rows = u128::from(stage.emitted);
    reported.report.limit_reached |= stage.limit_reached;
    Ok(reported)
}

/// The number of solutions (`COUNT(*)`, or `--count`): matches passing every filter, less the
/// OFFSET, within the LIMIT (the rows a SELECT would give).
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let text = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> SELECT ?x WHERE { ?x r:IsA c:animal } OFFSET 5 LIMIT 10";
/// let p = m.prepare(text, gpsense::Dialect::Sparql)?;
/// let r = gpsense::solutions::count(&m, &p, &gpsense::MatchOptions::default())?;
/// assert_eq!(r.report.rows, 10);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn count(m: &Matcher, p: &Prepared, opts: &MatchOptions) -> Result<Reported, MatchError> {
    if p.offset == 0 {
        return count_filtered(m, p, opts);
    }
    // The limits apply after the offset: count `offset` more, then take them off.
    let mut shifted = p.clone();
    shifted.offset = 0;
    shifted.graph.limit = p.graph.limit.map(|l| l.saturating_add(p.offset));
    let opts = MatchOptions {
        limit: opts.limit.map(|l| l.saturating_add(p.offset)),
        ..opts.clone()
    };
    let mut reported = count_filtered(m, &shifted, &opts)?;
    reported.report.rows = reported.report.rows.saturating_sub(u128::from(p.offset));
    Ok(reported)
}

fn count_filtered(m: &Matcher, p: &Prepared, opts: &MatchOptions) -> Result<Reported, MatchError> {
    if p.filters.is_empty() {
        return m.count(&p.graph, opts);
    }
    let full = full_rows(&p.graph);
    let nodes = full.nodes.len();
    let mut passed = 0u64;
    let limit = opts.limit;
    let inner = MatchOptions {
        limit: None,
        ..opts.clone()
    };
    let mut reported = m.run(&full, &inner, &mut |batch: RowBatch| {
        passed += batch
            .iter()
            .filter(|row| p.filters.iter().all(|f| f.passes(row, nodes)))
            .count() as u64;
        limit.is_none_or(|l| passed <= l)
    })?;
    reported.report.limit_reached |= limit.is_some_and(|l| passed > l);
    reported.report.rows = u128::from(limit.map_or(passed, |l| passed.min(l)));
    Ok(reported)
}

/// What [`count_batch`] (or [`match_batch`]) did: each query's answer as [`count`] (or [`select`])
/// gives it, or its own error, in the order given, and how the engine batched them
/// (`batch.reports` is left empty: the answers are `answers`).
pub struct BatchCounts {
    /// Each query's count (`report.rows`; for a query with rows, the rows handed out) and report,
    /// or its own error.
    pub answers: Vec<Result<Reported, MatchError>>,
    /// The device's counters over the batches, how many queries were batched, and under `auto`
    /// the device failure after which a batch was answered on the CPU.
    pub batch: BatchReport,
}

/// The number of solutions of each query, as [`count`] counts them, with its own options: on the
/// `gpu` or `emulated` engine (or where `auto` picks the device) the queries the engine counts
/// whole (no FILTER; OFFSET and LIMIT are applied as [`count`] does) are answered in batches, each
/// one sequence of device launches ([`gpsense_runtime::Engine::count_batch`]); the others, and
/// every query on a compressed graph, one by one. A query's error (memory budget, a refused
/// shape) is its own entry; its time limit and LIMIT hold for it alone. For ASK, pass options
/// with `limit: Some(1)`: it has a solution when the count is not 0.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// use gpsense::{Dialect, EngineKind, MatchOptions};
/// let a = m.prepare("SELECT ?x WHERE { ?x IsA animal }", Dialect::Short)?;
/// let b = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", Dialect::Short)?;
/// let opts = MatchOptions { engine: EngineKind::Emulated, ..Default::default() };
/// let counted = gpsense::solutions::count_batch(&m, &[(&a, &opts), (&b, &opts)]);
/// assert_eq!(counted.batch.batched, 2);
/// let alone = gpsense::solutions::count(&m, &b, &opts)?.report.rows;
/// assert_eq!(counted.answers[1].as_ref().unwrap().report.rows, alone);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn count_batch(m: &Matcher, queries: &[(&Prepared, &MatchOptions)]) -> BatchCounts {
    let asked = queries
        .iter()
        .map(|&(p, opts)| Asked {
            p,
            opts,
            rows: None,
        })
        .collect();
    match_batch(m, asked)
}

/// One query of [`match_batch`]: counted as [`count`] counts it, or, given `rows`, its rows handed
/// there as [`select`] hands them (`rows` returns false to stop).
pub struct Asked<'q, 'o> {
    /// The query.
    pub p: &'q Prepared,
    /// Its own options (engine, semantics, limits).
    pub opts: &'q MatchOptions,
    /// Where its rows go; `None`: it is counted.
    pub rows: Option<&'o mut (dyn FnMut(RowBatch) -> bool + Send)>,
}

/// Row values (cells) the SELECT queries of one batch hold at most until their rows are handed
/// out ([`Held`]): 64 MiB of ids.
pub const HELD_VALUES: usize = 1 << 24;

/// A SELECT's rows as they arrive from a batch ([`match_batch`]), held until the caller's turn to
/// hand them out, within a bound the batch's queries share: a query whose rows would pass it lets
/// go of them and stops (`spilled`), to be answered again alone, streaming.
#[derive(Default)]
pub struct Held {
    /// The rows' values, row after row.
    pub values: Vec<u32>,
    /// Its rows passed the bound: it is to be answered again alone.
    pub spilled: bool,
}

impl Held {
    /// Holds `b` unless the values the batch's queries hold (`held`) would pass `bound`; then
    /// lets go of its rows, gives their share back and returns false (the sink's stop).
    pub fn take(&mut self, b: RowBatch, held: &AtomicUsize, bound: usize) -> bool {
        let n = b.rows * b.width;
        if held.fetch_add(n, AtomicOrdering::Relaxed) + n > bound {
            held.fetch_sub(n + self.values.len(), AtomicOrdering::Relaxed);
            self.values = Vec::new();
            self.spilled = true;
            return false;
        }
        self.values.extend_from_slice(&b.data[..n]);
        true
    }
}

/// A query sent to the engine's batch: its place, the query, its options, the OFFSET to take off
/// its count, and its row sink.
type Sent<'q, 'o> = (
    usize,
    Cow<'q, QueryGraph>,
    Cow<'q, MatchOptions>,
    u64,
    Option<&'o mut (dyn FnMut(RowBatch) -> bool + Send)>,
);

/// [`count_batch`] for queries that may want rows: a SELECT the engine answers whole (no FILTER,
/// OFFSET or ORDER BY, not on a compressed graph) has its rows found in the same batches
/// ([`gpsense_runtime::Engine::match_batch`]) and handed to its `rows` after its batch, within its
/// own LIMIT and time limit; the others are answered one by one ([`select`]).
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// use gpsense::{Dialect, EngineKind, MatchOptions};
/// use gpsense::solutions::Asked;
/// let a = m.prepare("SELECT ?x WHERE { ?x IsA animal }", Dialect::Short)?;
/// let b = m.prepare("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", Dialect::Short)?;
/// let opts = MatchOptions { engine: EngineKind::Emulated, ..Default::default() };
/// let mut rows = 0;
/// let mut sink = |batch: gpsense::RowBatch| {
///     rows += batch.rows;
///     true
/// };
/// let asked = vec![
///     Asked { p: &a, opts: &opts, rows: None },
///     Asked { p: &b, opts: &opts, rows: Some(&mut sink) },
/// ];
/// let answered = gpsense::solutions::match_batch(&m, asked);
/// assert_eq!((answered.batch.batched, answered.batch.batches), (2, 1));
/// let listed = answered.answers[1].as_ref().unwrap().report.rows;
/// assert_eq!(listed, gpsense::solutions::count(&m, &b, &opts)?.report.rows);
/// assert_eq!(rows as u128, listed);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn match_batch(m: &Matcher, queries: Vec<Asked>) -> BatchCounts {
    match_batch_each(m, queries, Outgrown::GoOn, &|_, _| {})
}

/// What [`match_batch_each`] hands each query's final answer to, with its index.
pub type Answered<'h> = dyn Fn(usize, &Result<Reported, MatchError>) + Sync + 'h;

/// [`match_batch`], each query's answer also handed to `answered` (with its index among
/// `queries`) as soon as it is final: one answered alone at once, a batched one as its batch
/// finds it ([`gpsense_runtime::Engine::match_batch_each`]: the queries that fit their batch
/// room before those that go on alone after it). A SELECT's rows are all in its sink by then.
/// Each index is handed over once. Under [`Outgrown::Leave`], a batched query whose level outgrew
/// its batch room is answered [`MatchError::OutgrewBatch`], and one refused for device memory
/// that other users held [`MatchError::BatchShortOfMemory`], for the caller to answer it alone
/// ([`MatchError::left_by_batch`]).
pub fn match_batch_each(
    m: &Matcher,
    queries: Vec<Asked>,
    outgrown: Outgrown,
    answered: &Answered,
) -> BatchCounts {
    let mut answers: Vec<Option<Result<Reported, MatchError>>> =
        queries.iter().map(|_| None).collect();
    let compressed = matches!(m, Matcher::Compressed(_));
    let mut sent: Vec<Sent> = Vec::new();
    let mut answer = |i: usize, a: Result<Reported, MatchError>| {
        answered(i, &a);
        answers[i] = Some(a);
    };
    for (i, Asked { p, opts, rows }) in queries.into_iter().enumerate() {
        if let Some(sink) = rows {
            if needs_stage(p) || compressed {
                answer(i, select(m, p, opts, sink));
            } else {
                sent.push((
                    i,
                    Cow::Borrowed(&p.graph),
                    Cow::Borrowed(opts),
                    0,
                    Some(sink),
                ));
            }
        } else if !p.filters.is_empty() || compressed {
            answer(i, count(m, p, opts));
        } else if p.offset == 0 {
            sent.push((i, Cow::Borrowed(&p.graph), Cow::Borrowed(opts), 0, None));
        } else {
            // As in `count`: the limits apply after the offset.
            let mut q = p.graph.clone();
            q.limit = p.graph.limit.map(|l| l.saturating_add(p.offset));
            let o = MatchOptions {
                limit: opts.limit.map(|l| l.saturating_add(p.offset)),
                ..opts.clone()
            };
            sent.push((i, Cow::Owned(q), Cow::Owned(o), p.offset, None));
        }
    }
    // Each batched query's place among `queries` and the OFFSET to take off its count.
    let places: Vec<(usize, u64)> = sent.iter().map(|s| (s.0, s.3)).collect();
    let list: Vec<BatchQuery> = sent
        .iter_mut()
        .map(|(_, q, o, _, rows)| BatchQuery {
            q,
            opts: o,
            rows: rows.take(),
        })
        .collect();
    let mut batch = m.engine().match_batch_each(list, outgrown, &|k, r| {
        let (i, offset) = places[k];
        answered(i, &reported(r.clone(), offset));
    });
    for (&(i, offset), r) in places.iter().zip(std::mem::take(&mut batch.reports)) {
        answers[i] = Some(reported(r, offset));
    }
    let answers = answers
        .into_iter()
        .map(|a| a.unwrap_or(Err(MatchError::Plan("query not answered".into()))))
        .collect();
    BatchCounts { answers, batch }
}

/// A batched query's answer with its OFFSET taken off its count.
fn reported(r: Result<MatchReport, MatchError>, offset: u64) -> Result<Reported, MatchError> {
    r.map(|mut report| {
        report.rows = report.rows.saturating_sub(u128::from(offset));
        Reported {
            report,
            expansion: None,
        }
    })
}

/// Whether there is a solution (`ASK`).
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let p = m.prepare("SELECT * WHERE { dog IsA pet }", gpsense::Dialect::Short)?;
/// let (yes, _) = gpsense::solutions::ask(&m, &p, &gpsense::MatchOptions::default())?;
/// assert!(!yes);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn ask(m: &Matcher, p: &Prepared, opts: &MatchOptions) -> Result<(bool, Reported), MatchError> {
    let opts = MatchOptions {
        limit: Some(1),
        ..opts.clone()
    };
    let reported = count(m, p, &opts)?;
    Ok((reported.report.rows > 0, reported))
}

/// The header of the one-row COUNT result, or `None` for other forms.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let text = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal }";
/// let p = m.prepare(text, gpsense::Dialect::Sparql)?;
/// assert_eq!(gpsense::solutions::count_column(&p), Some("n"));
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn count_column(p: &Prepared) -> Option<&str> {
    match &p.form {
        Form::Count { variable, .. } => Some(variable),
        _ => None,
    }
}

/// The match options for `p`: `given` semantics (`--semantics`, a builder's choice) when set, else
/// the query's own (a standard SPARQL query's: hom unless its FILTERs make nodes differ).
///
/// ```
/// use gpsense::{Dialect, Loaded, Matcher, MatchOptions, Semantics};
/// let loaded = Loaded::embedded()?;
/// let m = Matcher::new(&loaded)?;
/// let text = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/>
///             SELECT ?x WHERE { ?x r:IsA c:animal }"; // standard SPARQL: hom
/// let p = m.prepare(text, Dialect::Sparql)?;
/// let own = gpsense::solutions::options_for(&p, &MatchOptions::default(), None);
/// assert_eq!(own.semantics, Semantics::Hom);
/// let iso = gpsense::solutions::options_for(&p, &MatchOptions::default(), Some(Semantics::Iso));
/// assert_eq!(iso.semantics, Semantics::Iso);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn options_for(p: &Prepared, options: &MatchOptions, given: Option<Semantics>) -> MatchOptions {
    let mut opts = options.clone();
    opts.semantics = match (given, p.injective) {
        (Some(s), _) => s,
        (None, Some(true)) => Semantics::Iso,
        (None, Some(false)) => Semantics::Hom,
        (None, None) => options.semantics,
    };
    opts
}

/// Column headers: the projected variables, without `?`.
///
/// ```
/// # let loaded = gpsense::Loaded::embedded()?;
/// # let m = gpsense::Matcher::new(&loaded)?;
/// let p = m.prepare("SELECT ?x ?r WHERE { ?x ?r animal }", gpsense::Dialect::Short)?;
/// assert_eq!(gpsense::solutions::column_names(&p.graph), ["x", "r"]);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub fn column_names(q: &QueryGraph) -> Vec<String> {
    q.projection
        .iter()
        .map(|p| match *p {
            Projected::Node(u) => q.nodes[u].name.trim_start_matches('?').to_owned(),
            Projected::Edge(k) => q.edge_variables[k].trim_start_matches('?').to_owned(),
        })
        .collect()
}

fn min_limit(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The query the engine runs for a staged SELECT: full rows when filters need them (then DISTINCT
/// and LIMIT are the stage's), else the query itself with the limit moved past the offset.
fn inner_query(
    p: &Prepared,
    opts: &MatchOptions,
    limit: Option<u64>,
) -> (QueryGraph, MatchOptions) {
    let unlimited = MatchOptions {
        limit: None,
        ..opts.clone()
    };
    if !p.filters.is_empty() {
        return (full_rows(&p.graph), unlimited);
    }
    let mut q = p.graph.clone();
    q.limit = match (&p.order[..], limit) {
        ([], Some(l)) => Some(l.saturating_add(p.offset)),
        _ => None,
    };
    (q, unlimited)
}

/// `q` projecting every query node, then every edge variable, without DISTINCT or LIMIT.
fn full_rows(q: &QueryGraph) -> QueryGraph {
    let mut full = q.clone();
    full.projection = (0..q.nodes.len()).map(Projected::Node).collect();
    full.projection
        .extend((0..q.edge_variables.len()).map(Projected::Edge));
    full.distinct = false;
    full.limit = None;
    full
}

/// The rows between the engine and the caller.
struct Stage<'p> {
    p: &'p Prepared,
    /// Where each projected column sits in the engine's rows.
    columns: Vec<usize>,
    nodes: usize,
    /// Whether the stage applies DISTINCT (the engine does, when it projects).
    distinct: bool,
    seen: HashSet<Box<[u32]>>,
    skipped: u64,
    emitted: u64,
    limit: Option<u64>,
    limit_reached: bool,
    /// Rows held for ORDER BY.
    held: Vec<Box<[u32]>>,
    held_bytes: u64,
    budget: u64,
    batch: Vec<u32>,
    error: Option<MatchError>,
}

impl<'p> Stage<'p> {
    fn new(p: &'p Prepared, inner: &QueryGraph, budget: u64, limit: Option<u64>) -> Self {
        let filtering = !p.filters.is_empty();
        let columns = if filtering {
            let n = p.graph.nodes.len();
            p.graph
                .projection
                .iter()
                .map(|c| match *c {
                    Projected::Node(u) => u,
                    Projected::Edge(k) => n + k,
                })
                .collect()
        } else {
            (0..inner.projection.len()).collect()
        };
        Stage {
            p,
            columns,
            nodes: p.graph.nodes.len(),
            distinct: filtering && p.graph.distinct,
            seen: HashSet::new(),
            skipped: 0,
            emitted: 0,
            limit,
            limit_reached: false,
            held: Vec::new(),
            held_bytes: 0,
            budget,
            batch: Vec::new(),
            error: None,
        }
    }

    /// One batch from the engine; returns whether the engine should go on.
    fn take(
        &mut self,
        batch: RowBatch,
        on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
    ) -> bool {
        let mut out = std::mem::take(&mut self.batch);
        out.clear();
        let mut rows = 0;
        let mut go_on = true;
        for row in batch.iter() {
            if !self.p.filters.iter().all(|f| f.passes(row, self.nodes)) {
                continue;
            }
            let projected: Box<[u32]> = self.columns.iter().map(|&c| row[c]).collect();
            if self.distinct && !self.remember(&projected) {
                if self.error.is_some() {
                    go_on = false;
                    break;
                }
                continue;
            }
            if !self.p.order.is_empty() {
                go_on = self.hold(projected);
                if !go_on {
                    break;
                }
                continue;
            }
            if self.skipped < self.p.offset {
                self.skipped += 1;
                continue;
            }
            if self.limit.is_some_and(|l| self.emitted >= l) {
                self.limit_reached = true;
                go_on = false;
                break;
            }
            out.extend_from_slice(&projected);
            self.emitted += 1;
            rows += 1;
        }
        if rows > 0 {
            let width = self.columns.len();
            go_on &= on_rows(RowBatch {
                data: &out,
                width,
                rows,
            });
        }
        self.batch = out;
        go_on
    }

    /// Records a projected row under DISTINCT; false when it was seen (or the set is over budget).
    fn remember(&mut self, row: &[u32]) -> bool {
        if self.seen.contains(row) {
            return false;
        }
        if self.over_budget(
            row.len(),
            MatchError::DistinctTooLarge { bytes: self.budget },
        ) {
            return false;
        }
        self.held_bytes += row.len() as u64 * 4 + ROW_OVERHEAD;
        self.seen.insert(row.into());
        true
    }

    fn hold(&mut self, row: Box<[u32]>) -> bool {
        if self.over_budget(row.len(), MatchError::OrderTooLarge { bytes: self.budget }) {
            return false;
        }
        self.held_bytes += row.len() as u64 * 4 + ROW_OVERHEAD;
        self.held.push(row);
        true
    }

    /// Whether one more row of `width` would pass the budget (then `error` is recorded).
    fn over_budget(&mut self, width: usize, error: MatchError) -> bool {
        if self.held_bytes + width as u64 * 4 + ROW_OVERHEAD <= self.budget {
            return false;
        }
        self.error.get_or_insert(error);
        true
    }

    /// ORDER BY: sorts the held rows by their keys' names, then hands on OFFSET..OFFSET+LIMIT.
    fn emit_sorted(
        &mut self,
        g: &KnowledgeGraph,
        on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
    ) -> Result<(), MatchError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        let kinds: Vec<bool> = self
            .p
            .graph
            .projection
            .iter()
            .map(|c| matches!(c, Projected::Edge(_)))
            .collect();
        let order = &self.p.order;
        // Each row's keys once (a term's kind needs a parse), then one sort of the row indexes.
        let keys: Vec<Vec<SortKey>> = self
            .held
            .iter()
            .map(|row| {
                order
                    .iter()
                    .map(|k| {
                        let id = row[k.column];
                        SortKey::of(if kinds[k.column] {
                            g.relation_name(id as u16)
                        } else {
                            g.node_name(id)
                        })
                    })
                    .collect()
            })
            .collect();
        let mut by: Vec<usize> = (0..self.held.len()).collect();
        by.sort_by(|&a, &b| compare_keys(order, &keys[a], &keys[b]));
        let mut held = std::mem::take(&mut self.held);
        self.held = by
            .into_iter()
            .map(|i| std::mem::take(&mut held[i]))
            .collect();
        let start = (self.p.offset as usize).min(self.held.len());
        let end = self.limit.map_or(self.held.len(), |l| {
            start.saturating_add(l as usize).min(self.held.len())
        });
        self.limit_reached = end < self.held.len();
        let width = self.columns.len();
        for chunk in self.held[start..end].chunks(1024) {
            let data: Vec<u32> = chunk.iter().flat_map(|r| r.iter().copied()).collect();
            self.emitted += chunk.len() as u64;
            if !on_rows(RowBatch {
                data: &data,
                width,
                rows: chunk.len(),
            }) {
                break;
            }
        }
        Ok(())
    }
}

fn compare_keys(order: &[OrderKey], a: &[SortKey], b: &[SortKey]) -> Ordering {
    for ((key, x), y) in order.iter().zip(a).zip(b) {
        let ord = x.cmp(y);
        let ord = if key.descending { ord.reverse() } else { ord };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    Ordering::Equal
}

/// A value's place in SPARQL's order: blank nodes, then IRIs, then numeric literals by value, then
/// other literals (a name that is no RDF term counts as a plain literal), each by its text within
/// its group: a total order, as a sort needs (numbers among strings compared now by value, now by
/// text, would not be one).
struct SortKey<'g> {
    rank: u8,
    number: Option<f64>,
    text: &'g str,
}

impl<'g> SortKey<'g> {
    fn of(name: &'g str) -> Self {
        let kind = gpsense_graph::rdf::term_kind(name);
        let number = (kind == TermKind::Literal)
            .then(|| numeric_value(name))
            .flatten();
        let rank = match kind {
            TermKind::BlankNode => 0,
            TermKind::Iri => 1,
            _ if number.is_some() => 2,
            TermKind::Literal | TermKind::Plain => 3,
        };
        SortKey {
            rank,
            number,
            text: name,
        }
    }

    fn cmp(&self, other: &SortKey) -> Ordering {
        let by_value = match (self.number, other.number) {
            (Some(a), Some(b)) => a.total_cmp(&b),
            _ => Ordering::Equal,
        };
        self.rank
            .cmp(&other.rank)
            .then(by_value)
            .then_with(|| self.text.cmp(other.text))
    }
}

/// The value of a literal (N-Triples form) with an XSD numeric datatype.
fn numeric_value(literal: &str) -> Option<f64> {
    const XSD: &str = "http://www.w3.org/2001/XMLSchema#";
    let Some(Term::Literal {
        value,
        datatype: Some(datatype),
        ..
    }) = gpsense_graph::rdf::literal(literal)
    else {
        return None;
    };
    let numeric = matches!(
        datatype.strip_prefix(XSD)?,
        "integer"
            | "decimal"
            | "double"
            | "float"
            | "int"
            | "long"
            | "short"
            | "byte"
            | "nonNegativeInteger"
            | "positiveInteger"
            | "negativeInteger"
            | "nonPositiveInteger"
            | "unsignedInt"
            | "unsignedLong"
            | "unsignedShort"
            | "unsignedByte"
    );
    numeric.then(|| value.trim().parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows past the read-ahead's bound are let go, and the query is marked to run again alone;
    /// the values it held are given back to the others.
    #[test]
    fn held_rows_stop_at_the_bound_and_spill() {
        let held = AtomicUsize::new(0);
        let data = [1u32, 2, 3, 4, 5, 6];
        let batch = |rows| RowBatch {
            data: &data,
            width: 2,
            rows,
        };
        let (mut a, mut b) = (Held::default(), Held::default());
        assert!(a.take(batch(2), &held, 8));
        assert!(b.take(batch(1), &held, 8));
        assert_eq!(
            (a.values.as_slice(), b.values.as_slice()),
            (&data[..4], &data[..2])
        );
        assert!(!a.take(batch(2), &held, 8));
        assert!(a.spilled && a.values.is_empty() && !b.spilled);
        assert_eq!(held.load(AtomicOrdering::Relaxed), 2);
        assert!(b.take(batch(3), &held, 8));
    }

    #[test]
    fn terms_order_as_sparql_says() {
        let int = |n: &str| format!("\"{n}\"^^<http://www.w3.org/2001/XMLSchema#integer>");
        let (ten, four) = (int("10"), int("4"));
        let mut names = vec![
            "\"b\"",
            "http://x/b",
            "_:a",
            "dog",
            "http://x/a",
            "\"a\"@en",
            &ten,
            &four,
        ];
        names.sort_by(|a, b| SortKey::of(a).cmp(&SortKey::of(b)));
        assert_eq!(
            names,
            [
                "_:a",
                "http://x/a",
                "http://x/b",
                four.as_str(),
                ten.as_str(),
                "\"a\"@en",
                "\"b\"",
                "dog"
            ]
        );
        assert_eq!(numeric_value(&ten), Some(10.0));
        assert_eq!(numeric_value("\"10\""), None);
    }
}

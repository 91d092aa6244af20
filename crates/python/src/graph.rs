//! `gpsense.Graph`: a knowledge graph opened from any source, and every call made on it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

use gpsense::solutions::{Asked, Held, HELD_VALUES};
use gpsense::{solutions, Error, Loaded, MatchOptions, Prepared, Reading, Reported, RowBatch};
use gpsense_graph::ingest::{Columns, Format, IngestOptions, NoProgress, OnError};
use gpsense_graph::KnowledgeGraph;
use pyo3::exceptions::{PyUserWarning, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::algebra::{self, Keep};
use crate::errors::{self, from_gpsense};
use crate::interrupt;
use crate::options::{self, Call};
use crate::result::{Batched, QueryResult, FIRST_TRY_TIME};
use crate::shared::Shared;

/// A knowledge graph: concepts joined by relations (a directed, edge-labelled graph), ready to
/// answer queries. Open one with `Graph.load(path)`, `Graph.ingest(paths)` or `Graph.default()`.
#[pyclass(module = "gpsense", frozen)]
pub struct Graph {
    pub(crate) shared: Arc<Shared>,
}

#[pymethods]
impl Graph {
    /// Opens a snapshot (`gpsense ingest -o`), a compressed graph (`.gpsc`), or any file `ingest`
    /// reads (ConceptNet CSV, triples TSV, N-Triples, Turtle, KGTK, ...), ingested with the default
    /// options.
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<Graph> {
        open(py, move || Loaded::open(Some(&path), &NoProgress))
    }

    /// The embedded default graph: ConceptNet-100K (CC BY-SA 4.0, Li et al. 2016).
    #[staticmethod]
    fn default(py: Python<'_>) -> PyResult<Graph> {
        open(py, Loaded::embedded)
    }

    /// Ingests text files into a graph, with the options of `gpsense ingest`: `format` (detected
    /// when None), `columns` ("hrt" or "rht" for triples TSV), `languages` and `strip_pos`
    /// (ConceptNet), `on_error` ("fail", or "skip" to drop malformed lines with a warning), and
    /// `max_line_bytes` (longer lines are malformed; default 1 MiB).
    #[staticmethod]
    #[pyo3(signature = (paths, *, format=None, columns=None, languages=None, strip_pos=false, on_error="fail", max_line_bytes=None))]
    #[allow(clippy::too_many_arguments)]
    fn ingest(
        py: Python<'_>,
        paths: &Bound<'_, PyAny>,
        format: Option<&str>,
        columns: Option<&str>,
        languages: Option<Vec<String>>,
        strip_pos: bool,
        on_error: &str,
        max_line_bytes: Option<usize>,
    ) -> PyResult<Graph> {
        let paths: Vec<PathBuf> = match paths.extract::<PathBuf>() {
            Ok(p) => vec![p],
            Err(_) => paths.extract()?,
        };
        let bad = |e: String| PyValueError::new_err(e);
        let opts = IngestOptions {
            format: format.map(str::parse::<Format>).transpose().map_err(bad)?,
            columns: columns
                .map(str::parse::<Columns>)
                .transpose()
                .map_err(bad)?,
            languages: languages.unwrap_or_default(),
            strip_pos,
            on_error: on_error.parse::<OnError>().map_err(bad)?,
            max_line_bytes: max_line_bytes.unwrap_or(0),
            base_iri: None,
        };
        let (loaded, report) = py
            .detach(|| Loaded::ingest(&paths, &opts, &NoProgress))
            .map_err(|e| from_gpsense(py, e))?;
        let skipped = report.skipped_total();
        if skipped > 0 {
            let message = format!("ingest skipped {skipped} malformed line(s)");
            PyErr::warn(
                py,
                &py.get_type::<PyUserWarning>(),
                &std::ffi::CString::new(message)?,
                1,
            )?;
        }
        graph_of(py, loaded)
    }

    /// Writes the graph as a snapshot that `Graph.load` (and the CLI) open in milliseconds; a
    /// compressed graph is written as a `.gpsc`. Atomic: a temporary file, then a rename.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| self.shared.loaded().save(&path))
            .map_err(|e| from_gpsense(py, e))
    }

    /// The number of edges (triples).
    fn __len__(&self) -> usize {
        self.shared.graph().edge_count()
    }

    fn __repr__(&self) -> String {
        let g = self.shared.graph();
        format!(
            "<gpsense.Graph {}: {} nodes, {} edges, {} relations>",
            self.shared.loaded().origin,
            g.node_count(),
            g.edge_count(),
            g.relation_count()
        )
    }

    /// What the graph holds, as `gpsense info` reports it: origin, nodes, edges, relations, node
    /// labels, aliases, load time (ms), whether it is compressed, and edges per relation.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let loaded = self.shared.loaded();
        let g = &loaded.graph;
        let d = PyDict::new(py);
        d.set_item("origin", &loaded.origin)?;
        d.set_item("nodes", g.node_count())?;
        d.set_item("edges", g.edge_count())?;
        d.set_item("relations", g.relation_count())?;
        let labels = g.has_node_labels().then(|| g.stats().node_labels);
        d.set_item("node_labels", labels)?;
        d.set_item("weighted", g.has_weights())?;
        d.set_item("aliases", g.aliases().names().len())?;
        d.set_item("compressed", loaded.compressed.is_some())?;
        d.set_item("load_ms", loaded.load_time.as_secs_f64() * 1e3)?;
        let by_relation = PyDict::new(py);
        for (r, n) in relations_by_count(g) {
            by_relation.set_item(r, n)?;
        }
        d.set_item("edges_by_relation", by_relation)?;
        Ok(d)
    }

    /// The text `gpsense info` prints, with the `top_relations` most used relations.
    #[pyo3(signature = (top_relations=20))]
    fn summary(&self, top_relations: usize) -> String {
        let loaded = self.shared.loaded();
        gpsense::info::summary(&loaded.graph, &loaded.origin, top_relations)
    }

    /// The relation names, most used first.
    fn relations(&self) -> Vec<String> {
        relations_by_count(self.shared.graph())
            .into_iter()
            .map(|(r, _)| r.to_owned())
            .collect()
    }

    /// Answers a query (gpsense's short SPARQL with bare names, or standard SPARQL 1.1) and returns
    /// its rows: iterate over them as they are found, or take them all with `to_list()`,
    /// `to_pandas()` or `to_arrow()`. A text is read as the CLI reads it (`gpsense::read`): what a
    /// basic graph pattern cannot say (OPTIONAL, UNION, paths, aggregates, CONSTRUCT, ...) is
    /// answered by the full evaluator. `semantics`: "iso" (subgraph isomorphism) or "hom" (as
    /// SPARQL); None: iso, except a standard SPARQL query, whose semantics are its own. `limit`:
    /// at most this many rows. `timeout`: seconds; past it, `QueryTimeout` is raised. `engine`:
    /// "auto" (a GPU when present, else the CPU), "dfs", "kernels", "gpu" or "emulated".
    #[pyo3(signature = (text, semantics=None, limit=None, timeout=None, engine="auto"))]
    fn query(
        &self,
        py: Python<'_>,
        text: &str,
        semantics: Option<&str>,
        limit: Option<u64>,
        timeout: Option<f64>,
        engine: &str,
    ) -> PyResult<QueryResult> {
        let call = options::call(semantics, limit, timeout, engine)?;
        QueryResult::new(py, self.shared.clone(), text, call)
    }

    /// The number of matches (or of solutions, with FILTERs), counted without materialising them.
    #[pyo3(signature = (text, semantics=None, limit=None, timeout=None, engine="auto"))]
    fn count(
        &self,
        py: Python<'_>,
        text: &str,
        semantics: Option<&str>,
        limit: Option<u64>,
        timeout: Option<f64>,
        engine: &str,
    ) -> PyResult<u128> {
        let call = options::call(semantics, limit, timeout, engine)?;
        let query = match self.read(py, text)? {
            Reading::Graph(p) => {
                let reported = self.counted(py, &p, &call, false)?;
                return errors::counted(py, &reported);
            }
            Reading::Algebra(query) => query,
        };
        self.count_algebra(py, &query, &call, limit)
    }

    /// Counts each query of `texts` as `count` does, with the same options for all, and returns a
    /// list in the same order holding each query's count, or its own error as an exception object
    /// (returned, not raised: `QueryError`, `MatchError`, `QueryTimeout` with its `partial`
    /// count). On the "gpu" or "emulated" engine, or "auto" where it picks a GPU, the queries the
    /// matcher counts whole (no FILTER) are answered `batch` at a time, each batch one sequence
    /// of device launches; the others one by one. A query's `limit` and `timeout` are its own
    /// (the timeout counted from its batch's start).
    #[pyo3(signature = (texts, semantics=None, limit=None, timeout=None, engine="auto", batch=256))]
    #[allow(clippy::too_many_arguments)]
    fn count_many(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        semantics: Option<&str>,
        limit: Option<u64>,
        timeout: Option<f64>,
        engine: &str,
        batch: usize,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let call = options::call(semantics, limit, timeout, engine)?;
        let mut out = Vec::with_capacity(texts.len());
        for chunk in batches(&texts, batch)? {
            out.extend(self.count_chunk(py, chunk, &call, limit)?);
        }
        Ok(out)
    }

    /// Answers each query of `texts` as `query` does, with the same options for all, and returns
    /// a list in the same order holding each query's `QueryResult`, or its own error as an
    /// exception object (returned, not raised). The SELECT (no FILTER, OFFSET or ORDER BY) and
    /// COUNT(*) (no FILTER) queries over a basic graph pattern are answered `batch` at a time
    /// before this returns, on the "gpu" or "emulated" engine, or "auto" where it picks a GPU,
    /// each batch one sequence of device launches: their rows are held in their results, at most
    /// 2^24 values in all (a query whose rows would pass that is answered again alone,
    /// streaming, when its result is read). The others are answered when their result is read.
    /// A query's `limit` and `timeout` are its own (the timeout counted from its batch's start).
    #[pyo3(signature = (texts, semantics=None, limit=None, timeout=None, engine="auto", batch=256))]
    #[allow(clippy::too_many_arguments)]
    fn query_many(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        semantics: Option<&str>,
        limit: Option<u64>,
        timeout: Option<f64>,
        engine: &str,
        batch: usize,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let call = options::call(semantics, limit, timeout, engine)?;
        // One bound for the whole call: the results it returns hold their rows together.
        let held_values = AtomicUsize::new(0);
        let mut out = Vec::with_capacity(texts.len());
        for chunk in batches(&texts, batch)? {
            out.extend(self.query_chunk(py, chunk, &call, &held_values)?);
        }
        Ok(out)
    }

    /// Whether the query has a match (an ASK query, or any pattern).
    #[pyo3(signature = (text, semantics=None, timeout=None, engine="auto"))]
    fn ask(
        &self,
        py: Python<'_>,
        text: &str,
        semantics: Option<&str>,
        timeout: Option<f64>,
        engine: &str,
    ) -> PyResult<bool> {
        let call = options::call(semantics, Some(1), timeout, engine)?;
        let (found, timed_out) = match self.read(py, text)? {
            Reading::Graph(p) => {
                let r = self.counted(py, &p, &call, false)?.report;
                (r.rows > 0, r.timed_out)
            }
            Reading::Algebra(query) => {
                let opts = algebra::options(py, &call)?;
                let e = algebra::evaluate(py, &self.shared, &query, &opts, Keep::Count(Some(1)))?;
                (e.boolean.unwrap_or(e.count > 0), e.timed_out)
            }
        };
        if !found && timed_out {
            let message = "the time limit stopped the search before a match was found".to_owned();
            return Err(errors::timeout(py, message, py.None()));
        }
        Ok(found)
    }

    /// Runs the query (counting its matches) and returns what `gpsense query --explain` prints, as
    /// a dict: the semantics, engine and device, the plan, candidates per query node after
    /// filtering and refinement, edge candidates, time per phase (ms), the count, and `text`, the
    /// CLI's report.
    #[pyo3(signature = (text, semantics=None, limit=None, timeout=None, engine="auto"))]
    fn explain<'py>(
        &self,
        py: Python<'py>,
        text: &str,
        semantics: Option<&str>,
        limit: Option<u64>,
        timeout: Option<f64>,
        engine: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let call = options::call(semantics, limit, timeout, engine)?;
        match self.read(py, text)? {
            Reading::Graph(p) => {
                let reported = self.counted(py, &p, &call, true)?;
                crate::result::explained(py, self.shared.graph(), &p, &reported)
            }
            Reading::Algebra(query) => {
                let opts = algebra::options(py, &call)?;
                let e = algebra::evaluate(py, &self.shared, &query, &opts, Keep::Count(limit))?;
                algebra::explained(py, &opts, &e)
            }
        }
    }

    /// TruST's approximate matching: the `top` best near matches of the query, whose concepts may
    /// be misspelt or absent, ranked by name similarity and topology (`beam` branches kept per
    /// level). Each `TrustMatch` holds its score, the data node of each query node, and how each
    /// node and edge agreed. `engine`: "auto" (the GPU when one is found, else the CPU), "cpu",
    /// "gpu" (MatchError without one) or "emulated" (the GPU's kernels run on the CPU); every
    /// engine gives the same ranked answer.
    #[pyo3(signature = (text, top=10, beam=128, *, alpha=0.5, relation_weight=0.5, threshold=0.5, timeout=None, engine="auto"))]
    #[allow(clippy::too_many_arguments)]
    fn trust(
        &self,
        py: Python<'_>,
        text: &str,
        top: usize,
        beam: usize,
        alpha: f32,
        relation_weight: f32,
        threshold: f32,
        timeout: Option<f64>,
        engine: &str,
    ) -> PyResult<Vec<crate::trust::TrustMatch>> {
        let params = gpsense_trust::Params {
            alpha,
            relation_weight,
            threshold,
            beam,
            top,
            timeout: timeout.map(options::seconds).transpose()?,
            // The first search's limit counts the name index and the device's opening too.
            started: Some(std::time::Instant::now()),
            memory_budget: Some(gpsense_runtime::default_memory_budget()),
            cancel: Some(gpsense_trust::Cancel(interrupt::flag())),
        };
        crate::trust::search(py, &self.shared, text, params, engine)
    }

    /// The graph, or the subgraph among `nodes` (names), as a `networkx.MultiDiGraph`: one edge per
    /// triple, with its `relation` and `weight`. Refused beyond `max_edges` edges, which networkx
    /// would hold at about a kilobyte each.
    #[pyo3(signature = (nodes=None, max_edges=100_000))]
    fn to_networkx(
        &self,
        py: Python<'_>,
        nodes: Option<Vec<String>>,
        max_edges: usize,
    ) -> PyResult<Py<PyAny>> {
        crate::result::networkx(py, self.shared.graph(), nodes, max_edges)
    }
}

impl Graph {
    /// A query for the full evaluator, counted (`count`'s second path).
    fn count_algebra(
        &self,
        py: Python<'_>,
        query: &spargebra::Query,
        call: &Call,
        limit: Option<u64>,
    ) -> PyResult<u128> {
        let opts = algebra::options(py, call)?;
        let e = algebra::evaluate(py, &self.shared, query, &opts, Keep::Count(limit))?;
        if e.timed_out {
            let message = format!("the time limit stopped the count at {} solutions", e.count);
            let partial = e.count.into_pyobject(py)?.into_any().unbind();
            return Err(errors::timeout(py, message, partial));
        }
        Ok(u128::from(e.count))
    }

    /// One batch of `count_many`: the graph path's queries through `solutions::count_batch` on
    /// the calling thread with the GIL released, the others one by one; errors as values.
    fn count_chunk(
        &self,
        py: Python<'_>,
        texts: &[String],
        call: &Call,
        limit: Option<u64>,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let value = |r: PyResult<u128>| -> PyResult<Py<PyAny>> {
            match r {
                Ok(n) => Ok(n.into_pyobject(py)?.into_any().unbind()),
                Err(e) => Ok(e.into_value(py).into_any()),
            }
        };
        let mut out: Vec<Option<Py<PyAny>>> = texts.iter().map(|_| None).collect();
        let mut graph_path = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            match self.read(py, text) {
                Ok(Reading::Graph(p)) => graph_path.push((i, *p)),
                Ok(Reading::Algebra(query)) => {
                    out[i] = Some(value(self.count_algebra(py, &query, call, limit))?)
                }
                Err(e) => out[i] = Some(value(Err(e))?),
            }
        }
        let shared = &self.shared;
        let counted = inline(py, |cancel| {
            let opts: Vec<_> = graph_path
                .iter()
                .map(|(_, p)| {
                    let mut o = solutions::options_for(
                        p,
                        &call.options,
                        call.semantics_given.then_some(call.options.semantics),
                    );
                    o.cancel = Some(cancel.clone());
                    o
                })
                .collect();
            let list: Vec<_> = graph_path.iter().map(|(_, p)| p).zip(&opts).collect();
            shared.with_dependent(|_, e| solutions::count_batch(&e.matcher, &list).answers)
        })?;
        for ((i, _), answer) in graph_path.iter().zip(counted) {
            let n = answer
                .map_err(|e| from_gpsense(py, Error::from(e)))
                .and_then(|r| errors::counted(py, &r));
            out[*i] = Some(value(n)?);
        }
        Ok(out
            .into_iter()
            .map(|v| v.unwrap_or_else(|| py.None()))
            .collect())
    }

    /// One batch of `query_many`: every text read into its result, the matcher's queries
    /// answered through `solutions::match_batch` on the calling thread with the GIL released
    /// (their rows held within `HELD_VALUES` for the whole call, `held_values` counting them),
    /// their answers taken into their results; errors as values.
    fn query_chunk(
        &self,
        py: Python<'_>,
        texts: &[String],
        call: &Call,
        held_values: &AtomicUsize,
    ) -> PyResult<Vec<Py<PyAny>>> {
        let results: Vec<PyResult<QueryResult>> = texts
            .iter()
            .map(|text| QueryResult::new(py, self.shared.clone(), text, call.clone()))
            .collect();
        // (place, query, options, counted)
        let asked: Vec<_> = results
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let (p, opts, counted) = r.as_ref().ok()?.batchable()?;
                Some((i, p, opts, counted))
            })
            .collect();
        let shared = &self.shared;
        let (answers, held) = inline(py, |cancel| {
            let mut held: Vec<Held> = asked.iter().map(|_| Held::default()).collect();
            let mut sinks: Vec<_> = held
                .iter_mut()
                .map(|h| move |b: RowBatch| h.take(b, held_values, HELD_VALUES))
                .collect();
            let opts: Vec<MatchOptions> = asked
                .iter()
                .map(|(_, _, o, _)| MatchOptions {
                    cancel: Some(cancel.clone()),
                    ..o.clone()
                })
                .collect();
            let list: Vec<Asked> = asked
                .iter()
                .zip(&opts)
                .zip(sinks.iter_mut())
                .map(|(((_, p, _, counted), opts), sink)| {
                    let sink: &mut (dyn FnMut(RowBatch) -> bool + Send) = sink;
                    let rows = (!counted).then_some(sink);
                    Asked { p, opts, rows }
                })
                .collect();
            let answers =
                shared.with_dependent(|_, e| solutions::match_batch(&e.matcher, list).answers);
            drop(sinks);
            (answers, held)
        })?;
        let mut out: Vec<PyResult<QueryResult>> = results;
        for (((i, _, _, counted), answer), held) in asked.iter().zip(answers).zip(held) {
            let Ok(result) = &out[*i] else { continue };
            let taken = answer
                .map_err(|e| from_gpsense(py, Error::from(e)))
                .and_then(|reported| match *counted {
                    true => Ok(Some(Batched::Count(errors::counted(py, &reported)?))),
                    // Past the batch's bound: answered again alone when read.
                    false if held.spilled => Ok(None),
                    false => Ok(Some(Batched::Rows {
                        ids: held.values,
                        rows: u64::try_from(reported.report.rows).unwrap_or(u64::MAX),
                        timed_out: reported.report.timed_out,
                    })),
                })
                .and_then(|b| b.map_or(Ok(()), |b| result.answered(py, b)));
            if let Err(e) = taken {
                out[*i] = Err(e);
            }
        }
        out.into_iter()
            .map(|r| match r {
                Ok(result) => Ok(Py::new(py, result)?.into_any()),
                Err(e) => Ok(e.into_value(py).into_any()),
            })
            .collect()
    }

    /// `text` read as every front end reads it (`gpsense::read`).
    fn read(&self, py: Python<'_>, text: &str) -> PyResult<Reading> {
        self.shared.read(text).map_err(|e| from_gpsense(py, e))
    }

    /// Counts on the calling thread with the GIL released, Ctrl-C stopping it.
    fn counted(
        &self,
        py: Python<'_>,
        p: &Prepared,
        call: &Call,
        explain: bool,
    ) -> PyResult<Reported> {
        let shared = &self.shared;
        let started = std::time::Instant::now();
        let wanted = call.options.timeout;
        let run = |cancel, timeout| {
            shared.with_dependent(|_, e| {
                let mut opts = solutions::options_for(
                    p,
                    &call.options,
                    call.semantics_given.then_some(call.options.semantics),
                );
                opts.cancel = Some(cancel);
                opts.explain = explain;
                opts.timeout = timeout;
                solutions::count(&e.matcher, p, &opts)
            })
        };
        // A first try within FIRST_TRY_TIME needs no SIGINT handler (see `brief`); a longer count
        // runs again with one, its first try lost.
        let first = wanted.map_or(FIRST_TRY_TIME, |t| t.min(FIRST_TRY_TIME));
        let tried = brief(py, |cancel| run(cancel, Some(first)))?;
        let done = match &tried {
            Ok(r) => !r.report.timed_out || wanted.is_some_and(|t| t <= FIRST_TRY_TIME),
            Err(_) => true,
        };
        let reported = if done {
            tried
        } else {
            let rest = wanted.map(|t| t.saturating_sub(started.elapsed()));
            inline(py, |cancel| run(cancel, rest))?
        };
        reported.map_err(|e| from_gpsense(py, Error::from(e)))
    }
}

/// `texts` in batches of `batch` (`count_many`'s and `query_many`'s argument).
fn batches(texts: &[String], batch: usize) -> PyResult<std::slice::Chunks<'_, String>> {
    if batch == 0 {
        return Err(PyValueError::new_err("batch must be at least 1"));
    }
    Ok(texts.chunks(batch))
}

/// Runs `f` on the calling thread with the GIL released; `f` gets the flag a SIGINT raises, and a
/// SIGINT during it becomes `KeyboardInterrupt`.
pub fn inline<T: Send>(py: Python<'_>, f: impl FnOnce(Arc<AtomicBool>) -> T + Send) -> PyResult<T> {
    let (value, hit) = py.detach(|| {
        let guard = interrupt::Guard::new();
        let value = f(guard.flag());
        (value, guard.interrupted())
    });
    if hit {
        py.check_signals()?;
        return Err(errors::interrupted());
    }
    Ok(value)
}

/// `inline` for work bounded to a few milliseconds (the first try of a query): no SIGINT handler
/// (two system calls a query), as a Ctrl-C meanwhile is Python's to handle once it returns.
pub fn brief<T: Send>(py: Python<'_>, f: impl FnOnce(Arc<AtomicBool>) -> T + Send) -> PyResult<T> {
    let value = py.detach(|| f(Arc::new(AtomicBool::new(false))));
    py.check_signals()?;
    Ok(value)
}

fn open(py: Python<'_>, load: impl FnOnce() -> Result<Loaded, Error> + Send) -> PyResult<Graph> {
    let loaded = py.detach(load).map_err(|e| from_gpsense(py, e))?;
    graph_of(py, loaded)
}

fn graph_of(py: Python<'_>, loaded: Loaded) -> PyResult<Graph> {
    let shared = py
        .detach(|| Shared::open(loaded))
        .map_err(|e| from_gpsense(py, e))?;
    Ok(Graph {
        shared: Arc::new(shared),
    })
}

fn relations_by_count(g: &KnowledgeGraph) -> Vec<(&str, u64)> {
    let mut freq: Vec<(&str, u64)> = g
        .relation_frequencies()
        .into_iter()
        .enumerate()
        .map(|(r, n)| (g.relation_name(r as u16), n))
        .collect();
    freq.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    freq
}

//! `gpsense.QueryResult`: the rows of a query, streamed from a query thread as they are found, or
//! collected on the calling thread when all of them are wanted at once; and the conversions that
//! need a query's rows or a graph's edges (`explain`'s dict, networkx).

use std::collections::VecDeque;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use gpsense::{solutions, Dialect, Error, Form, Prepared, Reading as Read, Reported};
use gpsense_graph::KnowledgeGraph;
use gpsense_planner::Projected;
use hashbrown::HashMap;
use pyo3::exceptions::{PyImportError, PyKeyboardInterrupt, PyStopIteration};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use spargebra::Query;

use crate::algebra::{self, Keep};
use crate::errors::{self, from_gpsense};
use crate::graph::{brief, inline};
use crate::options::Call;
use crate::shared::Shared;
use crate::stream::{Message, Stream};

/// How often a waiting reader looks for Ctrl-C.
const POLL: Duration = Duration::from_millis(50);
/// A query is first run on the calling thread, for at most this many rows and this long: most
/// answers are small, and a query thread costs more than a small query takes. A longer one is
/// then run again on a query thread that streams it (no row has been handed out yet, so nothing
/// is repeated); what the first try spent is lost.
const FIRST_TRY_ROWS: usize = 100_000;
pub const FIRST_TRY_TIME: Duration = Duration::from_millis(20);

enum State {
    /// Nothing has run yet.
    Fresh,
    /// A query thread is producing rows.
    Streaming {
        stream: Stream,
        batch: Vec<u32>,
        at: usize,
        /// Rows of no columns still to hand out.
        empty: usize,
    },
    /// The whole answer, found by the first try.
    Buffered {
        batch: Vec<u32>,
        at: usize,
        /// Rows of no columns still to hand out.
        empty: u64,
        /// The number of rows, when the caller's time limit cut them short.
        timed_out: Option<u64>,
    },
    /// Rows already made (a COUNT(*) query's one row).
    Ready(VecDeque<Py<PyTuple>>),
    /// The full evaluator's whole answer, as names.
    Evaluated {
        rows: std::vec::IntoIter<Vec<Option<String>>>,
        /// The number of rows, when the caller's time limit cut them short.
        timed_out: Option<u64>,
    },
    /// Read to its end, or closed.
    Done,
    /// Cut short after rows were handed out (a time limit, Ctrl-C, a bound): every later read
    /// raises this, so that the rows read never pass for the whole answer.
    Failed(PyErr),
}

/// What reading changes: the state, and each name handed out, made once (answers repeat names,
/// and a Python string costs more to make than to look up).
struct Reading {
    state: State,
    names: HashMap<u64, Py<PyString>>,
}

impl Reading {
    /// Ends the result with `e`, which this read raises; later reads raise it too (a Ctrl-C as a
    /// `MatchError`: the interrupt was this read's).
    fn fail(&mut self, py: Python<'_>, e: PyErr) -> PyErr {
        let again = if e.is_instance_of::<PyKeyboardInterrupt>(py) {
            errors::match_error(
                py,
                "Ctrl-C stopped this result's query before its end: its other rows were never \
                 found; run the query again"
                    .into(),
            )
        } else {
            e.clone_ref(py)
        };
        self.state = State::Failed(again);
        e
    }
}

/// The rows of a query, as tuples of names (a relation's name for an edge variable). Iterating
/// streams them as the engine finds them, from a thread of their own, with the GIL released
/// while waiting; breaking off, `close()` or dropping the result stops the query. `to_list()`,
/// `to_pandas()` and `to_arrow()` take all rows at once (on the calling thread when nothing was
/// read yet). A result is read once; threads sharing one take turns, each row going to one of
/// them. A result cut short after rows were handed out raises the same error on every later read.
#[pyclass(module = "gpsense", frozen)]
pub struct QueryResult {
    shared: Arc<Shared>,
    answering: Answering,
    call: Call,
    variables: Vec<String>,
    reading: Turns<Reading>,
}

/// How the query is answered (`gpsense::read`).
enum Answering {
    /// By the matcher and the solution stage: rows of ids, streamed.
    Graph(Matched),
    /// By the full SPARQL evaluator: rows of names (see `algebra.rs`).
    Algebra(Box<Query>),
}

/// A query the matcher answers.
struct Matched {
    prepared: Arc<Prepared>,
    /// Per column: an edge variable (a relation name) rather than a node.
    relation: Vec<bool>,
}

/// A query's answer found in a batch (`Graph.query_many`), taken as its result's first try.
pub enum Batched {
    /// A SELECT's rows (`ids`, row after row), `rows` of them, and whether the time limit cut
    /// them short.
    Rows {
        ids: Vec<u32>,
        rows: u64,
        timed_out: bool,
    },
    /// A COUNT(*) query's count.
    Count(u128),
}

impl QueryResult {
    pub fn new(
        py: Python<'_>,
        shared: Arc<Shared>,
        text: &str,
        call: Call,
    ) -> PyResult<QueryResult> {
        let answering = match shared.read(text).map_err(|e| from_gpsense(py, e))? {
            Read::Graph(prepared) => Answering::Graph(Matched::new(*prepared)),
            Read::Algebra(query) => Answering::Algebra(query),
        };
        let ask = match &answering {
            Answering::Graph(m) => m.prepared.form == Form::Ask,
            Answering::Algebra(q) => matches!(**q, Query::Ask { .. }),
        };
        if ask {
            return Err(errors::raise(
                py,
                "QueryError",
                ("an ASK query answers yes or no: use Graph.ask()",),
            ));
        }
        let variables = match &answering {
            Answering::Graph(m) => match solutions::count_column(&m.prepared) {
                Some(column) => vec![column.to_owned()],
                None => solutions::column_names(&m.prepared.graph),
            },
            Answering::Algebra(q) => algebra::columns(q),
        };
        Ok(QueryResult {
            shared,
            answering,
            call,
            variables,
            reading: Turns::new(Reading {
                state: State::Fresh,
                names: HashMap::new(),
            }),
        })
    }

    /// What a device batch needs of a query it answers whole: its prepared form, its options (no
    /// Ctrl-C flag yet), and whether its answer is a count (a COUNT(*) query's one row). `None`
    /// for the others (a FILTER, OFFSET or ORDER BY, the full evaluator's), which the batch would
    /// only answer one by one: they are answered when read, streaming.
    pub fn batchable(&self) -> Option<(Arc<Prepared>, gpsense::MatchOptions, bool)> {
        let Answering::Graph(m) = &self.answering else {
            return None;
        };
        let p = &m.prepared;
        let counted = solutions::count_column(p).is_some();
        let whole = if counted {
            p.filters.is_empty()
        } else {
            !solutions::needs_stage(p)
        };
        if !whole {
            return None;
        }
        let mut opts = self.options(m, Arc::new(AtomicBool::new(false)));
        opts.cancel = None;
        Some((p.clone(), opts, counted))
    }

    /// Takes a batch's answer as the first try's: reading hands it out, nothing runs again.
    pub fn answered(&self, py: Python<'_>, answer: Batched) -> PyResult<()> {
        let Answering::Graph(m) = &self.answering else {
            return Ok(());
        };
        let state = match answer {
            Batched::Count(n) => State::Ready(VecDeque::from([PyTuple::new(py, [n])?.unbind()])),
            Batched::Rows {
                ids,
                rows,
                timed_out,
            } => State::Buffered {
                batch: ids,
                at: 0,
                empty: if m.relation.is_empty() { rows } else { 0 },
                timed_out: timed_out.then_some(rows),
            },
        };
        self.reading.take(py)?.state = state;
        Ok(())
    }

    fn options(&self, m: &Matched, cancel: Arc<AtomicBool>) -> gpsense::MatchOptions {
        let mut opts = solutions::options_for(
            &m.prepared,
            &self.call.options,
            self.call
                .semantics_given
                .then_some(self.call.options.semantics),
        );
        opts.cancel = Some(cancel);
        opts
    }

    /// Starts the query thread (or answers a COUNT(*) query on this one). An error leaves the
    /// result fresh: no row was handed out.
    fn start(&self, py: Python<'_>, r: &mut Reading, m: &Matched) -> PyResult<()> {
        if solutions::count_column(&m.prepared).is_some() {
            let n = self.count(py, m)?;
            let row = PyTuple::new(py, [n])?.unbind();
            r.state = State::Ready(VecDeque::from([row]));
            return Ok(());
        }
        let started = Instant::now();
        if self.first_try(py, r, m)? {
            return Ok(());
        }
        let mut opts = self.options(m, Arc::new(AtomicBool::new(false)));
        opts.timeout = opts.timeout.map(|t| t.saturating_sub(started.elapsed()));
        let stream = Stream::start(self.shared.clone(), m.prepared.clone(), opts)
            .map_err(|message| errors::match_error(py, message))?;
        r.state = State::Streaming {
            stream,
            batch: Vec::new(),
            at: 0,
            empty: 0,
        };
        Ok(())
    }

    /// Runs the query on the calling thread within `FIRST_TRY_ROWS` and `FIRST_TRY_TIME`; true
    /// when that found the whole answer (then buffered).
    fn first_try(&self, py: Python<'_>, r: &mut Reading, m: &Matched) -> PyResult<bool> {
        let wanted = self.call.options.timeout;
        let budget = wanted.map_or(FIRST_TRY_TIME, |t| t.min(FIRST_TRY_TIME));
        let cap = FIRST_TRY_ROWS * m.relation.len().max(1);
        let (ids, rows, capped, result) = brief(py, |cancel| {
            let mut opts = self.options(m, cancel);
            opts.timeout = Some(budget);
            let (mut ids, mut rows, mut capped) = (Vec::new(), 0u64, false);
            let result = self.shared.with_dependent(|_, e| {
                solutions::select(&e.matcher, &m.prepared, &opts, &mut |b| {
                    ids.extend_from_slice(b.data);
                    rows += b.rows as u64;
                    capped = rows as usize > FIRST_TRY_ROWS || ids.len() > cap;
                    !capped
                })
            });
            (ids, rows, capped, result)
        })?;
        let reported = result.map_err(|e| from_gpsense(py, Error::from(e)))?;
        let ours = reported.report.timed_out && wanted.is_none_or(|t| t > FIRST_TRY_TIME);
        if capped || ours {
            return Ok(false);
        }
        let timed_out = reported.report.timed_out.then_some(rows);
        let empty = if m.relation.is_empty() { rows } else { 0 };
        r.state = State::Buffered {
            batch: ids,
            at: 0,
            empty,
            timed_out,
        };
        Ok(true)
    }

    fn count(&self, py: Python<'_>, m: &Matched) -> PyResult<u128> {
        let reported = inline(py, |cancel| {
            let opts = self.options(m, cancel);
            self.shared.with_dependent(|_, e| {
                solutions::count(&e.matcher, &m.prepared, &opts).map_err(Error::from)
            })
        })?
        .map_err(|e| from_gpsense(py, e))?;
        errors::counted(py, &reported)
    }

    /// The next row, or `None` at the end.
    fn next_row(&self, py: Python<'_>, r: &mut Reading) -> PyResult<Option<Py<PyTuple>>> {
        match &self.answering {
            Answering::Graph(m) => self.next_matched(py, r, m),
            Answering::Algebra(q) => self.next_evaluated(py, r, q),
        }
    }

    /// The next row of the full evaluator's answer (evaluated whole on the first read).
    fn next_evaluated(
        &self,
        py: Python<'_>,
        r: &mut Reading,
        q: &Query,
    ) -> PyResult<Option<Py<PyTuple>>> {
        if matches!(r.state, State::Fresh) {
            let opts = algebra::options(py, &self.call)?;
            let keep = Keep::Rows(self.call.options.limit);
            let e = algebra::evaluate(py, &self.shared, q, &opts, keep)?;
            r.state = State::Evaluated {
                rows: e.rows.into_iter(),
                timed_out: e.timed_out.then_some(e.count),
            };
        }
        match &mut r.state {
            State::Evaluated { rows, timed_out } => match rows.next() {
                Some(row) => Ok(Some(PyTuple::new(py, row)?.unbind())),
                None => {
                    let Some(n) = *timed_out else {
                        r.state = State::Done;
                        return Ok(None);
                    };
                    let message = format!("the time limit stopped the query after {n} rows");
                    Err(r.fail(py, errors::timeout(py, message, py.None())))
                }
            },
            State::Failed(e) => Err(e.clone_ref(py)),
            _ => Ok(None),
        }
    }

    /// The next row of the matcher's answer.
    fn next_matched(
        &self,
        py: Python<'_>,
        r: &mut Reading,
        m: &Matched,
    ) -> PyResult<Option<Py<PyTuple>>> {
        loop {
            let Reading { state, names } = &mut *r;
            match state {
                State::Fresh => self.start(py, r, m)?,
                State::Evaluated { .. } => return Ok(None),
                State::Ready(rows) => return Ok(rows.pop_front()),
                State::Done => return Ok(None),
                State::Failed(e) => return Err(e.clone_ref(py)),
                State::Buffered { empty, .. } if *empty > 0 => {
                    *empty -= 1;
                    return Ok(Some(PyTuple::empty(py).unbind()));
                }
                State::Buffered { batch, at, .. } if *at < batch.len() => {
                    return row_at(py, self.shared.graph(), m, batch, at, names).map(Some);
                }
                State::Buffered { timed_out, .. } => {
                    let Some(n) = *timed_out else {
                        r.state = State::Done;
                        return Ok(None);
                    };
                    let message = format!("the time limit stopped the query after {n} rows");
                    return Err(r.fail(py, errors::timeout(py, message, py.None())));
                }
                State::Streaming { empty, .. } if *empty > 0 => {
                    *empty -= 1;
                    return Ok(Some(PyTuple::empty(py).unbind()));
                }
                State::Streaming { batch, at, .. } if *at < batch.len() => {
                    return row_at(py, self.shared.graph(), m, batch, at, names).map(Some);
                }
                State::Streaming {
                    stream,
                    batch,
                    at,
                    empty,
                } => match wait(py, stream) {
                    Ok(Message::Rows(next, n)) => {
                        stream.taken(&next);
                        *batch = next;
                        *at = 0;
                        if m.relation.is_empty() {
                            *empty = n;
                        }
                    }
                    Ok(Message::End(result)) => {
                        let reported = match *result {
                            Ok(reported) => reported,
                            Err(e) => return Err(r.fail(py, from_gpsense(py, e))),
                        };
                        if reported.report.timed_out {
                            let n = reported.report.rows;
                            let message =
                                format!("the time limit stopped the query after {n} rows");
                            let e = errors::timeout(py, message, py.None());
                            return Err(r.fail(py, e));
                        }
                        r.state = State::Done;
                        return Ok(None);
                    }
                    Ok(Message::Failed(why)) => {
                        return Err(r.fail(py, errors::match_error(py, why)));
                    }
                    Err(e) => return Err(r.fail(py, e)),
                },
            }
        }
    }

    /// Every row's ids, found on the calling thread with the GIL released, within the memory
    /// budget.
    fn collect_ids(&self, py: Python<'_>, m: &Matched) -> PyResult<(Vec<u32>, Reported)> {
        let budget = self.call.options.memory_budget;
        let outcome = inline(py, |cancel| {
            let opts = self.options(m, cancel);
            let mut ids: Vec<u32> = Vec::new();
            let mut over = false;
            let result = self.shared.with_dependent(|_, e| {
                solutions::select(&e.matcher, &m.prepared, &opts, &mut |b| {
                    if (ids.len() + b.data.len()) as u64 * 4 > budget {
                        over = true;
                        return false;
                    }
                    ids.extend_from_slice(b.data);
                    true
                })
            });
            (ids, over, result)
        })?;
        let (ids, over, result) = outcome;
        let reported = result.map_err(|e| from_gpsense(py, Error::from(e)))?;
        if over {
            return Err(errors::match_error(
                py,
                format!(
                    "the rows take more than the memory budget ({budget} bytes as ids, before \
                     Python objects): iterate over the result instead, or add a LIMIT"
                ),
            ));
        }
        Ok((ids, reported))
    }

    /// All rows as one list per variable (in a dict, in column order).
    fn columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let rows = self.rows(py, &mut *self.reading.take(py)?)?;
        let columns = PyDict::new(py);
        for (c, name) in self.variables.iter().enumerate() {
            let column = PyList::empty(py);
            for row in &rows {
                column.append(row.bind(py).get_item(c)?)?;
            }
            columns.set_item(name, column)?;
        }
        Ok(columns)
    }

    /// All rows as tuples: collected at once when nothing was read, else the rest of the stream.
    fn rows(&self, py: Python<'_>, r: &mut Reading) -> PyResult<Vec<Py<PyTuple>>> {
        let m = match &self.answering {
            Answering::Graph(m)
                if matches!(r.state, State::Fresh)
                    && solutions::count_column(&m.prepared).is_none() =>
            {
                m
            }
            _ => return self.rest(py, r),
        };
        if self.first_try(py, r, m)? {
            return self.rest(py, r);
        }
        // An error here leaves the result fresh (no row was handed out): it can still be iterated.
        let (ids, reported) = self.collect_ids(py, m)?;
        r.state = State::Done;
        let width = m.relation.len();
        let mut out = Vec::with_capacity(reported.report.rows as usize);
        if width == 0 {
            out.extend((0..reported.report.rows).map(|_| PyTuple::empty(py).unbind()));
        } else {
            let g = self.shared.graph();
            for row in ids.chunks_exact(width) {
                out.push(tuple(py, g, &m.relation, row, &mut r.names)?);
            }
        }
        if reported.report.timed_out {
            let message = format!("the time limit stopped the query after {} rows", out.len());
            r.fail(py, errors::timeout(py, message.clone(), py.None()));
            let partial = PyList::new(py, out)?.into_any().unbind();
            return Err(errors::timeout(py, message, partial));
        }
        Ok(out)
    }

    /// The rest of the rows, read one by one.
    fn rest(&self, py: Python<'_>, r: &mut Reading) -> PyResult<Vec<Py<PyTuple>>> {
        let mut out = Vec::new();
        loop {
            match self.next_row(py, r) {
                Ok(Some(row)) => out.push(row),
                Ok(None) => return Ok(out),
                // The rows this call gathered are the timeout's partial answer.
                Err(e) if errors::is(py, &e, "QueryTimeout") => {
                    let message = format!(
                        "the time limit stopped the query; {} rows read by to_list()",
                        out.len()
                    );
                    let partial = PyList::new(py, out)?.into_any().unbind();
                    return Err(errors::timeout(py, message, partial));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Matched {
    fn new(prepared: Prepared) -> Self {
        let relation = prepared
            .graph
            .projection
            .iter()
            .map(|p| matches!(p, Projected::Edge(_)))
            .collect();
        Matched {
            prepared: Arc::new(prepared),
            relation,
        }
    }
}

/// The row at `at` in `batch`, made into a tuple; `at` moves past it.
fn row_at(
    py: Python<'_>,
    g: &KnowledgeGraph,
    m: &Matched,
    batch: &[u32],
    at: &mut usize,
    names: &mut HashMap<u64, Py<PyString>>,
) -> PyResult<Py<PyTuple>> {
    let width = m.relation.len();
    let start = *at;
    *at += width;
    let row = &batch[start..start + width];
    tuple(py, g, &m.relation, row, names)
}

// Python's names: `to_list` and the others consume the result's rows, as `list()` does.
#[allow(clippy::wrong_self_convention)]
#[pymethods]
impl QueryResult {
    /// The projected variables, without `?`, in column order.
    #[getter]
    fn variables(&self) -> Vec<String> {
        self.variables.clone()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        self.next_row(py, &mut *self.reading.take(py)?)?
            .ok_or_else(|| PyStopIteration::new_err(()))
    }

    /// Every row (the rest of them, if some were read), as a list of tuples.
    fn to_list(&self, py: Python<'_>) -> PyResult<Vec<Py<PyTuple>>> {
        self.rows(py, &mut *self.reading.take(py)?)
    }

    /// The rows as a `pandas.DataFrame`, one column per variable (needs pandas).
    fn to_pandas(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let pandas = optional(py, "pandas", "to_pandas()")?;
        let columns = self.columns(py)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("columns", self.variables.clone())?;
        let frame = pandas
            .getattr("DataFrame")?
            .call((columns,), Some(&kwargs))?;
        Ok(frame.unbind())
    }

    /// The rows as a `pyarrow.Table`, one column per variable (needs pyarrow).
    fn to_arrow(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let pyarrow = optional(py, "pyarrow", "to_arrow()")?;
        let columns = self.columns(py)?;
        Ok(pyarrow.call_method1("table", (columns,))?.unbind())
    }

    /// Stops the query and frees what it holds; later reads find no more rows (or the error that
    /// had cut the result short).
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut r = self.reading.take(py)?;
        if !matches!(r.state, State::Failed(_)) {
            r.state = State::Done;
        }
        Ok(())
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _kind: &Bound<'_, PyAny>,
        _value: &Bound<'_, PyAny>,
        _traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = match self.reading.peek().as_deref().map(|r| &r.state) {
            Some(State::Fresh) => "not started",
            Some(State::Done) => "read",
            Some(State::Failed(_)) => "cut short",
            _ => "being read",
        };
        format!(
            "<gpsense.QueryResult ({}): {state}>",
            self.variables.join(", ")
        )
    }
}

/// The next message, the GIL released while waiting, Ctrl-C looked for every `POLL`.
fn wait(py: Python<'_>, stream: &mut Stream) -> PyResult<Message> {
    loop {
        let rows = &mut stream.rows;
        match py.detach(move || rows.recv_timeout(POLL)) {
            Ok(m) => return Ok(m),
            // Dropping the stream (the caller fails the result) stops its thread.
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(errors::match_error(
                    py,
                    "the query thread stopped without an answer (a bug: please report it)".into(),
                ))
            }
        }
    }
}

/// A value that one thread uses at a time. Threads sharing a result take turns: a call that finds
/// another's running waits for it with the GIL released (the other may need the GIL to finish),
/// looking for Ctrl-C every `POLL`.
struct Turns<T> {
    value: Mutex<T>,
    /// Held while a waiter decides to sleep, so that the end of a turn cannot slip between.
    gate: Mutex<()>,
    free: Condvar,
    waiting: AtomicUsize,
}

/// One thread's turn; the next waiter is woken when it ends.
struct Turn<'a, T> {
    guard: Option<MutexGuard<'a, T>>,
    turns: &'a Turns<T>,
}

impl<T: Send> Turns<T> {
    fn new(value: T) -> Self {
        Turns {
            value: Mutex::new(value),
            gate: Mutex::new(()),
            free: Condvar::new(),
            waiting: AtomicUsize::new(0),
        }
    }

    /// The value, once no other thread uses it.
    fn take(&self, py: Python<'_>) -> PyResult<Turn<'_, T>> {
        loop {
            if let Some(guard) = self.peek() {
                return Ok(Turn {
                    guard: Some(guard),
                    turns: self,
                });
            }
            py.detach(|| self.wait());
            py.check_signals()?;
        }
    }

    /// The value if no other thread uses it now (a panic in a turn leaves it usable).
    fn peek(&self) -> Option<MutexGuard<'_, T>> {
        match self.value.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Sleeps until a turn ends, or `POLL` passes.
    fn wait(&self) {
        let gate = self.gate.lock().unwrap_or_else(|p| p.into_inner());
        self.waiting.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // Looked at after counting this waiter: a turn that ends from here on wakes it.
        if matches!(self.value.try_lock(), Err(TryLockError::WouldBlock)) {
            drop(self.free.wait_timeout(gate, POLL));
        }
        self.waiting.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<T> Deref for Turn<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.guard
            .as_deref()
            .expect("a turn holds its value until dropped")
    }
}

impl<T> DerefMut for Turn<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.guard
            .as_deref_mut()
            .expect("a turn holds its value until dropped")
    }
}

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        drop(self.guard.take());
        fence(Ordering::SeqCst);
        if self.turns.waiting.load(Ordering::SeqCst) > 0 {
            let _gate = self.turns.gate.lock().unwrap_or_else(|p| p.into_inner());
            self.turns.free.notify_all();
        }
    }
}

/// A row as a tuple of names, each made once per result (`names`).
fn tuple(
    py: Python<'_>,
    g: &KnowledgeGraph,
    relation: &[bool],
    row: &[u32],
    names: &mut HashMap<u64, Py<PyString>>,
) -> PyResult<Py<PyTuple>> {
    let values = row.iter().zip(relation).map(|(&id, &r)| {
        let key = u64::from(id) | (u64::from(r) << 32);
        names
            .entry(key)
            .or_insert_with(|| {
                let name = if r {
                    g.relation_name(id as u16)
                } else {
                    g.node_name(id)
                };
                PyString::new(py, name).unbind()
            })
            .clone_ref(py)
    });
    Ok(PyTuple::new(py, values)?.unbind())
}

/// A module the call needs but gpsense does not depend on.
fn optional<'py>(py: Python<'py>, module: &str, call: &str) -> PyResult<Bound<'py, PyModule>> {
    py.import(module).map_err(|e| {
        if e.is_instance_of::<PyImportError>(py) {
            PyImportError::new_err(format!(
                "{call} needs {module}, which is not installed: pip install {module}"
            ))
        } else {
            e
        }
    })
}

/// `Graph.explain`'s dict.
pub fn explained<'py>(
    py: Python<'py>,
    g: &KnowledgeGraph,
    p: &Prepared,
    reported: &Reported,
) -> PyResult<Bound<'py, PyDict>> {
    let r = &reported.report;
    let q = &p.graph;
    let d = PyDict::new(py);
    d.set_item(
        "dialect",
        match p.dialect {
            Dialect::Short => "short",
            Dialect::Sparql => "sparql",
        },
    )?;
    d.set_item("evaluator", "graph")?;
    d.set_item("semantics", r.semantics.to_string())?;
    d.set_item("engine", r.engine.to_string())?;
    d.set_item("device", r.device.clone())?;
    d.set_item("fallback", r.fallback.clone())?;
    d.set_item("plan", r.plan.rationale.clone())?;
    d.set_item("join_plan", r.join_plan.rationale.clone())?;
    let candidates = PyDict::new(py);
    for &u in &r.plan.order {
        let node = PyDict::new(py);
        node.set_item("after_filter", r.filter.after_filter.get(u).copied())?;
        node.set_item("after_refine", r.filter.after_refine.get(u).copied())?;
        candidates.set_item(&q.nodes[u].name, node)?;
    }
    d.set_item("candidates", candidates)?;
    d.set_item("edge_candidates", r.edge_candidates)?;
    let t = &r.times;
    let times = PyDict::new(py);
    for (k, v) in [
        ("plan", t.plan),
        ("filter", t.filter),
        ("refine", t.refine),
        ("edge_candidates", t.edge_candidates),
        ("join", t.join),
        ("total", t.total),
    ] {
        times.set_item(k, v.as_secs_f64() * 1e3)?;
    }
    d.set_item("times_ms", times)?;
    d.set_item("matches", r.rows)?;
    d.set_item("timed_out", r.timed_out)?;
    d.set_item("limit_reached", r.limit_reached)?;
    d.set_item("text", gpsense::explain::report(q, g, r))?;
    Ok(d)
}

/// `Graph.to_networkx`: the whole graph, or the subgraph among `nodes`.
pub fn networkx(
    py: Python<'_>,
    g: &KnowledgeGraph,
    nodes: Option<Vec<String>>,
    max_edges: usize,
) -> PyResult<Py<PyAny>> {
    let nx = optional(py, "networkx", "to_networkx()")?;
    let ids: Vec<u32> = match &nodes {
        None => {
            if g.edge_count() > max_edges {
                return Err(errors::graph_error(
                    py,
                    format!(
                        "the graph has {} edges, more than max_edges={max_edges}: pass nodes=[...] \
                         for a subgraph, or a larger max_edges",
                        g.edge_count()
                    ),
                ));
            }
            (0..g.node_count() as u32).collect()
        }
        Some(names) => node_ids(py, g, names)?,
    };
    let mut member = vec![nodes.is_none(); g.node_count()];
    for &v in &ids {
        member[v as usize] = true;
    }
    let out = g.out();
    let mut edges = Vec::new();
    for &v in &ids {
        for i in out.range(v) {
            let w = out.targets()[i];
            if member[w as usize] {
                if edges.len() == max_edges {
                    return Err(errors::graph_error(
                        py,
                        format!("the subgraph has more than max_edges={max_edges} edges"),
                    ));
                }
                edges.push((v, out.labels()[i], w, g.weight(i)));
            }
        }
    }
    let graph = nx.getattr("MultiDiGraph")?.call0()?;
    let names: Vec<&str> = ids.iter().map(|&v| g.node_name(v)).collect();
    graph.call_method1("add_nodes_from", (names,))?;
    for (v, r, w, weight) in edges {
        let attrs = PyDict::new(py);
        attrs.set_item("relation", g.relation_name(r))?;
        attrs.set_item("weight", weight)?;
        graph.call_method("add_edge", (g.node_name(v), g.node_name(w)), Some(&attrs))?;
    }
    Ok(graph.unbind())
}

/// The nodes of `names` (a name, and the nodes it is an alias of); an unknown name is an error
/// with suggestions.
fn node_ids(py: Python<'_>, g: &KnowledgeGraph, names: &[String]) -> PyResult<Vec<u32>> {
    let mut ids = Vec::new();
    for name in names {
        let found = g.nodes_named(name);
        if found.is_empty() {
            let near = gpsense_planner::concept_names(g, name, 3);
            let hint = if near.is_empty() {
                String::new()
            } else {
                format!("; did you mean {}?", near.join(", "))
            };
            return Err(errors::graph_error(
                py,
                format!("unknown node {name:?}{hint}"),
            ));
        }
        ids.extend(found);
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

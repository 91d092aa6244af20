//! One query, start to end, on a blocking thread: parse and resolve (standard SPARQL first, the
//! short dialect as the fallback), run through `solutions` as `gpsense query` does, write the body:
//! whole when it fits in [`HELD`] bytes, else streamed in chunks through a bounded channel.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderValue};
use http_body::Frame;
use tokio::sync::{mpsc, oneshot};

use gpsense_graph::KnowledgeGraph;
use gpsense_planner::{Form, Prepared, Projected};
use gpsense_runtime::{MatchError, MatchOptions, MatchReport, RowBatch};

use super::batch::{batchable, Batcher};
use super::limits::Lane;
use super::results::{self, Format, SolutionsWriter, Term, XSD_INTEGER};
use super::stream::{Piece, CHUNK, HELD};
use super::terms::term_of;
use super::terms::TermKinds;
use gpsense::solutions;
use gpsense::solutions::{column_names, options_for};
use gpsense::sparql::{self, Sparql};
use gpsense::{Matcher, Reading, Reported};
use gpsense_graph::rdf::{term_kind, term_name};

/// What every query shares: the engine over the graph loaded once, and the base options.
pub struct Engine {
    pub matcher: &'static Matcher<'static>,
    /// The full evaluator, its per-graph indexes kept across requests.
    pub sparql: Sparql<'static, Matcher<'static>>,
    pub kinds: TermKinds,
    /// Engine kind and memory budget; semantics, time limit and row cap are set per query.
    pub options: MatchOptions,
    /// On a device engine: where COUNT(*), ASK and SELECT requests are answered together.
    pub batcher: Option<Batcher>,
}

/// One query to answer.
#[derive(Clone)]
pub struct Request {
    pub text: String,
    pub format: Format,
    pub timeout: Duration,
    pub max_rows: u64,
    pub max_bytes: u64,
    /// Set when the client is gone: the engine stops at its next check, in any phase.
    pub cancel: Arc<AtomicBool>,
    pub lane: Lane,
    /// The time limit in a light slot.
    pub light_limit: Duration,
}

/// How an answer leaves the query's thread: whole (with its true status), or as a stream whose
/// head is sent once more than [`HELD`] bytes are written.
pub enum Head {
    Whole(Result<Answer, Failure>),
    Stream {
        content_type: &'static str,
        body: mpsc::UnboundedReceiver<Piece>,
    },
}

/// A body ready to send.
#[derive(Debug)]
pub struct Answer {
    pub body: Vec<u8>,
    /// More rows than the row cap: the first ones were sent.
    pub truncated: bool,
    /// Said in a response header: why a standard query's answer is empty (an unknown name).
    pub warning: Option<String>,
    /// Set when the body is not in the negotiated results format (CONSTRUCT, DESCRIBE: N-Triples).
    pub content_type: Option<&'static str>,
}

/// Why there is no answer.
#[derive(Debug)]
pub enum Failure {
    /// The query does not parse, uses an unsupported construct, or names nothing in the graph
    /// (short dialect): the planner's message with its line, column and caret.
    BadQuery(String),
    /// The time limit passed before the answer was complete.
    TimedOut(Duration),
    /// The client went away.
    Cancelled,
    /// In a light slot, the query ran past the light limit or its answer outgrew [`HELD`]: it
    /// runs again in a main slot.
    Heavy,
    /// In a light slot, the query ran out of time while it had less than a quarter of it on a
    /// core (a loaded machine): it runs again, in either lane, and is not remembered as heavy.
    Starved,
    /// The engine refused or failed (a budget, a device).
    Engine(MatchError),
    /// The server failed (a 500).
    Internal(&'static str),
}

impl From<MatchError> for Failure {
    fn from(e: MatchError) -> Self {
        Failure::Engine(e)
    }
}

impl Engine {
    fn graph(&self) -> &'static KnowledgeGraph {
        self.matcher.graph()
    }

    /// Answers `req` through `head`. Never panics on its input: errors come back as [`Failure`]s.
    pub fn execute(&self, req: &Request, head: oneshot::Sender<Head>) {
        let mut out = Out {
            head: Some(head),
            body: None,
            may_stream: req.lane == Lane::Main,
            content_type: req.format.content_type(),
        };
        let result = self.answer(req, &mut out);
        out.finish(result);
    }

    fn answer(&self, req: &Request, out: &mut Out) -> Result<Answer, Failure> {
        let arrived = Instant::now();
        let reading = match gpsense::read(self.matcher, &req.text, None) {
            Ok(r) => r,
            Err(e) => return Err(Failure::BadQuery(e.to_string())),
        };
        let mut opts = match &reading {
            Reading::Graph(p) => options_for(p, &self.options, None),
            Reading::Algebra(_) => self.options.clone(),
        };
        let light = req.lane == Lane::Light && req.light_limit < req.timeout;
        opts.timeout = Some(if light { req.light_limit } else { req.timeout });
        opts.cancel = Some(req.cancel.clone());
        // A light query runs on its own thread, not in the shared pool, where a heavy query's
        // work would be ahead of it.
        opts.single_thread |= req.lane == Lane::Light;
        // What it did on a core or the device: a light device query works on its own pool's
        // thread and on the device, not on this one.
        let work_at_start = gpsense_runtime::thread_work_time();
        let mut batched = false;
        let (result, has_limit) = match reading {
            Reading::Graph(p) => {
                let has_limit = p.graph.limit.is_some();
                let result = match self.batcher.as_ref().filter(|_| self.on_device(&p, &opts)) {
                    Some(batcher) => {
                        batched = true;
                        match p.form {
                            Form::Select => {
                                self.batched_select(batcher, req, *p, opts, arrived, out)
                            }
                            _ => self.batched(batcher, req, *p, opts, arrived),
                        }
                    }
                    None => match &p.form {
                        Form::Ask => self.ask(req, &p, &opts),
                        Form::Count { variable, .. } => self.count(req, &p, &opts, variable),
                        Form::Select => self.select(req, &p, opts, out),
                    },
                };
                (result, has_limit)
            }
            Reading::Algebra(query) => (self.algebra(req, *query, opts, out), false),
        };
        match result {
            _ if req.cancel.load(Relaxed) => Err(Failure::Cancelled),
            // Its thread only waited: the light limit passed in the batch, so it is heavy.
            Err(Failure::TimedOut(_)) if light && batched => Err(Failure::Heavy),
            // Heavy if it had a fair share of a core (a quarter: beside two heavy queries on
            // two cores, a light thread gets a third); with less, only unlucky.
            Err(Failure::TimedOut(_)) if light => {
                let worked = gpsense_runtime::thread_work_time().saturating_sub(work_at_start);
                Err(if worked * 4 < req.light_limit {
                    Failure::Starved
                } else {
                    Failure::Heavy
                })
            }
            Err(Failure::Engine(e)) if !matches!(e, MatchError::Device(_)) => {
                Err(Failure::BadQuery(refusal(&e, has_limit)))
            }
            other => other,
        }
    }

    fn ask(&self, req: &Request, p: &Prepared, opts: &MatchOptions) -> Result<Answer, Failure> {
        let (yes, reported) = solutions::ask(self.matcher, p, opts)?;
        // A match found before the limit is an answer; no match by then is not.
        if reported.report.timed_out && !yes {
            return Err(Failure::TimedOut(req.timeout));
        }
        Ok(answer(results::boolean(req.format, yes)))
    }

    /// Whether `p` is answered in a device batch: COUNT(*), ASK or SELECT that `match_batch`
    /// answers whole, on the device (under `auto`, where the estimate picks it: a query left to
    /// `dfs` would only wait for the batch).
    pub fn on_device(&self, p: &Prepared, opts: &MatchOptions) -> bool {
        batchable(p)
            && self
                .matcher
                .engine()
                .counts_on_device(&p.graph, &ask_options(p, opts))
    }

    /// COUNT(*) or ASK counted in the batcher's next batch, answered as [`Self::count`] and
    /// [`Self::ask`] answer; one that outgrew its batch room is answered alone, here, with what is
    /// left of its time limit.
    fn batched(
        &self,
        batcher: &Batcher,
        req: &Request,
        p: Prepared,
        opts: MatchOptions,
        arrived: Instant,
    ) -> Result<Answer, Failure> {
        let asked = ask_options(&p, &opts);
        let variable = match &p.form {
            Form::Count { variable, .. } => Some(variable.clone()),
            _ => None,
        };
        let again = p.clone();
        let report = match batcher.answer(self.matcher, p, asked, arrived, None) {
            Err(Failure::Engine(e)) if e.left_by_batch() => {
                let left = time_left(opts, arrived);
                return match &variable {
                    Some(variable) => self.count(req, &again, &left, variable),
                    None => self.ask(req, &again, &left),
                };
            }
            answered => answered?.0.report,
        };
        let warning = on_cpu(&report);
        let body = match variable {
            None if report.timed_out && report.rows == 0 => {
                return Err(Failure::TimedOut(req.timeout))
            }
            None => results::boolean(req.format, report.rows > 0),
            Some(_) if report.timed_out => return Err(Failure::TimedOut(req.timeout)),
            Some(variable) => count_body(req.format, &variable, report.rows),
        };
        Ok(Answer {
            warning,
            ..answer(body)
        })
    }

    fn count(
        &self,
        req: &Request,
        p: &Prepared,
        opts: &MatchOptions,
        variable: &str,
    ) -> Result<Answer, Failure> {
        let reported = solutions::count(self.matcher, p, opts)?;
        if reported.report.timed_out {
            return Err(Failure::TimedOut(req.timeout));
        }
        Ok(answer(count_body(
            req.format,
            variable,
            reported.report.rows,
        )))
    }

    /// A SELECT answered in the batcher's next batch, its rows written as [`Self::select`] writes
    /// them, after the batch; one that outgrew its batch room is answered alone, here, streaming,
    /// with what is left of its time limit.
    fn batched_select(
        &self,
        batcher: &Batcher,
        req: &Request,
        p: Prepared,
        mut opts: MatchOptions,
        arrived: Instant,
        out: &mut Out,
    ) -> Result<Answer, Failure> {
        opts.limit = Some(req.max_rows.saturating_add(1));
        let mut rows = Rows::new(self, req, &p);
        let width = p.graph.projection.len();
        // A value takes at least a byte written (its separator): held past the byte cap, the cap
        // cuts the answer anyway. (The row cap, `opts.limit`, usually holds it to far fewer.)
        let most = usize::try_from(req.max_bytes)
            .unwrap_or(usize::MAX)
            .saturating_add(width);
        let again = p.clone();
        let (reported, values) =
            match batcher.answer(self.matcher, p, opts.clone(), arrived, Some(most)) {
                Err(Failure::Engine(e)) if e.left_by_batch() => {
                    return self.select(req, &again, time_left(opts, arrived), out);
                }
                answered => answered?,
            };
        for row in values.chunks_exact(width.max(1)).take_while(|_| width > 0) {
            if let Err(cut) = rows.write(row) {
                rows.cut = Some(cut);
                break;
            }
            rows.flush(out)?;
        }
        let mut answer = rows.answer(req, &reported)?;
        answer.warning = match (on_cpu(&reported.report), answer.warning) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        Ok(answer)
    }

    /// The rows, at most `max_rows` of them and `max_bytes` of body (one more row is asked for, to
    /// know whether there are more), written as they come: held up to [`HELD`] bytes, then
    /// streamed in [`CHUNK`]s.
    fn select(
        &self,
        req: &Request,
        p: &Prepared,
        mut opts: MatchOptions,
        out: &mut Out,
    ) -> Result<Answer, Failure> {
        let cap = req.max_rows;
        opts.limit = Some(cap.saturating_add(1));
        let mut rows = Rows::new(self, req, p);
        let mut stop = None;
        let mut take = |batch: RowBatch| {
            if req.cancel.load(Relaxed) {
                return false;
            }
            for row in batch.iter() {
                if let Err(cut) = rows.write(row) {
                    rows.cut = Some(cut);
                    return false;
                }
                // Within the batch: one batch may hold many rows.
                if let Err(failure) = rows.flush(out) {
                    stop = Some(failure);
                    return false;
                }
            }
            true
        };
        let reported = solutions::select(self.matcher, p, &opts, &mut take)?;
        if let Some(failure) = stop {
            return Err(failure);
        }
        rows.answer(req, &reported)
    }

    /// Standard SPARQL beyond what the graph path answers: the full evaluator (`gpsense-sparql`),
    /// its rows under the same caps, held then streamed as the graph path's are.
    fn algebra(
        &self,
        req: &Request,
        query: spargebra::Query,
        opts: MatchOptions,
        out: &mut Out,
    ) -> Result<Answer, Failure> {
        let sparql = &self.sparql;
        let options = sparql::Options {
            base_iri: None,
            matching: opts,
        };
        let evaluation = sparql
            .evaluate_query(query, &options)
            .map_err(|e| sparql_failure(e.at(&req.text), req))?;
        let warning =
            (!evaluation.matcher.unknown.is_empty()).then(|| evaluation.matcher.unknown.join("; "));
        let (body, truncated, content_type) = match evaluation.answer {
            sparql::Answer::Boolean(yes) => (results::boolean(req.format, yes), false, None),
            sparql::Answer::Solutions { variables, rows } => {
                let vars: Vec<String> = variables.iter().map(|v| v.as_str().to_owned()).collect();
                let (body, cut) = self.algebra_rows(req, &vars, rows, out)?;
                (body, cut, None)
            }
            sparql::Answer::Graph(triples) => {
                let (body, cut) = algebra_triples(req, triples)?;
                (body, cut, Some("application/n-triples"))
            }
        };
        Ok(Answer {
            body,
            truncated,
            warning,
            content_type,
        })
    }

    fn algebra_rows(
        &self,
        req: &Request,
        vars: &[String],
        rows: sparql::Rows<'_>,
        out: &mut Out,
    ) -> Result<(Vec<u8>, bool), Failure> {
        let mut writer = SolutionsWriter::new(req.format, vars);
        let (mut written, mut sent) = (0u64, 0u64);
        let mut names: Vec<String> = Vec::with_capacity(vars.len());
        for row in rows {
            if req.cancel.load(Relaxed) {
                return Err(Failure::Cancelled);
            }
            if written >= req.max_rows {
                return Ok((writer.finish(), true));
            }
            let row = row.map_err(|e| sparql_failure(e, req))?;
            names.clear();
            names.extend(row.iter().map(|t| {
                t.as_ref()
                    .map_or(String::new(), |t| term_name(t).into_owned())
            }));
            let terms: Vec<Option<Term>> = row
                .iter()
                .zip(&names)
                .map(|(t, name)| t.as_ref().map(|_| term_of(name, term_kind(name))))
                .collect();
            let refs: Vec<Option<&Term>> = terms.iter().map(Option::as_ref).collect();
            let mark = writer.buffered();
            writer.row_of(&refs);
            if sent + writer.buffered() as u64 + CLOSING > req.max_bytes {
                writer.undo_row(mark);
                return Ok((writer.finish(), true));
            }
            written += 1;
            let enough = if out.streaming() { CHUNK } else { HELD };
            if writer.buffered() >= enough {
                if !out.streaming() {
                    out.start()?;
                }
                let chunk = writer.take();
                sent += chunk.len() as u64;
                out.send(chunk)?;
            }
        }
        Ok((writer.finish(), false))
    }
}

/// CONSTRUCT and DESCRIBE as N-Triples, under the byte cap (whole: graphs are small next to rows).
fn algebra_triples(
    req: &Request,
    triples: sparql::Triples<'_>,
) -> Result<(Vec<u8>, bool), Failure> {
    use std::fmt::Write as _;
    let mut body = String::new();
    for t in triples {
        let t = t.map_err(|e| sparql_failure(e, req))?;
        let mark = body.len();
        let _ = writeln!(body, "{t} .");
        if body.len() as u64 > req.max_bytes {
            body.truncate(mark);
            return Ok((body.into_bytes(), true));
        }
    }
    Ok((body.into_bytes(), false))
}

fn sparql_failure(e: sparql::SparqlError, req: &Request) -> Failure {
    match e {
        sparql::SparqlError::TimedOut if req.cancel.load(Relaxed) => Failure::Cancelled,
        sparql::SparqlError::TimedOut => Failure::TimedOut(req.timeout),
        e => Failure::BadQuery(e.to_string()),
    }
}

/// Bytes a body's end may add after its last row (`</results></sparql>` is the longest).
const CLOSING: u64 = 32;

/// Why an answer stops before the engine's last row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cut {
    Rows,
    Bytes,
}

/// A SELECT's rows on their way out: terms written, caps checked, bytes flushed.
struct Rows<'a> {
    engine: &'a Engine,
    writer: SolutionsWriter,
    is_edge: Vec<bool>,
    terms: Vec<Term<'a>>,
    written: u64,
    /// Bytes already handed to the stream.
    sent: u64,
    max_rows: u64,
    max_bytes: u64,
    cut: Option<Cut>,
}

impl<'a> Rows<'a> {
    fn new(engine: &'a Engine, req: &Request, p: &Prepared) -> Self {
        let vars = column_names(&p.graph);
        let is_edge = p
            .graph
            .projection
            .iter()
            .map(|c| matches!(c, Projected::Edge(_)))
            .collect();
        Rows {
            engine,
            writer: SolutionsWriter::new(req.format, &vars),
            is_edge,
            terms: Vec::with_capacity(vars.len()),
            written: 0,
            sent: 0,
            max_rows: req.max_rows,
            max_bytes: req.max_bytes,
            cut: None,
        }
    }

    /// Writes one row, or says which cap it would pass (it is then not written).
    fn write(&mut self, row: &[u32]) -> Result<(), Cut> {
        if self.written >= self.max_rows {
            return Err(Cut::Rows);
        }
        let g = self.engine.graph();
        let kinds = &self.engine.kinds;
        self.terms.clear();
        self.terms.extend(
            row.iter()
                .zip(&self.is_edge)
                .map(|(&id, &edge)| kinds.term(g, id, edge)),
        );
        let mark = self.writer.buffered();
        self.writer.row(&self.terms);
        // With room for the format's closing tags.
        if self.sent + self.writer.buffered() as u64 + CLOSING > self.max_bytes {
            self.writer.undo_row(mark);
            return Err(Cut::Bytes);
        }
        self.written += 1;
        Ok(())
    }

    /// The answer once the rows are written: a time-out's failure, or the body and whether a cap
    /// cut it.
    fn answer(self, req: &Request, reported: &Reported) -> Result<Answer, Failure> {
        if reported.report.timed_out {
            return Err(Failure::TimedOut(req.timeout));
        }
        let warning = (self.cut == Some(Cut::Bytes)).then(|| {
            format!(
                "the answer was cut after {} rows: the next row would pass this server's limit of \
                 {} bytes",
                self.written, req.max_bytes
            )
        });
        Ok(Answer {
            truncated: self.cut.is_some(),
            body: self.writer.finish(),
            warning,
            content_type: None,
        })
    }

    /// Streams what is written once there is enough of it (starting the stream past [`HELD`]).
    fn flush(&mut self, out: &mut Out) -> Result<(), Failure> {
        let enough = if out.streaming() { CHUNK } else { HELD };
        if self.writer.buffered() < enough {
            return Ok(());
        }
        if !out.streaming() {
            out.start()?;
        }
        let chunk = self.writer.take();
        self.sent += chunk.len() as u64;
        out.send(chunk)
    }
}

/// Where an answer goes: the head until it is decided, then the stream's channel.
struct Out {
    head: Option<oneshot::Sender<Head>>,
    body: Option<mpsc::UnboundedSender<Piece>>,
    may_stream: bool,
    content_type: &'static str,
}

impl Out {
    fn streaming(&self) -> bool {
        self.body.is_some()
    }

    /// Sends a streamed response's head; in a light slot, a big answer makes the query heavy.
    fn start(&mut self) -> Result<(), Failure> {
        if !self.may_stream {
            return Err(Failure::Heavy);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let head = Head::Stream {
            content_type: self.content_type,
            body: rx,
        };
        match self.head.take().map(|h| h.send(head)) {
            Some(Ok(())) => {
                self.body = Some(tx);
                Ok(())
            }
            _ => Err(Failure::Cancelled),
        }
    }

    /// One chunk of a streamed answer, queued without waiting (the answer's byte cap bounds the
    /// queue); fails when the client is gone.
    fn send(&mut self, bytes: Vec<u8>) -> Result<(), Failure> {
        if bytes.is_empty() {
            return Ok(());
        }
        let piece = Ok(Frame::data(Bytes::from(bytes)));
        match self.body.as_ref().map(|tx| tx.send(piece)) {
            Some(Ok(())) => Ok(()),
            _ => Err(Failure::Cancelled),
        }
    }

    /// The end: the whole answer as the head, or the stream's last bytes and trailers; a failure
    /// in mid-stream aborts the response, which the client sees as incomplete.
    fn finish(mut self, result: Result<Answer, Failure>) {
        if let Some(head) = self.head.take() {
            let _ = head.send(Head::Whole(result));
            return;
        }
        let Some(tx) = self.body.take() else { return };
        let last = match result {
            Ok(answer) => {
                let trailers = trailers(&answer);
                let _ = self.send_on(&tx, Ok(Frame::data(Bytes::from(answer.body))));
                trailers.map(|t| Ok(Frame::trailers(t)))
            }
            Err(failure) => Some(Err(std::io::Error::other(failure.to_string()))),
        };
        if let Some(piece) = last {
            let _ = self.send_on(&tx, piece);
        }
    }

    fn send_on(&self, tx: &mpsc::UnboundedSender<Piece>, piece: Piece) -> Result<(), Failure> {
        tx.send(piece).map_err(|_| Failure::Cancelled)
    }
}

/// The trailers of a streamed answer: what its headers would have said, known only at its end.
fn trailers(answer: &Answer) -> Option<HeaderMap> {
    let mut map = HeaderMap::new();
    if answer.truncated {
        map.insert("x-gpsense-truncated", HeaderValue::from_static("true"));
    }
    if let Some(w) = answer.warning.as_deref().and_then(super::header_text) {
        map.insert("x-gpsense-warning", w);
    }
    (!map.is_empty()).then_some(map)
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadQuery(m) => f.write_str(m),
            Failure::TimedOut(limit) => {
                write!(
                    f,
                    "the query ran past its time limit of {} ms",
                    limit.as_millis()
                )
            }
            Failure::Cancelled => f.write_str("the client went away"),
            Failure::Heavy => f.write_str("the query outgrew a light slot"),
            Failure::Starved => f.write_str("the query had too little time on a core"),
            Failure::Engine(e) => write!(f, "{e}"),
            Failure::Internal(m) => f.write_str(m),
        }
    }
}

/// Why the server will not answer a query, in the endpoint's terms: the engine's own messages
/// name the command line's flags, which a client cannot set.
fn refusal(e: &MatchError, has_limit: bool) -> String {
    match e {
        MatchError::CartesianExplosion {
            components,
            product,
            limit,
        } => {
            let remedy = if has_limit {
                "count them with COUNT(*) or connect the components"
            } else {
                "add a LIMIT, count them with COUNT(*), or connect the components"
            };
            format!(
                "the query is disconnected: its {components} components have {product} combined \
                 matches, more than this server's limit of {limit}; {remedy}"
            )
        }
        MatchError::MemoryBudget { .. }
        | MatchError::DeviceBudget { .. }
        | MatchError::SpaceBudget { .. }
        | MatchError::DistinctTooLarge { .. }
        | MatchError::OrderTooLarge { .. } => {
            let what = e.to_string();
            let what = what.split(';').next().unwrap_or_default();
            let what = what.split(" (--").next().unwrap_or_default();
            format!(
                "{what}, this server's limit per query; narrow the query (a concept, a LIMIT, no \
                 ORDER BY or DISTINCT over a large answer)"
            )
        }
        other => other.to_string(),
    }
}

/// The options `p` is counted with: for ASK, as `solutions::ask` does, one match is enough.
/// Under `auto`, the GPU failed during the batch: the answer is the CPU's, and says so.
fn on_cpu(report: &MatchReport) -> Option<String> {
    report
        .fallback
        .as_ref()
        .map(|why| format!("{why}; answered on the CPU (dfs engine)"))
}

fn ask_options(p: &Prepared, opts: &MatchOptions) -> MatchOptions {
    let mut opts = opts.clone();
    if p.form == Form::Ask {
        opts.limit = Some(1);
    }
    opts
}

fn answer(body: Vec<u8>) -> Answer {
    Answer {
        body,
        truncated: false,
        warning: None,
        content_type: None,
    }
}

/// `SELECT (COUNT(*) AS ?n)`: one row, an `xsd:integer`.
fn count_body(format: Format, variable: &str, n: u128) -> Vec<u8> {
    let mut writer = SolutionsWriter::new(format, &[variable.to_owned()]);
    writer.row(&[Term::typed(n.to_string(), XSD_INTEGER)]);
    writer.finish()
}

/// `opts` with what is left of its time limit, counted from `arrived`: a query a batch left to be
/// answered alone.
fn time_left(mut opts: MatchOptions, arrived: Instant) -> MatchOptions {
    opts.timeout = opts.timeout.map(|t| t.saturating_sub(arrived.elapsed()));
    opts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_an_integer() {
        let body = String::from_utf8(count_body(Format::Tsv, "n", 42)).unwrap();
        assert_eq!(body, "?n\n42\n");
        let body = String::from_utf8(count_body(Format::Json, "n", 0)).unwrap();
        assert!(body.contains(
            r#"{"n":{"type":"literal","value":"0","datatype":"http://www.w3.org/2001/XMLSchema#integer"}}"#
        ));
    }
}

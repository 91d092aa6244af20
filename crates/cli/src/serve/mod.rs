//! `gpsense serve`: a SPARQL 1.1 Protocol endpoint (`/query`, as Oxigraph serves it) over one graph
//! loaded at start.
//!
//! Threads: a small tokio runtime (axum) does only HTTP; each query runs on a blocking thread
//! (`spawn_blocking`), where the engine uses rayon as `gpsense query` does, so a long query never
//! stalls the executor. The graph is leaked (`'static`: it lives as long as the process) and one
//! `Matcher` is shared by all requests; its pools of scratch space are already shared safely.
//!
//! Connections (`conn`): capped, with time limits on a request's head, on idle keep-alive and on a
//! blocked write. Admission (`limits`): main slots and light slots, heavy queries kept to the main
//! ones. Bodies (`stream`): whole up to a few hundred KB, else streamed through a bounded channel,
//! the query's slot held until the body is sent or dropped. A client that goes away stops its
//! query in whatever phase it is (the engine's cancel flag).
//!
//! On a device engine, COUNT(*), ASK and plain SELECT requests are answered together (`batch`):
//! their threads hand them to one batching thread and wait for their counts or rows.
//!
//! The query workbench: `/` for a browser (`page`, the files in `ui/`), which calls `/query` and
//! three JSON endpoints: `/examples` (from the graph, at start: `examples`), `/explain` (the
//! query's graph, plan and figures: `explain`) and `/trust` (TruST: `trust`); the last two take a
//! main slot and the request's time limit as a query does.
//!
//! Status codes: 200 with the results; 400 for a request or query the server cannot answer (the
//! parser's message with line, column and caret); 406 for an Accept no format satisfies; 413 for a
//! body or query over the limits; 415 for another Content-Type; 503 when the server is busy
//! (with `Retry-After`) or the query ran past its time limit (without it: retrying the same query
//! would not help); 500 if the engine failed.

mod batch;
mod conn;
mod examples;
mod execute;
mod explain;
mod limits;
mod page;
mod protocol;
pub(crate) mod results;
mod stream;
pub(crate) mod terms;
mod trust;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use gpsense_runtime::{default_memory_budget, parse_bytes, EngineKind, MatchError, MatchOptions};

use crate::graph_source;
use conn::ConnLimits;
use execute::{Answer, Engine, Failure, Head, Request};
use gpsense::Matcher;
use limits::{Admission, Busy, Lane, Limits, Slot};
use protocol::{Params, Reject};
use stream::{ChannelBody, Guarded};

/// Headings of `serve --help` beside the shared ones.
const SERVER: &str = "Server";
const ADMISSION: &str = "Admission (slots and queue)";
const CONNECTIONS: &str = "Connections";

/// `gpsense serve`'s command line.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The graph: a snapshot or any file `ingest` reads (default: the embedded ConceptNet-100K).
    #[arg(long, help_heading = crate::help::INPUT)]
    graph: Option<PathBuf>,
    /// Address and port to listen on (port 0: any free one). The default is loopback only; any
    /// other address makes the endpoint reachable from other machines, with no authentication.
    #[arg(long, default_value = "127.0.0.1:7878", help_heading = SERVER)]
    bind: SocketAddr,
    /// Queries run at once (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1024), help_heading = ADMISSION)]
    max_concurrent: Option<u64>,
    /// Slots for light queries beside those: a query that takes one and runs past --light-ms, or
    /// whose answer passes 256 KB, is heavy and restarts in a main slot (its text remembered).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(0..=64), help_heading = ADMISSION)]
    light_slots: u64,
    /// The time limit of a query in a light slot.
    #[arg(long, default_value_t = 250, value_parser = clap::value_parser!(u64).range(1..=60_000), help_heading = ADMISSION)]
    light_ms: u64,
    /// Requests that may wait for a free slot; beyond them, 503 at once.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(0..=100_000), help_heading = ADMISSION)]
    max_queued: u64,
    /// How long a request may wait for a slot before a 503.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(0..=600_000), help_heading = ADMISSION)]
    queue_wait_ms: u64,
    /// Each query's time limit (a request may ask for less with `timeout=MS`).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=3_600_000), help_heading = crate::help::LIMITS)]
    timeout_ms: u64,
    /// Rows per answer; beyond, the answer is cut and says so (`X-Gpsense-Truncated: true`). A
    /// request may ask for fewer with `max-rows=N`.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(0..=1_000_000_000), help_heading = crate::help::LIMITS)]
    max_rows: u64,
    /// Bytes per answer (e.g. 64M); beyond, the answer is cut at a row and says so.
    #[arg(long, default_value = "64M", value_parser = bytes_up_to(1 << 40), help_heading = crate::help::LIMITS)]
    max_response_bytes: u64,
    /// The largest request body (e.g. 1M).
    #[arg(long, default_value = "1M", value_parser = bytes_up_to(1 << 30), help_heading = crate::help::LIMITS)]
    max_body: u64,
    /// The longest query text (e.g. 64K).
    #[arg(long, default_value = "64K", value_parser = bytes_up_to(16 << 20), help_heading = crate::help::LIMITS)]
    max_query_bytes: u64,
    /// Open connections; beyond, a connection gets a 503 and is closed (default: 1,000, less if
    /// the descriptor limit is lower).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000), help_heading = CONNECTIONS)]
    max_connections: Option<u64>,
    /// Time a request's head (line and headers) may take to arrive, counted from when the
    /// server waits for it; a slower client is disconnected.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=600_000), help_heading = CONNECTIONS)]
    header_timeout_ms: u64,
    /// Time a keep-alive connection may stay idle between requests.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..=600_000), help_heading = CONNECTIONS)]
    idle_timeout_ms: u64,
    /// Time a response may stay unwritten because the client reads nothing; then the client is
    /// dropped and its query stopped.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..=600_000), help_heading = CONNECTIONS)]
    write_timeout_ms: u64,
    /// Engine: auto (the GPU if present, else dfs), dfs, kernels, gpu, emulated.
    #[arg(
        long,
        default_value = "auto",
        value_parser = crate::one_of::<EngineKind>(&["auto", "dfs", "kernels", "gpu", "emulated"])
, help_heading = crate::help::ENGINE)]
    engine: EngineKind,
    /// Memory each query's join may use (e.g. 512M). Default: a quarter of RAM shared among the
    /// concurrent queries, at least 64 MiB each.
    #[arg(long, value_parser = parse_bytes, help_heading = crate::help::LIMITS)]
    memory_budget: Option<u64>,
    /// On `--engine gpu`, `emulated` or `auto` with a GPU: COUNT(*), ASK and SELECT requests (no
    /// FILTER; a SELECT without OFFSET or ORDER BY) arriving within this window of the first are
    /// answered together, as one batch of device launches (default: 2).
    #[arg(long, value_name = "MS", help_heading = crate::help::ENGINE,
          value_parser = clap::value_parser!(u64).range(1..=batch::MAX_WINDOW_MS))]
    batch_window_ms: Option<u64>,
    /// The most requests one such batch holds (1: each request counted alone). A batch never
    /// holds more than the queries running at once (--max-concurrent plus --light-slots).
    #[arg(long, value_name = "N", default_value_t = 256, help_heading = crate::help::ENGINE,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    device_batch: u64,
}

/// What `run` needs.
struct Args {
    graph: Option<PathBuf>,
    bind: SocketAddr,
    limits: Limits,
    conn: ConnLimits,
    /// Whether `--max-connections` was given (else it follows the descriptor limit).
    connections_given: bool,
    /// Engine kind and memory budget per query.
    options: MatchOptions,
    /// How counting requests are gathered into device batches.
    batching: batch::Settings,
}

/// A size option with an upper bound.
fn bytes_up_to(max: u64) -> impl Fn(&str) -> Result<u64, String> + Clone {
    move |s| {
        let n = parse_bytes(s)?;
        if n > max {
            return Err(format!("{s:?} is more than the most allowed, {max} bytes"));
        }
        Ok(n)
    }
}

impl ServeArgs {
    fn resolve(self) -> Result<Args> {
        self.check_window()?;
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let max_concurrent = self.max_concurrent.map_or(cores, |n| n as usize);
        let shared = default_memory_budget() / max_concurrent as u64;
        let memory_budget = self
            .memory_budget
            .unwrap_or_else(|| shared.max(64 << 20).min(default_memory_budget()));
        let ms = Duration::from_millis;
        Ok(Args {
            graph: self.graph,
            bind: self.bind,
            limits: Limits {
                max_concurrent,
                max_queued: self.max_queued as usize,
                queue_wait: ms(self.queue_wait_ms),
                timeout: ms(self.timeout_ms),
                max_rows: self.max_rows,
                max_response_bytes: self.max_response_bytes,
                max_body_bytes: usize::try_from(self.max_body).unwrap_or(usize::MAX),
                max_query_bytes: usize::try_from(self.max_query_bytes).unwrap_or(usize::MAX),
                light_slots: self.light_slots as usize,
                light_limit: ms(self.light_ms),
            },
            conn: ConnLimits {
                max_connections: self
                    .max_connections
                    .map_or(DEFAULT_CONNECTIONS, |n| n as usize),
                header_timeout: ms(self.header_timeout_ms),
                idle_timeout: ms(self.idle_timeout_ms),
                write_timeout: ms(self.write_timeout_ms),
            },
            connections_given: self.max_connections.is_some(),
            options: MatchOptions {
                engine: self.engine,
                memory_budget,
                ..MatchOptions::default()
            },
            batching: batch::Settings {
                window: ms(self.batch_window_ms.unwrap_or(batch::DEFAULT_WINDOW_MS)),
                max: self.device_batch as usize,
            },
        })
    }
}

impl ServeArgs {
    /// A window as long as a time limit would spend a request's time waiting for its batch.
    fn check_window(&self) -> Result<()> {
        let Some(window) = self.batch_window_ms else {
            return Ok(());
        };
        if window >= self.timeout_ms {
            anyhow::bail!(
                "--batch-window-ms {window} must be shorter than --timeout-ms {}: a request may \
                 wait that long for its batch",
                self.timeout_ms
            );
        }
        if self.light_slots > 0 && window >= self.light_ms {
            anyhow::bail!(
                "--batch-window-ms {window} must be shorter than --light-ms {}: a query in a light \
                 slot may wait that long for its batch (or use --light-slots 0)",
                self.light_ms
            );
        }
        Ok(())
    }
}

const DEFAULT_CONNECTIONS: usize = 1_000;
/// Descriptors kept for the graph, logs, the queries' own files and refusals.
const SPARE_DESCRIPTORS: u64 = 64;

/// The connection cap within the descriptor limit (raised to its hard limit first).
fn fit_connections(args: &mut Args) -> Result<()> {
    let Some(limit) = conn::raise_fd_limit() else {
        return Ok(());
    };
    let room = limit.saturating_sub(SPARE_DESCRIPTORS) as usize;
    if args.conn.max_connections <= room {
        return Ok(());
    }
    if args.connections_given {
        anyhow::bail!(
            "--max-connections {} needs more file descriptors than this process may open ({limit}, \
             {SPARE_DESCRIPTORS} kept spare); raise `ulimit -n` or lower --max-connections",
            args.conn.max_connections
        );
    }
    crate::out::note!(
        "connections: at most {room} (the descriptor limit is {limit}; raise `ulimit -n` for more)"
    );
    args.conn.max_connections = room.max(1);
    Ok(())
}

/// Shared by every request.
struct Server {
    engine: Engine,
    limits: Limits,
    admission: Admission,
    /// How long a request body may take to arrive.
    body_timeout: Duration,
    /// For `/health`.
    origin: String,
    /// `/examples`' answer, computed at start.
    examples: String,
    /// TruST's name index and where it searches (the server's engine: its device, opened by the
    /// first `/trust` request), both kept.
    trust: trust::Trusts,
}

pub fn run(args: ServeArgs) -> Result<()> {
    let mut args = args.resolve()?;
    fit_connections(&mut args)?;
    let server = Arc::new(load(&args)?);
    // HTTP needs little: two threads; queries run on blocking threads, at most one per slot (the
    // slot is taken before the thread), plus one spare.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(args.limits.max_concurrent.max(1) + args.limits.light_slots + 1)
        // Parsing and planning recurse over the query's nesting (bounded in `protocol`): a margin
        // well beyond the default 2 MiB, reserved, not committed, until used.
        .thread_stack_size(16 << 20)
        .thread_name("gpsense-serve")
        .enable_all()
        .build()
        .context("cannot start the server's runtime")?;
    let result = runtime.block_on(serve(server, &args));
    // Queries whose clients left may still run to their time limit: nothing of theirs is needed.
    runtime.shutdown_background();
    result
}

/// Loads the graph once and prepares the engine over it.
fn load(args: &Args) -> Result<Server> {
    let loaded: &'static graph_source::Loaded =
        Box::leak(Box::new(graph_source::load(args.graph.as_deref())?));
    // Leaked as the graph is: the SPARQL evaluator keeps its per-graph indexes across requests
    // and borrows the matcher for the server's life.
    let matcher: &'static Matcher<'static> = Box::leak(Box::new(Matcher::new(loaded)?));
    graph_source::announce_engine(matcher.engine(), args.options.engine, crate::out::verbose())?;
    let g = &loaded.graph;
    crate::out::note!(
        "graph: {} ({} nodes, {} edges, {} relations; loaded in {})",
        loaded.origin,
        gpsense::fmt::thousands(g.node_count() as u64),
        gpsense::fmt::thousands(g.edge_count() as u64),
        gpsense::fmt::thousands(g.relation_count() as u64),
        gpsense::fmt::millis(loaded.load_time)
    );
    let kinds = terms::TermKinds::new(g);
    let examples = examples::examples(g).to_string();
    let batcher = if batch::applies(matcher, args.options.engine, &args.batching) {
        let settings = args.batching;
        crate::out::note!(
            "batching: COUNT(*), ASK and SELECT requests within {} ms of each other answered \
             together, at most {} a batch",
            settings.window.as_millis(),
            settings.max
        );
        Some(batch::Batcher::start(matcher, settings).context("cannot start the batching thread")?)
    } else {
        None
    };
    Ok(Server {
        engine: Engine {
            matcher,
            sparql: gpsense::sparql::Sparql::new(matcher),
            kinds,
            options: args.options.clone(),
            batcher,
        },
        admission: Admission::new(&args.limits),
        body_timeout: args.conn.header_timeout,
        limits: args.limits.clone(),
        origin: loaded.origin.clone(),
        examples,
        trust: trust::Trusts::default(),
    })
}

async fn serve(server: Arc<Server>, args: &Args) -> Result<()> {
    let listener = tokio::net::TcpListener::bind(args.bind)
        .await
        .with_context(|| format!("cannot listen on {}", args.bind))?;
    let addr = listener.local_addr().context("no local address")?;
    if !addr.ip().is_loopback() {
        eprintln!(
            "warning: listening on {addr}, reachable from other machines: gpsense serve has no \
             authentication and no encryption"
        );
    }
    let stop = stop_signal()?;
    announce(&server.limits, &args.conn);
    // On stdout even with -q: scripts and tests read the port from it (`--bind 127.0.0.1:0`).
    crate::out::print(format_args!("listening on http://{addr}\n"))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
    });
    let open = Arc::new(tokio::sync::Semaphore::new(args.conn.max_connections));
    let app = router(server.clone());
    conn::accept_loop(listener, app, args.conn.clone(), open.clone(), stop_rx).await;
    crate::out::note!("stopping: finishing the requests in flight");
    // In-flight requests finish; a client that holds its connection longer than a query may run
    // (plus a margin to send the answer) does not hold the process.
    let grace = server.limits.timeout + Duration::from_secs(10);
    let all = u32::try_from(args.conn.max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(grace, open.acquire_many(all))
        .await
        .is_err()
    {
        eprintln!(
            "stopping: requests still open after {} s, closed",
            grace.as_secs()
        );
    }
    crate::out::note!("stopped");
    Ok(())
}

fn announce(l: &Limits, c: &ConnLimits) {
    crate::out::note!(
        "limits: {} queries at once and {} light ones, {} waiting (at most {} ms each), time limit \
         {} ms, {} rows and {} bytes per answer, queries up to {} bytes; {} connections, head \
         within {} ms, idle {} ms, writes blocked {} ms",
        l.max_concurrent,
        l.light_slots,
        l.max_queued,
        l.queue_wait.as_millis(),
        l.timeout.as_millis(),
        l.max_rows,
        l.max_response_bytes,
        l.max_query_bytes,
        c.max_connections,
        c.header_timeout.as_millis(),
        c.idle_timeout.as_millis(),
        c.write_timeout.as_millis()
    );
}

/// Resolves at SIGINT (Ctrl-C) or SIGTERM. The handlers are installed here, before the address is
/// printed, so that a signal sent as soon as the server is up already stops it gracefully.
#[cfg(unix)]
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(not(unix))]
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        // Without a handler, Ctrl-C ends the process as it would anyway.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}

fn router(server: Arc<Server>) -> Router {
    let body_limit = server.limits.max_body_bytes;
    Router::new()
        .route("/query", get(query_get).post(query_post))
        .route("/health", get(health))
        .route("/", get(index))
        .route("/help", get(help))
        .route("/ui/app.js", get(page::script))
        .route("/ui/app.css", get(page::style))
        .route("/examples", get(examples_json))
        .route("/explain", get(explain_get))
        .route("/trust", get(trust_get))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(server)
}

async fn query_get(
    State(s): State<Arc<Server>>,
    RawQuery(url): RawQuery,
    headers: HeaderMap,
) -> Response {
    let params = protocol::from_get(url.as_deref(), s.limits.max_query_bytes);
    respond(s, params, &headers).await
}

async fn query_post(
    State(s): State<Arc<Server>>,
    RawQuery(url): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    // The head arrived in time (the connection layer); the body gets as long again.
    let read = axum::body::to_bytes(body, s.limits.max_body_bytes);
    let body = match tokio::time::timeout(s.body_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(_)) => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!(
                    "the request body is larger than this server's limit of {} bytes (or broken \
                     off)",
                    s.limits.max_body_bytes
                ),
            )
        }
        Err(_) => {
            return text(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the request body did not arrive within {} ms",
                    s.body_timeout.as_millis()
                ),
            )
        }
    };
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let params = protocol::from_post(
        url.as_deref(),
        content_type,
        &body,
        s.limits.max_query_bytes,
    );
    respond(s, params, &headers).await
}

/// Answers a query request; with `-v`, logs its status, time and the query's start on stderr.
async fn respond(s: Arc<Server>, params: Result<Params, Reject>, headers: &HeaderMap) -> Response {
    let started = Instant::now();
    let preview = crate::out::verbose().then(|| match &params {
        Ok(p) => log_text(&p.query, 100),
        Err(_) => String::new(),
    });
    let response = answer(s, params, headers).await;
    if let Some(shown) = preview {
        eprintln!(
            "{} {:.1} ms {shown}",
            response.status().as_u16(),
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    response
}

/// A query's text for the log: white space runs as one space, control and other invisible
/// characters escaped (`\u{1b}`), at most `max` characters: a query cannot forge log lines or
/// drive the terminal.
fn log_text(query: &str, max: usize) -> String {
    let mut out = String::new();
    for (i, word) in query.split_whitespace().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        for c in word.chars() {
            if c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}') {
                out.extend(c.escape_unicode());
            } else {
                out.push(c);
            }
        }
    }
    match out.char_indices().nth(max) {
        Some((at, _)) => out[..at].to_owned(),
        None => out,
    }
}

/// Negotiates the format, waits for a slot, runs the query on a blocking thread, answers.
async fn answer(s: Arc<Server>, params: Result<Params, Reject>, headers: &HeaderMap) -> Response {
    let accept = match headers.get(header::ACCEPT).map(|v| v.to_str()) {
        Some(Err(_)) => return text(StatusCode::BAD_REQUEST, "the Accept header is not ASCII"),
        Some(Ok(a)) => Some(a),
        None => None,
    };
    let (params, format) = match (params, protocol::negotiate(accept)) {
        (Ok(p), Ok(f)) => (p, f),
        (Err(r), _) | (_, Err(r)) => return text(r.status, &r.message),
    };
    let (timeout, max_rows) = s.limits.for_request(&params);
    // Dropped with this future when the client goes away: the engine stops at its next check.
    let cancel = CancelOnDrop(Arc::new(AtomicBool::new(false)));
    let mut request = Request {
        text: params.query,
        format,
        timeout,
        max_rows,
        max_bytes: s.limits.max_response_bytes,
        cancel: cancel.0.clone(),
        lane: Lane::Main,
        light_limit: s.limits.light_limit,
    };
    let mut heavy = s.admission.is_heavy(&request.text);
    let mut starved = 0;
    loop {
        let slot = match s.admission.admit(heavy).await {
            Ok(slot) => slot,
            Err(busy) => return busy_response(&busy, &s.limits),
        };
        request.lane = slot.lane;
        let (head, slot) = run_query(&s, &request, slot).await;
        match head {
            Some(Head::Whole(Err(Failure::Heavy))) => {
                s.admission.mark_heavy(&request.text);
                heavy = true;
            }
            // Twice unlucky: the main lane's full time limit, not remembered.
            Some(Head::Whole(Err(Failure::Starved))) => {
                starved += 1;
                heavy = starved >= 2;
            }
            Some(Head::Whole(Ok(answer))) => {
                return with_slot(
                    ok_response(answer.content_type.unwrap_or(format.content_type()), answer),
                    slot,
                    cancel,
                )
            }
            Some(Head::Whole(Err(failure))) => return failure_response(failure),
            Some(Head::Stream { content_type, body }) => {
                // The stream is the query: dropped unsent, it cancels the query.
                return with_slot(stream_response(content_type, body), slot, cancel);
            }
            None => {
                return text(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal error while answering the query",
                )
            }
        }
    }
}

/// Runs `request` in `slot` on a blocking thread: its head (`None` if the thread failed) and the
/// slot, which the answer's body keeps until it is sent.
async fn run_query(s: &Arc<Server>, request: &Request, slot: Slot) -> (Option<Head>, Arc<Slot>) {
    let slot = Arc::new(slot);
    let (tx, rx) = tokio::sync::oneshot::channel();
    let worker = s.clone();
    let req = request.clone();
    let held = slot.clone();
    let thread = tokio::task::spawn_blocking(move || {
        let _slot = held;
        worker.engine.execute(&req, tx);
    });
    let head = rx.await.ok();
    if head.is_none() {
        if let Err(e) = thread.await {
            eprintln!("error: a query's thread failed: {e}");
        }
    }
    (head, slot)
}

struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Relaxed);
    }
}

/// The response, keeping its query's slot and cancel flag until its body is sent or dropped.
fn with_slot(response: Response, slot: Arc<Slot>, cancel: CancelOnDrop) -> Response {
    response.map(|body| Body::new(Guarded::new(body, (slot, cancel))))
}

fn stream_response(
    content_type: &'static str,
    body: tokio::sync::mpsc::UnboundedReceiver<stream::Piece>,
) -> Response {
    let mut response = Response::new(Body::new(ChannelBody(body)));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // What the headers would say is known at the end: then in trailers.
    h.insert(
        header::TRAILER,
        HeaderValue::from_static("x-gpsense-truncated, x-gpsense-warning"),
    );
    response
}

fn ok_response(content_type: &'static str, answer: Answer) -> Response {
    let mut response = Response::new(Body::from(answer.body));
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if answer.truncated {
        h.insert("x-gpsense-truncated", HeaderValue::from_static("true"));
    }
    if let Some(w) = answer.warning.and_then(|w| header_text(&w)) {
        h.insert("x-gpsense-warning", w);
    }
    response
}

fn failure_response(failure: Failure) -> Response {
    match failure {
        Failure::BadQuery(message) => text(StatusCode::BAD_REQUEST, &message),
        Failure::TimedOut(limit) => {
            let mut r = text(
                StatusCode::SERVICE_UNAVAILABLE,
                &format!(
                    "query timed out: it ran past its time limit of {} ms; narrow it (a concept, \
                     a LIMIT) or, below the server's limit, ask for more with the `timeout` \
                     parameter",
                    limit.as_millis()
                ),
            );
            r.headers_mut()
                .insert("x-gpsense-timed-out", HeaderValue::from_static("true"));
            r
        }
        // Nobody is listening; the status is for the log.
        Failure::Cancelled => text(StatusCode::BAD_REQUEST, "the client went away"),
        // Retried before it gets here.
        Failure::Heavy | Failure::Starved => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal error: a light query was not retried",
        ),
        Failure::Engine(e @ MatchError::Device(_)) => {
            eprintln!("error: {e}");
            text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
        }
        // The query needs more than the server allows (a budget, a product of components).
        Failure::Engine(e) => text(StatusCode::BAD_REQUEST, &e.to_string()),
        Failure::Internal(m) => {
            eprintln!("error: {m}");
            text(StatusCode::INTERNAL_SERVER_ERROR, m)
        }
    }
}

fn busy_response(busy: &Busy, limits: &Limits) -> Response {
    let mut r = text(StatusCode::SERVICE_UNAVAILABLE, &busy.message(limits));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// A text/plain response, the message on one or more lines ending with a line break.
fn text(status: StatusCode, message: &str) -> Response {
    let body = format!("{}\n", message.trim_end());
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

/// A message as a header value: one line of visible ASCII (others become `?`), at most 300 bytes.
pub(crate) fn header_text(message: &str) -> Option<HeaderValue> {
    let line: String = message
        .chars()
        .take(300)
        .map(|c| {
            if c == ' ' || c.is_ascii_graphic() {
                c
            } else {
                '?'
            }
        })
        .collect();
    HeaderValue::from_str(&line).ok()
}

async fn health(State(s): State<Arc<Server>>) -> Response {
    let g = s.engine.matcher.graph();
    let mut origin = String::new();
    results::json_string(&mut origin, &s.origin);
    let batching = s
        .engine
        .batcher
        .as_ref()
        .map_or_else(|| serde_json::json!({"on": false}), batch::Batcher::health);
    let body = format!(
        "{{\"status\":\"ok\",\"graph\":{origin},\"nodes\":{},\"edges\":{},\"relations\":{},\
         \"running\":{},\"waiting\":{},\"max_concurrent\":{},\"batching\":{batching}}}\n",
        g.node_count(),
        g.edge_count(),
        g.relation_count(),
        s.admission.running(&s.limits),
        s.admission.waiting(),
        s.limits.max_concurrent
    );
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The workbench for a browser, the endpoint's description for anyone else.
async fn index(headers: HeaderMap) -> Response {
    if page::wants_html(&headers) {
        return page::page();
    }
    text(StatusCode::OK, page::HELP)
}

async fn help() -> Response {
    text(StatusCode::OK, page::HELP)
}

async fn examples_json(State(s): State<Arc<Server>>) -> Response {
    json_response(s.examples.clone())
}

fn json_response(body: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// `/explain?query=...`: the query's graph, plan and figures (`explain.rs`).
async fn explain_get(State(s): State<Arc<Server>>, RawQuery(url): RawQuery) -> Response {
    let params = match protocol::from_get(url.as_deref(), s.limits.max_query_bytes) {
        Ok(p) => p,
        Err(r) => return text(r.status, &r.message),
    };
    let (timeout, _) = s.limits.for_request(&params);
    let shown = log_line("explain", &params.query);
    json_job(s, shown, move |server, stop| {
        explain::explain(&server.engine, &params.query, timeout, &stop.shared)
    })
    .await
}

/// `/trust?query=...&k=N`: TruST's `k` best matchings (`trust.rs`), at most [`trust::MAX_K`] and
/// the row cap.
async fn trust_get(State(s): State<Arc<Server>>, RawQuery(url): RawQuery) -> Response {
    let params = match protocol::from_get(url.as_deref(), s.limits.max_query_bytes) {
        Ok(p) => p,
        Err(r) => return text(r.status, &r.message),
    };
    let k = match trust_k(url.as_deref()) {
        Ok(k) => k,
        Err(message) => return text(StatusCode::BAD_REQUEST, &message),
    };
    let (timeout, max_rows) = s.limits.for_request(&params);
    let k = k.min(usize::try_from(max_rows).unwrap_or(usize::MAX));
    let shown = log_line("trust", &params.query);
    json_job(s, shown, move |server, stop| {
        let search = trust::Search {
            text: &params.query,
            k,
            timeout,
            cancel: stop.pooled.0,
        };
        trust::search(&server.engine, &server.trust, &search)
    })
    .await
}

/// The `k` parameter: 1 to [`trust::MAX_K`], 10 when absent.
fn trust_k(url: Option<&str>) -> Result<usize, String> {
    let given = form_urlencoded::parse(url.unwrap_or("").as_bytes()).find(|(n, _)| n == "k");
    let Some((_, v)) = given else {
        return Ok(10);
    };
    match v.parse::<usize>() {
        Ok(k) if (1..=trust::MAX_K).contains(&k) => Ok(k),
        _ => Err(format!(
            "k={v:?}: the number of matchings, a whole number from 1 to {}",
            trust::MAX_K
        )),
    }
}

/// A JSON job's stop flags, raised when its request is dropped (the client went away): the
/// engine's shared flag and TruST's `'static` one.
struct Stop {
    shared: Arc<AtomicBool>,
    pooled: trust::Flag,
}

struct RaiseOnDrop(Arc<Stop>);

impl Drop for RaiseOnDrop {
    fn drop(&mut self) {
        self.0.shared.store(true, Relaxed);
        self.0.pooled.0.store(true, Relaxed);
    }
}

/// With `-v`, what the log says of a workbench request: the endpoint and the query's start.
fn log_line(endpoint: &str, query: &str) -> Option<String> {
    crate::out::verbose().then(|| format!("/{endpoint} {}", log_text(query, 100)))
}

/// Runs `job` in a main slot on a blocking thread (as a query runs, under the same admission:
/// a busy server answers 503), its JSON as the response; `shown` is logged with its status.
async fn json_job<F>(s: Arc<Server>, shown: Option<String>, job: F) -> Response
where
    F: FnOnce(&Server, &Stop) -> Result<serde_json::Value, Failure> + Send + 'static,
{
    let started = Instant::now();
    let response = run_job(s, job).await;
    if let Some(shown) = shown {
        eprintln!(
            "{} {:.1} ms {shown}",
            response.status().as_u16(),
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    response
}

async fn run_job<F>(s: Arc<Server>, job: F) -> Response
where
    F: FnOnce(&Server, &Stop) -> Result<serde_json::Value, Failure> + Send + 'static,
{
    let slot = match s.admission.admit(true).await {
        Ok(slot) => slot,
        Err(busy) => return busy_response(&busy, &s.limits),
    };
    let stop = Arc::new(Stop {
        shared: Arc::new(AtomicBool::new(false)),
        pooled: trust::Flag::take(),
    });
    // Dropped with this future when the client goes away: the job stops at its next check.
    // Dropped after the answer too, harmlessly: the pooled flag is lowered when the last holder
    // of `stop` lets go.
    let _raise = RaiseOnDrop(stop.clone());
    let worker = s.clone();
    let done = tokio::task::spawn_blocking(move || {
        let _slot = slot;
        job(&worker, &stop)
    })
    .await;
    match done {
        Ok(Ok(value)) => json_response(value.to_string()),
        Ok(Err(failure)) => failure_response(failure),
        Err(e) => {
            eprintln!("error: a request's thread failed: {e}");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error while answering the request",
            )
        }
    }
}

async fn not_found() -> Response {
    text(
        StatusCode::NOT_FOUND,
        "not found: queries go to /query, health checks to /health",
    )
}

//! The connection layer, as a production HTTP server has it: a cap on open connections (at it, the
//! oldest idle connection makes room; with none idle, a 503 and a close), a time limit on a request's head, on an idle keep-alive connection and on
//! a blocked write, back-off when the process runs out of file descriptors, and the descriptor
//! limit raised at start. Idle and slow clients then cost a bounded number of descriptors, for a
//! bounded time, and cannot keep others out.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::{sleep, Instant, Sleep};

/// Bounds of the connection layer, from the command line.
#[derive(Clone, Debug)]
pub struct ConnLimits {
    pub max_connections: usize,
    /// From waiting for a request's head (a new connection, or the end of the previous response)
    /// to having all of it.
    pub header_timeout: Duration,
    /// A keep-alive connection with no request in flight and no byte arriving is closed.
    pub idle_timeout: Duration,
    /// A response that cannot be written for this long (the client reads nothing) is dropped.
    pub write_timeout: Duration,
}

/// Refusals written at once while over the cap; beyond them the connection is simply closed.
const MAX_REFUSING: usize = 64;

const REFUSAL: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\nconnection: close\r\ncontent-length: 71\r\n\r\n\
server busy: too many open connections (the most it allows); retry later";

/// Accepts connections until `stop` turns true, serving each with `app` within `limits`.
/// `open` holds a permit per open connection (the caller waits for them all at shutdown).
pub async fn accept_loop(
    listener: TcpListener,
    app: Router,
    limits: ConnLimits,
    open: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let refusing = Arc::new(AtomicUsize::new(0));
    let mut exhausted_logged: Option<Instant> = None;
    let mut conns = Registry::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stop) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                back_off(&e, &mut exhausted_logged).await;
                continue;
            }
        };
        let Some(permit) = admit(&open, &mut conns).await else {
            refuse(stream, &refusing);
            continue;
        };
        let app = app.clone();
        let limits = limits.clone();
        let stop = stop.clone();
        let state = conns.add();
        tokio::spawn(async move {
            serve_connection(stream, app, &limits, stop, state).await;
            drop(permit);
        });
    }
}

/// A place for a new connection: a free one, or, at the cap, one an idle connection (the oldest
/// with no request in flight) gives up. So idle and slow-head clients cannot fill the server:
/// only connections with requests in flight, which the slots and the queue bound, keep theirs.
async fn admit(open: &Arc<Semaphore>, conns: &mut Registry) -> Option<OwnedSemaphorePermit> {
    if let Ok(permit) = open.clone().try_acquire_owned() {
        return Some(permit);
    }
    if !conns.evict_oldest_idle() {
        return None;
    }
    tokio::time::timeout(Duration::from_millis(200), open.clone().acquire_owned())
        .await
        .ok()?
        .ok()
}

/// What the accept loop knows of a connection: whether it has a request in flight, and how to
/// ask it to close.
#[derive(Default)]
struct ConnState {
    in_flight: AtomicUsize,
    evict: Notify,
}

/// The open connections, oldest first (closed ones are dropped as they are met).
#[derive(Default)]
struct Registry(VecDeque<Weak<ConnState>>);

impl Registry {
    fn add(&mut self) -> Arc<ConnState> {
        let state = Arc::new(ConnState::default());
        self.0.push_back(Arc::downgrade(&state));
        // Keep the list near the open connections: drop closed ones from the front.
        while self.0.front().is_some_and(|w| w.strong_count() == 0) {
            self.0.pop_front();
        }
        state
    }

    /// Asks the oldest idle connection to close; whether there was one.
    fn evict_oldest_idle(&mut self) -> bool {
        self.0.retain(|w| w.strong_count() > 0);
        let oldest = self.0.iter().enumerate().find_map(|(i, w)| {
            let state = w.upgrade()?;
            (state.in_flight.load(Relaxed) == 0).then_some((i, state))
        });
        let Some((i, state)) = oldest else {
            return false;
        };
        self.0.remove(i);
        state.evict.notify_one();
        true
    }
}

/// After a failed accept: out of descriptors (the pending connection stays in the backlog) waits
/// for some to close, noting it at most once a minute; other errors (a connection reset before
/// it was accepted) are the client's and cost a moment.
async fn back_off(e: &io::Error, logged: &mut Option<Instant>) {
    let exhausted = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
        || e.kind() == io::ErrorKind::OutOfMemory;
    if !exhausted {
        sleep(Duration::from_millis(5)).await;
        return;
    }
    if logged.is_none_or(|at| at.elapsed() > Duration::from_secs(60)) {
        eprintln!(
            "warning: out of file descriptors ({e}): new connections wait; lower --max-connections \
             or raise `ulimit -n`"
        );
        *logged = Some(Instant::now());
    }
    sleep(Duration::from_millis(100)).await;
}

/// Over the cap: a short 503, written without waiting on the client, then the close.
fn refuse(mut stream: TcpStream, refusing: &Arc<AtomicUsize>) {
    if refusing.fetch_add(1, Relaxed) >= MAX_REFUSING {
        refusing.fetch_sub(1, Relaxed);
        return;
    }
    let refusing = refusing.clone();
    tokio::spawn(async move {
        // Written, then the request read and dropped: a close with unread bytes would be a reset,
        // which may reach the client before the 503.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            stream.write_all(REFUSAL).await?;
            stream.shutdown().await?;
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<_, io::Error>(())
        })
        .await;
        refusing.fetch_sub(1, Relaxed);
    });
}

async fn serve_connection(
    stream: TcpStream,
    app: Router,
    limits: &ConnLimits,
    mut stop: watch::Receiver<bool>,
    state: Arc<ConnState>,
) {
    let _ = stream.set_nodelay(true);
    let io = Watched::new(stream, limits, state.clone());
    let service = TowerToHyperService::new(InFlight::new(app, state.clone()));
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            () = stopped(&mut stop) => {
                // Finish the request in flight, take no other.
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
                return;
            }
            // Evicted while idle: closed (a request that began meanwhile keeps it open).
            () = state.evict.notified() => {
                if state.in_flight.load(Relaxed) == 0 {
                    return;
                }
            }
        }
    }
}

async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// Counts a connection's requests from their arrival until their response body is dropped (sent
/// whole or abandoned): a connection with none is idle.
#[derive(Clone)]
struct InFlight {
    app: Router,
    state: Arc<ConnState>,
}

impl InFlight {
    fn new(app: Router, state: Arc<ConnState>) -> Self {
        InFlight { app, state }
    }
}

impl tower_service::Service<axum::http::Request<hyper::body::Incoming>> for InFlight {
    type Response = axum::response::Response;
    type Error = std::convert::Infallible;
    type Future =
        Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send + 'static>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::http::Request<hyper::body::Incoming>) -> Self::Future {
        let guard = RequestMark::new(self.state.clone());
        let mut app = self.app.clone();
        Box::pin(async move {
            let response =
                tower_service::Service::call(&mut app, req.map(axum::body::Body::new)).await?;
            Ok(
                response
                    .map(|body| axum::body::Body::new(super::stream::Guarded::new(body, guard))),
            )
        })
    }
}

/// One request in flight, until dropped.
struct RequestMark(Arc<ConnState>);

impl RequestMark {
    fn new(state: Arc<ConnState>) -> Self {
        state.in_flight.fetch_add(1, Relaxed);
        RequestMark(state)
    }
}

impl Drop for RequestMark {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

/// The socket with two clocks: a write that stays blocked past the write timeout fails, and a
/// read that waits past the idle timeout while no request is in flight fails. Either failure
/// ends the connection, dropping whatever response it was sending.
struct Watched {
    inner: TcpStream,
    state: Arc<ConnState>,
    idle_timeout: Duration,
    write_timeout: Duration,
    idle: Option<Pin<Box<Sleep>>>,
    blocked: Option<Pin<Box<Sleep>>>,
}

impl Watched {
    fn new(inner: TcpStream, limits: &ConnLimits, state: Arc<ConnState>) -> Self {
        Watched {
            inner,
            state,
            idle_timeout: limits.idle_timeout,
            write_timeout: limits.write_timeout,
            idle: None,
            blocked: None,
        }
    }
}

/// Arms `clock` for `after` if it is not running; whether it has run out.
fn expired(clock: &mut Option<Pin<Box<Sleep>>>, after: Duration, cx: &mut Context<'_>) -> bool {
    let sleep = clock.get_or_insert_with(|| Box::pin(sleep(after)));
    sleep.as_mut().poll(cx).is_ready()
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Pending => {
                if this.state.in_flight.load(Relaxed) > 0 {
                    this.idle = None;
                } else if expired(&mut this.idle, this.idle_timeout, cx) {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "idle connection closed",
                    )));
                }
                Poll::Pending
            }
            ready => {
                this.idle = None;
                ready
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Pending => {
                if expired(&mut this.blocked, this.write_timeout, cx) {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client read nothing for the write timeout",
                    )));
                }
                Poll::Pending
            }
            ready => {
                this.blocked = None;
                ready
            }
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Raises the soft limit on open descriptors to the hard limit (Linux's usual 1,024 soft limit
/// would cap connections far below what the process may hold); returns the limit in force.
pub fn raise_fd_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write the struct passed.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

//! Processes and workers: timely's conventions (`--workers W --processes P --process I --hostfile
//! H`, one `host:port` line per process), with our own connection set-up so that it is bounded in
//! time, prints nothing on stdout, and checks that every process runs the same query on the same
//! graph cut the same way before any data flows.
//!
//! A peer that dies breaks its sockets; timely's network threads then panic. A panic hook turns that
//! into a failure every worker sees between steps, so each process ends the query with an error
//! naming the peer instead of waiting for it. A peer that stops without breaking anything is found
//! by the heartbeat of `connect`, which then shuts its sockets.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::zero_copy::stream::Stream;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::{AllocatorBuilder, Hooks};
use timely::worker::Worker;
use timely::WorkerConfig;

use crate::frames::{Frames, NOT_TIMELY};
pub use crate::hostfile::read_hostfile;
use crate::DistError;

/// The most processes and workers per process a cluster may have.
pub const MAX_PROCESSES: usize = 1024;
pub const MAX_WORKERS: usize = 256;

/// Where this process stands in the cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub processes: usize,
    pub process: usize,
    pub workers: usize,
    /// One address per process (empty for a single process).
    pub hosts: Vec<String>,
    /// How long to wait for every peer to connect (at most [`MAX_CONNECT_TIMEOUT`]).
    pub connect_timeout: Duration,
}

/// How every error that ends a running query across processes ends: a count or ASK is not
/// printed, but rows stream as they are found.
pub const ABANDONED: &str =
    "the query is abandoned (any rows already printed are only part of its answer)";

/// The longest wait for the peers to connect.
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(3600);

/// Bytes this process sent to and received from its peers.
#[derive(Clone, Debug, Default)]
pub struct Traffic {
    sent: Arc<AtomicU64>,
    received: Arc<AtomicU64>,
}

impl Traffic {
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }
    pub fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// A TCP stream that counts its bytes and checks what it reads against timely's framing.
struct Counted {
    inner: TcpStream,
    traffic: Traffic,
    /// Where the stream read stands (each clone reads from the start of what it reads).
    frames: Frames,
    cluster: (usize, usize, usize),
}

impl Counted {
    fn new(inner: TcpStream, traffic: &Traffic, c: &Cluster) -> Counted {
        let cluster = (c.process, c.workers, c.processes);
        Counted {
            inner,
            traffic: traffic.clone(),
            frames: Frames::new(cluster.0, cluster.1, cluster.2),
            cluster,
        }
    }
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.traffic.received.fetch_add(n as u64, Ordering::Relaxed);
        self.frames
            .check(&buf[..n])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(n)
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.traffic.sent.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl Stream for Counted {
    fn try_clone(&self) -> io::Result<Self> {
        let (process, workers, processes) = self.cluster;
        Ok(Counted {
            inner: self.inner.try_clone()?,
            traffic: self.traffic.clone(),
            frames: Frames::new(process, workers, processes),
            cluster: self.cluster,
        })
    }
    fn set_nonblocking(&self, nonblocking: bool) -> io::Result<()> {
        self.inner.set_nonblocking(nonblocking)
    }
    fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.shutdown(how)
    }
}

/// The first failure of a network thread (or a worker it poisoned), for the workers to see.
fn failure() -> &'static Mutex<Option<String>> {
    static FAILURE: OnceLock<Mutex<Option<String>>> = OnceLock::new();
    FAILURE.get_or_init(|| Mutex::new(None))
}

/// Whether a peer failed, and how.
pub fn peer_failure() -> Option<String> {
    failure().lock().ok().and_then(|f| f.clone())
}

/// Records that the cluster cannot finish (the first reason stays), so that [`execute`] leaves
/// the connections to a stuck peer alone instead of waiting to close them.
pub fn give_up(why: String) {
    if let Ok(mut f) = failure().lock() {
        f.get_or_insert(why);
    }
}

/// Routes panics of timely's network threads to [`peer_failure`] instead of stderr.
fn install_panic_hook(hosts: Vec<String>) {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let thread = std::thread::current().name().unwrap_or("").to_owned();
            let message = info
                .payload()
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            let network = thread.starts_with("timely:")
                || message.contains("timely communication error")
                || message.contains("MergeQueue poisoned")
                || message.starts_with("Send thread panic")
                || message.starts_with("Recv thread panic");
            if !network {
                previous(info);
                return;
            }
            let peer = thread
                .rsplit_once('-')
                .and_then(|(_, i)| i.parse::<usize>().ok());
            let who = match peer {
                Some(i) => format!("process {i} ({})", hosts.get(i).map_or("?", String::as_str)),
                None => "a peer process".to_owned(),
            };
            if let Ok(mut f) = failure().lock() {
                f.get_or_insert_with(|| {
                    let what = match message.split_once(NOT_TIMELY) {
                        Some((_, detail)) => format!(
                            "sent what no process of this cluster sends ({NOT_TIMELY}{detail})"
                        ),
                        None => {
                            format!("stopped or broke its connection during the query ({message})")
                        }
                    };
                    format!("{who} {what}; {ABANDONED}")
                });
            }
            let poisoned = message.contains("MergeQueue poisoned")
                || message.contains("timely communication error");
            if thread.starts_with("timely:work-") && poisoned {
                // Unwinding a worker whose channels are poisoned drops endpoints that flush into
                // them and panic again, which aborts the process before it can report the peer.
                // The worker stops here instead; `execute` sees the failure and never joins it.
                loop {
                    std::thread::park();
                }
            }
        }));
    });
}

/// Keepalive probes after 5 s of silence, every 2 s, 3 unanswered ending the connection: a peer
/// whose machine vanished (no FIN, no RST) then fails the query in about 11 s instead of never.
/// (A peer that is alive but stuck answers the probes; the time limit covers that one.)
fn watch_for_silence(stream: &TcpStream) {
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(5))
        .with_interval(Duration::from_secs(2))
        .with_retries(3);
    let _ = socket2::SockRef::from(stream).set_tcp_keepalive(&keepalive);
}

/// Runs `func` on every worker of this process (`c.workers` threads), connected to the other
/// processes; returns each worker's result, in worker order, or the first peer failure.
pub fn execute<T, F>(
    c: &Cluster,
    agreement: u64,
    traffic: &Traffic,
    func: F,
) -> Result<Vec<T>, DistError>
where
    T: Send + 'static,
    F: Fn(&mut Worker) -> T + Send + Sync + 'static,
{
    if c.workers == 0 || c.workers > MAX_WORKERS {
        return Err(DistError::Setup(format!(
            "--workers {}: between 1 and {MAX_WORKERS}",
            c.workers
        )));
    }
    if c.processes == 0 || c.processes > MAX_PROCESSES || c.process >= c.processes {
        return Err(DistError::Setup(format!(
            "--process {} of --processes {}: the index counts from 0 and must be below the count \
             (at most {MAX_PROCESSES} processes)",
            c.process, c.processes
        )));
    }
    if c.processes > 1 {
        crate::hostfile::check_hosts(&c.hosts, c.processes)?;
    }
    if c.connect_timeout > MAX_CONNECT_TIMEOUT {
        return Err(DistError::Setup(format!(
            "a connect timeout of {:.0?}: at most {MAX_CONNECT_TIMEOUT:.0?}",
            c.connect_timeout
        )));
    }
    let (builders, guard): (Vec<AllocatorBuilder>, Box<dyn std::any::Any + Send>) = if c.processes
        == 1
    {
        let b = ProcessBuilder::new_typed_vector(c.workers, Hooks::default().refill, None)
            .into_iter()
            .map(AllocatorBuilder::Process)
            .collect();
        (b, Box::new(()))
    } else {
        install_panic_hook(c.hosts.clone());
        let connections = crate::connect::connect(c, agreement)?;
        let sockets: Vec<Option<Counted>> = connections
            .data
            .into_iter()
            .map(|s| {
                s.map(|inner| {
                    let _ = inner.set_nodelay(true);
                    watch_for_silence(&inner);
                    Counted::new(inner, traffic, c)
                })
            })
            .collect();
        let hooks = Hooks::default();
        let local = ProcessBuilder::new_typed_vector(c.workers, hooks.refill.clone(), None);
        let (tcp, guard) =
            initialize_networking_from_sockets(local, sockets, c.process, c.workers, hooks)
                .map_err(|e| DistError::Peer(format!("cannot start the network threads: {e}")))?;
        (
            tcp.into_iter().map(AllocatorBuilder::Tcp).collect(),
            // The heartbeat runs until the network threads are joined: peers may still be
            // finishing. (Fields drop in order.)
            Box::new((NetworkGuard(Some(Box::new(guard))), connections.heartbeat)),
        )
    };
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    let tx = Mutex::new(tx);
    let guards =
        timely::execute::execute_from(builders, guard, WorkerConfig::default(), move |w| {
            let out = func(w);
            if let Ok(tx) = tx.lock() {
                let _ = tx.send((w.index(), out));
            }
        })
        .map_err(DistError::Setup)?;
    let mut results: Vec<Option<T>> = (0..c.workers).map(|_| None).collect();
    let mut got = 0;
    while got < c.workers {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok((i, out)) => {
                let slot = i % c.workers;
                if results[slot].is_none() {
                    got += 1;
                }
                results[slot] = Some(out);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(why) = peer_failure() {
                    // The workers may be blocked on the broken connection: do not join them.
                    abandon(guards);
                    return Err(DistError::Peer(why));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if got < c.workers {
        abandon(guards);
        return Err(DistError::Peer(peer_failure().unwrap_or_else(|| {
            "a worker thread stopped without an answer (see the message above)".into()
        })));
    }
    if let Some(why) = peer_failure() {
        // Closing the connections would wait on the peer that failed.
        abandon(guards);
        return Err(DistError::Peer(why));
    }
    // A worker may still panic as it tears down a connection to a peer that died: join without
    // unwinding, then report the peer.
    let joined_cleanly = guards.join().iter().all(Result::is_ok);
    if let Some(why) = peer_failure() {
        return Err(DistError::Peer(why));
    }
    if !joined_cleanly {
        return Err(DistError::Peer(
            "a worker thread failed while closing its connections".into(),
        ));
    }
    Ok(results.into_iter().flatten().collect())
}

/// Leaves a failed cluster's threads unjoined (joining would wait on the failed peer), after a
/// moment with the connections still open: the other processes then see the original failure
/// themselves rather than this process leaving, and report the peer that really failed (a silent
/// one is found at each process's own heartbeat, up to one beat apart).
fn abandon<T>(guards: T) {
    std::thread::sleep(crate::connect::HEARTBEAT + Duration::from_millis(500));
    std::mem::forget(guards);
}

/// Timely's network threads, joined on drop; a thread that panicked (its peer died) is already in
/// [`peer_failure`], so its panic is caught here rather than taking the process down.
struct NetworkGuard(Option<Box<dyn std::any::Any + Send>>);

impl Drop for NetworkGuard {
    fn drop(&mut self) {
        let Some(inner) = self.0.take() else { return };
        if std::thread::panicking() {
            std::mem::forget(inner);
            return;
        }
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(inner)));
    }
}

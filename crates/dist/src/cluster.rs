//! Processes and workers: timely's conventions (`--workers W --processes P --process I --hostfile
//! H`, one `host:port` line per process), with our own connection set-up so that it is bounded in
//! time, prints nothing on stdout, and checks that every process runs the same query on the same
//! graph cut the same way before any data flows.
//!
//! A peer that dies breaks its sockets; timely's network threads then panic. A panic hook turns that
//! into a failure every worker sees between steps, so each process ends the query with an error
//! naming the peer instead of waiting for it.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use timely::communication::allocator::zero_copy::initialize::initialize_networking_from_sockets;
use timely::communication::allocator::zero_copy::stream::Stream;
use timely::communication::allocator::ProcessBuilder;
use timely::communication::{AllocatorBuilder, Hooks};
use timely::worker::Worker;
use timely::WorkerConfig;

use crate::DistError;

/// The most processes and workers per process a cluster may have.
pub const MAX_PROCESSES: usize = 1024;
pub const MAX_WORKERS: usize = 256;

const MAGIC: u64 = 0x6770_7365_6e73_6501; // "gpsense", version 1

/// Where this process stands in the cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    pub processes: usize,
    pub process: usize,
    pub workers: usize,
    /// One address per process (empty for a single process).
    pub hosts: Vec<String>,
    /// How long to wait for every peer to connect.
    pub connect_timeout: Duration,
}

/// Reads a hostfile: one `host:port` per process, blank lines and `#` comments skipped.
pub fn read_hostfile(path: &Path, processes: usize) -> Result<Vec<String>, DistError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        DistError::Setup(format!("cannot read the hostfile {}: {e}", path.display()))
    })?;
    let hosts: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    if let Some(bad) = hosts.iter().find(|h| h.rsplit_once(':').is_none()) {
        return Err(DistError::Setup(format!(
            "{}: {bad:?} is not host:port",
            path.display()
        )));
    }
    if hosts.len() < processes {
        return Err(DistError::Setup(format!(
            "{} lists {} addresses for {processes} processes (one host:port line per process)",
            path.display(),
            hosts.len()
        )));
    }
    Ok(hosts.into_iter().take(processes).collect())
}

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

/// A TCP stream that counts its bytes.
struct Counted {
    inner: TcpStream,
    traffic: Traffic,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.traffic.received.fetch_add(n as u64, Ordering::Relaxed);
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
        Ok(Counted {
            inner: self.inner.try_clone()?,
            traffic: self.traffic.clone(),
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
                    format!(
                        "{who} stopped or broke its connection during the query ({message}); \
                         no answer is given, as it would be incomplete"
                    )
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

/// Connects to every peer (process `i` connects to the processes before it and accepts the ones
/// after it, as timely does) within `connect_timeout`, and checks each one's handshake: the same
/// process count, workers per process and `agreement` (a hash of the graph and the query).
fn connect(
    c: &Cluster,
    agreement: u64,
    traffic: &Traffic,
) -> Result<Vec<Option<Counted>>, DistError> {
    let deadline = Instant::now() + c.connect_timeout;
    let me = c.process;
    let listener = TcpListener::bind(&c.hosts[me]).map_err(|e| {
        DistError::Setup(format!(
            "process {me} cannot listen on {} (its hostfile line): {e}",
            c.hosts[me]
        ))
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| DistError::Setup(format!("cannot set up the listener: {e}")))?;
    let mut sockets: Vec<Option<TcpStream>> = (0..c.processes).map(|_| None).collect();
    for (i, slot) in sockets.iter_mut().enumerate().take(me) {
        let stream = loop {
            match TcpStream::connect(&c.hosts[i]) {
                Ok(s) => break s,
                Err(e) if Instant::now() >= deadline => {
                    return Err(DistError::Peer(format!(
                        "process {me} could not reach process {i} at {} within {:.0?}: {e} \
                         (is it started, with the same --hostfile?)",
                        c.hosts[i], c.connect_timeout
                    )))
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        };
        handshake(&stream, c, i, agreement, deadline)?;
        *slot = Some(stream);
    }
    while sockets.iter().skip(me + 1).any(Option::is_none) {
        match listener.accept() {
            Ok((stream, _)) => {
                stream
                    .set_nonblocking(false)
                    .map_err(|e| DistError::Setup(format!("cannot set up a connection: {e}")))?;
                let i = handshake(&stream, c, usize::MAX, agreement, deadline)?;
                if i <= me || i >= c.processes || sockets[i].is_some() {
                    return Err(DistError::Setup(format!(
                        "process {me}: a connection claims to be process {i}, which is not expected"
                    )));
                }
                sockets[i] = Some(stream);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<String> = (me + 1..c.processes)
                        .filter(|&i| sockets[i].is_none())
                        .map(|i| format!("{i} ({})", c.hosts[i]))
                        .collect();
                    return Err(DistError::Peer(format!(
                        "process {me}: no connection from process(es) {} within {:.0?} \
                         (are they started, with the same --hostfile?)",
                        missing.join(", "),
                        c.connect_timeout
                    )));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(DistError::Setup(format!("accepting a connection: {e}"))),
        }
    }
    Ok(sockets
        .into_iter()
        .map(|s| {
            s.map(|inner| {
                let _ = inner.set_nodelay(true);
                watch_for_silence(&inner);
                Counted {
                    inner,
                    traffic: traffic.clone(),
                }
            })
        })
        .collect())
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

/// Sends this process's header and reads the peer's; returns the peer's process index. `expect` is
/// the peer we connected to (`usize::MAX` when it connected to us).
fn handshake(
    stream: &TcpStream,
    c: &Cluster,
    expect: usize,
    agreement: u64,
    deadline: Instant,
) -> Result<usize, DistError> {
    let wait = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(1));
    let io_err = |e: io::Error| DistError::Peer(format!("handshake with a peer failed: {e}"));
    stream.set_read_timeout(Some(wait)).map_err(io_err)?;
    let mine = [
        MAGIC,
        c.process as u64,
        c.processes as u64,
        c.workers as u64,
        agreement,
    ];
    let mut bytes = Vec::with_capacity(40);
    for x in mine {
        bytes.extend_from_slice(&x.to_le_bytes());
    }
    (&*stream).write_all(&bytes).map_err(io_err)?;
    let mut theirs = [0u8; 40];
    (&*stream).read_exact(&mut theirs).map_err(io_err)?;
    stream.set_read_timeout(None).map_err(io_err)?;
    let word = |i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&theirs[i * 8..i * 8 + 8]);
        u64::from_le_bytes(w)
    };
    let peer = word(1) as usize;
    if word(0) != MAGIC {
        return Err(DistError::Setup(format!(
            "process {}: the peer at the other end is not a gpsense process of this version",
            c.process
        )));
    }
    if expect != usize::MAX && peer != expect {
        return Err(DistError::Setup(format!(
            "process {}: the address of process {expect} answered as process {peer}: \
             do all processes use the same hostfile?",
            c.process
        )));
    }
    if word(2) as usize != c.processes || word(3) as usize != c.workers {
        return Err(DistError::Setup(format!(
            "process {peer} runs with --processes {} --workers {}, this one with --processes {} \
             --workers {}: every process needs the same",
            word(2),
            word(3),
            c.processes,
            c.workers
        )));
    }
    if word(4) != agreement {
        return Err(DistError::Setup(format!(
            "process {peer} runs a different query, options or graph partition than process {}: \
             every process needs the same query and a part of the same `gpsense partition`",
            c.process
        )));
    }
    Ok(peer)
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
        let sockets = connect(c, agreement, traffic)?;
        let hooks = Hooks::default();
        let local = ProcessBuilder::new_typed_vector(c.workers, hooks.refill.clone(), None);
        let (tcp, guard) =
            initialize_networking_from_sockets(local, sockets, c.process, c.workers, hooks)
                .map_err(|e| DistError::Peer(format!("cannot start the network threads: {e}")))?;
        (
            tcp.into_iter().map(AllocatorBuilder::Tcp).collect(),
            Box::new(NetworkGuard(Some(Box::new(guard)))),
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
/// themselves rather than this process leaving, and report the peer that really failed.
fn abandon<T>(guards: T) {
    std::thread::sleep(Duration::from_millis(500));
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

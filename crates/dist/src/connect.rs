//! Connecting a cluster's processes, bounded in time and robust to what else reaches the port.
//!
//! Process `i` connects to the processes before it and accepts the ones after it, as timely does.
//! Each pair has two connections: the data one, handed to timely, and a control one on which both
//! sides send a heartbeat byte every second. A handshake on each checks that the two processes
//! agree (process count, workers, hostfile, graph cut and query). A connection that sends no
//! handshake, or not ours, is dropped and the wait goes on: a port scanner or a stray client
//! cannot hold up or end the set-up. A peer that stops sending even its heartbeat for [`SILENCE`]
//! (stopped, frozen, or its machine gone) has its connections shut, which ends the query on this
//! process with an error naming it instead of a wait without end.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cluster::{give_up, peer_failure, Cluster, ABANDONED};
use crate::DistError;

const MAGIC: u64 = 0x6770_7365_6e73_6502; // "gpsense", version 2
/// Magic, process, processes, workers, agreement, hostfile hash, role.
const HEADER: usize = 7 * 8;
const DATA: u64 = 0;
const CONTROL: u64 = 1;
/// The role a listening process announces (it answers whichever connection it accepted).
const LISTENER: u64 = 2;
/// Accepted connections still owing their handshake: beyond this many the oldest is dropped, so
/// that strangers on the port cannot hold descriptors without bound.
const MAX_PENDING: usize = 64;
/// How often each process sends its heartbeat, and reads its peers'.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How long a peer may send nothing, not even its heartbeat, before it is given up on.
pub const SILENCE: Duration = Duration::from_secs(20);

/// This process's open connections: the data ones by process (`None` for itself), and the
/// heartbeat that watches them until dropped.
pub(crate) struct Connections {
    pub data: Vec<Option<TcpStream>>,
    pub heartbeat: Heartbeat,
}

/// What this process says in a handshake, and checks in its peers'.
struct Me<'a> {
    c: &'a Cluster,
    agreement: u64,
    hostfile: u64,
}

/// Why a handshake was not accepted: a stranger (dropped, the wait goes on) or a peer whose
/// settings differ (the cluster cannot run).
enum Refusal {
    Stranger,
    Fatal(DistError),
}

impl Me<'_> {
    fn header(&self, role: u64) -> [u8; HEADER] {
        let c = self.c;
        let words = [
            MAGIC,
            c.process as u64,
            c.processes as u64,
            c.workers as u64,
            self.agreement,
            self.hostfile,
            role,
        ];
        let mut out = [0u8; HEADER];
        for (slot, w) in out.chunks_exact_mut(8).zip(words) {
            slot.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The peer's process index and role, if its header is ours and agrees with this process.
    fn check(&self, theirs: &[u8; HEADER]) -> Result<(usize, u64), Refusal> {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&theirs[i * 8..i * 8 + 8]);
            u64::from_le_bytes(w)
        };
        let (c, me) = (self.c, self.c.process);
        if word(0) != MAGIC || word(6) > LISTENER {
            return Err(Refusal::Stranger);
        }
        let peer = word(1);
        let fatal = |what: String| Err(Refusal::Fatal(DistError::Setup(what)));
        if word(2) != c.processes as u64 || word(3) != c.workers as u64 {
            return fatal(format!(
                "process {peer} runs with --processes {} --workers {}, process {me} with \
                 --processes {} --workers {}: every process needs the same",
                word(2),
                word(3),
                c.processes,
                c.workers
            ));
        }
        if word(5) != self.hostfile {
            return fatal(format!(
                "process {peer} has another hostfile than process {me}: every process needs the \
                 same one (the same lines in the same order)"
            ));
        }
        if word(4) != self.agreement {
            return fatal(format!(
                "process {peer} runs a different query, options or graph partition than process \
                 {me}: every process needs the same query and a part of the same `gpsense \
                 partition`"
            ));
        }
        if peer >= c.processes as u64 {
            return Err(Refusal::Stranger);
        }
        Ok((peer as usize, word(6)))
    }
}

/// Connects to every peer within `c.connect_timeout`: both connections of each pair, each
/// through the handshake. `agreement` is a hash of what the processes must agree on beyond their
/// counts and hostfile (the graph cut and the query).
pub(crate) fn connect(c: &Cluster, agreement: u64) -> Result<Connections, DistError> {
    let deadline = Instant::now()
        .checked_add(c.connect_timeout)
        .ok_or_else(|| DistError::Setup("the connect timeout is too long".into()))?;
    let me = Me {
        c,
        agreement,
        hostfile: xxhash_rust::xxh3::xxh3_64(c.hosts.join("\n").as_bytes()),
    };
    let listener = listen(c)?;
    let heartbeat = Heartbeat::start(c.hosts.clone());
    let mut links = Links::new(c.processes);
    for j in 0..c.process {
        for role in [DATA, CONTROL] {
            let stream = dial(&me, &listener, j, role, deadline, &links)?;
            links.add(j, role, stream, &heartbeat)?;
        }
    }
    accept_all(&me, &listener, deadline, &mut links, &heartbeat)?;
    // Timely reads and writes blocking, without a time limit of its own.
    for s in links.data.iter().flatten() {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(None);
    }
    Ok(Connections {
        data: links.data,
        heartbeat,
    })
}

/// This process's listening socket, on its hostfile line.
fn listen(c: &Cluster) -> Result<TcpListener, DistError> {
    let me = c.process;
    let at = &c.hosts[me];
    let addrs = lookup(at, c.connect_timeout).map_err(|e| {
        DistError::Setup(format!(
            "process {me} cannot listen on {at} (its address in the hostfile): {e}"
        ))
    })?;
    let listener = TcpListener::bind(&addrs[..]).map_err(|e| {
        let hint = if e.kind() == io::ErrorKind::AddrInUse {
            ": another program, or another process of this cluster, listens there (is --process \
             right, and the hostfile the same for every process?)"
        } else {
            ""
        };
        DistError::Setup(format!(
            "process {me} cannot listen on {at} (its address in the hostfile): {e}{hint}"
        ))
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| DistError::Setup(format!("cannot set up the listener: {e}")))?;
    Ok(listener)
}

/// The connections made so far, by process: data and control.
struct Links {
    data: Vec<Option<TcpStream>>,
    control: Vec<Option<TcpStream>>,
}

impl Links {
    fn new(processes: usize) -> Links {
        Links {
            data: (0..processes).map(|_| None).collect(),
            control: (0..processes).map(|_| None).collect(),
        }
    }

    fn slot(&mut self, role: u64) -> &mut Vec<Option<TcpStream>> {
        if role == DATA {
            &mut self.data
        } else {
            &mut self.control
        }
    }

    /// Keeps `stream` as process `j`'s connection of `role`, non-blocking until the set-up ends,
    /// and shows it to the heartbeat.
    fn add(
        &mut self,
        j: usize,
        role: u64,
        stream: TcpStream,
        heartbeat: &Heartbeat,
    ) -> Result<(), DistError> {
        let setup = |e: io::Error| DistError::Setup(format!("cannot set up a connection: {e}"));
        stream.set_nonblocking(true).map_err(setup)?;
        heartbeat.watch(j, role, stream.try_clone().map_err(setup)?);
        self.slot(role)[j] = Some(stream);
        Ok(())
    }

    fn missing(&self, after: usize) -> Vec<usize> {
        (after + 1..self.data.len())
            .filter(|&j| self.data[j].is_none() || self.control[j].is_none())
            .collect()
    }

    /// An error if a connected peer closed its connection or failed (the heartbeat's verdict)
    /// before the cluster started: it cannot join any more, so waiting for the others is vain.
    fn check(&self, me: &Me) -> Result<(), DistError> {
        if let Some(why) = peer_failure() {
            return Err(DistError::Peer(why));
        }
        let all = self.data.iter().chain(&self.control);
        for (k, s) in all.enumerate() {
            let Some(s) = s else { continue };
            let j = k % self.data.len();
            let closed = match s.peek(&mut [0u8; 1]) {
                Ok(0) => Some("closed its connection".to_owned()),
                Ok(_) => None,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                Err(e) => Some(format!("broke its connection ({e})")),
            };
            if let Some(what) = closed {
                return Err(DistError::Peer(format!(
                    "process {j} ({}) {what} before the cluster started: it failed or was \
                     stopped (its own error says why)",
                    me.c.hosts[j]
                )));
            }
        }
        Ok(())
    }
}

/// Connects to process `j` (before this one) for `role`, retrying until `deadline` while it
/// starts, and runs the handshake.
fn dial(
    me: &Me,
    listener: &TcpListener,
    j: usize,
    role: u64,
    deadline: Instant,
    links: &Links,
) -> Result<TcpStream, DistError> {
    let (c, i) = (me.c, me.c.process);
    let at = &c.hosts[j];
    let stream = loop {
        links.check(me)?;
        let left = deadline.saturating_duration_since(Instant::now());
        let tried = reach(at, left.max(Duration::from_millis(100)));
        match tried {
            Ok(s) => break s,
            Err(e) if left.is_zero() => {
                return Err(DistError::Peer(format!(
                    "process {i} could not reach process {j} at {at} within {:.0?}: {e} \
                     (is it started, with the same --hostfile?)",
                    c.connect_timeout
                )))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    if is_self(&stream, listener) {
        return Err(DistError::Setup(format!(
            "process {i}: the address of process {j}, {at}, is this process's own: the hostfile \
             names one address twice (under two spellings)"
        )));
    }
    let io_err = |e: io::Error| {
        let what = if matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ) {
            format!("accepted the connection but sent no complete handshake within {:.0?} (is a gpsense process of this cluster listening there?)", c.connect_timeout)
        } else {
            format!("ended the handshake ({e}): its own error says why")
        };
        DistError::Peer(format!("process {i}: process {j} at {at} {what}"))
    };
    // The whole handshake by the deadline (at least a second for it).
    let until = deadline.max(Instant::now() + Duration::from_secs(1));
    (&stream).write_all(&me.header(role)).map_err(io_err)?;
    let theirs = read_header(&stream, until).map_err(io_err)?;
    match me.check(&theirs) {
        Err(Refusal::Stranger) => Err(DistError::Setup(format!(
            "process {i}: the address of process {j}, {at}, answers, but not as a gpsense \
             process of this version"
        ))),
        Err(Refusal::Fatal(e)) => Err(e),
        Ok((peer, _)) if peer != j => Err(DistError::Setup(format!(
            "process {i}: the address of process {j}, {at}, answered as process {peer}: is \
             --process right on every process?"
        ))),
        Ok(_) => Ok(stream),
    }
}

/// The peer's handshake, read in full by `until`. Each read waits only for what is left of the time:
/// with one read timeout for the whole header, a peer sending it a byte at a time held the set-up
/// up to 56 times the connect timeout.
fn read_header(stream: &TcpStream, until: Instant) -> io::Result<[u8; HEADER]> {
    let mut got = [0u8; HEADER];
    let mut have = 0;
    while have < HEADER {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        match (&*stream).read(&mut got[have..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => have += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A connection to `at` (each of its addresses in turn), its lookup and each try bounded by
/// `limit`.
fn reach(at: &str, limit: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the name has no address");
    for addr in lookup(at, limit)? {
        match TcpStream::connect_timeout(&addr, limit) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// `at`'s addresses from the system's resolver, within `limit`: a resolver that does not answer
/// (a DNS server out of reach) held the set-up past `--connect-timeout-s`, for as long as the
/// system's own timeouts and retries took.
fn lookup(at: &str, limit: Duration) -> io::Result<Vec<SocketAddr>> {
    lookup_with(at, limit, |name: String| {
        name.to_socket_addrs().map(Iterator::collect)
    })
}

/// [`lookup`] through `resolve`, on a thread of its own: past `limit` it is left to finish
/// alone (the standard library's lookup cannot be cancelled), and the caller told so.
fn lookup_with(
    at: &str,
    limit: Duration,
    resolve: impl FnOnce(String) -> io::Result<Vec<SocketAddr>> + Send + 'static,
) -> io::Result<Vec<SocketAddr>> {
    // An address needs no resolver.
    if let Ok(addr) = at.parse::<SocketAddr>() {
        return Ok(vec![addr]);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let name = at.to_owned();
    std::thread::Builder::new()
        .name("gpsense-lookup".into())
        .spawn(move || {
            let _ = tx.send(resolve(name));
        })?;
    rx.recv_timeout(limit).unwrap_or_else(|_| {
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "looking up its name took more than {limit:.0?} (is the name server reachable?)"
            ),
        ))
    })
}

/// Whether `stream` reached this process's own listener.
fn is_self(stream: &TcpStream, listener: &TcpListener) -> bool {
    let (Ok(peer), Ok(own)) = (stream.peer_addr(), listener.local_addr()) else {
        return false;
    };
    peer == own
        || (own.ip().is_unspecified() && peer.port() == own.port() && peer.ip().is_loopback())
}

/// An accepted connection whose handshake has not arrived in full.
struct Pending {
    stream: TcpStream,
    from: SocketAddr,
    got: Vec<u8>,
}

/// Accepts both connections of every later process, answering each handshake as it comes;
/// strangers are dropped (and counted for the error if the wait runs out).
fn accept_all(
    me: &Me,
    listener: &TcpListener,
    deadline: Instant,
    links: &mut Links,
    heartbeat: &Heartbeat,
) -> Result<(), DistError> {
    let c = me.c;
    let mut pending: VecDeque<Pending> = VecDeque::new();
    let mut strangers = 0usize;
    let mut from: Vec<Option<SocketAddr>> = vec![None; 2 * c.processes];
    while !links.missing(c.process).is_empty() {
        links.check(me)?;
        if Instant::now() >= deadline {
            return Err(timed_out(me, links, strangers, pending.len()));
        }
        // A bounded number per turn, so that a flood of connections cannot keep this loop
        // from the clock.
        for _ in 0..MAX_PENDING {
            let Ok((stream, addr)) = listener.accept() else {
                break;
            };
            let answered = stream.set_nonblocking(true).is_ok()
                && (&stream).write_all(&me.header(LISTENER)).is_ok();
            if answered {
                pending.push_back(Pending {
                    stream,
                    from: addr,
                    got: Vec::with_capacity(HEADER),
                });
            }
            if pending.len() > MAX_PENDING {
                pending.pop_front();
                strangers += 1;
            }
        }
        let mut waiting = VecDeque::with_capacity(pending.len());
        for mut p in pending.drain(..) {
            match read_some(&mut p) {
                Ok(false) => waiting.push_back(p),
                Err(()) => strangers += 1,
                Ok(true) => {
                    let mut header = [0u8; HEADER];
                    header.copy_from_slice(&p.got);
                    let (j, role) = match me.check(&header) {
                        Err(Refusal::Stranger) => {
                            strangers += 1;
                            continue;
                        }
                        Err(Refusal::Fatal(e)) => return Err(e),
                        Ok(x) => x,
                    };
                    claim(me, &mut from, j, role, p.from)?;
                    links.add(j, role, p.stream, heartbeat)?;
                }
            }
        }
        pending = waiting;
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// Reads what has arrived of `p`'s handshake: whether it is complete; `Err` if the connection
/// closed or failed first.
fn read_some(p: &mut Pending) -> Result<bool, ()> {
    let mut buf = [0u8; HEADER];
    while p.got.len() < HEADER {
        let want = HEADER - p.got.len();
        match (&p.stream).read(&mut buf[..want]) {
            Ok(0) => return Err(()),
            Ok(n) => p.got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Err(()),
        }
    }
    Ok(true)
}

/// Records that the connection from `addr` is process `j`'s of `role`: an error if `j` does not
/// connect to this process, or if another connection claimed it already.
fn claim(
    me: &Me,
    from: &mut [Option<SocketAddr>],
    j: usize,
    role: u64,
    addr: SocketAddr,
) -> Result<(), DistError> {
    let i = me.c.process;
    if j <= i || role == LISTENER {
        return Err(DistError::Setup(format!(
            "process {i}: a connection from {addr} claims to be process {j}, which does not \
             connect to process {i} (only later processes do): is --process right on every \
             process?"
        )));
    }
    let slot = &mut from[2 * j + role as usize];
    if let Some(first) = slot {
        return Err(DistError::Setup(format!(
            "process {i}: two processes claim to be process {j} (from {first} and {addr}): is \
             --process {j} given to two of them?"
        )));
    }
    *slot = Some(addr);
    Ok(())
}

/// The error when later processes did not all connect in time.
fn timed_out(me: &Me, links: &Links, strangers: usize, silent: usize) -> DistError {
    let c = me.c;
    let missing: Vec<String> = links
        .missing(c.process)
        .into_iter()
        .map(|j| format!("{j} ({})", c.hosts[j]))
        .collect();
    let mut refused = String::new();
    match strangers {
        0 => {}
        1 => refused += "; 1 connection that was not a process of this cluster was dropped",
        n => {
            refused +=
                &format!("; {n} connections that were not processes of this cluster were dropped")
        }
    }
    match silent {
        0 => {}
        1 => refused += "; 1 connection sent no handshake",
        n => refused += &format!("; {n} connections sent no handshake"),
    }
    let (whom, started) = if missing.len() == 1 {
        ("process", "is it started")
    } else {
        ("processes", "are they started")
    };
    DistError::Peer(format!(
        "process {}: no connection from {whom} {} within {:.0?} ({started}, with the same \
         --hostfile? a process that failed to start says why in its own error){refused}",
        c.process,
        missing.join(", "),
        c.connect_timeout
    ))
}

/// One peer as the heartbeat sees it.
struct Watched {
    process: usize,
    control: Option<TcpStream>,
    data: Option<TcpStream>,
    /// When a byte last came from the peer on the control connection.
    heard: Instant,
    /// Whether the control connection is open (the peer closes it when it is done).
    open: bool,
}

/// A thread sending this process's heartbeat to every peer and reading theirs; it stops when
/// dropped (its connections close at its next beat).
pub(crate) struct Heartbeat {
    peers: Arc<Mutex<Vec<Watched>>>,
    stop: Arc<AtomicBool>,
}

impl Heartbeat {
    fn start(hosts: Vec<String>) -> Heartbeat {
        let peers: Arc<Mutex<Vec<Watched>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (p, s) = (Arc::clone(&peers), Arc::clone(&stop));
        let spawned = std::thread::Builder::new()
            .name("gpsense-heartbeat".into())
            .spawn(move || {
                while !s.load(Ordering::Relaxed) {
                    if let Ok(mut peers) = p.lock() {
                        beat(&mut peers, &hosts);
                    }
                    std::thread::sleep(HEARTBEAT);
                }
            });
        // Without the thread the peers find this process silent and say so: no worse than a
        // process that stops, and a machine that cannot start a thread is in trouble anyway.
        drop(spawned);
        Heartbeat { peers, stop }
    }

    /// Watches process `j`'s connection of `role` (`stream` is a clone).
    fn watch(&self, j: usize, role: u64, stream: TcpStream) {
        let Ok(mut peers) = self.peers.lock() else {
            return;
        };
        let at = match peers.iter().position(|w| w.process == j) {
            Some(at) => at,
            None => {
                peers.push(Watched {
                    process: j,
                    control: None,
                    data: None,
                    heard: Instant::now(),
                    open: true,
                });
                peers.len() - 1
            }
        };
        let w = &mut peers[at];
        if role == DATA {
            w.data = Some(stream);
        } else {
            w.heard = Instant::now();
            w.control = Some(stream);
        }
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One beat: read what each peer sent (first, so that a beat this process was late for still
/// counts), send ours, and give up on a peer silent for [`SILENCE`]: shutting its connections
/// makes timely's threads fail on them as on a peer that died, with this reason kept first.
fn beat(peers: &mut [Watched], hosts: &[String]) {
    for w in peers.iter_mut().filter(|w| w.open) {
        let Some(control) = &w.control else { continue };
        let mut buf = [0u8; 256];
        loop {
            match (&*control).read(&mut buf) {
                Ok(0) => {
                    w.open = false;
                    break;
                }
                Ok(_) => w.heard = Instant::now(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    w.open = false;
                    break;
                }
            }
        }
        if !w.open {
            continue;
        }
        let _ = (&*control).write(&[1]);
        if w.heard.elapsed() >= SILENCE {
            give_up(format!(
                "process {} ({}) has sent nothing for {:.0?}, not even its heartbeat: it is \
                 stopped, frozen or its machine unreachable; {ABANDONED}",
                w.process,
                hosts.get(w.process).map_or("?", String::as_str),
                SILENCE
            ));
            for s in [&w.control, &w.data].into_iter().flatten() {
                let _ = s.shutdown(Shutdown::Both);
            }
            w.open = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_lookup_that_does_not_answer_is_given_up_on_in_time() {
        let start = Instant::now();
        let slow = |_: String| {
            std::thread::sleep(Duration::from_secs(30));
            Ok(Vec::new())
        };
        let e =
            lookup_with("nameserver.invalid:7000", Duration::from_millis(200), slow).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("looking up its name"), "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
        // An address is not looked up; a name that answers gives its addresses.
        let never = |_: String| -> io::Result<Vec<SocketAddr>> { unreachable!("looked up") };
        let addr: SocketAddr = "127.0.0.1:7000".parse().unwrap();
        assert_eq!(
            lookup_with("127.0.0.1:7000", Duration::ZERO, never).unwrap(),
            [addr]
        );
        let found = lookup_with("peer:7000", Duration::from_secs(10), move |_| {
            Ok(vec![addr])
        });
        assert_eq!(found.unwrap(), [addr]);
    }

    #[test]
    fn a_peer_that_sends_its_handshake_a_byte_at_a_time_is_given_up_on_in_time() {
        // Where process 0 should be, a listener that answers a byte every 300 ms (17 s for a
        // header): the connect timeout of 1 s must end the wait, not the 56th byte.
        let zero = TcpListener::bind("127.0.0.1:0").unwrap();
        let own = TcpListener::bind("127.0.0.1:0").unwrap();
        let hosts = vec![
            zero.local_addr().unwrap().to_string(),
            own.local_addr().unwrap().to_string(),
        ];
        drop(own);
        // Not joined: it ends at its next byte once the connection is closed.
        std::thread::spawn(move || {
            let Ok((mut s, _)) = zero.accept() else {
                return;
            };
            for b in MAGIC.to_le_bytes().into_iter().chain([0; HEADER - 8]) {
                if s.write_all(&[b]).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(300));
            }
        });
        let c = Cluster {
            processes: 2,
            process: 1,
            workers: 1,
            hosts,
            connect_timeout: Duration::from_secs(1),
        };
        let start = Instant::now();
        let e = match connect(&c, 0) {
            Ok(_) => panic!("connected to a stranger"),
            Err(e) => e.to_string(),
        };
        let took = start.elapsed();
        assert!(took < Duration::from_secs(6), "gave up after {took:?}: {e}");
        assert!(
            e.contains("process 0 at") && e.contains("sent no complete handshake within 1s"),
            "{e}"
        );
    }
}

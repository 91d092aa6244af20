//! `gpsense query|match --workers W --processes P --process I --hostfile H`: real processes on
//! loopback (1, 2 and 4), each loading only its part of a `gpsense partition` cut, answering exactly
//! as one process does; a process that dies fails the query on the others; processes that disagree
//! refuse to start. Every process is bounded in time and killed if it overruns.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{dataset, ok};

const HPRD: &str = "subgraph-matching/hprd-study/data_graph/HPRD.graph";

/// A hostfile of `p` free loopback ports.
fn hostfile(dir: &Path, p: usize) -> PathBuf {
    let ports = free_ports(p);
    let path = dir.join(format!("hosts-{}", ports[0]));
    let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// `p` free loopback ports, none handed out before by this test binary.
fn free_ports(p: usize) -> Vec<u16> {
    // Ports this test binary has handed out: the clusters of tests running at once must not share
    // one (the system may hand a freed port out again before its process binds it, and a process
    // of one test then met another test's: "every process needs the same").
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    // All sockets held until every port is known: one dropped at once could be handed out again.
    let mut held: Vec<Reserved> = Vec::new();
    while held.len() < p {
        let r = Reserved::new();
        if !handed_out.contains(&r.port) {
            held.push(r);
        }
    }
    let ports: Vec<u16> = held.iter().map(|r| r.port).collect();
    handed_out.extend(&ports);
    ports
}

/// A loopback port held by a TCP socket that is bound but never listens, so that it takes no
/// connection. A listener here did: a child that another test spawned meanwhile holds a copy of
/// every socket open in this process until it starts its program, so the listener outlived its
/// drop, took the impostor's first connection (process 0 was still loading) and reset it as the
/// child's copy closed; process 0 then listened and waited for a process 1 that never came. A
/// connection to a bound socket is refused, and the clients here retry until the process listens.
struct Reserved {
    port: u16,
    _socket: tokio::net::TcpSocket,
}

impl Reserved {
    fn new() -> Reserved {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let port = socket.local_addr().unwrap().port();
        Reserved {
            port,
            _socket: socket,
        }
    }
}

fn spawn(args: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start gpsense")
}

/// Waits for `child` at most `limit`, killing it after; its exit code (None: killed), stdout, stderr.
/// Waits up to `limit`; the exit code, or `None` when it had to be killed.
fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String) {
    let start = Instant::now();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            // A death by a signal (an abort) reads as minus the signal.
            break Some(
                status
                    .code()
                    .unwrap_or_else(|| -status.signal().unwrap_or(0)),
            );
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, reader.join().unwrap(), err_reader.join().unwrap())
}

/// Runs `args` on `p` processes of `w` workers; returns each process's (code, stdout, stderr).
fn cluster(dir: &Path, p: usize, w: usize, args: &[&str]) -> Vec<(Option<i32>, String, String)> {
    let hosts = hostfile(dir, p);
    let children: Vec<Child> = (0..p)
        .map(|i| {
            let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            a.extend([
                "--workers".into(),
                w.to_string(),
                "--processes".into(),
                p.to_string(),
                "--process".into(),
                i.to_string(),
                "--hostfile".into(),
                hosts.display().to_string(),
            ]);
            spawn(&a)
        })
        .collect();
    children
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(300)))
        .collect()
}

/// The nodes and in-memory MB of the part a process's note says it holds.
fn part_note(err: &str) -> (u64, f64) {
    let line = err
        .lines()
        .find(|l| l.contains(" nodes, ") && l.contains("MB in memory"))
        .unwrap_or_else(|| panic!("no part note in {err}"));
    let number = |before: &str| -> f64 {
        let head = &line[..line.find(before).unwrap()];
        let word = head.rsplit(' ').next().unwrap().replace(',', "");
        word.parse().unwrap()
    };
    (number(" nodes, ") as u64, number(" MB in memory"))
}

fn sorted_lines(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text.lines().map(str::to_owned).collect();
    v.sort();
    v
}

/// `name<TAB>count` of each `match` line.
fn counts(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split('\t').take(2).collect::<Vec<_>>().join("\t"))
        .collect()
}

#[test]
fn hprd_counts_on_one_two_and_four_processes() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("parts");
    let parts_arg = parts.display().to_string();
    let mut queries: Vec<String> =
        std::fs::read_dir(dataset("subgraph-matching/hprd-study/query_graph"))
            .unwrap()
            .map(|e| e.unwrap().path().display().to_string())
            .collect();
    queries.sort();
    // Every eighth: all sizes and densities.
    let queries: Vec<String> = queries.into_iter().step_by(8).collect();
    assert!(queries.len() >= 20, "{} HPRD queries", queries.len());
    let expected = dataset("subgraph-matching/hprd-study/expected_output.res");
    for semantics in ["iso", "hom"] {
        let mut args = vec!["match", "--data", "", "--semantics", semantics];
        // The published counts are iso's.
        if semantics == "iso" {
            args.extend(["--expected", &expected]);
        }
        args.push("--query");
        args.extend(queries.iter().map(String::as_str));
        let single = {
            let mut a = args.clone();
            let data = dataset(HPRD);
            a[2] = &data;
            ok(&a).0
        };
        for p in [1, 2, 4] {
            ok(&[
                "partition",
                &dataset(HPRD),
                "-n",
                &p.to_string(),
                "-o",
                &parts_arg,
            ]);
            let mut a = args.clone();
            a[2] = &parts_arg;
            let out = cluster(dir.path(), p, 2, &a);
            for (i, (code, _, err)) in out.iter().enumerate() {
                assert_eq!(*code, Some(0), "{semantics}, process {i} of {p}: {err}");
            }
            assert_eq!(
                counts(&out[0].1),
                counts(&single),
                "{semantics}, {p} processes"
            );
            for (i, (_, stdout, _)) in out.iter().enumerate().skip(1) {
                assert!(stdout.is_empty(), "process {i} printed rows");
            }
            // Process 0 sums the run up as one process does, with the cluster's shape.
            let err = &out[0].2;
            let processes = if p == 1 {
                "1 process"
            } else {
                &format!("{p} processes")
            };
            assert!(err.contains(" queries in "), "{err}");
            assert!(
                err.contains(&format!("cluster: {processes} x 2 workers")),
                "{err}"
            );
            if semantics == "iso" {
                let checks = format!(
                    "{} counts checked against the expected answers: 0 mismatches, all counted exactly",
                    queries.len()
                );
                assert!(err.contains(&checks), "{err}");
            }
        }
    }
}

#[test]
fn common_sense_rows_on_one_two_and_four_processes() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    let queries = [
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
        "SELECT ?x ?r WHERE { ?x ?r home . ?x ?r house }",
        "SELECT DISTINCT ?r WHERE { ?x ?r animal }",
        "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?a IsA ?c . ?c IsA animal }",
        // Disconnected: two components, their product under --max-cartesian.
        "SELECT ?x ?y WHERE { ?x IsA animal . ?y AtLocation kitchen }",
    ];
    let mut whole_mb = 0.0;
    for p in [1, 2, 4] {
        // The embedded ConceptNet-100K, cut for p processes.
        ok(&["partition", "-n", &p.to_string(), "-o", &parts_arg]);
        // Each process holds its part only: the parts' nodes add up to the graph's, and each part's
        // memory is close to 1/p of the whole (the vocabulary is replicated, so a little more).
        let out = cluster(
            dir.path(),
            p,
            1,
            &["query", queries[0], "--graph", &parts_arg],
        );
        let notes: Vec<(u64, f64)> = out.iter().map(|(_, _, err)| part_note(err)).collect();
        assert_eq!(notes.iter().map(|n| n.0).sum::<u64>(), 78_093, "{notes:?}");
        if p == 1 {
            whole_mb = notes[0].1;
        }
        for (nodes, mb) in &notes {
            assert!(*nodes * p as u64 <= 78_093 + p as u64, "{notes:?}");
            assert!(
                *mb < whole_mb / p as f64 * 1.1,
                "{p} parts: {notes:?}, whole {whole_mb} MB"
            );
        }
        for q in queries {
            for semantics in ["iso", "hom"] {
                let (single, single_err) = ok(&["query", q, "--semantics", semantics]);
                let args = ["query", q, "--graph", &parts_arg, "--semantics", semantics];
                let out = cluster(dir.path(), p, 1, &args);
                for (i, (code, _, err)) in out.iter().enumerate() {
                    assert_eq!(*code, Some(0), "{q} {semantics}, process {i} of {p}: {err}");
                }
                assert_eq!(
                    sorted_lines(&out[0].1),
                    sorted_lines(&single),
                    "{q} {semantics}, {p} processes"
                );
                // The same summary as one process's, but for the engine.
                let answer = |err: &str| -> String {
                    let line = err.lines().find(|l| l.contains(" semantics, "));
                    let line = line.unwrap_or_else(|| panic!("no summary: {err}"));
                    line.split(" in ").next().unwrap_or("").to_owned()
                };
                assert_eq!(answer(&out[0].2), answer(&single_err), "{}", out[0].2);
                let engine = format!("[{semantics} semantics, timely dataflow engine]");
                assert!(out[0].2.contains(&engine), "{}", out[0].2);
            }
        }
    }
    // Counting, and an unknown concept refused on every process with the single-machine message.
    let (single, _) = ok(&["query", queries[0], "--count"]);
    let out = cluster(
        dir.path(),
        4,
        2,
        &["query", queries[0], "--graph", &parts_arg, "--count"],
    );
    assert_eq!(out[0].1, single);
    let typo = "SELECT ?x WHERE { ?x IsA aniaml }";
    let single = common::fails(&["query", typo]);
    let out = cluster(dir.path(), 2, 1, &["query", typo, "--graph", &parts_arg]);
    for (code, _, err) in &out {
        assert_eq!(*code, Some(1), "{err}");
        // The error alone: each process first notes the part it loaded.
        let error: Vec<&str> = err.lines().filter(|l| !l.starts_with("process ")).collect();
        assert_eq!(error.join("\n").trim(), single.trim(), "{err}");
    }
    // The same typo in standard SPARQL: the empty answer and the note, as on one machine.
    let typo =
        "PREFIX n: <gpsense:n/> PREFIX r: <gpsense:r/> SELECT ?x WHERE { ?x r:IsA n:aniaml }";
    let (single, single_err) = ok(&["query", typo]);
    let note = single_err.lines().find(|l| l.contains("did you mean"));
    let note = note.unwrap_or_else(|| panic!("no note: {single_err}"));
    let out = cluster(dir.path(), 2, 1, &["query", typo, "--graph", &parts_arg]);
    assert_eq!(out[0].0, Some(0), "{}", out[0].2);
    assert_eq!(out[0].1, single);
    assert!(out[0].2.lines().any(|l| l == note), "{}", out[0].2);
}

/// Three processes counting far more matches than `timeout_ms` allows (or with no time limit), on
/// ConceptNet-100K.
fn three_long_counts(dir: &Path, timeout_ms: Option<u64>) -> Vec<Child> {
    let parts = dir.join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "3", "-o", &parts_arg]);
    let hosts = hostfile(dir, 3);
    // Four hops over any relations, counted under hom: far longer than the waits below (three
    // hops took 3.3 s on an idle 2-core machine, less than the 4 s one test waits).
    let q = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e }";
    (0..3)
        .map(|i| {
            let args: Vec<String> = [
                "query",
                q,
                "--graph",
                &parts_arg,
                "--semantics",
                "hom",
                "--count",
                "--workers",
                "1",
                "--processes",
                "3",
                "--process",
                &i.to_string(),
                "--hostfile",
                &hosts.display().to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .chain(timeout_ms.map(|t| format!("--timeout-ms={t}")))
            .collect();
            spawn(&args)
        })
        .collect()
}

#[test]
fn a_process_that_dies_fails_the_query_on_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut children = three_long_counts(dir.path(), Some(120_000));
    std::thread::sleep(Duration::from_secs(4));
    let victim = children.pop().unwrap();
    let mut victim = victim;
    let _ = victim.kill();
    let _ = victim.wait();
    let start = Instant::now();
    for (i, c) in children.into_iter().enumerate() {
        let (code, _, err) = finish(c, Duration::from_secs(60));
        assert!(code.is_some(), "process {i} hung after its peer died");
        assert_eq!(
            code,
            Some(1),
            "process {i} did not end with an error: {err}"
        );
        assert!(
            err.contains("process 2") && err.contains("stopped or broke its connection"),
            "process {i}: {err}"
        );
    }
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_process_that_stops_answering_fails_the_query_after_the_time_limit() {
    let dir = tempfile::tempdir().unwrap();
    let children = three_long_counts(dir.path(), Some(3_000));
    std::thread::sleep(Duration::from_secs(1));
    // Stopped, its connections stay open and its kernel answers keepalives: only the clock tells.
    let errors = stop_the_last(children, "stopped answering", |_, _| true);
    assert!(
        errors.iter().any(|e| e.contains("stopped answering")),
        "{errors:?}"
    );
}

/// SIGSTOPs the last of `children` and waits for the others: each must fail with exit code 1 and
/// an error naming the stop (`named`, or "stopped or broke its connection": the first to give up
/// closes its connections, so the other may report that instead) and pass `check` (its stdout and
/// error). Their errors; the stopped process is killed.
fn stop_the_last(
    mut children: Vec<Child>,
    named: &str,
    check: impl Fn(&str, &str) -> bool,
) -> Vec<String> {
    let mut victim = children.pop().unwrap();
    let stopped = Command::new("kill")
        .args(["-STOP", &victim.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let mut errors = Vec::new();
    for (i, c) in children.into_iter().enumerate() {
        let (code, stdout, err) = finish(c, Duration::from_secs(90));
        assert!(code.is_some(), "process {i} hung on a stopped peer");
        assert_eq!(code, Some(1), "process {i}: {err}");
        assert!(
            err.contains(named) || err.contains("stopped or broke its connection"),
            "process {i}: {err}"
        );
        assert!(check(&stdout, &err), "process {i}: {stdout} {err}");
        errors.push(err);
    }
    let _ = victim.kill();
    let _ = victim.wait();
    errors
}

#[test]
fn limits_and_options_are_honoured_or_refused() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "2", "-o", &parts_arg]);
    // A disconnected query whose components multiply past --max-cartesian: refused before any row,
    // with the single-machine message, on every process.
    let cartesian = "SELECT * WHERE { ?x IsA ?a . ?y AtLocation ?b }";
    let single = common::fails(&["query", cartesian, "--max-cartesian", "1000"]);
    let out = cluster(
        dir.path(),
        2,
        1,
        &[
            "query",
            cartesian,
            "--graph",
            &parts_arg,
            "--max-cartesian",
            "1000",
        ],
    );
    for (i, (code, stdout, err)) in out.iter().enumerate() {
        assert_eq!(*code, Some(1), "process {i}: {err}");
        assert!(stdout.is_empty(), "process {i} printed rows");
        let error: Vec<&str> = err.lines().filter(|l| !l.starts_with("process ")).collect();
        assert_eq!(error.join("\n").trim(), single.trim(), "process {i}");
    }
    // Options the dataflow does not use are refused, not ignored.
    for (flag, value) in [
        ("--threads", "2"),
        ("--engine", "gpu"),
        ("--refine-rounds", "2"),
    ] {
        let err = common::fails(&[
            "query",
            "--workers",
            "1",
            flag,
            value,
            "SELECT ?x WHERE { ?x IsA animal }",
        ]);
        assert!(
            err.contains(flag) && err.contains("not available with --workers"),
            "{flag}: {err}"
        );
    }
}

#[test]
fn processes_that_disagree_or_never_start_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("h");
    let parts_arg = parts.display().to_string();
    ok(&["partition", &dataset(HPRD), "-n", "2", "-o", &parts_arg]);
    let hosts = hostfile(dir.path(), 2).display().to_string();
    let query = dataset("subgraph-matching/hprd-study/query_graph/query_dense_16_1.graph");
    let base = |i: &str, semantics: &str| -> Vec<String> {
        [
            "match",
            "--data",
            &parts_arg,
            "--query",
            &query,
            "--semantics",
            semantics,
            "--processes",
            "2",
            "--process",
            i,
            "--hostfile",
            &hosts,
            "--connect-timeout-s",
            "10",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    // Different semantics: a different job, refused at the handshake.
    let a = spawn(&base("0", "iso"));
    let b = spawn(&base("1", "hom"));
    for (i, c) in [a, b].into_iter().enumerate() {
        let (code, _, err) = finish(c, Duration::from_secs(60));
        assert_eq!(code, Some(1), "process {i}: {err}");
        assert!(err.contains("runs a different query"), "process {i}: {err}");
    }
    // Process 1 never starts: process 0 gives up after the connect timeout, naming it.
    let mut alone = base("0", "iso");
    let n = alone.len();
    alone[n - 1] = "2".into();
    let (code, _, err) = finish(spawn(&alone), Duration::from_secs(60));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("no connection from process 1 ("), "{err}");
    // A part of another cut: process 1 of 2 cannot use a cut for 3.
    ok(&["partition", &dataset(HPRD), "-n", "3", "-o", &parts_arg]);
    let hosts = hostfile(dir.path(), 4).display().to_string();
    let err = common::fails(&[
        "match",
        "--data",
        &parts_arg,
        "--query",
        &query,
        "--processes",
        "4",
        "--process",
        "1",
        "--hostfile",
        &hosts,
    ]);
    assert!(err.contains("part-"), "{err}");
}

/// A connection to `port` on loopback, retried while the process starts (up to 60 s).
fn connect(port: u16) -> TcpStream {
    let start = Instant::now();
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(s) => {
                s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                return s;
            }
            Err(e) if start.elapsed() > Duration::from_secs(60) => panic!("port {port}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The port of process `i` in a hostfile of [`hostfile`].
fn port_of(hosts: &Path, i: usize) -> u16 {
    let text = std::fs::read_to_string(hosts).unwrap();
    let line = text.lines().nth(i).unwrap();
    line.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// `gpsense query Q --graph PARTS` as process `i` of 2 with `hosts`, and `extra` arguments.
fn animals(parts: &str, hosts: &Path, i: usize, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = [
        "query",
        "SELECT ?x WHERE { ?x IsA animal }",
        "--graph",
        parts,
        "--processes",
        "2",
        "--process",
        &i.to_string(),
        "--hostfile",
        &hosts.display().to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

#[test]
fn bad_hostfiles_and_indexes_are_refused_before_the_part_loads() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "2", "-o", &parts_arg]);
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let good = hostfile(dir.path(), 2);
    let cases: Vec<(PathBuf, Vec<&str>, &str)> = vec![
        // Read without a bound, this took 18.5 GB in a minute.
        (PathBuf::from("/dev/zero"), vec![], "larger than 1 MiB"),
        (
            file("dup", "127.0.0.1:4700\n# the same again\n127.0.0.1:4700\n"),
            vec![],
            "lines 1 and 3 both name 127.0.0.1:4700",
        ),
        (
            file("three", "127.0.0.1:1\n127.0.0.1:2\n127.0.0.1:3\n"),
            vec![],
            "lists 3 addresses for --processes 2",
        ),
        (file("one", "127.0.0.1:1\n"), vec![], "lists 1 address for"),
        (file("empty", ""), vec![], "lists 0 addresses"),
        (
            file("port", "127.0.0.1:4700\n127.0.0.1:0\n"),
            vec![],
            "line 2: \"127.0.0.1:0\" has port \"0\"",
        ),
        (
            file("long", &format!("127.0.0.1:1\n{}:2\n", "h".repeat(2000))),
            vec![],
            "line 2 is longer than 1024 bytes",
        ),
    ];
    for (hosts, extra, want) in cases {
        let (code, _, err) = finish(
            spawn(&animals(&parts_arg, &hosts, 0, &extra)),
            Duration::from_secs(30),
        );
        assert_eq!(code, Some(1), "{}: {err}", hosts.display());
        assert!(err.contains(want), "{}: {err}", hosts.display());
        assert!(!err.contains("part 0 of 2"), "loaded the part first: {err}");
    }
    // Without --process every process was process 0; a connect timeout past what the clock
    // holds panicked.
    let mut a = animals(&parts_arg, &good, 0, &[]);
    a.retain(|x| x != "--process");
    a.remove(a.iter().position(|x| x == "--processes").unwrap() + 2);
    let (code, _, err) = finish(spawn(&a), Duration::from_secs(30));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--processes 2 needs --process"), "{err}");
    let huge = ["--connect-timeout-s", "18446744073709551615"];
    let (code, _, err) = finish(
        spawn(&animals(&parts_arg, &good, 0, &huge)),
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("1..=3600") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn strangers_on_the_port_neither_end_nor_stall_the_set_up() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "2", "-o", &parts_arg]);
    let hosts = hostfile(dir.path(), 2);
    let first = spawn(&animals(
        &parts_arg,
        &hosts,
        0,
        &["--connect-timeout-s", "60"],
    ));
    // Before process 1 comes, one client sends bytes that are not a handshake (this ended the
    // set-up) and another connects and says nothing (this held it until the timeout).
    let mut garbage = connect(port_of(&hosts, 0));
    let _ = garbage.write_all(&[0x5a; 4096]);
    let silent = connect(port_of(&hosts, 0));
    let second = spawn(&animals(&parts_arg, &hosts, 1, &[]));
    let out: Vec<_> = [first, second]
        .into_iter()
        .map(|c| finish(c, Duration::from_secs(120)))
        .collect();
    for (i, (code, _, err)) in out.iter().enumerate() {
        assert_eq!(*code, Some(0), "process {i}: {err}");
    }
    let (single, _) = ok(&["query", "SELECT ?x WHERE { ?x IsA animal }"]);
    assert_eq!(sorted_lines(&out[0].1), sorted_lines(&single));
    drop(silent);
}

#[test]
fn processes_with_different_hostfiles_refuse_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "2", "-o", &parts_arg]);
    let hosts = hostfile(dir.path(), 2);
    // Process 1 listens on every interface instead: it can start, but its file is not the same.
    let other = dir.path().join("other");
    let port = port_of(&hosts, 1);
    let first = std::fs::read_to_string(&hosts).unwrap();
    let first = first.lines().next().unwrap();
    std::fs::write(&other, format!("{first}\n0.0.0.0:{port}\n")).unwrap();
    let a = spawn(&animals(&parts_arg, &hosts, 0, &[]));
    let b = spawn(&animals(&parts_arg, &other, 1, &[]));
    for (i, c) in [a, b].into_iter().enumerate() {
        let (code, stdout, err) = finish(c, Duration::from_secs(60));
        assert_eq!(code, Some(1), "process {i}: {err}");
        assert!(stdout.is_empty(), "process {i} answered");
        assert!(err.contains("has another hostfile"), "process {i}: {err}");
    }
}

#[test]
fn a_process_stopped_without_a_time_limit_is_given_up_on() {
    let dir = tempfile::tempdir().unwrap();
    let children = three_long_counts(dir.path(), None);
    std::thread::sleep(Duration::from_secs(4));
    // Stopped, its connections stay open and its kernel answers keepalives; with no time limit,
    // only its heartbeat going quiet tells (this waited forever).
    let errors = stop_the_last(children, "has sent nothing", |stdout, err| {
        // No count printed; a heartbeat error names the stopped process.
        stdout.is_empty()
            && (err.contains("process 2 (") && err.contains("has sent nothing")
                || err.contains("stopped or broke its connection"))
    });
    assert!(
        errors.iter().any(|e| e.contains("has sent nothing")),
        "{errors:?}"
    );
}

#[test]
fn a_peer_that_sends_what_no_process_sends_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "2", "-o", &parts_arg]);
    let hosts = hostfile(dir.path(), 2);
    // A connect timeout within the wait below: should the handshake break, process 0's own verdict.
    let zero = spawn(&animals(
        &parts_arg,
        &hosts,
        0,
        &["--connect-timeout-s", "10"],
    ));
    // An impostor of process 1 passes the handshake (seven little-endian u64s: magic, process,
    // processes, workers, agreement, hostfile hash, role) by returning process 0's own with its
    // index and role changed, keeps up the heartbeat, and sends bytes timely never would: they
    // were waited on without end.
    let join = |role: u64| -> std::io::Result<TcpStream> {
        let mut s = connect(port_of(&hosts, 0));
        let mut header = [0u8; 56];
        s.read_exact(&mut header)?;
        header[8..16].copy_from_slice(&1u64.to_le_bytes());
        header[48..56].copy_from_slice(&role.to_le_bytes());
        s.write_all(&header)?;
        Ok(s)
    };
    let (mut data, mut control) = match join(0).and_then(|d| Ok((d, join(1)?))) {
        Ok(links) => links,
        Err(e) => {
            // Process 0 broke the handshake: what it said is the diagnosis.
            let (code, stdout, err) = finish(zero, Duration::from_secs(20));
            panic!("the handshake with process 0 failed ({e}); it exited {code:?}: {stdout} {err}");
        }
    };
    let beat = std::thread::spawn(move || {
        for _ in 0..60 {
            if control.write_all(&[1]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    let _ = data.write_all(&[0xa5; 4096]);
    let (code, stdout, err) = finish(zero, Duration::from_secs(20));
    assert_eq!(code, Some(1), "{err}");
    assert!(stdout.is_empty(), "answered: {stdout}");
    assert!(
        err.contains("process 1 (") && err.contains("not timely's framing"),
        "{err}"
    );
    drop(data);
    let _ = beat.join();
}

#[test]
fn a_port_being_picked_for_a_cluster_takes_no_connection() {
    // The picking socket (and any copy of it that a child spawned meanwhile holds until it starts
    // its program) refuses connections: the impostor's client above retries until process 0
    // listens, instead of meeting the picker and being reset when the copy closes.
    let held = Reserved::new();
    let copy = TcpStream::connect(("127.0.0.1", held.port));
    assert!(
        matches!(&copy, Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused),
        "{copy:?}"
    );
}

#[test]
fn counts_past_64_bits_across_processes() {
    // Each component is counted on the cluster and the counts (u128) gathered between processes.
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "2", "-o", &parts_arg]);
    let components: Vec<String> = (0..10).map(|i| format!("?a{i} IsA ?b{i}")).collect();
    let five = format!("SELECT * WHERE {{ {} }}", components[..5].join(" . "));
    let args = [
        "query",
        "--count",
        "--semantics",
        "hom",
        "--graph",
        &parts_arg,
    ];
    let out = cluster(dir.path(), 2, 1, &[&args[..], &[five.as_str()]].concat());
    for (i, (code, _, err)) in out.iter().enumerate() {
        assert_eq!(*code, Some(0), "process {i}: {err}");
    }
    // 14,925^5.
    assert_eq!(out[0].1, "740579521901923828125\n");
    let ten = format!("SELECT * WHERE {{ {} }}", components.join(" . "));
    let out = cluster(dir.path(), 2, 1, &[&args[..], &[ten.as_str()]].concat());
    for (code, _, err) in &out {
        assert_eq!(*code, Some(1), "{err}");
        assert!(err.contains("the count is more than 2^128 - 1"), "{err}");
    }
}

#[test]
fn what_runs_in_one_process_only_is_refused_before_loading_or_connecting() {
    let dir = tempfile::tempdir().unwrap();
    // Both ports held here, and never accepted on: a process that bound its own port or reached its
    // peer would fail otherwise, or leave a connection waiting. (Ports no cluster of another test
    // is given: a listener on one could take its connections.)
    let listeners: Vec<TcpListener> = free_ports(2)
        .into_iter()
        .map(|p| TcpListener::bind(("127.0.0.1", p)).unwrap())
        .collect();
    let hosts = dir.path().join("hosts");
    let text: String = listeners
        .iter()
        .map(|l| format!("{}\n", l.local_addr().unwrap()))
        .collect();
    std::fs::write(&hosts, text).unwrap();
    // No graph there: loading it would be an error of its own.
    let missing = dir.path().join("no-such-graph").display().to_string();
    let p = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> ";
    for (query, construct) in [
        (
            "SELECT * WHERE { ?x r:IsA c:animal OPTIONAL { ?x r:HasA ?y } }",
            "OPTIONAL",
        ),
        (
            "SELECT ?x WHERE { { ?x r:IsA c:dog } UNION { ?x r:IsA c:cat } }",
            "UNION",
        ),
        ("SELECT ?y WHERE { c:puppy r:IsA+ ?y }", "a property path"),
        (
            "SELECT ?y (COUNT(?x) AS ?n) WHERE { ?x r:IsA ?y } GROUP BY ?y",
            "GROUP BY",
        ),
        (
            "CONSTRUCT { ?x r:IsA c:pet } WHERE { ?x r:IsA c:animal }",
            "CONSTRUCT",
        ),
    ] {
        let text = format!("{p}{query}");
        let args: Vec<String> = [
            "query",
            &text,
            "--graph",
            &missing,
            "--workers",
            "1",
            "--processes",
            "2",
            "--process",
            "0",
            "--hostfile",
            &hosts.display().to_string(),
            "--connect-timeout-s",
            "600",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // A process that tried to connect would wait for its peer far longer than this.
        let (code, stdout, err) = finish(spawn(&args), Duration::from_secs(60));
        assert_eq!(code, Some(1), "{query}: {err}");
        assert!(stdout.is_empty(), "{query}: {stdout}");
        assert!(
            err.contains(construct)
                && err.contains("cannot run across processes")
                && err.contains("`gpsense query` without --workers/--processes"),
            "{query}: {err}"
        );
        assert!(
            !err.contains("no-such-graph"),
            "{query}: loaded first: {err}"
        );
    }
    for l in &listeners {
        l.set_nonblocking(true).unwrap();
        let accepted = l.accept().map(|_| ());
        assert!(
            matches!(&accepted, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "a process connected: {accepted:?}"
        );
    }
}

#[test]
fn a_variables_only_query_is_standard_sparql_across_processes_too() {
    // Hom, as one process, the endpoint and Python read it (iso would drop the rows where ?x = ?y).
    let q = "SELECT ?x ?y WHERE { ?x ?r ?y . ?y ?s ?x }";
    let (single, _) = ok(&["query", q]);
    let (iso, _) = ok(&["query", q, "--semantics", "iso"]);
    assert_ne!(
        sorted_lines(&single),
        sorted_lines(&iso),
        "a query where they differ"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = cluster(dir.path(), 2, 1, &["query", q]);
    for (i, (code, _, err)) in out.iter().enumerate() {
        assert_eq!(*code, Some(0), "process {i}: {err}");
    }
    assert_eq!(sorted_lines(&out[0].1), sorted_lines(&single));
}

//! `gpsense query|match --workers W --processes P --process I --hostfile H`: real processes on
//! loopback (1, 2 and 4), each loading only its part of a `gpsense partition` cut, answering exactly
//! as one process does; a process that dies fails the query on the others; processes that disagree
//! refuse to start. Every process is bounded in time and killed if it overruns.

mod common;

use std::io::Read;
use std::net::TcpListener;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{dataset, ok};

const HPRD: &str = "subgraph-matching/hprd-study/data_graph/HPRD.graph";

/// A hostfile of `p` free loopback ports.
fn hostfile(dir: &Path, p: usize) -> PathBuf {
    let ports: Vec<u16> = (0..p)
        .map(|_| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        })
        .collect();
    let path = dir.join(format!("hosts-{}", ports[0]));
    let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
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
    for semantics in ["iso", "hom"] {
        let mut args = vec!["match", "--data", "", "--semantics", semantics, "--query"];
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
                let (single, _) = ok(&["query", q, "--semantics", semantics]);
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
}

/// Three processes counting far more matches than `timeout_ms` allows, on ConceptNet-100K.
fn three_long_counts(dir: &Path, timeout_ms: u64) -> Vec<Child> {
    let parts = dir.join("cn");
    let parts_arg = parts.display().to_string();
    ok(&["partition", "-n", "3", "-o", &parts_arg]);
    let hosts = hostfile(dir, 3);
    // Three hops over any relations, counted under hom: far longer than the waits below.
    let q = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d }";
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
                "--timeout-ms",
                &timeout_ms.to_string(),
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
            .collect();
            spawn(&args)
        })
        .collect()
}

#[test]
fn a_process_that_dies_fails_the_query_on_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let mut children = three_long_counts(dir.path(), 120_000);
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
    let mut children = three_long_counts(dir.path(), 3_000);
    std::thread::sleep(Duration::from_secs(1));
    // Stopped, its connections stay open and its kernel answers keepalives: only the clock tells.
    let mut victim = children.pop().unwrap();
    let stopped = Command::new("kill")
        .args(["-STOP", &victim.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let mut errors = Vec::new();
    for (i, c) in children.into_iter().enumerate() {
        let (code, _, err) = finish(c, Duration::from_secs(90));
        assert!(code.is_some(), "process {i} hung on a stopped peer");
        assert_eq!(code, Some(1), "process {i}: {err}");
        // The first to give up closes its connections, so the other may report that instead.
        assert!(
            err.contains("stopped answering") || err.contains("stopped or broke its connection"),
            "process {i}: {err}"
        );
        errors.push(err);
    }
    assert!(
        errors.iter().any(|e| e.contains("stopped answering")),
        "{errors:?}"
    );
    let _ = victim.kill();
    let _ = victim.wait();
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
    assert!(err.contains("process(es) 1"), "{err}");
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

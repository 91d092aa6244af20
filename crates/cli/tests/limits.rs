//! The CLI under attack (issue 27): answers the time limit cut never pass for real ones, every
//! user-set number has a bound, every file read is bounded, an output never replaces an input.

mod common;

use std::process::Stdio;

/// The exit status of an answer the time limit cut (`out::exit::TIMED_OUT`).
const CUT: Option<i32> = Some(3);
const MARK: &str = "# timed out: the answer is incomplete\n";
/// A 4-cycle over any relations: never answered within 0 ms.
const CYCLE: &str = "?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?a";
const ANIMALS_AT_HOME: &str = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";

/// `gpsense -q ARGS`: exit status, stdout, stderr.
fn quiet(args: &[&str]) -> (Option<i32>, String, String) {
    common::run_with(&[], &[&["-q"], args].concat(), Stdio::piped())
}

/// Under `-q` (nothing on stderr) an answer the time limit cut has its own exit status and says so
/// on stdout: a yes/no question answers `timeout` (it printed `no`, exit 1, for a true yes), rows
/// and counts end with a mark line (they printed a bare header or `0`, exit 0), JSON with a last
/// element.
#[test]
fn an_answer_the_time_limit_cut_is_marked_and_has_its_own_exit_status() {
    let cut = |extra: &[&str], query: &str| {
        quiet(&[&["query", "--timeout-ms", "0"], extra, &[query]].concat())
    };
    let (code, out, err) = cut(&[], &format!("ASK {{ {CYCLE} }}"));
    assert_eq!((code, out.as_str(), err.as_str()), (CUT, "timeout\n", ""));
    let select = format!("SELECT ?a WHERE {{ {CYCLE} }}");
    for format in ["tsv", "csv"] {
        let (code, out, _) = cut(&["--format", format], &select);
        assert_eq!(code, CUT, "{format}");
        assert!(
            out.starts_with("a\n") && out.ends_with(MARK),
            "{format}: {out}"
        );
    }
    let (code, out, _) = cut(&["--format", "json"], &select);
    assert_eq!(code, CUT);
    assert!(out.ends_with("{\"timed_out\": true}\n]\n"), "{out}");
    let (code, out, _) = cut(&["--count"], &select);
    assert_eq!(code, CUT);
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].parse::<u64>().is_ok(), "{out}");
    assert_eq!(format!("{}\n", lines[1]), MARK);
    let (code, out, _) = cut(&[], &format!("SELECT (COUNT(*) AS ?n) WHERE {{ {CYCLE} }}"));
    assert_eq!(code, CUT);
    assert!(out.starts_with("n\n") && out.ends_with(MARK), "{out}");
    // A complete answer has neither.
    let (code, out, _) = quiet(&[
        "query",
        "--timeout-ms",
        "60000",
        "SELECT * WHERE { cat IsA pet }",
    ]);
    assert_eq!((code, out.as_str()), (Some(0), "yes\n"));
}

/// In a file of queries a time-out marks its own result set, and the exit status is the time-out's
/// unless a query failed (an error outranks it).
#[test]
fn a_file_of_queries_exits_with_the_time_out_status_unless_one_failed() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q.rq");
    let heavy = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d }";
    let fine = ANIMALS_AT_HOME;
    std::fs::write(&file, format!("{fine}\n{heavy}\n{fine}\n")).unwrap();
    let f = file.to_str().unwrap();
    let (code, out, _) = quiet(&["query", "--timeout-ms", "1000", "-f", f]);
    assert_eq!(code, CUT);
    let sets: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(sets.len(), 3, "{out}");
    assert!(!sets[0].contains("timed out") && !sets[2].contains("timed out"));
    assert!(sets[1].ends_with(MARK.trim_end()), "{}", sets[1]);
    std::fs::write(
        &file,
        format!("{heavy}\nSELECT ?x WHERE {{ ?x IsA animl }}\n"),
    )
    .unwrap();
    let (code, _, err) = quiet(&["query", "--timeout-ms", "1000", "-f", f]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("1 of 2 queries failed"), "{err}");
}

/// `match` and `trust` follow the same rule: lines marked `timed out` (as before), and now exit 3.
#[test]
fn match_and_trust_exit_with_the_time_out_status() {
    let hprd = common::dataset("subgraph-matching/hprd-study");
    let (code, out, _) = quiet(&[
        "match",
        "--timeout-ms",
        "0",
        "--data",
        &format!("{hprd}/data_graph/HPRD.graph"),
        "--query",
        &format!("{hprd}/query_graph/query_dense_16_1.graph"),
    ]);
    assert_eq!(code, CUT);
    assert!(out.ends_with("\ttimed out\n"), "{out}");
    let (code, out, _) = quiet(&[
        "trust",
        "--timeout-ms",
        "0",
        "SELECT ?x WHERE { ?x IsA animl . ?x AtLocation home }",
    ]);
    assert_eq!(code, CUT);
    assert!(out.ends_with(MARK), "{out}");
}

/// Across processes (`--workers`) the same: JSON rows end their array (the closing bracket was
/// never written) and a cut answer is marked, with exit 3.
#[test]
fn rows_across_workers_end_their_json_and_are_marked_when_cut() {
    let json = ["query", "--workers", "1", "--format", "json"];
    let (code, out, err) = quiet(&[&json[..], &[ANIMALS_AT_HOME]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("[\n{") && out.ends_with("}\n]\n"), "{out}");
    let select = format!("SELECT ?a WHERE {{ {CYCLE} }}");
    let (code, out, _) = quiet(&[&json[..], &["--timeout-ms", "0", &select]].concat());
    assert_eq!(code, CUT);
    assert!(out.ends_with("{\"timed_out\": true}\n]\n"), "{out}");
    let (code, out, _) = quiet(&["query", "--workers", "1", "--timeout-ms", "0", &select]);
    assert_eq!(code, CUT);
    assert!(out.ends_with(MARK), "{out}");
}

/// Every user-set number has an upper bound, refused with the bound by the command line (exit 2):
/// `--refine-rounds 100000` ran 27 s past a 1 s limit; a memory budget beyond the machine's memory,
/// a week-long time limit, a beam of millions and more compression levels than the format holds
/// were all taken.
#[test]
fn user_set_numbers_have_upper_bounds() {
    let q = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";
    for (args, says) in [
        (vec!["query", "--refine-rounds", "100000", q], "0..=100"),
        (
            vec![
                "match",
                "--refine-rounds",
                "101",
                "--data",
                "d",
                "--query",
                "q",
            ],
            "0..=100",
        ),
        (vec!["query", "--timeout-ms", "604800001", q], "a week"),
        (
            vec!["trust", "--timeout-ms", "18446744073709551615", q],
            "a week",
        ),
        (
            vec!["query", "--memory-budget", "1000000T", q],
            "machine's memory",
        ),
        (
            vec!["trust", "--memory-budget", "1000000T", q],
            "machine's memory",
        ),
        (vec!["trust", "--beam", "1000001", q], "1 to 1000000"),
        (vec!["trust", "--top", "0", q], "1 to 1000000"),
    ] {
        let (code, _, err) = quiet(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // The largest values are taken, and refinement at its bound stops at the time limit.
    let (code, _, err) = quiet(&[
        "query",
        "--engine",
        "emulated",
        "--refine-rounds",
        "100",
        "--timeout-ms",
        "1000",
        q,
    ]);
    assert_eq!(code, Some(0), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("c.gpsc");
    let tsv = dir.path().join("t.tsv");
    std::fs::write(&tsv, "cat\tIsA\tanimal\ndog\tIsA\tanimal\n").unwrap();
    let deltas = vec!["0.9"; 33].join(",");
    let err = common::fails(&[
        "compress",
        tsv.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--delta",
        &deltas,
    ]);
    assert!(
        err.contains("33 thresholds given: at most 32 levels"),
        "{err}"
    );
}

/// `query -f -` answers each query as soon as its text is complete (the next one has started),
/// while standard input stays open: it read the whole input first, and on a device engine, which
/// reads queries ahead for its batches, it waited for `--device-batch` queries. `-f /dev/zero`
/// ends at once with a clear error instead of growing without bound, and so do `trust -f` and
/// `match --expected`.
#[test]
fn queries_from_a_pipe_are_answered_as_they_arrive_and_files_are_bounded() {
    for engine in ["auto", "emulated"] {
        answered_as_they_arrive(engine);
    }
    let hprd = common::dataset("subgraph-matching/hprd-study");
    for args in [
        vec!["query", "-f", "/dev/zero"],
        vec!["trust", "-f", "/dev/zero"],
        vec![
            "match",
            "--data",
            &format!("{hprd}/data_graph/HPRD.graph"),
            "--query",
            &format!("{hprd}/query_graph/query_dense_16_1.graph"),
            "--expected",
            "/dev/zero",
        ],
    ] {
        let err = common::fails(&args);
        assert!(
            err.contains("/dev/zero:1: a NUL byte: not a text file"),
            "{args:?}: {err}"
        );
    }
}

/// Two queries through a pipe left open: the first answered before the input ends.
fn answered_as_they_arrive(engine: &str) {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .args(["-q", "query", "--engine", engine, "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("run gpsense");
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = lines.send(line.unwrap());
        }
    });
    writeln!(stdin, "{ANIMALS_AT_HOME}\nSELECT * WHERE {{ cat IsA pet }}").unwrap();
    stdin.flush().unwrap();
    let wait = std::time::Duration::from_secs(60);
    let mut first = Vec::new();
    while first.len() < 3 {
        match received.recv_timeout(wait) {
            Ok(line) => first.push(line),
            Err(e) => panic!("{engine}: no answer while the input stays open ({e}): {first:?}"),
        }
    }
    first[1..].sort();
    assert_eq!(first, ["x", "kitten", "lizard"], "{engine}");
    // The second is complete at the end of the input.
    drop(stdin);
    let status = child.wait().unwrap();
    reader.join().unwrap();
    let rest: Vec<String> = received.try_iter().collect();
    assert_eq!(rest, ["", "yes"], "{engine}");
    assert!(status.success(), "{engine}");
}

/// An output that is one of the command's inputs is refused, however it is named (it replaced the
/// source without a word), `--force` or not; a read-only output is refused unless `--force`.
#[test]
fn an_output_that_is_an_input_or_read_only_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let tsv = path("t.tsv");
    let text = "cat\tIsA\tanimal\ndog\tIsA\tanimal\n";
    std::fs::write(&tsv, text).unwrap();
    std::os::unix::fs::symlink("t.tsv", path("link.gps")).unwrap();
    std::fs::hard_link(&tsv, path("hard.gps")).unwrap();
    for output in ["t.tsv", "link.gps", "hard.gps"] {
        let output = path(output);
        for force in [&[][..], &["--force"]] {
            let args = [&["ingest", &tsv, "-o", &output][..], force].concat();
            let err = common::fails(&args);
            assert!(err.contains("is the input"), "{args:?}: {err}");
        }
    }
    assert_eq!(std::fs::read_to_string(&tsv).unwrap(), text);
    let gps = path("g.gps");
    common::ok(&["ingest", &tsv, "-o", &gps]);
    let err = common::fails(&["compress", &gps, "-o", &gps]);
    assert!(err.contains("is the input"), "{err}");
    let nt = path("g.nt");
    common::ok(&["dump", &gps, "-o", &nt]);
    let err = common::fails(&["dump", &nt, "-o", &nt]);
    assert!(err.contains("is the input"), "{err}");
    let parts = path("parts");
    common::ok(&["partition", &gps, "-n", "2", "-o", &parts]);
    // Read-only outputs: refused, then replaced with --force (keeping their mode).
    let part = format!("{parts}/part-0-of-2.gpsp");
    for target in [&gps, &nt, &part] {
        std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    let runs: [Vec<&str>; 3] = [
        vec!["ingest", &tsv, "-o", &gps],
        vec!["dump", &gps, "-o", &nt],
        vec!["partition", &gps, "-n", "2", "-o", &parts],
    ];
    for args in runs {
        let err = common::fails(&args);
        assert!(
            err.contains("is read-only: pass --force"),
            "{args:?}: {err}"
        );
        common::ok(&[&args[..], &["--force"]].concat());
    }
    let mode = std::fs::metadata(&gps).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o444);
}

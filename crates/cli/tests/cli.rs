//! The `gpsense` binary as a user runs it: the README's commands on real data, and bad input.

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{dataset, fails, ok};

const ANIMALS_AT_HOME: &str = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }";

#[test]
fn info_on_the_embedded_default_graph() {
    let (out, _) = ok(&["info"]);
    assert!(out.contains("nodes         78,093"), "{out}");
    assert!(out.contains("edges         100,000"), "{out}");
    assert!(out.contains("12.00 bytes/edge"), "{out}");
    assert!(
        out.contains("IsA                            14,925"),
        "{out}"
    );
}

#[test]
fn query_streams_tsv_rows_with_concept_names() {
    let (out, err) = ok(&["query", ANIMALS_AT_HOME]);
    let mut lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.remove(0), "x");
    lines.sort();
    assert_eq!(lines, ["kitten", "lizard"]);
    assert!(err.contains("2 rows"), "{err}");
}

#[test]
fn count_limit_and_formats() {
    let q = "SELECT ?x ?r WHERE { ?x ?r animal }";
    let (count, _) = ok(&["query", "--count", q]);
    let total: u64 = count.trim().parse().unwrap();
    assert!(total > 100, "{total}");
    let (rows, err) = ok(&["query", "--limit", "7", q]);
    assert_eq!(rows.lines().count(), 1 + 7);
    assert!(err.contains("limit reached"), "{err}");
    let (json, _) = ok(&[
        "query",
        "--format",
        "json",
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
    ]);
    assert!(
        json.starts_with("[\n{\"x\": ") && json.ends_with("}\n]\n"),
        "{json}"
    );
    let (csv, _) = ok(&["query", "--format", "csv", "--limit", "3", q]);
    assert!(csv.starts_with("x,r\n"), "{csv}");
    let (hom, _) = ok(&["query", "--count", "--semantics", "hom", q]);
    assert!(hom.trim().parse::<u64>().unwrap() >= total);
}

#[test]
fn explain_shows_semantics_plan_and_phases() {
    let (_, err) = ok(&["query", "--explain", ANIMALS_AT_HOME]);
    for needle in [
        "semantics: iso (subgraph isomorphism",
        "plan (1 component)",
        "after filtering",
        "time: plan",
    ] {
        assert!(err.contains(needle), "missing {needle:?} in:\n{err}");
    }
}

/// `--explain` with `auto` prints both estimates and the pick on any machine (here, without a GPU:
/// what it would pick on the calibrated H100); `-v` says why; `GPSENSE_DEVICE_COSTS` replaces the
/// constants, and a bad file is an error naming its line.
#[test]
fn explain_shows_the_estimates_and_pick_of_auto() {
    let (_, err) = ok(&["query", "--explain", ANIMALS_AT_HOME]);
    let line = err
        .lines()
        .find(|l| l.starts_with("engine auto: dfs "))
        .unwrap_or_else(|| panic!("no auto line in:\n{err}"));
    assert!(line.contains(" ms (estimated), gpu "), "{line}");
    assert!(
        line.ends_with(" ms on the calibrated H100 -> dfs"),
        "{line}"
    );
    let (_, err) = ok(&["query", "-v", ANIMALS_AT_HOME]);
    assert!(
        err.contains("engine auto chose dfs: the device's fixed cost"),
        "{err}"
    );
    let (_, err) = ok(&["query", "--explain", "--engine", "dfs", ANIMALS_AT_HOME]);
    assert!(!err.contains("engine auto"), "{err}");
    // A device that costs nothing wins every query; there is none here, so dfs answers.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("costs.txt");
    std::fs::write(
        &file,
        "device = a free device\ndevice_query_us = 0\nlaunch_us = 0\nread_us = 0\n",
    )
    .unwrap();
    let costs = [("GPSENSE_DEVICE_COSTS", file.to_str().unwrap())];
    let args = ["query", "--explain", ANIMALS_AT_HOME];
    let (code, out, err) = common::run_with(&costs, &args, Stdio::piped());
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    assert!(err.contains("engine:    dfs\n"), "{err}");
    assert!(
        err.contains("on a free device -> gpu; dfs ran instead (no GPU"),
        "{err}"
    );
    std::fs::write(&file, "launch_us = 5\nlaunch = 3\n").unwrap();
    let (code, _, err) = common::run_with(&costs, &args, Stdio::piped());
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("GPSENSE_DEVICE_COSTS: cost file line 2: unknown key \"launch\""),
        "{err}"
    );
}

#[test]
fn query_from_a_file_and_engines_agree() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("q.rq");
    std::fs::write(
        &file,
        "# animals people keep\nSELECT ?x ?y WHERE {\n  ?x IsA ?y .\n  ?x AtLocation home .\n}\n",
    )
    .unwrap();
    let f = file.display().to_string();
    let (a, _) = ok(&["query", "--count", "--engine", "dfs", "-f", &f]);
    let (b, _) = ok(&["query", "--count", "--engine", "kernels", "-f", &f]);
    assert_eq!(a, b);
    assert!(a.trim().parse::<u64>().unwrap() > 10, "{a}");
}

#[test]
fn unknown_names_and_parse_errors_are_explained() {
    let err = fails(&["query", "SELECT ?x WHERE { ?x IsA animl }"]);
    assert!(
        err.contains("unknown concept \"animl\"") && err.contains("animal"),
        "{err}"
    );
    let err = fails(&["query", "SELECT ?x WHERE { ?x isa animal }"]);
    assert!(
        err.contains("unknown relation \"isa\"") && err.contains("IsA"),
        "{err}"
    );
    let err = fails(&[
        "query",
        "SELECT ?x WHERE {\n ?x IsA animal\n ?x AtLocation home }",
    ]);
    assert!(err.contains("line 3"), "{err}");
    let err = fails(&["query"]);
    assert!(err.contains("no query"), "{err}");
}

#[test]
fn disconnected_queries_are_answered_or_refused() {
    let q = "SELECT ?x ?y WHERE { ?x IsA animal . ?y AtLocation home }";
    let (out, _) = ok(&["query", "--count", q]);
    assert!(out.trim().parse::<u64>().unwrap() > 1000);
    let err = fails(&["query", "--max-cartesian", "1000", q]);
    assert!(
        err.contains("disconnected") && err.contains("LIMIT"),
        "{err}"
    );
    let (rows, _) = ok(&["query", "--max-cartesian", "1000", "--limit", "5", q]);
    assert_eq!(rows.lines().count(), 6);
}

#[test]
fn ingest_then_query_a_snapshot_and_reject_damaged_ones() {
    let dir = tempfile::tempdir().unwrap();
    let snap = dir.path().join("pattern.gps");
    let s = snap.display().to_string();
    ok(&[
        "ingest",
        &dataset("pattern-commonsense/commonsense.csv"),
        "-o",
        &s,
    ]);
    let (info, _) = ok(&["info", &s]);
    assert!(info.contains("edges         9,215"), "{info}");
    let (rows, _) = ok(&["query", "--graph", &s, "SELECT ?x WHERE { ?x is-a animal }"]);
    assert!(rows.lines().count() > 5, "{rows}");

    let bytes = std::fs::read(&snap).unwrap();
    let cut = dir.path().join("cut.gps");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let err = fails(&["info", &cut.display().to_string()]);
    assert!(err.contains("truncated"), "{err}");
    let mut flipped = bytes.clone();
    let last = flipped.len() - 10;
    flipped[last] ^= 1;
    let bad = dir.path().join("bad.gps");
    std::fs::write(&bad, &flipped).unwrap();
    let err = fails(&["info", &bad.display().to_string()]);
    assert!(err.contains("checksum"), "{err}");
}

#[test]
fn malformed_input_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, "IsA\tcat\tanimal\nIsA\tdog\n").unwrap();
    let out = dir.path().join("o.gps").display().to_string();
    let err = fails(&["ingest", &bad.display().to_string(), "-o", &out]);
    assert!(err.contains("bad.tsv:2: wrong field count"), "{err}");
    assert!(
        !PathBuf::from(&out).exists(),
        "no snapshot after a failed ingest"
    );
    let (_, err) = ok(&[
        "ingest",
        "--on-error",
        "skip",
        &bad.display().to_string(),
        "-o",
        &out,
    ]);
    assert!(err.contains("skipped 1 lines: wrong field count"), "{err}");
}

/// `gpsense match` on HPRD's first two queries (expected 3 and 80 matches), checked against the
/// published counts, with `extra` arguments.
fn match_two_hprd_queries(extra: &[&str]) -> (String, String) {
    let dir = dataset("subgraph-matching/hprd-study");
    let (data, q1, q2, expected) = (
        format!("{dir}/data_graph/HPRD.graph"),
        format!("{dir}/query_graph/query_dense_16_1.graph"),
        format!("{dir}/query_graph/query_dense_16_2.graph"),
        format!("{dir}/expected_output.res"),
    );
    let mut args = vec![
        "match",
        "--data",
        &data,
        "--query",
        &q1,
        &q2,
        "--expected",
        &expected,
    ];
    args.extend_from_slice(extra);
    ok(&args)
}

/// An expected-answers file that names none of the queries checks nothing: that is an error, not
/// a pass; one that misses some says which.
#[test]
fn match_expected_file_naming_no_query_fails() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("none.res");
    std::fs::write(&none, "query_dense_4_1:3\nsomething_else 7\n").unwrap();
    let hprd = dataset("subgraph-matching/hprd-study");
    let (data, q1, q2) = (
        format!("{hprd}/data_graph/HPRD.graph"),
        format!("{hprd}/query_graph/query_dense_16_1.graph"),
        format!("{hprd}/query_graph/query_dense_16_2.graph"),
    );
    let none = none.to_str().unwrap();
    let base = ["match", "--data", &data, "--query", &q1, &q2, "--expected"];
    let err = fails(&[&base[..], &[none]].concat());
    assert!(err.contains("no count was checked"), "{err}");
    assert!(err.contains("names none of the 2 queries"), "{err}");
    let one = dir.path().join("one.res");
    std::fs::write(&one, "query_dense_16_1:3\n").unwrap();
    let (_, err) = ok(&[&base[..], &[one.to_str().unwrap()]].concat());
    assert!(
        err.contains("1 of 2 queries has no expected count") && err.contains("query_dense_16_2"),
        "{err}"
    );
    // Plurals follow the numbers.
    assert!(err.contains("1 count checked"), "{err}");
}

/// A malformed line's error names the remedy of the command at hand: `ingest` has `--on-error`,
/// `query` and `match` do not.
#[test]
fn a_malformed_line_suggests_what_the_command_can_do() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.tsv");
    std::fs::write(&bad, "IsA\tcat\tanimal\nIsA\tdog\n").unwrap();
    let bad = bad.to_str().unwrap();
    let err = fails(&["query", "--graph", bad, "SELECT ?x WHERE { cat IsA ?x }"]);
    assert!(err.contains(":2: wrong field count"), "{err}");
    assert!(!err.contains("use --on-error skip"), "{err}");
    assert!(
        err.contains("gpsense ingest") && err.contains("--on-error skip"),
        "{err}"
    );
    let out = dir.path().join("out.gps");
    let err = fails(&["ingest", bad, "-o", out.to_str().unwrap()]);
    assert!(
        err.contains("use --on-error skip to skip such lines"),
        "{err}"
    );
    let query = dir.path().join("q.graph");
    std::fs::write(&query, "t 2 1\nv 0 0 1\nv 1 0 1\ne 0 x 0\n").unwrap();
    let hprd = dataset("subgraph-matching/hprd-study");
    let data = format!("{hprd}/data_graph/HPRD.graph");
    let err = fails(&["match", "--data", &data, "--query", query.to_str().unwrap()]);
    assert!(err.contains("q.graph:4"), "{err}");
    assert!(!err.contains("--on-error"), "{err}");
    // A format `query` cannot detect: the remedy is `ingest --format`, not an option of its own.
    let two = dir.path().join("two.tsv");
    std::fs::write(&two, "a\tb\n").unwrap();
    let err = fails(&[
        "query",
        "--graph",
        two.to_str().unwrap(),
        "SELECT ?x WHERE { ?x r y }",
    ]);
    assert!(err.contains("cannot detect the format"), "{err}");
    assert!(!err.contains("; pass --format"), "{err}");
    assert!(
        err.contains("gpsense ingest") && err.contains("--format FORMAT"),
        "{err}"
    );
}

/// `--threads` is bounded (4 per core): more only made a small query slow.
#[test]
fn too_many_threads_is_refused_with_the_bound() {
    for command in [&["query", "--threads"][..], &["trust", "--threads"][..]] {
        let args = [command, &["5000", "SELECT ?x WHERE { cat IsA ?x }"]].concat();
        let out = common::gpsense(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(err.contains("5000 threads: between 1 and"), "{err}");
    }
    let out = common::gpsense(&["query", "--threads", "0", "SELECT ?x WHERE { cat IsA ?x }"]);
    assert!(!out.status.success());
    let (out, _) = ok(&[
        "query",
        "--count",
        "--threads",
        "2",
        "SELECT ?x WHERE { cat IsA ?x }",
    ]);
    assert!(!out.trim().is_empty());
}

#[test]
fn match_answers_the_hprd_suite() {
    let (out, err) = match_two_hprd_queries(&[]);
    let lines: Vec<Vec<&str>> = out.lines().map(|l| l.split('\t').collect()).collect();
    assert_eq!(lines[0][..2], ["query_dense_16_1", "3"]);
    assert_eq!(lines[1][..2], ["query_dense_16_2", "80"]);
    assert!(
        err.contains("2 counts checked against the expected answers: 0 mismatches"),
        "{err}"
    );
}

#[test]
fn match_search_stats_adds_the_counters() {
    let (out, err) = match_two_hprd_queries(&["--engine", "dfs", "--search-stats"]);
    for line in out.lines() {
        let nodes = line
            .split('\t')
            .find_map(|f| f.strip_prefix("nodes="))
            .and_then(|f| f.split(' ').next())
            .and_then(|n| n.parse::<u64>().ok());
        assert!(nodes.is_some_and(|n| n > 0), "{line}");
        assert!(line.contains(" backjumps="), "{line}");
    }
    assert!(
        err.contains("search: ") && err.contains(" nodes, "),
        "{err}"
    );
    // The kernels engine keeps no search counters, and says so.
    let (out, err) = match_two_hprd_queries(&["--engine", "kernels", "--search-stats"]);
    assert!(!out.contains("nodes="), "{out}");
    assert!(err.contains("search: no counters"), "{err}");
}

#[test]
fn match_search_stats_adds_a_device_queries_counters() {
    let (out, err) = match_two_hprd_queries(&[
        "--engine",
        "emulated",
        "--device-batch",
        "1",
        "--search-stats",
    ]);
    let field = |line: &str, key: &str| {
        line.split(['\t', ' '])
            .find_map(|f| f.strip_prefix(key))
            .and_then(|n| n.parse::<u64>().ok())
    };
    for line in out.lines() {
        assert!(field(line, "launches=").is_some_and(|n| n > 0), "{line}");
        assert!(field(line, "reads=").is_some_and(|n| n > 0), "{line}");
        assert!(field(line, "partials=").is_some(), "{line}");
    }
    assert!(
        err.contains("device: ")
            && err.contains(" partial matches, ")
            && err.contains("over 2 queries"),
        "{err}"
    );
}

#[test]
fn match_max_expected_keeps_the_queries_with_small_published_counts() {
    // query_dense_16_1 expects 3 matches, query_dense_16_2 expects 80.
    let (out, err) = match_two_hprd_queries(&["--max-expected", "10"]);
    let names: Vec<&str> = out
        .lines()
        .map(|l| l.split('\t').next().unwrap_or(""))
        .collect();
    assert_eq!(names, ["query_dense_16_1"]);
    // One count, exact: neither "1 counts" nor "the others stopped" (there are none).
    assert!(
        err.contains(
            "1 count checked against the expected answers: 0 mismatches, all counted exactly"
        ),
        "{err}"
    );
    assert!(err.contains("1 query in "), "{err}");
}

/// The time limit stops the GPU pipeline inside a long join level (its warps read a clock), not
/// only between levels: a count that takes seconds ends soon after a 300 ms limit, marked
/// incomplete. Without the clock in the kernel the last level ran on to 600-950 ms here. A
/// filtering launch is not interrupted (the host looks at the clock between them), so the bound is
/// counted from filtering's end when it ends later (it does on a loaded machine).
#[test]
fn the_time_limit_stops_a_long_level_of_the_device_pipeline() {
    let (_, out, err) = common::run_with(
        // The write-ownership check would make the filtering phase alone take the 300 ms.
        &[("GPSENSE_EMULATOR_CHECK", "0")],
        &[
            "query",
            "--engine",
            "emulated",
            "--count",
            "--explain",
            "--semantics",
            "hom",
            "--timeout-ms",
            "300",
            // A zigzag path, not a star: the device counts a star's leaves at once.
            "SELECT ?a WHERE { ?a IsA ?b . ?c IsA ?b . ?c IsA ?d . ?e IsA ?d . ?e IsA ?f }",
        ],
        Stdio::piped(),
    );
    let text = err + &out;
    assert!(text.contains("timed out"), "{text}");
    let ms = |key: &str| common::millis_after(&text, key);
    let (filter, total) = (ms("filter"), ms("total"));
    assert!(
        total < filter.max(300.0) + 150.0,
        "{total} ms in all, {filter} ms filtering, for a 300 ms limit: {text}"
    );
}

/// `--explain` on the emulator gives the warp joins' span on its model H100 (a measure of their
/// balance without a GPU), and no such line where nothing measured it.
#[test]
fn explain_gives_the_emulator_s_model_span() {
    let query = "SELECT * WHERE { ?x IsA ?y }";
    let run = |engine: &str| {
        let (code, _, err) = common::run_with(
            &[],
            &["query", "--engine", engine, "--count", "--explain", query],
            Stdio::piped(),
        );
        assert_eq!(code, Some(0), "{err}");
        err
    };
    let err = run("emulated");
    let line = err
        .lines()
        .find(|l| l.starts_with("warp joins on a model H100"))
        .unwrap_or_else(|| panic!("no span line: {err}"));
    let span: u64 = line
        .split("span ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no span in {line}"));
    assert!(span > 0, "{line}");
    assert!(!run("dfs").contains("model H100"));
}

/// The warp join with every pivot list cut into 16-entry segments that warps take in turn (as on a
/// graph with hubs): all 200 HPRD counts, under the emulator's shuffled blocks and write checks,
/// in one batch whose segments are counted and scanned on the device (before, each segmented
/// query went on alone after the batch, level by level: 68.7 launches and 14.5 reads a query).
#[test]
fn hprd_with_segmented_pivot_lists_on_the_emulated_gpu() {
    let dir = dataset("subgraph-matching/hprd-study");
    let (code, _, err) = common::run_with(
        &[("GPSENSE_SEGMENT", "16")],
        &[
            "match",
            "--engine",
            "emulated",
            "--data",
            &format!("{dir}/data_graph/HPRD.graph"),
            "--query",
            &format!("{dir}/query_graph"),
            "--expected",
            &format!("{dir}/expected_output.res"),
        ],
        Stdio::piped(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("200 counts checked"), "{err}");
    let (launches, reads) = per_query(&err, "batches: 200 queries in 1 batch:");
    assert!(launches <= 8.0 && reads <= 0.05, "{err}");
}

/// `match` on a device engine answers the queries in batches (`--device-batch`, here 4 batches of
/// 50): every HPRD count as published, and the closing line's launches and reads per query within
/// the target (8 and 1; one query at a time it was 53 and 2).
#[test]
fn match_answers_hprd_in_device_batches() {
    let dir = dataset("subgraph-matching/hprd-study");
    let (code, out, err) = common::run_with(
        &[],
        &[
            "match",
            "--engine",
            "emulated",
            "--device-batch",
            "50",
            "--data",
            &format!("{dir}/data_graph/HPRD.graph"),
            "--query",
            &format!("{dir}/query_graph"),
            "--expected",
            &format!("{dir}/expected_output.res"),
        ],
        Stdio::piped(),
    );
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.lines().count(), 200, "{out}");
    assert!(err.contains("200 counts checked"), "{err}");
    let (launches, reads) = per_query(&err, "batches: 200 queries in 4 batches:");
    assert!(launches <= 8.0 && reads <= 1.0, "{err}");
}

/// The launches and reads a query of the batch line starting with `start`:
/// `(1.29 launches, 0.035 reads a query)`.
fn per_query(stderr: &str, start: &str) -> (f64, f64) {
    let line = stderr
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no batch line: {stderr}"));
    let per: Vec<f64> = line
        .rsplit('(')
        .next()
        .unwrap()
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(per.len(), 2, "{line}");
    (per[0], per[1])
}

/// In a device batch, a query over its memory budget fails alone: the small query under the same
/// budget is answered, the large one reported, and the exit status is 1.
#[test]
fn a_query_failing_in_a_device_batch_leaves_the_others_answered() {
    let hprd = dataset("subgraph-matching/hprd-study");
    let dir = tempfile::tempdir().unwrap();
    // An edge between two nodes labelled 8 (a 2-node query) and HPRD's 16-node dense_16_1.
    std::fs::write(
        dir.path().join("a.graph"),
        "t 2 1\nv 0 8 1\nv 1 8 1\ne 0 1\n",
    )
    .unwrap();
    std::fs::copy(
        format!("{hprd}/query_graph/query_dense_16_1.graph"),
        dir.path().join("b.graph"),
    )
    .unwrap();
    let (code, out, err) = common::run_with(
        &[],
        &[
            "match",
            "--engine",
            "emulated",
            "--memory-budget",
            "40K",
            "--data",
            &format!("{hprd}/data_graph/HPRD.graph"),
            "--query",
            &dir.path().display().to_string(),
        ],
        Stdio::piped(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(out.starts_with("a\t") && out.lines().count() == 1, "{out}");
    assert!(
        err.contains("b.graph") && err.contains("1 of 2 queries failed"),
        "{err}"
    );
}

/// Over a folder, a query file that fails to load gets its own error line and the other queries
/// of the folder are answered, with the same counts as one by one: in a device batch, and one
/// query after another (`dfs`, and `auto`, which batches only with a GPU).
#[test]
fn a_malformed_query_file_in_a_folder_leaves_the_others_answered() {
    let hprd = dataset("subgraph-matching/hprd-study");
    let dir = tempfile::tempdir().unwrap();
    for name in ["query_dense_16_1", "query_dense_16_10"] {
        std::fs::copy(
            format!("{hprd}/query_graph/{name}.graph"),
            dir.path().join(format!("{name}.graph")),
        )
        .unwrap();
    }
    // Sorted between the two good files, so the batch holds queries on both sides of it.
    std::fs::write(
        dir.path().join("query_dense_16_0.graph"),
        "t 2 1\nv 0 8 1\nv 1 8 1\ne 0 7\n",
    )
    .unwrap();
    let data = format!("{hprd}/data_graph/HPRD.graph");
    let folder = dir.path().display().to_string();
    let args = ["match", "--data", &data, "--query", &folder];
    let (mut answers, mut batched) = (Vec::new(), String::new());
    for engine in ["emulated", "dfs", "auto"] {
        let (code, out, err) = common::run_with(
            &[],
            &[&args[..], &["--engine", engine]].concat(),
            Stdio::piped(),
        );
        assert_eq!(code, Some(1), "{engine}: {err}");
        assert!(
            err.contains("error: ") && err.contains("query_dense_16_0.graph:4: unknown vertex"),
            "{engine}: {err}"
        );
        assert!(err.contains("1 of 3 queries failed"), "{engine}: {err}");
        if engine == "emulated" {
            assert!(err.contains("batches: 2 queries in 1 batch"), "{err}");
            batched = out.clone();
        }
        let names: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
        assert_eq!(
            names,
            ["query_dense_16_1", "query_dense_16_10"],
            "{engine}: {out}"
        );
        let counts: Vec<String> = out
            .lines()
            .map(|l| l.split('\t').nth(1).unwrap().to_owned())
            .collect();
        answers.push(counts);
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
    let out = batched;
    // The same counts as dfs gives each good file alone.
    for line in out.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let file = dir
            .path()
            .join(format!("{}.graph", f[0]))
            .display()
            .to_string();
        let (code, alone, err) = common::run_with(
            &[],
            &["match", "--data", &data, "--query", &file],
            Stdio::piped(),
        );
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(alone.split('\t').nth(1), Some(f[1]), "{line} / {alone}");
    }
}

/// A device that fails mid-batch on `--engine emulated` (`GPSENSE_EMULATOR_FAULT`: every launch of
/// the batch's join kernel raises the fault flag): each query of the batch reports the device's
/// error, none a count, and the exit status is 1 (under `auto` they would go to the CPU instead:
/// the runtime's `a_device_fault_mid_batch_under_auto_answers_the_batch_on_the_cpu`).
#[test]
fn a_device_fault_mid_batch_is_each_querys_error() {
    let hprd = dataset("subgraph-matching/hprd-study");
    let data = format!("{hprd}/data_graph/HPRD.graph");
    let queries: Vec<String> = [1, 2]
        .iter()
        .map(|k| format!("{hprd}/query_graph/query_dense_16_{k}.graph"))
        .collect();
    let args = ["match", "--engine", "emulated", "--data", &data, "--query"];
    let all = [&args[..], &[&queries[0][..], &queries[1][..]]].concat();
    let (code, out, err) = common::run_with(
        &[("GPSENSE_EMULATOR_FAULT", "extend_warp_batch")],
        &all,
        Stdio::piped(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(out.is_empty(), "{out}");
    let faults = err.lines().filter(|l| l.contains("raised the fault flag"));
    assert_eq!(faults.count(), 2, "{err}");
    assert!(err.contains("2 of 2 queries failed"), "{err}");
    // Without the fault, the same batch answers both.
    let (code, out, err) = common::run_with(&[], &all, Stdio::piped());
    assert_eq!((code, out.lines().count()), (Some(0), 2), "{err}");
}

/// Counting queries of a `query -f` file on ConceptNet-100K, mixed with queries that want rows and
/// one that does not read: COUNT(*), ASK (yes and no), LIMIT, both semantics.
fn counting_queries_file(dir: &std::path::Path) -> String {
    let p = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/>";
    let text = [
        format!("{p} SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"),
        ANIMALS_AT_HOME.to_owned(),
        format!("{p} ASK {{ c:dog r:IsA c:pet }}"),
        "SELECT ?x WHERE { ?x IsA animal . ?x CapableOf fly } LIMIT 3".to_owned(),
        "SELECT ?x WHERE { ?x IsA nosuchthingzz }".to_owned(),
        format!("{p} ASK {{ ?x r:IsA c:animal . ?x r:AtLocation c:home }}"),
        "SELECT * WHERE { dog IsA pet }".to_owned(),
        format!(
            "{p} SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA ?y . ?y r:IsA c:animal . \
             ?x r:AtLocation ?z }}"
        ),
        "SELECT ?x ?y WHERE { ?x IsA ?y . ?x AtLocation home } LIMIT 5".to_owned(),
    ]
    .join("\n");
    let file = dir.join("q.rq");
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

/// Each result set of a `query -f` output with its lines sorted (the device's rows come in no
/// fixed order), or only their number when a LIMIT cut it (which rows is up to the engine).
fn result_sets(out: &str) -> Vec<Vec<String>> {
    out.split("\n\n")
        .enumerate()
        .map(|(k, set)| {
            let mut lines: Vec<String> = set.lines().map(str::to_owned).collect();
            lines.sort();
            // Sets 3 and 7 (query 5 has none): the row queries with a LIMIT.
            if (k == 3 || k == 7) && lines.len() > 1 {
                return vec![format!("{} rows", lines.len())];
            }
            lines
        })
        .collect()
}

/// The launches `--explain` reports: the batches' closing line, or the sum of the queries' own.
fn launches(stderr: &str) -> u64 {
    let number = |s: &str| s.replace(',', "").parse::<u64>().unwrap();
    if let Some(line) = stderr.lines().find(|l| l.starts_with("batches: ")) {
        let (_, rest) = line.split_once(": ").unwrap();
        let (_, rest) = rest.split_once(": ").unwrap();
        return number(rest.split(' ').next().unwrap());
    }
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("device: "))
        .filter(|l| l.contains(" launches, "))
        .map(|l| number(l.split(' ').next().unwrap()))
        .sum()
}

/// `query -f` on the emulated device counts the file's counting queries (COUNT(*), ASK, or all
/// with `--count`) in one batch: the same output as one query at a time and as dfs, in the file's
/// order, each LIMIT its own, and fewer launches than one at a time.
#[test]
fn counting_queries_of_a_file_are_answered_in_a_device_batch() {
    let dir = tempfile::tempdir().unwrap();
    let f = counting_queries_file(dir.path());
    for count in [&[][..], &["--count"]] {
        let run = |extra: &[&str]| {
            let args = [&["query", "--explain", "-f", &f][..], count, extra].concat();
            common::run_with(&[], &args, Stdio::piped())
        };
        let (code, batched, err) = run(&["--engine", "emulated"]);
        let (code_alone, alone, err_alone) = run(&["--engine", "emulated", "--device-batch", "1"]);
        let (code_dfs, dfs, _) = run(&["--engine", "dfs"]);
        // Query 5 names an unknown concept: its own error, the others answered.
        assert_eq!(
            (code, code_alone, code_dfs),
            (Some(1), Some(1), Some(1)),
            "{err}"
        );
        assert!(err.contains("error: query 5: line 5") && err.contains("1 of 9 queries failed"));
        assert_eq!(result_sets(&batched), result_sets(&alone), "{count:?}");
        assert_eq!(result_sets(&batched), result_sets(&dfs), "{count:?}");
        // Every query that reads (the SELECTs' rows too); one batch per semantics (standard
        // SPARQL's hom, the short dialect's iso).
        assert!(err.contains("batches: 8 queries in 2 batches"), "{err}");
        assert!(!err_alone.contains("batches: "), "{err_alone}");
        let (b, a) = (launches(&err), launches(&err_alone));
        assert!(b > 0 && b < a, "{b} launches batched, {a} one at a time");
    }
    // The answers themselves (dfs agreed above): counts, yes/no, a LIMIT of 3 kept to its query.
    let (_, out, _) = common::run_with(
        &[],
        &["query", "--count", "--engine", "emulated", "-f", &f],
        Stdio::piped(),
    );
    let sets: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(sets.len(), 8, "{out}");
    assert_eq!(
        (sets[1], sets[2], sets[3], sets[7]),
        ("2", "0", "3", "5"),
        "{out}"
    );
}

/// `query -f` on a device engine prints each answer of its batch as soon as it and those before it
/// are final: a light count before a heavy one that goes on alone after the batch (with no time
/// limit: far longer than the test) is printed while the heavy one runs. Before, every answer of
/// the batch waited for its last.
#[test]
fn a_batch_prints_each_answer_as_soon_as_it_is_final() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("two.rq");
    std::fs::write(
        &f,
        "SELECT * WHERE { ?x IsA animal . ?x AtLocation home }\n\
         SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e . ?e ?v ?f }\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .args(["-q", "query", "--count", "--engine", "emulated", "-f"])
        .arg(&f)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run gpsense");
    let stdout = child.stdout.take().unwrap();
    let (lines, received) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = lines.send(line);
        }
    });
    let first = received.recv_timeout(std::time::Duration::from_secs(60));
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(first.ok().and_then(Result::ok).as_deref(), Some("2"));
    assert!(running, "the heavy count ended first");
}

/// `query -f` on the emulated device answers the file's SELECT queries in one batch: each query's
/// rows (sorted) as dfs gives them, in the file's order, as with one query at a time; a query that
/// does not read is its own error, a LIMIT is kept to its query.
#[test]
fn select_queries_of_a_file_are_answered_in_a_device_batch() {
    let dir = tempfile::tempdir().unwrap();
    let text = [
        ANIMALS_AT_HOME,
        "SELECT ?x ?y WHERE { ?x IsA ?y . ?x AtLocation home }",
        "SELECT ?x ?r WHERE { ?x ?r animal }",
        "SELECT ?x WHERE { ?x IsA nosuchthingzz }",
        "SELECT DISTINCT ?y WHERE { ?x IsA ?y . ?y IsA animal }",
        "SELECT * WHERE { ?x IsA ?y . ?y IsA animal } LIMIT 4",
    ]
    .join("\n");
    let f = dir.path().join("rows.rq").display().to_string();
    std::fs::write(&f, text).unwrap();
    // Each result set's lines sorted; the LIMIT's set (the last) by its number of lines.
    let sets = |out: &str| -> Vec<Vec<String>> {
        let mut sets: Vec<Vec<String>> = out
            .split("\n\n")
            .map(|set| {
                // JSON's rows end with a comma but the last: the device's order is its own.
                let mut lines: Vec<String> = set
                    .lines()
                    .map(|l| l.trim_end_matches(',').to_owned())
                    .collect();
                lines.sort();
                lines
            })
            .collect();
        if let Some(last) = sets.last_mut() {
            *last = vec![format!("{} lines", last.len())];
        }
        sets
    };
    for format in ["tsv", "json"] {
        let run = |extra: &[&str]| {
            let args = [
                &["query", "--explain", "--format", format, "-f", &f][..],
                extra,
            ]
            .concat();
            common::run_with(&[], &args, Stdio::piped())
        };
        let (code, batched, err) = run(&["--engine", "emulated"]);
        let (code_alone, alone, err_alone) = run(&["--engine", "emulated", "--device-batch", "1"]);
        let (code_dfs, dfs, _) = run(&["--engine", "dfs"]);
        assert_eq!(
            (code, code_alone, code_dfs),
            (Some(1), Some(1), Some(1)),
            "{err}"
        );
        assert!(err.contains("error: query 4: line 4") && err.contains("1 of 6 queries failed"));
        assert!(err.contains("batches: 5 queries in 1 batch:"), "{err}");
        assert!(!err_alone.contains("batches: "), "{err_alone}");
        let got = sets(&batched);
        assert_eq!(got.len(), 5, "{batched}");
        assert!(got[..4].iter().all(|s| s.len() > 1), "{batched}");
        assert_ne!(got[4], ["0 lines"], "{batched}");
        assert_eq!(got, sets(&dfs), "{format}");
        assert_eq!(got, sets(&alone), "{format}");
        let (b, a) = (launches(&err), launches(&err_alone));
        assert!(
            b > 0 && 2 * b < a,
            "{b} launches batched, {a} one at a time"
        );
    }
}

/// In a `query -f` device batch, a query over its memory budget fails alone: the smaller queries
/// under the same budget are answered (as dfs answers them) and the exit status is 1.
#[test]
fn a_query_failing_in_a_query_file_batch_leaves_the_others_answered() {
    let dir = tempfile::tempdir().unwrap();
    let f = counting_queries_file(dir.path());
    let args = ["query", "--count", "-f", &f];
    let (code, out, err) = common::run_with(
        &[],
        &[
            &args[..],
            &["--engine", "emulated", "--memory-budget", "100K"],
        ]
        .concat(),
        Stdio::piped(),
    );
    assert_eq!(code, Some(1), "{err}");
    let budget: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("more than the memory budget"))
        .collect();
    assert_eq!(budget.len(), 5, "{err}");
    assert!(budget[0].starts_with("error: query 2 (line 2): "), "{err}");
    assert!(err.contains("6 of 9 queries failed"), "{err}");
    let (_, dfs, _) = common::run_with(
        &[],
        &[&args[..], &["--engine", "dfs"]].concat(),
        Stdio::piped(),
    );
    let dfs: Vec<&str> = dfs.split_whitespace().collect();
    let got: Vec<&str> = out.split_whitespace().collect();
    // Queries 1, 3 and 7 fit: their counts, in the file's order.
    assert_eq!(got, [dfs[0], dfs[2], dfs[5]], "{out}");
}

/// A reader that went away (`| head -1`, `| true`) ends every command quietly, with no panic; a
/// full device (`> /dev/full`) is an error that says the output could not be written.
#[test]
fn a_closed_or_full_stdout_ends_commands_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("t.tsv");
    std::fs::write(&tsv, "cat\tIsA\tanimal\ndog\tIsA\tanimal\n").unwrap();
    let snapshot = dir.path().join("t.gps").display().to_string();
    let hprd = dataset("subgraph-matching/hprd-study");
    let (data, query) = (
        format!("{hprd}/data_graph/HPRD.graph"),
        format!("{hprd}/query_graph/query_dense_16_1.graph"),
    );
    let tsv = tsv.display().to_string();
    let commands: Vec<Vec<&str>> = vec![
        vec!["info"],
        vec!["query", "--count", "SELECT ?x WHERE { ?x IsA animal }"],
        vec!["query", "SELECT ?x WHERE { ?x IsA animal }"],
        vec!["match", "--data", &data, "--query", &query],
        vec!["ingest", &tsv, "-o", &snapshot],
        vec!["trust", "--top", "3", "SELECT ?x WHERE { ?x IsA animl }"],
    ];
    for args in &commands {
        let run = |stdout: Stdio| {
            let (code, _, err) = common::run_with(&[], args, stdout);
            (code, err)
        };
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let (code, err) = run(writer.into());
        assert_eq!(code, Some(0), "{args:?} into a closed pipe: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        let full = std::fs::File::options()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let (code, err) = run(full.into());
        assert_eq!(code, Some(1), "{args:?} into /dev/full: {err}");
        assert!(err.contains("cannot write"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A reader that goes away stops the GPU pipeline too: the last level's rows stream in growing
/// parts, and the parts after the reader left are not run. Before, all 7.8M rows (125 MB) were
/// computed and read back (1.5 s for `| head -1` in release, 0.05 s now).
#[test]
fn a_reader_that_goes_away_stops_the_device_pipeline() {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let (_, _, err) = common::run_with(
        &[("GPSENSE_EMULATOR_CHECK", "0")],
        &[
            "query",
            "--engine",
            "emulated",
            "--semantics",
            "hom",
            "--explain",
            "SELECT ?a ?c ?d WHERE { ?a IsA ?b . ?c IsA ?b . ?d IsA ?b }",
        ],
        writer.into(),
    );
    let down: u64 = err
        .split(" bytes down")
        .next()
        .and_then(|t| t.rsplit(' ').next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("no bytes down in {err}"));
    assert!(
        down < 10 << 20,
        "{down} bytes read back for a reader that left: {err}"
    );
}

/// Snapshot outputs: never replace a FIFO or a directory; write through a symlink; a new file gets
/// the umask's mode and a rewrite keeps the old mode (both were 0600); stale temporary files of an
/// interrupted write are removed; a missing directory is named, not the temporary file.
#[test]
fn snapshot_outputs_are_safe() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).display().to_string();
    let tsv = d("t.tsv");
    std::fs::write(&tsv, "cat\tIsA\tanimal\n").unwrap();
    let ingest = |out: &str, umask: &str| {
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "umask {umask}; exec \"$0\" ingest \"$1\" -o \"$2\"",
            ))
            .arg(env!("CARGO_BIN_EXE_gpsense"))
            .arg(&tsv)
            .arg(out)
            .output()
            .expect("run gpsense")
    };
    let mode = |p: &str| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    // A FIFO and a directory are refused and left as they were.
    let fifo = d("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let out = ingest(&fifo, "022");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a FIFO"));
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    let sub = d("sub");
    std::fs::create_dir(&sub).unwrap();
    let out = ingest(&sub, "022");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
    // Modes: the umask's for a new file, the old one for a rewrite.
    let g = d("g.gps");
    assert!(ingest(&g, "027").status.success());
    assert_eq!(mode(&g), 0o640);
    std::fs::set_permissions(&g, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert!(ingest(&g, "077").status.success());
    assert_eq!(mode(&g), 0o644);
    // A symlink is written through.
    let link = d("link.gps");
    std::os::unix::fs::symlink("g.gps", &link).unwrap();
    std::fs::write(&g, b"old").unwrap();
    assert!(ingest(&link, "022").status.success());
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read(&g).unwrap().starts_with(b"GPSENSE"));
    // A stale temporary file of a dead process goes; a missing directory is named.
    let stale = d(".g.gps.gpsense-tmp.4000000");
    std::fs::write(&stale, b"partial").unwrap();
    assert!(ingest(&g, "022").status.success());
    assert!(!std::path::Path::new(&stale).exists());
    let out = ingest(&d("missing/x.gps"), "022");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("does not exist") && !err.contains("gpsense-tmp") && !err.contains("at path"),
        "{err}"
    );
}

/// Small things a user sees: a query with no variable, or the short dialect's ASK, is a yes/no
/// question with an exit status; "1 row", not "1 rows"; `--explain` says "query graph:" once; a
/// refused query prints no header.
#[test]
fn yes_no_questions_plurals_and_headers() {
    let run = |args: &[&str]| common::run_with(&[], args, Stdio::piped());
    let (code, out, _) = run(&["query", "SELECT * WHERE { cat IsA pet }"]);
    assert_eq!((code, out.as_str()), (Some(0), "yes\n"));
    let (code, out, err) = run(&["query", "SELECT * WHERE { cat IsA dog }"]);
    assert_eq!((code, out.as_str()), (Some(1), "no\n"), "{err}");
    assert!(!err.contains("error"), "{err}");
    // The short dialect's ASK, with or without variables (it read as standard SPARQL and failed
    // with "expected OPTIONAL"); a bare `ask` in the pattern stays a concept.
    for (q, code, answer, why) in [
        ("ASK { cat IsA pet }", 0, "yes", "no variable"),
        ("ask where { ?x IsA ?y . ?y IsA ?z }", 0, "yes", "ASK"),
        (
            "ASK { ?x IsA cat . ?x IsA dog . ?x IsA rock }",
            1,
            "no",
            "ASK",
        ),
        ("ASK { ?x ?r ask }", 0, "yes", "ASK"),
    ] {
        let (got, out, err) = run(&["query", q]);
        assert_eq!(
            (got, out),
            (Some(code), format!("{answer}\n")),
            "{q}: {err}"
        );
        assert!(err.contains(&format!("{answer} ({why}")), "{q}: {err}");
    }
    let (_, _, err) = run(&["query", "--limit", "1", "SELECT ?x WHERE { ?x IsA cat }"]);
    assert!(err.contains("1 row (limit reached"), "{err}");
    let (_, _, err) = run(&["query", "--explain", "SELECT ?x WHERE { ?x IsA cat }"]);
    assert_eq!(err.matches("query graph:").count(), 1, "{err}");
    let (code, out, err) = run(&[
        "query",
        "--max-cartesian",
        "10",
        "SELECT ?x ?y WHERE { ?x IsA ?y . ?z IsA ?w }",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(out, "", "a refused query prints no header");
}

/// The CPU fallback note is said only when asked (`-v`, `--explain`), not on every query; `-q`
/// leaves only results and errors, for every command.
#[test]
fn notes_only_when_asked_and_quiet_everywhere() {
    let q = "SELECT ?x WHERE { ?x IsA cat }";
    let (_, err) = ok(&["query", q]);
    assert!(!err.contains("note:"), "{err}");
    let (_, err) = ok(&["query", "-v", q]);
    assert_eq!(err.matches("running on the CPU").count(), 1, "{err}");
    let (_, err) = ok(&["query", "--explain", q]);
    assert_eq!(err.matches("running on the CPU").count(), 1, "{err}");
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("t.tsv").display().to_string();
    std::fs::write(&tsv, "cat\tIsA\tanimal\n").unwrap();
    let out = dir.path().join("t.gps").display().to_string();
    let hprd = dataset("subgraph-matching/hprd-study");
    let data = format!("{hprd}/data_graph/HPRD.graph");
    let query = format!("{hprd}/query_graph/query_dense_16_1.graph");
    for args in [
        vec!["-q", "query", q],
        vec!["query", "--quiet", "--count", q],
        vec!["-q", "info"],
        vec!["-q", "ingest", &tsv, "-o", &out],
        vec!["-q", "match", "--data", &data, "--query", &query],
        vec![
            "-q",
            "trust",
            "--top",
            "2",
            "SELECT ?x WHERE { ?x IsA animl }",
        ],
    ] {
        let (stdout, err) = ok(&args);
        assert_eq!(err, "", "{args:?}");
        assert!(!stdout.is_empty(), "{args:?}");
    }
}

/// TruST's JSON scores are numbers, `LIMIT 0` gives no row, a misspelt relation gets suggestions.
#[test]
fn trust_json_numbers_limit_zero_and_relation_suggestions() {
    let (out, _) = ok(&[
        "trust",
        "--format",
        "json",
        "--top",
        "1",
        "SELECT ?x WHERE { ?x IsA animl }",
    ]);
    assert!(out.contains("\"score\": 0."), "{out}");
    let (out, _) = ok(&["trust", "SELECT ?x WHERE { ?x IsA animal } LIMIT 0"]);
    assert_eq!(out.lines().count(), 1, "the header only: {out}");
    let (_, err) = ok(&["trust", "--top", "1", "SELECT ?x WHERE { ?x IsAA animal }"]);
    assert!(err.contains("did you mean IsA"), "{err}");
}

/// A disconnected query with --count is counted, never refused (no row is materialised): under
/// hom as the product of its components' counts, under iso exactly by the engine. Rows beyond the
/// limit are still refused, and a capped product is said to be a lower bound.
#[test]
fn disconnected_queries_are_counted() {
    let q = "SELECT ?x ?y WHERE { ?x IsA animal . ?y IsA pet }";
    let count = |extra: &[&str]| -> String {
        let mut args = vec!["query", "--count"];
        args.extend_from_slice(extra);
        args.push(q);
        ok(&args).0.trim().to_owned()
    };
    let iso = count(&["--max-cartesian", "10"]);
    assert_eq!(iso, count(&["--max-cartesian", "100000000"]));
    let hom = count(&["--semantics", "hom", "--max-cartesian", "10"]);
    assert_eq!(hom, count(&["--semantics", "hom"]));
    assert!(hom.parse::<u64>().unwrap() > iso.parse::<u64>().unwrap());
    let err = fails(&["query", "--max-cartesian", "10", q]);
    assert!(
        err.contains("at least") && err.contains("(--count)"),
        "{err}"
    );
}

/// Queries from standard input (`-f -`), several in one text, answered in turn; one that fails is
/// reported with its number and line, and the others still run.
#[test]
fn several_queries_from_standard_input() {
    use std::io::Write;
    let run = |text: &str| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpsense"))
            .args(["query", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run gpsense");
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, out, err) = run(
        "# two queries\nSELECT ?x WHERE { ?x IsA cat } LIMIT 2\n\nselect ?y WHERE { ?y AtLocation home } LIMIT 1\n",
    );
    assert_eq!(code, Some(0), "{err}");
    let sets: Vec<&str> = out.split("\n\n").collect();
    assert_eq!(sets.len(), 2, "{out}");
    assert!(
        sets[0].starts_with("x\n") && sets[1].starts_with("y\n"),
        "{out}"
    );
    assert!(err.contains("query 2 (line 4)"), "{err}");
    let (code, out, err) =
        run("SELECT ?x WHERE { ?x IsA catt }\nSELECT ?x WHERE { ?x IsA cat } LIMIT 1\n");
    assert_eq!(code, Some(1));
    assert!(
        err.contains("query 1 (line 1)") && err.contains("unknown concept"),
        "{err}"
    );
    assert_eq!(out.lines().count(), 2, "the second query still ran: {out}");
}

/// `--help` lists the values of every format option and hides what a command ignores.
#[test]
fn help_lists_values_and_hides_what_is_ignored() {
    let (ingest, _) = ok(&["ingest", "--help"]);
    let values = ingest
        .split("[possible values: ")
        .nth(1)
        .and_then(|v| v.split(']').next())
        .unwrap_or_else(|| panic!("no values: {ingest}"));
    let listed: Vec<&str> = values.split(", ").collect();
    let formats: Vec<&str> = gpsense_graph::ingest::Format::ALL
        .iter()
        .map(|f| f.name())
        .collect();
    assert_eq!(listed, formats, "{ingest}");
    let (query, _) = ok(&["query", "--help"]);
    assert!(
        query.contains("[possible values: tsv, csv, json]"),
        "{query}"
    );
    assert!(query.contains("--max-cartesian"), "{query}");
    let (trust, _) = ok(&["trust", "--help"]);
    assert!(
        trust.contains("[possible values: tsv, csv, json]"),
        "{trust}"
    );
    let (matching, _) = ok(&["match", "--help"]);
    assert!(!matching.contains("--count "), "{matching}");
    assert!(!matching.contains("--max-cartesian"), "{matching}");
}

/// Under `ulimit -v 4000000` (4 GB of address space): a gzip bomb holding one 1 GB line, with and
/// without `--on-error skip`, and a 17-node path with 16 edge variables on the emulated GPU within
/// `--memory-budget 256M` all end with a clear message, never an abort.
#[test]
fn resource_limits_end_with_a_message_under_ulimit() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.tsv.gz");
    {
        let file = std::fs::File::create(&bomb).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        let chunk = vec![b'a'; 1 << 20];
        for _ in 0..1024 {
            gz.write_all(&chunk).unwrap();
        }
        gz.write_all(b"\tIsA\tanimal\n").unwrap();
        gz.finish().unwrap();
    }
    let limited_to = |kb: &str, args: &[&str]| {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit -v {kb}; exec \"$@\""))
            .arg("sh")
            .arg(env!("CARGO_BIN_EXE_gpsense"))
            .args(args)
            .output()
            .expect("run gpsense");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let limited = |args: &[&str]| limited_to("4000000", args);
    let bomb = bomb.display().to_string();
    let out = dir.path().join("o.gps").display().to_string();
    let (code, err) = limited(&["ingest", &bomb, "-o", &out, "--format", "triples"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(":1: line too long"), "{err}");
    let (code, err) = limited(&[
        "ingest",
        &bomb,
        "-o",
        &out,
        "--format",
        "triples",
        "--on-error",
        "skip",
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("0 edges read from 1 lines"), "{err}");
    let path: String = (0..16)
        .map(|i| format!("?v{i} ?p{i} ?v{} . ", i + 1))
        .collect();
    let q = format!("SELECT * WHERE {{ {path}}}");
    let (code, err) = limited(&[
        "query",
        "--engine",
        "emulated",
        "--count",
        "--memory-budget",
        "256M",
        "--timeout-ms",
        "3000",
        &q,
    ]);
    // Exit 3: the time limit cut the count.
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("timed out"), "{err}");
    // The kernels engine's budget covers the whole query: 2.3 GB before at 256M (per level).
    let (code, err) = limited_to(
        "1500000",
        &[
            "query",
            "--engine",
            "kernels",
            "--count",
            "--memory-budget",
            "256M",
            "--timeout-ms",
            "3000",
            &q,
        ],
    );
    // Exit 3: the time limit cut the count.
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("timed out"), "{err}");
}

/// The kernels engine's filtering bitsets (one over all data nodes per query node) count against
/// the budget: refused up front with the bytes needed, where they were allocated past it before.
#[test]
fn the_kernels_filtering_bitsets_are_within_the_budget() {
    let q = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }";
    let err = fails(&["query", "--engine", "kernels", "--memory-budget", "16K", q]);
    assert!(
        err.contains("outgrew the memory budget of 16384 bytes"),
        "{err}"
    );
    ok(&["query", "--engine", "kernels", "--memory-budget", "1M", q]);
}

/// On a device with little free memory (the emulator told so, as a busy GPU would report), a query
/// that would not fit is refused with its size before any allocation fails.
#[test]
fn the_device_budget_follows_free_device_memory() {
    let q = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }";
    let (code, _, err) = common::run_with(
        &[("GPSENSE_EMULATOR_FREE", "64K")],
        &["query", "--engine", "emulated", q],
        std::process::Stdio::null(),
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the device's free memory if less"), "{err}");
    let (code, _, err) = common::run_with(
        &[("GPSENSE_EMULATOR_FREE", "64M")],
        &["query", "--engine", "emulated", q],
        std::process::Stdio::null(),
    );
    assert_eq!(code, Some(0), "{err}");
}

/// A graph file is opened once and read through that handle: `info` never fails while the file is
/// atomically rewritten between a plain and a compressed snapshot (before, 4 of 5,602 calls read
/// one kind's header and the other's body), and a snapshot streamed through a FIFO loads; a FIFO of
/// text is refused as not a regular file (it was read as CSV).
#[test]
fn a_graph_file_is_opened_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n).display().to_string();
    let tsv = d("t.tsv");
    std::fs::write(
        &tsv,
        "cat\tIsA\tanimal\ndog\tIsA\tanimal\nkitten\tIsA\tcat\n",
    )
    .unwrap();
    ok(&["ingest", &tsv, "-o", &d("plain.gps")]);
    ok(&["compress", &d("plain.gps"), "-o", &d("packed.gpsc")]);
    let (plain, packed) = (
        std::fs::read(d("plain.gps")).unwrap(),
        std::fs::read(d("packed.gpsc")).unwrap(),
    );
    let target = d("g.gps");
    std::fs::write(&target, &plain).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, target, tmp) = (stop.clone(), target.clone(), d("g.tmp"));
        std::thread::spawn(move || {
            let mut k = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let bytes = if k.is_multiple_of(2) { &packed } else { &plain };
                std::fs::write(&tmp, bytes).unwrap();
                std::fs::rename(&tmp, &target).unwrap();
                k += 1;
            }
        })
    };
    let failures: Vec<String> = (0..60)
        .filter_map(|_| {
            let out = common::gpsense(&["info", &target]);
            (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).to_string())
        })
        .collect();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    // Through a FIFO: a snapshot loads, text is refused with a reason.
    let fifo = d("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let feed = |file: String| {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let _ = std::fs::write(&fifo, std::fs::read(file).unwrap());
        })
    };
    let t = feed(d("plain.gps"));
    let (out, _) = ok(&["info", &fifo]);
    assert!(out.contains("nodes"), "{out}");
    t.join().unwrap();
    let t = feed(tsv.clone());
    let err = fails(&["info", &fifo]);
    assert!(err.contains("not a regular file"), "{err}");
    t.join().unwrap();
}

/// TruST stops at --timeout-ms (a 16-node clique template ran past 300 s): the search (similarity,
/// one-hop table, traversal) ends within the limit plus a little, marked incomplete.
#[test]
fn trust_stops_at_the_time_limit() {
    let n = 16;
    let edges: Vec<String> = (0..n)
        .flat_map(|i| ((i + 1)..n).map(move |j| format!("?v{i} RelatedTo ?v{j}")))
        .collect();
    let q = format!("SELECT * WHERE {{ {} }}", edges.join(" . "));
    let (code, _, err) = common::run_with(
        &[],
        &["trust", "--top", "1", "--timeout-ms", "1000", &q],
        Stdio::piped(),
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("timed out"), "{err}");
    let ms = |key: &str| common::millis_after(&err, key);
    let search = ms("similarity") + ms("one-hop") + ms("traversal");
    assert!(
        search < 1300.0,
        "{search} ms of search for a 1000 ms limit: {err}"
    );
}

/// SIGINT or SIGTERM during a snapshot write removes its temporary file (several MB were left
/// beside the output), and the process still dies of the signal.
#[test]
fn an_interrupted_write_leaves_no_temporary_file() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let tsv = dir.path().join("t.tsv");
    std::fs::write(&tsv, "cat\tIsA\tanimal\n").unwrap();
    for signal in ["INT", "TERM"] {
        let out = dir.path().join("g.gps");
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_gpsense"))
            .env("GPSENSE_TEST_WRITE_PAUSE_MS", "20000")
            .args(["-q", "ingest"])
            .arg(&tsv)
            .arg("-o")
            .arg(&out)
            .spawn()
            .expect("run gpsense");
        let temporary = || {
            std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().contains("gpsense-tmp"))
        };
        let waited = std::time::Instant::now();
        while !temporary() {
            assert!(
                waited.elapsed().as_secs() < 20,
                "no temporary file appeared"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let kill = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(child.id().to_string())
            .status()
            .unwrap();
        assert!(kill.success());
        let status = child.wait().unwrap();
        assert!(status.signal().is_some(), "{signal}: {status:?}");
        assert!(!temporary(), "{signal}: the temporary file is still there");
        assert!(!out.exists());
    }
}

/// Issue 27: a 7-leaf star's leaf-group product passes 2^64; the count wrapped to
/// 5,238,237,727,772,648 with exit 0.
const SEVEN_LEAF_STAR: &str =
    "SELECT * WHERE { ?x IsA ?a0 . ?x IsA ?a1 . ?x IsA ?a2 . ?x IsA ?a3 . \
                               ?x IsA ?a4 . ?x IsA ?a5 . ?x IsA ?a6 }";

#[test]
fn counts_past_64_bits_are_exact_everywhere_they_are_printed() {
    let (count, err) = ok(&["query", "--count", "--semantics", "hom", SEVEN_LEAF_STAR]);
    assert_eq!(count, "5753810593750889762793\n");
    assert!(
        err.contains("5,753,810,593,750,889,762,793 matches"),
        "{err}"
    );
    let standard = "PREFIX r: <http://conceptnet.io/r/>\n\
                    SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA ?a0, ?a1, ?a2, ?a3, ?a4, ?a5, ?a6 }";
    let (tsv, err) = ok(&["query", standard]);
    assert_eq!(tsv, "n\n5753810593750889762793\n");
    assert!(
        err.contains("1 row (5,753,810,593,750,889,762,793 solutions)"),
        "{err}"
    );
    let (json, _) = ok(&["query", "-q", "--format", "json", standard]);
    assert_eq!(json, "[\n{\"n\": 5753810593750889762793}\n]\n");
    let (_, explain) = ok(&[
        "query",
        "--explain",
        "--count",
        "--semantics",
        "hom",
        SEVEN_LEAF_STAR,
    ]);
    assert!(
        explain.contains("5,753,810,593,750,889,762,793 matches"),
        "{explain}"
    );
}

#[test]
fn a_count_past_128_bits_is_an_error() {
    // Ten components of 14,925 IsA edges each: about 5.5 x 10^41 under hom, past 2^128 - 1.
    let parts: Vec<String> = (0..10).map(|i| format!("?a{i} IsA ?b{i}")).collect();
    let q = format!("SELECT * WHERE {{ {} }}", parts.join(" . "));
    let err = fails(&["query", "--count", "--semantics", "hom", &q]);
    assert!(err.contains("the count is more than 2^128 - 1"), "{err}");
    // Five of them: 740,579,521,901,923,828,125 (14,925^5), past 2^64.
    let five = format!("SELECT * WHERE {{ {} }}", parts[..5].join(" . "));
    let (count, _) = ok(&["query", "-q", "--count", "--semantics", "hom", &five]);
    assert_eq!(count, "740579521901923828125\n");
}

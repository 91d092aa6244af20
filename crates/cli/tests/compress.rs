//! `gpsense compress` and `gpsense query --graph graph.gpsc` as a user runs them: the table, the
//! same answers as the uncompressed graph, and clear errors for damaged files and bad thresholds.

mod common;

use common::{dataset, fails, ok};

/// Sorted output lines (rows stream in no fixed order).
fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

#[test]
fn compress_prints_table_4_and_queries_answer_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let gps = dir.path().join("cn.gps");
    let gpsc = dir.path().join("cn.gpsc");
    let (gps, gpsc) = (gps.to_str().unwrap(), gpsc.to_str().unwrap());
    ok(&[
        "ingest",
        &dataset("conceptnet-100k/train.txt.gz"),
        "-o",
        gps,
    ]);
    let (table, _) = ok(&["compress", gps, "--delta", "0.8,0.7,0.7", "-o", gpsc]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 5, "{table}");
    assert!(
        lines[0].contains("level") && lines[0].contains("ratio"),
        "{table}"
    );
    assert!(
        lines[1].contains("78,093") && lines[1].contains("100.0%"),
        "{table}"
    );
    assert!(lines[2].trim_start().starts_with("1    0.8"), "{table}");
    assert!(lines[4].trim_start().starts_with("3    0.7"), "{table}");
    for query in [
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
        "SELECT DISTINCT ?r ?y WHERE { chocolate ?r ?y }",
        "SELECT * WHERE { ?a UsedFor ?b . ?b AtLocation ?c . ?c AtLocation ?d }",
    ] {
        for semantics in ["iso", "hom"] {
            let (plain, _) = ok(&["query", "--graph", gps, "--semantics", semantics, query]);
            let (through, err) = ok(&["query", "--graph", gpsc, "--semantics", semantics, query]);
            assert_eq!(sorted(&plain), sorted(&through), "{query} ({semantics})");
            assert!(err.contains("rows in"), "{err}");
        }
    }
    let (count, _) = ok(&[
        "query",
        "--graph",
        gpsc,
        "--count",
        "--semantics",
        "hom",
        "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c }",
    ]);
    let (plain, _) = ok(&[
        "query",
        "--graph",
        gps,
        "--count",
        "--semantics",
        "hom",
        "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c }",
    ]);
    assert_eq!(count, plain);
    let (_, explain) = ok(&[
        "query",
        "--graph",
        gpsc,
        "--explain",
        "SELECT ?x WHERE { ?x IsA animal }",
    ]);
    assert!(
        explain.contains("hyper-nodes") && explain.contains("compressed matches"),
        "{explain}"
    );
    // `info` and `match` read the original graph inside a compressed file.
    let (info, _) = ok(&["info", gpsc]);
    assert!(info.contains("78,093"), "{info}");
}

#[test]
fn a_size_target_and_text_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let gpsc = dir.path().join("p.gpsc");
    let gpsc = gpsc.to_str().unwrap();
    let (table, _) = ok(&[
        "compress",
        &dataset("conceptnet5-sample/assertions.csv"),
        "--delta",
        "0.5",
        "--target-bytes",
        "7K",
        "-o",
        gpsc,
    ]);
    let last = table.lines().last().unwrap();
    let bytes: u64 = last
        .split_whitespace()
        .nth(5)
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap();
    assert!(bytes <= 7 * 1024, "{table}");
    assert!(
        table.lines().count() >= 3,
        "the 0.5 threshold repeats: {table}"
    );
}

#[test]
fn bad_thresholds_and_damaged_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let gpsc = dir.path().join("s.gpsc");
    let gpsc_s = gpsc.to_str().unwrap();
    let input = dataset("conceptnet5-sample/assertions.csv");
    let err = fails(&["compress", &input, "--delta", "1.5", "-o", gpsc_s]);
    assert!(err.contains("0 < delta <= 1"), "{err}");
    let err = fails(&["compress", &input, "--delta", "0", "-o", gpsc_s]);
    assert!(err.contains("delta"), "{err}");
    ok(&["compress", &input, "-o", gpsc_s]);
    let mut bytes = std::fs::read(&gpsc).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&gpsc, &bytes).unwrap();
    let err = fails(&["query", "--graph", gpsc_s, "SELECT ?x WHERE { ?x IsA ?y }"]);
    assert!(err.contains("checksum"), "{err}");
    bytes.truncate(40);
    std::fs::write(&gpsc, &bytes).unwrap();
    let err = fails(&["query", "--graph", gpsc_s, "SELECT ?x WHERE { ?x IsA ?y }"]);
    assert!(err.contains("truncated"), "{err}");
}

//! `gpsense partition`: part files for a distributed run, and the arguments it refuses.

mod common;

use common::{dataset, fails, gpsense, ok};

const HPRD: &str = "subgraph-matching/hprd-study/data_graph/HPRD.graph";

#[test]
fn partition_writes_one_file_per_part() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("parts");
    let out_arg = out_dir.display().to_string();
    let (out, err) = ok(&["partition", &dataset(HPRD), "-n", "2", "-o", &out_arg]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let mut nodes = 0u64;
    for (i, line) in lines.iter().enumerate() {
        let path = out_dir.join(format!("part-{i}-of-2.gpsp"));
        let size = std::fs::metadata(&path).unwrap().len();
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields[0], path.display().to_string(), "{line}");
        assert!(
            fields[1].ends_with(" nodes") && fields[2].ends_with(" edges"),
            "{line}"
        );
        assert_eq!(fields[3], format!("{size} bytes"), "{line}");
        nodes += fields[1].trim_end_matches(" nodes").parse::<u64>().unwrap();
    }
    // HPRD's 9,460 nodes, split by id parity.
    assert_eq!(nodes, 9460, "{out}");
    assert!(err.contains("cut into 2 parts"), "{err}");
    // Cutting again for 1 process leaves the cut for 2 beside it.
    ok(&[
        "partition",
        "--graph",
        &dataset(HPRD),
        "-n",
        "1",
        "-o",
        &out_arg,
    ]);
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["part-0-of-1.gpsp", "part-0-of-2.gpsp", "part-1-of-2.gpsp"]
    );
}

#[test]
fn partition_refuses_bad_counts_and_compressed_graphs() {
    let dir = tempfile::tempdir().unwrap();
    let out_arg = dir.path().display().to_string();
    for n in ["0", "1025", "-3", "two"] {
        let out = gpsense(&["partition", &dataset(HPRD), "-n", n, "-o", &out_arg]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "-n {n}");
        assert!(
            err.contains("between 1 and 1024") || err.contains("unexpected argument"),
            "-n {n}: {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    // -n and -o are required.
    let out = gpsense(&["partition", &dataset(HPRD), "-o", &out_arg]);
    assert!(!out.status.success());

    let gpsc = dir.path().join("small.gpsc");
    ok(&[
        "compress",
        &dataset("pattern-commonsense/commonsense.csv"),
        "-o",
        &gpsc.display().to_string(),
    ]);
    let err = fails(&[
        "partition",
        &gpsc.display().to_string(),
        "-n",
        "2",
        "-o",
        &out_arg,
    ]);
    assert!(
        err.contains("a compressed graph cannot be partitioned"),
        "{err}"
    );
    // Missing graph file: a clean error.
    let err = fails(&["partition", "no/such/graph.gps", "-n", "2", "-o", &out_arg]);
    assert!(err.contains("no/such/graph.gps"), "{err}");
}

//! `xtask gpu-check` end to end with a stand-in for gpsense (a shell script with fixed answers), so
//! that the orchestration, the comparisons, the report and the exit status are tested without a
//! release build or a GPU.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Answers `match`, `query` and `trust` the same on every engine, except that under `--engine
/// emulated` every count (and TruST's score) is `$FAKE_OFF` higher.
const FAKE: &str = r#"#!/bin/sh
engine=dfs; prev=; count=0
for a in "$@"; do
  [ "$prev" = --engine ] && engine=$a
  [ "$a" = --count ] && count=1
  prev=$a
done
off=0
[ "$engine" = emulated ] && off=${FAKE_OFF:-0}
case "$1" in
  --version) echo "gpsense 0.0.0 (fake)" ;;
  match) printf 'query_dense_16_1\t%s\t0.5\nunlisted\t%s\t1.5\n' $((3 + off)) $((7 + off)) ;;
  query)
    if [ $count = 1 ]; then echo $((10 + off)); else printf 'x\ndog\ncat\n'; fi
    echo "2 rows in 0.4 ms [iso semantics, $engine engine]" >&2 ;;
  trust)
    printf 'score\tx\n0.%s\tdog\n' $((9000 + off))
    echo "1 matchings in 1.0 ms [TruST, beam 128: name index 0.1 ms, similarity 0.2 ms, one-hop 0.3 ms, traversal 0.4 ms]" >&2 ;;
  *) exit 2 ;;
esac
"#;

struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    /// The fake binary and a datasets directory whose expected files name one query.
    fn new() -> Setup {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("gpsense");
        fs::write(&bin, FAKE).expect("write fake");
        fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).expect("chmod");
        let sm = dir.path().join("datasets/subgraph-matching");
        for suite in ["hprd-study/query_graph", "yeast/query_graph"] {
            fs::create_dir_all(sm.join(suite)).expect("mkdir");
        }
        fs::write(
            sm.join("hprd-study/expected_output.res"),
            "query_dense_16_1:3\n",
        )
        .expect("w");
        fs::write(sm.join("yeast/yeast_ans.txt"), "query_dense_16_1.graph 3\n").expect("w");
        Setup { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn run(&self, off: u32, extra: &[&str]) -> Output {
        let (bin, data, out) = (self.path("gpsense"), self.path("datasets"), self.report());
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(["gpu-check", "--engine", "emulated", "--quick"])
            .args(
                [
                    arg("--bin", &bin),
                    arg("--datasets", &data),
                    arg("--out", &out),
                ]
                .concat(),
            )
            .args(extra)
            .env("FAKE_OFF", off.to_string())
            .output()
            .expect("run xtask")
    }

    fn report(&self) -> PathBuf {
        self.path("out/report.md")
    }
}

fn arg(name: &str, value: &Path) -> Vec<String> {
    vec![name.to_owned(), value.to_string_lossy().into_owned()]
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn agreeing_answers_pass_and_write_the_report() {
    let s = Setup::new();
    let out = s.run(0, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report_path = s.report();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        report_path.to_string_lossy()
    );
    let report = fs::read_to_string(report_path).expect("report");
    assert!(
        report.contains("**PASS: emulated vs dfs, 4 suites"),
        "{report}"
    );
    assert!(report.contains("gpsense 0.0.0 (fake), given with --bin"));
    assert!(
        report.contains("| HPRD-200, iso | 2 | 0 | 0 | 0 |"),
        "{report}"
    );
    assert!(report.contains("Not run: only with --engine gpu, not emulated."));
    // TruST on the seed's Figure 13: 16 rows, the engine's column measured (the fake's 0.2 + 0.3 +
    // 0.4 ms), each row agreeing with the CPU.
    assert!(
        report.contains("## TruST: the seed's Figure 13"),
        "{report}"
    );
    assert_eq!(
        report
            .matches("| 0.90 | 0.90 | 0.30 | 0.40 | yes |")
            .count(),
        16,
        "{report}"
    );
}

#[test]
fn a_differing_engine_fails_with_both_counts_listed() {
    let s = Setup::new();
    let out = s.run(1, &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("gpu-check: FAIL: "),
        "{}",
        stderr(&out)
    );
    let report = fs::read_to_string(s.report()).expect("report");
    assert!(report.contains("- query_dense_16_1: emulated 4, dfs 3, expected 3"));
    assert!(report.contains("- unlisted: emulated 8, dfs 7"));
    assert!(report.contains("- star: emulated 11, dfs 10"), "{report}");
    assert!(
        report.contains("| HPRD-200, hom | 2 | 2 | 0 | 0 |"),
        "{report}"
    );
    assert!(
        report.contains("16 TruST rows failed or disagreeing"),
        "{report}"
    );
    assert!(report.contains("| **no** |"), "{report}");
}

#[test]
fn a_later_option_wins_as_run_sh_needs() {
    let s = Setup::new();
    let other = s.path("elsewhere.md");
    let out = s.run(
        0,
        &arg("--out", &other)
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(other.is_file() && !s.report().exists());
}

#[test]
fn a_missing_binary_or_dataset_is_a_clear_error() {
    let s = Setup::new();
    fs::remove_file(s.path("gpsense")).expect("rm");
    let out = s.run(0, &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("gpsense: no such binary"),
        "{}",
        stderr(&out)
    );
    fs::remove_dir_all(s.path("datasets/subgraph-matching/yeast")).expect("rm");
    let out = s.run(0, &[]);
    assert!(stderr(&out).contains("yeast not found: give the datasets directory with --datasets"));
}

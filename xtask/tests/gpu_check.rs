//! `xtask gpu-check` end to end with a stand-in for gpsense (a shell script with fixed answers), so
//! that the orchestration, the comparisons, the report and the exit status are tested without a
//! release build or a GPU; EGSM's side too, with stand-ins for EGSM, its source tree and its
//! toolchain.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Answers `match`, `query` and `trust` the same on every engine, except that under `--engine
/// emulated` every count (and TruST's score) is `$FAKE_OFF` higher.
const FAKE: &str = r#"#!/bin/sh
engine=dfs; prev=; count=0; explain=0
for a in "$@"; do
  [ "$prev" = --engine ] && engine=$a
  [ "$a" = --count ] && count=1
  [ "$a" = --explain ] && explain=1
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
    if [ $explain = 1 ]; then
      echo "traversal: 3 levels; per level its longest branch, summed: 86 candidates judged (one after another with a thread per branch), in 4 rounds of a warp" >&2
    fi
    echo "1 matchings in 1.0 ms [TruST, beam 128: name index 0.1 ms, similarity 0.2 ms, one-hop 0.3 ms, traversal 0.4 ms]" >&2 ;;
  *) exit 2 ;;
esac
"#;

/// Prints the lines EGSM ends a run with (its format as read from its source, not a recorded run),
/// `$FAKE_EGSM_COUNT` matches (3 by default), after checking its `-q QUERY -d DATA` files exist.
const FAKE_EGSM: &str = r##"#!/bin/sh
[ "$1" = -q ] && [ -f "$2" ] && [ "$3" = -d ] && [ -f "$4" ] || { echo "File not exist!"; exit 255; }
echo "Build Cuckoo Tries, time (ms): 0.5(host), 0.4(kernel)"
echo "Filtering, time (ms): 0.25(host), 0.2(kernel)"
echo "Total join time (ms): 0.25(host) 0.2(kernel)"
echo "# Matches: ${FAKE_EGSM_COUNT:-3}"
echo "End."
"##;

/// A data graph and the one query both suites' expected files name, in the suites' format.
const DATA: &str = "t 3 2\nv 0 1 1\nv 1 2 2\nv 2 1 1\ne 0 1\ne 1 2\n";
const QUERY: &str = "t 2 1\nv 0 1 1\nv 1 2 1\ne 0 1 0\n";

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
        for (suite, data) in [("hprd-study", "HPRD.graph"), ("yeast", "yeast.graph")] {
            for sub in ["query_graph", "data_graph"] {
                fs::create_dir_all(sm.join(suite).join(sub)).expect("mkdir");
            }
            fs::write(sm.join(suite).join("data_graph").join(data), DATA).expect("w");
            let q = sm.join(suite).join("query_graph/query_dense_16_1.graph");
            fs::write(q, QUERY).expect("w");
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

    /// [`Setup::run`] with one more option, a path.
    fn run_with(&self, name: &str, value: &Path) -> Output {
        let extra = arg(name, value);
        self.run(0, &extra.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn report(&self) -> PathBuf {
        self.path("out/report.md")
    }

    /// An executable script at `rel`.
    fn script(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, text).expect("write script");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
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
    // 0.4 ms) with its traversal's span (asked of the engine with --explain), each row agreeing
    // with the CPU.
    assert!(
        report.contains("## TruST: the seed's Figure 13"),
        "{report}"
    );
    assert_eq!(
        report
            .matches("| 0.90 | 0.90 | 0.30 | 0.40 | 86 → 4 | yes |")
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
    let out = s.run_with("--out", &other);
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

#[test]
fn egsm_runs_beside_gpsense_on_the_iso_suites_its_counts_held_to_dfs() {
    let s = Setup::new();
    let egsm = s.script("egsm-bin/EGSM", FAKE_EGSM);
    let egsm_args = arg("--egsm", &egsm);
    let extra: Vec<&str> = egsm_args.iter().map(String::as_str).collect();
    let out = s.run(0, &extra);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("gpu-check: EGSM: 2 queries ran, 2 agree with dfs, 0 differ"),
        "{}",
        stderr(&out)
    );
    let report = s.read("out/report.md");
    // Two queries per suite: the one converted ran and agrees; `unlisted` has no file to convert.
    for suite in ["HPRD-200, iso", "yeast, published count <= 1e5"] {
        let row = format!("| {suite} | 2 | 1 | 1 | 0 | 0 | 0 | 1 | 1 | 0.5 | 0.5 | 1.0 |");
        assert!(report.contains(&row), "{row}\n{report}");
    }
    assert!(!report.contains("| HPRD-200, hom | 2 | 1"), "{report}");
    let detail = s.read("out/egsm.md");
    assert!(
        detail.contains("| query_dense_16_1 | 3 | 3 | 3 | 3 | yes | 0.500 | 0.500 | 1.000 |"),
        "{detail}"
    );
    assert!(detail.contains("| unlisted | - | 7 | 7 | skipped: not converted"));
    assert!(s.read("out/egsm.csv").lines().count() == 5);
    // Converted at run time, beside the report: EGSM's format, the edge label dropped.
    assert_eq!(
        s.read("out/egsm-inputs/yeast/queries/query_dense_16_1.graph"),
        "t 2 1\nv 0 1 1\nv 1 2 1\ne 0 1\n"
    );
    // A differing EGSM is reported, and does not decide the verdict.
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "gpu-check",
            "--engine",
            "emulated",
            "--quick",
            "--egsm-only",
        ])
        .args(
            [
                arg("--bin", &s.path("gpsense")),
                arg("--datasets", &s.path("datasets")),
            ]
            .concat(),
        )
        .args([arg("--out", &s.path("only/report.md")), egsm_args].concat())
        .env("FAKE_EGSM_COUNT", "4")
        .output()
        .expect("run xtask");
    assert!(out.status.success(), "{}", stderr(&out));
    let report = s.read("only/report.md");
    assert!(
        report.contains("- HPRD-200, iso: **EGSM differs**: query_dense_16_1: EGSM 4, dfs 3, emulated 3, published 3"),
        "{report}"
    );
    // --egsm-only: the two iso suites, nothing else.
    assert!(
        report.contains("**PASS: emulated vs dfs, 2 suites"),
        "{report}"
    );
    assert!(report.contains("Not run: --egsm-only."));
    assert!(!report.contains("## TruST"));
}

#[test]
fn a_missing_egsm_binary_is_said_in_the_report_not_fatal() {
    let s = Setup::new();
    let missing = s.path("egsm/build/EGSM");
    let extra = arg("--egsm", &missing);
    let out = s.run(0, &extra.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(out.status.success(), "{}", stderr(&out));
    let report = s.read("out/report.md");
    assert!(
        report.contains(&format!(
            "**EGSM did not run**: no EGSM binary at {}",
            missing.display()
        )),
        "{report}"
    );
}

/// Stand-ins for EGSM's tree: the files and the lines `build.sh` patches, in text of our own.
fn egsm_tree(s: &Setup) -> PathBuf {
    let tree = s.path("egsm-src");
    for (rel, text) in [
        ("LICENSE", "stand-in licence\n"),
        ("main.cpp", "// stand-in\n"),
        ("CMakeLists.txt", "set_target_properties(x PROPERTIES CUDA_ARCHITECTURES \"70\")\n"),
        (
            "utils/cuda_helpers.h",
            "<< static_cast<unsigned long>(diff.count() * 1000) << static_cast<unsigned long>(kernel_time)\n",
        ),
        ("cub/cub.cuh", "// stand-in\n"),
    ] {
        fs::create_dir_all(tree.join(rel).parent().expect("parent")).expect("mkdir");
        fs::write(tree.join(rel), text).expect("write");
    }
    tree
}

/// A toolchain that builds nothing: nvcc and nvidia-smi answer, cmake logs its arguments and makes
/// the binary it is asked for.
fn fake_toolchain(s: &Setup) -> PathBuf {
    s.script(
        "tools/nvcc",
        "#!/bin/sh\necho 'Cuda compilation tools, release 13.0, V13.0.48'\n",
    );
    s.script("tools/nvidia-smi", "#!/bin/sh\necho 9.0\n");
    s.script(
        "tools/cmake",
        "#!/bin/sh\necho \"$*\" >> \"$CMAKE_LOG\"\n\
         [ \"$1\" = --version ] && echo 'cmake version 3.28.3'\n\
         if [ \"$1\" = --build ]; then printf '#!/bin/sh\\n' > \"$2/EGSM\"; chmod +x \"$2/EGSM\"; fi\n\
         if [ \"$1\" = -S ]; then mkdir -p \"$4\"; fi\n",
    );
    s.path("tools")
}

#[test]
fn a_bundle_carries_egsms_source_inputs_and_a_build_script_that_patches_at_build_time() {
    let s = Setup::new();
    let tree = egsm_tree(&s);
    let dir = s.path("bundle");
    let bundle_args = [arg("--bundle", &dir), arg("--egsm-source", &tree)].concat();
    let out = s.run(
        0,
        &bundle_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    for rel in ["bundle/gpsense", "bundle/xtask", "bundle/egsm/EGSM.tar.gz"] {
        assert!(s.path(rel).is_file(), "{rel}");
    }
    assert_eq!(s.read("bundle/egsm/LICENSE"), "stand-in licence\n");
    assert_eq!(
        s.read("bundle/egsm/inputs/hprd-study/queries/query_dense_16_1.graph"),
        "t 2 1\nv 0 1 1\nv 1 2 1\ne 0 1\n"
    );
    assert_eq!(s.read("bundle/egsm/inputs/yeast/data.graph"), DATA);
    for script in ["bundle/run.sh", "bundle/egsm/build.sh"] {
        let mode = fs::metadata(s.path(script))
            .expect("stat")
            .permissions()
            .mode();
        assert!(mode & 0o111 != 0, "{script} is not executable");
        let syntax = Command::new("bash")
            .arg("-n")
            .arg(s.path(script))
            .output()
            .expect("bash");
        assert!(syntax.status.success(), "{script}: {}", stderr(&syntax));
    }
    assert!(s
        .read("bundle/run.sh")
        .contains("--egsm ./egsm/build/EGSM --egsm-inputs ./egsm/inputs"));

    // The build script on a stand-in toolchain: extracted, patched, configured for sm_90, built once.
    let tools = fake_toolchain(&s);
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let build = || {
        Command::new(s.path("bundle/egsm/build.sh"))
            .env("PATH", &path)
            .env("CMAKE_LOG", s.path("cmake.log"))
            .output()
            .expect("build.sh")
    };
    let first = build();
    assert!(first.status.success(), "{}", stderr(&first));
    let src = "bundle/egsm/src";
    assert!(s
        .read(&format!("{src}/CMakeLists.txt"))
        .contains("CUDA_ARCHITECTURES \"90\""));
    assert_eq!(
        s.read(&format!("{src}/utils/cuda_helpers.h")),
        "<< (diff.count() * 1000) << (kernel_time)\n"
    );
    assert!(
        !s.path(&format!("{src}/cub")).exists(),
        "its CUB copy is removed"
    );
    let log = s.read("cmake.log");
    assert!(log.contains("-DCMAKE_CUDA_ARCHITECTURES=90"), "{log}");
    assert!(
        log.contains("--build") && log.contains("--target EGSM"),
        "{log}"
    );
    let again = build();
    assert!(String::from_utf8_lossy(&again.stdout).contains("EGSM already built for sm_90"));

    // Bundled again without a source: no stale EGSM left behind.
    let out = s.run_with("--bundle", &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!s.path("bundle/egsm").exists());
    assert!(stderr(&out).contains("no EGSM in the bundle"));
}

/// A bundle whose `datasets` is a link to the datasets it is written from (a hand-made bundle
/// that saves space) gets a copy of its own: the files it was written from keep their contents.
#[test]
fn a_bundle_never_copies_the_datasets_onto_themselves() {
    let s = Setup::new();
    let dir = s.path("bundle");
    fs::create_dir_all(&dir).expect("mkdir");
    std::os::unix::fs::symlink(s.path("datasets"), dir.join("datasets")).expect("link");
    let out = s.run_with("--bundle", &dir);
    assert!(out.status.success(), "{}", stderr(&out));
    let data = "datasets/subgraph-matching/hprd-study/data_graph/HPRD.graph";
    assert_eq!(s.read(data), DATA);
    assert_eq!(s.read(&format!("bundle/{data}")), DATA);
    let link = fs::symlink_metadata(dir.join("datasets")).expect("there");
    assert!(link.is_dir() && !link.file_type().is_symlink());
}

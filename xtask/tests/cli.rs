//! The `xtask` binary end to end, without the network: unreachable and local (`file://`) URLs only.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("run xtask")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 temp path")
}

#[test]
fn an_unreachable_host_fails_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = path_str(dir.path());
    let out = xtask(&[
        "fetch",
        "conceptnet",
        "--dest",
        dest,
        "--url",
        "http://127.0.0.1:9/x",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("error: cannot reach 127.0.0.1: no network?"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(entries(dir.path()).is_empty(), "no partial file left");
}

#[test]
fn a_missing_local_file_fails_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = path_str(dir.path());
    let url = "file:///nonexistent/xtask/conceptnet.csv.gz";
    let out = xtask(&["fetch", "conceptnet", "--dest", dest, "--url", url]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("error: cannot read file:///nonexistent"));
    assert!(entries(dir.path()).is_empty());
}

/// A `file://` "mirror": kept with the right digest, not kept with a wrong one or none.
#[test]
fn a_local_copy_is_kept_only_with_the_right_digest() {
    let src = tempfile::tempdir().expect("tempdir");
    let copy = src.path().join("copy.csv.gz");
    fs::write(&copy, b"hello\n").expect("write");
    let url = format!("file://{}", path_str(&copy));
    let good = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
    let bad = "0".repeat(64);
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = path_str(dir.path());
    let fetch = |extra: &[&str]| {
        let mut args = vec!["fetch", "conceptnet", "--dest", dest, "--url", &url];
        args.extend_from_slice(extra);
        xtask(&args)
    };

    let out = fetch(&["--sha256", &bad]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("SHA-256 mismatch"),
        "{}",
        stderr(&out)
    );
    assert!(entries(dir.path()).is_empty());

    let out = fetch(&[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(&format!("--sha256 {good}")),
        "{}",
        stderr(&out)
    );
    assert!(entries(dir.path()).is_empty());

    let out = fetch(&["--sha256", good]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(entries(dir.path()), ["conceptnet-assertions-5.7.0.csv.gz"]);

    // Already there: nothing is downloaded (the URL is not even tried).
    let out = xtask(&[
        "fetch",
        "conceptnet",
        "--dest",
        dest,
        "--url",
        "http://127.0.0.1:9/x",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("already fetched"));
}

#[test]
fn bad_arguments_are_refused_before_any_download() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = path_str(dir.path());
    let out = xtask(&["fetch", "wordnet", "--dest", dest]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("conceptnet, senticnet"),
        "{}",
        stderr(&out)
    );

    let out = xtask(&["fetch", "conceptnet", "--dest", dest, "--sha256", "abc"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not a SHA-256"),
        "{}",
        stderr(&out)
    );

    let out = xtask(&["fetch", "senticnet", "--dest", dest, "--url", "http://x/y"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--url only applies"),
        "{}",
        stderr(&out)
    );

    let out = xtask(&[
        "fetch",
        "senticnet",
        "--dest",
        dest,
        "--sha256",
        &"1".repeat(64),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("contradicts the digest pinned"),
        "{}",
        stderr(&out)
    );
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn lists_the_datasets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = path_str(dir.path());
    fs::write(dir.path().join("senticnet6.triples.tsv.gz"), b"x").expect("write");
    for args in [
        &["list", "--dest", dest][..],
        &["fetch", "--list", "--dest", dest],
    ] {
        let out = xtask(args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("conceptnet"), "{text}");
        assert!(text.contains("about 475 MB"), "{text}");
        assert!(text.contains("not fetched"), "{text}");
        assert!(text.contains("senticnet6.triples.tsv.gz (1 B)"), "{text}");
    }
}

//! Running the `gpsense` binary in the CLI tests.
#![allow(dead_code)] // each test file uses a different subset

pub mod http;
pub mod venv;

use std::path::Path;
use std::process::{Command, Output, Stdio};

pub fn gpsense(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .args(args)
        .output()
        .expect("run gpsense")
}

/// Runs gpsense with extra environment variables and `stdout` (`Stdio::piped()` to capture it):
/// its exit code, stdout and stderr.
pub fn run_with(
    env: &[(&str, &str)],
    args: &[&str],
    stdout: Stdio,
) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .envs(env.iter().copied())
        .args(args)
        .stdout(stdout)
        .output()
        .expect("run gpsense");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The number before ` ms` that follows `key ` in a summary (`filter 12.3 ms`).
pub fn millis_after(text: &str, key: &str) -> f64 {
    text.split(&format!("{key} "))
        .nth(1)
        .and_then(|t| t.split(" ms").next())
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} time in {text}"))
}

/// Runs a command that must succeed; its stdout and stderr.
pub fn ok(args: &[&str]) -> (String, String) {
    let out = gpsense(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "gpsense {args:?} failed:\n{stderr}");
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

/// Runs a command that must fail cleanly (exit 1, no panic); its stderr.
pub fn fails(args: &[&str]) -> String {
    let out = gpsense(args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(1),
        "gpsense {args:?} should fail cleanly:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

/// A path under the shipped `datasets/`.
pub fn dataset(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets")
        .join(rel)
        .display()
        .to_string()
}

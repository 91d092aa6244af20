//! Running the `gpsense` binary in the CLI tests.
#![allow(dead_code)] // each test file uses a different subset

use std::path::Path;
use std::process::{Command, Output};

pub fn gpsense(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpsense"))
        .args(args)
        .output()
        .expect("run gpsense")
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

//! The workbench in a real browser: runs `tests/workbench/test_workbench.py` (Playwright for Python
//! driving Debian's Chromium, `/usr/bin/chromium` or `GPSENSE_CHROMIUM`) against `gpsense serve`,
//! in a virtual environment of its own under the target directory. pip needs PyPI, and tests do
//! not touch the network by default: this runs only with `GPSENSE_PY_TESTS=1` (CI sets it, after
//! installing Chromium), and passes with a note otherwise. Screenshots go to
//! `target/workbench/`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn test_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/workbench")
}

/// A venv with the pinned requirements, made once and reused while they stay the same.
/// Playwright's Python package only: the browser is the system's, never downloaded.
fn venv() -> PathBuf {
    common::venv::with_requirements("workbench-venv", &test_dir().join("requirements.txt"))
}

#[test]
fn the_workbench_works_in_chromium() {
    if std::env::var("GPSENSE_PY_TESTS").ok().as_deref() != Some("1") {
        eprintln!("skipped: set GPSENSE_PY_TESTS=1 to test the workbench in Chromium (needs PyPI)");
        return;
    }
    let chromium = std::env::var("GPSENSE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "no Chromium at {chromium}: apt-get install chromium, or set GPSENSE_CHROMIUM"
    );
    let python = venv();
    // target/workbench: beside the target directory's other outputs.
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("workbench");
    let out = Command::new(python)
        .arg(test_dir().join("test_workbench.py"))
        .args(["--gpsense", env!("CARGO_BIN_EXE_gpsense")])
        .arg("--out")
        .arg(&out_dir)
        .env("GPSENSE_CHROMIUM", &chromium)
        .output()
        .expect("run test_workbench.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "test_workbench.py failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" checks passed"), "{stdout}");
    eprintln!(
        "{} (screenshots in {})",
        stdout.trim_end(),
        out_dir.display()
    );
}

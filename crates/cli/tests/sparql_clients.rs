//! `gpsense serve` (through a real SPARQL client, SPARQLWrapper) and `gpsense query` against
//! pyoxigraph: runs `tests/sparql_clients/compare.py` in a virtual environment of its own under the
//! target directory. pip needs PyPI, and tests do not touch the network by default: this runs only with
//! `GPSENSE_PY_TESTS=1` (CI sets it), and passes with a note otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sparql_clients")
}

/// A venv with the pinned requirements, made once and reused while they stay the same.
fn venv() -> PathBuf {
    common::venv::with_requirements(
        "sparql-clients-venv",
        &clients_dir().join("requirements.txt"),
    )
}

#[test]
fn sparqlwrapper_gets_what_pyoxigraph_answers() {
    if std::env::var("GPSENSE_PY_TESTS").ok().as_deref() != Some("1") {
        eprintln!("skipped: set GPSENSE_PY_TESTS=1 to compare with pyoxigraph (needs PyPI)");
        return;
    }
    let python = venv();
    let out = Command::new(python)
        .arg(clients_dir().join("compare.py"))
        .args(["--gpsense", env!("CARGO_BIN_EXE_gpsense")])
        .output()
        .expect("run compare.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "compare.py failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
    eprintln!("{}", stdout.trim_end());
}

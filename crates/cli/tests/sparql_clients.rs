//! `gpsense serve` (through a real SPARQL client, SPARQLWrapper) and `gpsense query` against
//! pyoxigraph: runs `tests/sparql_clients/compare.py` in a virtual environment of its own under the
//! target directory. pip needs PyPI, and tests do not touch the network by default: this runs only with
//! `GPSENSE_PY_TESTS=1` (CI sets it), and passes with a note otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

fn clients_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sparql_clients")
}

/// A venv with the pinned requirements, made once and reused while they stay the same.
fn venv() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sparql-clients-venv");
    let requirements = clients_dir().join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).expect("read requirements.txt");
    let stamp = dir.join("installed-requirements.txt");
    let python = dir.join("bin/python");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && python.exists() {
        return python;
    }
    let made = Command::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(&dir)
        .status()
        .expect("run python3 -m venv");
    assert!(made.success(), "python3 -m venv {} failed", dir.display());
    let pip = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements)
        .status()
        .expect("run pip");
    assert!(
        pip.success(),
        "pip install -r {} failed",
        requirements.display()
    );
    std::fs::write(&stamp, wanted).expect("write the stamp");
    python
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

//! Python virtual environments for the tests that drive Python clients (PyPI needed; those tests
//! run only with `GPSENSE_PY_TESTS=1`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// A venv named `name` under the target directory with `requirements` installed, made once and
/// reused while the requirements stay the same. Returns its `python`.
pub fn with_requirements(name: &str, requirements: &Path) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let wanted = std::fs::read_to_string(requirements).expect("read requirements.txt");
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
        .arg(requirements)
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

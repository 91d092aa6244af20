//! The Python peers: a virtualenv under `target/bench/venv`, the packages installed from PyPI with
//! pip (binary wheels only, so no compiler or system library is needed), and which peer engines are
//! available, with pip's reason where one is not. A failed install never aborts the run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A PyPI package, the module it provides and the peer engines that use it.
pub struct Package {
    pub pip: &'static str,
    pub module: &'static str,
    pub engines: &'static [&'static str],
}

pub const PACKAGES: &[Package] = &[
    Package {
        pip: "python-igraph",
        module: "igraph",
        engines: &["igraph-vf2", "igraph-lad"],
    },
    Package {
        pip: "networkx",
        module: "networkx",
        engines: &["networkx-vf2"],
    },
    Package {
        pip: "rustworkx",
        module: "rustworkx",
        engines: &["rustworkx-vf2"],
    },
    Package {
        pip: "pyoxigraph",
        module: "pyoxigraph",
        engines: &["oxigraph-sparql"],
    },
    Package {
        pip: "kuzu",
        module: "kuzu",
        engines: &["kuzu-cypher"],
    },
];

/// The state of one package after set-up.
#[derive(Clone, Debug)]
pub struct PackageState {
    pub pip: &'static str,
    /// The installed version, or why there is none.
    pub version: Result<String, String>,
}

/// Where the Python peers run.
pub struct Peers {
    pub python: Option<PathBuf>,
    pub packages: Vec<PackageState>,
    /// What set-up did, for the report.
    pub notes: Vec<String>,
}

impl Peers {
    /// `Ok(version)` when `engine`'s package is installed, otherwise why not.
    pub fn engine(&self, engine: &str) -> Result<&str, String> {
        let pkg = PACKAGES
            .iter()
            .position(|p| p.engines.contains(&engine))
            .ok_or_else(|| format!("unknown peer {engine}"))?;
        match &self.packages[pkg].version {
            Ok(v) => Ok(v),
            Err(e) => Err(e.clone()),
        }
    }

    pub fn none(reason: &str) -> Self {
        Peers {
            python: None,
            packages: PACKAGES
                .iter()
                .map(|p| PackageState {
                    pip: p.pip,
                    version: Err(reason.to_owned()),
                })
                .collect(),
            notes: vec![reason.to_owned()],
        }
    }
}

/// Creates the virtualenv if needed and installs what is missing (unless `install` is false).
pub fn set_up(venv: &Path, install: bool, log: &mut dyn FnMut(&str)) -> Peers {
    let python = venv.join("bin/python");
    let mut notes = Vec::new();
    if !python.exists() {
        if !install {
            return Peers::none(&format!(
                "no virtualenv at {} and installing was not allowed (--offline)",
                venv.display()
            ));
        }
        log(&format!("creating the virtualenv {}", venv.display()));
        let out = Command::new("python3")
            .arg("-m")
            .arg("venv")
            .arg(venv)
            .output();
        match out {
            Ok(o) if o.status.success() => notes.push(format!("created {}", venv.display())),
            Ok(o) => {
                return Peers::none(&format!(
                    "python3 -m venv failed: {}",
                    last_lines(&String::from_utf8_lossy(&o.stderr), 2)
                ))
            }
            Err(e) => return Peers::none(&format!("python3 is not available: {e}")),
        }
    }
    let mut packages = Vec::new();
    for p in PACKAGES {
        let mut version = version_of(&python, p.module);
        if version.is_err() && install {
            log(&format!("pip install {}", p.pip));
            let out = Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                    "--only-binary=:all:",
                    "--timeout",
                    "60",
                    p.pip,
                ])
                .stdin(Stdio::null())
                .output();
            version = match out {
                Ok(o) if o.status.success() => {
                    notes.push(format!("installed {}", p.pip));
                    version_of(&python, p.module)
                }
                Ok(o) => Err(format!(
                    "pip install {} failed: {}",
                    p.pip,
                    last_lines(&String::from_utf8_lossy(&o.stderr), 2)
                )),
                Err(e) => Err(format!("cannot run pip: {e}")),
            };
        } else if version.is_err() {
            version = Err(format!("{} is not installed (--offline)", p.pip));
        }
        packages.push(PackageState {
            pip: p.pip,
            version,
        });
    }
    Peers {
        python: Some(python),
        packages,
        notes,
    }
}

fn version_of(python: &Path, module: &str) -> Result<String, String> {
    let code = format!(
        "import importlib.metadata as m, {module}; print(getattr({module}, '__version__', None) or '?')"
    );
    match Command::new(python).arg("-c").arg(code).output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned()),
        Ok(o) => Err(format!(
            "import {module} failed: {}",
            last_lines(&String::from_utf8_lossy(&o.stderr), 1)
        )),
        Err(e) => Err(format!("cannot run {}: {e}", python.display())),
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" ")
}

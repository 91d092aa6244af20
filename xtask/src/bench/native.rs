//! The native exact matchers (DAF, VEQ, GuP, RapidMatch): where their sources come from (a local
//! directory given with `--peer-src`, or `git clone` of the pinned commit), how they are built under
//! `target/bench/peers/` (their code is never copied into this repository: GuP permits evaluation
//! only), the input files each reads, one query run in a child process with a time limit, and the
//! parsing of what each prints.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

/// The input format a peer reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// The suites' own `t/v/e` files (DAF, RapidMatch).
    Tve,
    /// VEQ's GFU: `#name`, vertex count, one label per line, edge count, `u v` per line.
    Gfu,
    /// GuP's `<graph>.vertices` / `<graph>.edges` (TSV) and a YAML query set.
    Gup,
}

/// One native peer, pinned to a commit.
pub struct Peer {
    /// Engine name in the results.
    pub engine: &'static str,
    /// GitHub `owner/name`.
    pub repo: &'static str,
    pub commit: &'static str,
    /// What its build needs from the tree (the rest, datasets mostly, is not extracted).
    pub paths: &'static [&'static str],
    /// A patch of ours under `xtask/bench/`, applied with `patch -p1` before building.
    pub patch: Option<&'static str>,
    pub input: Input,
}

pub const PEERS: &[Peer] = &[
    Peer {
        engine: "DAF",
        repo: "SNUCSE-CTA/DAF",
        commit: "a2bf15350b1f334d0bdd3ebdecef355449ad2059",
        paths: &["CMakeLists.txt", "main", "src", "include", "global"],
        patch: None,
        input: Input::Tve,
    },
    Peer {
        engine: "VEQ",
        repo: "SNUCSE-CTA/VEQ_S",
        commit: "f59af31ea14ec9e71623e98a80bd640b4c5c2996",
        paths: &["Makefile", "include", "src"],
        patch: Some("veq-max-match.patch"),
        input: Input::Gfu,
    },
    Peer {
        engine: "GuP",
        repo: "araij/gup",
        commit: "fbaf103967b40a5a6837e5404f61479c008586c8",
        paths: &["Cargo.toml", "Cargo.lock", "src"],
        patch: None,
        input: Input::Gup,
    },
    Peer {
        engine: "RapidMatch",
        repo: "RapidsAtHKUST/RapidMatch",
        commit: "24f08cc83048dc7973e9b11f7faf655cf1bda20b",
        paths: &[
            "CMakeLists.txt",
            "configuration",
            "graph",
            "matching",
            "preprocessing",
            "utility",
        ],
        patch: None,
        input: Input::Tve,
    },
];

/// Engine names of the native peers (for `--peer`).
pub const NAMES: &[&str] = &["DAF", "VEQ", "GuP", "RapidMatch"];

impl Peer {
    fn slug(&self) -> String {
        self.engine.to_ascii_lowercase()
    }

    fn name(&self) -> &'static str {
        self.repo.rsplit('/').next().unwrap_or(self.repo)
    }

    /// Where a `--peer-src DIR` may hold this peer: `DIR/<name>` (a checkout or a git dir),
    /// `DIR/<name>.git`, `DIR/<owner>+<name>` and `DIR/<owner>+<name>/repo` (the mirror layout),
    /// the name also lower-cased.
    pub fn candidates(&self, dir: &Path) -> Vec<PathBuf> {
        let name = self.name();
        let mirror = self.repo.replace('/', "+");
        let mut out = vec![
            dir.join(name),
            dir.join(format!("{name}.git")),
            dir.join(&mirror).join("repo"),
            dir.join(&mirror),
            dir.join(name.to_ascii_lowercase()),
            dir.join(self.slug()),
        ];
        out.dedup();
        out
    }
}

/// A built peer: the binary for full counts and the one for a match limit (VEQ has the limit
/// compiled in: two builds; the others take it on the command line).
#[derive(Clone, Debug)]
pub struct Built {
    pub full: PathBuf,
    pub limited: PathBuf,
    /// Where the source came from, for the report.
    pub origin: String,
}

/// Where to get sources from.
pub struct Sources<'a> {
    pub dir: Option<&'a Path>,
    /// `git clone` from GitHub when no directory holds the peer.
    pub clone: bool,
    /// `xtask/bench/`, where the patches are.
    pub patches: &'a Path,
}

/// Changes when the build steps below change, so that older builds are redone.
const BUILD_RECIPE: &str = "recipe-2";

/// Gets, patches and builds one peer under `root` (`target/bench/peers/<peer>/`), reusing a build
/// of the same commit and patch. Errors are for the report.
pub fn prepare(
    peer: &Peer,
    sources: &Sources,
    root: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<Built, String> {
    let base = root.join(peer.slug());
    std::fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
    let patch = match peer.patch {
        Some(p) => Some(
            std::fs::read(sources.patches.join(p))
                .map_err(|e| format!("cannot read xtask/bench/{p}: {e}"))?,
        ),
        None => None,
    };
    let stamp_text = format!(
        "{} {} {BUILD_RECIPE}\n",
        peer.commit,
        patch
            .as_ref()
            .map(|p| format!("{:x}", Sha256::digest(p)))
            .unwrap_or_else(|| "no-patch".into())
    );
    let stamp = base.join("built.stamp");
    let (full, limited) = binaries(peer, &base);
    let origin_file = base.join("origin.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(stamp_text.as_str())
        && full.exists()
        && limited.exists()
    {
        let origin = std::fs::read_to_string(&origin_file).unwrap_or_default();
        return Ok(Built {
            full,
            limited,
            origin: format!("{} (built before)", origin.trim()),
        });
    }
    let _ = std::fs::remove_file(&stamp);
    // A fresh build: CMake refuses a cache made elsewhere (a moved target/).
    let _ = std::fs::remove_dir_all(base.join("build"));
    let src = base.join("src");
    let origin = fetch_source(peer, sources, &base, &src, log)?;
    if let Some(p) = peer.patch {
        let out = Command::new("patch")
            .args(["-p1", "--forward", "--quiet", "-d"])
            .arg(&src)
            .arg("-i")
            .arg(sources.patches.join(p))
            .output()
            .map_err(|e| format!("cannot run patch: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "patch {p} failed: {}",
                last_lines(&String::from_utf8_lossy(&out.stdout), 2)
            ));
        }
    }
    log(&format!("building {} ({})", peer.engine, &peer.commit[..7]));
    build(peer, &src, &base)?;
    if !full.exists() || !limited.exists() {
        return Err(format!("the build made no {}", full.display()));
    }
    let _ = std::fs::write(&origin_file, &origin);
    let _ = std::fs::write(&stamp, stamp_text);
    Ok(Built {
        full,
        limited,
        origin,
    })
}

fn binaries(peer: &Peer, base: &Path) -> (PathBuf, PathBuf) {
    match peer.engine {
        "DAF" => {
            let b = base.join("build/main/DAF");
            (b.clone(), b)
        }
        "VEQ" => (base.join("src/VEQ_M_all"), base.join("src/VEQ_M")),
        "GuP" => {
            let b = base.join("build/release/gup");
            (b.clone(), b)
        }
        _ => {
            let b = base.join("build/matching/RapidMatch.out");
            (b.clone(), b)
        }
    }
}

/// Extracts the pinned commit's `paths` into `src`; returns where it came from.
fn fetch_source(
    peer: &Peer,
    sources: &Sources,
    base: &Path,
    src: &Path,
    log: &mut dyn FnMut(&str),
) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(src).map_err(|e| format!("cannot create {}: {e}", src.display()))?;
    let mut tried = Vec::new();
    if let Some(dir) = sources.dir {
        for c in peer.candidates(dir) {
            if !c.exists() {
                continue;
            }
            if let Some(git) = git_dir(&c) {
                archive(&git, peer, src)?;
                return Ok(format!("{} at {} (pinned)", c.display(), peer.commit));
            }
            if c.join(peer.paths[0]).exists() {
                // A plain copy of the tree: the commit cannot be checked.
                for p in peer.paths {
                    let status = Command::new("cp")
                        .arg("-r")
                        .arg(c.join(p))
                        .arg(src)
                        .status()
                        .map_err(|e| format!("cannot run cp: {e}"))?;
                    if !status.success() {
                        return Err(format!("cannot copy {}", c.join(p).display()));
                    }
                }
                return Ok(format!(
                    "{} (a plain directory: commit not checked, expected {})",
                    c.display(),
                    peer.commit
                ));
            }
            tried.push(c.display().to_string());
        }
        if !sources.clone {
            return Err(format!(
                "no source for {} in {} (looked for {}; {})",
                peer.engine,
                dir.display(),
                peer.candidates(dir)
                    .iter()
                    .map(|c| c
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned())
                    .collect::<Vec<_>>()
                    .join(", "),
                if tried.is_empty() {
                    "none exists".to_owned()
                } else {
                    format!("unusable: {}", tried.join(", "))
                }
            ));
        }
    }
    if !sources.clone {
        return Err(format!(
            "no source: pass --peer-src DIR (a checkout or git dir of {} per peer) or run without --offline/--quick to clone",
            peer.repo
        ));
    }
    let git = base.join("git");
    if git_dir(&git).is_none() {
        let url = format!("https://github.com/{}.git", peer.repo);
        log(&format!("git clone {url}"));
        let _ = std::fs::remove_dir_all(&git);
        let mut c = Command::new("git");
        c.args(["clone", "--quiet", "--bare", &url])
            .arg(&git)
            .env("GIT_TERMINAL_PROMPT", "0");
        match run_limited(c, Duration::from_secs(300)) {
            Ran::Exited { ok: true, .. } => {}
            Ran::Exited { stderr, .. } => {
                return Err(format!(
                    "git clone {url} failed: {}",
                    last_lines(&stderr, 1)
                ))
            }
            Ran::TimedOut => return Err(format!("git clone {url} took over 300 s")),
            Ran::Failed(e) => return Err(format!("cannot run git: {e}")),
        }
    }
    archive(&git, peer, src)?;
    Ok(format!(
        "git clone of github.com/{} at {}",
        peer.repo, peer.commit
    ))
}

/// The git directory of a checkout or of a (bare) repository.
fn git_dir(p: &Path) -> Option<PathBuf> {
    let dotgit = p.join(".git");
    if dotgit.exists() {
        return Some(dotgit);
    }
    (p.join("HEAD").is_file() && p.join("objects").is_dir()).then(|| p.to_path_buf())
}

fn archive(git: &Path, peer: &Peer, src: &Path) -> Result<(), String> {
    let has = Command::new("git")
        .arg("--git-dir")
        .arg(git)
        .args(["cat-file", "-e", &format!("{}^{{commit}}", peer.commit)])
        .status()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !has.success() {
        return Err(format!(
            "{} lacks the pinned commit {} of {}",
            git.display(),
            peer.commit,
            peer.repo
        ));
    }
    let tar = src.with_extension("tar");
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(git)
        .args(["archive", "--format=tar", "-o"])
        .arg(&tar)
        .arg(peer.commit)
        .arg("--")
        .args(peer.paths)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git archive {} failed: {}",
            peer.commit,
            last_lines(&String::from_utf8_lossy(&out.stderr), 1)
        ));
    }
    let out = Command::new("tar")
        .arg("-xf")
        .arg(&tar)
        .arg("-C")
        .arg(src)
        .output()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    let _ = std::fs::remove_file(&tar);
    if !out.status.success() {
        return Err(format!(
            "tar failed: {}",
            last_lines(&String::from_utf8_lossy(&out.stderr), 1)
        ));
    }
    Ok(())
}

/// Parallel build jobs: half the cores (the machine may be shared).
fn jobs() -> String {
    let n = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    (n / 2).max(1).to_string()
}

fn build(peer: &Peer, src: &Path, base: &Path) -> Result<(), String> {
    let log_path = base.join("build.log");
    let mut steps: Vec<Command> = Vec::new();
    let build_dir = base.join("build");
    match peer.input {
        Input::Tve => {
            for tool in ["cmake", "make", "g++"] {
                if which(tool).is_none() {
                    return Err(format!(
                        "{tool} is not installed (Debian: apt-get install cmake g++ make{})",
                        if peer.engine == "DAF" {
                            " libboost-dev"
                        } else {
                            ""
                        }
                    ));
                }
            }
            let mut c = Command::new("cmake");
            c.arg("-S")
                .arg(src)
                .arg("-B")
                .arg(&build_dir)
                .arg("-DCMAKE_BUILD_TYPE=Release")
                // RapidMatch links shared libraries of its own: find them relative to the binary,
                // so that target/ can move.
                .arg("-DCMAKE_BUILD_RPATH_USE_ORIGIN=ON");
            steps.push(c);
            let mut c = Command::new("make");
            c.arg("-C").arg(&build_dir).arg("-j").arg(jobs());
            c.arg(if peer.engine == "DAF" {
                "DAF"
            } else {
                "RapidMatch.out"
            });
            steps.push(c);
        }
        Input::Gfu => {
            if which("g++").is_none() || which("make").is_none() {
                return Err("g++ and make are needed (Debian: apt-get install g++ make)".into());
            }
            // VEQ_M as its Makefile builds it (at most 100000 matches), then VEQ_M_all with the
            // limit lifted (our patch makes it -DVEQ_MAX_MATCH).
            let mut c = Command::new("make");
            c.current_dir(src).args(["-B", "VEQ_M"]);
            steps.push(c);
            let mut c = Command::new("make");
            c.current_dir(src).args([
                "-B",
                "VEQ_M=VEQ_M_all",
                "CPPFLAGS=-Iinclude -DVEQ_MAX_MATCH=1e300",
                "VEQ_M_all",
            ]);
            steps.push(c);
        }
        Input::Gup => {
            // GuP's source sits under this workspace's target/: an empty [workspace] table keeps
            // cargo from taking it for a member of ours.
            let toml = src.join("Cargo.toml");
            let mut text = std::fs::read_to_string(&toml)
                .map_err(|e| format!("cannot read {}: {e}", toml.display()))?;
            if !text.contains("\n[workspace]") {
                text.push_str("\n[workspace]\n");
                std::fs::write(&toml, text)
                    .map_err(|e| format!("cannot write {}: {e}", toml.display()))?;
            }
            let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
            c.current_dir(src)
                .args(["build", "--release", "--locked", "--target-dir"])
                .arg(&build_dir)
                .args(["-j", &jobs()])
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_BUILD_RUSTFLAGS");
            steps.push(c);
        }
    }
    let mut log = String::new();
    for mut c in steps {
        let shown = format!("{c:?}");
        let out = c
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {shown}: {e}"))?;
        log.push_str(&format!("$ {shown}\n"));
        log.push_str(&String::from_utf8_lossy(&out.stdout));
        log.push_str(&String::from_utf8_lossy(&out.stderr));
        let _ = std::fs::write(&log_path, &log);
        if !out.status.success() {
            return Err(format!(
                "build failed ({}): {}",
                log_path.display(),
                last_lines(&String::from_utf8_lossy(&out.stderr), 2)
            ));
        }
    }
    Ok(())
}

fn which(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(tool))
            .find(|p| p.is_file())
    })
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

// ---------------------------------------------------------------------------------------------
// Inputs.

/// A vertex-labelled undirected graph of the suites' `t N M` / `v id label [degree]` / `e u v`
/// format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tve {
    pub labels: Vec<u32>,
    pub edges: Vec<(u32, u32)>,
}

impl Tve {
    pub fn parse(text: &str) -> Result<Tve, String> {
        let mut labels: Vec<Option<u32>> = Vec::new();
        let mut edges = Vec::new();
        let num = |s: Option<&str>, line: &str| -> Result<u32, String> {
            s.and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("bad line {line:?}"))
        };
        for line in text.lines() {
            let mut f = line.split_whitespace();
            match f.next() {
                Some("t") => {
                    let n = num(f.next(), line)? as usize;
                    labels = vec![None; n];
                }
                Some("v") => {
                    let id = num(f.next(), line)? as usize;
                    let label = num(f.next(), line)?;
                    *labels
                        .get_mut(id)
                        .ok_or_else(|| format!("vertex {id} out of range"))? = Some(label);
                }
                Some("e") => {
                    let (u, v) = (num(f.next(), line)?, num(f.next(), line)?);
                    if u as usize >= labels.len() || v as usize >= labels.len() {
                        return Err(format!("edge {u} {v} out of range"));
                    }
                    edges.push((u, v));
                }
                _ => {}
            }
        }
        let labels = labels
            .into_iter()
            .enumerate()
            .map(|(i, l)| l.ok_or_else(|| format!("vertex {i} has no label")))
            .collect::<Result<_, _>>()?;
        Ok(Tve { labels, edges })
    }

    /// VEQ's GFU.
    pub fn to_gfu(&self, name: &str) -> String {
        let mut s = format!("#{name}\n{}\n", self.labels.len());
        for l in &self.labels {
            s.push_str(&format!("{l}\n"));
        }
        s.push_str(&format!("{}\n", self.edges.len()));
        for (u, v) in &self.edges {
            s.push_str(&format!("{u} {v}\n"));
        }
        s
    }

    /// GuP's `.vertices`: `id<TAB>label`.
    pub fn gup_vertices(&self) -> String {
        self.labels
            .iter()
            .enumerate()
            .map(|(i, l)| format!("{i}\t{l}\n"))
            .collect()
    }

    /// GuP's `.edges`: `u<TAB>v`.
    pub fn gup_edges(&self) -> String {
        self.edges
            .iter()
            .map(|(u, v)| format!("{u}\t{v}\n"))
            .collect()
    }

    /// A GuP query set of this one query (YAML).
    pub fn gup_query_set(&self) -> String {
        let vertices: Vec<String> = self.labels.iter().map(|l| l.to_string()).collect();
        let edges: Vec<String> = self
            .edges
            .iter()
            .map(|(u, v)| format!("[{u}, {v}]"))
            .collect();
        format!(
            "- vertices: [{}]\n  edges: [{}]\n",
            vertices.join(", "),
            edges.join(", ")
        )
    }
}

/// The files of one query (or data graph) in every format.
#[derive(Clone, Debug)]
pub struct Files {
    pub tve: PathBuf,
    pub gfu: PathBuf,
    /// GuP: the data graph's base path (no extension), or the query-set YAML.
    pub gup: PathBuf,
}

/// Writes the GFU and GuP versions of a `.graph` file into `dir`, as `<stem>.gfu` and
/// `<stem>.vertices`/`.edges` (`data`) or `<stem>.yaml` (a query).
pub fn convert(tve: &Path, dir: &Path, stem: &str, data: bool) -> Result<Files, String> {
    let text =
        std::fs::read_to_string(tve).map_err(|e| format!("cannot read {}: {e}", tve.display()))?;
    let g = Tve::parse(&text).map_err(|e| format!("{}: {e}", tve.display()))?;
    let w = |p: PathBuf, s: String| {
        std::fs::write(&p, s).map_err(|e| format!("cannot write {}: {e}", p.display()))
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let gfu = dir.join(format!("{stem}.gfu"));
    w(gfu.clone(), g.to_gfu(stem))?;
    let gup = if data {
        w(dir.join(format!("{stem}.vertices")), g.gup_vertices())?;
        w(dir.join(format!("{stem}.edges")), g.gup_edges())?;
        dir.join(stem)
    } else {
        let p = dir.join(format!("{stem}.yaml"));
        w(p.clone(), g.gup_query_set())?;
        p
    };
    Ok(Files {
        tve: tve.to_path_buf(),
        gfu,
        gup,
    })
}

// ---------------------------------------------------------------------------------------------
// Runs.

/// The command of one query: `limit` stops it after that many matches.
pub fn command(
    peer: &Peer,
    built: &Built,
    data: &Files,
    query: &Files,
    limit: Option<u64>,
    timeout: Duration,
) -> Command {
    match peer.engine {
        "DAF" => {
            let mut c = Command::new(&built.full);
            c.arg("-d").arg(&data.tve).arg("-q").arg(&query.tve);
            if let Some(l) = limit {
                c.arg("-m").arg(l.to_string());
            }
            c
        }
        "VEQ" => {
            let mut c = Command::new(if limit.is_some() {
                &built.limited
            } else {
                &built.full
            });
            c.arg("-dg").arg(&data.gfu).arg("-qg").arg(&query.gfu);
            c
        }
        "GuP" => {
            let mut c = Command::new(&built.full);
            c.arg("--graph")
                .arg(&data.gup)
                .arg("--match-limit")
                .arg(limit.unwrap_or(u64::MAX).to_string())
                .args(["--parallelism", "1"])
                .arg(&query.gup);
            c
        }
        _ => {
            let mut c = Command::new(&built.full);
            c.arg("-d")
                .arg(&data.tve)
                .arg("-q")
                .arg(&query.tve)
                .args(["-order", "nd", "-preprocess", "true", "-num"])
                .arg(limit.map_or("MAX".to_owned(), |l| l.to_string()))
                // Its own limit (it stops and reports what it found); ours kills a little later.
                .arg("-time_limit")
                .arg(timeout.as_secs().max(1).to_string());
            c
        }
    }
}

/// What one peer run printed: the count and the peer's own processing time (seconds, without
/// loading the data graph).
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub count: u64,
    pub seconds: f64,
}

/// Reads a peer's output:
/// - DAF: `#Matches: N`, `Total time: T ms` (query load, DAG, candidate space and search);
/// - VEQ: `Number of Matches: N`, `Processing Time (ms): T` (filtering + verification);
/// - GuP: `match_count: N`, `search_sec: T`;
/// - RapidMatch: `#Embeddings: N`, `Query time (seconds): T` (preprocess, plan, enumerate).
pub fn parse_output(engine: &str, stdout: &str) -> Result<Parsed, String> {
    let (count_key, time_key, scale) = match engine {
        "DAF" => ("#Matches:", "Total time:", 1e-3),
        "VEQ" => ("Number of Matches:", "Processing Time (ms):", 1e-3),
        "GuP" => ("match_count:", "search_sec:", 1.0),
        "RapidMatch" => ("#Embeddings:", "Query time (seconds):", 1.0),
        other => return Err(format!("unknown peer {other}")),
    };
    let value = |key: &str| -> Option<&str> {
        stdout
            .lines()
            .rev()
            .find_map(|l| l.trim().strip_prefix(key))
            .map(|v| v.trim().trim_end_matches("ms").trim())
    };
    let count = value(count_key)
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| format!("no `{count_key}` in its output: {}", last_lines(stdout, 2)))?;
    let seconds = value(time_key)
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or_else(|| format!("no `{time_key}` in its output: {}", last_lines(stdout, 2)))?;
    Ok(Parsed {
        count,
        seconds: seconds * scale,
    })
}

/// How a child process ended.
pub enum Ran {
    Exited {
        ok: bool,
        stdout: String,
        stderr: String,
        wall: f64,
    },
    TimedOut,
    Failed(String),
}

/// Runs `c` in its own process group; kills the group after `limit`.
pub fn run_limited(mut c: Command, limit: Duration) -> Ran {
    let (mut out, mut err) = match (tempfile::tempfile(), tempfile::tempfile()) {
        (Ok(a), Ok(b)) => (a, b),
        _ => return Ran::Failed("no temporary file".into()),
    };
    let (o, e) = match (out.try_clone(), err.try_clone()) {
        (Ok(o), Ok(e)) => (o, e),
        _ => return Ran::Failed("no temporary file".into()),
    };
    c.process_group(0).stdin(Stdio::null()).stdout(o).stderr(e);
    let started = Instant::now();
    let mut child = match c.spawn() {
        Ok(child) => child,
        Err(e) => return Ran::Failed(format!("cannot start {:?}: {e}", c.get_program())),
    };
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = tx.send(status);
    });
    match rx.recv_timeout(limit) {
        Ok(status) => {
            let wall = started.elapsed().as_secs_f64();
            let read = |f: &mut std::fs::File| {
                use std::io::Seek;
                let mut s = String::new();
                let _ = f.rewind();
                let _ = f.read_to_string(&mut s);
                s
            };
            Ran::Exited {
                ok: status.map(|s| s.success()).unwrap_or(false),
                stdout: read(&mut out),
                stderr: read(&mut err),
                wall,
            }
        }
        Err(_) => {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}")])
                .stderr(Stdio::null())
                .status();
            let _ = rx.recv_timeout(Duration::from_secs(5));
            Ran::TimedOut
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRIANGLE: &str =
        "t 4 4\nv 0 3 2\nv 1 5 2\nv 2 3 3\nv 3 7 1\ne 0 1\ne 1 2\ne 0 2\ne 2 3\n";

    #[test]
    fn parses_the_suite_format_with_or_without_degrees() {
        let g = Tve::parse(TRIANGLE).unwrap();
        assert_eq!(g.labels, [3, 5, 3, 7]);
        assert_eq!(g.edges, [(0, 1), (1, 2), (0, 2), (2, 3)]);
        let h = Tve::parse("t 2 1\nv 0 1\nv 1 1\ne 0 1\n").unwrap();
        assert_eq!(h.labels, [1, 1]);
        assert!(
            Tve::parse("t 2 1\nv 0 1\ne 0 1\n").is_err(),
            "vertex 1 has no label"
        );
        assert!(Tve::parse("t 1 1\nv 0 1\ne 0 4\n").is_err());
    }

    #[test]
    fn writes_gfu_and_gup_files() {
        let g = Tve::parse(TRIANGLE).unwrap();
        assert_eq!(g.to_gfu("q"), "#q\n4\n3\n5\n3\n7\n4\n0 1\n1 2\n0 2\n2 3\n");
        assert_eq!(g.gup_vertices(), "0\t3\n1\t5\n2\t3\n3\t7\n");
        assert_eq!(g.gup_edges(), "0\t1\n1\t2\n0\t2\n2\t3\n");
        assert_eq!(
            g.gup_query_set(),
            "- vertices: [3, 5, 3, 7]\n  edges: [[0, 1], [1, 2], [0, 2], [2, 3]]\n"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("q.graph");
        std::fs::write(&file, TRIANGLE).unwrap();
        let data = convert(&file, dir.path(), "d", true).unwrap();
        assert_eq!(data.gup, dir.path().join("d"));
        assert!(dir.path().join("d.vertices").exists() && dir.path().join("d.edges").exists());
        let q = convert(&file, dir.path(), "q", false).unwrap();
        assert_eq!(
            std::fs::read_to_string(q.gfu).unwrap(),
            g.to_gfu("q"),
            "the file is the string"
        );
        assert!(q.gup.ends_with("q.yaml"));
    }

    #[test]
    fn reads_each_peers_output() {
        let daf = "Loading data graph...\nEnumerating...\n#Matches: 80\n#Recursive calls: 14\nTotal time: 0.207661 ms\nSearch time: 0.008173 ms\n";
        let p = parse_output("DAF", daf).unwrap();
        assert_eq!(p.count, 80);
        assert!((p.seconds - 0.207661e-3).abs() < 1e-12);
        let veq = "Data file: h.gfu\nSum of |C(u)|: 30\nTotal Recursive Call Count: 14\nNumber of Matches: 80\nFiltering Time (ms): 0.226577\nVerification Time (ms): 0.124615\nProcessing Time (ms): 0.351192\n";
        let p = parse_output("VEQ", veq).unwrap();
        assert_eq!(p.count, 80);
        assert!((p.seconds - 0.351192e-3).abs() < 1e-12);
        let gup = "---\nmatch_limit: 100000\nresults:\n- index: 0\n  match_count: 80\n  search_sec: 0.000589237\nwhole_sec: 0.00063773\n";
        assert_eq!(
            parse_output("GuP", gup).unwrap(),
            Parsed {
                count: 80,
                seconds: 0.000589237
            }
        );
        let rm = "Spectrum Order 1 #Embeddings: 80\nLoad graphs time (seconds): 0.014035\nQuery time (seconds): 0.000241\n#Embeddings: 80\nEnd.\n";
        assert_eq!(
            parse_output("RapidMatch", rm).unwrap(),
            Parsed {
                count: 80,
                seconds: 0.000241
            }
        );
        assert!(
            parse_output("DAF", "Loading data graph...\nSegmentation fault\n")
                .unwrap_err()
                .contains("#Matches")
        );
    }

    #[test]
    fn peer_sources_are_looked_for_in_both_layouts() {
        let c = PEERS[1].candidates(Path::new("/s"));
        assert!(c.contains(&PathBuf::from("/s/VEQ_S")));
        assert!(c.contains(&PathBuf::from("/s/SNUCSE-CTA+VEQ_S/repo")));
        assert!(c.contains(&PathBuf::from("/s/veq")));
    }

    #[test]
    fn a_run_past_its_limit_is_killed() {
        let mut c = Command::new("bash");
        c.args(["-c", "sleep 30"]);
        let t = Instant::now();
        assert!(matches!(
            run_limited(c, Duration::from_millis(200)),
            Ran::TimedOut
        ));
        assert!(t.elapsed() < Duration::from_secs(10));
        let mut c = Command::new("bash");
        c.args(["-c", "echo '#Matches: 3'; echo 'Total time: 2 ms'"]);
        match run_limited(c, Duration::from_secs(10)) {
            Ran::Exited { ok, stdout, .. } => {
                assert!(ok);
                assert_eq!(parse_output("DAF", &stdout).unwrap().count, 3);
            }
            _ => panic!("did not run"),
        }
    }
}

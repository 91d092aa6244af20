//! The front ends under the W3C harness: what they share (the `gpsense` binary, a snapshot per
//! data file, the query text a client sends, a child process with a deadline).

mod cli;
mod endpoint;
mod http;
mod terms;

pub use cli::cli;
pub use endpoint::endpoint;

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use spargebra::SparqlParser;

use crate::w3c_support::manifest::{SuiteFile, Test};
use crate::w3c_support::run::NoAnswer;

/// The time limit each front end is given for a query: far beyond what any test needs.
const QUERY_LIMIT_MS: &str = "60000";

/// A child that has not finished by then hangs: it is killed and the test judged wrong (before
/// the harness's own 120 s, so that no process outlives the run).
const DEADLINE: Duration = Duration::from_secs(100);

/// The binary under test: this package's, or another build standing in (`GPSENSE_SERVE_BIN`, as
/// the endpoint's tests take it).
fn binary() -> PathBuf {
    std::env::var_os("GPSENSE_SERVE_BIN")
        .map_or_else(|| env!("CARGO_BIN_EXE_gpsense").into(), PathBuf::from)
}

/// Each data file ingested once (`gpsense ingest --base IRI`: the suite resolves a data file's
/// relative IRIs against the file's own IRI) into a snapshot that both front ends load.
pub struct Snapshots {
    dir: tempfile::TempDir,
    made: Mutex<HashMap<PathBuf, Result<PathBuf, NoAnswer>>>,
}

impl Snapshots {
    pub fn new() -> std::io::Result<Self> {
        Ok(Snapshots {
            dir: tempfile::tempdir()?,
            made: Mutex::new(HashMap::new()),
        })
    }

    /// The snapshot of `data`, or the ingest's refusal.
    fn of(&self, data: &SuiteFile) -> Result<PathBuf, NoAnswer> {
        let mut made = self
            .made
            .lock()
            .map_err(|_| NoAnswer::Malformed("an earlier ingest panicked".into()))?;
        let n = made.len();
        made.entry(data.path.clone())
            .or_insert_with(|| self.ingest(data, &self.dir.path().join(format!("{n}.gps"))))
            .clone()
    }

    fn ingest(&self, data: &SuiteFile, snapshot: &Path) -> Result<PathBuf, NoAnswer> {
        let mut cmd = Command::new(binary());
        cmd.args(["-q", "ingest", "--base", &data.iri, "-o"])
            .arg(snapshot);
        // As the library's run reads them: Turtle and N-Triples named, the rest detected.
        match data.extension() {
            "ttl" => cmd.args(["--format", "turtle"]),
            "nt" => cmd.args(["--format", "ntriples"]),
            _ => &mut cmd,
        };
        let done = finish(cmd.arg("--").arg(&data.path))?;
        match done.status.success() {
            true => Ok(snapshot.to_owned()),
            false => Err(NoAnswer::Refused(format!(
                "loading the data: {}",
                done.error()
            ))),
        }
    }
}

/// The query as a client sends it: its file's text, after `BASE <the file's IRI>` when it holds
/// relative IRIs (neither front end takes a base IRI for a query). Only those get one: the text
/// of the others goes to the front end as it is, to be read as any client's.
fn query_text(test: &Test) -> Result<String, String> {
    let text = std::fs::read_to_string(&test.query.path)
        .map_err(|e| format!("{}: {e}", test.query.path.display()))?;
    if SparqlParser::new().parse_query(&text).is_ok() {
        return Ok(text);
    }
    Ok(format!("BASE <{}>\n{text}", test.query.iri))
}

/// A finished child process.
struct Finished {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

impl Finished {
    /// Its standard error's `error:` lines (or all of it), on one line.
    fn error(&self) -> String {
        let errors: Vec<&str> = self
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("error: "))
            .collect();
        let text = if errors.is_empty() {
            self.stderr.trim().to_owned()
        } else {
            errors.join(" ")
        };
        match self.status.code() {
            Some(code) => format!("{text} (exit status {code})"),
            None => format!("{text} ({})", self.status),
        }
    }
}

/// Runs `cmd` to its end, killing it at [`DEADLINE`]. A child that cannot start or hangs gave no
/// answer, and that is wrong.
fn finish(cmd: &mut Command) -> Result<Finished, NoAnswer> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| NoAnswer::Malformed(format!("cannot run {}: {e}", binary().display())))?;
    // Read while it runs: a full pipe would stop it.
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait(&mut child).map_err(NoAnswer::Malformed)?;
    Ok(Finished {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

fn drain(pipe: Option<impl Read + Send + 'static>) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn wait(child: &mut Child) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(status);
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("no answer in {} s: hangs", DEADLINE.as_secs()));
        }
        thread::sleep(Duration::from_millis(1));
    }
}

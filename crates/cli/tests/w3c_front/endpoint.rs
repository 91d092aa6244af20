//! `gpsense serve`, one per data file (its snapshot), each test's query POSTed to `/query`: SPARQL
//! JSON results for SELECT and ASK, read with `sparesults`; N-Triples for CONSTRUCT and DESCRIBE.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;

use sparesults::QueryResultsFormat;
use spargebra::Query;

use super::http::{post_query, Reply};
use super::terms::read_triples;
use super::{binary, query_text, Snapshots, DEADLINE, QUERY_LIMIT_MS};
use crate::w3c_support::manifest::Test;
use crate::w3c_support::results::{read_results, Outcome};
use crate::w3c_support::run::{Evaluate, NoAnswer};

const JSON: &str = "application/sparql-results+json";
const N_TRIPLES: &str = "application/n-triples";

/// Servers kept running at once: a folder's tests use a few data files in turns.
const KEPT: usize = 8;

/// The evaluator that asks `gpsense serve`: one server per data file, kept while its tests run
/// (the [`KEPT`] used last stay up; the one used longest ago gives way to a new one).
pub fn endpoint(snapshots: Arc<Snapshots>) -> Evaluate {
    let servers: Mutex<Vec<Server>> = Mutex::new(Vec::new());
    Arc::new(move |test| {
        let graph = snapshots.of(&test.data)?;
        let mut servers = servers
            .lock()
            .map_err(|_| NoAnswer::Malformed("an earlier test panicked".into()))?;
        // Most recently used last.
        match servers.iter().position(|s| s.graph == graph) {
            Some(i) => {
                let server = servers.remove(i);
                servers.push(server);
            }
            None => {
                if servers.len() == KEPT {
                    servers.remove(0);
                }
                servers.push(Server::start(&graph)?);
            }
        }
        let port = servers.last().map(|s| s.port);
        ask(port.ok_or(NoAnswer::Malformed("no server".into()))?, test)
    })
}

fn ask(port: u16, test: &Test) -> Result<Outcome, NoAnswer> {
    let text = query_text(test)?;
    let graph = matches!(
        test.parsed,
        Query::Construct { .. } | Query::Describe { .. }
    );
    let accept = if graph { N_TRIPLES } else { JSON };
    let reply = post_query(port, &text, accept, DEADLINE).map_err(NoAnswer::Malformed)?;
    if reply.status != 200 {
        let body = reply.text();
        return Err(NoAnswer::Refused(format!(
            "HTTP {}: {}",
            reply.status,
            body.trim()
        )));
    }
    read(&reply, graph).map_err(NoAnswer::Malformed)
}

fn read(reply: &Reply, graph: bool) -> Result<Outcome, String> {
    if reply.header("x-gpsense-truncated") == Some("true") {
        return Err("the answer was cut (X-Gpsense-Truncated)".into());
    }
    let content_type = reply.header("content-type").unwrap_or("");
    let wanted = if graph { N_TRIPLES } else { JSON };
    if !content_type.starts_with(wanted) {
        return Err(format!("{content_type:?}, not {wanted}"));
    }
    if graph {
        let text = std::str::from_utf8(&reply.body).map_err(|e| e.to_string())?;
        return read_triples(text).map(Outcome::Graph);
    }
    read_results(&reply.body, QueryResultsFormat::Json).map_err(|e| format!("{e:#}"))
}

/// A running `gpsense serve` on a loopback port, killed when dropped.
struct Server {
    child: Child,
    port: u16,
    graph: PathBuf,
    /// Kept open: a closed pipe would make the server's own prints fail.
    _stdout: BufReader<ChildStdout>,
}

impl Server {
    /// Starts one on `graph`, waiting for the address it prints; a server that does not start
    /// refuses the data.
    fn start(graph: &Path) -> Result<Server, NoAnswer> {
        let mut child = Command::new(binary())
            .args([
                "-q",
                "serve",
                "--bind",
                "127.0.0.1:0",
                "--timeout-ms",
                QUERY_LIMIT_MS,
            ])
            .arg("--graph")
            .arg(graph)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| NoAnswer::Malformed(format!("cannot run {}: {e}", binary().display())))?;
        let stderr = child.stderr.take().map(|mut pipe| {
            thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        });
        let mut stdout = BufReader::new(
            child
                .stdout
                .take()
                .ok_or(NoAnswer::Malformed("no standard output".into()))?,
        );
        let mut line = String::new();
        let port = stdout.read_line(&mut line).ok().and_then(|_| {
            line.trim()
                .strip_prefix("listening on http://127.0.0.1:")?
                .parse()
                .ok()
        });
        let Some(port) = port else {
            let _ = child.kill();
            let _ = child.wait();
            let why = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
            return Err(NoAnswer::Refused(format!(
                "gpsense serve did not start: {}",
                why.trim()
            )));
        };
        Ok(Server {
            child,
            port,
            graph: graph.to_owned(),
            _stdout: stdout,
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

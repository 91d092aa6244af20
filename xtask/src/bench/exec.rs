//! Runs one engine over one workload's queries in a child process, enforcing the time limit per
//! query: the child (`gpsense-bench-runner run` or `peers.py`) loads the graph, says it is ready,
//! then prints one JSON line per query (read in batches: [`BATCH`]); a query that has not answered
//! by its deadline is recorded as a timeout, the child is killed and started again from the next
//! query. Nothing is dropped: every query ends as ok, timeout, error, unsupported or skipped (with
//! the reason).

use std::io::{BufRead, BufReader, Read, Seek};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

/// What became of one query on one engine.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ok {
        count: u64,
        /// Each run's seconds (repeated while fast).
        seconds: Vec<f64>,
        /// petgraph: gpsense's induced count for the same query, where it was listed.
        reference: Option<u64>,
    },
    Timeout(String),
    Error(String),
    Unsupported(String),
    Skipped(String),
}

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    load_seconds: f64,
    i: Option<usize>,
    status: Option<String>,
    count: Option<u64>,
    #[serde(default)]
    seconds: Vec<f64>,
    reference: Option<u64>,
    message: Option<String>,
}

/// Limits of a job.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Per query.
    pub timeout: Duration,
    /// For loading the graph.
    pub load_timeout: Duration,
    /// After this many timeouts in one query group, the group's remaining queries are skipped.
    pub max_timeouts: usize,
}

/// Slack over the time limit for the child's repeats of a fast query (repeats stop once the runs
/// took a second in all, so they add at most about a second) and its output.
const SLACK: Duration = Duration::from_secs(2);

/// Runs queries `0..groups.len()` (the group of each query given) with `command(start)`, calling
/// `progress` once per finished query. Returns the outcomes and the first load time.
pub fn run_job(
    command: &dyn Fn(usize) -> Command,
    groups: &[String],
    limits: Limits,
    progress: &mut dyn FnMut(),
) -> (Vec<Outcome>, Option<f64>) {
    run_job_from(command, groups, 0, limits, progress)
}

/// [`run_job`] over queries `first..first + groups.len()` of a workload: the child numbers its
/// lines from `first` (`command` still gets the index relative to `first`).
pub fn run_job_from(
    command: &dyn Fn(usize) -> Command,
    groups: &[String],
    first: usize,
    limits: Limits,
    progress: &mut dyn FnMut(),
) -> (Vec<Outcome>, Option<f64>) {
    let n = groups.len();
    let mut outcomes: Vec<Option<Outcome>> = vec![None; n];
    let mut timeouts: std::collections::HashMap<&str, usize> = Default::default();
    let mut load = None;
    let mut next = 0;
    let finish =
        |outcomes: &mut Vec<Option<Outcome>>, i: usize, o: Outcome, progress: &mut dyn FnMut()| {
            outcomes[i] = Some(o);
            progress();
        };
    while next < n {
        // Skip queries of groups that already timed out too often.
        if timeouts.get(groups[next].as_str()).copied().unwrap_or(0) >= limits.max_timeouts {
            let msg = format!(
                "not run: {} queries of group {} already timed out on this engine",
                limits.max_timeouts, groups[next]
            );
            finish(&mut outcomes, next, Outcome::Skipped(msg), progress);
            next += 1;
            continue;
        }
        let mut stderr = match tempfile::tempfile() {
            Ok(f) => f,
            Err(e) => {
                for i in next..n {
                    finish(
                        &mut outcomes,
                        i,
                        Outcome::Error(format!("no temporary file: {e}")),
                        progress,
                    );
                }
                break;
            }
        };
        let mut cmd = command(next);
        // Its own process group, so that a kill also ends anything it started.
        cmd.process_group(0);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        if let Ok(f) = stderr.try_clone() {
            cmd.stderr(f);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                for i in next..n {
                    finish(
                        &mut outcomes,
                        i,
                        Outcome::Error(format!("cannot start: {e}")),
                        progress,
                    );
                }
                break;
            }
        };
        let (tx, rx) = mpsc::channel::<String>();
        let stdout = child.stdout.take().expect("piped stdout");
        // The reader ends when the child's stdout closes or when `rx` is dropped; never joined, so a
        // killed child's stray descendants cannot hold the harness.
        std::thread::spawn(move || forward_lines(stdout, &tx));
        // Ready?
        let ready = recv_json(&rx, limits.load_timeout);
        match ready {
            Received::Line(l) if l.ready => {
                load.get_or_insert(l.load_seconds);
            }
            Received::Line(_) | Received::Closed | Received::Timeout(_) => {
                let timed_out = matches!(ready, Received::Timeout(_));
                stop(&mut child);
                let tail = tail(&mut stderr);
                let outcome = if let Some(reason) = tail.lines().find_map(|l| {
                    let l = l.trim_start_matches("error: ");
                    l.strip_prefix("unsupported: ")
                }) {
                    Outcome::Unsupported(reason.to_owned())
                } else if timed_out {
                    Outcome::Error(format!(
                        "loading the graph took longer than {} s",
                        limits.load_timeout.as_secs()
                    ))
                } else {
                    Outcome::Error(format!("failed before the first query: {tail}"))
                };
                for i in next..n {
                    finish(&mut outcomes, i, outcome.clone(), progress);
                }
                break;
            }
        }
        // Queries.
        let mut restart = false;
        while next < n && !restart {
            let started = Instant::now();
            match recv_json(&rx, limits.timeout + SLACK) {
                Received::Line(l) if l.i == Some(first + next) => {
                    let outcome = outcome_of(l, limits.timeout);
                    if matches!(outcome, Outcome::Timeout(_)) {
                        *timeouts.entry(groups[next].as_str()).or_default() += 1;
                    }
                    finish(&mut outcomes, next, outcome, progress);
                    next += 1;
                    if timeouts
                        .get(groups.get(next).map_or("", String::as_str))
                        .copied()
                        .unwrap_or(0)
                        >= limits.max_timeouts
                    {
                        restart = true;
                    }
                }
                Received::Line(l) => {
                    let msg = format!(
                        "protocol error: expected query {}, got {:?}",
                        first + next,
                        l.i
                    );
                    finish(&mut outcomes, next, Outcome::Error(msg), progress);
                    next += 1;
                    restart = true;
                }
                Received::Timeout(_) => {
                    let secs = started.elapsed().as_secs_f64();
                    *timeouts.entry(groups[next].as_str()).or_default() += 1;
                    let msg = format!(
                        "killed after {secs:.0} s (limit {} s)",
                        limits.timeout.as_secs()
                    );
                    finish(&mut outcomes, next, Outcome::Timeout(msg), progress);
                    next += 1;
                    restart = true;
                }
                Received::Closed => {
                    stop(&mut child);
                    let tail = tail(&mut stderr);
                    let msg = format!("engine exited during the query: {tail}");
                    finish(&mut outcomes, next, Outcome::Error(msg), progress);
                    next += 1;
                    restart = true;
                }
            }
        }
        stop(&mut child);
    }
    (
        outcomes
            .into_iter()
            .map(|o| o.expect("every query has an outcome"))
            .collect(),
        load,
    )
}

/// How long the reader, woken by the child's output, lets its next lines gather in the pipe before
/// it reads them: the harness then wakes at most once per `BATCH`, not once per query, and never
/// in the middle of a chunk of short queries (see `cores` for what a wake-up per line cost).
const BATCH: Duration = Duration::from_millis(20);

/// Sends `from`'s lines to `to` (a last line without a newline too) until either end closes,
/// reading them in batches.
fn forward_lines(from: impl Read, to: &mpsc::Sender<String>) {
    let mut r = BufReader::with_capacity(1 << 16, from);
    let mut pending: Vec<u8> = Vec::new();
    loop {
        // Blocks until the child writes (or closes its end).
        match r.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(_) => {}
        }
        std::thread::sleep(BATCH);
        let got = match r.fill_buf() {
            Ok(b) => {
                pending.extend_from_slice(b);
                b.len()
            }
            Err(_) => break,
        };
        r.consume(got);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&pending[..end]).into_owned();
            pending.drain(..=end);
            if to.send(line).is_err() {
                return;
            }
        }
    }
    if !pending.is_empty() {
        let _ = to.send(String::from_utf8_lossy(&pending).into_owned());
    }
}

fn outcome_of(l: Line, timeout: Duration) -> Outcome {
    match l.status.as_deref() {
        Some("ok") => {
            let first = l.seconds.first().copied().unwrap_or(0.0);
            if first > timeout.as_secs_f64() {
                Outcome::Timeout(format!(
                    "answered after {first:.1} s (limit {} s)",
                    timeout.as_secs()
                ))
            } else {
                Outcome::Ok {
                    count: l.count.unwrap_or(0),
                    seconds: l.seconds,
                    reference: l.reference,
                }
            }
        }
        Some("unsupported") => Outcome::Unsupported(l.message.unwrap_or_default()),
        _ => Outcome::Error(l.message.unwrap_or_else(|| "no message".into())),
    }
}

enum Received {
    Line(Line),
    Closed,
    Timeout(#[allow(dead_code)] Duration),
}

fn recv_json(rx: &mpsc::Receiver<String>, wait: Duration) -> Received {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(text) => {
                // Libraries may print their own lines on stdout; only JSON objects are ours.
                if let Ok(line) = serde_json::from_str::<Line>(&text) {
                    return Received::Line(line);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => return Received::Timeout(wait),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Received::Closed,
        }
    }
}

/// Kills the child's process group (it was started as its leader), then the child.
fn stop(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// The last lines of the child's stderr, on one line.
fn tail(f: &mut std::fs::File) -> String {
    let mut text = String::new();
    let _ = f.rewind();
    let _ = f.read_to_string(&mut text);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(3);
    let joined = lines[start..].join(" | ");
    if joined.is_empty() {
        "no message".into()
    } else {
        joined
    }
}

/// The median of some samples.
pub fn median(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &'static str) -> impl Fn(usize) -> Command {
        move |start| {
            let mut c = Command::new("bash");
            c.arg("-c").arg(script).arg("x").arg(start.to_string());
            c
        }
    }

    fn limits(timeout_ms: u64) -> Limits {
        Limits {
            timeout: Duration::from_millis(timeout_ms),
            load_timeout: Duration::from_secs(10),
            max_timeouts: 1,
        }
    }

    #[test]
    fn answers_timeouts_and_restarts_are_recorded() {
        // Query 1 hangs; the child must be killed and restarted at query 2.
        let script = r#"echo '{"ready":true,"load_seconds":0.5}'
            for i in $(seq $1 3); do
              if [ $i = 1 ]; then sleep 60; fi
              echo "{\"i\":$i,\"status\":\"ok\",\"count\":$((i*10)),\"seconds\":[0.001]}"
            done"#;
        let groups: Vec<String> = ["a", "b", "c", "c"].iter().map(|s| s.to_string()).collect();
        let mut ticks = 0;
        let mut limits = limits(200);
        limits.max_timeouts = 5;
        let started = Instant::now();
        let (out, load) = run_job(&sh(script), &groups, limits, &mut || ticks += 1);
        assert!(started.elapsed() < Duration::from_secs(20));
        assert_eq!(load, Some(0.5));
        assert_eq!(ticks, 4);
        assert!(matches!(out[0], Outcome::Ok { count: 0, .. }));
        assert!(matches!(out[1], Outcome::Timeout(_)), "{:?}", out[1]);
        assert!(matches!(out[2], Outcome::Ok { count: 20, .. }));
        assert!(matches!(out[3], Outcome::Ok { count: 30, .. }));
    }

    /// A reader that returns its pieces one `read` at a time, as a pipe does its writes.
    struct Pieces(Vec<&'static [u8]>);

    impl Read for Pieces {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.0.is_empty() {
                return Ok(0);
            }
            let piece = self.0.remove(0);
            buf[..piece.len()].copy_from_slice(piece);
            Ok(piece.len())
        }
    }

    #[test]
    fn lines_are_forwarded_whole_across_reads_and_at_the_end() {
        let (tx, rx) = mpsc::channel();
        forward_lines(Pieces(vec![b"{\"a\":1}\n{\"b\"", b":2}\n", b"last"]), &tx);
        drop(tx);
        let got: Vec<String> = rx.iter().collect();
        assert_eq!(got, ["{\"a\":1}", "{\"b\":2}", "last"]);
    }

    #[test]
    fn a_chunk_is_numbered_from_its_first_query() {
        let script = r#"echo '{"ready":true,"load_seconds":0}'
            for i in $(seq $((10 + $1)) 11); do
              echo "{\"i\":$i,\"status\":\"ok\",\"count\":$i,\"seconds\":[0.001]}"
            done"#;
        let groups = vec!["a".to_string(); 2];
        let (out, _) = run_job_from(&sh(script), &groups, 10, limits(1000), &mut || {});
        assert!(
            matches!(out[0], Outcome::Ok { count: 10, .. }),
            "{:?}",
            out[0]
        );
        assert!(matches!(out[1], Outcome::Ok { count: 11, .. }));
    }

    #[test]
    fn a_group_is_skipped_after_its_timeouts() {
        let script = r#"echo '{"ready":true,"load_seconds":0}'; sleep 60"#;
        let groups: Vec<String> = ["a", "a", "a"].iter().map(|s| s.to_string()).collect();
        let (out, _) = run_job(&sh(script), &groups, limits(100), &mut || {});
        assert!(matches!(out[0], Outcome::Timeout(_)));
        assert!(matches!(&out[1], Outcome::Skipped(m) if m.contains("already timed out")));
        assert!(matches!(out[2], Outcome::Skipped(_)));
    }

    #[test]
    fn unsupported_and_failures_before_ready() {
        let script = r#"echo 'unsupported: no edge labels' >&2; exit 3"#;
        let groups = vec!["a".to_string(); 2];
        let (out, load) = run_job(&sh(script), &groups, limits(100), &mut || {});
        assert_eq!(load, None);
        assert_eq!(out[1], Outcome::Unsupported("no edge labels".into()));
        let script = r#"echo 'Traceback: boom' >&2; exit 1"#;
        let (out, _) = run_job(&sh(script), &groups, limits(100), &mut || {});
        assert!(matches!(&out[0], Outcome::Error(m) if m.contains("boom")));
    }

    #[test]
    fn a_crash_mid_query_is_an_error_and_the_rest_still_runs() {
        let script = r#"echo '{"ready":true,"load_seconds":0}'
            for i in $(seq $1 2); do
              if [ $i = 0 ]; then echo 'segfault' >&2; exit 139; fi
              echo "{\"i\":$i,\"status\":\"ok\",\"count\":1,\"seconds\":[0.001]}"
            done"#;
        let groups = vec!["a".to_string(); 3];
        let (out, _) = run_job(&sh(script), &groups, limits(1000), &mut || {});
        assert!(
            matches!(&out[0], Outcome::Error(m) if m.contains("segfault")),
            "{:?}",
            out[0]
        );
        assert!(matches!(out[1], Outcome::Ok { .. }));
        assert!(matches!(out[2], Outcome::Ok { .. }));
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
    }
}

//! Runs one child process with its output captured, and kills it when it prints nothing for too
//! long: `gpsense match` prints a line per finished query and enforces its own per-query time limit,
//! so a longer silence means a hang (a kernel that never returns), not a slow suite. A peer without
//! a time limit of its own (EGSM) runs under [`run_within`], which kills it at a deadline.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// A finished (or killed) run.
pub struct Captured {
    pub stdout: String,
    pub stderr: String,
    /// `None` when the run was killed after `silence` without output.
    pub status: Option<ExitStatus>,
    pub wall: Duration,
    pub silence: Duration,
    /// Killed at [`run_within`]'s deadline rather than after a silence.
    pub at_limit: bool,
}

/// gpsense's exit status when a time limit cut an answer: the run worked, and its output says
/// which answers are only lower bounds.
const TIMED_OUT: i32 = 3;

/// Whether gpsense ran to its end: success, or answers cut by the time limit.
fn ran(s: ExitStatus) -> bool {
    s.success() || s.code() == Some(TIMED_OUT)
}

impl Captured {
    pub fn success(&self) -> bool {
        self.status.is_some_and(ran)
    }

    /// Why the run failed, for the report (the exit status and stderr's last line), or `None`.
    pub fn failure(&self) -> Option<String> {
        let last = self
            .stderr
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        match self.status {
            None if self.at_limit => Some(format!(
                "killed at its limit of {:.1} s",
                self.silence.as_secs_f64()
            )),
            None => Some(format!(
                "killed after {} s without output; stderr: {last}",
                self.silence.as_secs()
            )),
            Some(s) if !ran(s) => Some(format!("{s}: {last}")),
            Some(_) => None,
        }
    }
}

/// Runs `cmd`, killing its process group after `silence` without standard output.
pub fn run(cmd: &mut Command, silence: Duration) -> Result<Captured> {
    run_until(cmd, silence, None)
}

/// Runs `cmd`, killing its process group once it has run for `limit`, whatever it prints.
pub fn run_within(cmd: &mut Command, limit: Duration) -> Result<Captured> {
    run_until(cmd, limit, Some(Instant::now() + limit))
}

fn run_until(cmd: &mut Command, silence: Duration, deadline: Option<Instant>) -> Result<Captured> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own group, so that a kill also reaches what it started (compute-sanitizer's target).
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot run {:?}", cmd.get_program()))?;
    let stdout = child.stdout.take().context("no stdout pipe")?;
    let mut stderr = child.stderr.take().context("no stderr pipe")?;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || forward(stdout, tx));
    let (err_tx, err_rx) = mpsc::channel();
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        let _ = err_tx.send(buf);
    });
    let (out, killed) = collect(&rx, &mut child, silence, deadline);
    let status = child.wait().context("cannot wait for the child")?;
    // Bounded: a process that escaped the kill may still hold the pipe.
    let err = err_rx.recv_timeout(silence).unwrap_or_default();
    Ok(Captured {
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        status: (!killed).then_some(status),
        wall: start.elapsed(),
        silence,
        at_limit: killed && deadline.is_some_and(|d| Instant::now() >= d),
    })
}

/// Standard output until it closes, or until `silence` passes without any or the deadline passes
/// (then the group is killed and whatever came is returned, `true`).
fn collect(
    rx: &mpsc::Receiver<Vec<u8>>,
    child: &mut Child,
    silence: Duration,
    deadline: Option<Instant>,
) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    loop {
        let wait = deadline.map_or(silence, |d| {
            silence.min(d.saturating_duration_since(Instant::now()))
        });
        match rx.recv_timeout(wait) {
            Ok(chunk) => out.extend(chunk),
            Err(RecvTimeoutError::Disconnected) => return (out, false),
            Err(RecvTimeoutError::Timeout) => {
                kill_group(child);
                return (out, true);
            }
        }
    }
}

fn forward(mut stdout: impl Read, tx: mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 1 << 16];
    while let Ok(n) = stdout.read(&mut buf) {
        if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
            return;
        }
    }
}

/// Kills the child's process group (its id: `process_group(0)` made the child its leader).
fn kill_group(child: &mut Child) {
    let group = format!("-{}", child.id());
    let killed = Command::new("kill")
        .args(["-KILL", "--", &group])
        .status()
        .is_ok_and(|s| s.success());
    if !killed {
        let _ = child.kill();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_output_and_status() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 1"]);
        let run = run(&mut cmd, Duration::from_secs(10)).unwrap();
        assert_eq!(run.stdout, "out\n");
        assert_eq!(run.stderr, "err\n");
        assert!(!run.success());
        assert!(
            run.failure().unwrap().ends_with(": err"),
            "{:?}",
            run.failure()
        );
        // Answers cut by the time limit: the run worked.
        let cut = super::run(
            Command::new("sh").args(["-c", "exit 3"]),
            Duration::from_secs(10),
        );
        assert!(cut.unwrap().failure().is_none());
    }

    #[test]
    fn kills_a_silent_process_group() {
        let mut cmd = Command::new("sh");
        // The grandchild keeps the pipe open: only a group kill ends the wait.
        cmd.args(["-c", "echo started; sleep 30 & sleep 30"]);
        let run = run(&mut cmd, Duration::from_millis(300)).unwrap();
        assert_eq!(run.stdout, "started\n");
        assert!(run.status.is_none() && !run.success());
        assert!(run.wall < Duration::from_secs(10));
        assert!(run.failure().unwrap().starts_with("killed after 0 s"));
    }

    #[test]
    fn a_deadline_kills_a_process_that_keeps_printing() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "while true; do echo tick; sleep 0.05; done"]);
        let run = run_within(&mut cmd, Duration::from_millis(400)).unwrap();
        assert!(run.stdout.starts_with("tick\n"));
        assert!(run.at_limit && !run.success());
        assert!(run.wall < Duration::from_secs(10));
        assert_eq!(run.failure().unwrap(), "killed at its limit of 0.4 s");
        let quick = run_within(Command::new("true").arg("x"), Duration::from_secs(10)).unwrap();
        assert!(quick.success() && !quick.at_limit);
    }
}

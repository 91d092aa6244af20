//! Standard output for the commands. `println!` panics when stdout is a closed pipe or a full
//! device; these writes return the error instead, and `main` ends quietly when the reader went away
//! (`gpsense info | head -1`) and reports any other write error.

use std::fmt::Display;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use anyhow::{Context, Result};

/// Writes `text` to standard output and flushes it.
pub fn print(text: impl Display) -> Result<()> {
    let mut out = io::stdout().lock();
    write!(out, "{text}")
        .and_then(|()| out.flush())
        .context("cannot write the output")
}

/// Whether `e` comes from a reader that closed the pipe: the reader has enough, not a failure.
pub fn closed_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The exit statuses of every command (the README's table lists them).
pub mod exit {
    /// An error, a yes/no question answered `no`, or counts that differ from `--expected`.
    pub const FAILURE: u8 = 1;
    /// A time limit cut an answer short: what was printed is incomplete, and marked so on stdout
    /// ([`super::TIMED_OUT_LINE`], or `timeout` for a yes/no question). An error outranks it.
    pub const TIMED_OUT: u8 = 3;
}

/// The last line of an answer the time limit cut (rows and counts; JSON ends its array with
/// [`TIMED_OUT_JSON`] instead): a comment to TSV readers, visible under `-q`.
pub const TIMED_OUT_LINE: &str = "# timed out: the answer is incomplete";

/// The last element of a JSON array of rows that the time limit cut: rows hold strings (or the
/// count's number), never `true`, so a reader can tell it from a row.
pub const TIMED_OUT_JSON: &str = "{\"timed_out\": true}";

/// What a yes/no question answers when the time limit passed before a match was found.
pub const TIMED_OUT_ANSWER: &str = "timeout";

/// A count on stdout, followed by [`TIMED_OUT_LINE`] when the time limit cut it (then it is only
/// a lower bound).
pub fn count_text(n: impl Display, timed_out: bool) -> String {
    if timed_out {
        format!("{n}\n{TIMED_OUT_LINE}\n")
    } else {
        format!("{n}\n")
    }
}

/// A time limit cut the answer, which went out marked: `main` exits with [`exit::TIMED_OUT`] and
/// no message (the summary on stderr says so already).
#[derive(Debug)]
pub struct TimedOut;

impl std::fmt::Display for TimedOut {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("timed out: the answer is incomplete")
    }
}

impl std::error::Error for TimedOut {}

/// The answer to a yes/no query was no: `main` exits with status 1 and no message.
#[derive(Debug)]
pub struct NoMatch;

impl std::fmt::Display for NoMatch {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("no match")
    }
}

impl std::error::Error for NoMatch {}

static QUIET: AtomicBool = AtomicBool::new(false);
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// `-q` (only results and errors) and `-v` (notes such as why there is no GPU), set once by `main`.
pub fn set_level(quiet: bool, verbose: bool) {
    QUIET.store(quiet, Relaxed);
    VERBOSE.store(verbose, Relaxed);
}

pub fn quiet() -> bool {
    QUIET.load(Relaxed)
}

pub fn verbose() -> bool {
    VERBOSE.load(Relaxed)
}

/// A line for the user on stderr (summaries, notes), unless `-q`.
macro_rules! note {
    ($($t:tt)*) => {
        if !$crate::out::quiet() {
            eprintln!($($t)*);
        }
    };
}
pub(crate) use note;

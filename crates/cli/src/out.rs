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

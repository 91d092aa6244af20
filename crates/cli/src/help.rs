//! The command line as `--help` shows it: option headings, and the help texts that differ between
//! commands sharing an option (clap's derive gives a flattened or global option one text).

use clap::{Command, CommandFactory};

use crate::Cli;

/// Where the files come from.
pub const INPUT: &str = "Input";
/// What is written, and where.
pub const OUTPUT: &str = "Output";
/// How the matching runs.
pub const ENGINE: &str = "Engine";
/// What bounds a run.
pub const LIMITS: &str = "Limits";
/// Matching across threads and processes on timely dataflow.
pub const DISTRIBUTED: &str = "Distributed (timely dataflow)";

/// `match`'s own texts for the options it shares with `query`.
const MATCH: [(&str, &str); 3] = [
    (
        "semantics",
        "iso: subgraph isomorphism (injective over all query nodes; non-induced), as the \
         benchmark's published counts are. hom: homomorphism (query nodes may share a data \
         node). Default: iso",
    ),
    (
        "limit",
        "Stop each count at N matches (its line then says `limit reached`)",
    ),
    (
        "workers",
        "Worker threads in this process; with --processes, across processes, each holding one \
         part of a `gpsense partition` directory given as --data",
    ),
];

/// The command line, `match` with its own texts for the options it shares with `query`.
pub fn command() -> Command {
    Cli::command().mut_subcommand("match", |mut sub| {
        for (arg, text) in MATCH {
            sub = sub.mut_arg(arg, |a| a.help(text));
        }
        sub
    })
}

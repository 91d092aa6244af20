//! `gpsense`: the command-line front end. It parses arguments, wires the library crates together and
//! formats their results; it is the only crate that prints.

mod commands;
mod fmt;
mod graph_source;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use gpsense_graph::ingest::{Columns, Format, OnError};

#[derive(Parser)]
#[command(
    name = "gpsense",
    version,
    about = "Subgraph matching over common-sense knowledge graphs (GpSense, TruST)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print a graph's size, relations and memory use (default: the embedded ConceptNet-100K).
    Info {
        /// A snapshot (.gps) or any file `ingest` reads.
        graph: Option<PathBuf>,
        /// Same as the positional argument.
        #[arg(long = "graph", conflicts_with = "graph")]
        graph_flag: Option<PathBuf>,
        /// How many relations to list.
        #[arg(long, default_value_t = 40)]
        top: usize,
    },
    /// Read triples files (ConceptNet dump, TSV, CSV, WordNet, benchmark format; .gz too) into a snapshot.
    Ingest {
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The snapshot to write (written to a temporary file, then renamed into place).
        #[arg(short, long)]
        output: PathBuf,
        /// Input format; detected from content and extension when absent.
        #[arg(long, value_parser = parse::<Format>)]
        format: Option<Format>,
        /// Column order of triples TSV: rht (relation head tail) or hrt (head relation tail).
        #[arg(long, value_parser = parse::<Columns>)]
        columns: Option<Columns>,
        /// ConceptNet: keep only this language (repeatable). With one language, names are bare terms.
        #[arg(long = "lang")]
        languages: Vec<String>,
        /// ConceptNet: drop the part-of-speech suffix (/n, /v/...) of concept URIs.
        #[arg(long)]
        strip_pos: bool,
        /// What to do with a malformed line: fail (with file, line and reason) or skip (and count).
        #[arg(long, default_value = "fail", value_parser = parse::<OnError>)]
        on_error: OnError,
    },
}

fn parse<T: std::str::FromStr<Err = String>>(s: &str) -> Result<T, String> {
    s.parse()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info {
            graph,
            graph_flag,
            top,
        } => commands::info::run(graph.or(graph_flag).as_deref(), top),
        Command::Ingest {
            inputs,
            output,
            format,
            columns,
            languages,
            strip_pos,
            on_error,
        } => commands::ingest::run(commands::ingest::Args {
            inputs,
            output,
            format,
            columns,
            languages,
            strip_pos,
            on_error,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

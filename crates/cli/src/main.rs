//! `gpsense`: the command-line front end. It parses arguments, wires the library crates together and
//! formats their results; it is the only crate that prints.

mod commands;
mod explain;
mod graph_source;
mod help;
mod input;
mod lines;
mod out;
mod outputs;
mod progress;
mod rows;
mod serve;
mod summary;

/// mimalloc rather than the system allocator: a small query's answer allocates a few hundred small
/// arrays (candidates, lists, search levels), and glibc's malloc and free were a sixth of HPRD's
/// per-query time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Hands memory freed so far back to the system now rather than after mimalloc's purge delay: a
/// process that loaded a file and keeps only what it decoded (a part of a distributed graph) then
/// holds what it uses, which is what its resident size should show.
fn release_freed_memory() {
    // SAFETY: `mi_collect` takes no pointers; it only returns free pages the allocator holds.
    unsafe { libmimalloc_sys::mi_collect(true) }
}

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, FromArgMatches, Parser, Subcommand};
use gpsense_graph::export::DumpFormat;
use gpsense_graph::ingest::{Columns, Format, OnError};
use gpsense_runtime::{parse_bytes, EngineKind, MatchOptions, Semantics};

use rows::RowFormat;

#[derive(Parser)]
#[command(
    name = "gpsense",
    version,
    about = "Subgraph matching over common-sense knowledge graphs (GpSense, TruST)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Print only results and errors: no summary, note or progress bar on stderr.
    #[arg(short, long, global = true)]
    quiet: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Print a graph's size, relations and memory use (default: the embedded ConceptNet-100K).
    Info {
        /// A snapshot (.gps) or any file `ingest` reads.
        graph: Option<PathBuf>,
        /// Same as the positional argument.
        #[arg(long = "graph", value_name = "GRAPH", conflicts_with = "graph", help_heading = help::INPUT)]
        graph_flag: Option<PathBuf>,
        /// How many relations to list, most edges first.
        #[arg(long, default_value_t = 40, help_heading = help::OUTPUT)]
        top: usize,
    },
    /// Read triples files (ConceptNet dump, TSV, CSV, WordNet, benchmark format, N-Triples, N-Quads,
    /// Turtle, TriG, RDF/XML, KGTK; .gz too) into a snapshot.
    #[command(next_help_heading = help::INPUT)]
    Ingest {
        /// The files to read into one graph (a name in several files is one node); each may be
        /// gzip-compressed (.gz).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The snapshot to write (written to a temporary file, then renamed into place).
        #[arg(short, long, help_heading = help::OUTPUT)]
        output: PathBuf,
        /// Input format, detected from the name and first lines when absent: conceptnet (the
        /// ConceptNet 5 assertions dump), triples (TSV: relation head tail, or head relation tail),
        /// csv (head,relation,tail[,context[,weight]]), wordnet-nodes (a WordNet node table),
        /// wordnet-lemmas (a WordNet lemma table: every lemma names its synset's node), benchmark (the subgraph-matching `t N M` / `v` / `e` format),
        /// ntriples, nquads, turtle, trig, rdfxml (RDF: IRIs named by their bare text, literals in
        /// N-Triples form; the default graph is read, triples in named graphs are skipped and
        /// counted), kgtk (KGTK edges, e.g. CSKG: node1;label and node2;label become further
        /// names of the nodes).
        #[arg(long, value_parser = one_of::<Format>(&FORMATS))]
        format: Option<Format>,
        /// The base IRI that relative IRIs in Turtle, TriG and RDF/XML resolve against (a file's
        /// own @base or xml:base wins); without it a relative IRI is a malformed line.
        #[arg(long, value_name = "IRI")]
        base: Option<String>,
        /// Column order of triples TSV: rht (relation head tail) or hrt (head relation tail).
        #[arg(long, value_parser = one_of::<Columns>(&["rht", "hrt"]))]
        columns: Option<Columns>,
        /// ConceptNet: keep only this language (repeatable). With one language, names are bare terms.
        #[arg(long = "lang")]
        languages: Vec<String>,
        /// ConceptNet: drop the part-of-speech suffix (/n, /v/...) of concept URIs.
        #[arg(long)]
        strip_pos: bool,
        /// What to do with a malformed line: fail (with file, line and reason) or skip (and count).
        #[arg(long, default_value = "fail", value_parser = one_of::<OnError>(&["fail", "skip"]))]
        on_error: OnError,
        /// The longest input line, in bytes (e.g. 4M); a longer line is malformed. Default 1M.
        #[arg(long, value_parser = parse_line_bytes)]
        max_line_bytes: Option<usize>,
        /// Replace the output even if it is read-only (an output that is an input is always
        /// refused).
        #[arg(long, help_heading = help::OUTPUT)]
        force: bool,
    },
    /// Answer a query (standard SPARQL 1.1, or the short dialect of bare words) on a graph, e.g.
    /// `gpsense query 'SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }'`.
    Query {
        /// The query text (or use -f FILE).
        query: Option<String>,
        /// Read the query from a file (`-` for standard input); a file may hold several queries,
        /// each starting with SELECT or ASK (or PREFIX, BASE), answered in turn.
        #[arg(short = 'f', long = "file", help_heading = help::INPUT)]
        file: Option<PathBuf>,
        /// The graph: a snapshot or any file `ingest` reads (default: the embedded ConceptNet-100K).
        #[arg(long, help_heading = help::INPUT)]
        graph: Option<PathBuf>,
        /// The base IRI that relative IRIs resolve against: in the query (standard SPARQL; its own
        /// BASE wins) and in a --graph text file (Turtle, TriG, RDF/XML).
        #[arg(long, value_name = "IRI", help_heading = help::INPUT)]
        base: Option<String>,
        /// Output format of the rows.
        #[arg(long, default_value = "tsv", value_parser = one_of::<RowFormat>(&ROW_FORMATS), help_heading = help::OUTPUT)]
        format: RowFormat,
        /// Print only the number of matches (counted without materialising them).
        #[arg(long, help_heading = help::OUTPUT)]
        count: bool,
        /// Print the semantics, plan, candidate sizes per phase and time per phase on stderr.
        #[arg(long, help_heading = help::OUTPUT)]
        explain: bool,
        /// Also print notes on stderr: which engine `auto` chose and why, or why it runs on the CPU.
        #[arg(short, long, conflicts_with = "quiet", help_heading = help::OUTPUT)]
        verbose: bool,
        /// With several queries (-f) on `--engine gpu`, `emulated` or `auto` with a GPU: take up
        /// to N queries that have arrived (from a pipe, those its writer has sent) and answer the
        /// counting ones (`--count`, COUNT(*), ASK) and the SELECTs without FILTER, OFFSET or
        /// ORDER BY as one batch, one sequence of launches (1: one query at a time).
        #[arg(long, value_name = "N", default_value_t = 256, help_heading = help::ENGINE,
              value_parser = clap::value_parser!(u64).range(1..=65_536))]
        device_batch: u64,
        #[command(flatten)]
        matching: MatchArgs,
        /// Refuse a disconnected query whose components' match counts multiply beyond this (rows
        /// without LIMIT; counting is never refused).
        #[arg(long, default_value_t = 1_000_000_000, help_heading = help::LIMITS)]
        max_cartesian: u64,
    },
    /// Subgraph-matching benchmark format: count the embeddings of each query in a data graph and
    /// print `name<TAB>count<TAB>milliseconds`.
    Match {
        /// The data graph (.graph file or snapshot).
        #[arg(long, help_heading = help::INPUT)]
        data: PathBuf,
        /// Query files or directories of .graph files.
        #[arg(long = "query", required = true, num_args = 1.., help_heading = help::INPUT)]
        queries: Vec<PathBuf>,
        /// Expected counts (`name:count` or `name count` lines) to check against.
        #[arg(long, help_heading = help::INPUT)]
        expected: Option<PathBuf>,
        /// Only the queries whose expected count (in --expected) is at most N, e.g. yeast's queries
        /// with a published count of at most 1e8.
        #[arg(long, requires = "expected", value_name = "N", help_heading = help::INPUT)]
        max_expected: Option<u64>,
        /// Accepted for symmetry with `query`: `match` always prints counts.
        #[arg(long, hide = true)]
        count: bool,
        /// Add the search counters to each line, and their totals: dfs's (`nodes=N backjumps=N
        /// twins=N`), a machine-independent measure for comparing search variants, or a device
        /// engine's with `--device-batch 1` (`launches=N reads=N levels=N partials=N chunks=N
        /// plan_ms=X`, the last the host's time between filtering and the join).
        #[arg(long, help_heading = help::OUTPUT)]
        search_stats: bool,
        /// With `--engine gpu` or `emulated`: answer the queries N at a time, each batch in one
        /// sequence of launches (1: one query at a time).
        #[arg(long, value_name = "N", default_value_t = 256, help_heading = help::ENGINE,
              value_parser = clap::value_parser!(u64).range(1..=65_536))]
        device_batch: u64,
        /// Also print notes on stderr: why `--engine auto` runs on the CPU, or which GPU it uses.
        #[arg(short, long, conflicts_with = "quiet", help_heading = help::OUTPUT)]
        verbose: bool,
        #[command(flatten)]
        matching: MatchArgs,
    },
    /// Inexact matching (TruST): the best near matches of a query whose concepts may be misspelt,
    /// e.g. `gpsense trust 'SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }'`,
    /// or of a template graph file in a data graph file (`--data D --template T`).
    Trust(commands::trust::TrustArgs),
    /// Multi-level graph compression (GpSense section 5) into a .gpsc file that `query --graph`
    /// answers exactly, e.g. `gpsense compress graph.gps --delta 0.8,0.7,0.7 -o graph.gpsc`.
    Compress(commands::compress::CompressArgs),
    /// A SPARQL 1.1 Protocol endpoint at /query (JSON, XML, CSV, TSV results), e.g.
    /// `gpsense serve --graph graph.gps --bind 127.0.0.1:7878`.
    Serve {
        #[command(flatten)]
        args: serve::ServeArgs,
        /// Also log each request on stderr: its status, time and the start of its query.
        #[arg(short, long, conflicts_with = "quiet")]
        verbose: bool,
    },
    /// Write a graph back out as N-Triples or TSV, which `ingest` reads into the same graph (names,
    /// relations, edges; TSV also weights), e.g. `gpsense dump graph.gps --format nt > graph.nt`.
    Dump {
        /// A snapshot (.gps) or any file `ingest` reads (default: the embedded ConceptNet-100K).
        graph: Option<PathBuf>,
        /// Same as the positional argument.
        #[arg(long = "graph", value_name = "GRAPH", conflicts_with = "graph", help_heading = help::INPUT)]
        graph_flag: Option<PathBuf>,
        /// nt (N-Triples; plain names as <gpsense:n/…>, relations as <gpsense:r/…> IRIs) or tsv
        /// (head relation tail [weight]); by default from the -o file's extension.
        #[arg(long, value_parser = one_of::<DumpFormat>(&["nt", "tsv"]), help_heading = help::OUTPUT)]
        format: Option<DumpFormat>,
        /// Write to this file (atomically) instead of standard output.
        #[arg(short, long, help_heading = help::OUTPUT)]
        output: Option<PathBuf>,
        /// Replace the output even if it is read-only (the graph itself is always refused).
        #[arg(long, requires = "output", help_heading = help::OUTPUT)]
        force: bool,
    },
    /// Cut a graph by node into one part file per process of a distributed run
    /// (DIR/part-I-of-P.gpsp), e.g. `gpsense partition graph.gps -n 4 -o parts`.
    Partition {
        /// A snapshot (.gps) or any file `ingest` reads (default: the embedded ConceptNet-100K).
        graph: Option<PathBuf>,
        /// Same as the positional argument.
        #[arg(long = "graph", value_name = "GRAPH", conflicts_with = "graph", help_heading = help::INPUT)]
        graph_flag: Option<PathBuf>,
        /// How many parts (one per process), 1 to 1024.
        #[arg(short = 'n', long = "parts", value_parser = commands::partition::parse_parts, help_heading = help::OUTPUT)]
        parts: u32,
        /// The directory to write the parts into (created if needed).
        #[arg(short, long, help_heading = help::OUTPUT)]
        output: PathBuf,
        /// Replace parts even if they are read-only (the graph itself is always refused).
        #[arg(long, help_heading = help::OUTPUT)]
        force: bool,
    },
}

/// Options shared by `query` and `match`. The help texts are `query`'s; [`help::command`] gives
/// `match` its own where they differ.
#[derive(Args)]
#[command(next_help_heading = help::ENGINE)]
struct MatchArgs {
    /// iso: subgraph isomorphism (injective over all query nodes, concepts included; non-induced).
    /// hom: homomorphism, as SPARQL (query nodes may share a data node). Default: iso, except for
    /// a standard SPARQL query, whose semantics are its own (hom, or iso when its FILTERs make
    /// every two nodes differ).
    #[arg(long, value_parser = one_of::<Semantics>(&["iso", "hom"]))]
    semantics: Option<Semantics>,
    /// auto (the GPU if present, else dfs), dfs (candidate space and DAF-style search with failing
    /// sets, on every core), kernels (the GPU-shaped GpSense join on the CPU executor), gpu (NVIDIA
    /// GPU), emulated (the GPU pipeline with every kernel launch run on the CPU).
    #[arg(
        long,
        default_value = "auto",
        value_parser = one_of::<EngineKind>(&["auto", "dfs", "kernels", "gpu", "emulated"])
    )]
    engine: EngineKind,
    /// Refinement rounds after filtering (the paper's best: 1), 0 to 100. Refinement also ends at
    /// its fixpoint and at the time limit.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=MAX_REFINE_ROUNDS))]
    refine_rounds: u32,
    /// Worker threads (default: all cores; at most 4 per core).
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
    /// Stop after N rows (with --count: after N matches).
    #[arg(long, help_heading = help::LIMITS)]
    limit: Option<u64>,
    /// Memory the join may use for partial matches before it works in batches (e.g. 512M, 4G), at
    /// most this machine's memory. Default: a quarter of RAM.
    #[arg(long, value_parser = parse_memory_budget, help_heading = help::LIMITS)]
    memory_budget: Option<u64>,
    /// Stop each query after this many milliseconds (at most a week), reporting what was found by
    /// then as timed out (exit status 3).
    #[arg(long, value_parser = parse_timeout_ms, help_heading = help::LIMITS)]
    timeout_ms: Option<u64>,
    /// Worker threads in this process; with --processes, across processes, each holding one part
    /// of a `gpsense partition` directory given as --graph.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256), help_heading = help::DISTRIBUTED)]
    workers: Option<u16>,
    /// Processes of the timely cluster (timely's -n); needs --process and --hostfile.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=1024), help_heading = help::DISTRIBUTED)]
    processes: Option<u16>,
    /// This process's index, from 0 (timely's -p).
    #[arg(long, requires = "processes", help_heading = help::DISTRIBUTED)]
    process: Option<u16>,
    /// One host:port line per process (timely's -h).
    #[arg(long, requires = "processes", help_heading = help::DISTRIBUTED)]
    hostfile: Option<PathBuf>,
    /// Seeds each worker starts per batch (batches bound each worker's memory).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..), help_heading = help::DISTRIBUTED)]
    batch: u32,
    /// Seconds to wait for every process of the cluster to connect (1 to 3600).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600), help_heading = help::DISTRIBUTED)]
    connect_timeout_s: u64,
}

impl MatchArgs {
    fn options(&self) -> MatchOptions {
        let mut o = MatchOptions {
            semantics: self.semantics.unwrap_or(Semantics::Iso),
            engine: self.engine,
            refine_rounds: self.refine_rounds,
            limit: self.limit,
            single_thread: self.threads == Some(1),
            timeout: self.timeout_ms.map(std::time::Duration::from_millis),
            ..MatchOptions::default()
        };
        if let Some(b) = self.memory_budget {
            o.memory_budget = b;
        }
        o
    }

    /// The timely cluster, when `--workers` or `--processes` asks for one.
    fn distributed(&self) -> Option<commands::distributed::DistArgs> {
        if self.workers.is_none() && self.processes.is_none() {
            return None;
        }
        // Options the dataflow has no use for are refused, not silently dropped.
        let unused = if self.threads.is_some() {
            Some("--threads (--workers sets the threads of each process)")
        } else if self.engine != EngineKind::Auto {
            Some("--engine (each process matches with its CPU workers)")
        } else if self.refine_rounds != 1 {
            Some("--refine-rounds (the dataflow filters with one refinement round)")
        } else {
            None
        };
        Some(commands::distributed::DistArgs {
            unused,
            workers: usize::from(self.workers.unwrap_or(1)),
            processes: usize::from(self.processes.unwrap_or(1)),
            process: self.process.map(usize::from),
            hostfile: self.hostfile.clone(),
            batch: self.batch as usize,
            connect_timeout: std::time::Duration::from_secs(self.connect_timeout_s),
        })
    }
}

/// The error and its causes on one line, skipping a cause already spelled out by the message before it
/// (library errors include their I/O cause in their own text).
fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

/// `--threads`: 1 to 4 per core. Beyond that threads only wait on each other (5,000 made a
/// millisecond query take a minute).
pub fn parse_threads(s: &str) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let max = 4 * cores;
    match s.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        Ok(n) => Err(format!(
            "{n} threads: between 1 and {max} (4 per core, {cores} cores here)"
        )),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

/// The most `--refine-rounds`: refinement reaches its fixpoint within a few rounds on real queries
/// (and stops there); beyond it the device pipeline would only launch idle rounds.
const MAX_REFINE_ROUNDS: i64 = 100;

/// The longest `--timeout-ms`: a week (no time limit at all: leave the option out).
const MAX_TIMEOUT_MS: u64 = 7 * 24 * 3600 * 1000;

/// `--timeout-ms`: milliseconds, at most [`MAX_TIMEOUT_MS`].
pub fn parse_timeout_ms(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(ms) if ms <= MAX_TIMEOUT_MS => Ok(ms),
        _ => Err(format!(
            "{s:?}: a time limit is a whole number of milliseconds up to {MAX_TIMEOUT_MS} (a \
             week); leave --timeout-ms out for none"
        )),
    }
}

/// `--memory-budget`: a size (`512M`, `4G`) no larger than this machine's memory, which the join
/// would otherwise try to fill before it works in batches.
pub fn parse_memory_budget(s: &str) -> Result<u64, String> {
    let n = parse_bytes(s)?;
    match gpsense_runtime::physical_memory() {
        Some(total) if n > total => Err(format!(
            "{s}: more than this machine's memory ({} bytes)",
            total
        )),
        _ => Ok(n),
    }
}

/// A line length: bytes with an optional K/M/G suffix, at least 1 KiB and at most 1 GiB.
fn parse_line_bytes(s: &str) -> Result<usize, String> {
    let n = gpsense_runtime::parse_bytes(s).map_err(|e| e.to_string())?;
    if !(1024..=1 << 30).contains(&n) {
        return Err(format!("{s}: a line limit must be between 1K and 1G"));
    }
    Ok(n as usize)
}

/// The names `--format` takes on `ingest` (the same as `Format::ALL`'s; a test checks it).
const FORMATS: [&str; 12] = [
    "conceptnet",
    "triples",
    "csv",
    "wordnet-nodes",
    "wordnet-lemmas",
    "benchmark",
    "ntriples",
    "nquads",
    "turtle",
    "trig",
    "rdfxml",
    "kgtk",
];

/// The names an output `--format` takes.
pub(crate) const ROW_FORMATS: [&str; 3] = ["tsv", "csv", "json"];

/// A parser that accepts `names` (listed in `--help`) and parses the one given.
pub(crate) fn one_of<T>(
    names: &'static [&'static str],
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::fmt::Display,
{
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(names).try_map(|s| {
        s.parse::<T>()
            .map_err(|e| std::io::Error::other(e.to_string()))
    })
}

fn main() -> ExitCode {
    let cli = Cli::from_arg_matches(&help::command().get_matches()).unwrap_or_else(|e| e.exit());
    // The server handles SIGINT and SIGTERM itself (a graceful stop) and writes no snapshot; the
    // handlers here would be chained behind its own and end the process at once.
    if !matches!(cli.command, Command::Serve { .. }) {
        gpsense_graph::snapshot::signals::remove_temporaries_on_signals();
    }
    let verbose = match &cli.command {
        Command::Query { verbose, .. }
        | Command::Match { verbose, .. }
        | Command::Serve { verbose, .. } => *verbose,
        _ => false,
    };
    out::set_level(cli.quiet, verbose);
    let threads = match &cli.command {
        Command::Query { matching, .. } | Command::Match { matching, .. } => matching.threads,
        _ => None,
    };
    if let Some(n) = threads {
        // Only fails if a pool exists already, which cannot happen this early.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build_global();
    }
    if matches!(
        cli.command,
        Command::Query { .. } | Command::Match { .. } | Command::Serve { .. }
    ) {
        // While the graph loads: the thread count, the GPU driver's search, the code mapped.
        gpsense_runtime::look_ahead();
    }
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
            base,
            columns,
            languages,
            strip_pos,
            on_error,
            max_line_bytes,
            force,
        } => commands::ingest::run(commands::ingest::Args {
            inputs,
            output,
            format,
            base_iri: base,
            columns,
            languages,
            strip_pos,
            on_error,
            max_line_bytes: max_line_bytes.unwrap_or(0),
            force,
        }),
        Command::Query {
            query,
            file,
            graph,
            base,
            format,
            max_cartesian,
            count,
            explain,
            device_batch,
            matching,
            verbose: _,
        } => commands::query::run(commands::query::Args {
            graph,
            base,
            text: query,
            file,
            format,
            count,
            explain,
            batch: device_batch as usize,
            semantics_given: matching.semantics.is_some(),
            dist: matching.distributed(),
            options: MatchOptions {
                explain,
                max_cartesian,
                ..matching.options()
            },
        }),
        Command::Match {
            data,
            queries,
            expected,
            max_expected,
            count: _,
            search_stats,
            device_batch,
            matching,
            verbose: _,
        } => commands::match_cmd::run(commands::match_cmd::Args {
            data,
            queries,
            expected,
            max_expected,
            search_stats,
            batch: device_batch as usize,
            dist: matching.distributed(),
            options: matching.options(),
        }),
        Command::Trust(args) => commands::trust::run(args),
        Command::Compress(args) => commands::compress::run(args),
        Command::Serve { args, .. } => serve::run(args),
        Command::Dump {
            graph,
            graph_flag,
            format,
            output,
            force,
        } => commands::dump::run(commands::dump::Args {
            graph: graph.or(graph_flag),
            format,
            output,
            force,
        }),
        Command::Partition {
            graph,
            graph_flag,
            parts,
            output,
            force,
        } => commands::partition::run(commands::partition::Args {
            graph: graph.or(graph_flag),
            parts,
            output,
            force,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // `| head`: the reader has what it wanted.
        Err(e) if out::closed_pipe(&e) => ExitCode::SUCCESS,
        Err(e) if e.is::<out::NoMatch>() => ExitCode::from(out::exit::FAILURE),
        Err(e) if e.is::<out::TimedOut>() => ExitCode::from(out::exit::TIMED_OUT),
        Err(e) => {
            eprintln!("error: {}", render(&e));
            ExitCode::from(out::exit::FAILURE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_input_format() {
        let names: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
        assert_eq!(names, FORMATS);
        for f in ROW_FORMATS {
            assert!(f.parse::<RowFormat>().is_ok(), "{f}");
        }
    }
}

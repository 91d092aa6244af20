//! `gpsense ingest INPUT... -o graph.gps`: read triples files, write a snapshot.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use gpsense_graph::ingest::{
    ingest, Columns, Format, IngestError, IngestOptions, IngestReport, OnError, RELATIVE_IRI,
};

use crate::progress::Bar;
use crate::summary::plural;
use gpsense::fmt::{bytes, millis, thousands};

pub struct Args {
    pub inputs: Vec<PathBuf>,
    pub output: PathBuf,
    pub format: Option<Format>,
    /// Resolves relative IRIs in Turtle, TriG and RDF/XML.
    pub base_iri: Option<String>,
    pub columns: Option<Columns>,
    pub languages: Vec<String>,
    pub strip_pos: bool,
    pub on_error: OnError,
    pub max_line_bytes: usize,
    /// Replace a read-only output.
    pub force: bool,
}

pub fn run(args: Args) -> Result<()> {
    let inputs: Vec<&Path> = args.inputs.iter().map(PathBuf::as_path).collect();
    crate::outputs::check(&args.output, &inputs, args.force)?;
    let opts = IngestOptions {
        format: args.format,
        columns: args.columns,
        languages: args.languages,
        strip_pos: args.strip_pos,
        on_error: args.on_error,
        max_line_bytes: args.max_line_bytes,
        base_iri: args.base_iri,
    };
    let start = Instant::now();
    let (graph, report) = ingest(&args.inputs, &opts, &Bar::default()).map_err(|e| match e {
        IngestError::Malformed { ref reason, .. } if reason.kind == RELATIVE_IRI => {
            anyhow!("{e} (pass --base IRI to resolve relative IRIs)")
        }
        IngestError::Malformed { .. } => anyhow!("{e} (use --on-error skip to skip such lines)"),
        IngestError::BaseIri { .. } => anyhow!("--base: {e}"),
        e => e.into(),
    })?;
    let ingest_time = start.elapsed();
    let start = Instant::now();
    graph
        .save(&args.output)
        .with_context(|| format!("cannot write the snapshot {}", args.output.display()))?;
    let save_time = start.elapsed();
    if !crate::out::quiet() {
        eprint!("{}", describe(&report));
    }
    let size = std::fs::metadata(&args.output)
        .map(|m| m.len() as usize)
        .unwrap_or(0);
    crate::out::print(format_args!(
        "{}: {}, {}, {}; ingest {}, snapshot {} written in {}\n",
        display(&args.output),
        plural(graph.node_count() as u64, "node", "nodes"),
        plural(graph.edge_count() as u64, "edge", "edges"),
        plural(graph.relation_count() as u64, "relation", "relations"),
        millis(ingest_time),
        bytes(size),
        millis(save_time),
    ))?;
    Ok(())
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

/// Per-file lines for stderr: format, counts, and skipped lines by reason with examples.
fn describe(report: &IngestReport) -> String {
    let mut out = String::new();
    for f in &report.files {
        let columns = f.columns.map(|c| format!(" ({c})")).unwrap_or_default();
        out.push_str(&format!(
            "{}: {}{columns}, {} lines, {} edges",
            f.path.display(),
            f.format,
            thousands(f.lines),
            thousands(f.edges)
        ));
        if f.names > 0 {
            out.push_str(&format!(", {} names", thousands(f.names)));
        }
        if f.filtered > 0 {
            out.push_str(&format!(
                ", {} filtered (other languages or non-concept URIs)",
                thousands(f.filtered)
            ));
        }
        out.push('\n');
        if f.in_named_graphs > 0 {
            out.push_str(&format!(
                "  {} triples in named graphs skipped: gpsense keeps one default graph\n",
                thousands(f.in_named_graphs)
            ));
        }
        if f.is_empty() {
            out.push_str(&format!(
                "note: {} holds no data (empty, or only comments and directives)\n",
                f.path.display()
            ));
        }
        for (reason, n) in &f.skipped {
            out.push_str(&format!("  skipped {} lines: {reason}\n", thousands(*n)));
        }
        for (line, e) in &f.examples {
            out.push_str(&format!("    e.g. line {line}: {e}\n"));
        }
    }
    if report.files.iter().all(|f| f.is_empty()) {
        out.push_str("note: the graph is empty (no triples)\n");
    }
    if report.duplicates > 0 {
        out.push_str(&format!(
            "{} repeated triples stored once\n",
            thousands(report.duplicates)
        ));
    }
    out
}

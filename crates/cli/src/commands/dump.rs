//! `gpsense dump [GRAPH] --format nt|tsv [-o FILE]`: a graph back out as text that `ingest` reads
//! into the same graph (see `gpsense_graph::export` for what each format holds).

use std::io;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use gpsense_graph::export::{dump, DumpFormat, DumpReport};

use crate::graph_source;
use crate::out::note;
use gpsense::fmt::thousands;

pub struct Args {
    pub graph: Option<PathBuf>,
    pub format: Option<DumpFormat>,
    pub output: Option<PathBuf>,
    /// Replace a read-only output.
    pub force: bool,
}

pub fn run(args: Args) -> Result<()> {
    let format = match (args.format, args.output.as_deref()) {
        (Some(format), _) => format,
        (None, Some(path)) => format_of(path)?,
        (None, None) => bail!("which format? pass --format nt or --format tsv"),
    };
    if let Some(path) = &args.output {
        refuse_gzip(path)?;
        let inputs: Vec<&Path> = args.graph.iter().map(PathBuf::as_path).collect();
        crate::outputs::check(path, &inputs, args.force)?;
    }
    let loaded = graph_source::load(args.graph.as_deref())?;
    let report = match &args.output {
        // A reader that closes the pipe ends the dump quietly (`main` sees the broken pipe).
        None => dump(&loaded.graph, format, io::stdout().lock())?,
        Some(path) => {
            // Held in memory, then written atomically (temporary file, rename), as snapshots are.
            let mut bytes = Vec::new();
            let report = dump(&loaded.graph, format, &mut bytes)?;
            gpsense_graph::snapshot::write_atomic(path, &bytes)
                .with_context(|| format!("cannot write the dump {}", path.display()))?;
            report
        }
    };
    describe(&report, format, &loaded.origin);
    Ok(())
}

/// The format an output file's name implies.
fn format_of(path: &Path) -> Result<DumpFormat> {
    let name = path.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".nt") {
        Ok(DumpFormat::NTriples)
    } else if name.ends_with(".tsv") || name.ends_with(".txt") {
        Ok(DumpFormat::Tsv)
    } else {
        bail!(
            "cannot tell the format from {}: pass --format nt or --format tsv",
            path.display()
        )
    }
}

/// The dump is plain text; a `.gz` name would promise what the file is not.
fn refuse_gzip(path: &Path) -> Result<()> {
    if path.to_string_lossy().to_ascii_lowercase().ends_with(".gz") {
        bail!(
            "dump writes plain text: write to standard output and compress it, e.g. \
             gpsense dump GRAPH --format nt | gzip > {}",
            path.display()
        );
    }
    Ok(())
}

/// What was written and what the format could not hold, on stderr.
fn describe(report: &DumpReport, format: DumpFormat, origin: &str) {
    note!(
        "{origin}: {} edges written as {format}",
        thousands(report.edges)
    );
    let mut left_out = Vec::new();
    if report.weights_dropped {
        left_out.push("edge weights (tsv keeps them)".to_owned());
    }
    if report.aliases > 0 {
        left_out.push(format!("{} alias names", thousands(report.aliases as u64)));
    }
    if report.node_labels {
        left_out.push("node labels".to_owned());
    }
    if report.nodes_without_edges > 0 {
        left_out.push(format!(
            "{} nodes without edges",
            thousands(report.nodes_without_edges)
        ));
    }
    if !left_out.is_empty() {
        note!(
            "note: not written (the format has no place for them; a snapshot keeps them): {}",
            left_out.join(", ")
        );
    }
}

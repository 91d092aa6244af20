//! `gpsense partition [GRAPH] -n P -o DIR`: the graph cut by node into `P` part files
//! (`DIR/part-{i}-of-{P}.gpsp`), one for each process of a distributed run, written one at a time.
//! One line per part on stdout (path, nodes, out-list entries, file bytes), the time on stderr.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use gpsense::fmt::{bytes, millis};
use gpsense_dist::write_parts_with;

use crate::graph_source;
use crate::out::note;
use crate::summary::plural;

/// The most parts `-n` takes: beyond it parts are tiny and processes idle on exchanges.
pub const MAX_PARTS: u32 = 1024;

pub struct Args {
    pub graph: Option<PathBuf>,
    pub parts: u32,
    pub output: PathBuf,
    /// Replace read-only parts.
    pub force: bool,
}

pub fn run(args: Args) -> Result<()> {
    let inputs: Vec<&Path> = args.graph.iter().map(PathBuf::as_path).collect();
    for part in 0..args.parts {
        let path = gpsense_dist::partition::part_path(&args.output, part, args.parts);
        crate::outputs::check(&path, &inputs, args.force)?;
    }
    let start = Instant::now();
    let loaded = graph_source::load(args.graph.as_deref())?;
    if loaded.compressed.is_some() {
        // A part holds plain adjacency lists; the hyper-nodes of a .gpsc have no place in it.
        bail!(
            "{}: a compressed graph cannot be partitioned: partition the graph it was compressed \
             from (its .gps snapshot or text files)",
            loaded.origin
        );
    }
    let written =
        write_parts_with(&loaded.graph, args.parts, &args.output, |_| {}).with_context(|| {
            format!(
                "cannot write {} parts into {}",
                args.parts,
                args.output.display()
            )
        })?;
    let mut text = String::new();
    for w in &written {
        text.push_str(&format!(
            "{}\t{} nodes\t{} edges\t{} bytes\n",
            w.path.display(),
            w.nodes,
            w.edges,
            w.bytes
        ));
    }
    crate::out::print(text)?;
    let total: u64 = written.iter().map(|w| w.bytes).sum();
    note!(
        "{}: {}, {} cut into {} part{} ({}) in {}",
        loaded.origin,
        plural(loaded.graph.node_count() as u64, "node", "nodes"),
        plural(loaded.graph.edge_count() as u64, "edge", "edges"),
        args.parts,
        if args.parts == 1 { "" } else { "s" },
        bytes(total as usize),
        millis(start.elapsed())
    );
    Ok(())
}

/// `-n`: a whole number of parts between 1 and [`MAX_PARTS`].
pub fn parse_parts(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_PARTS).contains(&n) => Ok(n),
        _ => Err(format!(
            "the number of parts (one per process) must be between 1 and {MAX_PARTS}"
        )),
    }
}

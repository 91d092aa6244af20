//! Where the graph comes from: the embedded default, a snapshot, or text files ingested on the fly.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use gpsense_compress::CompressedGraph;
use gpsense_graph::ingest::{ingest, IngestError, IngestOptions};
use gpsense_graph::{snapshot, KnowledgeGraph};

use crate::progress::Bar;

/// The default graph: ConceptNet-100K (train), ingested at build time.
static DEFAULT_SNAPSHOT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default.gps"));
pub const DEFAULT_NAME: &str = "ConceptNet-100K (embedded default; CC BY-SA 4.0, Li et al. 2016)";

pub struct Loaded {
    /// The graph (for a compressed file: its original graph).
    pub graph: KnowledgeGraph,
    /// The compression, when the file was a `.gpsc` (`gpsense compress`).
    pub compressed: Option<CompressedGraph>,
    pub origin: String,
    pub load_time: Duration,
}

/// Loads `path` (a snapshot, a compressed graph, or any file `gpsense ingest` reads), or the default
/// graph.
pub fn load(path: Option<&Path>) -> Result<Loaded> {
    let start = Instant::now();
    let mut compressed = None;
    let (graph, origin) = match path {
        None => {
            let graph = KnowledgeGraph::from_snapshot_bytes(
                DEFAULT_SNAPSHOT,
                Path::new("<embedded default>"),
            )
            .context("the embedded default graph is unreadable (a build problem)")?;
            (graph, DEFAULT_NAME.to_owned())
        }
        Some(p) => match read_snapshot(p)? {
            Some(bytes) if kind_of(&bytes) == gpsense_compress::KIND_COMPRESSED => {
                let (graph, c) = gpsense_compress::format::from_bytes(&bytes, p)?;
                compressed = Some(c);
                (graph, format!("{} (compressed)", p.display()))
            }
            Some(bytes) => (
                KnowledgeGraph::from_snapshot_bytes(&bytes, p)?,
                p.display().to_string(),
            ),
            None => ingest_file(p)?,
        },
    };
    Ok(Loaded {
        graph,
        compressed,
        origin,
        load_time: start.elapsed(),
    })
}

/// A text file (anything `gpsense ingest` reads), ingested with the default options.
fn ingest_file(p: &Path) -> Result<(KnowledgeGraph, String)> {
    let (graph, _) = ingest(
        &[PathBuf::from(p)],
        &IngestOptions::default(),
        &Bar::default(),
    )
    .map_err(|e| match e {
        IngestError::Malformed { .. } => anyhow!(
            "{e} (fix the line, or keep the good lines in a snapshot and query that: \
             gpsense ingest {} -o graph.gps --on-error skip)",
            p.display()
        ),
        // `query` and the others have no input --format: the remedy is `ingest`.
        IngestError::Detect { path, why } => anyhow!(
            "{}: cannot detect the format ({why}); ingest it with an explicit format and use the \
             snapshot: gpsense ingest {} --format FORMAT -o graph.gps",
            path.display(),
            p.display()
        ),
        e => e.into(),
    })?;
    Ok((
        graph,
        format!(
            "{} (ingested; save a snapshot with `gpsense ingest` to load faster)",
            p.display()
        ),
    ))
}

/// The whole snapshot at `path`, read through one open handle (a concurrent atomic rewrite
/// replaces the name, not the file being read: the loader never mixes two versions), or `None`
/// when it is not a snapshot (a file to ingest). Only a regular file is ingested: a FIFO or device
/// can be read once, which detection would spend.
fn read_snapshot(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let mut file = snapshot::open(path)?;
    let cannot = || format!("{}: cannot read", path.display());
    let mut bytes = Vec::with_capacity(16);
    (&mut file)
        .take(16)
        .read_to_end(&mut bytes)
        .with_context(cannot)?;
    if bytes.len() >= 8 && bytes[..8] == snapshot::MAGIC {
        file.read_to_end(&mut bytes).with_context(cannot)?;
        return Ok(Some(bytes));
    }
    if !file.metadata().with_context(cannot)?.is_file() {
        anyhow::bail!(
            "{} is not a regular file and not a snapshot: give a snapshot, or a regular file to ingest",
            path.display()
        );
    }
    Ok(None)
}

/// The snapshot kind in a snapshot's header (a header cut short goes to the graph loader, which
/// names the problem).
fn kind_of(bytes: &[u8]) -> u32 {
    gpsense_compress::format::snapshot_kind(bytes).unwrap_or(snapshot::KIND_GRAPH)
}

/// Opens the GPU up front when the engine needs or prefers it: `gpu` without one is an error; with
/// `say` (`--explain`, `-v`), `auto` says why it runs on the CPU, or which GPU it uses.
pub fn announce_engine(
    engine: &gpsense_runtime::Engine,
    kind: gpsense_runtime::EngineKind,
    say: bool,
) -> Result<()> {
    use gpsense_runtime::EngineKind;
    let say = say && !crate::out::quiet();
    match (kind, engine.gpu()) {
        (EngineKind::Gpu, Err(e)) => anyhow::bail!("--engine gpu: {e}"),
        (EngineKind::Auto, Err(e)) if say => {
            eprintln!("note: {e}; running on the CPU (dfs engine)")
        }
        (EngineKind::Gpu | EngineKind::Auto, Ok(state)) if say => {
            eprintln!(
                "GPU: {} (graph placement: {:?})",
                state.describe(),
                state.placement()
            )
        }
        _ => {}
    }
    Ok(())
}

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
        Some(p) if snapshot_kind(p)? == Some(gpsense_compress::KIND_COMPRESSED) => {
            let (graph, c) = gpsense_compress::format::load(p)?;
            compressed = Some(c);
            (graph, format!("{} (compressed)", p.display()))
        }
        Some(p) if snapshot_kind(p)?.is_some() => {
            (KnowledgeGraph::load(p)?, p.display().to_string())
        }
        Some(p) => {
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
                e => e.into(),
            })?;
            (
                graph,
                format!(
                    "{} (ingested; save a snapshot with `gpsense ingest` to load faster)",
                    p.display()
                ),
            )
        }
    };
    Ok(Loaded {
        graph,
        compressed,
        origin,
        load_time: start.elapsed(),
    })
}

/// The snapshot kind of `path`, or `None` when it is not a snapshot (a file to ingest).
fn snapshot_kind(path: &Path) -> Result<Option<u32>> {
    use std::io::Read;
    let mut head = Vec::with_capacity(16);
    snapshot::open(path)?
        .take(16)
        .read_to_end(&mut head)
        .with_context(|| format!("{}: cannot read", path.display()))?;
    if head.len() >= 8 && head[..8] == snapshot::MAGIC {
        // A header cut short still goes to the snapshot loader, which names the problem.
        return Ok(Some(
            gpsense_compress::format::snapshot_kind(&head).unwrap_or(snapshot::KIND_GRAPH),
        ));
    }
    Ok(None)
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

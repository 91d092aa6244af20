//! Where a graph comes from: the embedded default, a snapshot, a compressed graph, or text files
//! ingested on the fly.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gpsense_compress::CompressedGraph;
use gpsense_graph::ingest::{
    IngestError, IngestOptions, IngestReport, Progress, RELATIVE_IRI, ingest,
};
use gpsense_graph::{KnowledgeGraph, snapshot};

use crate::Error;

/// The default graph: ConceptNet-100K (train), ingested at build time.
static DEFAULT_SNAPSHOT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/default.gps"));
/// How the embedded graph is named in summaries, with its licence.
///
/// ```
/// assert!(gpsense::DEFAULT_NAME.starts_with("ConceptNet-100K"));
/// ```
pub const DEFAULT_NAME: &str = "ConceptNet-100K (embedded default; CC BY-SA 4.0, Li et al. 2016)";

/// A graph ready to query: the graph, its compression when it came from a `.gpsc` file, and where
/// it came from.
///
/// ```
/// let loaded = gpsense::Loaded::embedded()?;
/// assert!(loaded.compressed.is_none());
/// assert!(loaded.graph.node_count() > 70_000);
/// # Ok::<(), gpsense::Error>(())
/// ```
pub struct Loaded {
    /// The graph (for a compressed file: its original graph).
    pub graph: KnowledgeGraph,
    /// The compression, when the file was a `.gpsc` (`gpsense compress`).
    pub compressed: Option<CompressedGraph>,
    /// Where it came from, in words.
    pub origin: String,
    /// How long loading took.
    pub load_time: Duration,
}

impl Loaded {
    /// The embedded ConceptNet-100K.
    ///
    /// ```
    /// let loaded = gpsense::Loaded::embedded()?;
    /// assert_eq!(loaded.origin, gpsense::DEFAULT_NAME);
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn embedded() -> Result<Loaded, Error> {
        let start = Instant::now();
        let graph =
            KnowledgeGraph::from_snapshot_bytes(DEFAULT_SNAPSHOT, Path::new("<embedded default>"))
                .map_err(Error::Embedded)?;
        Ok(Loaded::new(graph, None, DEFAULT_NAME.to_owned(), start))
    }

    /// Loads `path` (a snapshot, a compressed graph, or any file `ingest` reads), or the default
    /// graph. `progress` hears about a file being ingested.
    ///
    /// ```
    /// let loaded = gpsense::Loaded::open(None, &gpsense::NoProgress)?; // None: the embedded graph
    /// assert!(loaded.graph.node_id("dog").is_some());
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn open(path: Option<&Path>, progress: &dyn Progress) -> Result<Loaded, Error> {
        Loaded::open_with_base(path, None, progress)
    }

    /// [`Loaded::open`], a text file's relative IRIs resolved against `base`.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("gpsense-doc-base-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("a.ttl"); // Turtle may hold relative IRIs
    /// std::fs::write(&path, "<a> <p> <b> .\n")?;
    /// let loaded = gpsense::Loaded::open_with_base(Some(&path), Some("http://example.org/"), &gpsense::NoProgress)?;
    /// assert!(loaded.graph.node_id("http://example.org/a").is_some());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open_with_base(
        path: Option<&Path>,
        base: Option<&str>,
        progress: &dyn Progress,
    ) -> Result<Loaded, Error> {
        let Some(p) = path else {
            return Loaded::embedded();
        };
        let start = Instant::now();
        Ok(match read_snapshot(p)? {
            Some(bytes) if kind_of(&bytes) == gpsense_compress::KIND_COMPRESSED => {
                let (graph, c) = gpsense_compress::format::from_bytes(&bytes, p)?;
                let origin = format!("{} (compressed)", p.display());
                Loaded::new(graph, Some(c), origin, start)
            }
            Some(bytes) => {
                let graph = KnowledgeGraph::from_snapshot_bytes(&bytes, p)?;
                Loaded::new(graph, None, p.display().to_string(), start)
            }
            None => {
                let graph = ingest_file(p, base, progress)?;
                let origin = format!(
                    "{} (ingested; save a snapshot with `gpsense ingest` to load faster)",
                    p.display()
                );
                Loaded::new(graph, None, origin, start)
            }
        })
    }

    /// Ingests `paths` with `opts` (what `gpsense ingest` does, without writing a snapshot).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("gpsense-doc-ingest-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("pets.tsv");
    /// std::fs::write(&path, "cat\tIsA\tpet\n")?;
    /// let options = gpsense_graph::ingest::IngestOptions::default();
    /// let (loaded, report) = gpsense::Loaded::ingest(&[path], &options, &gpsense::NoProgress)?;
    /// assert_eq!(loaded.graph.node_count(), 2);
    /// # let _ = report;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn ingest(
        paths: &[PathBuf],
        opts: &IngestOptions,
        progress: &dyn Progress,
    ) -> Result<(Loaded, IngestReport), Error> {
        let start = Instant::now();
        let (graph, report) = ingest(paths, opts, progress)?;
        let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        let origin = format!("{} (ingested)", names.join(", "));
        Ok((Loaded::new(graph, None, origin, start), report))
    }

    /// Writes the graph as a snapshot, or as a compressed graph when it is one (atomically: a
    /// temporary file, then a rename).
    ///
    /// ```
    /// # let path = std::env::temp_dir().join(format!("gpsense-doc-loaded-{}.gps", std::process::id()));
    /// let loaded = gpsense::Loaded::embedded()?;
    /// loaded.save(&path)?;
    /// # std::fs::remove_file(&path).ok();
    /// # Ok::<(), gpsense::Error>(())
    /// ```
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        match &self.compressed {
            Some(c) => gpsense_compress::format::save(path, &self.graph, c)?,
            None => self.graph.save(path)?,
        }
        Ok(())
    }

    fn new(
        graph: KnowledgeGraph,
        compressed: Option<CompressedGraph>,
        origin: String,
        start: Instant,
    ) -> Loaded {
        Loaded {
            graph,
            compressed,
            origin,
            load_time: start.elapsed(),
        }
    }
}

/// A text file (anything `ingest` reads), ingested with the default options; the errors say
/// what to do instead.
fn ingest_file(
    p: &Path,
    base: Option<&str>,
    progress: &dyn Progress,
) -> Result<KnowledgeGraph, Error> {
    let paths = [PathBuf::from(p)];
    let opts = IngestOptions {
        base_iri: base.map(str::to_owned),
        ..IngestOptions::default()
    };
    let e = match ingest(&paths, &opts, progress) {
        Ok((graph, _)) => return Ok(graph),
        Err(e) => e,
    };
    let remedy = match &e {
        IngestError::Malformed { reason, .. } if reason.kind == RELATIVE_IRI => format!(
            "{e} (give a base IRI: --base IRI, or gpsense ingest {} --base IRI -o graph.gps \
             and use the snapshot)",
            p.display()
        ),
        IngestError::Malformed { .. } => format!(
            "{e} (fix the line, or keep the good lines in a snapshot and query that: \
             gpsense ingest {} -o graph.gps --on-error skip)",
            p.display()
        ),
        // Only `ingest` takes an input format: the remedy is to ingest first.
        IngestError::Detect { path, why } => format!(
            "{}: cannot detect the format ({why}); ingest it with an explicit format and use the \
             snapshot: gpsense ingest {} --format FORMAT -o graph.gps",
            path.display(),
            p.display()
        ),
        _ => return Err(e.into()),
    };
    Err(Error::IngestRemedy {
        message: remedy,
        error: e,
    })
}

/// The whole snapshot at `path`, read through one open handle (a concurrent atomic rewrite
/// replaces the name, not the file being read: the loader never mixes two versions), or `None`
/// when it is not a snapshot (a file to ingest). Only a regular file is ingested: a FIFO or device
/// can be read once, which detection would spend.
fn read_snapshot(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    let mut file = snapshot::open(path)?;
    let cannot = |source| Error::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut bytes = Vec::with_capacity(16);
    (&mut file)
        .take(16)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() >= 8 && bytes[..8] == snapshot::MAGIC {
        file.read_to_end(&mut bytes).map_err(cannot)?;
        return Ok(Some(bytes));
    }
    if !file.metadata().map_err(cannot)?.is_file() {
        return Err(Error::NotRegularFile(path.to_path_buf()));
    }
    Ok(None)
}

/// The snapshot kind in a snapshot's header (a header cut short goes to the graph loader, which
/// names the problem).
fn kind_of(bytes: &[u8]) -> u32 {
    gpsense_compress::format::snapshot_kind(bytes).unwrap_or(snapshot::KIND_GRAPH)
}

//! Streaming ingest of triples files into a [`KnowledgeGraph`].
//!
//! Formats (auto-detected by content and extension, see [`detect`]): the ConceptNet 5 assertions dump,
//! triples TSV in either column order, CSV with quoting and a BOM, WordNet node tables, the
//! subgraph-matching benchmark format, N-Triples, N-Quads, Turtle, TriG and RDF/XML (names as
//! [`crate::rdf`] says; the default graph only), and KGTK edge files (CSKG). Every input may be
//! gzip-compressed (detected by its magic bytes).
//! A malformed line is an error naming the file, line and reason, or, with [`OnError::Skip`], a count per
//! reason in the [`IngestReport`]. A file with no data (empty, or only comments and directives) is
//! an empty graph, reported as such; a file whose data all went (skipped, filtered, in named
//! graphs) is an error, [`IngestError::NoEdges`].

mod detect;
mod expected;
mod formats;
mod input;
mod kgtk;
mod rdf;
mod rdfxml;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use thiserror::Error;

use crate::{GraphBuilder, GraphError, KnowledgeGraph, NodeId};

pub use detect::detect;
pub use expected::{expected_counts, ExpectedError};

/// An input format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// The ConceptNet 5 assertions dump: `uri<TAB>/r/Rel<TAB>/c/..<TAB>/c/..<TAB>{json}`.
    ConceptNet,
    /// Triples TSV (`relation head tail` or `head relation tail`, see [`Columns`]), optional 4th
    /// column = weight; `#` lines are comments.
    Triples,
    /// CSV `head,relation,tail[,context[,weight]]` with quoting and an optional BOM (Pattern's net).
    Csv,
    /// WordNet node table `synset<TAB>ss_type<TAB>lexfile<TAB>lemma`; names nodes `lemma/synset`.
    WordNetNodes,
    /// WordNet lemma table `synset<TAB>lemma`: every lemma becomes a name of its synset's node, so
    /// `dog` denotes all its senses. Needs the node table in the same ingest.
    WordNetLemmas,
    /// The undirected, vertex-labelled benchmark format (`t N M`, `v id label deg`, `e u v`).
    Benchmark,
    /// N-Triples (`.nt`), one triple per line; names as [`crate::rdf`] says.
    NTriples,
    /// N-Quads (`.nq`): the default graph's quads; quads in named graphs are skipped and counted
    /// (gpsense keeps one default graph).
    NQuads,
    /// Turtle (`.ttl`): prefixes, `a`, `;` and `,`, `[]`, collections; statements may span lines.
    Turtle,
    /// TriG (`.trig`): Turtle with graph blocks; the default graph is read, named graphs are
    /// skipped and counted.
    TriG,
    /// RDF/XML (`.rdf`, `.owl`, `.xml`, or a first tag `<?xml` / `<rdf:RDF`).
    RdfXml,
    /// KGTK edge file (CSKG's layout): a header naming `node1`, `relation` (or `label`) and `node2`;
    /// `node1;label` and `node2;label` values become further names (aliases) of their node.
    Kgtk,
}

impl Format {
    pub const ALL: [Format; 12] = [
        Format::ConceptNet,
        Format::Triples,
        Format::Csv,
        Format::WordNetNodes,
        Format::WordNetLemmas,
        Format::Benchmark,
        Format::NTriples,
        Format::NQuads,
        Format::Turtle,
        Format::TriG,
        Format::RdfXml,
        Format::Kgtk,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Format::ConceptNet => "conceptnet",
            Format::Triples => "triples",
            Format::Csv => "csv",
            Format::WordNetNodes => "wordnet-nodes",
            Format::WordNetLemmas => "wordnet-lemmas",
            Format::Benchmark => "benchmark",
            Format::NTriples => "ntriples",
            Format::NQuads => "nquads",
            Format::Turtle => "turtle",
            Format::TriG => "trig",
            Format::RdfXml => "rdfxml",
            Format::Kgtk => "kgtk",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
                format!(
                    "unknown format {s:?} (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// Column order of a triples TSV.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Columns {
    /// `relation<TAB>head<TAB>tail` (ConceptNet-100K).
    RelHeadTail,
    /// `head<TAB>relation<TAB>tail` (WordNet edges, the Russian ConceptNet).
    HeadRelTail,
}

impl FromStr for Columns {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "rht" | "relation-head-tail" => Ok(Columns::RelHeadTail),
            "hrt" | "head-relation-tail" => Ok(Columns::HeadRelTail),
            _ => Err(format!("unknown column order {s:?} (expected rht or hrt)")),
        }
    }
}

impl fmt::Display for Columns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Columns::RelHeadTail => "relation-head-tail",
            Columns::HeadRelTail => "head-relation-tail",
        })
    }
}

/// What to do with a malformed line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnError {
    /// Stop with an error naming the file, line and reason.
    #[default]
    Fail,
    /// Skip the line and count it per reason.
    Skip,
}

impl FromStr for OnError {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "fail" => Ok(OnError::Fail),
            "skip" => Ok(OnError::Skip),
            _ => Err(format!("unknown --on-error {s:?} (expected fail or skip)")),
        }
    }
}

/// Ingest settings.
#[derive(Clone, Debug, Default)]
pub struct IngestOptions {
    /// Force a format instead of detecting it.
    pub format: Option<Format>,
    /// Force the column order of triples TSV.
    pub columns: Option<Columns>,
    /// ConceptNet: keep only these languages (empty = all). With exactly one, concept names are bare
    /// terms (`ice cream`); otherwise they keep the `/c/<lang>/<term>` prefix to stay distinct.
    pub languages: Vec<String>,
    /// ConceptNet: drop the `/<pos>/...` suffix of concept URIs.
    pub strip_pos: bool,
    pub on_error: OnError,
    /// The longest line read, in bytes (0: [`DEFAULT_MAX_LINE`]). A longer line is malformed and
    /// is never held in memory whole.
    pub max_line_bytes: usize,
    /// The IRI that relative IRIs in Turtle, TriG and RDF/XML resolve against (a file's own
    /// `@base` / `xml:base` overrides it). Without one a relative IRI is malformed.
    pub base_iri: Option<String>,
}

/// Lines longer than this (1 MiB) are malformed unless `max_line_bytes` says otherwise.
pub const DEFAULT_MAX_LINE: usize = 1 << 20;

impl IngestOptions {
    pub fn max_line(&self) -> usize {
        if self.max_line_bytes == 0 {
            DEFAULT_MAX_LINE
        } else {
            self.max_line_bytes
        }
    }
}

/// The [`LineError::kind`] of a relative IRI in Turtle, TriG or RDF/XML read without a base IRI
/// (a caller may point at its way of giving one).
pub const RELATIVE_IRI: &str = "relative IRI";

/// Why one line was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{kind}: {detail}")]
pub struct LineError {
    /// A short, fixed description used to count skipped lines by reason.
    pub kind: &'static str,
    pub detail: String,
}

impl LineError {
    pub(crate) fn new(kind: &'static str, detail: impl Into<String>) -> Self {
        LineError {
            kind,
            detail: detail.into(),
        }
    }
}

#[derive(Debug, Error)]
pub enum IngestError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// (No hint at a remedy here: what the caller can do depends on the caller.)
    #[error("{path}:{line}: {reason}")]
    Malformed {
        path: PathBuf,
        line: u64,
        reason: LineError,
    },
    #[error("{path}: cannot detect the format ({why}); pass --format")]
    Detect { path: PathBuf, why: String },
    #[error("{path}: {source}")]
    Graph { path: PathBuf, source: GraphError },
    #[error("no input files")]
    NoInput,
    /// Input with data of which nothing was kept (an input with no data is an empty graph).
    #[error("{}", no_edges(*lines, *in_named_graphs))]
    NoEdges { lines: u64, in_named_graphs: u64 },
    #[error("bad base IRI {iri:?}: {why} (a base IRI is absolute, e.g. http://example.org/)")]
    BaseIri { iri: String, why: String },
}

fn no_edges(lines: u64, in_named_graphs: u64) -> String {
    if in_named_graphs > 0 {
        format!(
            "0 edges read from {lines} lines: all {in_named_graphs} triples are in named graphs, \
             which are skipped (gpsense keeps one default graph)"
        )
    } else {
        format!("0 edges read from {lines} lines: is the format right? try --format (ingest --help lists them)")
    }
}

/// Checks a base IRI (it must be absolute) before any file is read.
fn check_base(opts: &IngestOptions) -> Result<(), IngestError> {
    match &opts.base_iri {
        Some(iri) => oxttl::TurtleParser::new()
            .with_base_iri(iri.as_str())
            .map(drop)
            .map_err(|e| IngestError::BaseIri {
                iri: iri.clone(),
                why: e.to_string(),
            }),
        None => Ok(()),
    }
}

/// What happened to one input file.
#[derive(Clone, Debug, PartialEq)]
pub struct FileReport {
    pub path: PathBuf,
    pub format: Format,
    /// Column order, for triples TSV.
    pub columns: Option<Columns>,
    pub lines: u64,
    /// Edges read (before duplicates are merged).
    pub edges: u64,
    /// Names given to nodes (WordNet lemmas).
    pub names: u64,
    /// Nodes this file added (names no earlier file of the ingest had).
    pub nodes: u64,
    /// Triples in named graphs (TriG, N-Quads), skipped: gpsense keeps one default graph.
    pub in_named_graphs: u64,
    /// Lines dropped on purpose (other languages, non-concept URIs such as ExternalURL targets).
    pub filtered: u64,
    /// Malformed lines skipped, by reason.
    pub skipped: BTreeMap<&'static str, u64>,
    /// The first few skipped lines, for the user to look at.
    pub examples: Vec<(u64, LineError)>,
}

/// What ingest did, per file and overall.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IngestReport {
    pub files: Vec<FileReport>,
    /// Repeated triples stored once.
    pub duplicates: u64,
}

impl FileReport {
    /// Whether the file held no data at all: empty, or only blank lines, comments and directives.
    pub fn is_empty(&self) -> bool {
        self.edges == 0
            && self.names == 0
            && self.nodes == 0
            && self.filtered == 0
            && self.in_named_graphs == 0
            && self.skipped.is_empty()
    }
}

impl IngestReport {
    pub fn skipped_total(&self) -> u64 {
        self.files.iter().flat_map(|f| f.skipped.values()).sum()
    }

    /// The files that held no data (they add nothing to the graph).
    pub fn empty_files(&self) -> impl Iterator<Item = &FileReport> {
        self.files.iter().filter(|f| f.is_empty())
    }
}

/// Receives progress while reading; the graph crate never prints.
pub trait Progress {
    /// A file starts; `total_bytes` is its size on disk when known.
    fn start(&self, _path: &Path, _total_bytes: Option<u64>) {}
    /// `bytes` of the file (on disk, so compressed bytes for gzip) have been read so far.
    fn position(&self, _bytes: u64) {}
    fn finish(&self) {}
}

/// Ignores progress.
pub struct NoProgress;
impl Progress for NoProgress {}

/// Ingests `paths` (in order, except that WordNet node tables go first so that edges can name their
/// synsets) into one graph.
pub fn ingest(
    paths: &[PathBuf],
    opts: &IngestOptions,
    progress: &dyn Progress,
) -> Result<(KnowledgeGraph, IngestReport), IngestError> {
    if paths.is_empty() {
        return Err(IngestError::NoInput);
    }
    check_base(opts)?;
    let mut inputs = Vec::with_capacity(paths.len());
    for path in paths {
        let input = input::Input::open(path)?;
        let format = match opts.format {
            Some(f) => f,
            None => detect(path, input.sample()).map_err(|why| IngestError::Detect {
                path: path.clone(),
                why,
            })?,
        };
        inputs.push((format != Format::WordNetNodes, path, input, format));
    }
    inputs.sort_by_key(|i| i.0); // stable: node tables first, otherwise the given order
    let mut sink = Sink::default();
    let mut report = IngestReport::default();
    for (_, path, input, format) in inputs {
        progress.start(path, input.size());
        let file = formats::read(path, input, format, opts, &mut sink, progress)?;
        progress.finish();
        report.files.push(file);
    }
    let (graph, duplicates) = sink.builder.build().map_err(|source| IngestError::Graph {
        path: paths[0].clone(),
        source,
    })?;
    report.duplicates = duplicates;
    // Input with no data is an empty graph (the report says so); input with data of which nothing
    // was kept is a mistake (a wrong format, every line skipped), not a graph.
    let no_data = report.files.iter().all(FileReport::is_empty);
    if report.files.iter().all(|f| f.edges == 0) && !no_data {
        return Err(IngestError::NoEdges {
            lines: report.files.iter().map(|f| f.lines).sum(),
            in_named_graphs: report.files.iter().map(|f| f.in_named_graphs).sum(),
        });
    }
    Ok((graph, report))
}

/// Ingests one in-memory input of a known format (tests, fuzzing, embedded data).
pub fn ingest_bytes(
    bytes: &[u8],
    format: Format,
    opts: &IngestOptions,
) -> Result<(KnowledgeGraph, IngestReport), IngestError> {
    check_base(opts)?;
    let path = PathBuf::from("<memory>");
    let input = input::Input::from_bytes(bytes.to_vec()).map_err(|source| IngestError::Io {
        path: path.clone(),
        source,
    })?;
    let mut sink = Sink::default();
    let file = formats::read(&path, input, format, opts, &mut sink, &NoProgress)?;
    let (graph, duplicates) = sink
        .builder
        .build()
        .map_err(|source| IngestError::Graph { path, source })?;
    Ok((
        graph,
        IngestReport {
            files: vec![file],
            duplicates,
        },
    ))
}

/// The builder plus the synset -> node map that WordNet node tables fill, and the blank nodes of
/// the RDF files read so far.
#[derive(Default)]
struct Sink {
    builder: GraphBuilder,
    aliases: HashMap<Box<str>, NodeId>,
    blanks: rdf::Blanks,
}

impl Sink {
    fn node(&mut self, name: &str) -> Result<NodeId, GraphError> {
        match self.aliases.get(name) {
            Some(&id) => Ok(id),
            None => self.builder.node(name),
        }
    }

    fn triple(
        &mut self,
        head: &str,
        relation: &str,
        tail: &str,
        weight: f32,
    ) -> Result<(), GraphError> {
        let s = self.node(head)?;
        let r = self.builder.relation(relation)?;
        let t = self.node(tail)?;
        self.builder.add_edge(s, r, t, weight);
        Ok(())
    }
}

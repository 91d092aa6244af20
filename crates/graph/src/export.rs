//! Writing a graph back out as N-Triples or triples TSV (`gpsense dump`); ingest of the output gives
//! the same graph: the same node names, relations, edges and (TSV) weights.
//!
//! What the text formats cannot hold is left out and counted in the [`DumpReport`]: aliases, node
//! labels and nodes without edges (neither format has a line for them), and, in N-Triples, weights.
//! A snapshot holds everything.
//!
//! - `nt`: one line per edge, terms as [`crate::rdf`] writes them (plain names and non-IRI relations
//!   in the `gpsense:n/` and `gpsense:r/` IRI schemes, which ingest decodes).
//! - `tsv`: `#head<TAB>relation<TAB>tail[<TAB>weight]`, then `head<TAB>relation<TAB>tail[<TAB>w]`
//!   lines, names as they are. The triples reader splits at tabs and lines and takes `#` lines for
//!   comments and has no escapes, so a name with a tab or line break, a name of only whitespace, or
//!   a head starting with `#`, would come back different: such a graph is refused before anything
//!   is written (N-Triples holds any name).

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::str::FromStr;

use thiserror::Error;

use crate::rdf::{self, TermKind};
use crate::{KnowledgeGraph, NodeId};

/// An output format of [`dump`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DumpFormat {
    NTriples,
    Tsv,
}

impl DumpFormat {
    pub const ALL: [DumpFormat; 2] = [DumpFormat::NTriples, DumpFormat::Tsv];

    pub fn name(self) -> &'static str {
        match self {
            DumpFormat::NTriples => "nt",
            DumpFormat::Tsv => "tsv",
        }
    }
}

impl fmt::Display for DumpFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DumpFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        DumpFormat::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown dump format {s:?} (expected nt or tsv)"))
    }
}

#[derive(Debug, Error)]
pub enum ExportError {
    #[error("cannot write the dump: {0}")]
    Io(#[from] io::Error),
    #[error("{what} {name:?} cannot be written as TSV: it {why} (use --format nt, which holds any name)")]
    NotTsv {
        what: &'static str,
        name: String,
        why: &'static str,
    },
    #[error("an edge of node {name:?} has the weight {weight}, which TSV cannot hold")]
    Weight { name: String, weight: f32 },
}

/// What a dump wrote, and what the format made it leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpReport {
    pub edges: u64,
    /// Weights other than 1 were left out (N-Triples has no place for them).
    pub weights_dropped: bool,
    /// Nodes without edges, which no line names.
    pub nodes_without_edges: u64,
    /// Alias names, which neither format holds.
    pub aliases: usize,
    /// Whether the graph has node labels, which neither format holds.
    pub node_labels: bool,
}

/// Writes `graph` to `out` in `format`; see the module docs. A TSV dump checks every name before
/// writing anything.
pub fn dump(
    graph: &KnowledgeGraph,
    format: DumpFormat,
    out: impl Write,
) -> Result<DumpReport, ExportError> {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    let mut report = DumpReport {
        edges: graph.edge_count() as u64,
        nodes_without_edges: (0..graph.node_count() as NodeId)
            .filter(|&v| graph.degree(v) == 0)
            .count() as u64,
        aliases: graph.aliases().names().len(),
        node_labels: graph.has_node_labels(),
        ..DumpReport::default()
    };
    match format {
        DumpFormat::NTriples => {
            report.weights_dropped = (0..graph.edge_count()).any(|i| graph.weight(i) != 1.0);
            write_nt(graph, &mut out)?;
        }
        DumpFormat::Tsv => {
            check_tsv(graph)?;
            write_tsv(graph, &mut out)?;
        }
    }
    out.flush()?;
    Ok(report)
}

/// One N-Triples line per edge, in outgoing-CSR order. Each node's kind is worked out once.
fn write_nt(graph: &KnowledgeGraph, out: &mut impl Write) -> io::Result<()> {
    let kinds: Vec<TermKind> = graph
        .nodes()
        .iter()
        .map(|(_, n)| rdf::term_kind(n))
        .collect();
    let predicates: Vec<String> = graph
        .relations()
        .iter()
        .map(|(_, r)| rdf::nt_predicate(r))
        .collect();
    let node = |v: NodeId| (graph.node_name(v), kinds[v as usize]);
    for v in 0..graph.node_count() as NodeId {
        let (targets, labels) = graph.out().neighbours(v);
        if targets.is_empty() {
            continue;
        }
        let (name, kind) = node(v);
        let subject = rdf::nt_subject_of_kind(name, kind);
        for (&w, &r) in targets.iter().zip(labels) {
            let (name, kind) = node(w);
            let object = rdf::nt_term_of_kind(name, kind);
            writeln!(out, "{subject} {} {object} .", predicates[r as usize])?;
        }
    }
    Ok(())
}

fn write_tsv(graph: &KnowledgeGraph, out: &mut impl Write) -> io::Result<()> {
    let weighted = graph.has_weights();
    out.write_all(if weighted {
        b"#head\trelation\ttail\tweight\n"
    } else {
        b"#head\trelation\ttail\n"
    })?;
    for (i, (s, r, t)) in graph.edges().enumerate() {
        let (h, rel, tail) = (
            graph.node_name(s),
            graph.relation_name(r),
            graph.node_name(t),
        );
        if weighted {
            writeln!(out, "{h}\t{rel}\t{tail}\t{}", graph.weight(i))?;
        } else {
            writeln!(out, "{h}\t{rel}\t{tail}")?;
        }
    }
    Ok(())
}

/// Refuses a graph whose TSV would read back as a different graph (see the module docs).
fn check_tsv(graph: &KnowledgeGraph) -> Result<(), ExportError> {
    for v in 0..graph.node_count() as NodeId {
        if graph.degree(v) == 0 {
            continue;
        }
        let name = graph.node_name(v);
        let head = graph.out().degree(v) > 0;
        tsv_name(name, "node", head && name.starts_with('#'))?;
        for i in graph.out().range(v) {
            let weight = graph.weight(i);
            if !weight.is_finite() {
                return Err(ExportError::Weight {
                    name: name.to_owned(),
                    weight,
                });
            }
        }
    }
    for (_, name) in graph.relations().iter() {
        tsv_name(name, "relation", false)?;
    }
    Ok(())
}

fn tsv_name(name: &str, what: &'static str, comment: bool) -> Result<(), ExportError> {
    let why = if name.contains(['\t', '\n', '\r']) {
        "holds a tab or line break"
    } else if name.trim().is_empty() {
        "is only whitespace"
    } else if comment {
        "heads an edge and starts with # (a comment line in TSV)"
    } else {
        return Ok(());
    };
    Err(ExportError::NotTsv {
        what,
        name: name.to_owned(),
        why,
    })
}

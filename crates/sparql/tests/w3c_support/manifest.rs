//! The suite's manifests: which tests each folder holds, and which of them the harness runs.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use oxrdf::vocab::rdf;
use oxrdf::{Graph, NamedNodeRef, NamedOrBlankNodeRef, TermRef};
use oxttl::TurtleParser;
use spargebra::{Query, SparqlParser};

use super::vocab::{mf, qt};

/// Where the suite lives on the web: the tests resolve relative IRIs against their files' IRIs
/// there, so the harness gives every file the IRI it has in w3c/rdf-tests.
pub const SUITE_BASE: &str = "https://w3c.github.io/rdf-tests/sparql/";

/// The query forms, as the report counts them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Form {
    SelectOrAsk,
    ConstructOrDescribe,
}

/// One query evaluation test the harness runs.
#[derive(Clone, Debug)]
pub struct Test {
    /// `sparql10/expr-equals/eq-1`: folder and the test IRI's fragment.
    pub name: String,
    pub folder: String,
    pub query: SuiteFile,
    pub data: SuiteFile,
    pub result: SuiteFile,
    pub form: Form,
    /// `mf:LaxCardinality` (REDUCED): rows may come fewer times than expected, but at least once.
    pub lax: bool,
    /// The parsed query (with the query file's IRI as base), for the ORDER BY keys.
    pub parsed: Query,
}

/// A file of the suite: where it is here and the IRI it has in the suite (its base IRI).
#[derive(Clone, Debug)]
pub struct SuiteFile {
    pub path: PathBuf,
    pub iri: String,
}

impl SuiteFile {
    pub fn extension(&self) -> &str {
        self.path.extension().and_then(|e| e.to_str()).unwrap_or("")
    }
}

/// Why a manifest entry is not run.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Skip {
    NotQueryEvaluation(String),
    NamedGraphs,
    DataFiles(usize),
    DatasetClause,
    NotAQuery,
}

impl fmt::Display for Skip {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Skip::NotQueryEvaluation(kind) => write!(f, "not a query evaluation test ({kind})"),
            Skip::NamedGraphs => f.write_str("named graphs (qt:graphData)"),
            Skip::DataFiles(n) => write!(f, "{n} default-graph data files, not one"),
            Skip::DatasetClause => f.write_str("FROM / FROM NAMED in the query"),
            Skip::NotAQuery => f.write_str("the query file does not parse as a query"),
        }
    }
}

/// A folder's tests: those run, and a count per reason for the others.
#[derive(Debug, Default)]
pub struct Folder {
    pub tests: Vec<Test>,
    pub skipped: BTreeMap<Skip, usize>,
}

/// Every `<root>/<suite>/<folder>/manifest.ttl` under `root` (folders in name order).
pub fn manifests(root: &Path) -> Result<Vec<PathBuf>> {
    let mut found = Vec::new();
    for suite in ["sparql10", "sparql11"] {
        let dir = root.join(suite);
        let entries = std::fs::read_dir(&dir).with_context(|| format!("{}", dir.display()))?;
        for entry in entries {
            let manifest = entry?.path().join("manifest.ttl");
            if manifest.is_file() {
                found.push(manifest);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Reads one folder's manifest (`<root>/<suite>/<folder>/manifest.ttl`).
pub fn read_folder(root: &Path, manifest: &Path) -> Result<Folder> {
    let relative = manifest
        .strip_prefix(root)
        .with_context(|| format!("{} is not under {}", manifest.display(), root.display()))?;
    let relative = relative
        .to_str()
        .context("a non-UTF-8 path")?
        .replace('\\', "/");
    let iri = format!("{SUITE_BASE}{relative}");
    let folder = relative
        .strip_suffix("/manifest.ttl")
        .context("not a manifest.ttl")?
        .to_owned();
    let graph = read_turtle(manifest, &iri)?;
    let mut out = Folder::default();
    let entries = entries(&graph).with_context(|| manifest.display().to_string())?;
    for entry in entries {
        let test = Entry {
            graph: &graph,
            node: entry,
            root,
            folder: &folder,
        };
        match test
            .read()
            .with_context(|| format!("{}: {entry}", manifest.display()))?
        {
            Ok(test) => out.tests.push(test),
            Err(skip) => *out.skipped.entry(skip).or_default() += 1,
        }
    }
    Ok(out)
}

fn read_turtle(path: &Path, iri: &str) -> Result<Graph> {
    let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
    let mut graph = Graph::new();
    for triple in TurtleParser::new().with_base_iri(iri)?.for_slice(&bytes) {
        graph.insert(&triple.with_context(|| path.display().to_string())?);
    }
    Ok(graph)
}

/// The members of the manifest's `mf:entries` list, in order (the manifest node is `<>` in some
/// manifests and `[]` in others, so it is found by its `mf:entries`).
fn entries(graph: &Graph) -> Result<Vec<NamedOrBlankNodeRef<'_>>> {
    let mut lists = graph.triples_for_predicate(mf::ENTRIES).map(|t| t.object);
    let Some(mut list) = lists.next() else {
        return Ok(Vec::new());
    };
    if lists.next().is_some() {
        bail!("more than one mf:entries");
    }
    let mut members = Vec::new();
    while list != rdf::NIL.into() {
        let node = as_subject(list).context("a malformed mf:entries list")?;
        let first = graph
            .object_for_subject_predicate(node, rdf::FIRST)
            .context("an mf:entries cell without rdf:first")?;
        members.push(as_subject(first).context("an mf:entries member that is a literal")?);
        list = graph
            .object_for_subject_predicate(node, rdf::REST)
            .context("an mf:entries cell without rdf:rest")?;
    }
    Ok(members)
}

fn as_subject(term: TermRef<'_>) -> Option<NamedOrBlankNodeRef<'_>> {
    match term {
        TermRef::NamedNode(n) => Some(n.into()),
        TermRef::BlankNode(b) => Some(b.into()),
        _ => None,
    }
}

/// One manifest entry being read.
struct Entry<'a> {
    graph: &'a Graph,
    node: NamedOrBlankNodeRef<'a>,
    root: &'a Path,
    folder: &'a str,
}

impl Entry<'_> {
    /// The test, or why it is not run; an error when the manifest itself is malformed.
    fn read(&self) -> Result<std::result::Result<Test, Skip>> {
        let kind = self
            .graph
            .object_for_subject_predicate(self.node, rdf::TYPE)
            .context("no rdf:type")?;
        if kind != mf::QUERY_EVALUATION_TEST.into() && kind != mf::CSV_RESULT_FORMAT_TEST.into() {
            let kind = kind.to_string();
            let short = kind.rsplit(['#', '/']).next().unwrap_or(&kind);
            return Ok(Err(Skip::NotQueryEvaluation(
                short.trim_end_matches('>').to_owned(),
            )));
        }
        let action = self.object(self.node, mf::ACTION).context("no mf:action")?;
        let action = as_subject(action).context("a literal mf:action")?;
        if self.object(action, qt::GRAPH_DATA).is_some() {
            return Ok(Err(Skip::NamedGraphs));
        }
        let data: Vec<_> = self
            .graph
            .objects_for_subject_predicate(action, qt::DATA)
            .collect();
        if data.len() != 1 {
            return Ok(Err(Skip::DataFiles(data.len())));
        }
        let query = self.file(self.object(action, qt::QUERY).context("no qt:query")?)?;
        let data = self.file(data[0])?;
        let result = self.file(self.object(self.node, mf::RESULT).context("no mf:result")?)?;
        let text = std::fs::read_to_string(&query.path)
            .with_context(|| query.path.display().to_string())?;
        let Ok(parsed) = SparqlParser::new()
            .with_base_iri(&query.iri)?
            .parse_query(&text)
        else {
            return Ok(Err(Skip::NotAQuery));
        };
        let form = match &parsed {
            Query::Select { dataset, .. } | Query::Ask { dataset, .. } if dataset.is_none() => {
                Form::SelectOrAsk
            }
            Query::Construct { dataset, .. } | Query::Describe { dataset, .. }
                if dataset.is_none() =>
            {
                Form::ConstructOrDescribe
            }
            _ => return Ok(Err(Skip::DatasetClause)),
        };
        Ok(Ok(Test {
            name: format!("{}/{}", self.folder, self.local_name()),
            folder: self.folder.to_owned(),
            query,
            data,
            result,
            form,
            lax: self.object(self.node, mf::RESULT_CARDINALITY) == Some(mf::LAX_CARDINALITY.into()),
            parsed,
        }))
    }

    fn object<'b>(
        &'b self,
        subject: NamedOrBlankNodeRef<'b>,
        predicate: NamedNodeRef<'b>,
    ) -> Option<TermRef<'b>> {
        self.graph.object_for_subject_predicate(subject, predicate)
    }

    /// The fragment of the test's IRI (`eq-1`), or its whole text for a blank node.
    fn local_name(&self) -> String {
        match self.node {
            NamedOrBlankNodeRef::NamedNode(n) => {
                let iri = n.as_str();
                iri.rsplit_once('#')
                    .map_or(iri, |(_, name)| name)
                    .to_owned()
            }
            NamedOrBlankNodeRef::BlankNode(b) => b.to_string(),
        }
    }

    /// A file the manifest names, as a path under `root` and its suite IRI.
    fn file(&self, term: TermRef<'_>) -> Result<SuiteFile> {
        let TermRef::NamedNode(node) = term else {
            bail!("{term} is not a file IRI");
        };
        let iri = node.as_str();
        let Some(relative) = iri.strip_prefix(SUITE_BASE) else {
            bail!("{iri} is outside the suite");
        };
        Ok(SuiteFile {
            path: self.root.join(relative),
            iri: iri.to_owned(),
        })
    }
}

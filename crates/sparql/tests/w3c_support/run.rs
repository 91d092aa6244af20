//! Running the tests: gpsense's evaluator, or Oxigraph's (`spareval`) as the reference that
//! checks the harness itself, and the verdict on each answer.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use gpsense_graph::ingest::{ingest, Format, IngestOptions, NoProgress};
use gpsense_graph::KnowledgeGraph;
use gpsense_runtime::{Engine, MatchOptions, Semantics};
use gpsense_sparql::{Answer, Options};
use oxrdf::{Dataset, Graph, GraphNameRef};
use spareval::{QueryEvaluator, QueryResults};

use super::manifest::{SuiteFile, Test};
use super::results::{as_csv, read_data, read_expected, Outcome, Solutions};

/// The matcher's time limit: far beyond what any test of the suite needs.
const TIMEOUT: Duration = Duration::from_secs(60);

/// A test without an answer by then hangs: it is judged wrong and the run goes on without it
/// (its thread is left behind, and ends with the process).
const HANG: Duration = Duration::from_secs(120);

/// Evaluation runs on its own thread; deep query algebra may recurse.
const STACK: usize = 16 << 20;

/// How one test went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// An answer that differs from the expected one (or a panic), and how.
    Wrong(String),
    /// No answer: the loader or the evaluator refused, with its message.
    Refused(String),
}

/// Why an evaluator gave no answer.
#[derive(Clone, Debug)]
pub enum NoAnswer {
    /// It refused (the loader, the parser or the evaluator), with its message.
    Refused(String),
    /// Its output is not an answer at all (a front end's text the harness cannot read): wrong.
    Malformed(String),
}

impl From<String> for NoAnswer {
    fn from(refusal: String) -> Self {
        NoAnswer::Refused(refusal)
    }
}

/// An evaluator under test: the answer, or why there is none. Shared, for the evaluators that
/// keep state across tests (a server per data file).
pub type Evaluate = Arc<dyn Fn(&Test) -> Result<Outcome, NoAnswer> + Send + Sync>;

/// Runs one test and judges its answer. A result file the harness cannot read is an error of the
/// harness (or of the copy of the suite), not of the evaluator.
pub fn judge(test: &Test, evaluate: &Evaluate) -> anyhow::Result<Verdict> {
    let (expected, csv) = read_expected(&test.result)?;
    let answer = match watched(test, evaluate)? {
        Ok(Ok(answer)) => answer,
        Ok(Err(NoAnswer::Refused(refusal))) => return Ok(Verdict::Refused(refusal)),
        Ok(Err(NoAnswer::Malformed(why))) => {
            return Ok(Verdict::Wrong(format!("not an answer: {why}")))
        }
        Err(wrong) => return Ok(Verdict::Wrong(wrong)),
    };
    let answer = match answer {
        Outcome::Solutions(solutions) if csv => Outcome::Solutions(as_csv(solutions)),
        other => other,
    };
    Ok(
        match super::compare::compare(&expected, &answer, test.lax, &test.parsed) {
            Ok(()) => Verdict::Pass,
            Err(why) => Verdict::Wrong(why),
        },
    )
}

/// What an evaluator made of a test: its answer or why none, or (Err) how it panicked or that it
/// hung.
pub type Watched = Result<Result<Outcome, NoAnswer>, String>;

/// Runs `evaluate` on `test` on a thread of its own, watched for panics and hangs.
pub fn watched(test: &Test, evaluate: &Evaluate) -> anyhow::Result<Watched> {
    let (send, receive) = mpsc::channel();
    let owned = test.clone();
    let evaluate = Arc::clone(evaluate);
    thread::Builder::new()
        .name(test.name.clone())
        .stack_size(STACK)
        .spawn(move || {
            let answer = catch_unwind(AssertUnwindSafe(|| evaluate(&owned)));
            // The harness may have stopped waiting (a hang): nobody to tell then.
            let _ = send.send(answer.map_err(|panic| panic_text(&*panic)));
        })?;
    Ok(match receive.recv_timeout(HANG) {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(panic)) => Err(format!("panicked: {panic}")),
        Err(_) => Err(format!("no answer in {} s: hangs", HANG.as_secs())),
    })
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "(no message)".into())
}

/// gpsense: the data file through the ingest API, the query through `gpsense_sparql::evaluate`.
pub fn gpsense(test: &Test) -> Result<Outcome, NoAnswer> {
    Ok(library(test)?)
}

fn library(test: &Test) -> Result<Outcome, String> {
    let graph = load(&test.data)?;
    let engine = Engine::new(&graph);
    let text = std::fs::read_to_string(&test.query.path).map_err(|e| e.to_string())?;
    let options = Options {
        base_iri: Some(test.query.iri.clone()),
        matching: MatchOptions {
            // SPARQL's basic graph patterns are homomorphisms.
            semantics: Semantics::Hom,
            timeout: Some(TIMEOUT),
            ..MatchOptions::default()
        },
    };
    let answer = gpsense_sparql::evaluate(&engine, &text, &options).map_err(|e| e.to_string())?;
    collect(answer).map_err(|e| e.to_string())
}

/// The ingest has no base IRI option yet, so relative IRIs in a data file are the reader's to
/// refuse. Turtle and N-Triples are named; other files (RDF/XML) are left to the format
/// detection, which refuses what the ingest does not read.
fn load(file: &SuiteFile) -> Result<KnowledgeGraph, String> {
    let format = match file.extension() {
        "ttl" => Some(Format::Turtle),
        "nt" => Some(Format::NTriples),
        _ => None,
    };
    // The suite resolves a data file's relative IRIs against the file's own IRI.
    let options = IngestOptions {
        format,
        base_iri: Some(file.iri.clone()),
        ..IngestOptions::default()
    };
    match ingest(std::slice::from_ref(&file.path), &options, &NoProgress) {
        Ok((graph, _)) => Ok(graph),
        Err(e) => Err(format!("loading the data: {e}")),
    }
}

fn collect(answer: Answer<'_>) -> Result<Outcome, gpsense_sparql::SparqlError> {
    Ok(match answer {
        Answer::Solutions { variables, rows } => Outcome::Solutions(Solutions {
            variables,
            rows: rows.collect::<Result<_, _>>()?,
            ordered: true,
        }),
        Answer::Boolean(value) => Outcome::Boolean(value),
        Answer::Graph(triples) => {
            let triples = triples.collect::<Result<Vec<_>, _>>()?;
            Outcome::Graph(triples.iter().collect())
        }
    })
}

/// Oxigraph's evaluator over an in-memory dataset holding the data file.
pub fn reference(test: &Test) -> Result<Outcome, NoAnswer> {
    Ok(oxigraph(test)?)
}

fn oxigraph(test: &Test) -> Result<Outcome, String> {
    let graph = read_data(&test.data).map_err(|e| format!("{e:#}"))?;
    let dataset: Dataset = graph
        .iter()
        .map(|t| t.in_graph(GraphNameRef::DefaultGraph))
        .collect();
    let results = QueryEvaluator::new()
        .prepare(&test.parsed)
        .execute(&dataset)
        .map_err(|e| e.to_string())?;
    Ok(match results {
        QueryResults::Solutions(solutions) => {
            let variables = solutions.variables().to_vec();
            let rows = solutions
                .map(|s| s.map(|s| s.values().to_vec()))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
            Outcome::Solutions(Solutions {
                variables,
                rows,
                ordered: true,
            })
        }
        QueryResults::Boolean(value) => Outcome::Boolean(value),
        QueryResults::Graph(triples) => {
            let triples = triples
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| e.to_string())?;
            Outcome::Graph(triples.iter().collect::<Graph>())
        }
    })
}

/// A reason on one line, without this machine's paths (the record is shared).
pub fn one_line(reason: &str, root: &Path) -> String {
    let root = format!("{}/", root.display());
    let line = reason.replace(&root, "").replace(['\n', '\r', '\t'], " ");
    const LONGEST: usize = 200;
    match line.char_indices().nth(LONGEST) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line,
    }
}

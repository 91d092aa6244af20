//! Query results as the harness compares them, read from the suite's result files (SPARQL XML,
//! JSON, TSV and CSV results; result sets in the `rs:` vocabulary; graphs in Turtle or RDF/XML).

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use oxrdf::vocab::rdf;
use oxrdf::{BlankNode, Graph, Literal, NamedOrBlankNodeRef, Term, TermRef, Variable};
use oxrdfxml::RdfXmlParser;
use oxttl::{NTriplesParser, TurtleParser};
use sparesults::{QueryResultsFormat, QueryResultsParser, SliceQueryResultsParserOutput};

use super::manifest::SuiteFile;
use super::vocab::rs;

/// A row: one optional term per variable, in the order of [`Solutions::variables`].
pub type Row = Vec<Option<Term>>;

#[derive(Clone, Debug)]
pub struct Solutions {
    pub variables: Vec<Variable>,
    pub rows: Vec<Row>,
    /// The rows come in a sequence (a results document, an answer; a result set in `rs:` only
    /// when every solution has an `rs:index`).
    pub ordered: bool,
}

/// What a query answered, or what the suite expects it to.
#[derive(Clone, Debug)]
pub enum Outcome {
    Solutions(Solutions),
    Boolean(bool),
    Graph(Graph),
}

impl Outcome {
    pub fn kind(&self) -> &'static str {
        match self {
            Outcome::Solutions(_) => "solutions",
            Outcome::Boolean(_) => "a boolean",
            Outcome::Graph(_) => "a graph",
        }
    }
}

/// An answer in a few lines, for a person comparing two: at most `most` rows or triples.
pub fn show(outcome: &Outcome, most: usize) -> String {
    let (count, mut lines) = match outcome {
        Outcome::Boolean(value) => return value.to_string(),
        Outcome::Solutions(s) => {
            let names: Vec<String> = s.variables.iter().map(ToString::to_string).collect();
            let mut lines = vec![format!("{} rows of ({})", s.rows.len(), names.join(" "))];
            lines.extend(s.rows.iter().take(most).map(|row| {
                let cells: Vec<String> = row
                    .iter()
                    .map(|cell| cell.as_ref().map_or("UNDEF".into(), ToString::to_string))
                    .collect();
                cells.join(" ")
            }));
            (s.rows.len(), lines)
        }
        Outcome::Graph(g) => {
            let mut lines = vec![format!("{} triples", g.len())];
            lines.extend(g.iter().take(most).map(|t| format!("{t} .")));
            (g.len(), lines)
        }
    };
    if count > most {
        lines.push("...".into());
    }
    lines.join("\n")
}

/// The expected outcome in a result file, and whether its cells are CSV text (then the answer is
/// compared as CSV text too: CSV keeps neither datatypes nor languages).
pub fn read_expected(file: &SuiteFile) -> Result<(Outcome, bool)> {
    let bytes = std::fs::read(&file.path).with_context(|| file.path.display().to_string())?;
    let context = || file.path.display().to_string();
    match file.extension() {
        "csv" => Ok((
            Outcome::Solutions(read_csv(&bytes).with_context(context)?),
            true,
        )),
        "srx" | "srj" | "tsv" => {
            let format = match file.extension() {
                "srx" => QueryResultsFormat::Xml,
                "srj" => QueryResultsFormat::Json,
                _ => QueryResultsFormat::Tsv,
            };
            Ok((read_results(&bytes, format).with_context(context)?, false))
        }
        _ => {
            let graph = read_graph(&bytes, file).with_context(context)?;
            Ok((from_graph(graph).with_context(context)?, false))
        }
    }
}

pub fn read_results(bytes: &[u8], format: QueryResultsFormat) -> Result<Outcome> {
    Ok(
        match QueryResultsParser::from_format(format).for_slice(bytes)? {
            SliceQueryResultsParserOutput::Boolean(value) => Outcome::Boolean(value),
            SliceQueryResultsParserOutput::Solutions(parser) => {
                let variables = parser.variables().to_vec();
                let rows = parser
                    .map(|solution| Ok(solution?.values().to_vec()))
                    .collect::<Result<_>>()?;
                Outcome::Solutions(Solutions {
                    variables,
                    rows,
                    ordered: true,
                })
            }
        },
    )
}

/// An RDF file (Turtle, N-Triples, RDF/XML), relative IRIs resolved against the file's suite IRI.
pub fn read_graph(bytes: &[u8], file: &SuiteFile) -> Result<Graph> {
    let triples: Vec<oxrdf::Triple> = match file.extension() {
        "ttl" => TurtleParser::new()
            .with_base_iri(&file.iri)?
            .for_slice(bytes)
            .collect::<Result<_, _>>()?,
        "nt" => NTriplesParser::new()
            .for_slice(bytes)
            .collect::<Result<_, _>>()?,
        "rdf" => RdfXmlParser::new()
            .with_base_iri(&file.iri)?
            .for_slice(bytes)
            .collect::<Result<_, _>>()?,
        other => bail!("unknown RDF file extension .{other}"),
    };
    Ok(triples.iter().collect())
}

/// A result set in the `rs:` vocabulary (rows in `rs:index` order where it is given), or else the
/// graph itself (CONSTRUCT, DESCRIBE).
fn from_graph(graph: Graph) -> Result<Outcome> {
    let Some(set) = graph.subject_for_predicate_object(rdf::TYPE, rs::RESULT_SET) else {
        return Ok(Outcome::Graph(graph));
    };
    if let Some(value) = graph.object_for_subject_predicate(set, rs::BOOLEAN) {
        return Ok(Outcome::Boolean(
            value == Literal::from(true).as_ref().into(),
        ));
    }
    let mut variables: Vec<Variable> = graph
        .objects_for_subject_predicate(set, rs::RESULT_VARIABLE)
        .map(|term| Ok(Variable::new(literal_text(term)?)?))
        .collect::<Result<_>>()?;
    variables.sort();
    let column: HashMap<Variable, usize> = variables
        .iter()
        .enumerate()
        .map(|(i, v)| (v.clone(), i))
        .collect();
    let mut indexed = Vec::new();
    for solution in graph.objects_for_subject_predicate(set, rs::SOLUTION) {
        let solution = subject(solution)?;
        let mut row = vec![None; variables.len()];
        for binding in graph.objects_for_subject_predicate(solution, rs::BINDING) {
            let binding = subject(binding)?;
            let name = graph
                .object_for_subject_predicate(binding, rs::VARIABLE)
                .context("an rs:binding without rs:variable")?;
            let value = graph
                .object_for_subject_predicate(binding, rs::VALUE)
                .context("an rs:binding without rs:value")?;
            let name = Variable::new(literal_text(name)?)?;
            let i = *column
                .get(&name)
                .with_context(|| format!("{name} is bound but not an rs:resultVariable"))?;
            row[i] = Some(value.into_owned());
        }
        let index = match graph.object_for_subject_predicate(solution, rs::INDEX) {
            Some(index) => Some(literal_text(index)?.parse::<u64>()?),
            None => None,
        };
        indexed.push((index, row));
    }
    let ordered = indexed.iter().all(|(index, _)| index.is_some());
    indexed.sort_by_key(|(index, _)| *index);
    let rows = indexed.into_iter().map(|(_, row)| row).collect();
    Ok(Outcome::Solutions(Solutions {
        variables,
        rows,
        ordered,
    }))
}

fn literal_text(term: TermRef<'_>) -> Result<&str> {
    match term {
        TermRef::Literal(literal) => Ok(literal.value()),
        other => bail!("{other} is not a literal"),
    }
}

fn subject(term: TermRef<'_>) -> Result<NamedOrBlankNodeRef<'_>> {
    match term {
        TermRef::NamedNode(n) => Ok(n.into()),
        TermRef::BlankNode(b) => Ok(b.into()),
        other => bail!("{other} cannot be a result-set node"),
    }
}

/// SPARQL CSV results as cells: `_:x` is a blank node, an empty cell unbound, anything else text.
fn read_csv(bytes: &[u8]) -> Result<Solutions> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let variables = reader
        .headers()?
        .iter()
        .map(Variable::new)
        .collect::<Result<Vec<_>, _>>()?;
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record?;
        if record.len() != variables.len() {
            bail!(
                "a row of {} cells under {} variables",
                record.len(),
                variables.len()
            );
        }
        rows.push(record.iter().map(csv_cell).collect());
    }
    Ok(Solutions {
        variables,
        rows,
        ordered: true,
    })
}

fn csv_cell(text: &str) -> Option<Term> {
    if text.is_empty() {
        None
    } else if let Some(label) = text.strip_prefix("_:") {
        Some(BlankNode::new_unchecked(label).into())
    } else {
        Some(Literal::new_simple_literal(text).into())
    }
}

/// An answer as the CSV cells it would be written as (IRIs and literals become their text).
pub fn as_csv(solutions: Solutions) -> Solutions {
    let rows = solutions
        .rows
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|cell| csv_cell(&csv_text(cell?)))
                .collect()
        })
        .collect();
    Solutions { rows, ..solutions }
}

/// Literals write their lexical form, IRIs their text, blank nodes `_:label`.
fn csv_text(term: Term) -> String {
    match term {
        Term::Literal(literal) => literal.value().to_owned(),
        Term::NamedNode(node) => node.into_string(),
        other => other.to_string(),
    }
}

/// Opens a data file's triples for the reference evaluator.
pub fn read_data(file: &SuiteFile) -> Result<Graph> {
    let bytes = std::fs::read(&file.path).with_context(|| file.path.display().to_string())?;
    read_graph(&bytes, file).with_context(|| file.path.display().to_string())
}

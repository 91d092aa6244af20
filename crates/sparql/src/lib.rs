//! SPARQL 1.1 query evaluation over a gpsense graph: the one evaluator every front end uses for
//! standard SPARQL.
//!
//! Two evaluators, chosen once per query before it runs. The native one (`native/`) takes every
//! SELECT and ASK whose algebra it fully supports: rows of `u32` ids (nodes, relations, values
//! the query computes), the matcher for basic graph patterns, CSR lookups per bound row, hash
//! joins on ids, expressions memoised per node. Everything else goes to the second:
//!
//! The algebra (OPTIONAL, UNION, MINUS, BIND, VALUES, aggregates, subqueries, property paths,
//! CONSTRUCT, DESCRIBE) and the expression library (XSD values, functions, errors that drop a row)
//! are Oxigraph's `spareval`, over the graph as a [`QueryableDataset`](spareval::QueryableDataset)
//! (`dataset.rs`: quads straight from the CSR). Every basic graph pattern the matcher takes is
//! answered by the matcher (`bgp.rs`), so the candidate space and the failing sets do the joins
//! inside any query. `gaps.rs`: the few places where spareval departs from the standard, refused
//! rather than answered wrongly. `limits.rs`: the time limit and cancellation for the parts spareval runs.

mod bgp;
mod dataset;
mod gaps;
mod limits;
mod native;

use std::sync::Arc;
use std::time::Instant;

pub use bgp::{evaluator_name, MatcherUse};

pub use dataset::Indexes;
pub use limits::Interrupted;
pub use oxrdf::{Term, Triple, Variable};

use gpsense_graph::KnowledgeGraph;
use gpsense_planner::sparql::{nesting_depth, MAX_NESTING};
use gpsense_planner::QueryGraph;
use gpsense_runtime::{Engine, MatchError, MatchOptions, MatchReport, RowBatch};
use spareval::{QueryEvaluationError, QueryEvaluator, QueryResults};
use spargebra::{Query, SparqlParser};

use dataset::{GraphDataset, View};
use limits::Watch;

/// What runs a basic graph pattern: the plain engine, or (in the `gpsense` crate) the compressed
/// one, which answers on the original graph.
pub trait Matching: Sync {
    /// The graph answers refer to.
    fn graph(&self) -> &KnowledgeGraph;
    /// Streams `q`'s rows to `on_rows` (which returns whether to go on).
    fn run(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
    ) -> Result<MatchReport, MatchError>;
}

impl Matching for Engine<'_> {
    fn graph(&self) -> &KnowledgeGraph {
        Engine::graph(self)
    }

    fn run(
        &self,
        q: &QueryGraph,
        opts: &MatchOptions,
        on_rows: &mut (dyn FnMut(RowBatch) -> bool + Send),
    ) -> Result<MatchReport, MatchError> {
        Engine::run(self, q, opts, on_rows)
    }
}

/// What evaluation takes besides the query text.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Resolves relative IRIs in the query (`--base`).
    pub base_iri: Option<String>,
    /// Limits for the whole evaluation (`timeout`, `cancel`, `memory_budget`) and the matcher's
    /// settings for every basic graph pattern (engine, threads).
    pub matching: MatchOptions,
}

/// Solutions as they come: one optional term per variable.
pub type Rows<'g> = Box<dyn Iterator<Item = Result<Vec<Option<Term>>, SparqlError>> + 'g>;
/// Triples as they come.
pub type Triples<'g> = Box<dyn Iterator<Item = Result<Triple, SparqlError>> + 'g>;

/// A query's answer, streamed.
pub enum Answer<'g> {
    /// SELECT: the variables, then rows (one optional term per variable, in that order).
    Solutions {
        variables: Vec<Variable>,
        rows: Rows<'g>,
    },
    /// ASK.
    Boolean(bool),
    /// CONSTRUCT and DESCRIBE.
    Graph(Triples<'g>),
}

/// An answer and how it was reached.
pub struct Evaluation<'g> {
    pub answer: Answer<'g>,
    /// What the matcher answered, declined, and which names the graph lacks.
    pub matcher: MatcherUse,
}

/// Why a query has no answer.
#[derive(Debug, thiserror::Error)]
pub enum SparqlError {
    /// Not SPARQL: the parser's message, with line and column.
    #[error("{0}")]
    Syntax(String),
    /// Valid SPARQL outside what gpsense evaluates: the construct's keyword (to find it in the
    /// text, [`SparqlError::at`]) and why.
    #[error("{message}")]
    Unsupported {
        keyword: &'static str,
        message: String,
    },
    #[error("the query ran out of time")]
    TimedOut,
    #[error(
        "a basic graph pattern has more than {rows} solutions, beyond the memory budget of \
         {budget} bytes; raise --memory-budget or make the pattern more selective"
    )]
    MemoryBudget { rows: u64, budget: u64 },
    /// What spareval holds (groups, sorted rows) grew past the memory budget.
    #[error("{0}")]
    Memory(String),
    #[error("{0}")]
    Matcher(String),
    /// An error the standard does not turn into an unbound value (a bad regex flag, ...).
    #[error("{0}")]
    Evaluation(String),
}

impl SparqlError {
    /// The error with the line and column of its construct in `text` (the first occurrence of
    /// its keyword outside comments, case-insensitive), where it has one.
    pub fn at(self, text: &str) -> SparqlError {
        match self {
            SparqlError::Unsupported { keyword, message } => {
                let (line, column) = locate(text, keyword);
                SparqlError::Unsupported {
                    keyword,
                    message: format!("line {line}, column {column}: {message}"),
                }
            }
            other => other,
        }
    }
}

fn locate(text: &str, keyword: &str) -> (usize, usize) {
    let upper = text.to_ascii_uppercase();
    let at = upper
        .lines()
        .scan(0, |start, line| {
            let here = *start;
            *start += line.len() + 1;
            Some((here, line))
        })
        .find_map(|(start, line)| {
            let code = line.split('#').next().unwrap_or("");
            code.find(keyword).map(|i| start + i)
        })
        .unwrap_or(0);
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    (line, column)
}

/// Whether a FILTER of `query` restricts a predicate variable to IRIs (`?x ?r ?y FILTER(?r IN
/// (r:A, r:B))`): the native evaluator then looks up each relation's edges, where the matcher
/// would enumerate every edge before the filter.
pub fn restricts_predicate(query: &Query) -> bool {
    use spargebra::algebra::GraphPattern as G;
    fn walk(p: &G) -> bool {
        match p {
            G::Filter { expr, inner } => {
                native::restricted_predicate(expr, inner).is_some() || walk(inner)
            }
            G::Project { inner, .. }
            | G::Distinct { inner }
            | G::Reduced { inner }
            | G::Slice { inner, .. }
            | G::OrderBy { inner, .. }
            | G::Extend { inner, .. }
            | G::Group { inner, .. } => walk(inner),
            G::Join { left, right } => walk(left) || walk(right),
            _ => false,
        }
    }
    match query {
        Query::Select { pattern, .. } | Query::Ask { pattern, .. } => walk(pattern),
        _ => false,
    }
}

/// The evaluator of one graph; keeps per-graph indexes across queries.
pub struct Sparql<'g, M: Matching + ?Sized> {
    matcher: &'g M,
    indexes: Indexes,
    /// Every query to spareval, none to the native evaluator (to compare the two).
    spareval_only: bool,
}

impl<'g, M: Matching + ?Sized> Sparql<'g, M> {
    pub fn new(matcher: &'g M) -> Self {
        Sparql {
            matcher,
            indexes: Indexes::default(),
            spareval_only: false,
        }
    }

    /// This evaluator with every query answered by spareval (with the matcher inside), never
    /// by the native evaluator: the reference the native one is compared against.
    pub fn spareval_only(mut self) -> Self {
        self.spareval_only = true;
        self
    }

    /// Parses `text` (standard SPARQL 1.1).
    pub fn parse(text: &str, base_iri: Option<&str>) -> Result<Query, SparqlError> {
        let depth = nesting_depth(text);
        if depth > MAX_NESTING {
            return Err(SparqlError::Syntax(format!(
                "the query nests brackets {depth} deep, more than the limit of {MAX_NESTING}"
            )));
        }
        let mut parser = SparqlParser::new();
        if let Some(base) = base_iri {
            parser = parser
                .with_base_iri(base)
                .map_err(|e| SparqlError::Syntax(format!("--base {base:?}: {e}")))?;
        }
        parser
            .parse_query(text)
            .map_err(|e| SparqlError::Syntax(format!("SPARQL syntax: {e}")))
    }

    /// [`Sparql::parse`] without a base IRI, for a caller that tries the short dialect when this
    /// fails: `None` instead of an error message nobody reads (formatting the parser's expected
    /// tokens costs about as much as parsing a short query).
    pub fn try_parse(text: &str) -> Option<Query> {
        if nesting_depth(text) > MAX_NESTING {
            return None;
        }
        SparqlParser::new().parse_query(text).ok()
    }

    /// Whether the native evaluator plans `query` (else spareval answers it; a planned query
    /// still goes to spareval if the matcher declines one of its patterns as it runs).
    pub fn plans_natively(&self, query: &Query) -> bool {
        if self.spareval_only || refuse_dataset(query).is_err() {
            return false;
        }
        let facts = gaps::facts(self.matcher.graph(), &self.indexes.literal_facts);
        let mut query = query.clone();
        if gaps::check(&mut query, facts).is_err() {
            return false;
        }
        gaps::guard_comparisons(&mut query, facts);
        let view = View {
            graph: self.matcher.graph(),
            indexes: &self.indexes,
        };
        native::plan(&query, view).is_some()
    }

    /// Evaluates `text`.
    pub fn evaluate<'s>(
        &'s self,
        text: &str,
        options: &Options,
    ) -> Result<Evaluation<'s>, SparqlError> {
        let query = Self::parse(text, options.base_iri.as_deref())?;
        self.evaluate_query(query, options).map_err(|e| e.at(text))
    }

    /// Evaluates a parsed query.
    pub fn evaluate_query<'s>(
        &'s self,
        query: Query,
        options: &Options,
    ) -> Result<Evaluation<'s>, SparqlError> {
        refuse_dataset(&query)?;
        let facts = gaps::facts(self.matcher.graph(), &self.indexes.literal_facts);
        let mut query = query;
        gaps::check(&mut query, facts)?;
        gaps::guard_comparisons(&mut query, facts);
        let deadline = options.matching.timeout.map(|t| Instant::now() + t);
        let watch = Arc::new(Watch::new(
            deadline,
            options.matching.cancel.clone(),
            options.matching.memory_budget,
        ));
        let view = View {
            graph: self.matcher.graph(),
            indexes: &self.indexes,
        };
        if !self.spareval_only {
            if let Some(plan) = native::plan(&query, view) {
                let ask = matches!(query, Query::Ask { .. });
                let native = native::evaluate(
                    plan,
                    ask,
                    self.matcher,
                    view,
                    &options.matching,
                    deadline,
                    Arc::clone(&watch),
                )?;
                if let Some((answer, matcher)) = native {
                    return Ok(Evaluation { answer, matcher });
                }
            }
        }
        let mut rewriter = bgp::Rewriter {
            matcher: self.matcher,
            view,
            options: &options.matching,
            deadline,
            evaluator: QueryEvaluator::new().with_custom_function(
                oxrdf::NamedNode::new_unchecked(gaps::UNDETERMINED),
                gaps::undetermined,
            ),
            used: MatcherUse::default(),
            answered: Default::default(),
            watch: Arc::clone(&watch),
        };
        let query = rewrite_query(query, &mut rewriter)?;
        let (evaluator, used) = (rewriter.evaluator, rewriter.used);
        let dataset = GraphDataset {
            view,
            watch: Arc::clone(&watch),
        };
        let results = evaluator
            .prepare(&query)
            .execute(dataset)
            .map_err(evaluation_error)?;
        Ok(Evaluation {
            answer: answer(results, watch),
            matcher: used,
        })
    }
}

/// Evaluates `text` on the engine's graph (no indexes kept between calls: use [`Sparql`] for
/// many queries).
pub fn evaluate<'g>(
    engine: &'g Engine<'g>,
    text: &str,
    options: &Options,
) -> Result<Answer<'g>, SparqlError> {
    // The evaluator's indexes must outlive the answer: leak-free by collecting here.
    let sparql = Sparql::new(engine);
    let evaluation = sparql.evaluate(text, options)?;
    collect(evaluation.answer)
}

/// The whole answer in memory (then it borrows nothing).
fn collect<'g>(answer: Answer<'_>) -> Result<Answer<'g>, SparqlError> {
    Ok(match answer {
        Answer::Solutions { variables, rows } => {
            let rows: Vec<_> = rows.collect::<Result<_, _>>()?;
            Answer::Solutions {
                variables,
                rows: Box::new(rows.into_iter().map(Ok)),
            }
        }
        Answer::Boolean(b) => Answer::Boolean(b),
        Answer::Graph(triples) => {
            let triples: Vec<_> = triples.collect::<Result<_, _>>()?;
            Answer::Graph(Box::new(triples.into_iter().map(Ok)))
        }
    })
}

fn rewrite_query<M: Matching + ?Sized>(
    query: Query,
    r: &mut bgp::Rewriter<'_, '_, M>,
) -> Result<Query, SparqlError> {
    Ok(match query {
        Query::Select {
            dataset,
            pattern,
            base_iri,
        } => Query::Select {
            dataset,
            pattern: r.pattern(pattern)?,
            base_iri,
        },
        Query::Ask {
            dataset,
            pattern,
            base_iri,
        } => Query::Ask {
            dataset,
            pattern: r.pattern(pattern)?,
            base_iri,
        },
        Query::Construct {
            template,
            dataset,
            pattern,
            base_iri,
        } => Query::Construct {
            template,
            dataset,
            pattern: r.pattern(pattern)?,
            base_iri,
        },
        Query::Describe {
            dataset,
            pattern,
            base_iri,
        } => Query::Describe {
            dataset,
            pattern: r.pattern(pattern)?,
            base_iri,
        },
    })
}

/// gpsense keeps one default graph: `FROM` and `FROM NAMED` would name graphs it does not have.
fn refuse_dataset(query: &Query) -> Result<(), SparqlError> {
    let dataset = match query {
        Query::Select { dataset, .. }
        | Query::Ask { dataset, .. }
        | Query::Construct { dataset, .. }
        | Query::Describe { dataset, .. } => dataset,
    };
    match dataset {
        Some(_) => Err(SparqlError::Unsupported {
            keyword: "FROM",
            message: "FROM and FROM NAMED are not supported: a gpsense graph is one default \
                      graph (the files given to ingest); GRAPH patterns match nothing"
                .into(),
        }),
        None => Ok(()),
    }
}

fn answer<'g>(results: QueryResults<'g>, watch: Arc<Watch>) -> Answer<'g> {
    match results {
        QueryResults::Solutions(solutions) => {
            let variables = solutions.variables().to_vec();
            Answer::Solutions {
                variables,
                rows: Box::new(solutions.map(move |s| {
                    watch.tick().map_err(interrupted)?;
                    s.map(|s| s.values().to_vec()).map_err(evaluation_error)
                })),
            }
        }
        QueryResults::Boolean(b) => Answer::Boolean(b),
        QueryResults::Graph(triples) => Answer::Graph(Box::new(triples.map(move |t| {
            watch.tick().map_err(interrupted)?;
            t.map_err(evaluation_error)
        }))),
    }
}

fn evaluation_error(e: QueryEvaluationError) -> SparqlError {
    if let QueryEvaluationError::Dataset(inner) | QueryEvaluationError::Service(inner) = &e {
        if let Some(i) = inner.downcast_ref::<Interrupted>() {
            return interrupted(*i);
        }
    }
    SparqlError::Evaluation(e.to_string())
}

fn interrupted(i: Interrupted) -> SparqlError {
    match i {
        Interrupted::TimedOut => SparqlError::TimedOut,
        Interrupted::Memory { .. } => SparqlError::Memory(i.to_string()),
    }
}

//! Every basic graph pattern the matcher can take is answered by it: the algebra is rewritten so
//! that each such pattern becomes a `SERVICE` whose handler hands spareval the matcher's rows.
//! A service is opaque to sparopt's optimiser, which joins it by hashing (never by a loop that
//! would re-run it per row), and its rows carry node and relation ids, so nothing is looked up by
//! name on the way in. Patterns the matcher refuses (a variable both predicate and node, more
//! query nodes than the engine takes) stay with spareval, which reads them from the CSR.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpsense_graph::NodeId;
use gpsense_planner::NodeKind;
use gpsense_planner::{prepare_bgp, Projected, QueryError};
use gpsense_runtime::{MatchError, MatchOptions, RowBatch, Semantics};
use oxrdf::{NamedNode, Term, Variable};
use sparesults::QuerySolution;
use spareval::{QueryEvaluationError, QueryEvaluator, QuerySolutionIter, ServiceHandler};
use spargebra::algebra::{Expression, GraphPattern, PropertyPathExpression};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};

use crate::dataset::{canonical_relation, Id, View, NODE_ID_IRI, RELATION_ID_IRI};
use crate::limits::Watch;
use crate::{Matching, SparqlError};

/// Service IRIs of the rewritten patterns: this prefix and the pattern's index.
const SERVICE_IRI: &str = "urn:x-gpsense-internal:bgp:";

/// What the matcher did for one query, for `--explain`.
#[derive(Clone, Debug, Default)]
pub struct MatcherUse {
    /// Basic graph patterns the matcher answered, and the rows it gave.
    pub patterns: usize,
    pub rows: u64,
    /// Patterns left to spareval's own evaluation, with the matcher's reason.
    pub declined: Vec<String>,
    /// Names the graph lacks (each such pattern has no solution), with suggestions.
    pub unknown: Vec<String>,
    /// The native evaluator answered the query (else spareval did, with the matcher inside).
    pub native: bool,
}

impl MatcherUse {
    /// The evaluator that answered, as `--explain` names it.
    pub fn evaluator(&self) -> &'static str {
        evaluator_name(self.native)
    }
}

/// `--explain`'s name of the native evaluator (`true`) or spareval.
pub fn evaluator_name(native: bool) -> &'static str {
    if native {
        "native evaluator (ids, the matcher inside)"
    } else {
        "spareval (the matcher inside)"
    }
}

/// The matcher's answer to one pattern, as spareval will read it.
pub(crate) struct Answered {
    variables: Arc<[Variable]>,
    width: usize,
    /// Row-major cells, each already in its term form (see `dataset::Id`).
    cells: Vec<Id>,
}

impl Answered {
    fn rows(&self) -> usize {
        self.cells
            .len()
            .checked_div(self.width)
            .unwrap_or(self.cells.len())
    }
}

/// The handler of one rewritten pattern.
struct Service(Arc<Answered>, Arc<Watch>);

impl ServiceHandler for Service {
    type Error = std::convert::Infallible;

    fn handle(
        &self,
        _: &spargebra::algebra::GraphPattern,
        _: Option<&oxiri::Iri<String>>,
    ) -> Result<QuerySolutionIter<'static>, Self::Error> {
        let this = Arc::clone(&self.0);
        let watch = Arc::clone(&self.1);
        // A pattern without variables has one marker cell, and one empty row, per match.
        let rows = this.rows();
        let variables = Arc::clone(&this.variables);
        Ok(QuerySolutionIter::new(
            Arc::clone(&variables),
            (0..rows).map(move |i| {
                watch
                    .tick()
                    .map_err(|e| QueryEvaluationError::Service(Box::new(e)))?;
                let row = &this.cells[i * this.width..(i + 1) * this.width];
                let values: Vec<Option<Term>> = row.iter().map(|c| Some(id_term(c))).collect();
                Ok(QuerySolution::from((Arc::clone(&variables), values)))
            }),
        ))
    }
}

fn id_term(id: &Id) -> Term {
    match id {
        Id::Node(v) => NamedNode::new_unchecked(format!("{NODE_ID_IRI}{v}")).into(),
        Id::Relation(r) => NamedNode::new_unchecked(format!("{RELATION_ID_IRI}{r}")).into(),
        Id::Other(t) => t.clone(),
    }
}

/// Rewrites `pattern`'s basic graph patterns into matcher services, answering each now.
pub(crate) struct Rewriter<'a, 'g, M: Matching + ?Sized> {
    pub matcher: &'g M,
    pub view: View<'g>,
    pub options: &'a MatchOptions,
    pub deadline: Option<Instant>,
    pub evaluator: QueryEvaluator,
    pub used: MatcherUse,
    /// The answered patterns by service name, for the semi-join below.
    pub answered: HashMap<NamedNode, Arc<Answered>>,
    /// Looked at as rows are handed to spareval.
    pub watch: Arc<Watch>,
}

/// Values a variable can take on the left of a join: the right's pattern need only look there.
type Seeds = HashMap<Variable, Vec<NodeId>>;

impl<M: Matching + ?Sized> Rewriter<'_, '_, M> {
    pub fn pattern(&mut self, p: GraphPattern) -> Result<GraphPattern, SparqlError> {
        use GraphPattern as G;
        let mut go = |p: Box<G>| self.pattern(*p).map(Box::new);
        Ok(match p {
            p @ (G::Bgp { .. } | G::Join { .. } | G::LeftJoin { .. }) => {
                return self.seeded(p, &Seeds::new())
            }
            G::Union { left, right } => G::Union {
                left: go(left)?,
                right: go(right)?,
            },
            G::Minus { left, right } => G::Minus {
                left: go(left)?,
                right: go(right)?,
            },
            G::Filter { expr, inner } => G::Filter {
                expr,
                inner: go(inner)?,
            },
            G::Extend {
                inner,
                variable,
                expression,
            } => G::Extend {
                inner: go(inner)?,
                variable,
                expression,
            },
            G::OrderBy { inner, expression } => G::OrderBy {
                inner: go(inner)?,
                expression,
            },
            G::Project { inner, variables } => G::Project {
                inner: go(inner)?,
                variables,
            },
            G::Distinct { inner } => G::Distinct { inner: go(inner)? },
            G::Reduced { inner } => G::Reduced { inner: go(inner)? },
            G::Slice {
                inner,
                start,
                length,
            } => G::Slice {
                inner: go(inner)?,
                start,
                length,
            },
            G::Group {
                inner,
                variables,
                aggregates,
            } => G::Group {
                inner: go(inner)?,
                variables,
                aggregates,
            },
            G::Path {
                subject,
                path,
                object,
            } => self.path(subject, path, object),
            // Paths are spareval's (a traversal of the CSR through the dataset); GRAPH names a
            // graph the matcher does not hold; VALUES and SERVICE have no pattern of ours.
            other => other,
        })
    }

    /// A path is spareval's, except one case it gets wrong: `?s :p* :o` (or `?`) where `:o` is
    /// no node of the graph has the one solution `?s = :o` (the zero-length path), which spareval
    /// misses (sparql11/property-path/zero_or_more_set_start and its three siblings).
    fn path(
        &self,
        subject: TermPattern,
        path: PropertyPathExpression,
        object: TermPattern,
    ) -> GraphPattern {
        use PropertyPathExpression as P;
        let zero_length = matches!(path, P::ZeroOrMore(_) | P::ZeroOrOne(_));
        let absent = |t: &TermPattern| match t {
            TermPattern::NamedNode(n) => !matches!(self.view.named(n.as_str()), Some(Id::Node(_))),
            TermPattern::Literal(l) => self.view.graph.node_id(&l.to_string()).is_none(),
            _ => false,
        };
        let only_itself = |v: &Variable, t: &TermPattern| {
            let value = match t {
                TermPattern::NamedNode(n) => Expression::NamedNode(n.clone()),
                TermPattern::Literal(l) => Expression::Literal(l.clone()),
                _ => return None,
            };
            Some(GraphPattern::Extend {
                inner: Box::new(GraphPattern::Bgp {
                    patterns: Vec::new(),
                }),
                variable: v.clone(),
                expression: value,
            })
        };
        let mended = match (&subject, &object) {
            (TermPattern::Variable(v), end) if zero_length && absent(end) => only_itself(v, end),
            (start, TermPattern::Variable(v)) if zero_length && absent(start) => {
                only_itself(v, start)
            }
            _ => None,
        };
        mended.unwrap_or(GraphPattern::Path {
            subject,
            path,
            object,
        })
    }

    /// The two sides of a join or left join. When the left is a pattern the matcher answered, or
    /// VALUES, and the right a basic graph pattern, the right's shared variables start from the
    /// left's values (a semi-join): right rows outside them would join nothing, and OPTIONAL's
    /// pattern then costs what the left binds, not the whole graph.
    fn joined(
        &mut self,
        left: GraphPattern,
        right: GraphPattern,
        above: &Seeds,
    ) -> Result<(Box<GraphPattern>, Box<GraphPattern>), SparqlError> {
        // A pattern on the left is the matcher's even when it is one triple: its answer is what
        // the right starts from.
        let left = match left {
            GraphPattern::Bgp { patterns } => self.bgp(patterns, above, true)?,
            other => self.seeded(other, above)?,
        };
        let seeds = self.seeds(&left);
        let right = self.seeded(right, &seeds)?;
        Ok((Box::new(left), Box::new(right)))
    }

    /// `p`, its patterns restricted to `seeds` (the values a join's other side binds) where the
    /// restriction cannot change the join's answer: down the left of joins and OPTIONALs, into
    /// both sides of a UNION and under a FILTER; never into a subquery, a LIMIT, MINUS or BIND.
    fn seeded(&mut self, p: GraphPattern, seeds: &Seeds) -> Result<GraphPattern, SparqlError> {
        use GraphPattern as G;
        Ok(match p {
            G::Bgp { patterns } => return self.bgp(patterns, seeds, !seeds.is_empty()),
            G::Join { left, right } => {
                let (left, right) = self.joined(*left, *right, seeds)?;
                G::Join { left, right }
            }
            G::LeftJoin {
                left,
                right,
                expression,
            } => {
                let (left, right) = self.joined(*left, *right, seeds)?;
                G::LeftJoin {
                    left,
                    right,
                    expression,
                }
            }
            G::Union { left, right } => G::Union {
                left: Box::new(self.seeded(*left, seeds)?),
                right: Box::new(self.seeded(*right, seeds)?),
            },
            G::Filter { expr, inner } => G::Filter {
                expr,
                inner: Box::new(self.seeded(*inner, seeds)?),
            },
            other => self.pattern(other)?,
        })
    }

    /// The values each variable takes in `left`, when the matcher answered it or it is VALUES.
    fn seeds(&self, left: &GraphPattern) -> Seeds {
        let mut seeds = Seeds::new();
        match left {
            GraphPattern::Service { name, .. } => {
                let NamedNodePattern::NamedNode(name) = name else {
                    return seeds;
                };
                let Some(a) = self.answered.get(name) else {
                    return seeds;
                };
                for (i, v) in a.variables.iter().enumerate() {
                    let nodes = (0..a.rows()).map(|r| match &a.cells[r * a.width + i] {
                        Id::Node(n) => Some(*n),
                        _ => None,
                    });
                    seeds.insert(v.clone(), nodes.flatten().collect());
                }
            }
            GraphPattern::Values {
                variables,
                bindings,
            } => {
                for (i, v) in variables.iter().enumerate() {
                    // UNDEF joins with anything: no restriction from that variable.
                    if bindings.iter().any(|b| b[i].is_none()) {
                        continue;
                    }
                    let nodes = bindings
                        .iter()
                        .filter_map(|b| self.view.ground_node(b[i].as_ref()?));
                    seeds.insert(v.clone(), nodes.collect());
                }
            }
            _ => {}
        }
        for nodes in seeds.values_mut() {
            nodes.sort_unstable();
            nodes.dedup();
        }
        seeds
    }

    /// `single`: answer a one-triple pattern too (it starts a join, or is seeded).
    fn bgp(
        &mut self,
        patterns: Vec<TriplePattern>,
        seeds: &Seeds,
        single: bool,
    ) -> Result<GraphPattern, SparqlError> {
        let keep = |patterns| Ok(GraphPattern::Bgp { patterns });
        // One triple pattern on its own has no join for the matcher to order: spareval reads it
        // from the CSR just as the matcher would, and can look it up per bound row (a loop join),
        // which a service cannot.
        if patterns.is_empty() {
            return keep(patterns);
        }
        let variables = named_variables(&patterns);
        let prepared = match prepare_bgp(&patterns, &variables, self.matcher.graph()) {
            Ok(_) if patterns.len() == 1 && !single => return keep(patterns),
            Ok(p) => p,
            Err(e @ (QueryError::UnknownConcept { .. } | QueryError::UnknownRelation { .. })) => {
                self.used.unknown.push(unknown_note(&e));
                return Ok(nothing());
            }
            Err(e) => {
                self.used.declined.push(e.to_string());
                return keep(patterns);
            }
        };
        let mut q = prepared.graph;
        for (v, nodes) in seeds {
            let name = format!("?{}", v.as_str());
            if let Some(u) = q.nodes.iter().position(|n| n.name == name) {
                if matches!(q.nodes[u].kind, NodeKind::Variable) {
                    q.concept_sets.push(nodes.clone());
                    q.nodes[u].kind = NodeKind::ConceptSet(q.concept_sets.len() - 1);
                }
            }
        }
        let answered = match self.answer(&q, &variables)? {
            Some(a) => a,
            None => return keep(patterns),
        };
        self.used.patterns += 1;
        self.used.rows += (answered.cells.len() / answered.width.max(1)) as u64;
        let name = NamedNode::new_unchecked(format!("{SERVICE_IRI}{}", self.used.patterns));
        let evaluator = std::mem::take(&mut self.evaluator);
        let answered = Arc::new(answered);
        self.answered.insert(name.clone(), Arc::clone(&answered));
        self.evaluator = evaluator
            .with_service_handler(name.clone(), Service(answered, Arc::clone(&self.watch)));
        Ok(GraphPattern::Service {
            name: name.into(),
            inner: Box::new(GraphPattern::Bgp { patterns }),
            silent: false,
        })
    }

    /// Runs the matcher; `None` when it declines the pattern (spareval then evaluates it).
    fn answer(
        &mut self,
        q: &gpsense_planner::QueryGraph,
        variables: &[Variable],
    ) -> Result<Option<Answered>, SparqlError> {
        let mut opts = self.options.clone();
        opts.semantics = Semantics::Hom;
        opts.limit = None;
        opts.timeout = match self.deadline {
            Some(d) => Some(
                d.saturating_duration_since(Instant::now())
                    .max(Duration::from_millis(1)),
            ),
            None => opts.timeout,
        };
        let relation_columns: Vec<bool> = q
            .projection
            .iter()
            .map(|p| matches!(p, Projected::Edge(_)))
            .collect();
        let width = relation_columns.len();
        let budget = self.options.memory_budget;
        let cell_bytes = std::mem::size_of::<Id>() as u64;
        let view = self.view;
        let mut cells = Vec::new();
        let mut over_budget = false;
        let mut take = |batch: RowBatch| {
            for row in batch.iter() {
                for (i, &value) in row.iter().enumerate() {
                    cells.push(if relation_columns[i] {
                        canonical_relation(view, value as gpsense_graph::LabelId)
                    } else {
                        Id::Node(value)
                    });
                }
                if width == 0 {
                    cells.push(Id::Node(0));
                }
            }
            over_budget = cells.len() as u64 * cell_bytes > budget;
            !over_budget
        };
        let report = match self.matcher.run(q, &opts, &mut take) {
            Ok(r) => r,
            Err(MatchError::QueryTooLarge { .. }) => {
                self.used
                    .declined
                    .push("too many query nodes for the matcher".into());
                return Ok(None);
            }
            Err(e) => return Err(SparqlError::Matcher(e.to_string())),
        };
        if over_budget {
            return Err(SparqlError::MemoryBudget {
                rows: cells.len() as u64 / width.max(1) as u64,
                budget,
            });
        }
        if report.timed_out {
            return Err(SparqlError::TimedOut);
        }
        Ok(Some(Answered {
            variables: variables.to_vec().into(),
            width,
            cells,
        }))
    }
}

/// A pattern with no solution (a name the graph lacks).
fn nothing() -> GraphPattern {
    GraphPattern::Values {
        variables: Vec::new(),
        bindings: Vec::new(),
    }
}

pub(crate) fn unknown_note(e: &QueryError) -> String {
    // "line 1, column 1: " means nothing for a pattern taken out of its query.
    let text = e.to_string();
    match text.split_once(": ") {
        Some((place, rest)) if place.starts_with("line ") => rest.to_owned(),
        _ => text,
    }
}

/// The pattern's named variables, in order of appearance.
pub(crate) fn named_variables(patterns: &[TriplePattern]) -> Vec<Variable> {
    let mut seen = Vec::new();
    let mut add = |v: &Variable| {
        if !seen.contains(v) {
            seen.push(v.clone());
        }
    };
    for t in patterns {
        if let TermPattern::Variable(v) = &t.subject {
            add(v);
        }
        if let NamedNodePattern::Variable(v) = &t.predicate {
            add(v);
        }
        if let TermPattern::Variable(v) = &t.object {
            add(v);
        }
    }
    seen
}

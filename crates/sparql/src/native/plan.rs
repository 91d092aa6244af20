//! The decision, made once before anything runs: a query's algebra becomes a tree of native
//! operators, each with its output variables (so expressions are compiled to column numbers),
//! or `None` when some construct is outside what the native evaluator answers exactly as
//! spareval does (then spareval answers the whole query).

use gpsense_planner::{prepare_bgp, QueryError, QueryGraph};
use oxrdf::{NamedNode, Term, Variable};
use spargebra::algebra::{AggregateExpression, Expression, GraphPattern, OrderExpression};
use spargebra::term::{GroundTerm, NamedNodePattern, TermPattern, TriplePattern};

use super::expr::{self, Ex};
use super::group::Agg;
use super::path::{self, Path};
use super::{Table, Terms, UNBOUND};
use crate::bgp::{named_variables, unknown_note};
use crate::dataset::View;

/// A planned query: the operator tree and the ids of the constants it names.
pub(crate) struct Plan {
    pub root: Node,
    pub terms: Option<Terms>,
    /// Names the graph lacks (a pattern naming one has no solution), for the report.
    pub unknown: Vec<String>,
}

/// An operator and the variables of its rows, in column order.
pub(crate) struct Node {
    pub op: Op,
    pub vars: Vec<Variable>,
}

/// A place in a triple or path pattern.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Pos {
    /// A term's id.
    Const(u32),
    /// A column of the operator's own rows.
    Var(usize),
}

pub(crate) enum Op {
    /// The one empty row.
    Unit,
    /// No row (a pattern naming something the graph lacks).
    Empty,
    /// One triple pattern, read from the CSR.
    Scan([Pos; 3]),
    /// Two or more triple patterns: the matcher's.
    Bgp {
        graph: QueryGraph,
        /// Which of the matcher's columns are relations.
        relation_columns: Vec<bool>,
    },
    Path {
        subject: Pos,
        path: Path,
        object: Pos,
    },
    Join(Box<Node>, Box<Node>),
    LeftJoin(Box<Node>, Box<Node>, Option<Ex>),
    Union(Box<Node>, Box<Node>),
    Minus(Box<Node>, Box<Node>),
    Filter(Box<Node>, Ex),
    Extend(Box<Node>, Ex),
    Values(Table),
    Project(Box<Node>, Vec<Option<usize>>),
    Distinct(Box<Node>),
    Reduced(Box<Node>),
    Slice(Box<Node>, usize, Option<usize>),
    /// Keys, each descending or not.
    OrderBy(Box<Node>, Vec<(Ex, bool)>),
    Group(Box<Node>, Vec<Option<usize>>, Vec<Agg>),
}

/// What planning needs.
pub(crate) struct Planner<'p, 'g> {
    pub view: View<'g>,
    pub terms: &'p mut Terms,
    /// The graph holds literals: expressions would compare values the native evaluator does not
    /// hold (`"01"^^xsd:integer`, dates, decimals), so none is planned.
    pub literal_graph: bool,
    pub unknown: Vec<String>,
}

pub(crate) fn plan(pattern: &GraphPattern, view: View<'_>, terms: &mut Terms) -> Option<Plan> {
    let mut p = Planner {
        view,
        terms,
        literal_graph: view.graph.has_literal_nodes(),
        unknown: Vec::new(),
    };
    let root = p.node(pattern)?;
    Some(Plan {
        root,
        terms: None,
        unknown: p.unknown,
    })
}

/// A FILTER over one triple pattern whose predicate variable a conjunct restricts to IRIs
/// (`?r IN (r:A, r:B)`, `?r = r:A`, `sameTerm(?r, r:A)`): the triple and those IRIs, each once.
pub(crate) fn restricted_predicate<'p>(
    expr: &Expression,
    inner: &'p GraphPattern,
) -> Option<(&'p TriplePattern, Vec<NamedNode>)> {
    let GraphPattern::Bgp { patterns } = inner else {
        return None;
    };
    let [triple] = patterns.as_slice() else {
        return None;
    };
    let NamedNodePattern::Variable(r) = &triple.predicate else {
        return None;
    };
    let mut iris = restriction(expr, r)?;
    iris.sort();
    iris.dedup();
    Some((triple, iris))
}

/// The IRIs a conjunct of `e` allows `r` to be, if one does.
fn restriction(e: &Expression, r: &Variable) -> Option<Vec<NamedNode>> {
    use Expression as E;
    let iri = |e: &Expression| match e {
        E::NamedNode(n) => Some(n.clone()),
        _ => None,
    };
    let is_r = |e: &Expression| matches!(e, E::Variable(v) if v == r);
    match e {
        E::And(a, b) => restriction(a, r).or_else(|| restriction(b, r)),
        E::In(v, list) if is_r(v) => list.iter().map(iri).collect(),
        E::Equal(a, b) | E::SameTerm(a, b) => {
            if is_r(a) {
                iri(b).map(|n| vec![n])
            } else if is_r(b) {
                iri(a).map(|n| vec![n])
            } else {
                None
            }
        }
        _ => None,
    }
}

fn union_vars(a: &[Variable], b: &[Variable]) -> Vec<Variable> {
    let mut v = a.to_vec();
    v.extend(b.iter().filter(|x| !a.contains(x)).cloned());
    v
}

fn column(vars: &[Variable], v: &Variable) -> Option<usize> {
    vars.iter().position(|x| x == v)
}

impl Planner<'_, '_> {
    fn node(&mut self, p: &GraphPattern) -> Option<Node> {
        use GraphPattern as G;
        let boxed = |n: Node| Box::new(n);
        Some(match p {
            G::Bgp { patterns } => self.bgp(patterns)?,
            G::Path {
                subject,
                path,
                object,
            } => self.path(subject, path, object)?,
            G::Join { left, right } => {
                let (l, r) = (self.node(left)?, self.node(right)?);
                let vars = union_vars(&l.vars, &r.vars);
                Node {
                    op: Op::Join(boxed(l), boxed(r)),
                    vars,
                }
            }
            G::LeftJoin {
                left,
                right,
                expression,
            } => {
                let (l, r) = (self.node(left)?, self.node(right)?);
                let vars = union_vars(&l.vars, &r.vars);
                let e = match expression {
                    Some(e) => Some(self.expr(e, &vars)?),
                    None => None,
                };
                Node {
                    op: Op::LeftJoin(boxed(l), boxed(r), e),
                    vars,
                }
            }
            G::Union { left, right } => {
                let (l, r) = (self.node(left)?, self.node(right)?);
                let vars = union_vars(&l.vars, &r.vars);
                Node {
                    op: Op::Union(boxed(l), boxed(r)),
                    vars,
                }
            }
            G::Minus { left, right } => {
                let (l, r) = (self.node(left)?, self.node(right)?);
                let vars = l.vars.clone();
                Node {
                    op: Op::Minus(boxed(l), boxed(r)),
                    vars,
                }
            }
            G::Filter { expr, inner } => {
                let inner = match restricted_predicate(expr, inner) {
                    Some((triple, iris)) => self.labelled_scan(triple, &iris)?,
                    None => self.node(inner)?,
                };
                let e = self.expr(expr, &inner.vars)?;
                let vars = inner.vars.clone();
                Node {
                    op: Op::Filter(boxed(inner), e),
                    vars,
                }
            }
            G::Extend {
                inner,
                variable,
                expression,
            } => {
                let inner = self.node(inner)?;
                if inner.vars.contains(variable) {
                    return None;
                }
                let e = self.expr(expression, &inner.vars)?;
                let mut vars = inner.vars.clone();
                vars.push(variable.clone());
                Node {
                    op: Op::Extend(boxed(inner), e),
                    vars,
                }
            }
            G::Values {
                variables,
                bindings,
            } => self.values(variables, bindings)?,
            G::Project { inner, variables } => {
                let inner = self.node(inner)?;
                let columns = variables.iter().map(|v| column(&inner.vars, v)).collect();
                Node {
                    op: Op::Project(boxed(inner), columns),
                    vars: variables.clone(),
                }
            }
            G::Distinct { inner } => self.same_vars(inner, Op::Distinct)?,
            G::Reduced { inner } => self.same_vars(inner, Op::Reduced)?,
            G::Slice {
                inner,
                start,
                length,
            } => self.same_vars(inner, |n| Op::Slice(n, *start, *length))?,
            G::OrderBy { inner, expression } => {
                let inner = self.node(inner)?;
                let keys = expression
                    .iter()
                    .map(|o| match o {
                        OrderExpression::Asc(e) => Some((self.expr(e, &inner.vars)?, false)),
                        OrderExpression::Desc(e) => Some((self.expr(e, &inner.vars)?, true)),
                    })
                    .collect::<Option<Vec<_>>>()?;
                let vars = inner.vars.clone();
                Node {
                    op: Op::OrderBy(boxed(inner), keys),
                    vars,
                }
            }
            G::Group {
                inner,
                variables,
                aggregates,
            } => self.group(inner, variables, aggregates)?,
            _ => return None,
        })
    }

    /// `triple` with its predicate variable bound to each of `iris` in turn: a lookup per
    /// relation instead of a scan of every edge (the filter above still runs).
    fn labelled_scan(&mut self, triple: &TriplePattern, iris: &[NamedNode]) -> Option<Node> {
        let NamedNodePattern::Variable(r) = &triple.predicate else {
            return None;
        };
        let bindings: Vec<Vec<Option<GroundTerm>>> = iris
            .iter()
            .map(|n| vec![Some(GroundTerm::NamedNode(n.clone()))])
            .collect();
        let values = self.values(std::slice::from_ref(r), &bindings)?;
        let scan = self.scan(triple)?;
        let vars = union_vars(&values.vars, &scan.vars);
        Some(Node {
            op: Op::Join(Box::new(values), Box::new(scan)),
            vars,
        })
    }

    fn same_vars(
        &mut self,
        inner: &GraphPattern,
        op: impl FnOnce(Box<Node>) -> Op,
    ) -> Option<Node> {
        let inner = self.node(inner)?;
        let vars = inner.vars.clone();
        Some(Node {
            op: op(Box::new(inner)),
            vars,
        })
    }

    pub fn expr(&mut self, e: &spargebra::algebra::Expression, vars: &[Variable]) -> Option<Ex> {
        if self.literal_graph {
            return None;
        }
        expr::compile(e, vars, self)
    }

    /// The id of a constant; `None` for a literal the expressions do not hold as a value.
    pub fn constant(&mut self, t: Term) -> Option<u32> {
        let literal = matches!(t, Term::Literal(_));
        let id = self.terms.encode(self.view.internalize(t));
        let opaque = matches!(
            self.terms.decode(id),
            super::Decoded::Computed(super::Computed::Other(_))
        );
        (!(literal && opaque && !self.literal_graph)).then_some(id)
    }

    /// The id of a triple pattern's constant (one the graph lacks matches nothing).
    pub fn pattern_constant(&mut self, t: Term) -> u32 {
        self.terms.encode(self.view.internalize(t))
    }

    fn group(
        &mut self,
        inner: &GraphPattern,
        variables: &[Variable],
        aggregates: &[(Variable, AggregateExpression)],
    ) -> Option<Node> {
        let inner = self.node(inner)?;
        let keys = variables.iter().map(|v| column(&inner.vars, v)).collect();
        let aggs = aggregates
            .iter()
            .map(|(_, a)| Agg::compile(a, &inner.vars, self))
            .collect::<Option<Vec<_>>>()?;
        let mut vars = variables.to_vec();
        vars.extend(aggregates.iter().map(|(v, _)| v.clone()));
        Some(Node {
            op: Op::Group(Box::new(inner), keys, aggs),
            vars,
        })
    }

    fn values(
        &mut self,
        variables: &[Variable],
        bindings: &[Vec<Option<GroundTerm>>],
    ) -> Option<Node> {
        let mut table = Table::new(variables.len());
        let mut row = Vec::with_capacity(variables.len());
        for b in bindings {
            row.clear();
            for t in b {
                row.push(match t {
                    None => UNBOUND,
                    Some(GroundTerm::NamedNode(n)) => self.constant(n.clone().into())?,
                    Some(GroundTerm::Literal(l)) => self.constant(l.clone().into())?,
                    #[allow(unreachable_patterns)]
                    Some(_) => return None,
                });
            }
            table.push(&row);
        }
        Some(Node {
            op: Op::Values(table),
            vars: variables.to_vec(),
        })
    }

    fn bgp(&mut self, patterns: &[TriplePattern]) -> Option<Node> {
        match patterns {
            [] => Some(Node {
                op: Op::Unit,
                vars: Vec::new(),
            }),
            [t] => self.scan(t),
            _ => self.matcher_bgp(patterns),
        }
    }

    fn matcher_bgp(&mut self, patterns: &[TriplePattern]) -> Option<Node> {
        let variables = named_variables(patterns);
        match prepare_bgp(patterns, &variables, self.view.graph) {
            Ok(p) => {
                let relation_columns = p
                    .graph
                    .projection
                    .iter()
                    .map(|c| matches!(c, gpsense_planner::Projected::Edge(_)))
                    .collect();
                Some(Node {
                    op: Op::Bgp {
                        graph: p.graph,
                        relation_columns,
                    },
                    vars: variables,
                })
            }
            Err(e @ (QueryError::UnknownConcept { .. } | QueryError::UnknownRelation { .. })) => {
                self.unknown.push(unknown_note(&e));
                Some(Node {
                    op: Op::Empty,
                    vars: variables,
                })
            }
            Err(_) => None,
        }
    }

    /// One triple pattern; blank nodes are variables no one else sees.
    fn scan(&mut self, t: &TriplePattern) -> Option<Node> {
        let mut vars: Vec<Variable> = Vec::new();
        let var = |v: Variable, vars: &mut Vec<Variable>| {
            Pos::Var(column(vars, &v).unwrap_or_else(|| {
                vars.push(v);
                vars.len() - 1
            }))
        };
        let mut missing = false;
        let node = |p: &TermPattern,
                    vars: &mut Vec<Variable>,
                    this: &mut Self,
                    missing: &mut bool| match p {
            TermPattern::Variable(v) => Some(var(v.clone(), vars)),
            TermPattern::BlankNode(b) => Some(var(
                Variable::new_unchecked(format!("_:{}", b.as_str())),
                vars,
            )),
            TermPattern::NamedNode(n) => Some(this.fixed(n.clone().into(), missing)),
            TermPattern::Literal(l) => Some(this.fixed(l.clone().into(), missing)),
            #[allow(unreachable_patterns)]
            _ => None,
        };
        let s = node(&t.subject, &mut vars, self, &mut missing)?;
        let p = match &t.predicate {
            NamedNodePattern::Variable(v) => var(v.clone(), &mut vars),
            NamedNodePattern::NamedNode(n) => self.fixed(n.clone().into(), &mut missing),
        };
        let o = node(&t.object, &mut vars, self, &mut missing)?;
        // A variable both predicate and subject or object: the matcher's rule, kept here.
        if matches!((s, p), (Pos::Var(a), Pos::Var(b)) if a == b)
            || matches!((o, p), (Pos::Var(a), Pos::Var(b)) if a == b)
        {
            return None;
        }
        if missing {
            // The note the matcher would give for this pattern.
            let variables = named_variables(std::slice::from_ref(t));
            if let Err(e) = prepare_bgp(std::slice::from_ref(t), &variables, self.view.graph) {
                if matches!(
                    e,
                    QueryError::UnknownConcept { .. } | QueryError::UnknownRelation { .. }
                ) {
                    self.unknown.push(unknown_note(&e));
                }
            }
            return Some(Node {
                op: Op::Empty,
                vars,
            });
        }
        Some(Node {
            op: Op::Scan([s, p, o]),
            vars,
        })
    }

    /// A constant of a triple pattern; `missing` when the graph has no such node or relation.
    fn fixed(&mut self, t: Term, missing: &mut bool) -> Pos {
        let id = self.terms.encode(self.view.internalize(t));
        *missing |= !self.terms.is_node(id) && !self.terms.is_relation(id);
        Pos::Const(id)
    }

    fn path(
        &mut self,
        subject: &TermPattern,
        p: &spargebra::algebra::PropertyPathExpression,
        object: &TermPattern,
    ) -> Option<Node> {
        let path = path::compile(p, self.view)?;
        let mut vars = Vec::new();
        let end = |t: &TermPattern, vars: &mut Vec<Variable>, this: &mut Self| -> Option<Pos> {
            let v = match t {
                TermPattern::Variable(v) => v.clone(),
                TermPattern::BlankNode(b) => Variable::new_unchecked(format!("_:{}", b.as_str())),
                TermPattern::NamedNode(n) => {
                    return Some(Pos::Const(
                        this.terms.encode(this.view.internalize(n.clone().into())),
                    ))
                }
                TermPattern::Literal(l) => {
                    return Some(Pos::Const(
                        this.terms.encode(this.view.internalize(l.clone().into())),
                    ))
                }
                #[allow(unreachable_patterns)]
                _ => return None,
            };
            Some(Pos::Var(column(vars, &v).unwrap_or_else(|| {
                vars.push(v);
                vars.len() - 1
            })))
        };
        let subject = end(subject, &mut vars, self)?;
        let object = end(object, &mut vars, self)?;
        Some(Node {
            op: Op::Path {
                subject,
                path,
                object,
            },
            vars,
        })
    }
}

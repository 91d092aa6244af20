//! Standard SPARQL 1.1 queries, parsed by `spargebra` (Oxigraph's parser), compiled to the same
//! [`QueryGraph`] as the short dialect, plus what the graph cannot say: the query form (`SELECT`,
//! `ASK`, `COUNT(*)`), `FILTER`s on rows, `OFFSET` and `ORDER BY`.
//!
//! The subset is a basic graph pattern (IRIs, prefixed names, `a`, `;` and `,`, blank nodes as
//! variables, literals) under `FILTER` conjunctions of `=`, `!=`, `sameTerm`, `IN` and `NOT IN`
//! between variables and terms, with `DISTINCT`, `LIMIT`, `OFFSET` and `ORDER BY` on projected
//! variables. Anything else is refused, naming the construct and where it is.
//!
//! Semantics: SPARQL's own is homomorphism. Pairwise `!=` over every two query nodes (the way a SPARQL
//! user writes isomorphism) is recognised and becomes [`Prepared::injective`] instead of a filter on
//! rows; any other set of inequalities is applied to rows.
//!
//! Names: an IRI or literal denotes the node of that name; failing that, ConceptNet's URIs
//! (`http://conceptnet.io/c/en/ice_cream`, `/c/en/ice_cream`) the concept `ice cream` of a graph
//! ingested with one language, and a literal its lexical form (`"dog"@en` -> `dog`). Relations alike
//! (`http://conceptnet.io/r/IsA` -> `IsA`). The IRIs `gpsense dump` writes for names that are no RDF
//! terms (`gpsense:n/dog`, `gpsense:r/IsA`) denote those names on any graph.

use std::collections::HashMap;

use gpsense_graph::NodeId;

use crate::Vocabulary;
use spargebra::algebra::{AggregateExpression, Expression, GraphPattern, OrderExpression};
use spargebra::term::{NamedNodePattern, TermPattern, TriplePattern};
use spargebra::{Query as SparqlQuery, SparqlParser};

use crate::parse::{self, Projection, Span, Spanned, Term, Triple};
use crate::query::{resolve, NodeKind, Projected, QueryError, QueryGraph};

/// Which language a query was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// gpsense's short SPARQL (`?x IsA animal`, bare words).
    Short,
    /// Standard SPARQL 1.1 (IRIs, prefixes, FILTER, ASK, COUNT).
    Sparql,
}

/// What a query returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Form {
    /// Rows of the projected variables.
    Select,
    /// Whether there is a match (`ASK`, or a short query without variables).
    Ask,
    /// `SELECT (COUNT(*) AS ?n)`: one row, the number of solutions, in column `variable`.
    Count { variable: String, distinct: bool },
}

/// A position of a full row: query node `u`, or edge variable `k`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    Node(usize),
    Edge(usize),
}

/// A test on a full row (every query node and edge variable bound).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowFilter {
    /// `a = b` (or `a != b` when `negated`).
    Same { a: Slot, b: Slot, negated: bool },
    /// The slot's value is one of `values` (data nodes, or relation ids for an edge slot), or none
    /// of them when `negated`. Terms the graph lacks are left out: they equal nothing.
    In {
        slot: Slot,
        values: Vec<u32>,
        negated: bool,
    },
}

impl RowFilter {
    /// Whether `row` (query nodes in index order, then edge variables) passes.
    pub fn passes(&self, row: &[u32], nodes: usize) -> bool {
        let at = |s: Slot| match s {
            Slot::Node(u) => row[u],
            Slot::Edge(k) => row[nodes + k],
        };
        match self {
            RowFilter::Same { a, b, negated } => (at(*a) == at(*b)) != *negated,
            RowFilter::In {
                slot,
                values,
                negated,
            } => values.contains(&at(*slot)) != *negated,
        }
    }
}

/// One `ORDER BY` key: a projected column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderKey {
    /// Index into `QueryGraph::projection`.
    pub column: usize,
    pub descending: bool,
}

/// A query ready to run: its graph and what SPARQL adds around it.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub graph: QueryGraph,
    pub dialect: Dialect,
    pub form: Form,
    /// `Some(true)`: the query asks for injective matches (pairwise `!=` over all nodes);
    /// `Some(false)`: standard SPARQL, homomorphism; `None`: the short dialect (the caller decides).
    pub injective: Option<bool>,
    /// Row tests, all of which must pass (on full rows, before projection).
    pub filters: Vec<RowFilter>,
    pub offset: u64,
    pub order: Vec<OrderKey>,
}

impl Prepared {
    /// A short-dialect query: its graph, a yes/no question when it has no variable.
    pub fn short(graph: QueryGraph) -> Self {
        let form = if graph.projection.is_empty() {
            Form::Ask
        } else {
            Form::Select
        };
        Prepared {
            graph,
            dialect: Dialect::Short,
            form,
            injective: None,
            filters: Vec::new(),
            offset: 0,
            order: Vec::new(),
        }
    }
}

/// Parses and resolves `text` in either dialect, trying `prefer` first: the short dialect is what
/// a ConceptNet user types at a shell, standard SPARQL what a SPARQL client sends. A query that
/// fails in both gets the error of the dialect it looks written in.
pub fn prepare(text: &str, g: &dyn Vocabulary, prefer: Dialect) -> Result<Prepared, QueryError> {
    let depth = nesting_depth(text);
    if depth > MAX_NESTING {
        return Err(QueryError::Parse(parse::ParseError {
            line: 1,
            column: 1,
            message: format!(
                "the query nests brackets {depth} deep, more than the limit of {MAX_NESTING}"
            ),
        }));
    }
    let short = || parse::parse(text).map_err(QueryError::from);
    let standard = || SparqlParser::new().parse_query(text);
    match prefer {
        Dialect::Short => match short() {
            // `<http://...>` is a bare name to the short dialect: a text that looks standard and
            // names nothing the graph has is read as standard SPARQL before giving up.
            Ok(q) => match resolve(&q, g) {
                Err(e) if looks_standard(text) => match standard() {
                    Ok(s) => compile_standard(&s, text, g),
                    Err(_) => Err(e),
                },
                resolved => resolved.map(Prepared::short),
            },
            Err(e) => match standard() {
                Ok(q) => compile_standard(&q, text, g),
                Err(s) if looks_standard(text) => Err(syntax_error(&s, text)),
                Err(_) => Err(e),
            },
        },
        Dialect::Sparql => match standard() {
            Ok(q) => compile_standard(&q, text, g),
            Err(s) => match short() {
                Ok(q) => resolve(&q, g).map(Prepared::short),
                Err(e) if !looks_standard(text) => Err(e),
                Err(_) => Err(syntax_error(&s, text)),
            },
        },
    }
}

/// One basic graph pattern on its own, as the SPARQL evaluator hands each to the matcher: the
/// variables in `variables` projected in that order (each must occur in `patterns`), blank nodes
/// as variables, homomorphism, no filter. A name the graph lacks is
/// [`QueryError::UnknownConcept`] / [`QueryError::UnknownRelation`]: the pattern has no solution.
pub fn prepare_bgp(
    patterns: &[TriplePattern],
    variables: &[spargebra::term::Variable],
    g: &dyn Vocabulary,
) -> Result<Prepared, QueryError> {
    if patterns.is_empty() {
        return Err(unsupported("", "an empty basic graph pattern", ""));
    }
    let shape = Shape {
        projection: Some(variables),
        triples: patterns.iter().collect(),
        ..Shape::default()
    };
    Translator::new("", g).run(shape, false)
}

/// Whether `text` uses syntax only standard SPARQL has: a prologue, an IRI, a FILTER, or the
/// `;` / `,` shorthand outside strings.
fn looks_standard(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    let keyword = |k: &str| {
        upper
            .match_indices(k)
            .any(|(i, _)| i == 0 || !upper.as_bytes()[i - 1].is_ascii_alphanumeric())
    };
    ["PREFIX", "BASE", "FILTER", "OPTIONAL", "UNION", "COUNT("]
        .iter()
        .any(|k| keyword(k))
        || text.contains('<')
        || text.contains(';')
}

/// spargebra's message (`error at 3:7: expected ...`) as a positioned error. A bare word in the
/// pattern (`?x IsA animal` in a query otherwise standard) got whatever spargebra's grammar tried
/// last ("expected OPTIONAL"), past the word: the error is then the word's, at the word.
fn syntax_error(e: &spargebra::SparqlSyntaxError, text: &str) -> QueryError {
    if let Some((span, word)) = first_bare_word(text) {
        return QueryError::Parse(parse::ParseError {
            line: span.line,
            column: span.column,
            message: format!(
                "SPARQL syntax: `{word}` is a bare word, which standard SPARQL does not read: \
                 write an IRI (<...>) or a prefixed name (p:{word}, with a PREFIX line); \
                 gpsense's short dialect reads bare words, in SELECT and ASK of triples"
            ),
        });
    }
    let message = e.to_string();
    let position = message.split_once("error at ").and_then(|(_, rest)| {
        let (line, rest) = rest.split_once(':')?;
        let column: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some((line.trim().parse().ok()?, column.parse().ok()?))
    });
    let (line, column) = position.unwrap_or((1, 1));
    QueryError::Parse(parse::ParseError {
        line,
        column,
        message: format!("SPARQL syntax: {message}"),
    })
}

/// The first word inside `{ }` that standard SPARQL has no use for, with where it starts: letters,
/// digits, `_` and `-`, starting with a letter, not a keyword, not a function's name (followed by
/// `(`), outside IRIs, strings, comments, variables, prefixed names and language tags.
fn first_bare_word(text: &str) -> Option<(Span, String)> {
    const KEYWORDS: [&str; 34] = [
        "a",
        "true",
        "false",
        "optional",
        "union",
        "minus",
        "filter",
        "bind",
        "values",
        "graph",
        "service",
        "silent",
        "undef",
        "not",
        "in",
        "exists",
        "as",
        "select",
        "distinct",
        "reduced",
        "where",
        "group",
        "by",
        "order",
        "asc",
        "desc",
        "limit",
        "offset",
        "having",
        "from",
        "named",
        "separator",
        "construct",
        "ask",
    ];
    // Characters with their byte offsets: a word's span comes from its offset (`span_at`).
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let at = |i: usize| chars.get(i).map(|&(_, c)| c);
    let mut depth = 0usize;
    let mut i = 0;
    while let Some(c) = at(i) {
        // Skipped whole: an IRI, a string, a comment.
        let close = match c {
            '<' if at(i + 1).is_some_and(|n| !n.is_whitespace() && n != '=') => Some('>'),
            '"' | '\'' => Some(c),
            '#' => Some('\n'),
            _ => None,
        };
        if let Some(close) = close {
            i += 1;
            while at(i).is_some_and(|d| d != close) {
                // An escaped quote does not close a string.
                i += if at(i) == Some('\\') && close != '\n' {
                    2
                } else {
                    1
                };
            }
            i += 1;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            let after_sigil = i > 0 && matches!(at(i - 1), Some('?' | '$' | '@' | ':'));
            while at(i).is_some_and(|d| d.is_alphanumeric() || matches!(d, '_' | '-')) {
                i += 1;
            }
            let word: String = chars[start..i].iter().map(|&(_, c)| c).collect();
            let next = chars[i..]
                .iter()
                .map(|&(_, c)| c)
                .find(|c| !c.is_whitespace());
            let bare = depth > 0
                && !after_sigil
                && word.starts_with(char::is_alphabetic)
                && !matches!(next, Some(':' | '('))
                && !KEYWORDS.iter().any(|k| word.eq_ignore_ascii_case(k));
            if bare {
                return Some((span_at(text, chars[start].0), word));
            }
            continue;
        }
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// A construct outside the supported subset.
fn unsupported(text: &str, what: &str, keyword: &str) -> QueryError {
    let span = locate(text, keyword);
    QueryError::Parse(parse::ParseError {
        line: span.line,
        column: span.column,
        message: format!(
            "{what} is not supported: gpsense answers basic graph patterns with FILTER (=, !=, \
             sameTerm, IN, NOT IN, joined by &&), ASK, COUNT(*), DISTINCT, LIMIT, OFFSET and \
             ORDER BY on projected variables"
        ),
    })
}

/// The first place `needle` occurs in `text` (case-insensitive), or the start.
fn locate(text: &str, needle: &str) -> Span {
    let lower = text.to_lowercase();
    let Some(at) = lower
        .find(&needle.to_lowercase())
        .filter(|_| !needle.is_empty())
    else {
        return Span { line: 1, column: 1 };
    };
    span_at(text, at)
}

/// Where byte offset `at` of `text` stands: 1-based line, and column in chars.
fn span_at(text: &str, at: usize) -> Span {
    let before = text.get(..at.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    Span { line, column }
}

/// The layers of a SELECT or ASK pattern, outside in.
#[derive(Default)]
struct Shape<'q> {
    projection: Option<&'q [spargebra::term::Variable]>,
    distinct: bool,
    offset: u64,
    limit: Option<u64>,
    order: &'q [OrderExpression],
    count: Option<(String, bool)>,
    filters: Vec<&'q Expression>,
    triples: Vec<&'q TriplePattern>,
}

fn compile_standard(
    q: &SparqlQuery,
    text: &str,
    g: &dyn Vocabulary,
) -> Result<Prepared, QueryError> {
    let (pattern, ask, dataset) = match q {
        SparqlQuery::Select {
            pattern, dataset, ..
        } => (pattern, false, dataset),
        SparqlQuery::Ask {
            pattern, dataset, ..
        } => (pattern, true, dataset),
        SparqlQuery::Construct { .. } => return Err(unsupported(text, "CONSTRUCT", "construct")),
        SparqlQuery::Describe { .. } => return Err(unsupported(text, "DESCRIBE", "describe")),
    };
    if dataset.is_some() {
        return Err(unsupported(text, "FROM (a dataset)", "from"));
    }
    let mut shape = Shape::default();
    peel(pattern, text, &mut shape)?;
    if shape.triples.is_empty() {
        return Err(QueryError::Parse(parse::ParseError {
            line: 1,
            column: 1,
            message: "the pattern has no triple".into(),
        }));
    }
    Translator::new(text, g).run(shape, ask)
}

/// Walks the algebra from the outside in, recording modifiers, filters and triples; refuses the rest.
fn peel<'q>(p: &'q GraphPattern, text: &str, s: &mut Shape<'q>) -> Result<(), QueryError> {
    match p {
        GraphPattern::Project { inner, variables } if s.projection.is_none() => {
            s.projection = Some(variables);
            peel(inner, text, s)
        }
        GraphPattern::Distinct { inner } | GraphPattern::Reduced { inner } => {
            s.distinct = matches!(p, GraphPattern::Distinct { .. });
            peel(inner, text, s)
        }
        GraphPattern::Slice {
            inner,
            start,
            length,
        } => {
            s.offset = *start as u64;
            s.limit = length.map(|l| l as u64);
            peel(inner, text, s)
        }
        GraphPattern::OrderBy { inner, expression } => {
            s.order = expression;
            peel(inner, text, s)
        }
        GraphPattern::Extend {
            inner,
            variable,
            expression: Expression::Variable(from),
        } if s.count.is_none() => match inner.as_ref() {
            GraphPattern::Group {
                inner,
                variables,
                aggregates,
            } => match &aggregates[..] {
                _ if !variables.is_empty() => Err(unsupported(text, "GROUP BY", "group")),
                [(v, AggregateExpression::CountSolutions { distinct })] if v == from => {
                    s.count = Some((variable.as_str().to_owned(), *distinct));
                    peel(inner, text, s)
                }
                _ => Err(unsupported(text, "an aggregate other than COUNT(*)", "(")),
            },
            _ => Err(unsupported(text, "BIND or an expression in SELECT", "bind")),
        },
        GraphPattern::Filter { expr, inner } => {
            s.filters.push(expr);
            peel(inner, text, s)
        }
        GraphPattern::Join { left, right } => {
            peel(left, text, s)?;
            peel(right, text, s)
        }
        GraphPattern::Bgp { patterns } => {
            s.triples.extend(patterns);
            Ok(())
        }
        other => Err(refusal(other, text)),
    }
}

fn refusal(p: &GraphPattern, text: &str) -> QueryError {
    let (what, keyword) = match p {
        GraphPattern::Path { .. } => ("a property path", "/"),
        GraphPattern::LeftJoin { .. } => ("OPTIONAL", "optional"),
        GraphPattern::Union { .. } => ("UNION", "union"),
        GraphPattern::Graph { .. } => ("GRAPH", "graph"),
        GraphPattern::Minus { .. } => ("MINUS", "minus"),
        GraphPattern::Values { .. } => ("VALUES", "values"),
        GraphPattern::Service { .. } => ("SERVICE", "service"),
        GraphPattern::Group { .. } => ("GROUP BY or an aggregate", "group"),
        GraphPattern::Extend { .. } => ("BIND or an expression in SELECT", "bind"),
        GraphPattern::Project { .. } => ("a subquery", "select"),
        _ => ("this construct", ""),
    };
    unsupported(text, what, keyword)
}

/// Builds the short dialect's parsed form from the triples (names resolved to what the graph calls
/// them), resolves it, then translates filters and modifiers against the resolved graph.
struct Translator<'a> {
    text: &'a str,
    g: &'a dyn Vocabulary,
    /// Blank node label -> its variable name.
    blanks: HashMap<String, String>,
}

impl<'a> Translator<'a> {
    fn new(text: &'a str, g: &'a dyn Vocabulary) -> Self {
        Translator {
            text,
            g,
            blanks: HashMap::new(),
        }
    }

    fn run(mut self, shape: Shape, ask: bool) -> Result<Prepared, QueryError> {
        let mut triples = Vec::with_capacity(shape.triples.len());
        for t in &shape.triples {
            triples.push(Triple {
                subject: self.node_term(&t.subject),
                predicate: self.predicate_term(&t.predicate),
                object: self.node_term(&t.object),
            });
        }
        self.check_variable_roles(&triples)?;
        let projected: Vec<Spanned<String>> = match (ask, &shape.count, shape.projection) {
            (false, None, Some(vars)) => vars
                .iter()
                .map(|v| Spanned {
                    value: v.as_str().to_owned(),
                    span: locate(self.text, &format!("?{}", v.as_str())),
                })
                .collect(),
            _ => Vec::new(),
        };
        let parsed = parse::Query {
            projection: Projection::Variables(projected.clone()),
            distinct: shape.distinct && shape.count.is_none(),
            triples,
            limit: if ask || shape.count.is_some() {
                None
            } else {
                shape.limit
            },
        };
        self.check_projection(&parsed, &projected)?;
        let graph = resolve(&parsed, self.g)?;
        let filters = self.filters(&graph, &shape.filters)?;
        let order = self.order(&graph, shape.order)?;
        let (injective, filters) = absorb_injectivity(&graph, filters);
        let (graph, filters) = restrict_variables(graph, filters);
        let form = match (ask, shape.count) {
            (true, _) => Form::Ask,
            (false, Some((variable, distinct))) => Form::Count { variable, distinct },
            (false, None) => Form::Select,
        };
        Ok(Prepared {
            graph,
            dialect: Dialect::Sparql,
            form,
            injective: Some(injective),
            filters,
            offset: if ask { 0 } else { shape.offset },
            order,
        })
    }

    fn span_of(&self, needle: &str) -> Span {
        locate(self.text, needle)
    }

    fn node_term(&mut self, t: &TermPattern) -> Spanned<Term> {
        match t {
            TermPattern::Variable(v) => Spanned {
                value: Term::Variable(v.as_str().to_owned()),
                span: self.span_of(&format!("?{}", v.as_str())),
            },
            TermPattern::BlankNode(b) => {
                let next = self.blanks.len();
                let name = self
                    .blanks
                    .entry(b.as_str().to_owned())
                    .or_insert_with(|| format!("_:b{next}"))
                    .clone();
                Spanned {
                    value: Term::Variable(name),
                    span: self.span_of("_:"),
                }
            }
            TermPattern::NamedNode(n) => self.named(node_names(n.as_str()), n.as_str()),
            TermPattern::Literal(l) => {
                let written = l.to_string();
                let names = vec![written.clone(), l.value().to_owned()];
                self.named(names, l.value())
            }
            #[allow(unreachable_patterns)]
            _ => Spanned {
                value: Term::Name(t.to_string()),
                span: Span { line: 1, column: 1 },
            },
        }
    }

    fn predicate_term(&self, p: &NamedNodePattern) -> Spanned<Term> {
        match p {
            NamedNodePattern::Variable(v) => Spanned {
                value: Term::Variable(v.as_str().to_owned()),
                span: self.span_of(&format!("?{}", v.as_str())),
            },
            NamedNodePattern::NamedNode(n) => {
                let names = relation_names(n.as_str());
                let found = names
                    .iter()
                    .find(|name| self.g.relation_id(name).is_some())
                    .or(names.last())
                    .cloned()
                    .unwrap_or_default();
                Spanned {
                    span: self.span_of(local_name(n.as_str())),
                    value: Term::Name(found),
                }
            }
        }
    }

    /// The first of `names` the graph has (as a node or alias), else the last (for the error's
    /// suggestions: the plainest form).
    fn named(&self, names: Vec<String>, shown: &str) -> Spanned<Term> {
        let found = names
            .iter()
            .find(|n| !self.g.nodes_named(n).is_empty())
            .or(names.last())
            .cloned()
            .unwrap_or_default();
        Spanned {
            span: self.span_of(local_name(shown)),
            value: Term::Name(found),
        }
    }

    /// gpsense matches a predicate variable against relations and a subject or object variable
    /// against nodes: one variable cannot be both.
    fn check_variable_roles(&self, triples: &[Triple]) -> Result<(), QueryError> {
        let var = |t: &Spanned<Term>| match &t.value {
            Term::Variable(v) => Some(v.clone()),
            Term::Name(_) => None,
        };
        let nodes: Vec<String> = triples
            .iter()
            .flat_map(|t| [var(&t.subject), var(&t.object)])
            .flatten()
            .collect();
        for t in triples {
            if let Some(v) = var(&t.predicate).filter(|v| nodes.contains(v)) {
                return Err(QueryError::Parse(parse::ParseError::at(
                    t.predicate.span,
                    format!(
                        "?{v} is used both as a predicate and as a subject or object; gpsense \
                         binds a predicate variable to relations only"
                    ),
                )));
            }
        }
        Ok(())
    }

    fn check_projection(
        &self,
        q: &parse::Query,
        projected: &[Spanned<String>],
    ) -> Result<(), QueryError> {
        let used = |v: &str| {
            q.triples.iter().any(|t| {
                [&t.subject, &t.predicate, &t.object]
                    .iter()
                    .any(|x| x.value == Term::Variable(v.to_owned()))
            })
        };
        match projected.iter().find(|v| !used(&v.value)) {
            Some(v) => Err(QueryError::Parse(parse::ParseError::at(
                v.span,
                format!(
                    "?{} is projected but not in the pattern (it would always be unbound)",
                    v.value
                ),
            ))),
            None => Ok(()),
        }
    }

    fn slot_of(&self, q: &QueryGraph, v: &str) -> Option<Slot> {
        let name = format!("?{v}");
        if let Some(u) = q.nodes.iter().position(|n| n.name == name) {
            return Some(Slot::Node(u));
        }
        q.edge_variables
            .iter()
            .position(|e| *e == name)
            .map(Slot::Edge)
    }

    /// The data nodes (or relations, for an edge slot) a term denotes.
    fn values_of(&self, slot: Slot, e: &Expression) -> Option<Vec<u32>> {
        match (slot, e) {
            (Slot::Node(_), Expression::NamedNode(n)) => {
                Some(self.nodes_of(node_names(n.as_str())))
            }
            (Slot::Node(_), Expression::Literal(l)) => {
                Some(self.nodes_of(vec![l.to_string(), l.value().to_owned()]))
            }
            (Slot::Edge(_), Expression::NamedNode(n)) => Some(
                relation_names(n.as_str())
                    .iter()
                    .find_map(|r| self.g.relation_id(r))
                    .map(|r| vec![u32::from(r)])
                    .unwrap_or_default(),
            ),
            (Slot::Edge(_), Expression::Literal(_)) => Some(Vec::new()),
            _ => None,
        }
    }

    fn nodes_of(&self, names: Vec<String>) -> Vec<NodeId> {
        names
            .iter()
            .map(|n| self.g.nodes_named(n))
            .find(|nodes| !nodes.is_empty())
            .unwrap_or_default()
    }

    fn filters(&self, q: &QueryGraph, exprs: &[&Expression]) -> Result<Vec<RowFilter>, QueryError> {
        let mut out = Vec::new();
        for e in exprs {
            self.filter(q, e, false, &mut out)?;
        }
        Ok(out)
    }

    fn filter(
        &self,
        q: &QueryGraph,
        e: &Expression,
        negated: bool,
        out: &mut Vec<RowFilter>,
    ) -> Result<(), QueryError> {
        let refuse = |what: &str, keyword: &str| Err(unsupported(self.text, what, keyword));
        match e {
            Expression::And(a, b) if !negated => {
                self.filter(q, a, false, out)?;
                self.filter(q, b, false, out)
            }
            Expression::Not(inner) => self.filter(q, inner, !negated, out),
            Expression::Equal(a, b) | Expression::SameTerm(a, b) => {
                match (a.as_ref(), b.as_ref()) {
                    (Expression::Variable(x), Expression::Variable(y)) => {
                        let (Some(a), Some(b)) =
                            (self.slot_of(q, x.as_str()), self.slot_of(q, y.as_str()))
                        else {
                            return refuse("a FILTER on a variable outside the pattern", "filter");
                        };
                        if matches!(a, Slot::Node(_)) != matches!(b, Slot::Node(_)) {
                            return refuse(
                                "comparing a predicate variable with a node variable",
                                "filter",
                            );
                        }
                        out.push(RowFilter::Same { a, b, negated });
                        Ok(())
                    }
                    (Expression::Variable(x), term) | (term, Expression::Variable(x)) => {
                        self.membership(q, x.as_str(), std::slice::from_ref(term), negated, out)
                    }
                    _ => refuse("a FILTER comparing two terms", "filter"),
                }
            }
            Expression::In(a, list) => match a.as_ref() {
                Expression::Variable(x) => self.membership(q, x.as_str(), list, negated, out),
                _ => refuse("IN on an expression other than a variable", "in"),
            },
            Expression::Or(..) => refuse("|| in FILTER", "||"),
            Expression::And(..) => refuse("a negated && in FILTER", "!"),
            _ => refuse("this FILTER expression", "filter"),
        }
    }

    fn membership(
        &self,
        q: &QueryGraph,
        var: &str,
        terms: &[Expression],
        negated: bool,
        out: &mut Vec<RowFilter>,
    ) -> Result<(), QueryError> {
        let Some(slot) = self.slot_of(q, var) else {
            return Err(unsupported(
                self.text,
                "a FILTER on a variable outside the pattern",
                "filter",
            ));
        };
        let mut values = Vec::new();
        for t in terms {
            match self.values_of(slot, t) {
                Some(v) => values.extend(v),
                None => {
                    return Err(unsupported(
                        self.text,
                        "a FILTER operand other than a variable, an IRI or a literal",
                        "filter",
                    ))
                }
            }
        }
        values.sort_unstable();
        values.dedup();
        out.push(RowFilter::In {
            slot,
            values,
            negated,
        });
        Ok(())
    }

    fn order(&self, q: &QueryGraph, keys: &[OrderExpression]) -> Result<Vec<OrderKey>, QueryError> {
        keys.iter()
            .map(|k| {
                let (e, descending) = match k {
                    OrderExpression::Asc(e) => (e, false),
                    OrderExpression::Desc(e) => (e, true),
                };
                let column = match e {
                    Expression::Variable(v) => self
                        .slot_of(q, v.as_str())
                        .and_then(|s| q.projection.iter().position(|&p| same_slot(p, s))),
                    _ => None,
                };
                column
                    .map(|column| OrderKey { column, descending })
                    .ok_or_else(|| {
                        unsupported(
                            self.text,
                            "ORDER BY other than a projected variable",
                            "order",
                        )
                    })
            })
            .collect()
    }
}

fn same_slot(p: Projected, s: Slot) -> bool {
    match (p, s) {
        (Projected::Node(u), Slot::Node(v)) => u == v,
        (Projected::Edge(k), Slot::Edge(j)) => k == j,
        _ => false,
    }
}

/// When the inequalities cover every two query nodes (a concept node's single data node counts as
/// `!=` covered against another concept, which is a different node by construction), the query asks
/// for injective matches: those filters go, and iso answers exactly. Otherwise SPARQL's hom with
/// every filter on rows.
fn absorb_injectivity(q: &QueryGraph, filters: Vec<RowFilter>) -> (bool, Vec<RowFilter>) {
    let n = q.nodes.len();
    let mut covered = vec![false; n * n];
    let single = |u: usize| matches!(q.concept_nodes(u), Some([_]));
    let mut absorbed = vec![false; filters.len()];
    for (i, f) in filters.iter().enumerate() {
        match f {
            RowFilter::Same {
                a: Slot::Node(a),
                b: Slot::Node(b),
                negated: true,
            } if a != b => {
                covered[a * n + b] = true;
                covered[b * n + a] = true;
                absorbed[i] = true;
            }
            // `?x != <c>` with `c` the data node of concept node `w`; absorbed when every value
            // it excludes is such a node (iso then excludes them all).
            RowFilter::In {
                slot: Slot::Node(a),
                values,
                negated: true,
            } => {
                let mut all = true;
                for &v in values {
                    let w = (0..n).find(|&w| single(w) && q.concept_nodes(w) == Some(&[v][..]));
                    match w {
                        Some(w) if w != *a => {
                            covered[a * n + w] = true;
                            covered[w * n + a] = true;
                        }
                        _ => all = false,
                    }
                }
                absorbed[i] = all;
            }
            _ => {}
        }
    }
    let complete =
        (0..n).all(|a| (a + 1..n).all(|b| covered[a * n + b] || (single(a) && single(b))));
    // Without any `!=` between query nodes, distinct concepts differ under either semantics and
    // the query is SPARQL's own (hom), as its summary says.
    let any_inequality = covered.iter().any(|&c| c);
    if !complete || n < 2 || !any_inequality {
        return (false, filters);
    }
    // Iso implies every `!=` between query nodes; an `In` that also excludes other terms stays.
    let kept = filters
        .into_iter()
        .zip(absorbed)
        .filter(|(_, gone)| !gone)
        .map(|(f, _)| f)
        .collect();
    (true, kept)
}

/// `FILTER(?x = <t>)` and `FILTER(?x IN (...))` on a node variable bound nowhere else by a filter:
/// the variable takes only those nodes, so its candidates start from them (a concept set that stays
/// projected) instead of every row being tested. An empty list (terms the graph lacks) stays a test,
/// which no row passes.
fn restrict_variables(mut q: QueryGraph, filters: Vec<RowFilter>) -> (QueryGraph, Vec<RowFilter>) {
    let mut kept = Vec::with_capacity(filters.len());
    for f in filters {
        match f {
            RowFilter::In {
                slot: Slot::Node(u),
                values,
                negated: false,
            } if !values.is_empty() && matches!(q.nodes[u].kind, NodeKind::Variable) => {
                q.concept_sets.push(values);
                q.nodes[u].kind = NodeKind::ConceptSet(q.concept_sets.len() - 1);
            }
            other => kept.push(other),
        }
    }
    (q, kept)
}

/// Names an IRI may have in a graph: itself, or what a `gpsense dump` IRI encodes
/// (`gpsense:n/ice%20cream` is `ice cream`), then ConceptNet's path form and concept term.
pub fn node_names(iri: &str) -> Vec<String> {
    let decoded = gpsense_graph::rdf::iri_name(iri);
    if decoded != iri {
        return vec![decoded.into_owned()];
    }
    let mut names = vec![iri.to_owned()];
    let path = iri.strip_prefix("http://conceptnet.io").unwrap_or(iri);
    if path != iri {
        names.push(path.to_owned());
    }
    if let Some(rest) = path.strip_prefix("/c/") {
        let mut parts = rest.splitn(3, '/');
        if let (Some(_lang), Some(term)) = (parts.next(), parts.next()) {
            names.push(term.replace('_', " "));
        }
    }
    names
}

/// Names an IRI may have as a relation: itself, or what a `gpsense dump` IRI encodes
/// (`gpsense:r/IsA`), then ConceptNet's `/r/IsA` and `IsA`.
pub fn relation_names(iri: &str) -> Vec<String> {
    let decoded = gpsense_graph::rdf::iri_name(iri);
    if decoded != iri {
        return vec![decoded.into_owned()];
    }
    let mut names = vec![iri.to_owned()];
    let path = iri.strip_prefix("http://conceptnet.io").unwrap_or(iri);
    if let Some(rel) = path.strip_prefix("/r/") {
        names.push(path.to_owned());
        names.push(rel.to_owned());
    }
    names
}

/// The part of an IRI a query most likely spells out (after a prefix): after the last `/` or `#`.
fn local_name(iri: &str) -> &str {
    iri.rsplit(['/', '#']).next().unwrap_or(iri)
}

mod depth;
#[cfg(test)]
mod tests;

pub use depth::{nesting_depth, MAX_NESTING};

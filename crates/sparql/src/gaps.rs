//! Where spareval's answer would differ from the standard's, the query is mended or refused: a
//! refusal says what is missing, a wrong answer says nothing. Three such places, each found by the
//! W3C tests:
//!
//! - `BNODE(string)`: the standard makes one blank node per string *per solution*; spareval one
//!   per string per query (sparql11/functions/bnode01).
//! - `STR` (and the `xsd:string` cast) of a literal whose lexical form is not canonical
//!   (`"01"^^xsd:integer`, `"1.0e0"^^xsd:double`): spareval compares values, so it holds numbers and
//!   dates by value and `str` gives the canonical form (`"1"`) (expr-builtin/dawg-str-1, -2). Refused
//!   only on a graph that holds such a literal, and only where the argument may be a literal (not
//!   an IRI, nor a variable that only binds subjects and predicates).
//! - Comparing dates or times with and without a timezone (`"2006-08-23"` against `"2006-08-23Z"`):
//!   the standard leaves the order undetermined within fourteen hours (an error that drops the
//!   row), spareval decides it (open-world/date-2). Mended on a graph that holds both kinds: each
//!   comparison `a op b` becomes `IF(undetermined(a, b), error, a op b)`, `undetermined` being
//!   oxsdatatypes' own order (which knows the fourteen hours) as a custom function.

use std::collections::HashSet;
use std::sync::OnceLock;

use gpsense_graph::KnowledgeGraph;
use oxrdf::{Literal, Term};
use oxrdf::{NamedNode, Variable};
use oxsdatatypes::{Date, DateTime, GDay, GMonth, GMonthDay, GYear, GYearMonth, Time};
use spareval::ExpressionTerm;
use spargebra::algebra::{
    AggregateExpression, Expression, Function, GraphPattern, OrderExpression,
};
use spargebra::term::TermPattern;
use spargebra::Query;

use crate::SparqlError;

const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

/// What the graph's literals hold that spareval cannot keep apart.
#[derive(Clone, Copy, Debug, Default)]
pub struct LiteralFacts {
    /// A typed literal whose value spareval would write differently (`"01"^^xsd:integer`).
    pub non_canonical: Option<bool>,
    /// Dates or times both with and without a timezone.
    pub mixed_timezones: Option<bool>,
}

/// The facts, found once per graph.
pub fn facts(graph: &KnowledgeGraph, cache: &OnceLock<LiteralFacts>) -> LiteralFacts {
    *cache.get_or_init(|| scan(graph))
}

fn scan(graph: &KnowledgeGraph) -> LiteralFacts {
    let (mut non_canonical, mut with_tz, mut without_tz) = (false, false, false);
    if !graph.has_literal_nodes() {
        return LiteralFacts {
            non_canonical: Some(false),
            mixed_timezones: Some(false),
        };
    }
    for (_, name) in graph.nodes().iter() {
        if !name.starts_with('"') || !name.contains("^^") {
            continue;
        }
        let Term::Literal(literal) = crate::dataset::nt_to_term(name) else {
            continue;
        };
        non_canonical |= !is_canonical(&literal);
        if is_temporal(literal.datatype().as_str()) {
            if has_timezone(literal.value()) {
                with_tz = true;
            } else {
                without_tz = true;
            }
        }
    }
    LiteralFacts {
        non_canonical: Some(non_canonical),
        mixed_timezones: Some(with_tz && without_tz),
    }
}

fn is_canonical(literal: &Literal) -> bool {
    let back: Term = ExpressionTerm::from(Term::Literal(literal.clone())).into();
    match back {
        Term::Literal(l) => l.value() == literal.value(),
        _ => true,
    }
}

fn is_temporal(datatype: &str) -> bool {
    datatype.strip_prefix(XSD).is_some_and(|t| {
        matches!(
            t,
            "date" | "dateTime" | "time" | "gYear" | "gYearMonth" | "gMonth" | "gMonthDay" | "gDay"
        )
    })
}

fn has_timezone(lexical: &str) -> bool {
    let b = lexical.as_bytes();
    lexical.ends_with('Z')
        || (b.len() >= 6 && matches!(b[b.len() - 6], b'+' | b'-') && b[b.len() - 3] == b':')
}

/// Refuses `query` where spareval would answer it wrongly on a graph with these facts.
pub fn check(query: &mut Query, facts: LiteralFacts) -> Result<(), SparqlError> {
    let pattern = match query {
        Query::Select { pattern, .. }
        | Query::Ask { pattern, .. }
        | Query::Construct { pattern, .. }
        | Query::Describe { pattern, .. } => pattern,
    };
    let mut literal_variables = HashSet::new();
    may_bind_literals(pattern, &mut literal_variables);
    let mut refusal = None;
    visit_pattern_mut(pattern, true, &mut |e| {
        if refusal.is_none() {
            refusal = gap(e, facts, &literal_variables);
        }
    });
    refusal.map_or(Ok(()), |(keyword, why)| {
        Err(SparqlError::Unsupported {
            keyword,
            message: why.into(),
        })
    })
}

fn gap(
    e: &Expression,
    facts: LiteralFacts,
    literal_variables: &HashSet<Variable>,
) -> Option<(&'static str, &'static str)> {
    // STR of an IRI, or of a variable that only ever binds subjects and predicates, is exact.
    let lexical_risk = |args: &[Expression]| match args.first() {
        Some(Expression::NamedNode(_)) => false,
        Some(Expression::Variable(v)) => literal_variables.contains(v),
        _ => true,
    };
    match e {
        Expression::FunctionCall(Function::BNode, args) if !args.is_empty() => Some((
            "BNODE",
            "BNODE(string) is not supported: the evaluator (spareval) makes one blank node per \
             string for the whole query, where SPARQL makes one per solution",
        )),
        Expression::FunctionCall(Function::Str, args)
            if facts.non_canonical == Some(true) && lexical_risk(args) =>
        {
            Some(("STR", STR_GAP))
        }
        Expression::FunctionCall(Function::Custom(f), args)
            if f.as_str() == "http://www.w3.org/2001/XMLSchema#string"
                && facts.non_canonical == Some(true)
                && lexical_risk(args) =>
        {
            Some(("STRING", STR_GAP))
        }
        _ => None,
    }
}

/// Variables that may be bound to a literal: objects of triples and paths, and whatever VALUES,
/// BIND, an aggregate or a subquery binds. Any other variable is only ever a subject or predicate.
fn may_bind_literals(p: &GraphPattern, out: &mut HashSet<Variable>) {
    use GraphPattern as G;
    let mut object = |t: &TermPattern| {
        if let TermPattern::Variable(v) = t {
            out.insert(v.clone());
        }
    };
    match p {
        G::Bgp { patterns } => patterns.iter().for_each(|t| object(&t.object)),
        G::Path { object: o, .. } => object(o),
        G::Values { variables, .. } => out.extend(variables.iter().cloned()),
        G::Extend {
            inner, variable, ..
        } => {
            out.insert(variable.clone());
            may_bind_literals(inner, out);
        }
        G::Group {
            inner, aggregates, ..
        } => {
            out.extend(aggregates.iter().map(|(v, _)| v.clone()));
            may_bind_literals(inner, out);
        }
        G::Join { left, right }
        | G::Union { left, right }
        | G::Minus { left, right }
        | G::LeftJoin { left, right, .. } => {
            may_bind_literals(left, out);
            may_bind_literals(right, out);
        }
        G::Filter { inner, .. }
        | G::OrderBy { inner, .. }
        | G::Project { inner, .. }
        | G::Distinct { inner }
        | G::Reduced { inner }
        | G::Slice { inner, .. }
        | G::Graph { inner, .. }
        | G::Service { inner, .. } => may_bind_literals(inner, out),
        #[allow(unreachable_patterns)]
        _ => {}
    }
}

const STR_GAP: &str = "STR of a literal is not supported on this graph: it holds typed literals \
                       in a non-canonical form (such as \"01\"^^xsd:integer), which the evaluator \
                       (spareval) holds by value, so STR would give the canonical form";

/// The custom function that says whether two literals' order is undetermined.
pub const UNDETERMINED: &str = "urn:x-gpsense-internal:undetermined-order";

/// `true` when `a` and `b` are dates or times of one type whose order the timezone leaves open.
pub fn undetermined(args: &[Term]) -> Option<Term> {
    let open = match args {
        [Term::Literal(a), Term::Literal(b)] => undetermined_order(a, b),
        _ => false,
    };
    Some(Literal::from(open).into())
}

fn undetermined_order(a: &Literal, b: &Literal) -> bool {
    fn open<T: std::str::FromStr + PartialOrd>(a: &str, b: &str) -> bool {
        match (a.parse::<T>(), b.parse::<T>()) {
            (Ok(a), Ok(b)) => a.partial_cmp(&b).is_none(),
            _ => false,
        }
    }
    if a.datatype() != b.datatype() {
        return false;
    }
    let (x, y) = (a.value(), b.value());
    match a.datatype().as_str().strip_prefix(XSD) {
        Some("dateTime") => open::<DateTime>(x, y),
        Some("date") => open::<Date>(x, y),
        Some("time") => open::<Time>(x, y),
        Some("gYear") => open::<GYear>(x, y),
        Some("gYearMonth") => open::<GYearMonth>(x, y),
        Some("gMonth") => open::<GMonth>(x, y),
        Some("gMonthDay") => open::<GMonthDay>(x, y),
        Some("gDay") => open::<GDay>(x, y),
        _ => false,
    }
}

/// Guards every comparison of `query` with [`UNDETERMINED`] when the graph holds dates or times
/// both with and without a timezone.
pub fn guard_comparisons(query: &mut Query, facts: LiteralFacts) {
    if facts.mixed_timezones != Some(true) {
        return;
    }
    let pattern = match query {
        Query::Select { pattern, .. }
        | Query::Ask { pattern, .. }
        | Query::Construct { pattern, .. }
        | Query::Describe { pattern, .. } => pattern,
    };
    visit_pattern_mut(pattern, false, &mut guard);
}

fn guard(e: &mut Expression) {
    use Expression as E;
    let (a, b) = match e {
        E::Equal(a, b)
        | E::Greater(a, b)
        | E::GreaterOrEqual(a, b)
        | E::Less(a, b)
        | E::LessOrEqual(a, b) => ((**a).clone(), (**b).clone()),
        _ => return,
    };
    let check = E::FunctionCall(
        Function::Custom(NamedNode::new_unchecked(UNDETERMINED)),
        vec![a, b],
    );
    // An integer division by zero: SPARQL's error, which drops the row in a FILTER.
    let error = E::Divide(
        Box::new(E::Literal(1.into())),
        Box::new(E::Literal(0.into())),
    );
    let compared = std::mem::replace(e, E::Bound(oxrdf::Variable::new_unchecked("_")));
    *e = E::If(Box::new(check), Box::new(error), Box::new(compared));
}

/// Every expression in `p` (ORDER BY keys too when `order_keys`), inner ones first; `check` only
/// reads them, `guard_comparisons` rewrites them.
fn visit_pattern_mut(p: &mut GraphPattern, order_keys: bool, f: &mut impl FnMut(&mut Expression)) {
    use GraphPattern as G;
    match p {
        G::Filter { expr, inner } => {
            visit_expression_mut(expr, order_keys, f);
            visit_pattern_mut(inner, order_keys, f);
        }
        G::LeftJoin {
            left,
            right,
            expression,
        } => {
            if let Some(e) = expression {
                visit_expression_mut(e, order_keys, f);
            }
            visit_pattern_mut(left, order_keys, f);
            visit_pattern_mut(right, order_keys, f);
        }
        G::Extend {
            inner, expression, ..
        } => {
            visit_expression_mut(expression, order_keys, f);
            visit_pattern_mut(inner, order_keys, f);
        }
        G::OrderBy { inner, expression } => {
            if order_keys {
                for o in expression {
                    let (OrderExpression::Asc(e) | OrderExpression::Desc(e)) = o;
                    visit_expression_mut(e, order_keys, f);
                }
            }
            visit_pattern_mut(inner, order_keys, f);
        }
        G::Group {
            inner, aggregates, ..
        } => {
            for (_, a) in aggregates {
                if let AggregateExpression::FunctionCall { expr, .. } = a {
                    visit_expression_mut(expr, order_keys, f);
                }
            }
            visit_pattern_mut(inner, order_keys, f);
        }
        G::Join { left, right } | G::Union { left, right } | G::Minus { left, right } => {
            visit_pattern_mut(left, order_keys, f);
            visit_pattern_mut(right, order_keys, f);
        }
        G::Project { inner, .. }
        | G::Distinct { inner }
        | G::Reduced { inner }
        | G::Slice { inner, .. }
        | G::Graph { inner, .. }
        | G::Service { inner, .. } => visit_pattern_mut(inner, order_keys, f),
        _ => {}
    }
}

/// Children first, so a guard's own copies are never visited again.
fn visit_expression_mut(e: &mut Expression, order_keys: bool, f: &mut impl FnMut(&mut Expression)) {
    use Expression as E;
    match e {
        E::Or(a, b)
        | E::And(a, b)
        | E::Equal(a, b)
        | E::SameTerm(a, b)
        | E::Greater(a, b)
        | E::GreaterOrEqual(a, b)
        | E::Less(a, b)
        | E::LessOrEqual(a, b)
        | E::Add(a, b)
        | E::Subtract(a, b)
        | E::Multiply(a, b)
        | E::Divide(a, b) => {
            visit_expression_mut(a, order_keys, f);
            visit_expression_mut(b, order_keys, f);
        }
        E::UnaryPlus(a) | E::UnaryMinus(a) | E::Not(a) => visit_expression_mut(a, order_keys, f),
        E::In(a, list) => {
            visit_expression_mut(a, order_keys, f);
            list.iter_mut()
                .for_each(|x| visit_expression_mut(x, order_keys, f));
        }
        E::If(a, b, c) => {
            visit_expression_mut(a, order_keys, f);
            visit_expression_mut(b, order_keys, f);
            visit_expression_mut(c, order_keys, f);
        }
        E::Coalesce(list) | E::FunctionCall(_, list) => list
            .iter_mut()
            .for_each(|x| visit_expression_mut(x, order_keys, f)),
        E::Exists(p) => visit_pattern_mut(p, order_keys, f),
        _ => {}
    }
    f(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> bool {
        let mut q = spargebra::SparqlParser::new()
            .parse_query(text)
            .expect("parses");
        let facts = LiteralFacts {
            non_canonical: Some(true),
            mixed_timezones: Some(false),
        };
        check(&mut q, facts).is_err()
    }

    #[test]
    fn str_is_refused_only_where_it_may_see_a_literal() {
        assert!(!refused("SELECT (STR(?x) AS ?s) { ?x <http://x/p> ?y }"));
        assert!(!refused(
            "SELECT ?x { ?x <http://x/p> ?y FILTER(REGEX(STR(?x), 'a')) }"
        ));
        assert!(refused("SELECT (STR(?y) AS ?s) { ?x <http://x/p> ?y }"));
        assert!(refused(
            "SELECT ?x { ?x <http://x/p> ?y FILTER(STR(?y) = '1') }"
        ));
        assert!(refused(
            "SELECT ?x { VALUES ?x { 1 } FILTER(STR(?x) = '1') }"
        ));
        assert!(refused(
            "SELECT ?x { ?x <http://x/p> ?y FILTER(STR(?y + 1) = '1') }"
        ));
        assert!(refused(
            "SELECT ?x { ?x <http://x/p> ?y BIND(BNODE('a') AS ?b) }"
        ));
    }
}

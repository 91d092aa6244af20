//! Whether an answer is the expected one, by the suite's rules (w3c/rdf-tests, sparql11/index.html,
//! "Query Evaluation Tests"): solutions are multisets compared up to a consistent renaming of blank
//! nodes, in order only for the query's ORDER BY keys; graphs up to blank-node isomorphism; IRIs
//! identical and literals equal by value: a literal of an XSD numeric, boolean or date/time type
//! is compared in its canonical lexical form (`"01"^^xsd:integer` is `"1"^^xsd:integer`, never
//! `"1.0"^^xsd:decimal`). REDUCED tests (`mf:LaxCardinality`) take each expected row between once
//! and its expected count.

use std::collections::HashMap;
use std::fmt::Write;
use std::str::FromStr;

use oxrdf::dataset::CanonicalizationAlgorithm;
use oxrdf::{BlankNode, Dataset, Graph, Literal, Term, Variable};
use oxsdatatypes::{Boolean, Date, DateTime, Decimal, Double, Duration, Float, Integer, Time};
use spareval::{QueryEvaluator, QueryResults};
use spargebra::algebra::{Expression, GraphPattern, OrderExpression};
use spargebra::term::GroundTerm;
use spargebra::Query;

use super::results::{Outcome, Row, Solutions};

/// Renamings tried before the comparison gives up (the suite's answers need a few hundred).
const SEARCH_STEPS: u64 = 1_000_000;

/// How many rows or triples a mismatch shows of each kind.
const SHOWN: usize = 3;

/// Ok, or why the answer differs (one line).
pub fn compare(
    expected: &Outcome,
    actual: &Outcome,
    lax: bool,
    query: &Query,
) -> Result<(), String> {
    match (expected, actual) {
        (Outcome::Boolean(e), Outcome::Boolean(a)) if e == a => Ok(()),
        (Outcome::Boolean(e), Outcome::Boolean(a)) => Err(format!("expected {e}, answered {a}")),
        (Outcome::Solutions(e), Outcome::Solutions(a)) => {
            let (e, a) = (normalized(e), normalized(a));
            if e.variables != a.variables {
                return Err(format!(
                    "variables differ: expected {}, answered {}",
                    names(&e.variables),
                    names(&a.variables)
                ));
            }
            same_rows(&e, &a, lax)?;
            if e.ordered {
                same_order(&e, &a, &order_keys(query))?;
            }
            Ok(())
        }
        (Outcome::Graph(e), Outcome::Graph(a)) => same_graph(e, a),
        (e, a) => Err(format!("expected {}, answered {}", e.kind(), a.kind())),
    }
}

/// Variables in name order, each row's cells in that order.
fn normalized(solutions: &Solutions) -> Solutions {
    let mut order: Vec<usize> = (0..solutions.variables.len()).collect();
    order.sort_by(|&a, &b| solutions.variables[a].cmp(&solutions.variables[b]));
    Solutions {
        variables: order
            .iter()
            .map(|&i| solutions.variables[i].clone())
            .collect(),
        rows: solutions
            .rows
            .iter()
            .map(|row| {
                order
                    .iter()
                    .map(|&i| row.get(i).cloned().flatten().map(canonical))
                    .collect()
            })
            .collect(),
        ordered: solutions.ordered,
    }
}

fn names(variables: &[Variable]) -> String {
    let names: Vec<String> = variables.iter().map(ToString::to_string).collect();
    format!("({})", names.join(" "))
}

fn show_row(variables: &[Variable], row: &Row) -> String {
    let mut out = String::from("{");
    for (variable, cell) in variables.iter().zip(row) {
        if let Some(term) = cell {
            let _ = write!(out, " {variable}={term}");
        }
    }
    out + " }"
}

/// Blank nodes as one placeholder: rows that can match under some renaming have equal shapes.
fn shape(row: &Row) -> Row {
    row.iter()
        .map(|cell| match cell {
            Some(Term::BlankNode(_)) => Some(BlankNode::new_unchecked("b").into()),
            other => other.clone(),
        })
        .collect()
}

fn has_blank(row: &Row) -> bool {
    row.iter()
        .any(|cell| matches!(cell, Some(Term::BlankNode(_))))
}

/// The two row multisets are equal up to one consistent renaming of blank nodes (`lax`: each
/// expected row comes between once and its expected count; blank nodes are then only compared
/// as such, a renaming is not searched).
fn same_rows(expected: &Solutions, actual: &Solutions, lax: bool) -> Result<(), String> {
    // Rows without blank nodes must match exactly, the others by shape first: that settles
    // almost every difference without a search, and names the rows that differ.
    let mut counts: HashMap<Row, (isize, isize)> = HashMap::new();
    for row in &expected.rows {
        counts.entry(shape(row)).or_default().0 += 1;
    }
    for row in &actual.rows {
        counts.entry(shape(row)).or_default().1 += 1;
    }
    // Per shape: > 0 rows missing, < 0 rows too many.
    let counts: HashMap<Row, isize> = counts
        .into_iter()
        .map(|(row, (e, a))| {
            let missing = match lax {
                false => e - a,
                true if a == 0 => e.min(1),
                true => e.min(a) - a,
            };
            (row, missing)
        })
        .collect();
    let missing: Vec<String> = differing(&counts, 1, &expected.variables);
    let unexpected: Vec<String> = differing(&counts, -1, &expected.variables);
    if !missing.is_empty() || !unexpected.is_empty() {
        return Err(format!(
            "{} rows expected, {} answered; missing {}; unexpected {}",
            expected.rows.len(),
            actual.rows.len(),
            or_none(&missing),
            or_none(&unexpected)
        ));
    }
    if lax {
        return Ok(());
    }
    let expected: Vec<&Row> = expected.rows.iter().filter(|r| has_blank(r)).collect();
    let actual: Vec<&Row> = actual.rows.iter().filter(|r| has_blank(r)).collect();
    match Renaming::new(&expected, &actual).search(0) {
        Some(true) => Ok(()),
        Some(false) => Err("the rows differ in how they share blank nodes".into()),
        None => Err(format!(
            "no renaming of blank nodes found in {SEARCH_STEPS} steps"
        )),
    }
}

fn differing(counts: &HashMap<Row, isize>, sign: isize, variables: &[Variable]) -> Vec<String> {
    let mut rows: Vec<String> = counts
        .iter()
        .filter(|(_, &n)| n * sign > 0)
        .map(|(row, &n)| {
            let times = if n.abs() > 1 {
                format!(" x{}", n.abs())
            } else {
                String::new()
            };
            show_row(variables, row) + &times
        })
        .collect();
    rows.sort();
    rows.truncate(SHOWN);
    rows
}

fn or_none(rows: &[String]) -> String {
    if rows.is_empty() {
        "none".into()
    } else {
        rows.join(", ")
    }
}

/// A search for a bijection between expected and answered blank nodes that maps each expected
/// row onto a distinct answered row.
struct Renaming<'a> {
    expected: &'a [&'a Row],
    actual: &'a [&'a Row],
    used: Vec<bool>,
    forward: HashMap<&'a BlankNode, &'a BlankNode>,
    backward: HashMap<&'a BlankNode, &'a BlankNode>,
    steps: u64,
}

impl<'a> Renaming<'a> {
    fn new(expected: &'a [&'a Row], actual: &'a [&'a Row]) -> Self {
        Renaming {
            expected,
            actual,
            used: vec![false; actual.len()],
            forward: HashMap::new(),
            backward: HashMap::new(),
            steps: 0,
        }
    }

    /// Whether rows `i..` can be matched (None: gave up).
    fn search(&mut self, i: usize) -> Option<bool> {
        let Some(&row) = self.expected.get(i) else {
            return Some(true);
        };
        for j in 0..self.actual.len() {
            if self.used[j] {
                continue;
            }
            self.steps += 1;
            if self.steps > SEARCH_STEPS {
                return None;
            }
            let Some(added) = self.extend(row, self.actual[j]) else {
                continue;
            };
            self.used[j] = true;
            let found = self.search(i + 1);
            self.used[j] = false;
            for (e, a) in added {
                self.forward.remove(e);
                self.backward.remove(a);
            }
            if found != Some(false) {
                return found;
            }
        }
        Some(false)
    }

    /// Maps `expected`'s cells onto `actual`'s, extending the renaming; the pairs it added, or
    /// None (and nothing added) when the rows cannot match under it.
    #[allow(clippy::type_complexity)]
    fn extend(
        &mut self,
        expected: &'a Row,
        actual: &'a Row,
    ) -> Option<Vec<(&'a BlankNode, &'a BlankNode)>> {
        let mut added = Vec::new();
        for (e, a) in expected.iter().zip(actual) {
            let ok = match (e, a) {
                (Some(Term::BlankNode(e)), Some(Term::BlankNode(a))) => {
                    match (self.forward.get(e), self.backward.get(a)) {
                        (Some(&mapped), _) => mapped == a,
                        (None, Some(_)) => false,
                        (None, None) => {
                            self.forward.insert(e, a);
                            self.backward.insert(a, e);
                            added.push((e, a));
                            true
                        }
                    }
                }
                (e, a) => e == a,
            };
            if !ok {
                for (e, a) in added {
                    self.forward.remove(e);
                    self.backward.remove(a);
                }
                return None;
            }
        }
        Some(added)
    }
}

/// The ORDER BY keys of the query's top level (under its projection, DISTINCT and slice).
fn order_keys(query: &Query) -> Vec<Expression> {
    let Query::Select { pattern, .. } = query else {
        return Vec::new();
    };
    let mut pattern = pattern;
    loop {
        pattern = match pattern {
            GraphPattern::Slice { inner, .. }
            | GraphPattern::Distinct { inner }
            | GraphPattern::Reduced { inner }
            | GraphPattern::Project { inner, .. } => inner,
            GraphPattern::OrderBy { expression, .. } => {
                return expression
                    .iter()
                    .map(|key| match key {
                        OrderExpression::Asc(e) | OrderExpression::Desc(e) => e.clone(),
                    })
                    .collect()
            }
            _ => return Vec::new(),
        }
    }
}

/// The rows are in the same order as far as the ORDER BY keys tell: row by row, the same key
/// values. Rows the keys tie may come in any order. A key that reads a variable the answer does
/// not hold (or a pattern) cannot be checked; the keys before it still are.
fn same_order(expected: &Solutions, actual: &Solutions, keys: &[Expression]) -> Result<(), String> {
    let keys: Vec<&Expression> = keys
        .iter()
        .take_while(|key| checkable(key, &expected.variables))
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    for (i, (e, a)) in expected.rows.iter().zip(&actual.rows).enumerate() {
        let (ek, ak) = (
            key_values(&keys, &expected.variables, e),
            key_values(&keys, &actual.variables, a),
        );
        let same = ek.len() == ak.len() && ek.iter().zip(&ak).all(|(x, y)| same_key(x, y));
        if !same {
            return Err(format!(
                "ORDER BY: row {} is {} where {} was expected",
                i + 1,
                show_row(&actual.variables, a),
                show_row(&expected.variables, e)
            ));
        }
    }
    Ok(())
}

/// Blank nodes have no order among themselves: any two are the same key.
fn same_key(x: &Option<Term>, y: &Option<Term>) -> bool {
    match (x, y) {
        (Some(Term::BlankNode(_)), Some(Term::BlankNode(_))) => true,
        _ => x == y,
    }
}

fn checkable(key: &Expression, variables: &[Variable]) -> bool {
    let mut read = Vec::new();
    reads(key, &mut read) && read.iter().all(|v| variables.contains(v))
}

/// Collects the variables an expression reads; false when it reads a graph pattern (EXISTS).
fn reads(expression: &Expression, out: &mut Vec<Variable>) -> bool {
    use Expression as E;
    match expression {
        E::NamedNode(_) | E::Literal(_) => true,
        E::Variable(v) | E::Bound(v) => {
            out.push(v.clone());
            true
        }
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
        | E::Divide(a, b) => reads(a, out) && reads(b, out),
        E::UnaryPlus(a) | E::UnaryMinus(a) | E::Not(a) => reads(a, out),
        E::In(a, list) => reads(a, out) && list.iter().all(|e| reads(e, out)),
        E::If(a, b, c) => reads(a, out) && reads(b, out) && reads(c, out),
        E::Coalesce(list) | E::FunctionCall(_, list) => list.iter().all(|e| reads(e, out)),
        _ => false,
    }
}

/// A row's values of the keys (an unbound variable or an error: None, as ORDER BY sorts them).
/// A key other than a variable is evaluated by Oxigraph's evaluator, as
/// `SELECT (key AS ?k) { VALUES (the row's variables) { (the row) } }` (a blank node cannot be
/// written in VALUES: it is left unbound there).
fn key_values(keys: &[&Expression], variables: &[Variable], row: &Row) -> Vec<Option<Term>> {
    keys.iter()
        .map(|key| {
            if let Expression::Variable(v) = key {
                let i = variables.iter().position(|x| x == v)?;
                return row.get(i).cloned().flatten();
            }
            let values = row
                .iter()
                .map(|cell| match cell {
                    Some(Term::NamedNode(n)) => Some(GroundTerm::NamedNode(n.clone())),
                    Some(Term::Literal(l)) => Some(GroundTerm::Literal(l.clone())),
                    _ => None,
                })
                .collect();
            let k = Variable::new_unchecked("w3c_harness_key");
            let query = Query::Select {
                dataset: None,
                pattern: GraphPattern::Project {
                    inner: Box::new(GraphPattern::Extend {
                        inner: Box::new(GraphPattern::Values {
                            variables: variables.to_vec(),
                            bindings: vec![values],
                        }),
                        variable: k.clone(),
                        expression: (*key).clone(),
                    }),
                    variables: vec![k.clone()],
                },
                base_iri: None,
            };
            let evaluator = QueryEvaluator::new();
            let empty = Dataset::new();
            let Ok(QueryResults::Solutions(mut solutions)) =
                evaluator.prepare(&query).execute(&empty)
            else {
                return None;
            };
            solutions.next()?.ok()?.get(&k).cloned()
        })
        .collect()
}

/// The graphs are isomorphic (blank nodes renamed); else a few triples each side lacks.
fn same_graph(expected: &Graph, actual: &Graph) -> Result<(), String> {
    let (mut e, mut a) = (canonical_graph(expected), canonical_graph(actual));
    e.canonicalize(CanonicalizationAlgorithm::Unstable);
    a.canonicalize(CanonicalizationAlgorithm::Unstable);
    if e == a {
        return Ok(());
    }
    let only = |x: &Graph, y: &Graph| -> String {
        let mut triples: Vec<String> = x
            .iter()
            .filter(|t| !y.contains(*t))
            .map(|t| t.to_string())
            .collect();
        triples.sort();
        triples.truncate(SHOWN);
        or_none(&triples)
    };
    Err(format!(
        "graphs differ ({} triples expected, {} answered); missing {}; unexpected {}",
        expected.len(),
        actual.len(),
        only(&e, &a),
        only(&a, &e)
    ))
}

fn canonical_graph(graph: &Graph) -> Graph {
    graph
        .iter()
        .map(|t| {
            let mut t = t.into_owned();
            t.object = canonical(t.object);
            t
        })
        .collect()
}

/// A literal of a type whose values have one canonical lexical form, in that form (literals
/// equal by value are then equal terms); a language tag in lower case; any other term as it is.
fn canonical(term: Term) -> Term {
    let Term::Literal(literal) = &term else {
        return term;
    };
    if let Some(language) = literal.language() {
        let language = language.to_ascii_lowercase();
        return Literal::new_language_tagged_literal_unchecked(literal.value(), language).into();
    }
    let datatype = literal.datatype();
    match canonical_form(literal.value(), datatype.as_str()) {
        Some(value) => Literal::new_typed_literal(value, datatype).into(),
        None => term,
    }
}

/// The canonical lexical form of `value` as a `datatype`, None when the type has none here or
/// the value is ill-formed (an ill-formed literal is compared as written).
fn canonical_form(value: &str, datatype: &str) -> Option<String> {
    fn parsed<T: FromStr + ToString>(value: &str) -> Option<String> {
        value.parse::<T>().ok().map(|v| v.to_string())
    }
    let local = datatype.strip_prefix("http://www.w3.org/2001/XMLSchema#")?;
    match local {
        "integer" | "int" | "long" | "short" | "byte" | "nonNegativeInteger"
        | "nonPositiveInteger" | "negativeInteger" | "positiveInteger" | "unsignedLong"
        | "unsignedInt" | "unsignedShort" | "unsignedByte" => parsed::<Integer>(value),
        "decimal" => parsed::<Decimal>(value),
        "double" => parsed::<Double>(value),
        "float" => parsed::<Float>(value),
        "boolean" => parsed::<Boolean>(value),
        "dateTime" => parsed::<DateTime>(value),
        "date" => parsed::<Date>(value),
        "time" => parsed::<Time>(value),
        "duration" => parsed::<Duration>(value),
        _ => None,
    }
}

/// The comparison's own rules, on small hand-made answers.
#[cfg(test)]
mod tests {
    use super::*;
    use spargebra::SparqlParser;

    fn bnode(label: &str) -> Option<Term> {
        Some(BlankNode::new_unchecked(label).into())
    }

    fn int(lexical: &str) -> Option<Term> {
        let xsd_integer = oxrdf::vocab::xsd::INTEGER;
        Some(Literal::new_typed_literal(lexical, xsd_integer).into())
    }

    fn solutions(variables: &[&str], rows: Vec<Row>) -> Outcome {
        Outcome::Solutions(Solutions {
            variables: variables
                .iter()
                .map(|v| Variable::new_unchecked(*v))
                .collect(),
            rows,
            ordered: true,
        })
    }

    fn check(query: &str, lax: bool, expected: Outcome, actual: Outcome) -> Result<(), String> {
        let query = SparqlParser::new()
            .parse_query(query)
            .expect("a test query");
        compare(&expected, &actual, lax, &query)
    }

    const SELECT: &str = "SELECT * { ?x ?y ?z }";

    #[test]
    fn blank_nodes_compare_up_to_one_renaming() {
        let expected = || {
            solutions(
                &["x", "y"],
                vec![vec![bnode("a"), bnode("a")], vec![bnode("b"), int("1")]],
            )
        };
        let renamed = solutions(
            &["y", "x"],
            vec![vec![int("1"), bnode("q")], vec![bnode("p"), bnode("p")]],
        );
        assert_eq!(check(SELECT, false, expected(), renamed), Ok(()));
        let unshared = solutions(
            &["x", "y"],
            vec![vec![bnode("p"), bnode("r")], vec![bnode("q"), int("1")]],
        );
        assert!(check(SELECT, false, expected(), unshared).is_err());
        // One blank node in two rows is not two blank nodes.
        let merged = solutions(
            &["x", "y"],
            vec![vec![bnode("p"), bnode("p")], vec![bnode("p"), int("1")]],
        );
        assert!(check(SELECT, false, expected(), merged).is_err());
    }

    #[test]
    fn literals_compare_by_value_within_their_datatype() {
        let one = || solutions(&["x"], vec![vec![int("1")]]);
        assert_eq!(
            check(
                SELECT,
                false,
                one(),
                solutions(&["x"], vec![vec![int("01")]])
            ),
            Ok(())
        );
        let decimal = Literal::new_typed_literal("1.0", oxrdf::vocab::xsd::DECIMAL);
        let decimal = solutions(&["x"], vec![vec![Some(decimal.into())]]);
        assert!(check(SELECT, false, one(), decimal).is_err());
        assert!(check(
            SELECT,
            false,
            one(),
            solutions(&["x"], vec![vec![int("2")]])
        )
        .is_err());
    }

    #[test]
    fn rows_are_a_multiset() {
        let twice = || solutions(&["x"], vec![vec![int("1")], vec![int("1")]]);
        assert!(check(
            SELECT,
            false,
            twice(),
            solutions(&["x"], vec![vec![int("1")]])
        )
        .is_err());
        assert!(check(
            SELECT,
            false,
            twice(),
            solutions(&["y"], vec![vec![int("1")]; 2])
        )
        .is_err());
    }

    #[test]
    fn order_is_held_to_the_order_by_keys_only() {
        let query = "SELECT ?k ?v { ?k ?p ?v } ORDER BY DESC(-?k)";
        let rows = |order: [(&str, &str); 3]| {
            let rows = order.iter().map(|(k, v)| vec![int(k), int(v)]).collect();
            solutions(&["k", "v"], rows)
        };
        let expected = || rows([("1", "10"), ("1", "11"), ("2", "20")]);
        let tie_swapped = rows([("1", "11"), ("1", "10"), ("2", "20")]);
        assert_eq!(check(query, false, expected(), tie_swapped), Ok(()));
        let reversed = rows([("2", "20"), ("1", "10"), ("1", "11")]);
        let why = check(query, false, expected(), reversed).unwrap_err();
        assert!(why.starts_with("ORDER BY"), "{why}");
        // Without ORDER BY the order is free.
        let reversed = rows([("2", "20"), ("1", "10"), ("1", "11")]);
        assert_eq!(check(SELECT, false, expected(), reversed), Ok(()));
    }

    #[test]
    fn reduced_takes_each_row_between_once_and_its_count() {
        let expected = || solutions(&["x"], vec![vec![int("1")], vec![int("1")], vec![int("2")]]);
        let once = || solutions(&["x"], vec![vec![int("1")], vec![int("2")]]);
        assert_eq!(check(SELECT, true, expected(), once()), Ok(()));
        assert!(check(SELECT, false, expected(), once()).is_err());
        let missing = solutions(&["x"], vec![vec![int("1")]]);
        assert!(check(SELECT, true, expected(), missing).is_err());
        let thrice = solutions(&["x"], vec![vec![int("1")]; 3]);
        assert!(check(SELECT, true, expected(), thrice).is_err());
    }

    #[test]
    fn graphs_compare_up_to_blank_node_renaming() {
        let graph = |subject: &str, object: &str| {
            let p = oxrdf::NamedNode::new_unchecked("http://example/p");
            let triple = oxrdf::Triple::new(
                BlankNode::new_unchecked(subject),
                p,
                Literal::new_typed_literal(object, oxrdf::vocab::xsd::INTEGER),
            );
            Outcome::Graph([triple].iter().collect())
        };
        let construct = "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }";
        assert_eq!(
            check(construct, false, graph("a", "1"), graph("b", "01")),
            Ok(())
        );
        assert!(check(construct, false, graph("a", "1"), graph("a", "2")).is_err());
        let boolean = Outcome::Boolean(true);
        assert!(check(construct, false, graph("a", "1"), boolean).is_err());
    }
}

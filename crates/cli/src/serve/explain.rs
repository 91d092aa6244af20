//! `/explain`: a query's shape for the workbench's drawing (nodes, concepts or variables, and
//! labelled edges), its plan and the figures `gpsense query --explain` prints, as JSON.
//!
//! A query the graph path answers is counted (as `--count --explain` does) under the request's
//! time limit: the figures are the engine's. A standard query that goes to the full evaluator has
//! no single query graph: its basic graph patterns are drawn, and no plan is given.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use gpsense::solutions::{column_names, options_for};
use gpsense::Reading;
use gpsense_graph::rdf::iri_name;
use gpsense_planner::{EdgeLabel, NodeKind, Prepared, Projected, QueryGraph};
use gpsense_runtime::MatchReport;
use serde_json::{json, Value};
use spargebra::algebra::{GraphPattern, PropertyPathExpression};
use spargebra::term::{NamedNodePattern, TermPattern};
use spargebra::Query;

use super::execute::{Engine, Failure};

/// Query nodes beyond which a pattern is not drawn (a drawing of more is unreadable).
pub const MAX_DRAWN_NODES: usize = 40;

/// The JSON answer for `text`; the query runs at most `timeout`, and stops when `cancel` is set.
pub fn explain(
    engine: &Engine,
    text: &str,
    timeout: Duration,
    cancel: &Arc<AtomicBool>,
) -> Result<Value, Failure> {
    let reading =
        gpsense::read(engine.matcher, text, None).map_err(|e| Failure::BadQuery(e.to_string()))?;
    match reading {
        Reading::Graph(p) => graph_path(engine, &p, timeout, cancel),
        Reading::Algebra(query) => {
            let native = gpsense::sparql::Sparql::new(engine.matcher).plans_natively(&query);
            Ok(algebra(&query, native))
        }
    }
}

fn graph_path(
    engine: &Engine,
    p: &Prepared,
    timeout: Duration,
    cancel: &Arc<AtomicBool>,
) -> Result<Value, Failure> {
    let mut opts = options_for(p, &engine.options, None);
    opts.timeout = Some(timeout);
    opts.cancel = Some(cancel.clone());
    // The planner's reasons and the per-phase figures, as `--explain` asks.
    opts.explain = true;
    let reported = gpsense::solutions::count(engine.matcher, p, &opts);
    if cancel.load(Relaxed) {
        return Err(Failure::Cancelled);
    }
    let reported = reported?;
    let r = &reported.report;
    let g = engine.matcher.graph();
    let mut text = crate::commands::query::describe_form(p);
    let source = crate::commands::query::semantics_source(p, false);
    text += &crate::explain::report(&p.graph, g, r, source);
    if let Some(x) = &reported.expansion {
        text += &crate::explain::expansion(engine.matcher, x);
    }
    Ok(json!({
        "evaluator": "graph",
        "dialect": match p.dialect {
            gpsense_planner::Dialect::Short => "short",
            gpsense_planner::Dialect::Sparql => "sparql",
        },
        "columns": column_names(&p.graph),
        "drawing": drawing(&p.graph, g),
        "plan": plan(&p.graph, r),
        "matches": r.rows.to_string(),
        "timed_out": r.timed_out,
        "limit_reached": r.limit_reached,
        "semantics": r.semantics.to_string(),
        "engine": r.engine.to_string(),
        // Whether `/query` answers this query in a device batch with others (`batch`).
        "device_batch": engine.batcher.is_some() && engine.on_device(p, &opts),
        "explain": text,
    }))
}

/// The query graph: each node a concept (fixed) or a variable, with the result column that binds
/// it; each edge its relation or its edge variable's column.
fn drawing(q: &QueryGraph, g: &gpsense_graph::KnowledgeGraph) -> Value {
    if q.nodes.len() > MAX_DRAWN_NODES {
        return too_large(q.nodes.len());
    }
    let columns = column_names(q);
    let column_of = |p: Projected| {
        q.projection
            .iter()
            .position(|&c| c == p)
            .map(|i| &columns[i])
    };
    let nodes: Vec<Value> = q
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let kind = match n.kind {
                NodeKind::Variable => "variable",
                NodeKind::Concept(_) | NodeKind::ConceptSet(_) => "concept",
            };
            json!({"name": n.name, "kind": kind, "column": column_of(Projected::Node(i))})
        })
        .collect();
    let edges: Vec<Value> = q
        .edges
        .iter()
        .map(|e| {
            let (label, variable, column) = match e.label {
                EdgeLabel::Fixed(r) => (g.relation_name(r).to_owned(), false, None),
                EdgeLabel::Variable(k) => (
                    q.edge_variables.get(k).cloned().unwrap_or_default(),
                    true,
                    column_of(Projected::Edge(k)),
                ),
            };
            json!({"from": e.source, "to": e.target, "label": label, "variable": variable,
                   "column": column})
        })
        .collect();
    json!({"nodes": nodes, "edges": edges})
}

fn too_large(nodes: usize) -> Value {
    json!({"none": format!(
        "the query has {nodes} nodes; the workbench draws at most {MAX_DRAWN_NODES}"
    )})
}

/// The matching order with the planner's reason for each step, and the candidates per query node.
fn plan(q: &QueryGraph, r: &MatchReport) -> Value {
    let steps: Vec<Value> = r
        .plan
        .order
        .iter()
        .enumerate()
        .map(|(i, &u)| {
            json!({
                "node": q.nodes.get(u).map(|n| n.name.as_str()),
                "why": r.plan.rationale.get(i),
                "after_filter": r.filter.after_filter.get(u),
                "after_refine": r.filter.after_refine.get(u),
            })
        })
        .collect();
    let t = &r.times;
    let ms = |d: Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    json!({
        "steps": steps,
        "components": r.plan.components.len(),
        "times_ms": {
            "plan": ms(t.plan), "filter": ms(t.filter), "refine": ms(t.refine),
            "edge_candidates": ms(t.edge_candidates), "join": ms(t.join), "total": ms(t.total),
        },
    })
}

/// A standard query for the full evaluator: its basic graph patterns and property paths drawn as
/// one graph (a variable is one node wherever it occurs), no plan.
fn algebra(query: &Query, native: bool) -> Value {
    let pattern = match query {
        Query::Select { pattern, .. }
        | Query::Ask { pattern, .. }
        | Query::Construct { pattern, .. }
        | Query::Describe { pattern, .. } => pattern,
    };
    let mut shape = Shape::default();
    shape.walk(pattern);
    let drawing = if shape.nodes.is_empty() {
        json!({"none": "the query has no triple pattern to draw"})
    } else if shape.nodes.len() > MAX_DRAWN_NODES {
        too_large(shape.nodes.len())
    } else {
        json!({"nodes": shape.nodes, "edges": shape.edges})
    };
    json!({
        "evaluator": "full",
        "dialect": "sparql",
        "drawing": drawing,
        "plan": null,
        "explain": format!(
            "dialect:   standard SPARQL 1.1, full algebra\nevaluator: {}\nThe full evaluator \
             answers this query: its basic graph patterns go to the matcher one by one, joined \
             by the algebra, so there is no single plan. The drawing shows every triple pattern \
             of the query together.\n",
            gpsense::sparql::evaluator_name(native)
        ),
    })
}

/// Triple patterns collected as a graph.
#[derive(Default)]
struct Shape {
    nodes: Vec<Value>,
    edges: Vec<Value>,
    index: HashMap<String, usize>,
}

impl Shape {
    /// Every triple pattern and path under `p` (the nesting is bounded before parsing).
    fn walk(&mut self, p: &GraphPattern) {
        use GraphPattern as G;
        match p {
            G::Bgp { patterns } => {
                for t in patterns {
                    let (label, column) = match &t.predicate {
                        NamedNodePattern::NamedNode(n) => (iri_name(n.as_str()).into_owned(), None),
                        NamedNodePattern::Variable(v) => {
                            (format!("?{}", v.as_str()), Some(v.as_str().to_owned()))
                        }
                    };
                    self.edge(&t.subject, &t.object, label, column);
                }
            }
            G::Path {
                subject,
                path,
                object,
            } => self.edge(subject, object, path_text(path), None),
            G::Join { left, right }
            | G::LeftJoin { left, right, .. }
            | G::Union { left, right }
            | G::Minus { left, right } => {
                self.walk(left);
                self.walk(right);
            }
            G::Filter { inner, .. }
            | G::Graph { inner, .. }
            | G::Extend { inner, .. }
            | G::OrderBy { inner, .. }
            | G::Project { inner, .. }
            | G::Distinct { inner }
            | G::Reduced { inner }
            | G::Slice { inner, .. }
            | G::Group { inner, .. }
            | G::Service { inner, .. } => self.walk(inner),
            // VALUES binds without a pattern.
            _ => {}
        }
    }

    fn edge(&mut self, s: &TermPattern, o: &TermPattern, label: String, column: Option<String>) {
        let (from, to) = (self.node(s), self.node(o));
        let variable = column.is_some();
        self.edges.push(
            json!({"from": from, "to": to, "label": label, "variable": variable,
                               "column": column}),
        );
    }

    fn node(&mut self, t: &TermPattern) -> usize {
        let (name, kind, column) = match t {
            TermPattern::Variable(v) => (
                format!("?{}", v.as_str()),
                "variable",
                Some(v.as_str().to_owned()),
            ),
            // A blank node in a pattern is a variable no column shows.
            TermPattern::BlankNode(b) => (format!("_:{}", b.as_str()), "variable", None),
            TermPattern::NamedNode(n) => (iri_name(n.as_str()).into_owned(), "concept", None),
            other => (other.to_string(), "concept", None),
        };
        if let Some(&i) = self.index.get(&name) {
            return i;
        }
        let i = self.nodes.len();
        self.nodes
            .push(json!({"name": name, "kind": kind, "column": column}));
        self.index.insert(name, i);
        i
    }
}

/// A property path in SPARQL's syntax with relations by their graph names (`IsA+`, `^PartOf`).
fn path_text(p: &PropertyPathExpression) -> String {
    use PropertyPathExpression as P;
    // An operand that is itself a sequence or alternative needs brackets under a postfix.
    let operand = |q: &P| match q {
        P::Sequence(..) | P::Alternative(..) => format!("({})", path_text(q)),
        _ => path_text(q),
    };
    match p {
        P::NamedNode(n) => iri_name(n.as_str()).into_owned(),
        P::Reverse(q) => format!("^{}", operand(q)),
        P::Sequence(a, b) => format!("{}/{}", operand(a), operand(b)),
        P::Alternative(a, b) => format!("{}|{}", path_text(a), path_text(b)),
        P::ZeroOrMore(q) => format!("{}*", operand(q)),
        P::OneOrMore(q) => format!("{}+", operand(q)),
        P::ZeroOrOne(q) => format!("{}?", operand(q)),
        P::NegatedPropertySet(ns) => {
            let names: Vec<String> = ns
                .iter()
                .map(|n| iri_name(n.as_str()).into_owned())
                .collect();
            format!("!({})", names.join("|"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(text: &str) -> Value {
        let query = spargebra::SparqlParser::new().parse_query(text).unwrap();
        algebra(&query, false)
    }

    #[test]
    fn a_standard_query_draws_its_patterns_as_one_graph() {
        let v = shape(
            "SELECT * WHERE { ?x <gpsense:r/IsA> <gpsense:n/animal> \
             OPTIONAL { ?x ?r ?y } ?x <gpsense:r/IsA>+ ?z }",
        );
        assert_eq!(v["evaluator"], "full");
        let d = &v["drawing"];
        let names: Vec<&str> = d["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["?x", "animal", "?y", "?z"]);
        assert_eq!(d["nodes"][1]["kind"], "concept");
        assert_eq!(d["nodes"][0]["kind"], "variable");
        assert_eq!(d["nodes"][0]["column"], "x");
        let edges = d["edges"].as_array().unwrap();
        assert_eq!(edges.len(), 3);
        assert_eq!(edges[0]["label"], "IsA");
        assert_eq!(
            (edges[0]["from"].as_u64(), edges[0]["to"].as_u64()),
            (Some(0), Some(1))
        );
        assert_eq!(edges[1]["column"], "r");
        assert_eq!(edges[2]["label"], "IsA+");
    }

    #[test]
    fn paths_are_written_with_graph_names() {
        let v = shape(
            "PREFIX r: <gpsense:r/> SELECT * WHERE { ?a (r:IsA/^r:PartOf)* ?b . \
             ?b !(r:IsA|r:UsedFor) ?c . ?c (r:IsA|r:HasA)? ?d }",
        );
        let labels: Vec<&str> = v["drawing"]["edges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["label"].as_str().unwrap())
            .collect();
        assert_eq!(labels, ["(IsA/^PartOf)*", "!(IsA|UsedFor)", "(IsA|HasA)?"]);
    }

    #[test]
    fn a_query_without_patterns_says_there_is_no_drawing() {
        let v = shape("SELECT ?x WHERE { VALUES ?x { 1 } }");
        assert!(v["drawing"]["none"]
            .as_str()
            .unwrap()
            .contains("no triple pattern"));
    }
}

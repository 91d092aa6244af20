//! The workbench's example queries, taken from the loaded graph: its most common relations and a
//! concept that has them, written in both dialects, so that every example answers on any graph.

use gpsense_graph::rdf::{nt_predicate, nt_term};
use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_planner::parse::quote_if_needed;
use serde_json::{json, Value};

/// Relations listed beside the examples.
const SHOWN_RELATIONS: usize = 8;
/// A drawable first example: the concept has this many subjects of the most common relation...
const SUBJECTS: std::ops::RangeInclusive<usize> = 3..=12;
/// ...and the two-edge pattern about this many matches (a table that fits the page).
const MATCHES: std::ops::RangeInclusive<usize> = 4..=12;
/// Subjects beyond which a concept is not considered.
const MAX_SUBJECTS: usize = 1_000;
/// Longest concept name an example uses (a long name makes a crowded drawing).
const MAX_NAME: usize = 16;

/// What the examples are built from.
struct Seed {
    /// The most common relation and the next (the same when the graph has one).
    first: LabelId,
    second: LabelId,
    /// An object of `first` whose subjects have `second` edges.
    concept: NodeId,
}

/// `{"relations": [{"name", "edges"}], "examples": [{"title", "dialect", "query"}],
/// "trust": {"query", "k"}}`; no examples for a graph without edges.
pub fn examples(g: &KnowledgeGraph) -> Value {
    let freq = g.relation_frequencies();
    let mut order: Vec<usize> = (0..freq.len()).filter(|&r| freq[r] > 0).collect();
    order.sort_by_key(|&r| (std::cmp::Reverse(freq[r]), r));
    let relations: Vec<Value> = order
        .iter()
        .take(SHOWN_RELATIONS)
        .map(|&r| json!({"name": g.relation_name(r as LabelId), "edges": freq[r]}))
        .collect();
    let Some(seed) = seed(g, &order) else {
        return json!({"relations": relations, "examples": [], "trust": null});
    };
    json!({
        "relations": relations,
        "examples": queries(g, &seed),
        "trust": {"query": trust_query(g, &seed), "k": 10},
    })
}

fn seed(g: &KnowledgeGraph, by_frequency: &[usize]) -> Option<Seed> {
    let first = *by_frequency.first()? as LabelId;
    let second = by_frequency.get(1).map_or(first, |&r| r as LabelId);
    let concept = drawable_concept(g, first, second).or_else(|| {
        // No subject has a `second` edge: the object of `first` with the fewest subjects.
        let inc = g.inc();
        (0..g.node_count() as NodeId)
            .filter(|&c| inc.degree_by_label(c, first) > 0)
            .min_by_key(|&c| inc.degree_by_label(c, first))
    })?;
    Some(Seed {
        first,
        second,
        concept,
    })
}

/// A concept with a few subjects of `first` that have `second` edges: the pattern `?x first c .
/// ?x second ?y` then has a handful of matches. Among those, the one whose subjects most often
/// have such an edge (a table with different `?x`), then the shorter name. Failing that, the
/// concept with the fewest matches but one.
fn drawable_concept(g: &KnowledgeGraph, first: LabelId, second: LabelId) -> Option<NodeId> {
    let (inc, out) = (g.inc(), g.out());
    let mut best: Option<(usize, usize, NodeId)> = None;
    let mut fewest: Option<(usize, NodeId)> = None;
    for c in 0..g.node_count() as NodeId {
        let subjects = inc.neighbours_by_label(c, first);
        // More would not make a small example, and would cost a hub's neighbourhood.
        if subjects.is_empty() || subjects.len() > MAX_SUBJECTS {
            continue;
        }
        let mut matches = 0;
        let mut with_edge = 0;
        for &x in subjects.iter().filter(|&&x| x != c) {
            let ys = out.neighbours_by_label(x, second);
            let n = ys.iter().filter(|&&y| y != x && y != c).count();
            matches += n;
            with_edge += usize::from(n > 0);
        }
        if matches > 0 && fewest.is_none_or(|f| matches < f.0) {
            fewest = Some((matches, c));
        }
        let name = g.node_name(c);
        let plain = name.len() <= MAX_NAME && quote_if_needed(name) == name;
        if !plain || !SUBJECTS.contains(&subjects.len()) || !MATCHES.contains(&matches) {
            continue;
        }
        let key = (with_edge, usize::MAX - name.len(), c);
        if best.is_none_or(|b| (b.0, b.1) < (key.0, key.1)) {
            best = Some(key);
        }
    }
    best.map(|b| b.2).or(fewest.map(|f| f.1))
}

fn queries(g: &KnowledgeGraph, s: &Seed) -> Vec<Value> {
    let (r1, r2) = (g.relation_name(s.first), g.relation_name(s.second));
    let c = g.node_name(s.concept);
    let short = |name: &str| quote_if_needed(name);
    let (sr1, sr2, sc) = (short(r1), short(r2), short(c));
    let std = Standard::default();
    let (pr1, pr2) = (std.predicate(r1), std.predicate(r2));
    let pc = std.object(c);
    let prefixes = std.prefixes();
    vec![
        example(
            "Two edges from a concept",
            "short",
            format!("SELECT ?x ?y WHERE {{ ?x {sr1} {sc} . ?x {sr2} ?y }}"),
        ),
        example(
            "The same in standard SPARQL",
            "sparql",
            format!("{prefixes}SELECT ?x ?y WHERE {{\n  ?x {pr1} {pc} .\n  ?x {pr2} ?y\n}}"),
        ),
        example(
            "Any relation into the concept",
            "short",
            format!("SELECT ?x ?r WHERE {{ ?x ?r {sc} }} LIMIT 20"),
        ),
        example(
            "Count two-step paths",
            "sparql",
            format!("{prefixes}SELECT (COUNT(*) AS ?n) WHERE {{ ?a {pr1} ?b . ?b {pr1} ?c }}"),
        ),
        example(
            "OPTIONAL (the full evaluator)",
            "sparql",
            format!(
                "{prefixes}SELECT ?x ?y WHERE {{\n  ?x {pr1} {pc}\n  OPTIONAL {{ ?x {pr2} ?y }}\n}}"
            ),
        ),
    ]
}

fn example(title: &str, dialect: &str, query: String) -> Value {
    json!({"title": title, "dialect": dialect, "query": query})
}

/// A TruST query: the first example with the concept's name changed (a plural), which TruST
/// still finds by name similarity.
fn trust_query(g: &KnowledgeGraph, s: &Seed) -> String {
    let near = format!("{}s", g.node_name(s.concept));
    format!(
        "SELECT * WHERE {{ ?x {} {} . ?x {} ?y }}",
        quote_if_needed(g.relation_name(s.first)),
        quote_if_needed(&near),
        quote_if_needed(g.relation_name(s.second))
    )
}

/// Standard SPARQL terms for graph names: IRIs as they are, other names in gpsense's reserved
/// scheme, short as `n:NAME` and `r:NAME` where the name is a plain word.
#[derive(Default)]
struct Standard {
    used_node: std::cell::Cell<bool>,
    used_relation: std::cell::Cell<bool>,
}

const NODE_IRI: &str = "<gpsense:n/";
const RELATION_IRI: &str = "<gpsense:r/";

impl Standard {
    fn object(&self, name: &str) -> String {
        self.short(nt_term(name), NODE_IRI, "n:", &self.used_node)
    }

    fn predicate(&self, name: &str) -> String {
        self.short(nt_predicate(name), RELATION_IRI, "r:", &self.used_relation)
    }

    fn short(
        &self,
        term: String,
        scheme: &str,
        prefix: &str,
        used: &std::cell::Cell<bool>,
    ) -> String {
        let local = term
            .strip_prefix(scheme)
            .and_then(|t| t.strip_suffix('>'))
            .filter(|l| {
                l.starts_with(|c: char| c.is_ascii_alphabetic())
                    && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            });
        match local {
            Some(l) => {
                used.set(true);
                format!("{prefix}{l}")
            }
            None => term,
        }
    }

    /// The PREFIX lines the terms written so far need.
    fn prefixes(&self) -> String {
        let mut out = String::new();
        if self.used_node.get() {
            out.push_str("PREFIX n: <gpsense:n/>\n");
        }
        if self.used_relation.get() {
            out.push_str("PREFIX r: <gpsense:r/>\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpsense_graph::GraphBuilder;

    fn graph(triples: &[(&str, &str, &str)]) -> KnowledgeGraph {
        let mut b = GraphBuilder::new();
        for (s, r, o) in triples {
            b.add_triple(s, r, o, 1.0).unwrap();
        }
        b.build().unwrap().0
    }

    #[test]
    fn examples_use_the_most_common_relations_and_a_concept_that_has_them() {
        let mut t = vec![("x", "Rare", "y")];
        for (s, y) in [
            ("cat", "milk"),
            ("dog", "bone"),
            ("cow", "grass"),
            ("hen", "corn"),
        ] {
            t.push((s, "IsA", "animal"));
            t.push((s, "Eats", y));
            t.push((y, "IsA", "food"));
        }
        t.push(("fish", "IsA", "animal"));
        let g = graph(&t);
        let v = examples(&g);
        assert_eq!(v["relations"][0]["name"], "IsA");
        assert_eq!(v["relations"][1]["name"], "Eats");
        let first = v["examples"][0]["query"].as_str().unwrap();
        assert_eq!(first, "SELECT ?x ?y WHERE { ?x IsA animal . ?x Eats ?y }");
        let standard = v["examples"][1]["query"].as_str().unwrap();
        assert!(standard.starts_with("PREFIX n: <gpsense:n/>\nPREFIX r: <gpsense:r/>\n"));
        assert!(standard.contains("?x r:IsA n:animal"));
        assert_eq!(
            v["trust"]["query"],
            "SELECT * WHERE { ?x IsA animals . ?x Eats ?y }"
        );
    }

    #[test]
    fn iris_stay_iris_and_odd_names_are_encoded() {
        let s = Standard::default();
        assert_eq!(s.object("http://x.org/a"), "<http://x.org/a>");
        assert_eq!(s.object("ice cream"), "<gpsense:n/ice%20cream>");
        assert_eq!(s.prefixes(), "");
        assert_eq!(s.predicate("IsA"), "r:IsA");
        assert_eq!(s.prefixes(), "PREFIX r: <gpsense:r/>\n");
    }

    #[test]
    fn without_a_drawable_concept_a_small_answer_is_taken() {
        let g = graph(&[("a", "R", "hub"), ("b", "R", "hub"), ("c", "R", "leaf")]);
        let v = examples(&g);
        assert_eq!(
            v["examples"][0]["query"],
            "SELECT ?x ?y WHERE { ?x R leaf . ?x R ?y }"
        );
        // Two matches through `x`, one through `y`: not enough for the first choice.
        let g = graph(&[
            ("x", "R", "big"),
            ("x", "S", "p"),
            ("x", "S", "q"),
            ("y", "R", "small"),
            ("y", "S", "p"),
            ("z", "R", "big"),
            ("w", "R", "big"),
        ]);
        let v = examples(&g);
        assert_eq!(
            v["examples"][0]["query"],
            "SELECT ?x ?y WHERE { ?x R small . ?x S ?y }"
        );
    }

    #[test]
    fn an_empty_graph_has_no_examples() {
        let g = graph(&[]);
        assert_eq!(examples(&g)["examples"], json!([]));
    }
}

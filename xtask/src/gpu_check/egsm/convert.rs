//! The suites' `.graph` files in EGSM's input format. Both write `t N M`, `v id label degree` and
//! `e u v`, but EGSM's reader is stricter than gpsense's: it sizes each adjacency list from the
//! declared degree, reads exactly two numbers per edge (the queries' placeholder label in `e u v 0`
//! would shift every later token), needs every vertex before the edges that name it, and holds at
//! most one edge between two vertices. So the degrees are recomputed, vertices come first, the
//! placeholder label is dropped (as gpsense ignores it), repeated edges are merged (gpsense keeps
//! distinct triples too), and what EGSM cannot express is refused: self-loops, edge labels that
//! matter, and queries beyond its fixed bounds.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;

use anyhow::{bail, ensure, Context, Result};

/// EGSM's `MAX_VCOUNT` and `MAX_ECOUNT` (its `utils/config.h`): its reader exits on larger queries,
/// and its per-query bit sets are 16 bits wide.
pub const MAX_QUERY_VERTICES: usize = 16;
pub const MAX_QUERY_EDGES: usize = 32;

/// An undirected vertex-labelled graph as read from a suite file.
#[derive(Clone, Debug, PartialEq)]
pub struct LabelledGraph {
    pub labels: Vec<u32>,
    /// Distinct undirected edges, lower endpoint first, in the file's order.
    pub edges: Vec<(u32, u32)>,
    /// The edge labels the file gave, `None` standing for the edges without one.
    pub edge_labels: BTreeSet<Option<String>>,
}

/// Reads the suites' format: `t N M`, then `v id label [degree]` with ids in order, then
/// `e u v [label]`. Declared degrees are not trusted (they are recomputed); the declared counts are
/// checked, so that a file cut short does not pass for a smaller graph.
pub fn parse(text: &str) -> Result<LabelledGraph> {
    let mut declared: Option<(usize, usize)> = None;
    let mut g = LabelledGraph {
        labels: Vec::new(),
        edges: Vec::new(),
        edge_labels: BTreeSet::new(),
    };
    let mut seen = HashSet::new();
    let mut edge_lines = 0;
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let at = || format!("line {}: {:?}", i + 1, line);
        match fields.as_slice() {
            [] => {}
            ["t", n, m] if declared.is_none() => declared = Some((number(n)?, number(m)?)),
            ["v", id, label] | ["v", id, label, _] => {
                ensure!(declared.is_some(), "{}: a vertex before the `t` line", at());
                ensure!(
                    number(id)? == g.labels.len(),
                    "{}: vertex out of order (expected {})",
                    at(),
                    g.labels.len()
                );
                g.labels
                    .push(label.parse().with_context(|| format!("{}: label", at()))?);
            }
            ["e", u, v, rest @ ..] if rest.len() <= 1 => {
                let (u, v) = (number(u)?, number(v)?);
                let n = g.labels.len();
                ensure!(u < n && v < n, "{}: names an undeclared vertex", at());
                ensure!(u != v, "{}: a self-loop, which EGSM cannot hold", at());
                g.edge_labels.insert(rest.first().map(|l| (*l).to_owned()));
                let key = (u.min(v) as u32, u.max(v) as u32);
                if seen.insert(key) {
                    g.edges.push(key);
                }
                edge_lines += 1;
            }
            _ => bail!(
                "{}: expected `t N M`, `v id label [degree]` or `e u v [label]`",
                at()
            ),
        }
    }
    let (n, m) = declared.context("no `t N M` line")?;
    ensure!(
        g.labels.len() == n && edge_lines == m,
        "declares {n} vertices and {m} edges but holds {} and {edge_lines}",
        g.labels.len()
    );
    Ok(g)
}

fn number(s: &str) -> Result<usize> {
    s.parse()
        .with_context(|| format!("{s:?} is not a non-negative integer"))
}

impl LabelledGraph {
    /// EGSM's text: degrees counted, vertices first, two numbers per edge.
    pub fn to_egsm(&self) -> String {
        let mut degree = vec![0u32; self.labels.len()];
        for &(u, v) in &self.edges {
            degree[u as usize] += 1;
            degree[v as usize] += 1;
        }
        let mut s = format!("t {} {}\n", self.labels.len(), self.edges.len());
        for (id, (label, d)) in self.labels.iter().zip(&degree).enumerate() {
            let _ = writeln!(s, "v {id} {label} {d}");
        }
        for (u, v) in &self.edges {
            let _ = writeln!(s, "e {u} {v}");
        }
        s
    }

    /// Why EGSM cannot answer this query on `data` as gpsense does, or `None` when it can.
    /// gpsense ignores a query's edge labels only when the data's edges have none and the query
    /// gives all its edges one label (yeast's `e u v 0`) or none; EGSM always ignores them.
    pub fn refusal(&self, data: &LabelledGraph) -> Option<String> {
        if self.labels.len() > MAX_QUERY_VERTICES {
            return Some(format!(
                "{} vertices (EGSM takes at most {MAX_QUERY_VERTICES})",
                self.labels.len()
            ));
        }
        if self.edges.len() > MAX_QUERY_EDGES {
            return Some(format!(
                "{} edges (EGSM takes at most {MAX_QUERY_EDGES})",
                self.edges.len()
            ));
        }
        let unlabelled_data = data.edge_labels.iter().all(Option::is_none);
        if !unlabelled_data || self.edge_labels.len() > 1 {
            return Some("labelled edges (EGSM matches vertex labels only)".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A triangle 0-1-2 with a tail 2-3, labels 3 5 3 7; the edge 1-0 repeats 0-1 the other way.
    const QUERY: &str = "t 4 5\nv 0 3 9\nv 1 5 2\nv 2 3 3\nv 3 7 1\n\
                         e 0 1 0\ne 1 2 0\ne 0 2 0\ne 2 3 0\ne 1 0 0\n";

    #[test]
    fn writes_degrees_vertices_first_and_two_numbers_per_edge() {
        let g = parse(QUERY).unwrap();
        assert_eq!(g.labels, [3, 5, 3, 7]);
        assert_eq!(g.edges, [(0, 1), (1, 2), (0, 2), (2, 3)]);
        // The declared degree 9 is wrong: EGSM would size vertex 0's list by it.
        assert_eq!(
            g.to_egsm(),
            "t 4 4\nv 0 3 2\nv 1 5 2\nv 2 3 3\nv 3 7 1\ne 0 1\ne 1 2\ne 0 2\ne 2 3\n"
        );
        assert_eq!(parse(&g.to_egsm()).unwrap(), {
            let mut same = g.clone();
            same.edge_labels = BTreeSet::from([None]);
            same
        });
    }

    #[test]
    fn the_placeholder_edge_label_is_dropped_only_where_gpsense_ignores_it() {
        let data = parse("t 3 2\nv 0 3\nv 1 5\nv 2 3\ne 0 1\ne 1 2\n").unwrap();
        let query = parse(QUERY).unwrap();
        assert_eq!(query.refusal(&data), None);
        let two = parse("t 3 2\nv 0 3\nv 1 5\nv 2 3\ne 0 1 0\ne 1 2 1\n").unwrap();
        assert!(two.refusal(&data).unwrap().contains("labelled edges"));
        // One edge labelled and one not: two relations to gpsense.
        let mixed = parse("t 3 2\nv 0 3\nv 1 5\nv 2 3\ne 0 1 0\ne 1 2\n").unwrap();
        assert!(mixed.refusal(&data).is_some());
        let labelled_data = parse("t 2 1\nv 0 3\nv 1 5\ne 0 1 4\n").unwrap();
        assert!(query.refusal(&labelled_data).is_some());
    }

    #[test]
    fn queries_beyond_egsms_bounds_are_refused() {
        let data = parse("t 1 0\nv 0 1\n").unwrap();
        let path = |n: usize| {
            let mut s = format!("t {n} {}\n", n - 1);
            (0..n).for_each(|i| s.push_str(&format!("v {i} 1\n")));
            (1..n).for_each(|i| s.push_str(&format!("e {} {i}\n", i - 1)));
            parse(&s).unwrap()
        };
        assert_eq!(path(16).refusal(&data), None);
        assert_eq!(
            path(17).refusal(&data).unwrap(),
            "17 vertices (EGSM takes at most 16)"
        );
        // 9 vertices, all 36 edges of the clique.
        let mut s = String::from("t 9 36\n");
        (0..9).for_each(|i| s.push_str(&format!("v {i} 1\n")));
        for u in 0..9 {
            (u + 1..9).for_each(|v| s.push_str(&format!("e {u} {v}\n")));
        }
        let clique = parse(&s).unwrap();
        assert_eq!(
            clique.refusal(&data).unwrap(),
            "36 edges (EGSM takes at most 32)"
        );
    }

    #[test]
    fn bad_files_are_errors_naming_the_line() {
        let err = |t: &str| format!("{:#}", parse(t).unwrap_err());
        assert!(err("t 2 1\nv 0 1\nv 1 1\ne 1 1\n").contains("line 4: \"e 1 1\": a self-loop"));
        assert!(err("t 2 0\nv 1 1\n").contains("vertex out of order (expected 0)"));
        assert!(err("t 2 1\nv 0 1\nv 1 1\ne 0 2\n").contains("undeclared vertex"));
        assert!(err("t 2 1\nv 0 x\n").contains("line 2: \"v 0 x\": label"));
        assert!(err("t 3 0\nv 0 1\n").contains("declares 3 vertices and 0 edges but holds 1 and 0"));
        assert!(err("v 0 1\n").contains("a vertex before the `t` line"));
        assert!(err("t 1 0\nx\n").contains("expected `t N M`"));
        assert!(err("").contains("no `t N M` line"));
    }
}

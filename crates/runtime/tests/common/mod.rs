//! Shared by the oracle tests: a seeded generator (SplitMix64), random edge-labelled multigraphs and
//! random query graphs, and a brute-force oracle that checks the definition of a match directly.

use std::collections::HashSet;
use std::fmt::Write as _;

use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::{EdgeLabel, NodeKind, Projected, QueryEdge, QueryGraph, QueryNode};
use gpsense_runtime::Semantics;

/// The label a query node gets when its label does not occur in the data (the planner's
/// `ABSENT_LABEL`): it matches nothing.
pub const ABSENT: u32 = u32::MAX;

/// Environment variable `name` as a number, decimal or `0x` hex (as the oracles print seeds);
/// `default` when unset.
pub fn env_u64(name: &str, default: u64) -> u64 {
    let Ok(s) = std::env::var(name) else {
        return default;
    };
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => s.parse(),
    };
    parsed.unwrap_or_else(|_| panic!("{name}={s} is not a number"))
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, seedable, good enough for test cases.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.index(i + 1);
            items.swap(i, j);
        }
    }
}

/// A random data graph with its edges as a set, for the oracle.
pub struct TestGraph {
    pub g: KnowledgeGraph,
    pub nodes: usize,
    pub relations: usize,
    /// Distinct node labels (0 when the graph has none).
    pub label_names: usize,
    pub edges: HashSet<(u32, u16, u32)>,
}

impl TestGraph {
    pub fn has(&self, s: u32, r: u16, t: u32) -> bool {
        self.edges.contains(&(s, r, t))
    }

    pub fn has_any(&self, s: u32, t: u32) -> bool {
        (0..self.relations as u16).any(|r| self.has(s, r, t))
    }

    pub fn describe(&self) -> String {
        let mut s = format!(
            "graph: {} nodes, {} relations, {} node labels\n  edges:",
            self.nodes, self.relations, self.label_names
        );
        let mut edges: Vec<_> = self.edges.iter().copied().collect();
        edges.sort_unstable();
        for (a, r, b) in edges {
            let _ = write!(s, " {a}-{r}->{b}");
        }
        if self.g.has_node_labels() {
            s.push_str("\n  node labels:");
            for v in 0..self.nodes as u32 {
                let _ = write!(s, " {v}:{}", self.g.node_label(v));
            }
        }
        s
    }
}

/// 5-12 nodes, 2-3 relations, optional node labels, self-loops, parallel edges with different
/// relations. Node `i` is named `n<i>` and has id `i`; relation `j` is `r<j>` with id `j`.
pub fn random_graph(rng: &mut SplitMix64) -> TestGraph {
    let n = 5 + rng.index(8);
    let relations = 2 + rng.index(2);
    let mut b = GraphBuilder::new();
    for i in 0..n {
        assert_eq!(b.node(&format!("n{i}")).unwrap(), i as u32);
    }
    for j in 0..relations {
        assert_eq!(b.relation(&format!("r{j}")).unwrap(), j as u16);
    }
    if rng.chance(1, 2) {
        let kinds = 1 + rng.below(3);
        for i in 0..n {
            let l = rng.below(kinds);
            b.set_node_label(i as u32, &format!("L{l}")).unwrap();
        }
    }
    let m = n + rng.index(2 * n + 1);
    for _ in 0..m {
        let s = rng.index(n) as u32;
        let t = if rng.chance(1, 8) {
            s
        } else {
            rng.index(n) as u32
        };
        let r = rng.index(relations) as u16;
        b.add_edge(s, r, t, 1.0);
        if rng.chance(1, 5) {
            // A parallel edge with another relation.
            b.add_edge(s, (r + 1) % relations as u16, t, 1.0);
        }
    }
    let (g, _) = b.build().unwrap();
    g.validate().unwrap();
    let edges = g.edges().collect();
    TestGraph {
        nodes: n,
        relations,
        label_names: g.node_label_names().len(),
        edges,
        g,
    }
}

/// 1-5 query nodes, sometimes 6-8 (concepts bound to distinct random data nodes, variables), optional node labels
/// (sometimes one the data lacks), fixed and variable edges (shared variables included), self-loops,
/// sometimes disconnected; random projection (possibly empty), DISTINCT and LIMIT.
pub fn random_query(rng: &mut SplitMix64, tg: &TestGraph) -> QueryGraph {
    // Now and then a wider query (6-8 nodes, always connected, more edge variables).
    let wide = rng.chance(1, 6);
    let k = if wide {
        6 + rng.index(3)
    } else {
        1 + rng.index(5)
    };
    let max_vars = if wide { 5 } else { 3 };
    let mut used = Vec::new();
    let mut concept_sets: Vec<Vec<u32>> = Vec::new();
    let nodes: Vec<QueryNode> = (0..k)
        .map(|i| {
            let kind = if rng.chance(1, 4) {
                let v = rng.index(tg.nodes) as u32;
                if used.contains(&v) {
                    NodeKind::Variable
                } else if rng.chance(1, 3) {
                    // A name with several data nodes (overlapping other concepts' is allowed).
                    let mut set: Vec<u32> = (0..1 + rng.index(4))
                        .map(|_| rng.index(tg.nodes) as u32)
                        .chain([v])
                        .collect();
                    set.sort_unstable();
                    set.dedup();
                    if set.len() < 2 || concept_sets.contains(&set) {
                        NodeKind::Variable
                    } else {
                        concept_sets.push(set);
                        NodeKind::ConceptSet(concept_sets.len() - 1)
                    }
                } else {
                    used.push(v);
                    NodeKind::Concept(v)
                }
            } else {
                NodeKind::Variable
            };
            let label = if rng.chance(1, 4) {
                if tg.g.has_node_labels() {
                    match rng.below(20) {
                        0 => Some(ABSENT),
                        1 => Some(tg.label_names as u32),
                        _ => Some(rng.below(tg.label_names as u64) as u32),
                    }
                } else {
                    // The graph API gives every node label 0 when the graph has none.
                    Some(rng.below(2) as u32)
                }
            } else {
                None
            };
            let name = match kind {
                NodeKind::Concept(v) => format!("n{v}"),
                NodeKind::ConceptSet(s) => format!("set{s}"),
                NodeKind::Variable => format!("?v{i}"),
            };
            QueryNode { name, kind, label }
        })
        .collect();
    let mut vars = 0usize;
    let mut edges: Vec<QueryEdge> = Vec::new();
    let mut label = |rng: &mut SplitMix64| {
        if rng.chance(3, 5) {
            EdgeLabel::Fixed(rng.index(tg.relations) as u16)
        } else {
            let k = rng.index((vars + 1).min(max_vars));
            vars = vars.max(k + 1);
            EdgeLabel::Variable(k)
        }
    };
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    if wide || rng.chance(2, 3) {
        // Connected: a random tree, then a few more edges.
        for i in 1..k {
            let j = rng.index(i);
            pairs.push(if rng.chance(1, 2) { (i, j) } else { (j, i) });
        }
        for _ in 0..rng.index(if wide { 6 } else { 3 }) {
            let s = rng.index(k);
            let t = if rng.chance(1, 5) { s } else { rng.index(k) };
            pairs.push((s, t));
        }
    } else {
        for _ in 0..rng.index(k + 2) {
            let s = rng.index(k);
            let t = if rng.chance(1, 5) { s } else { rng.index(k) };
            pairs.push((s, t));
        }
    }
    for (s, t) in pairs {
        let e = QueryEdge {
            source: s,
            target: t,
            label: label(rng),
        };
        if !edges.contains(&e) {
            edges.push(e);
        }
    }
    // Only variables some edge uses (a dropped duplicate may have created one).
    let mut renumber: Vec<Option<usize>> = vec![None; vars];
    let mut next = 0;
    for e in &mut edges {
        if let EdgeLabel::Variable(v) = e.label {
            let id = *renumber[v].get_or_insert_with(|| {
                next += 1;
                next - 1
            });
            e.label = EdgeLabel::Variable(id);
        }
    }
    let edge_variables: Vec<String> = (0..next).map(|i| format!("?r{i}")).collect();
    let mut projection: Vec<Projected> = (0..k).map(Projected::Node).collect();
    projection.extend((0..next).map(Projected::Edge));
    projection.retain(|_| rng.chance(1, 2));
    rng.shuffle(&mut projection);
    QueryGraph {
        nodes,
        edges,
        edge_variables,
        concept_sets,
        projection,
        distinct: rng.chance(1, 4),
        limit: rng.chance(1, 4).then(|| rng.below(8)),
    }
}

/// What the definition says: every match (data node per query node, relation per edge variable).
pub struct Answer {
    /// Matches (before projection).
    pub matches: u64,
    /// Projected rows, one per match, DISTINCT applied when the query asks; sorted.
    pub rows: Vec<Vec<u32>>,
}

/// Brute force over all assignments of data nodes to query nodes (pruned only by the definition
/// itself: an assignment failing a condition on its first nodes fails whatever follows), then all
/// bindings of relations to edge variables. `None` when there are more than `cap` matches.
pub fn oracle(tg: &TestGraph, q: &QueryGraph, semantics: Semantics, cap: u64) -> Option<Answer> {
    let k = q.nodes.len();
    let mut assign = vec![0u32; k];
    let mut answer = Answer {
        matches: 0,
        rows: Vec::new(),
    };
    if !assign_from(tg, q, semantics, 0, &mut assign, &mut answer, cap) {
        return None;
    }
    answer.rows.sort_unstable();
    if q.distinct {
        answer.rows.dedup();
    }
    Some(answer)
}

/// Whether query node `i` may be `v` given the earlier nodes (`assign[..i]`).
fn node_ok(tg: &TestGraph, q: &QueryGraph, semantics: Semantics, i: usize, assign: &[u32]) -> bool {
    let v = assign[i];
    let node = &q.nodes[i];
    if q.concept_nodes(i).is_some_and(|nodes| !nodes.contains(&v)) {
        return false;
    }
    if let Some(l) = node.label {
        if tg.g.node_label(v) != l {
            return false;
        }
    }
    if semantics == Semantics::Iso && assign[..i].contains(&v) {
        return false;
    }
    // Every edge between `i` and earlier nodes (or a self-loop on `i`) exists with some relation
    // that its label allows; variable bindings are checked together at the end.
    q.edges.iter().all(|e| {
        let (s, t) = (e.source, e.target);
        if s.max(t) != i {
            return true;
        }
        let (a, b) = (assign[s], assign[t]);
        match e.label {
            EdgeLabel::Fixed(r) => tg.has(a, r, b),
            EdgeLabel::Variable(_) => tg.has_any(a, b),
        }
    })
}

fn assign_from(
    tg: &TestGraph,
    q: &QueryGraph,
    semantics: Semantics,
    i: usize,
    assign: &mut [u32],
    answer: &mut Answer,
    cap: u64,
) -> bool {
    if i == q.nodes.len() {
        return bind_variables(tg, q, assign, answer, cap);
    }
    for v in 0..tg.nodes as u32 {
        assign[i] = v;
        if node_ok(tg, q, semantics, i, assign)
            && !assign_from(tg, q, semantics, i + 1, assign, answer, cap)
        {
            return false;
        }
    }
    true
}

/// Every binding of relations to edge variables under which every edge exists.
fn bind_variables(
    tg: &TestGraph,
    q: &QueryGraph,
    assign: &[u32],
    answer: &mut Answer,
    cap: u64,
) -> bool {
    let vars = q.edge_variables.len();
    let r = tg.relations as u32;
    let combos = r.pow(vars as u32);
    let mut bind = vec![0u16; vars];
    for combo in 0..combos {
        let mut c = combo;
        for b in bind.iter_mut() {
            *b = (c % r) as u16;
            c /= r;
        }
        let ok = q.edges.iter().all(|e| {
            let rel = match e.label {
                EdgeLabel::Fixed(x) => x,
                EdgeLabel::Variable(k) => bind[k],
            };
            tg.has(assign[e.source], rel, assign[e.target])
        });
        if !ok {
            continue;
        }
        answer.matches += 1;
        if answer.matches > cap {
            return false;
        }
        answer.rows.push(
            q.projection
                .iter()
                .map(|p| match *p {
                    Projected::Node(u) => assign[u],
                    Projected::Edge(k) => bind[k] as u32,
                })
                .collect(),
        );
    }
    true
}

/// Whether sorted `small` is a sub-multiset of sorted `big`.
pub fn sub_multiset(small: &[Vec<u32>], big: &[Vec<u32>]) -> bool {
    let mut j = 0;
    for row in small {
        while j < big.len() && big[j] < *row {
            j += 1;
        }
        if j == big.len() || big[j] != *row {
            return false;
        }
        j += 1;
    }
    true
}

//! The query's static shape for the search: per connected component a root (where the search enters
//! it), breadth-first order from it (DAF's query DAG, shown by `--explain`), each node's neighbours
//! with their candidate-space lists, its variable edges, and the leaves matched last.

use gpsense_planner::{EdgeLabel, Plan, QueryGraph};

use crate::space::CandidateSpace;

/// All query nodes; also "no failing set can be claimed" (an embedding was found below, or work was
/// given away).
pub const ALL: u64 = u64::MAX;

#[inline]
pub fn bit(u: usize) -> u64 {
    1u64 << u
}

/// A variable edge seen from one endpoint (a self-loop is seen once): bound when the later of its
/// endpoints is matched.
#[derive(Clone, Copy, Debug)]
pub struct VarEdge {
    /// The other endpoint (the node itself for a self-loop).
    pub other: usize,
    /// Whether the node is the edge's source.
    pub outgoing: bool,
    /// The edge variable.
    pub var: usize,
}

/// A query neighbour and the candidate-space lists toward it (more than one for parallel edges).
#[derive(Clone, Debug)]
pub struct Neighbour {
    pub node: usize,
    /// Indexes into `CandidateSpace::edges`, all from the node to `node`.
    pub edges: Vec<usize>,
}

#[derive(Clone, Debug)]
pub struct Dag {
    pub n: usize,
    pub roots: Vec<usize>,
    /// Breadth-first order, component after component (for `--explain`).
    pub order: Vec<usize>,
    pub parents: Vec<Vec<usize>>,
    /// Per node, its variable edges.
    pub var_edges: Vec<Vec<VarEdge>>,
    /// Per node, its query neighbours and the candidate-space lists toward each (the search
    /// intersects them as neighbours are matched).
    pub neighbours: Vec<Vec<Neighbour>>,
    /// Nodes with one fixed-relation edge and nothing else, not a root: matched last, and counted
    /// combinatorially when only a count is wanted.
    pub leaves: u64,
}

impl Dag {
    /// Roots at the node with the fewest candidates per incident edge (DAF's choice), then breadth
    /// first, neighbours with fewer candidates first.
    pub fn new(q: &QueryGraph, space: &CandidateSpace) -> Dag {
        let n = q.nodes.len();
        let mut adjacent = vec![Vec::new(); n];
        let mut incidence = vec![0usize; n];
        for e in &q.edges {
            incidence[e.source] += 1;
            if e.source != e.target {
                incidence[e.target] += 1;
                adjacent[e.source].push(e.target);
                adjacent[e.target].push(e.source);
            }
        }
        for a in &mut adjacent {
            a.sort_unstable();
            a.dedup();
        }
        let size = |u: usize| space.cands[u].len() as f64;
        let mut position = vec![usize::MAX; n];
        let mut order = Vec::with_capacity(n);
        let mut roots = Vec::new();
        while order.len() < n {
            let root = (0..n)
                .filter(|&u| position[u] == usize::MAX)
                .min_by(|&a, &b| {
                    let ka = size(a) / adjacent[a].len().max(1) as f64;
                    let kb = size(b) / adjacent[b].len().max(1) as f64;
                    ka.total_cmp(&kb)
                })
                .unwrap_or(0);
            roots.push(root);
            position[root] = order.len();
            order.push(root);
            let mut head = order.len() - 1;
            while head < order.len() {
                let u = order[head];
                head += 1;
                let mut next: Vec<usize> = adjacent[u]
                    .iter()
                    .copied()
                    .filter(|&w| position[w] == usize::MAX)
                    .collect();
                next.sort_by_key(|&w| (space.cands[w].len(), w));
                for w in next {
                    position[w] = order.len();
                    order.push(w);
                }
            }
        }
        let mut parents = vec![Vec::new(); n];
        for u in 0..n {
            for &w in &adjacent[u] {
                if position[w] < position[u] {
                    parents[u].push(w);
                }
            }
        }
        let mut var_edges = vec![Vec::new(); n];
        for e in &q.edges {
            if let EdgeLabel::Variable(var) = e.label {
                let (a, b) = (e.source, e.target);
                var_edges[a].push(VarEdge {
                    other: b,
                    outgoing: true,
                    var,
                });
                if a != b {
                    var_edges[b].push(VarEdge {
                        other: a,
                        outgoing: false,
                        var,
                    });
                }
            }
        }
        let neighbours = (0..n)
            .map(|u| {
                adjacent[u]
                    .iter()
                    .map(|&w| Neighbour {
                        node: w,
                        edges: space.from[u]
                            .iter()
                            .copied()
                            .filter(|&k| space.edges[k].to == w)
                            .collect(),
                    })
                    .collect()
            })
            .collect();
        let mut leaves = 0u64;
        for u in 0..n {
            let fixed = q.edges.iter().all(|e| {
                (e.source != u && e.target != u) || matches!(e.label, EdgeLabel::Fixed(_))
            });
            if incidence[u] == 1 && adjacent[u].len() == 1 && fixed && !roots.contains(&u) {
                leaves |= bit(u);
            }
        }
        Dag {
            n,
            roots,
            order,
            parents,
            var_edges,
            neighbours,
            leaves,
        }
    }

    /// The DAG as a plan: its breadth-first order, with each node's parents when `explain`.
    pub fn describe(&self, q: &QueryGraph, space: &CandidateSpace, explain: bool) -> Plan {
        let mut components = Vec::new();
        let mut rationale = Vec::new();
        for (i, &u) in self.order.iter().enumerate() {
            if !explain {
                if self.roots.contains(&u) {
                    components.push(i..i + 1);
                } else if let Some(last) = components.last_mut() {
                    last.end = i + 1;
                }
                continue;
            }
            let name = &q.nodes[u].name;
            let size = space.cands[u].len();
            if self.roots.contains(&u) {
                components.push(i..i);
                rationale.push(format!("{}. {name}: DAG root, {size} candidates", i + 1));
            } else {
                let parents: Vec<&str> = self.parents[u]
                    .iter()
                    .map(|&p| q.nodes[p].name.as_str())
                    .collect();
                let leaf = if self.leaves & bit(u) != 0 {
                    ", leaf (matched last)"
                } else {
                    ""
                };
                rationale.push(format!(
                    "{}. {name}: parents {}, {size} candidates{leaf}",
                    i + 1,
                    parents.join(", ")
                ));
            }
            if let Some(last) = components.last_mut() {
                last.end = i + 1;
            }
        }
        if explain {
            rationale.push(
                "search order: adaptive, the extendable node (a neighbour matched) with the \
                 fewest extendable candidates, leaves last"
                    .to_owned(),
            );
        }
        Plan {
            order: self.order.clone(),
            components,
            rationale,
        }
    }
}

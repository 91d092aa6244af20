//! The query DAG the search runs over (DAF's): per connected component a root, edges directed from
//! the earlier to the later node of a breadth-first order. A node's candidates at search time come
//! from its parents' lists only, which is what makes its ancestors a valid failing set.

use gpsense_planner::{EdgeLabel, Plan, QueryGraph};

use crate::space::CandidateSpace;

/// All query nodes; also "no failing set can be claimed" (an embedding was found below, or work was
/// given away).
pub const ALL: u64 = u64::MAX;

#[inline]
pub fn bit(u: usize) -> u64 {
    1u64 << u
}

/// A variable edge between a node and a parent (or a variable self-loop): bound when the node is.
#[derive(Clone, Copy, Debug)]
pub struct VarEdge {
    /// The parent (the node itself for a self-loop).
    pub other: usize,
    /// Whether the node is the edge's source.
    pub outgoing: bool,
    /// The edge variable.
    pub var: usize,
}

#[derive(Clone, Debug)]
pub struct Dag {
    pub n: usize,
    pub roots: Vec<usize>,
    /// Breadth-first order, component after component (for `--explain`).
    pub order: Vec<usize>,
    pub parents: Vec<Vec<usize>>,
    pub children: Vec<Vec<usize>>,
    /// Each node and its ancestors, as a bit set.
    pub anc: Vec<u64>,
    /// Per node, the candidate-space lists (indexes into `CandidateSpace::edges`) from its parents.
    pub from_parents: Vec<Vec<usize>>,
    pub var_edges: Vec<Vec<VarEdge>>,
    /// Nodes with one fixed-relation edge and nothing else, not a root: matched last, and counted
    /// combinatorially when only a count is wanted.
    pub leaves: u64,
    /// DAF's path-size weights: per node and candidate index, an estimate of the embeddings of the
    /// node's path tree below that candidate (the search extends the node whose extendable
    /// candidates weigh least).
    pub weights: Vec<Vec<f64>>,
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
        let mut children = vec![Vec::new(); n];
        for u in 0..n {
            for &w in &adjacent[u] {
                if position[w] < position[u] {
                    parents[u].push(w);
                    children[w].push(u);
                }
            }
        }
        let mut anc = vec![0u64; n];
        for &u in &order {
            anc[u] = parents[u].iter().fold(bit(u), |a, &p| a | anc[p]);
        }
        let from_parents = (0..n)
            .map(|u| {
                (0..space.edges.len())
                    .filter(|&k| {
                        space.edges[k].to == u && parents[u].contains(&space.edges[k].from)
                    })
                    .collect()
            })
            .collect();
        let mut var_edges = vec![Vec::new(); n];
        for e in &q.edges {
            let EdgeLabel::Variable(var) = e.label else {
                continue;
            };
            // The edge is bound with its later endpoint.
            let (u, other, outgoing) = if position[e.source] >= position[e.target] {
                (e.source, e.target, true)
            } else {
                (e.target, e.source, false)
            };
            var_edges[u].push(VarEdge {
                other,
                outgoing,
                var,
            });
        }
        let mut leaves = 0u64;
        for u in 0..n {
            let fixed = q.edges.iter().all(|e| {
                (e.source != u && e.target != u) || matches!(e.label, EdgeLabel::Fixed(_))
            });
            if incidence[u] == 1 && adjacent[u].len() == 1 && fixed && !roots.contains(&u) {
                leaves |= bit(u);
            }
        }
        let weights = path_weights(&order, &parents, &children, space);
        Dag {
            n,
            roots,
            order,
            parents,
            children,
            anc,
            from_parents,
            var_edges,
            leaves,
            weights,
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
                "search order: adaptive, the extendable node whose candidates have the least \
                 path-size weight (the fewest candidates under a limit), leaves last"
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

/// Bottom-up over the DAG: a candidate's weight is 1 at a node without single-parent children, else
/// the least, over those children, of the summed weights of its list toward the child.
fn path_weights(
    order: &[usize],
    parents: &[Vec<usize>],
    children: &[Vec<usize>],
    space: &CandidateSpace,
) -> Vec<Vec<f64>> {
    let mut w: Vec<Vec<f64>> = space.cands.iter().map(|c| vec![1.0; c.len()]).collect();
    for &u in order.iter().rev() {
        let tree: Vec<usize> = children[u]
            .iter()
            .copied()
            .filter(|&c| parents[c].len() == 1)
            .collect();
        if tree.is_empty() {
            continue;
        }
        let edges: Vec<usize> = tree
            .iter()
            .filter_map(|&c| {
                space.from[u]
                    .iter()
                    .copied()
                    .find(|&k| space.edges[k].to == c)
            })
            .collect();
        for i in 0..space.cands[u].len() {
            let mut best = f64::INFINITY;
            for &k in &edges {
                let e = &space.edges[k];
                let sum: f64 = e.list(i as u32).iter().map(|&j| w[e.to][j as usize]).sum();
                best = best.min(sum);
            }
            w[u][i] = best;
        }
    }
    w
}

//! The query's static shape for the search: per connected component a root (where the search enters
//! it), breadth-first order from it (DAF's query DAG, shown by `--explain`), each node's neighbours
//! with their candidate-space lists, its variable edges, and the leaves matched last.

use gpsense_planner::{EdgeLabel, NodeKind, Plan, QueryGraph};

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

/// A query neighbour and the candidate-space lists toward it (more than one for parallel edges):
/// [`Dag::lists`].
#[derive(Clone, Copy, Debug)]
pub struct Neighbour {
    pub node: usize,
    start: u32,
    end: u32,
}

/// Per-node lists are flat arrays indexed by `*_at` (a query allocates a handful of arrays, not
/// one per node).
#[derive(Clone, Debug)]
pub struct Dag {
    pub n: usize,
    pub roots: Vec<usize>,
    /// Breadth-first order, component after component (for `--explain`).
    pub order: Vec<usize>,
    /// Per node, its query neighbours (ascending) and the candidate-space lists toward each (the
    /// search intersects them as neighbours are matched): `nbs[nb_at[u]..nb_at[u + 1]]`.
    nb_at: Vec<u32>,
    nbs: Vec<Neighbour>,
    /// Indexes into `CandidateSpace::edges`, by neighbour.
    nb_edges: Vec<u32>,
    /// Per node, its variable edges: `vars[var_at[u]..var_at[u + 1]]`.
    var_at: Vec<u32>,
    vars: Vec<VarEdge>,
    /// The most neighbours any node has.
    pub max_neighbours: usize,
    /// Per node, its query neighbours as a bit set.
    pub adjacent: Vec<u64>,
    /// Nodes with a variable edge.
    pub with_vars: u64,
    /// Nodes with one fixed-relation edge and nothing else, not a root: matched last, and counted
    /// combinatorially when only a count is wanted.
    pub leaves: u64,
    /// Per node, the other nodes whose candidates may share a data node with its own: all but
    /// another fixed concept, and on a graph with node labels (elsewhere the filters ignore them)
    /// a variable of another label. A leaf apart from every other leaf
    /// being counted is counted alone, by its free candidates (no group, no shared nodes).
    pub may_share: Vec<u64>,
}

/// `at` as offsets of groups sorted by key: `at[k]..at[k + 1]` is group `k`'s range.
fn offsets(keys: impl Iterator<Item = usize>, n: usize) -> Vec<u32> {
    let mut at = vec![0u32; n + 1];
    for k in keys {
        at[k + 1] += 1;
    }
    for k in 0..n {
        at[k + 1] += at[k];
    }
    at
}

impl Dag {
    #[inline]
    pub fn neighbours(&self, u: usize) -> &[Neighbour] {
        &self.nbs[self.nb_at[u] as usize..self.nb_at[u + 1] as usize]
    }

    /// The candidate-space edges from a node toward neighbour `nb`.
    #[inline]
    pub fn lists(&self, nb: &Neighbour) -> &[u32] {
        &self.nb_edges[nb.start as usize..nb.end as usize]
    }

    #[inline]
    pub fn var_edges(&self, u: usize) -> &[VarEdge] {
        &self.vars[self.var_at[u] as usize..self.var_at[u + 1] as usize]
    }

    /// Roots at the node with the fewest candidates per incident edge (DAF's choice), then breadth
    /// first, neighbours with fewer candidates first.
    pub fn new(q: &QueryGraph, space: &CandidateSpace, labelled: bool) -> Dag {
        let n = q.nodes.len();
        let mut incidence = vec![0usize; n];
        let mut pairs: Vec<(usize, usize)> = Vec::with_capacity(2 * q.edges.len());
        for e in &q.edges {
            incidence[e.source] += 1;
            if e.source != e.target {
                incidence[e.target] += 1;
                pairs.push((e.source, e.target));
                pairs.push((e.target, e.source));
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let nb_at = offsets(pairs.iter().map(|p| p.0), n);
        let mut nb_edges = Vec::with_capacity(space.edges.len());
        let nbs: Vec<Neighbour> = pairs
            .iter()
            .map(|&(u, w)| {
                let start = nb_edges.len() as u32;
                nb_edges.extend(
                    space
                        .from(u)
                        .iter()
                        .filter(|&&k| space.edges[k as usize].to == w),
                );
                Neighbour {
                    node: w,
                    start,
                    end: nb_edges.len() as u32,
                }
            })
            .collect();
        let degree = |u: usize| (nb_at[u + 1] - nb_at[u]) as usize;
        let size = |u: usize| space.cand_count(u) as f64;
        let mut position = vec![usize::MAX; n];
        let mut order = Vec::with_capacity(n);
        let mut roots = Vec::new();
        let mut next = Vec::new();
        while order.len() < n {
            let root = (0..n)
                .filter(|&u| position[u] == usize::MAX)
                .min_by(|&a, &b| {
                    let ka = size(a) / degree(a).max(1) as f64;
                    let kb = size(b) / degree(b).max(1) as f64;
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
                next.clear();
                next.extend(
                    nbs[nb_at[u] as usize..nb_at[u + 1] as usize]
                        .iter()
                        .map(|nb| nb.node)
                        .filter(|&w| position[w] == usize::MAX),
                );
                next.sort_by_key(|&w| (space.cand_count(w), w));
                for &w in &next {
                    position[w] = order.len();
                    order.push(w);
                }
            }
        }
        let mut vars: Vec<(usize, VarEdge)> = Vec::new();
        for e in &q.edges {
            if let EdgeLabel::Variable(var) = e.label {
                let (a, b) = (e.source, e.target);
                vars.push((
                    a,
                    VarEdge {
                        other: b,
                        outgoing: true,
                        var,
                    },
                ));
                if a != b {
                    vars.push((
                        b,
                        VarEdge {
                            other: a,
                            outgoing: false,
                            var,
                        },
                    ));
                }
            }
        }
        // Stable: each node's variable edges keep the query's edge order.
        vars.sort_by_key(|v| v.0);
        let var_at = offsets(vars.iter().map(|v| v.0), n);
        let mut leaves = 0u64;
        for (u, &edges) in incidence.iter().enumerate() {
            let fixed = q.edges.iter().all(|e| {
                (e.source != u && e.target != u) || matches!(e.label, EdgeLabel::Fixed(_))
            });
            if edges == 1 && degree(u) == 1 && fixed && !roots.contains(&u) {
                leaves |= bit(u);
            }
        }
        let mut adjacent = vec![0u64; n];
        for &(u, w) in &pairs {
            adjacent[u] |= bit(w);
        }
        let with_vars = vars.iter().fold(0, |set, v| set | bit(v.0));
        // Two concepts apart, or two labelled variables of a labelled graph; a concept's label
        // is not known here, so a concept and a variable may share.
        let apart = |u: usize, w: usize| match (q.nodes[u].kind, q.nodes[w].kind) {
            (NodeKind::Concept(a), NodeKind::Concept(b)) => a != b,
            (NodeKind::Variable, NodeKind::Variable) => {
                labelled
                    && matches!((q.nodes[u].label, q.nodes[w].label),
                        (Some(a), Some(b)) if a != b)
            }
            _ => false,
        };
        let may_share = (0..n)
            .map(|u| {
                (0..n)
                    .filter(|&w| w != u && !apart(u, w))
                    .fold(0, |set, w| set | bit(w))
            })
            .collect();
        Dag {
            may_share,
            n,
            roots,
            order,
            adjacent,
            with_vars,
            max_neighbours: (0..n).map(degree).max().unwrap_or(0),
            nb_at,
            nbs,
            nb_edges,
            var_at,
            vars: vars.into_iter().map(|v| v.1).collect(),
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
            let size = space.cand_count(u);
            if self.roots.contains(&u) {
                components.push(i..i);
                rationale.push(format!(
                    "{}. {name}: DAG root, {}",
                    i + 1,
                    gpsense_planner::counted(size as u64, "candidate", "candidates")
                ));
            } else {
                // Its parents: the neighbours before it in the order.
                let at = |w: usize| self.order.iter().position(|&x| x == w);
                let parents: Vec<&str> = self
                    .neighbours(u)
                    .iter()
                    .filter(|nb| at(nb.node) < at(u))
                    .map(|nb| q.nodes[nb.node].name.as_str())
                    .collect();
                let leaf = if self.leaves & bit(u) != 0 {
                    ", leaf (matched last)"
                } else {
                    ""
                };
                rationale.push(format!(
                    "{}. {name}: parents {}, {}{leaf}",
                    i + 1,
                    parents.join(", "),
                    gpsense_planner::counted(size as u64, "candidate", "candidates")
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

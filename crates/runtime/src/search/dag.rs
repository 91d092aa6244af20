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

/// Per node its neighbours, ascending (`nbs[nb_at[u]..nb_at[u + 1]]`), and the candidate-space
/// edges toward each, in edge order (`nb_edges`).
fn neighbours(adjacent: &[u64], space: &CandidateSpace) -> (Vec<u32>, Vec<Neighbour>, Vec<u32>) {
    let n = adjacent.len();
    let mut nb_at = Vec::with_capacity(n + 1);
    nb_at.push(0u32);
    let total: u32 = adjacent.iter().map(|a| a.count_ones()).sum();
    let mut nbs = Vec::with_capacity(total as usize);
    let mut nb_edges = Vec::with_capacity(space.edges.len());
    let mut toward: Vec<(usize, u32)> = Vec::new();
    for (u, &set) in adjacent.iter().enumerate() {
        // This node's edges by far end, each end's in edge order (a space whose filter emptied a
        // node has no edges: every neighbour gets an empty list).
        toward.clear();
        toward.extend(
            space
                .from(u)
                .iter()
                .map(|&k| (space.edges[k as usize].to, k)),
        );
        toward.sort_unstable();
        let mut i = 0;
        let mut rest = set;
        while rest != 0 {
            let w = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            let start = nb_edges.len() as u32;
            while i < toward.len() && toward[i].0 < w {
                i += 1;
            }
            while i < toward.len() && toward[i].0 == w {
                nb_edges.push(toward[i].1);
                i += 1;
            }
            nbs.push(Neighbour {
                node: w,
                start,
                end: nb_edges.len() as u32,
            });
        }
        nb_at.push(nbs.len() as u32);
    }
    (nb_at, nbs, nb_edges)
}

/// Roots at the node with the fewest candidates per incident edge (DAF's choice), then breadth
/// first, neighbours with fewer candidates first; a root per connected component.
fn breadth_first(n: usize, adjacent: &[u64], space: &CandidateSpace) -> (Vec<usize>, Vec<usize>) {
    let degree = |u: usize| adjacent[u].count_ones() as usize;
    let size = |u: usize| space.cand_count(u) as f64;
    let mut seen = 0u64;
    let mut order = Vec::with_capacity(n);
    let mut roots = Vec::new();
    let mut next = Vec::new();
    while order.len() < n {
        let root = (0..n)
            .filter(|&u| seen & bit(u) == 0)
            .min_by(|&a, &b| {
                let ka = size(a) / degree(a).max(1) as f64;
                let kb = size(b) / degree(b).max(1) as f64;
                ka.total_cmp(&kb)
            })
            .unwrap_or(0);
        roots.push(root);
        seen |= bit(root);
        order.push(root);
        let mut head = order.len() - 1;
        while head < order.len() {
            let u = order[head];
            head += 1;
            next.clear();
            let mut rest = adjacent[u] & !seen;
            while rest != 0 {
                next.push(rest.trailing_zeros() as usize);
                rest &= rest - 1;
            }
            next.sort_by_key(|&w| (space.cand_count(w), w));
            for &w in &next {
                seen |= bit(w);
                order.push(w);
            }
        }
    }
    (roots, order)
}

/// Per node, the other nodes whose candidates may share a data node with its own: all but another
/// fixed concept, and on a graph with node labels a variable of another label (a concept's label
/// is not known here, so a concept and a variable may share).
fn may_share(q: &QueryGraph, labelled: bool) -> Vec<u64> {
    let n = q.nodes.len();
    let all = if n == 64 { ALL } else { bit(n) - 1 };
    // Each node's class: nodes of two different classes of one kind are apart.
    let class = |u: usize| match (q.nodes[u].kind, q.nodes[u].label) {
        (NodeKind::Concept(a), _) => Some((0, a)),
        (NodeKind::Variable, Some(l)) if labelled => Some((1, l)),
        _ => None,
    };
    let classes: Vec<Option<(u8, u32)>> = (0..n).map(class).collect();
    (0..n)
        .map(|u| {
            let apart = match classes[u] {
                None => 0,
                Some((kind, c)) => classes
                    .iter()
                    .enumerate()
                    .filter(|(_, o)| matches!(o, Some((k, d)) if *k == kind && *d != c))
                    .fold(0, |set, (w, _)| set | bit(w)),
            };
            all & !apart & !bit(u)
        })
        .collect()
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
        // Linear in the query and its candidate-space edges, on bit sets and flat arrays: it runs
        // once per query, and HPRD's 16-node queries take a few microseconds in all (sorting edge
        // pairs and a pass over all edges per node were a sixth of their instructions).
        let n = q.nodes.len();
        let mut incidence = vec![0u32; n];
        let mut adjacent = vec![0u64; n];
        for e in &q.edges {
            incidence[e.source] += 1;
            if e.source != e.target {
                incidence[e.target] += 1;
                adjacent[e.source] |= bit(e.target);
                adjacent[e.target] |= bit(e.source);
            }
        }
        let (nb_at, nbs, nb_edges) = neighbours(&adjacent, space);
        let degree = |u: usize| adjacent[u].count_ones() as usize;
        let (roots, order) = breadth_first(n, &adjacent, space);
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
        let with_vars = vars.iter().fold(0, |set, v| set | bit(v.0));
        let root_set = roots.iter().fold(0, |set, &r| set | bit(r));
        let leaves = (0..n)
            .filter(|&u| {
                incidence[u] == 1 && degree(u) == 1 && (with_vars | root_set) & bit(u) == 0
            })
            .fold(0, |set, u| set | bit(u));
        let max_neighbours = (0..n).map(degree).max().unwrap_or(0);
        Dag {
            may_share: may_share(q, labelled),
            n,
            roots,
            order,
            adjacent,
            with_vars,
            max_neighbours,
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

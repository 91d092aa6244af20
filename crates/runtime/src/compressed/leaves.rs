//! Counting leaves on the original graph instead of expanding them, when only a count is wanted.
//!
//! A leaf here is a variable query node with exactly one query edge, of a fixed relation, to a
//! node that stays (the *core*). Once the core is placed on original data nodes, a leaf's matches
//! are its parent's original list for that relation (with the leaf's node label), whatever
//! hyper-node they fall in; leaves tie to each other and to the core only through injectivity. So
//! the core alone is matched on the compressed graph and expanded, and the leaves are counted per
//! core expansion as a product (hom) or as injective assignments of groups of leaves with the very
//! same list (iso, the dfs search's [`count_injective`]). Exact: every edge of the core is checked
//! on the original during expansion, and a leaf's list is exactly the data nodes its edge allows.

use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_planner::{EdgeLabel, Projected, QueryGraph};

use crate::search::leaves::{count_injective, falling, product, Counter, Group, Uncounted};

/// A query node counted, not expanded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Leaf {
    /// The core node its one edge goes to.
    pub parent: usize,
    /// Whether that data edge goes from the parent to the leaf.
    pub from_parent: bool,
    pub relation: LabelId,
    /// The node label a match needs (`None`: any).
    pub label: Option<u32>,
    pub node: usize,
}

impl Leaf {
    /// What the leaf's list depends on: leaves with equal keys have the same list.
    fn key(&self) -> (usize, bool, LabelId, Option<u32>) {
        (self.parent, self.from_parent, self.relation, self.label)
    }
}

/// The leaves of `q`, grouped by key (equal keys adjacent). Of two variable nodes that are each
/// other's only neighbour, the later is the leaf.
pub fn leaves_of(q: &QueryGraph) -> Vec<Leaf> {
    let mut degree = vec![0usize; q.nodes.len()];
    for e in &q.edges {
        degree[e.source] += 1;
        degree[e.target] += 1;
    }
    let lone = |u: usize| degree[u] == 1 && !q.nodes[u].is_concept();
    let mut leaves = Vec::new();
    for e in &q.edges {
        let EdgeLabel::Fixed(relation) = e.label else {
            continue;
        };
        for (node, parent, from_parent) in [(e.target, e.source, true), (e.source, e.target, false)]
        {
            if node == parent || !lone(node) || (lone(parent) && parent > node) {
                continue;
            }
            leaves.push(Leaf {
                parent,
                from_parent,
                relation,
                label: q.nodes[node].label,
                node,
            });
        }
    }
    leaves.sort_unstable();
    leaves
}

/// `q` without `leaves` and their edges, its nodes renumbered in order; every remaining node, then
/// every edge variable, projected. Returns it and the original index of each of its nodes.
pub fn core_query(q: &QueryGraph, leaves: &[Leaf]) -> (QueryGraph, Vec<usize>) {
    let mut index = vec![usize::MAX; q.nodes.len()];
    let mut core = Vec::new();
    for (u, at) in index.iter_mut().enumerate() {
        if !leaves.iter().any(|l| l.node == u) {
            *at = core.len();
            core.push(u);
        }
    }
    let edges = q
        .edges
        .iter()
        .filter(|e| index[e.source] != usize::MAX && index[e.target] != usize::MAX)
        .map(|e| gpsense_planner::QueryEdge {
            source: index[e.source],
            target: index[e.target],
            ..*e
        })
        .collect();
    let mut projection: Vec<Projected> = (0..core.len()).map(Projected::Node).collect();
    projection.extend((0..q.edge_variables.len()).map(Projected::Edge));
    let qc = QueryGraph {
        nodes: core.iter().map(|&u| q.nodes[u].clone()).collect(),
        edges,
        edge_variables: q.edge_variables.clone(),
        concept_sets: q.concept_sets.clone(),
        projection,
        distinct: false,
        limit: None,
    };
    (qc, core)
}

/// Per-thread room for [`count`].
#[derive(Default)]
pub struct Room {
    groups: Vec<Group>,
    taken: Vec<NodeId>,
    counter: Counter,
}

/// The matches of `leaves` once the core is placed (`assigned`: a data node per query node, the
/// core's set); `None` when there are more than `u128::MAX`.
pub fn count(
    g: &KnowledgeGraph,
    leaves: &[Leaf],
    assigned: &[NodeId],
    core: &[usize],
    injective: bool,
    room: &mut Room,
) -> Option<u128> {
    let list = |l: &Leaf| {
        let w = assigned[l.parent];
        if l.from_parent {
            g.out().neighbours_by_label(w, l.relation)
        } else {
            g.inc().neighbours_by_label(w, l.relation)
        }
    };
    let fits = |l: &Leaf, v: NodeId| l.label.is_none_or(|x| g.node_label(v) == x);
    if !injective {
        return product(leaves.iter().map(|l| {
            let n = match l.label {
                None => list(l).len(),
                Some(_) => list(l).iter().filter(|&&v| fits(l, v)).count(),
            };
            Some(n as u128)
        }));
    }
    room.taken.clear();
    room.taken.extend(core.iter().map(|&u| assigned[u]));
    room.taken.sort_unstable();
    let mut used = 0;
    for run in leaves.chunk_by(|a, b| a.key() == b.key()) {
        if room.groups.len() <= used {
            room.groups.push(Group::default());
        }
        let group = &mut room.groups[used];
        group.list.clear();
        group.list.extend(
            list(&run[0])
                .iter()
                .copied()
                .filter(|&v| fits(&run[0], v) && room.taken.binary_search(&v).is_err()),
        );
        group.leaves = run.len() as u32;
        used += 1;
    }
    let groups = &room.groups[..used];
    if let [one] = groups {
        return falling(one.list.len() as u64, u64::from(one.leaves));
    }
    match count_injective(groups, &mut room.counter) {
        Ok(n) => Some(n),
        Err(Uncounted::Overflow) => None,
        Err(Uncounted::TooManySteps) => enumerate(groups),
    }
}

/// The injective assignments of `groups` one leaf at a time, for the rare case the programme over
/// shared nodes would take longer; `None` past `u128::MAX`.
fn enumerate(groups: &[Group]) -> Option<u128> {
    let lists: Vec<&[u32]> = groups
        .iter()
        .flat_map(|g| std::iter::repeat_n(&g.list[..], g.leaves as usize))
        .collect();
    fn go(lists: &[&[u32]], used: &mut Vec<u32>) -> Option<u128> {
        let Some((list, rest)) = lists.split_first() else {
            return Some(1);
        };
        let mut total = 0u128;
        for &v in *list {
            if used.contains(&v) {
                continue;
            }
            used.push(v);
            let n = go(rest, used);
            used.pop();
            total = total.checked_add(n?)?;
        }
        Some(total)
    }
    go(&lists, &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpsense_planner::{NodeKind, QueryEdge, QueryNode};

    fn node(name: &str, kind: NodeKind) -> QueryNode {
        QueryNode {
            name: name.into(),
            kind,
            label: None,
        }
    }

    fn edge(source: usize, target: usize, label: EdgeLabel) -> QueryEdge {
        QueryEdge {
            source,
            target,
            label,
        }
    }

    fn query(nodes: Vec<QueryNode>, edges: Vec<QueryEdge>) -> QueryGraph {
        QueryGraph {
            projection: (0..nodes.len()).map(Projected::Node).collect(),
            nodes,
            edges,
            edge_variables: vec!["?r".into()],
            concept_sets: Vec::new(),
            distinct: false,
            limit: None,
        }
    }

    #[test]
    fn leaves_are_lone_variables_on_fixed_edges() {
        let v = NodeKind::Variable;
        // 0 - 1 - 2, 1 - 3 by an edge variable, 1 <- 4 (a concept), 5 - 6 alone.
        let q = query(
            (0..7)
                .map(|i| {
                    node(
                        &format!("?v{i}"),
                        if i == 4 { NodeKind::Concept(9) } else { v },
                    )
                })
                .collect(),
            vec![
                edge(0, 1, EdgeLabel::Fixed(1)),
                edge(1, 2, EdgeLabel::Fixed(2)),
                edge(1, 3, EdgeLabel::Variable(0)),
                edge(4, 1, EdgeLabel::Fixed(1)),
                edge(5, 6, EdgeLabel::Fixed(3)),
            ],
        );
        let leaves = leaves_of(&q);
        let nodes: Vec<usize> = leaves.iter().map(|l| l.node).collect();
        assert_eq!(nodes, [0, 2, 6]);
        assert!(!leaves[0].from_parent && leaves[1].from_parent);
        let (core, index) = core_query(&q, &leaves);
        assert_eq!(index, [1, 3, 4, 5]);
        assert_eq!(core.edges.len(), 2);
        assert_eq!(core.projection.len(), 4 + 1);
    }

    #[test]
    fn enumeration_agrees_with_the_programme() {
        let group = |list: &[u32], leaves| Group {
            list: list.to_vec(),
            leaves,
            fail: 0,
        };
        let groups = [
            group(&[1, 2, 3, 4], 2),
            group(&[3, 4, 5], 1),
            group(&[1, 5], 1),
        ];
        let mut c = Counter::default();
        assert_eq!(enumerate(&groups), count_injective(&groups, &mut c).ok());
    }
}

//! Leaves the device counts instead of enumerating (for counts, `COUNT(*)` and ASK): groups of
//! leaf query nodes with the very same candidates from one parent, as `dfs` counts its leaf
//! equivalence classes (`search/leaves.rs`). The join then enumerates only the other nodes, and
//! `count_leaves` multiplies each partial match's groups out on the device.

use gpsense_planner::{EdgeLabel, Plan, QueryGraph};

use crate::layout::Layout;
use crate::Semantics;

/// Leaf query nodes counted together: `nodes[0]`'s candidate-edge list from `parent` stands for all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafGroup {
    pub parent: usize,
    pub nodes: Vec<usize>,
}

/// The groups to count for a connected query, or none. A leaf has one edge, a fixed relation, no
/// self-loop, and a parent with further edges (so the other nodes stay connected); a group's
/// leaves share parent, direction, relation and filter, hence candidates. Under iso the groups
/// must be independent: only groups whose node labels differ (their lists cannot meet) are
/// counted together, the largest first; the others are enumerated.
pub fn choose(
    q: &QueryGraph,
    plan: &Plan,
    filters: &Layout,
    semantics: Semantics,
) -> Vec<LeafGroup> {
    if plan.components.len() != 1 {
        return Vec::new();
    }
    let n = q.nodes.len();
    let mut degree = vec![0usize; n];
    let mut looped = vec![false; n];
    for e in &q.edges {
        if e.source == e.target {
            looped[e.source] = true;
        } else {
            degree[e.source] += 1;
            degree[e.target] += 1;
        }
    }
    // Per leaf: (parent, the parent is the edge's source, relation).
    let mut groups: Vec<(LeafGroup, (bool, u32))> = Vec::new();
    for e in q.edges.iter().filter(|e| e.source != e.target) {
        let EdgeLabel::Fixed(r) = e.label else {
            continue;
        };
        for (leaf, parent, out) in [(e.target, e.source, true), (e.source, e.target, false)] {
            if degree[leaf] != 1 || looped[leaf] || degree[parent] < 2 {
                continue;
            }
            let key = (out, r as u32);
            let same = groups.iter_mut().find(|(g, k)| {
                g.parent == parent
                    && *k == key
                    && filters.filters[g.nodes[0]] == filters.filters[leaf]
            });
            match same {
                Some((g, _)) => g.nodes.push(leaf),
                None => groups.push((
                    LeafGroup {
                        parent,
                        nodes: vec![leaf],
                    },
                    key,
                )),
            }
        }
    }
    let mut groups: Vec<LeafGroup> = groups.into_iter().map(|(g, _)| g).collect();
    if semantics == Semantics::Hom {
        return groups;
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.nodes.len()));
    let label = |g: &LeafGroup| filters.filters[g.nodes[0]].label;
    let mut chosen: Vec<LeafGroup> = Vec::new();
    for g in groups {
        let apart = |h: &LeafGroup| {
            label(h) != gpsense_kernels::NONE
                && label(&g) != gpsense_kernels::NONE
                && label(h) != label(&g)
        };
        if chosen.iter().all(apart) {
            chosen.push(g);
        }
    }
    chosen
}

/// `plan` with the counted leaves moved to its end (the rest keeps its order, and stays connected:
/// every leaf's parent is kept), its rationale to match.
pub fn reorder(q: &QueryGraph, plan: &Plan, groups: &[LeafGroup]) -> Plan {
    let group_of = |u: usize| groups.iter().find(|g| g.nodes.contains(&u));
    let (kept, leaves): (Vec<usize>, Vec<usize>) =
        (0..plan.order.len()).partition(|&i| group_of(plan.order[i]).is_none());
    let mut order = Vec::with_capacity(plan.order.len());
    let mut rationale = Vec::with_capacity(plan.order.len());
    for i in kept.into_iter().chain(leaves) {
        let u = plan.order[i];
        let why = match group_of(u) {
            Some(g) => format!(
                "{}: a leaf of {}, counted with its group of {} on the device",
                q.nodes[u].name,
                q.nodes[g.parent].name,
                g.nodes.len()
            ),
            // Without the old position's number.
            None => plan.rationale.get(i).map_or(String::new(), |r| {
                r.split_once(". ")
                    .map_or(r.clone(), |(_, rest)| rest.to_string())
            }),
        };
        order.push(u);
        rationale.push(format!("{}. {why}", order.len()));
    }
    Plan {
        order,
        components: plan.components.clone(),
        rationale,
    }
}

//! Query nodes the device counts instead of enumerating (for counts, `COUNT(*)` and ASK): the
//! *tail*, nodes no two of which are neighbours, matched after all their neighbours, so that per
//! partial match of the others each one's candidates are fixed (the intersection of its
//! neighbours' candidate-edge lists), as `dfs` counts the nodes left once their neighbours are all
//! matched (`search/leaves.rs`). Nodes with the very same neighbourhood and filter form one group.
//! The join then enumerates only the other nodes, and `count_leaves` multiplies each partial
//! match's groups out on the device.

use gpsense_kernels::join::MAX_GROUP_LISTS;
use gpsense_planner::{EdgeLabel, Plan, QueryGraph};

use crate::layout::Layout;
use crate::Semantics;

/// Query nodes counted together: the same candidates for every partial match, `nodes[0]`'s
/// candidate-edge lists from its neighbours stand for all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeafGroup {
    pub nodes: Vec<usize>,
    /// Their neighbours (all enumerated), one per edge.
    pub neighbours: Vec<usize>,
}

/// One edge of a node, as its tail group sees it: (neighbour, the node is the edge's target,
/// relation).
type Link = (usize, bool, u32);

/// The groups to count for a connected query, or none. Walking the join order, a later node whose
/// neighbours are all matched is deferred to the tail (as `dfs` lets such a node wait): no node
/// after it in the order is its neighbour, so the levels left are the same levels, one fewer. A
/// counted node has no self-loop, only fixed relations and at most `MAX_GROUP_LISTS` edges. Under
/// iso the groups must be independent: a group after the first needs a node label of its own (its
/// candidates cannot meet another group's); the other nodes are enumerated in place.
pub fn choose(
    q: &QueryGraph,
    plan: &Plan,
    filters: &Layout,
    semantics: Semantics,
) -> Vec<LeafGroup> {
    if plan.components.len() != 1 || q.nodes.len() < 2 {
        return Vec::new();
    }
    let n = q.nodes.len();
    let mut links: Vec<Vec<Link>> = vec![Vec::new(); n];
    let mut countable = vec![true; n];
    for e in &q.edges {
        let EdgeLabel::Fixed(r) = e.label else {
            countable[e.source] = false;
            countable[e.target] = false;
            continue;
        };
        if e.source == e.target {
            countable[e.source] = false;
            continue;
        }
        links[e.source].push((e.target, false, r as u32));
        links[e.target].push((e.source, true, r as u32));
    }
    for (u, l) in links.iter_mut().enumerate() {
        l.sort_unstable();
        countable[u] &= !l.is_empty() && l.len() <= MAX_GROUP_LISTS;
    }
    let label = |u: usize| filters.filters[u].label;
    let (mut matched, mut counted) = (vec![false; n], vec![false; n]);
    let mut groups: Vec<LeafGroup> = Vec::new();
    for (i, &u) in plan.order.iter().enumerate() {
        if counted[u] {
            continue;
        }
        matched[u] = true;
        for &v in &plan.order[i + 1..] {
            let surrounded = links[v].iter().all(|&(w, _, _)| matched[w]);
            if matched[v] || counted[v] || !countable[v] || !surrounded {
                continue;
            }
            let same = groups.iter_mut().find(|g| {
                let w = g.nodes[0];
                links[w] == links[v] && filters.filters[w] == filters.filters[v]
            });
            if let Some(g) = same {
                g.nodes.push(v);
                counted[v] = true;
                continue;
            }
            let apart = |g: &LeafGroup| {
                let l = label(g.nodes[0]);
                l != gpsense_kernels::NONE && label(v) != gpsense_kernels::NONE && l != label(v)
            };
            if semantics == Semantics::Iso && !groups.iter().all(apart) {
                continue;
            }
            counted[v] = true;
            groups.push(LeafGroup {
                nodes: vec![v],
                neighbours: links[v].iter().map(|&(w, _, _)| w).collect(),
            });
        }
    }
    groups
}

/// `plan` with the counted nodes moved to its end, the rest in its order (still connected: no node
/// after a counted one in the order is its neighbour), the rationale to match.
pub fn reorder(q: &QueryGraph, plan: &Plan, groups: &[LeafGroup]) -> Plan {
    let group_of = |u: usize| groups.iter().find(|g| g.nodes.contains(&u));
    let position = |u: usize| plan.order.iter().position(|&w| w == u);
    let kept = plan
        .order
        .iter()
        .copied()
        .filter(|&u| group_of(u).is_none());
    let counted = groups.iter().flat_map(|g| g.nodes.iter().copied());
    let mut order = Vec::with_capacity(plan.order.len());
    let mut rationale = Vec::with_capacity(plan.order.len());
    for u in kept.into_iter().chain(counted) {
        let why = match group_of(u) {
            Some(g) => {
                let names: Vec<&str> = g
                    .neighbours
                    .iter()
                    .map(|&w| q.nodes[w].name.as_str())
                    .collect();
                format!(
                    "{}: next to {} only, counted with its group of {} on the device",
                    q.nodes[u].name,
                    names.join(", "),
                    g.nodes.len()
                )
            }
            // Without the old position's number.
            None => position(u)
                .and_then(|i| plan.rationale.get(i))
                .map_or(String::new(), |r| {
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

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

/// The groups to count for a connected query, or none: leaves (one edge, to a node with others)
/// wherever they are in the join order, and the nodes of the order's suffix whose neighbours all
/// come before them (none a leaf). A leaf only multiplies the levels after it (`dfs` counts leaves
/// the same way); a node closing cycles may prune them, so only a suffix of such nodes is
/// deferred. A counted node has no self-loop, only fixed relations and at most `MAX_GROUP_LISTS`
/// edges; nodes with the very same edges and filter form one group. Under iso the groups must be
/// independent: a group after the first needs a node label of its own (its candidates cannot
/// meet another group's), leaves' groups and larger ones chosen first.
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
    // Edges other than self-loops, edge variables' included.
    let mut degree = vec![0usize; n];
    for e in q.edges.iter().filter(|e| e.source != e.target) {
        degree[e.source] += 1;
        degree[e.target] += 1;
    }
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
    let mut position = vec![usize::MAX; n];
    for (i, &u) in plan.order.iter().enumerate() {
        position[u] = i;
    }
    for l in &mut links {
        l.sort_unstable();
    }
    // A leaf whose neighbour has other edges (so the rest stays connected), wherever it is.
    let leaf = |u: usize| countable[u] && links[u].len() == 1 && degree[links[u][0].0] >= 2;
    // Another node: its neighbours all earlier in the order, none of them a leaf (counted).
    let surrounded = |u: usize| {
        countable[u]
            && (2..=MAX_GROUP_LISTS).contains(&links[u].len())
            && links[u]
                .iter()
                .all(|&(w, _, _)| position[w] < position[u] && !leaf(w))
    };
    // Candidates: the leaves, and the other nodes of the order's suffix of candidates.
    let mut suffix = true;
    let mut candidates = Vec::new();
    for &u in plan.order.iter().rev() {
        suffix &= leaf(u) || surrounded(u);
        if leaf(u) || (suffix && surrounded(u)) {
            candidates.push(u);
        }
    }
    let mut groups: Vec<LeafGroup> = Vec::new();
    for &u in candidates.iter().rev() {
        let same = groups.iter_mut().find(|g| {
            let w = g.nodes[0];
            links[w] == links[u] && filters.filters[w] == filters.filters[u]
        });
        match same {
            Some(g) => g.nodes.push(u),
            None => groups.push(LeafGroup {
                nodes: vec![u],
                neighbours: links[u].iter().map(|&(w, _, _)| w).collect(),
            }),
        }
    }
    if semantics == Semantics::Iso {
        groups = independent(groups, filters, |g| links[g.nodes[0]].len() == 1);
    }
    // A non-leaf with an enumerated node after it would no longer prune that node's level.
    let mut counted = vec![false; n];
    for g in &groups {
        for &u in &g.nodes {
            counted[u] = true;
        }
    }
    let mut enumerated_after = false;
    for &u in plan.order.iter().rev() {
        if !counted[u] {
            enumerated_after = true;
        } else if enumerated_after && links[u].len() > 1 {
            counted[u] = false;
            for g in &mut groups {
                g.nodes.retain(|&w| w != u);
            }
            enumerated_after = true;
        }
    }
    groups.retain(|g| !g.nodes.is_empty());
    groups
}

/// Leaves' groups first (counting one saves a level wherever it is), the largest first, each after
/// the first only with a node label none of the chosen has.
fn independent(
    mut groups: Vec<LeafGroup>,
    filters: &Layout,
    leaves: impl Fn(&LeafGroup) -> bool,
) -> Vec<LeafGroup> {
    groups.sort_by_key(|g| (!leaves(g), std::cmp::Reverse(g.nodes.len())));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::DataShape;
    use gpsense_graph::GraphBuilder;

    /// A 4-cycle `a b c d` with a leaf `e` on `a`.
    const CYCLE_AND_LEAF: &str =
        "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d . ?d r ?a . ?a r ?e }";

    /// `text` joined in `order` (names), under hom: the counted groups by name, and the reordered
    /// plan's order by name.
    fn counted(text: &str, order: &[&str]) -> (Vec<Vec<String>>, Vec<String>) {
        let mut b = GraphBuilder::new();
        b.add_triple("x", "r", "y", 1.0).unwrap();
        let g = b.build().unwrap().0;
        let q = gpsense_planner::compile(text, &g).unwrap();
        let id = |n: &str| q.nodes.iter().position(|v| v.name == n).unwrap();
        let plan = Plan {
            order: order.iter().map(|n| id(n)).collect(),
            components: std::iter::once(0..order.len()).collect(),
            rationale: vec![String::new(); order.len()],
        };
        let layout = Layout::new(&q, &plan, Semantics::Hom, DataShape::default()).unwrap();
        let groups = choose(&q, &plan, &layout, Semantics::Hom);
        let name = |u: &usize| q.nodes[*u].name.clone();
        let reordered = reorder(&q, &plan, &groups);
        let mut by_name: Vec<Vec<String>> = groups
            .iter()
            .map(|g| g.nodes.iter().map(name).collect())
            .collect();
        by_name.sort();
        (by_name, reordered.order.iter().map(name).collect())
    }

    #[test]
    fn leaves_anywhere_and_the_surrounded_suffix_are_counted() {
        // `?d` closes the cycle last and `?e` is a leaf: both counted, the order kept before them.
        let (groups, order) = counted(CYCLE_AND_LEAF, &["?a", "?b", "?c", "?d", "?e"]);
        assert_eq!(groups, [["?d"], ["?e"]]);
        assert_eq!(order[..3], ["?a", "?b", "?c"]);
        // A leaf first in the order is counted too (its neighbour starts the join).
        let (groups, order) = counted(CYCLE_AND_LEAF, &["?e", "?a", "?b", "?c", "?d"]);
        assert_eq!(groups, [["?d"], ["?e"]]);
        assert_eq!(order[..3], ["?a", "?b", "?c"]);
        // `?c` with both neighbours before it, then only the leaf: the suffix.
        let (groups, order) = counted(CYCLE_AND_LEAF, &["?a", "?b", "?d", "?c", "?e"]);
        assert_eq!(groups, [["?c"], ["?e"]]);
        assert_eq!(order[..3], ["?a", "?b", "?d"]);
    }

    #[test]
    fn a_leaf_of_a_node_with_an_edge_variable_is_counted() {
        // `?b`'s other edge has a variable relation: `?b` itself is enumerated, its leaf `?a` not.
        let text = "SELECT * WHERE { ?a r ?b . ?b ?p ?c }";
        let (groups, order) = counted(text, &["?a", "?b", "?c"]);
        assert_eq!(groups, [["?a"]]);
        assert_eq!(order, ["?b", "?c", "?a"]);
    }

    #[test]
    fn a_node_closing_a_cycle_before_an_enumerated_one_stays_in_place() {
        // The cycle `a b c d` and the triangle `a e f`: `?c` has both neighbours before it, but
        // `?e` after it is enumerated (its neighbour `?f` comes later), and `?c` would no longer
        // prune `?e`'s level; `?f`, last and surrounded, is counted.
        let text = "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d . ?d r ?a . ?a r ?e . ?e r ?f . ?f r ?a }";
        let (groups, order) = counted(text, &["?a", "?b", "?d", "?c", "?e", "?f"]);
        assert_eq!(groups, [["?f"]]);
        assert_eq!(order, ["?a", "?b", "?d", "?c", "?e", "?f"]);
    }
}

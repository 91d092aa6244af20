//! Query nodes the device counts instead of enumerating (for counts, `COUNT(*)` and ASK): the
//! *tail*, nodes no two of which are neighbours, matched after all their neighbours, so that per
//! partial match of the others each one's candidates are fixed (the intersection of its
//! neighbours' candidate-edge lists), as `dfs` counts the nodes left once their neighbours are all
//! matched (`search/leaves.rs`). Nodes with the very same neighbourhood and filter form one group.
//! The join then enumerates only the other nodes, and `count_leaves` multiplies each partial
//! match's groups out on the device. Under iso, groups whose candidates may meet are linked and
//! counted together by inclusion-exclusion over the set partitions of their nodes (terms built
//! here by `join::partition_terms`), as `dfs` counts groups sharing data nodes.

use gpsense_kernels::join::{
    partition_terms, LeafTerm, MAX_GROUP_LISTS, MAX_LINKED_GROUPS, MAX_LINKED_NODES,
};
use gpsense_planner::{EdgeLabel, Plan, QueryGraph};

use crate::layout::Layout;
use crate::MatchError;
use crate::Semantics;

/// Query nodes counted together: the same candidates for every partial match, `nodes[0]`'s
/// candidate-edge lists from its neighbours stand for all.
#[derive(Clone, Debug, PartialEq)]
pub struct LeafGroup {
    pub nodes: Vec<usize>,
    /// Their neighbours (all enumerated), one per edge.
    pub neighbours: Vec<usize>,
    /// Groups of one component (consecutive) are counted together: their candidates may meet.
    pub component: usize,
    /// The estimated extensions per partial match of a node deferred from the middle of the order.
    pub fanout: Option<f64>,
}

/// One edge of a node, as its tail group sees it: (neighbour, the node is the edge's target,
/// relation).
type Link = (usize, bool, u32);

/// The groups to count for a connected query, or none: leaves (one edge, to a node with others)
/// wherever they are in the join order, and the nodes of the order's suffix whose neighbours all
/// come before them (none a leaf). A leaf only multiplies the levels after it (`dfs` counts leaves
/// the same way); a node closing cycles may prune them, so only a suffix of such nodes is
/// deferred. A counted node has no self-loop, only fixed relations and at most `MAX_GROUP_LISTS`
/// edges; nodes with the very same edges and filter form one group. Under iso, groups whose
/// candidates may meet (the same node label, or one without) are linked into components of at
/// most `MAX_LINKED_GROUPS` groups and `MAX_LINKED_NODES` nodes whose terms cannot overflow
/// (`counts`: candidates per query node), leaves' groups and larger ones chosen first. A node
/// whose neighbours all come before it in the middle of the order is deferred too when `fanout`
/// (asked with the query nodes wanted, answering per query node) estimates that it multiplies its
/// level (more than one extension per partial match): no later node is its neighbour, so deferring
/// it shrinks every level after it, where one that prunes stays in place.
pub fn choose(
    q: &QueryGraph,
    plan: &Plan,
    filters: &Layout,
    counts: &[usize],
    semantics: Semantics,
    fanout: &dyn Fn(&[bool]) -> Vec<Option<f64>>,
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
    // Candidates: the leaves, the other nodes of the order's suffix of candidates, and the
    // surrounded nodes before it that multiply their level.
    let mut suffix = true;
    let mut candidates = Vec::new();
    let mut middle = vec![false; n];
    for &u in plan.order.iter().rev() {
        suffix &= leaf(u) || surrounded(u);
        if leaf(u) || (suffix && surrounded(u)) {
            candidates.push(u);
        } else if surrounded(u) {
            middle[u] = true;
        }
    }
    let mut wide = vec![false; n];
    let mut estimates = vec![None; n];
    if middle.contains(&true) {
        estimates = fanout(&middle);
        for (u, f) in estimates.iter().enumerate() {
            wide[u] = middle[u] && f.is_some_and(|f| f > 1.0);
        }
        candidates.extend((0..n).filter(|&u| wide[u]));
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
                component: groups.len(),
                fanout: estimates.get(u).copied().flatten().filter(|_| wide[u]),
            }),
        }
    }
    if semantics == Semantics::Iso {
        groups = link(groups, filters, counts, |g| links[g.nodes[0]].len() == 1);
    }
    // A non-leaf with an enumerated node after it would no longer prune that node's level (unless
    // it multiplies its own).
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
        } else if enumerated_after && links[u].len() > 1 && !wide[u] {
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

/// Whether [`choose`] may ask `q`'s count for fan-out estimates: some node has two to
/// `MAX_GROUP_LISTS` edges, all with fixed relations, none a loop (so the candidate sets it needs
/// come back with the counts, in the same read).
pub fn may_ask(q: &QueryGraph) -> bool {
    let mut edges = vec![0usize; q.nodes.len()];
    let mut countable = vec![true; q.nodes.len()];
    for e in &q.edges {
        if e.source == e.target || !matches!(e.label, EdgeLabel::Fixed(_)) {
            countable[e.source] = false;
            countable[e.target] = false;
        } else {
            edges[e.source] += 1;
            edges[e.target] += 1;
        }
    }
    let middle = |u: usize| countable[u] && (2..=MAX_GROUP_LISTS).contains(&edges[u]);
    (0..q.nodes.len()).any(middle)
}

/// Leaves' groups first (counting one saves a level wherever it is), the largest first, each
/// joining the components whose candidates it may meet (their labels equal, or one without) when
/// the merged component stays within the kernel's bounds, else left enumerated. Components come
/// out consecutive, numbered in order.
fn link(
    mut groups: Vec<LeafGroup>,
    filters: &Layout,
    counts: &[usize],
    leaves: impl Fn(&LeafGroup) -> bool,
) -> Vec<LeafGroup> {
    groups.sort_by_key(|g| (!leaves(g), std::cmp::Reverse(g.nodes.len())));
    let label = |g: &LeafGroup| filters.filters[g.nodes[0]].label;
    let meet = |a: &LeafGroup, b: &LeafGroup| {
        let (x, y) = (label(a), label(b));
        x == gpsense_kernels::NONE || y == gpsense_kernels::NONE || x == y
    };
    let mut components: Vec<Vec<LeafGroup>> = Vec::new();
    for g in groups {
        let (met, mut rest): (Vec<_>, Vec<_>) = components
            .into_iter()
            .partition(|c| c.iter().any(|h| meet(h, &g)));
        let mut merged: Vec<LeafGroup> = met.iter().flatten().cloned().collect();
        merged.push(g);
        if within_bounds(&merged, counts) {
            rest.push(merged);
        } else {
            rest.extend(met);
        }
        components = rest;
    }
    let mut out = Vec::new();
    for (c, members) in components.into_iter().enumerate() {
        out.extend(members.into_iter().map(|g| LeafGroup { component: c, ..g }));
    }
    out
}

/// Whether the kernel can count `component` together: few enough groups and nodes, and its terms'
/// sums below `2^127`: at most `k!` (the permutations of its `k` nodes) times the product of the
/// nodes' candidates.
fn within_bounds(component: &[LeafGroup], counts: &[usize]) -> bool {
    let nodes: usize = component.iter().map(|g| g.nodes.len()).sum();
    if component.len() == 1 {
        return true;
    }
    if component.len() > MAX_LINKED_GROUPS || nodes > MAX_LINKED_NODES {
        return false;
    }
    let bound = component
        .iter()
        .flat_map(|g| g.nodes.iter().map(|&u| counts[u] as u128))
        .chain(1..=nodes as u128)
        .try_fold(1u128, |a, x| a.checked_mul(x.max(1)));
    bound.is_some_and(|b| b < 1 << 126)
}

/// The terms of every linked component of `groups` (consecutive by component), tagged with its
/// index among the runs of groups the kernel sees (a group alone is a run of its own, counted by
/// falling factorials, with no terms).
pub fn terms(groups: &[LeafGroup]) -> Result<Vec<LeafTerm>, MatchError> {
    let mut out = Vec::new();
    for (run, members) in groups
        .chunk_by(|a, b| a.component == b.component)
        .enumerate()
    {
        if members.len() < 2 {
            continue;
        }
        let group_of: Vec<u8> = members
            .iter()
            .enumerate()
            .flat_map(|(j, g)| std::iter::repeat_n(j as u8, g.nodes.len()))
            .collect();
        // `link` keeps components within what `partition_terms` takes (203 terms for 6 nodes).
        let mut room = [LeafTerm::default(); 256];
        let n = partition_terms(&group_of, run as u32, &mut room).ok_or_else(|| {
            MatchError::Plan(format!(
                "{} counted nodes in {} linked groups: past the kernel's bounds",
                group_of.len(),
                members.len()
            ))
        })?;
        out.extend_from_slice(&room[..n]);
    }
    Ok(out)
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
                let others = groups.iter().filter(|h| h.component == g.component).count() - 1;
                let linked = match others {
                    0 => String::new(),
                    1 => ", linked with 1 other group whose candidates may meet its own".into(),
                    n => {
                        format!(", linked with {n} other groups whose candidates may meet its own")
                    }
                };
                let wide = g.fanout.map_or(String::new(), |f| {
                    format!(", deferred from the middle of the order (about {f:.1} extensions per partial match there)")
                });
                format!(
                    "{}: next to {} only, counted with its group of {} on the device{linked}{wide}",
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
        let (groups, order) = counted_as(text, order, Semantics::Hom, 10);
        let mut by_name: Vec<Vec<String>> = groups.into_iter().map(|(_, g)| g).collect();
        by_name.sort();
        (by_name, order)
    }

    /// `counted` under `semantics` with `candidates` per node: the groups with their components,
    /// in the chooser's order.
    fn counted_as(
        text: &str,
        order: &[&str],
        semantics: Semantics,
        candidates: usize,
    ) -> (Vec<(usize, Vec<String>)>, Vec<String>) {
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
        let layout = Layout::new(&q, &plan, semantics, DataShape::default()).unwrap();
        let counts = vec![candidates; q.nodes.len()];
        let groups = choose(&q, &plan, &layout, &counts, semantics, &|w| {
            vec![None; w.len()]
        });
        let name = |u: &usize| q.nodes[*u].name.clone();
        let reordered = reorder(&q, &plan, &groups);
        let by_name = groups
            .iter()
            .map(|g| (g.component, g.nodes.iter().map(name).collect()))
            .collect();
        (by_name, reordered.order.iter().map(name).collect())
    }

    #[test]
    fn under_iso_groups_that_may_meet_are_linked_within_the_kernels_bounds() {
        // No node has a label: every group may meet every other, so `?d` and `?e` are linked.
        let (groups, _) = counted_as(
            CYCLE_AND_LEAF,
            &["?a", "?b", "?c", "?d", "?e"],
            Semantics::Iso,
            10,
        );
        assert_eq!(
            groups,
            [(0, vec!["?e".to_string()]), (0, vec!["?d".to_string()])]
        );
        let terms = terms(&choose_iso(CYCLE_AND_LEAF, 10)).unwrap();
        // |E| |D| - |E ∩ D|.
        assert_eq!(terms.len(), 2);
        // Candidates so many that the terms could pass 2^127: the second group stays enumerated.
        let (groups, _) = counted_as(
            CYCLE_AND_LEAF,
            &["?a", "?b", "?c", "?d", "?e"],
            Semantics::Iso,
            1 << 63,
        );
        assert_eq!(groups, [(0, vec!["?e".to_string()])]);
        // A path of five with a leaf on each node, each leaf its own group: at most
        // MAX_LINKED_GROUPS linked, the fifth enumerated.
        let comb = "SELECT * WHERE { ?x1 r ?x2 . ?x2 r ?x3 . ?x3 r ?x4 . ?x4 r ?x5 . \
                    ?x1 r ?l1 . ?x2 r ?l2 . ?x3 r ?l3 . ?x4 r ?l4 . ?x5 r ?l5 }";
        let order = [
            "?x1", "?x2", "?x3", "?x4", "?x5", "?l1", "?l2", "?l3", "?l4", "?l5",
        ];
        let (groups, order) = counted_as(comb, &order, Semantics::Iso, 10);
        assert_eq!(groups.len(), MAX_LINKED_GROUPS);
        assert!(groups.iter().all(|(c, _)| *c == 0));
        assert_eq!(order[5], "?l5");
    }

    fn choose_iso(text: &str, candidates: usize) -> Vec<LeafGroup> {
        let mut b = GraphBuilder::new();
        b.add_triple("x", "r", "y", 1.0).unwrap();
        let g = b.build().unwrap().0;
        let q = gpsense_planner::compile(text, &g).unwrap();
        let plan = Plan {
            order: (0..q.nodes.len()).collect(),
            components: std::iter::once(0..q.nodes.len()).collect(),
            rationale: vec![String::new(); q.nodes.len()],
        };
        let layout = Layout::new(&q, &plan, Semantics::Iso, DataShape::default()).unwrap();
        let counts = vec![candidates; q.nodes.len()];
        choose(&q, &plan, &layout, &counts, Semantics::Iso, &|w| {
            vec![None; w.len()]
        })
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
    fn a_node_in_the_middle_that_multiplies_its_level_is_deferred() {
        // As below, `?c` has both neighbours before it and `?e` after it: counted when the
        // estimates say it multiplies its level, in place when it prunes or nothing is known.
        let text = "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d . ?d r ?a . ?a r ?e . ?e r ?f . ?f r ?a }";
        let mut b = GraphBuilder::new();
        b.add_triple("x", "r", "y", 1.0).unwrap();
        let g = b.build().unwrap().0;
        let q = gpsense_planner::compile(text, &g).unwrap();
        let id = |n: &str| q.nodes.iter().position(|v| v.name == n).unwrap();
        let order: Vec<usize> = ["?a", "?b", "?d", "?c", "?e", "?f"].map(id).into();
        let plan = Plan {
            order: order.clone(),
            components: std::iter::once(0..6).collect(),
            rationale: vec![String::new(); 6],
        };
        let layout = Layout::new(&q, &plan, Semantics::Iso, DataShape::default()).unwrap();
        let counts = vec![10; 6];
        for (estimate, counted) in [(Some(2.5), true), (Some(0.5), false), (None, false)] {
            let asked = std::cell::Cell::new(Vec::new());
            let fanout = |wanted: &[bool]| {
                asked.set(wanted.to_vec());
                wanted
                    .iter()
                    .map(|&w| if w { estimate } else { None })
                    .collect()
            };
            let groups = choose(&q, &plan, &layout, &counts, Semantics::Iso, &fanout);
            // Asked about `?c` only: `?f` is in the suffix, the others are enumerated.
            let asked = asked.take();
            let wanted: Vec<usize> = (0..6).filter(|&u| asked[u]).collect();
            assert_eq!(wanted, [id("?c")]);
            let c_counted = groups.iter().any(|g| g.nodes.contains(&id("?c")));
            assert_eq!(c_counted, counted, "{estimate:?}");
            let why = reorder(&q, &plan, &groups).rationale.join("\n");
            assert_eq!(
                why.contains("(about 2.5 extensions per partial match there)"),
                counted
            );
            assert!(groups.iter().any(|g| g.nodes == [id("?f")]));
        }
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

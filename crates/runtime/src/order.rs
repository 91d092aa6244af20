//! The join order, chosen after filtering when the real candidate counts are known (as GraphQL
//! does): per connected component, start at the node with the fewest candidates, then repeatedly
//! take the unvisited neighbour of the visited set with the most edges back to it (the strongest
//! pruning), ties broken by fewer candidates. Concept nodes have one candidate and come first.

use gpsense_planner::{counted, Plan, QueryGraph};

/// A plan with the same components as `plan`, reordered for the join, from the number of candidates
/// of each query node. O(V_q^2 + V_q * E_q).
pub fn join_order(q: &QueryGraph, plan: &Plan, counts: &[usize]) -> Plan {
    let n = q.nodes.len();
    let mut adjacent = vec![Vec::new(); n];
    for e in q.edges.iter().filter(|e| e.source != e.target) {
        adjacent[e.source].push(e.target);
        adjacent[e.target].push(e.source);
    }
    let size = |u: usize| counts[u];
    let mut order = Vec::with_capacity(n);
    let mut rationale = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    for range in &plan.components {
        let members = &plan.order[range.clone()];
        let Some(&first) = members
            .iter()
            .min_by_key(|&&u| (size(u), std::cmp::Reverse(adjacent[u].len())))
        else {
            continue;
        };
        visited[first] = true;
        order.push(first);
        rationale.push(format!(
            "{}. {}: join start, {}",
            order.len(),
            q.nodes[first].name,
            counted(size(first) as u64, "candidate", "candidates")
        ));
        for _ in 1..members.len() {
            let back = |u: usize| adjacent[u].iter().filter(|&&w| visited[w]).count();
            let next = members
                .iter()
                .copied()
                .filter(|&u| !visited[u] && back(u) > 0)
                .max_by_key(|&u| (back(u), std::cmp::Reverse(size(u))))
                .unwrap_or(first);
            let edges_back = back(next);
            visited[next] = true;
            order.push(next);
            rationale.push(format!(
                "{}. {}: {} back to matched nodes, {}",
                order.len(),
                q.nodes[next].name,
                counted(edges_back as u64, "edge", "edges"),
                counted(size(next) as u64, "candidate", "candidates")
            ));
        }
    }
    Plan {
        order,
        components: plan.components.clone(),
        rationale,
    }
}

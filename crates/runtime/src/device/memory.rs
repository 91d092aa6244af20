//! Device memory planning: where the data graph lives and how much a query may take, from the free
//! memory the driver reports (`cuMemGetInfo`). Pure functions, tested on the CPU.

/// Bytes the data graph takes on a device: both CSR directions and node labels.
pub fn graph_bytes(nodes: u64, edges: u64, node_labels: bool) -> u64 {
    let offsets = 2 * (nodes + 1) * 4;
    let edges_bytes = 2 * edges * (4 + 2);
    offsets + edges_bytes + if node_labels { nodes * 4 } else { 0 }
}

/// Where the graph goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Uploaded once to device memory and reused across queries.
    Device,
    /// Kept in pinned host memory the device reads over the bus (the paper's "CPU memory" mode):
    /// slower, but any graph that fits in RAM works.
    HostMapped,
}

/// Share of free device memory the graph may take when uploaded; the rest is for a query's
/// candidates, edge candidates and partial matches.
pub const GRAPH_SHARE: f64 = 0.6;

pub fn place_graph(graph_bytes: u64, free: u64) -> Placement {
    if (graph_bytes as f64) <= free as f64 * GRAPH_SHARE {
        Placement::Device
    } else {
        Placement::HostMapped
    }
}

/// Bytes a query may take on the device: the user's budget, or what the device has free plus what
/// the query's arena already holds (it reuses those buffers), less a 1/16 margin for the driver,
/// whichever is less: a query that would not fit is refused with its size instead of failing an
/// allocation halfway.
pub fn query_budget(budget: u64, free: u64, arena: u64) -> u64 {
    let usable = free.saturating_add(arena);
    budget.min(usable - usable / 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_placement_and_batches() {
        // ConceptNet-100K: 78,093 nodes, 100,000 edges.
        let cn = graph_bytes(78_093, 100_000, false);
        assert_eq!(cn, 2 * 78_094 * 4 + 2 * 100_000 * 6);
        assert_eq!(place_graph(cn, 80 << 30), Placement::Device);
        // The full ConceptNet (34M edges, ~28M nodes: 632 MB) does not fit beside a query's buffers
        // in 512 MiB of free device memory.
        let full = graph_bytes(28_000_000, 34_000_000, false);
        assert_eq!(full, 2 * 28_000_001 * 4 + 2 * 34_000_000 * 6);
        assert_eq!(place_graph(full, 512 << 20), Placement::HostMapped);
        assert_eq!(place_graph(full, 80 << 30), Placement::Device);
        assert_eq!(query_budget(1 << 30, u64::MAX, 0), 1 << 30);
        assert_eq!(query_budget(u64::MAX, 1600, 0), 1500);
        assert_eq!(
            query_budget(u64::MAX, 1000, 600),
            1500,
            "the arena is reused"
        );
        assert_eq!(
            query_budget(u64::MAX, u64::MAX, 1 << 20),
            u64::MAX - u64::MAX / 16
        );
    }
}

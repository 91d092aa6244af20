//! Device memory planning: where the data graph lives and how many partial matches a join level may
//! hold, from the free memory the driver reports (`cuMemGetInfo`). Pure functions, tested on the CPU.

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

/// Bytes per partial match of the next level: its row, plus the count and offset of each of its
/// parent's lanes, amortised.
pub fn bytes_per_row(width: usize, lanes: usize) -> u64 {
    (width * 4 + lanes * 16) as u64
}

/// Rows a join level may write at once: within the user's budget and 80% of free device memory.
pub fn rows_per_level(budget: u64, free: u64, width: usize, lanes: usize) -> u64 {
    let usable = budget.min(free / 5 * 4);
    (usable / bytes_per_row(width, lanes)).max(1)
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
        assert_eq!(rows_per_level(1 << 30, u64::MAX, 6, 1), (1 << 30) / 40);
        assert_eq!(rows_per_level(u64::MAX, 1000, 6, 1), 800 / 40);
        assert_eq!(rows_per_level(0, 0, 6, 32), 1);
    }
}

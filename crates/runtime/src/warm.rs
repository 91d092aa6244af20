//! The warm-up [`Engine::new`](crate::Engine::new) ends with: one small query cut from the graph
//! itself (a triangle where the first nodes have one, else a two-edge star), anchored at its first
//! node and counted on `dfs` under a tight limit. A process's first query otherwise pays for cold
//! code (page faults on the binary's text, empty instruction caches) and fresh allocator pages:
//! 0.1-0.3 ms more than its later runs on HPRD and yeast, 0.5-2 ms on ConceptNet-100K. The warm-up
//! pays that once, at load time (a one-shot query pays about the same in all: the warm-up's own
//! work is a few hundredths of a millisecond once warm).
//!
//! On a graph with node labels (the subgraph-matching benchmarks' kind) a second query follows:
//! the first query's nodes grown to [`GROWN`] nodes along out-edges, every node a labelled
//! variable, so that the unanchored path (label scans, neighbour-label tests, joins, refinement,
//! leaf counts) and the allocator's larger size classes are warm too. The triangle alone left a
//! first HPRD query at 88 µs against 50 µs for the later ones; a warm-up on a 16-node query of
//! the suite brought it to 67 µs. It runs only where its label scans are short ([`GROWN_SCAN`]).
//!
//! Last, [`Engine::warm_data`] reads the graph's arrays and the engine's indexes once, hottest last:
//! the code is warm by then, but a query's data (node labels, offsets, neighbour-label sets,
//! lists) was where the build had left it, and each first read was a miss.

use std::time::Duration;

use gpsense_graph::{KnowledgeGraph, LabelId, NodeId};
use gpsense_planner::{EdgeLabel, NodeKind, Projected, QueryEdge, QueryGraph, QueryNode};

use gpsense_kernels::{Adjacency, NONE};

use crate::prefetch::{read_lines, Lines};
use crate::{Engine, EngineKind, MatchOptions, Semantics};

/// Nodes looked at for a triangle before the star is taken: the look stays far below a
/// millisecond on any graph.
const LOOK: usize = 256;

/// Neighbours of one node looked at, at most.
const FAN: usize = 16;

impl Engine<'_> {
    /// Answers the warm-up query (nothing when the graph has no node with two out-edges). Its
    /// answer is dropped; its time is bounded by a 5 ms limit and 64 matches.
    pub(crate) fn warm_up(&self) {
        // This thread's hash keys (a `getrandom` call at its first hash map, which the parsers'
        // maps would otherwise pay in the first query).
        let _ = std::collections::hash_map::RandomState::new();
        let Some(q) = warm_query(self.graph()) else {
            return;
        };
        let opts = MatchOptions {
            semantics: Semantics::Iso,
            engine: EngineKind::Dfs,
            single_thread: true,
            limit: Some(64),
            timeout: Some(Duration::from_millis(5)),
            ..MatchOptions::default()
        };
        let _ = self.count(&q, &opts);
        if !self.graph().has_node_labels() {
            return;
        }
        let Some(grown) = grown_query(self.graph(), &q) else {
            return;
        };
        // The nodes its label scans would read: past the bound (WordNet's five synset types, 20,000
        // nodes and more each) it would cost load time (7 ms there) for a path such graphs' queries
        // seldom take.
        let scan: usize = (grown.nodes.iter())
            .filter_map(|n| n.label)
            .map(|l| self.labels.nodes(l).map_or(usize::MAX, <[u32]>::len))
            .fold(0, usize::saturating_add);
        if scan <= GROWN_SCAN {
            let _ = self.count(&grown, &opts);
        }
    }
}

/// Bytes of the graph's arrays [`Engine::warm_data`] reads at most: a few milliseconds' reading at
/// most, and no more than a core's share of a shared last-level cache keeps.
const WARM_DATA: usize = 16 << 20;

impl Engine<'_> {
    /// Reads the arrays a query's node tests, joins and lists read, once, hottest last (within
    /// [`WARM_DATA`]): the build leaves them outside the core's caches, where the first queries
    /// of a process found them one miss at a time. HPRD, ten queries per fresh process (the
    /// bench's chunks): 0.84-0.87 of the time without it, in one binary with the pass switched;
    /// reading only the hottest 768 KB gained nothing, and reading before the warm-up query lost
    /// 2%. Its cost (2 MB on HPRD) is lost in the load's noise (7-10 ms).
    pub(crate) fn warm_data(&self) {
        let v = self.view();
        // A symmetric graph's view reads its out-lists for both directions.
        let dirs: &[&Adjacency] = if self.shape.symmetric {
            &[&v.out]
        } else {
            &[&v.out, &v.inc]
        };
        let mut arrays: Vec<&dyn Lines> = dirs.iter().map(|a| &a.offsets as &dyn Lines).collect();
        arrays.push(&v.node_labels);
        arrays.extend(self.labels.arrays());
        arrays.extend(dirs.iter().map(|a| &a.targets as &dyn Lines));
        // Relations are read only where the graph has several.
        if v.out.only_label == NONE {
            arrays.extend(dirs.iter().map(|a| &a.labels as &dyn Lines));
        }
        if let Some(nl) = &self.neighbour_labels {
            arrays.extend(nl.arrays());
        }
        read_lines(&arrays, WARM_DATA);
    }
}

/// Nodes the grown warm-up's label scans may read in all (HPRD's and yeast's take a few
/// thousand).
const GROWN_SCAN: usize = 1 << 15;

/// Nodes of the grown warm-up query, at most: as many as the benchmark suites' common queries
/// (HPRD's first query of a process 0.057 -> 0.040 ms, and the later ones 5-10% faster, against
/// eight nodes: their rooms are sized and their code warm before the first query).
const GROWN: usize = 16;

/// `q`'s data nodes (its anchor and the nodes its variables stand for, found again from the
/// graph) grown breadth-first along out-edges to [`GROWN`] nodes, with every out-edge of the graph
/// between them (one per ordered pair) and every node a variable: a query with at least one match.
/// `None` when it would be no bigger than `q`.
pub(crate) fn grown_query(g: &KnowledgeGraph, q: &QueryGraph) -> Option<QueryGraph> {
    let NodeKind::Concept(anchor) = q.nodes.first()?.kind else {
        return None;
    };
    let mut nodes: Vec<NodeId> = vec![anchor];
    let out = g.out();
    let mut next = 0;
    while next < nodes.len() && nodes.len() < GROWN {
        let (targets, _) = out.neighbours(nodes[next]);
        for &t in targets.iter().take(FAN) {
            if nodes.len() < GROWN && !nodes.contains(&t) {
                nodes.push(t);
            }
        }
        next += 1;
    }
    if nodes.len() <= q.nodes.len() {
        return None;
    }
    let mut edges = Vec::new();
    for (i, &x) in nodes.iter().enumerate() {
        let (targets, labels) = out.neighbours(x);
        for (j, &y) in nodes.iter().enumerate() {
            if let Some(k) = targets.iter().position(|&t| t == y) {
                edges.push((i, j, labels[k]));
            }
        }
    }
    let mut grown = shape(g, &nodes, &edges);
    grown.nodes[0].kind = NodeKind::Variable;
    Some(grown)
}

/// A triangle `a→b, a→c, b→c` of the graph's own relations and node labels, or the star `a→b,
/// a→c` of the first node with two distinct out-neighbours.
pub(crate) fn warm_query(g: &KnowledgeGraph) -> Option<QueryGraph> {
    let out = g.out();
    let mut star = None;
    for v in (0..g.node_count() as NodeId).take(LOOK) {
        let (targets, labels) = out.neighbours(v);
        let fan: Vec<(NodeId, LabelId)> = (targets.iter().copied())
            .zip(labels.iter().copied())
            .filter(|&(w, _)| w != v)
            .take(FAN)
            .collect();
        for (i, &(b, rb)) in fan.iter().enumerate() {
            for &(c, rc) in &fan[i + 1..] {
                if c == b {
                    continue;
                }
                let (bt, bl) = out.neighbours(b);
                if let Some(k) = bt.iter().position(|&t| t == c) {
                    return Some(shape(
                        g,
                        &[v, b, c],
                        &[(0, 1, rb), (0, 2, rc), (1, 2, bl[k])],
                    ));
                }
                star.get_or_insert_with(|| shape(g, &[v, b, c], &[(0, 1, rb), (0, 2, rc)]));
            }
        }
    }
    star
}

/// The query of variables labelled as `nodes` are, joined by `edges` (query node indices and
/// relation).
fn shape(g: &KnowledgeGraph, nodes: &[NodeId], edges: &[(usize, usize, LabelId)]) -> QueryGraph {
    let nodes: Vec<QueryNode> = (nodes.iter().enumerate())
        .map(|(i, &v)| QueryNode {
            name: format!("?w{i}"),
            // Anchored, so that its candidates are a few neighbour lists on any graph.
            kind: match i {
                0 => NodeKind::Concept(v),
                _ => NodeKind::Variable,
            },
            label: g.has_node_labels().then(|| g.node_label(v)),
        })
        .collect();
    QueryGraph {
        projection: (0..nodes.len()).map(Projected::Node).collect(),
        nodes,
        edges: (edges.iter())
            .map(|&(source, target, r)| QueryEdge {
                source,
                target,
                label: EdgeLabel::Fixed(r),
            })
            .collect(),
        edge_variables: Vec::new(),
        concept_sets: Vec::new(),
        distinct: false,
        limit: None,
    }
}

/// Bytes between two touches of the code: a page (the kernel maps a few around each fault).
const PAGE: usize = 4096;

/// Maps this library's code (the executable's, or the Python extension's) into the process's
/// page table, on [`crate::look_ahead`]'s thread while the graph loads: a first query otherwise
/// faults in every page of code it runs for the first time (about 0.1 ms of a first reading
/// and matching on ConceptNet-100K that the warm-up, which runs other code, does not cover).
/// Linux only; elsewhere, and when `/proc/self/maps` cannot be read, nothing.
pub(crate) fn map_own_code() {
    #[cfg(target_os = "linux")]
    {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return;
        };
        for (start, end) in own_code(&maps, map_own_code as fn() as usize) {
            for page in (start..end).step_by(PAGE) {
                // SAFETY: `page` lies in a readable mapping of the file holding this function's
                // code, which stays mapped as long as this code can run.
                unsafe { std::ptr::read_volatile(page as *const u8) };
            }
        }
    }
}

/// The executable (`r-x`) ranges of `/proc/self/maps` (`maps`) that belong to the file whose
/// code holds the address `here`.
fn own_code(maps: &str, here: usize) -> Vec<(usize, usize)> {
    let code: Vec<(usize, usize, &str)> = maps
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let perms = fields.next()?;
            // Offset, device and inode, then the path (which may hold spaces).
            let path = line
                .splitn(6, char::is_whitespace)
                .nth(5)
                .map(str::trim)
                .unwrap_or("");
            let range = (
                usize::from_str_radix(start, 16).ok()?,
                usize::from_str_radix(end, 16).ok()?,
            );
            (perms.starts_with("r-x") && !path.is_empty()).then_some((range.0, range.1, path))
        })
        .collect();
    let Some(&(_, _, own)) = code.iter().find(|&&(s, e, _)| (s..e).contains(&here)) else {
        return Vec::new();
    };
    code.iter()
        .filter(|&&(_, _, path)| path == own)
        .map(|&(s, e, _)| (s, e))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpsense_graph::GraphBuilder;

    fn graph(edges: &[(&str, &str, &str)]) -> KnowledgeGraph {
        let mut b = GraphBuilder::new();
        for (s, r, t) in edges {
            let (s, r, t) = (
                b.node(s).unwrap(),
                b.relation(r).unwrap(),
                b.node(t).unwrap(),
            );
            b.add_edge(s, r, t, 1.0);
        }
        b.build().unwrap().0
    }

    #[test]
    fn the_warm_up_is_a_triangle_of_the_graph_where_it_has_one() {
        let g = graph(&[
            ("a", "r", "b"),
            ("a", "s", "c"),
            ("b", "t", "c"),
            ("c", "r", "d"),
        ]);
        let q = warm_query(&g).expect("a query");
        assert_eq!(q.edges.len(), 3);
        let engine = Engine::new(&g);
        let opts = MatchOptions {
            engine: EngineKind::Dfs,
            ..MatchOptions::default()
        };
        assert_eq!(engine.count(&q, &opts).expect("counted").rows, 1);
    }

    #[test]
    fn the_grown_warm_up_has_every_edge_between_its_nodes_and_a_match() {
        let mut b = GraphBuilder::new();
        // Three more nodes than the grown query takes.
        let names: Vec<String> = (0..GROWN + 3).map(|i| format!("n{i}")).collect();
        let v: Vec<_> = (names.iter().enumerate())
            .map(|(i, n)| {
                let v = b.node(n).unwrap();
                b.set_node_label(v, if i % 2 == 0 { "even" } else { "odd" })
                    .unwrap();
                v
            })
            .collect();
        let r = b.relation("r").unwrap();
        // A triangle n0 n1 n2, a path on from n2 to the last node, and a back edge n6 -> n1.
        let path = (2..names.len() - 1).map(|i| (i, i + 1));
        for (s, t) in [(0, 1), (0, 2), (1, 2), (6, 1)].into_iter().chain(path) {
            b.add_edge(v[s], r, v[t], 1.0);
        }
        let g = b.build().unwrap().0;
        let q = warm_query(&g).expect("a triangle");
        let grown = grown_query(&g, &q).expect("grown");
        assert_eq!(grown.nodes.len(), GROWN);
        assert!((grown.nodes.iter()).all(|n| n.kind == NodeKind::Variable && n.label.is_some()));
        // n0..n15: the triangle's three edges, the path n2..n15's thirteen and the back edge.
        assert_eq!(grown.edges.len(), 3 + (GROWN - 3) + 1);
        let engine = Engine::new(&g);
        let opts = MatchOptions {
            engine: EngineKind::Dfs,
            ..MatchOptions::default()
        };
        assert!(engine.count(&grown, &opts).expect("counted").rows >= 1);
        // Nothing to grow: the triangle is the whole graph.
        let small = graph(&[("a", "r", "b"), ("a", "s", "c"), ("b", "t", "c")]);
        assert!(grown_query(&small, &warm_query(&small).unwrap()).is_none());
    }

    #[test]
    fn without_a_triangle_it_is_a_star_and_without_two_out_edges_nothing() {
        let star = graph(&[("a", "r", "b"), ("a", "r", "c"), ("c", "r", "d")]);
        assert_eq!(warm_query(&star).map(|q| q.edges.len()), Some(2));
        let path = graph(&[("a", "r", "b"), ("b", "r", "c")]);
        assert!(warm_query(&path).is_none());
    }

    const MAPS: &str = "\
5581a0000000-5581a0200000 r--p 00000000 08:01 1234                       /opt/my bin/gpsense
5581a0200000-5581a0900000 r-xp 00200000 08:01 1234                       /opt/my bin/gpsense
5581a0900000-5581a0a00000 r--p 00900000 08:01 1234                       /opt/my bin/gpsense
5581a0b00000-5581a0b80000 r-xp 00b00000 08:01 1234                       /opt/my bin/gpsense
7f0000000000-7f0000100000 r-xp 00028000 08:01 99                         /usr/lib/libc.so.6
7f0000200000-7f0000300000 rw-p 00000000 00:00 0 
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
";

    #[test]
    fn own_code_is_every_executable_range_of_the_file_holding_the_address() {
        let here = 0x5581a0300000;
        assert_eq!(
            own_code(MAPS, here),
            [
                (0x5581a0200000, 0x5581a0900000),
                (0x5581a0b00000, 0x5581a0b80000)
            ]
        );
        assert_eq!(
            own_code(MAPS, 0x7f0000000010),
            [(0x7f0000000000, 0x7f0000100000)]
        );
        // An address in no executable file mapping (or unreadable maps): nothing to touch.
        assert!(own_code(MAPS, 0x7f0000200010).is_empty());
        assert!(own_code("garbage\n\n", here).is_empty());
    }

    #[test]
    fn this_process_finds_its_own_code() {
        if cfg!(target_os = "linux") {
            let maps = std::fs::read_to_string("/proc/self/maps").expect("linux has it");
            let ranges = own_code(&maps, map_own_code as fn() as usize);
            assert!(ranges
                .iter()
                .any(|&(s, e)| (s..e).contains(&(map_own_code as fn() as usize))));
            map_own_code();
        }
    }
}

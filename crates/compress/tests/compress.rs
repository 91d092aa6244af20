//! The compression itself: the similarity test as intended (not as printed), labels, Definition 4's
//! weights and Definition 5's bound, the invariants every level keeps, stopping rules, the MinHash
//! pass at scale, and the `.gpsc` format's round trip and error paths.

use std::path::Path;

use gpsense_compress::{
    compress, format, topology_bytes, CompressError, CompressOptions, CompressedGraph, NoProgress,
};
use gpsense_graph::{GraphBuilder, KnowledgeGraph, NodeId};

fn graph(triples: &[(&str, &str, &str)]) -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for (s, r, t) in triples {
        b.add_triple(s, r, t, 1.0).unwrap();
    }
    b.build().unwrap().0
}

fn one_level(delta: f64) -> CompressOptions {
    CompressOptions {
        deltas: vec![delta],
        ..CompressOptions::default()
    }
}

fn together(g: &KnowledgeGraph, c: &CompressedGraph, a: &str, b: &str) -> bool {
    c.hyper_node(g.node_id(a).unwrap()) == c.hyper_node(g.node_id(b).unwrap())
}

/// `u` has four entries, `v` three of them: |common| / max = 3/4. The printed test
/// (max(|adj|/|common|) >= delta) would merge any pair; the intended one merges these at 0.7 only.
#[test]
fn similarity_is_common_over_the_larger_list() {
    let g = graph(&[
        ("u", "IsA", "a"),
        ("u", "IsA", "b"),
        ("u", "AtLocation", "c"),
        ("d", "UsedFor", "u"),
        ("v", "IsA", "a"),
        ("v", "IsA", "b"),
        ("v", "AtLocation", "c"),
        ("w", "IsA", "z"),
    ]);
    let c = compress(&g, &one_level(0.7), &NoProgress).unwrap();
    assert!(together(&g, &c, "u", "v"));
    assert!(!together(&g, &c, "u", "w"), "nothing in common");
    let c = compress(&g, &one_level(0.8), &NoProgress).unwrap();
    assert!(!together(&g, &c, "u", "v"), "3/4 < 0.8");
}

/// Direction and relation both count: an incoming edge is not an outgoing one.
#[test]
fn common_edges_need_the_same_direction_and_relation() {
    let g = graph(&[
        ("u", "IsA", "a"),
        ("a", "IsA", "v"),
        ("x", "IsA", "b"),
        ("y", "PartOf", "b"),
    ]);
    let c = compress(&g, &one_level(0.5), &NoProgress).unwrap();
    assert!(!together(&g, &c, "u", "v"));
    assert!(!together(&g, &c, "x", "y"));
}

#[test]
fn different_node_labels_never_merge() {
    let mut b = GraphBuilder::new();
    for s in ["p", "q", "r"] {
        b.add_triple(s, "IsA", "t", 1.0).unwrap();
    }
    for (s, l) in [("p", "noun"), ("q", "verb"), ("r", "noun"), ("t", "noun")] {
        let v = b.existing_node(s).unwrap();
        b.set_node_label(v, l).unwrap();
    }
    let g = b.build().unwrap().0;
    let c = compress(&g, &one_level(1.0), &NoProgress).unwrap();
    assert!(together(&g, &c, "p", "r"));
    assert!(!together(&g, &c, "p", "q"));
    assert_eq!(
        c.top().node_label(c.hyper_node(g.node_id("q").unwrap())),
        g.node_label(g.node_id("q").unwrap())
    );
}

/// a and b point to x and y; x and y merge (same incoming edges), then a and b (same targets).
#[test]
fn definition_4_weights_and_definition_5_bound() {
    let g = graph(&[
        ("a", "IsA", "x"),
        ("a", "IsA", "y"),
        ("b", "IsA", "x"),
        ("b", "IsA", "y"),
        ("a", "RelatedTo", "b"),
    ]);
    let c = compress(&g, &one_level(1.0), &NoProgress).unwrap();
    assert!(together(&g, &c, "x", "y"));
    assert!(
        !together(&g, &c, "a", "b"),
        "a -RelatedTo-> b makes them differ"
    );
    let a = c.hyper_node(g.node_id("a").unwrap());
    let x = c.hyper_node(g.node_id("x").unwrap());
    let isa = g.relation_id("IsA").unwrap();
    let top = c.top();
    let e = top.out().label_range(a, isa).start;
    assert_eq!(top.out().targets()[e], x);
    assert_eq!(
        c.out_weights().edge[e],
        2,
        "a has two IsA edges into {{x, y}}"
    );
    assert_eq!(c.out_weights().node[a as usize], 0);
    assert_eq!(
        c.out_weights().bound[a as usize],
        3,
        "2 into {{x, y}} + 1 to b"
    );
    let e_in = top.inc().label_range(x, isa).start;
    assert_eq!(c.in_weights().edge[e_in], 1, "x has one IsA edge from a");
    // Merge a and b at a second level: the RelatedTo edge becomes internal.
    let c = compress(
        &g,
        &CompressOptions {
            // a and b now share one of two entries each (1/2): enough bands make the low Jaccard
            // similarity (1/3) certain to share a bucket.
            deltas: vec![1.0, 0.5],
            lsh: gpsense_compress::LshOptions {
                bands: 32,
                rows: 1,
                window: 8,
            },
            ..Default::default()
        },
        &NoProgress,
    )
    .unwrap();
    let a = c.hyper_node(g.node_id("a").unwrap());
    assert!(together(&g, &c, "a", "b"));
    assert_eq!(
        c.out_weights().node[a as usize],
        1,
        "a -RelatedTo-> b inside"
    );
    assert_eq!(c.out_weights().bound[a as usize], 3);
}

/// A small seeded generator (SplitMix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Nodes copying one of a few templates (with noise), hubs, self-loops, edges among copies.
fn random_graph(rng: &mut Rng, nodes: u64) -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    let hubs = 5 + rng.below(10);
    let templates: Vec<Vec<(u64, u64, bool)>> = (0..4)
        .map(|_| {
            (0..1 + rng.below(6))
                .map(|_| (rng.below(3), rng.below(hubs), rng.below(3) == 0))
                .collect()
        })
        .collect();
    for v in 0..nodes {
        let name = format!("n{v}");
        for &(r, h, inc) in &templates[rng.below(4) as usize] {
            if rng.below(8) == 0 {
                continue;
            }
            let (s, t) = if inc {
                (format!("h{h}"), name.clone())
            } else {
                (name.clone(), format!("h{h}"))
            };
            b.add_triple(&s, &format!("r{r}"), &t, 1.0).unwrap();
        }
        if rng.below(7) == 0 {
            b.add_triple(&name, "r0", &name, 1.0).unwrap();
        }
        if rng.below(5) == 0 {
            b.add_triple(&name, "r1", &format!("n{}", rng.below(nodes)), 1.0)
                .unwrap();
        }
    }
    b.build().unwrap().0
}

/// Every level keeps what matching relies on: each original edge has its image, hyper-nodes
/// partition the nodes, and every member's degree stays within its hyper-node's bound.
#[test]
fn invariants_hold_at_every_level_on_random_graphs() {
    let mut rng = Rng(42);
    let mut multi = 0;
    for case in 0..60 {
        let nodes = 20 + rng.below(200);
        let g = random_graph(&mut rng, nodes);
        let deltas = [1.0, 0.9, 0.7, 0.5, 0.3];
        let opts = CompressOptions {
            deltas: (0..1 + rng.below(4))
                .map(|_| deltas[rng.below(5) as usize])
                .collect(),
            ..CompressOptions::default()
        };
        let c = compress(&g, &opts, &NoProgress).unwrap();
        multi += (c.levels().len() >= 2) as usize;
        check_invariants(&g, &c, case);
        // Reloading rebuilds the same top graph from the mapping lists alone.
        let bytes = format::to_bytes(&g, &c).unwrap();
        let (g2, c2) = format::from_bytes(&bytes, Path::new("mem.gpsc")).unwrap();
        assert_eq!(g2, g);
        assert_eq!(c2.top(), c.top(), "case {case}");
        assert_eq!(c2.hyper_nodes(), c.hyper_nodes());
        assert_eq!(c2.out_weights(), c.out_weights());
        assert_eq!(c2.table(), c.table());
    }
    assert!(
        multi >= 20,
        "only {multi} cases merged at two or more levels"
    );
}

fn check_invariants(g: &KnowledgeGraph, c: &CompressedGraph, case: usize) {
    let top = c.top();
    for (a, r, b) in g.edges() {
        assert!(
            top.out()
                .has_edge(c.hyper_node(a), Some(r), c.hyper_node(b)),
            "case {case}"
        );
    }
    let mut seen = vec![false; g.node_count()];
    for x in 0..top.node_count() as u32 {
        let members = c.members(x);
        assert!(!members.is_empty());
        for &v in members {
            assert!(!seen[v as usize]);
            seen[v as usize] = true;
            assert_eq!(c.hyper_node(v), x);
            assert!(
                g.out().degree(v) as u32 <= c.out_weights().bound[x as usize],
                "case {case}"
            );
            assert!(
                g.inc().degree(v) as u32 <= c.in_weights().bound[x as usize],
                "case {case}"
            );
        }
    }
    assert!(seen.iter().all(|&s| s));
    let mut prev = g.node_count() as u64;
    for l in c.levels() {
        assert!(
            l.nodes < prev,
            "a level that merges nothing is not recorded"
        );
        assert_eq!(
            prev - l.nodes,
            l.exact_pairs + l.near_pairs,
            "pairs: one node fewer each"
        );
        prev = l.nodes;
    }
}

#[test]
fn stops_when_nothing_merges() {
    let g = graph(&[("a", "IsA", "b"), ("b", "IsA", "c"), ("c", "PartOf", "a")]);
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    assert!(c.levels().is_empty());
    assert_eq!(c.top().node_count(), 3);
    assert_eq!(c.table().len(), 1);
}

#[test]
fn a_size_target_stops_early_or_repeats_the_last_threshold() {
    let mut rng = Rng(7);
    let g = random_graph(&mut rng, 400);
    let full = topology_bytes(g.node_count() as u64, g.edge_count() as u64, false);
    let c = compress(
        &g,
        &CompressOptions {
            deltas: vec![0.7],
            target_bytes: Some(full),
            ..Default::default()
        },
        &NoProgress,
    )
    .unwrap();
    assert!(c.levels().is_empty(), "already small enough");
    let c = compress(
        &g,
        &CompressOptions {
            deltas: vec![0.7],
            target_bytes: Some(full / 4),
            ..Default::default()
        },
        &NoProgress,
    )
    .unwrap();
    let last = c.table().last().unwrap().bytes;
    assert!(c.levels().len() > 1, "the threshold repeats");
    assert!(last <= full / 4 || c.levels().len() == gpsense_compress::MAX_LEVELS || last > 0);
    let before_last = &c.table()[c.table().len() - 2];
    assert!(
        before_last.bytes > full / 4,
        "no level runs after the target is met"
    );
}

/// 3,000 nodes, each a template of 12 entries with one entry replaced: no two are identical, so
/// only the MinHash pass can pair them (sim = 11/12 or 10/12 against another copy).
#[test]
fn minhash_finds_near_equal_nodes_at_scale() {
    let mut rng = Rng(99);
    let mut b = GraphBuilder::new();
    for v in 0..3000u64 {
        let template = v % 10;
        let changed = rng.below(12);
        for i in 0..12u64 {
            let hub = if i == changed {
                1000 + v
            } else {
                template * 20 + i
            };
            b.add_triple(&format!("c{v}"), "RelatedTo", &format!("h{hub}"), 1.0)
                .unwrap();
        }
    }
    let g = b.build().unwrap().0;
    let c = compress(&g, &one_level(0.8), &NoProgress).unwrap();
    let level = &c.levels()[0];
    assert_eq!(level.exact_pairs, 0);
    assert!(
        level.near_pairs >= 1350,
        "{} of 1500 possible pairs",
        level.near_pairs
    );
}

#[test]
fn bad_options_are_errors() {
    let g = graph(&[("a", "IsA", "b")]);
    for deltas in [
        vec![],
        vec![0.0],
        vec![1.5],
        vec![f64::NAN],
        vec![0.8, -1.0],
    ] {
        let err = compress(
            &g,
            &CompressOptions {
                deltas: deltas.clone(),
                ..Default::default()
            },
            &NoProgress,
        );
        assert!(
            matches!(
                err,
                Err(CompressError::NoLevels | CompressError::BadDelta(_))
            ),
            "{deltas:?}"
        );
    }
}

#[test]
fn file_round_trip_and_damage() {
    let mut rng = Rng(3);
    let g = random_graph(&mut rng, 60);
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.gpsc");
    format::save(&path, &g, &c).unwrap();
    let (g2, c2) = format::load(&path).unwrap();
    assert_eq!((g2, c2.top()), (g.clone(), c.top()));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(
        format::snapshot_kind(&bytes),
        Some(gpsense_compress::KIND_COMPRESSED)
    );
    for len in (0..bytes.len()).step_by(97) {
        assert!(
            format::from_bytes(&bytes[..len], &path).is_err(),
            "truncated at {len}"
        );
    }
    for i in (0..bytes.len()).step_by(13) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x20;
        assert!(format::from_bytes(&bad, &path).is_err(), "byte {i}");
    }
    // A plain graph snapshot is not a compressed graph.
    let err = format::from_bytes(&g.to_snapshot_bytes().unwrap(), &path).unwrap_err();
    assert!(err.to_string().contains("kind"), "{err}");
    // A compression belongs to its graph.
    let other = random_graph(&mut rng, 61);
    assert!(format::to_bytes(&other, &c).is_err());
    let node: NodeId = 0;
    assert!(c.members(c.hyper_node(node)).contains(&node));
}

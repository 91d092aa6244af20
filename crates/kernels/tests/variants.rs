//! Every kernel variant against its kernel's reference (the first variant), on random inputs and on
//! a real graph.

mod common;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{view, Rng};
use gpsense_graph::ingest::{ingest, IngestOptions, NoProgress};
use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_kernels::variants::{COUNT_EDGE_CANDIDATES, FILTER_NEIGHBOURS, SCAN, WRITE_WORD};
use gpsense_kernels::{bits, Dir, NONE};

fn random_graph(rng: &mut Rng, nodes: u64, edges: u64) -> KnowledgeGraph {
    let mut b = GraphBuilder::new();
    for v in 0..nodes {
        b.node(&v.to_string()).unwrap();
    }
    for _ in 0..edges {
        let (s, t) = (rng.below(nodes) as u32, rng.below(nodes) as u32);
        let r = b.relation(&format!("r{}", rng.below(3))).unwrap();
        b.add_edge(s, r, t, 1.0);
    }
    b.build().unwrap().0
}

#[test]
fn scan_variants_agree() {
    let mut rng = Rng(1);
    for len in [0usize, 1, 5, 255, 256, 257, 1000, 16_384, 70_000] {
        let values: Vec<u64> = (0..len).map(|_| rng.below(1000)).collect();
        let mut reference = values.clone();
        let total = (SCAN[0].run)(&mut reference);
        for v in SCAN {
            let mut got = values.clone();
            assert_eq!((v.run)(&mut got), total, "{} total, len {len}", v.name);
            assert_eq!(got, reference, "{} prefix sums, len {len}", v.name);
        }
    }
}

#[test]
fn write_word_variants_agree() {
    let mut rng = Rng(2);
    for _ in 0..5000 {
        let word = rng.next() as u32 & rng.next() as u32;
        let w = rng.below(1 << 20) as usize;
        let mut reference = vec![0u32; word.count_ones() as usize];
        (WRITE_WORD[0].run)(w, word, &mut reference);
        for v in WRITE_WORD {
            let mut got = vec![0u32; word.count_ones() as usize];
            (v.run)(w, word, &mut got);
            assert_eq!(got, reference, "{}", v.name);
        }
    }
}

/// Filter and count variants on random graphs and on ConceptNet-100K.
#[test]
fn graph_kernel_variants_agree() {
    let mut rng = Rng(3);
    let mut graphs: Vec<KnowledgeGraph> = (0..20)
        .map(|i| random_graph(&mut rng, 50 + i * 10, 400 + i * 50))
        .collect();
    let cn =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/conceptnet-100k/train.txt.gz");
    graphs.push(
        ingest(&[cn], &IngestOptions::default(), &NoProgress)
            .unwrap()
            .0,
    );
    for g in &graphs {
        let v = view(g);
        let n = g.node_count() as u64;
        let words = bits::words_for(n as usize);
        let candidates: Vec<u32> = {
            let mut c: Vec<u32> = (0..200.min(n)).map(|_| rng.below(n) as u32).collect();
            c.sort_unstable();
            c.dedup();
            c
        };
        let allowed: Vec<u32> = (0..words).map(|_| rng.next() as u32).collect();
        for dir in [Dir::Out, Dir::In] {
            for label in [NONE, 0, 1] {
                let marks: Vec<Vec<u32>> = FILTER_NEIGHBOURS
                    .iter()
                    .map(|var| {
                        let mark: Vec<AtomicU32> = (0..words).map(|_| AtomicU32::new(0)).collect();
                        for i in 0..candidates.len() {
                            (var.run)(i, &candidates, dir, label, &allowed, &mark, &v);
                        }
                        mark.iter().map(|a| a.load(Ordering::Relaxed)).collect()
                    })
                    .collect();
                assert!(
                    marks.iter().all(|m| *m == marks[0]),
                    "filter variants disagree"
                );
                for i in 0..candidates.len() {
                    let counts: Vec<u32> = COUNT_EDGE_CANDIDATES
                        .iter()
                        .map(|var| (var.run)(i, &candidates, dir, label, &allowed, &v))
                        .collect();
                    assert!(
                        counts.iter().all(|&c| c == counts[0]),
                        "count variants disagree: {counts:?}"
                    );
                }
            }
        }
    }
}

/// The candidate-edge write body by lookups (`index_of`) gives what the intersecting one gives, for
/// fixed and variable relations, both directions, and `to` sets from a handful of nodes (where long
/// runs are galloped through instead) to most of the graph.
#[test]
fn indexed_candidate_edges_agree_with_intersections() {
    use gpsense_kernels::space::{write_space_edges, write_space_edges_indexed};
    let mut rng = Rng(9);
    for case in 0..40 {
        let nodes = 20 + rng.below(200);
        let g = random_graph(&mut rng, nodes, nodes * (1 + case % 8));
        let v = view(&g);
        let mut pick = |keep: u64| -> Vec<u32> {
            (0..nodes as u32)
                .filter(|_| rng.below(100) < keep)
                .collect()
        };
        let (from, to) = (pick(50), pick([2, 30, 90][case as usize % 3]));
        let mut index_of = vec![NONE; nodes as usize];
        for (j, &w) in to.iter().enumerate() {
            index_of[w as usize] = j as u32;
        }
        for dir in [Dir::Out, Dir::In] {
            for label in [0, 1, NONE] {
                for i in 0..from.len() {
                    let room = g.node_count() * 3;
                    let (mut a, mut b) = (vec![0u32; room], vec![0u32; room]);
                    let n = write_space_edges(i, &from, dir, label, &to, &v, &mut a);
                    let m =
                        write_space_edges_indexed(i, &from, dir, label, &to, &index_of, &v, &mut b);
                    assert_eq!(a[..n], b[..m], "case {case}, {dir:?}, label {label}, i {i}");
                }
            }
        }
    }
}

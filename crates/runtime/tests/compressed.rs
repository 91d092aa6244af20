//! Matching through a compressed graph gives exactly the uncompressed engine's answers: the same
//! multiset of projected rows (DISTINCT included), the same counts and `limit_reached`, under iso and
//! hom, on seeded random graphs built to merge at several levels (self-loops, node labels, concepts
//! inside hyper-nodes) and on random queries; with a LIMIT, every row returned is a row of the full
//! answer and there are as many as the uncompressed engine returns.

#[allow(dead_code)]
mod common;

use common::{random_graph, random_query, sub_multiset, SplitMix64, TestGraph};
use gpsense_compress::{compress, CompressOptions, CompressedGraph, LshOptions, NoProgress};
use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_planner::{NodeKind, QueryGraph};
use gpsense_runtime::{CompressedEngine, Engine, EngineKind, MatchError, MatchOptions, Semantics};

/// What one run returned, comparable across the two paths.
#[derive(Debug, PartialEq)]
enum Outcome {
    Rows {
        rows: Vec<Vec<u32>>,
        limit_reached: bool,
        count: u128,
    },
    Error(MatchError),
}

fn plain(g: &KnowledgeGraph, q: &QueryGraph, opts: &MatchOptions) -> Outcome {
    let e = Engine::new(g);
    let (mut rows, report) = match e.collect(q, opts) {
        Ok(r) => r,
        Err(err) => return Outcome::Error(err),
    };
    rows.sort_unstable();
    let count = e.count(q, opts).expect("count after a successful run").rows;
    Outcome::Rows {
        rows,
        limit_reached: report.limit_reached,
        count,
    }
}

fn through(ce: &CompressedEngine, q: &QueryGraph, opts: &MatchOptions) -> Outcome {
    let (mut rows, report) = match ce.collect(q, opts) {
        Ok(r) => r,
        Err(err) => return Outcome::Error(err),
    };
    rows.sort_unstable();
    let count = ce.count(q, opts).expect("count after a successful run");
    Outcome::Rows {
        rows,
        limit_reached: report.report.limit_reached,
        count: count.report.rows,
    }
}

/// Compares the two paths on one query; with a LIMIT, rows may legitimately differ (which rows come
/// first depends on the join order), so they are checked against the full answer instead.
/// Returns false when the case was skipped (too many matches).
fn compare(g: &KnowledgeGraph, ce: &CompressedEngine, q: &QueryGraph, opts: &MatchOptions) -> bool {
    if too_many(g, q, opts) {
        return false;
    }
    let want = plain(g, q, opts);
    let got = through(ce, q, opts);
    let limited = q.limit.is_some() || opts.limit.is_some();
    match (&want, &got) {
        (
            Outcome::Rows {
                rows: wr,
                limit_reached: wl,
                count: wc,
            },
            Outcome::Rows {
                rows: gr,
                limit_reached: gl,
                count: gc,
            },
        ) if limited => {
            let unlimited = QueryGraph {
                limit: None,
                ..q.clone()
            };
            let all = match plain(
                g,
                &unlimited,
                &MatchOptions {
                    limit: None,
                    memory_budget: 1 << 30,
                    ..opts.clone()
                },
            ) {
                Outcome::Rows { rows, .. } => rows,
                Outcome::Error(e) => panic!("unlimited query failed: {e}"),
            };
            assert_eq!(
                (wr.len(), wl, wc),
                (gr.len(), gl, gc),
                "limited run differs\n{q}"
            );
            assert!(
                sub_multiset(gr, &all),
                "a limited row is not an answer\n{q}"
            );
        }
        _ => assert_eq!(want, got, "{:?} differs\n{q}", opts.semantics),
    }
    true
}

/// Matches beyond which a random case is skipped: keeps the debug-mode run short.
const CAP: u64 = 3000;

/// Whether the full answer of `q` (no DISTINCT, no LIMIT) exceeds [`CAP`].
fn too_many(g: &KnowledgeGraph, q: &QueryGraph, opts: &MatchOptions) -> bool {
    let full = QueryGraph {
        limit: None,
        distinct: false,
        ..q.clone()
    };
    let capped = MatchOptions {
        limit: Some(CAP),
        ..opts.clone()
    };
    Engine::new(g)
        .count(&full, &capped)
        .is_ok_and(|r| r.limit_reached)
}

/// A graph built to compress: `groups` template neighbourhoods, each copied to several nodes with
/// an entry sometimes dropped or changed (near-equal signatures), plus self-loops and a few edges
/// between copies, so that merged nodes make their neighbours equal at the next level.
fn similar_graph(rng: &mut SplitMix64, labelled: bool) -> TestGraph {
    let hubs = 4 + rng.index(4);
    let relations = 2 + rng.index(2);
    let groups = 2 + rng.index(3);
    let mut b = GraphBuilder::new();
    let mut n = 0u32;
    let mut node = |b: &mut GraphBuilder| {
        let id = b.node(&format!("n{n}")).unwrap();
        n += 1;
        id
    };
    for j in 0..relations {
        b.relation(&format!("r{j}")).unwrap();
    }
    let hub_ids: Vec<u32> = (0..hubs).map(|_| node(&mut b)).collect();
    let mut copies_of_groups = Vec::new();
    for _ in 0..groups {
        let size = 1 + rng.index(5);
        let template: Vec<(u16, u32, bool)> = (0..size)
            .map(|_| {
                (
                    rng.index(relations) as u16,
                    hub_ids[rng.index(hubs)],
                    rng.chance(1, 3),
                )
            })
            .collect();
        let copies = 2 + rng.index(6);
        let ids: Vec<u32> = (0..copies).map(|_| node(&mut b)).collect();
        for &v in &ids {
            for &(r, h, incoming) in &template {
                if rng.chance(1, 10) {
                    continue;
                }
                let h = if rng.chance(1, 12) {
                    hub_ids[rng.index(hubs)]
                } else {
                    h
                };
                if incoming {
                    b.add_edge(h, r, v, 1.0);
                } else {
                    b.add_edge(v, r, h, 1.0);
                }
            }
            if rng.chance(1, 6) {
                b.add_edge(v, rng.index(relations) as u16, v, 1.0);
            }
        }
        if rng.chance(1, 2) {
            // A ring among the copies: merged copies then hold edges between their own members.
            let r = rng.index(relations) as u16;
            for w in ids.windows(2) {
                b.add_edge(w[0], r, w[1], 1.0);
            }
        }
        copies_of_groups.push(ids);
    }
    // Edges from second-tier nodes to copies: equal once the copies merge.
    for _ in 0..rng.index(6) {
        let v = node(&mut b);
        let ids = &copies_of_groups[rng.index(groups)];
        let r = rng.index(relations) as u16;
        b.add_edge(v, r, ids[rng.index(ids.len())], 1.0);
    }
    if labelled {
        let kinds = 1 + rng.below(2);
        for v in 0..n {
            b.set_node_label(v, &format!("L{}", rng.below(kinds)))
                .unwrap();
        }
    }
    let (g, _) = b.build().unwrap();
    TestGraph {
        nodes: g.node_count(),
        relations,
        label_names: g.node_label_names().len(),
        edges: g.edges().collect(),
        g,
    }
}

fn random_options(rng: &mut SplitMix64) -> CompressOptions {
    const DELTAS: [f64; 5] = [1.0, 0.9, 0.7, 0.5, 0.3];
    let levels = 1 + rng.index(4);
    CompressOptions {
        deltas: (0..levels)
            .map(|_| DELTAS[rng.index(DELTAS.len())])
            .collect(),
        target_bytes: None,
        lsh: LshOptions {
            bands: 1 + rng.index(12),
            rows: 1 + rng.index(3),
            window: 1 + rng.index(8),
        },
    }
}

/// How much merging the random cases exercised, so that a compression that merges nothing fails.
#[derive(Default, Debug)]
struct Coverage {
    cases: usize,
    multi_level: usize,
    near_pairs: u64,
    concept_in_hyper_node: usize,
    concept_sets: usize,
    edge_inside_hyper_node: usize,
}

fn note(cov: &mut Coverage, c: &CompressedGraph, q: &QueryGraph) {
    let concepts_merged = (0..q.nodes.len()).any(|u| {
        q.concept_nodes(u)
            .is_some_and(|vs| vs.iter().any(|&v| c.members(c.hyper_node(v)).len() > 1))
    });
    cov.concept_in_hyper_node += concepts_merged as usize;
    cov.concept_sets += q
        .nodes
        .iter()
        .any(|n| matches!(n.kind, NodeKind::ConceptSet(_))) as usize;
}

#[test]
fn random_graphs_answer_exactly_as_uncompressed() {
    let mut rng = SplitMix64::new(0x5eed_c0de);
    let mut cov = Coverage::default();
    for case in 0..250 {
        let tg = if case % 4 == 3 {
            random_graph(&mut rng)
        } else {
            similar_graph(&mut rng, case % 3 == 0)
        };
        let opts = random_options(&mut rng);
        let c = compress(&tg.g, &opts, &NoProgress).unwrap();
        cov.multi_level += (c.levels().len() >= 2) as usize;
        cov.near_pairs += c.levels().iter().map(|l| l.near_pairs).sum::<u64>();
        let ce = CompressedEngine::new(&tg.g, &c).unwrap();
        for _ in 0..6 {
            let q = random_query(&mut rng, &tg);
            note(&mut cov, &c, &q);
            for semantics in [Semantics::Iso, Semantics::Hom] {
                let mopts = MatchOptions {
                    semantics,
                    engine: EngineKind::Dfs,
                    single_thread: rng.chance(1, 2),
                    ..MatchOptions::default()
                };
                cov.cases += compare(&tg.g, &ce, &q, &mopts) as usize;
            }
        }
        cov.edge_inside_hyper_node += shares_hyper_node(&tg.g, &c) as usize;
    }
    eprintln!("{cov:?}");
    assert!(cov.cases >= 2500, "{cov:?}");
    assert!(cov.multi_level >= 60, "{cov:?}");
    assert!(cov.near_pairs >= 100, "{cov:?}");
    assert!(cov.concept_in_hyper_node >= 100, "{cov:?}");
    assert!(cov.concept_sets >= 100, "{cov:?}");
    assert!(cov.edge_inside_hyper_node >= 40, "{cov:?}");
}

/// Whether some edge joins two members of one hyper-node (a query edge matched there has both
/// endpoints in one hyper-node: the non-injective image the compressed match must allow).
fn shares_hyper_node(g: &KnowledgeGraph, c: &CompressedGraph) -> bool {
    g.edges()
        .any(|(a, _, b)| a != b && c.hyper_node(a) == c.hyper_node(b))
}

/// The kernels engine on the compressed graph, a tight memory budget, and the options' limit.
#[test]
fn other_engines_and_options_agree() {
    let mut rng = SplitMix64::new(77);
    for case in 0..40 {
        let tg = similar_graph(&mut rng, case % 2 == 0);
        let c = compress(&tg.g, &random_options(&mut rng), &NoProgress).unwrap();
        let ce = CompressedEngine::new(&tg.g, &c).unwrap();
        for _ in 0..4 {
            let q = random_query(&mut rng, &tg);
            for semantics in [Semantics::Iso, Semantics::Hom] {
                let mopts = MatchOptions {
                    semantics,
                    engine: EngineKind::Kernels,
                    lanes: if rng.chance(1, 2) { 32 } else { 1 },
                    memory_budget: if rng.chance(1, 2) { 2000 } else { 1 << 30 },
                    limit: rng.chance(1, 3).then(|| rng.below(6)),
                    refine_rounds: rng.below(3) as u32,
                    ..MatchOptions::default()
                };
                compare(&tg.g, &ce, &q, &mopts);
            }
        }
    }
}

/// Two concepts in one hyper-node, a self-loop inside a hyper-node, and a variable that must take the
/// other member of a concept's hyper-node under iso.
#[test]
fn concepts_and_loops_inside_hyper_nodes() {
    let mut b = GraphBuilder::new();
    for (s, r, t) in [
        ("cat", "IsA", "animal"),
        ("dog", "IsA", "animal"),
        ("cat", "AtLocation", "home"),
        ("dog", "AtLocation", "home"),
        ("cat", "RelatedTo", "dog"),
        ("dog", "RelatedTo", "cat"),
        ("cat", "RelatedTo", "cat"),
        ("dog", "RelatedTo", "dog"),
        ("puppy", "IsA", "dog"),
        ("kitten", "IsA", "cat"),
    ] {
        b.add_triple(s, r, t, 1.0).unwrap();
    }
    let g = b.build().unwrap().0;
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    let cat = g.node_id("cat").unwrap();
    let dog = g.node_id("dog").unwrap();
    assert_eq!(
        c.hyper_node(cat),
        c.hyper_node(dog),
        "cat and dog are identical"
    );
    let ce = CompressedEngine::new(&g, &c).unwrap();
    let queries = [
        "SELECT * WHERE { cat RelatedTo ?x }",
        "SELECT * WHERE { cat RelatedTo dog . dog RelatedTo cat }",
        "SELECT * WHERE { ?x RelatedTo ?x . ?x IsA animal }",
        "SELECT * WHERE { ?x RelatedTo ?y . ?y RelatedTo ?x }",
        "SELECT * WHERE { ?k IsA ?x . ?x ?r ?y . ?y IsA animal }",
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home . ?x RelatedTo cat }",
        "SELECT DISTINCT ?r WHERE { ?x ?r ?y }",
        "SELECT * WHERE { cat IsA animal . ?x IsA animal }",
    ];
    for text in queries {
        let q = gpsense_planner::compile(text, &g).unwrap();
        for semantics in [Semantics::Iso, Semantics::Hom] {
            // The emulated GPU pipeline runs the compressed join as a GPU would.
            for engine in [EngineKind::Dfs, EngineKind::Emulated] {
                let opts = MatchOptions {
                    semantics,
                    engine,
                    ..MatchOptions::default()
                };
                assert!(compare(&g, &ce, &q, &opts));
            }
        }
    }
}

#[test]
fn a_compression_of_another_graph_is_refused() {
    let mut rng = SplitMix64::new(5);
    let a = similar_graph(&mut rng, false);
    let b = similar_graph(&mut rng, false);
    let c = compress(&a.g, &CompressOptions::default(), &NoProgress).unwrap();
    assert!(CompressedEngine::new(&b.g, &c).is_err());
    assert!(CompressedEngine::new(&a.g, &c).is_ok());
}

/// The cartesian guard counts the original answer, not the compressed one.
#[test]
fn disconnected_queries_keep_the_guard() {
    let mut rng = SplitMix64::new(11);
    let tg = similar_graph(&mut rng, false);
    let c = compress(&tg.g, &CompressOptions::default(), &NoProgress).unwrap();
    let ce = CompressedEngine::new(&tg.g, &c).unwrap();
    let text = "SELECT * WHERE { ?a ?r ?b . ?c ?s ?d }";
    let q = gpsense_planner::compile(text, &tg.g).unwrap();
    for semantics in [Semantics::Iso, Semantics::Hom] {
        for max_cartesian in [10, 1_000_000] {
            let opts = MatchOptions {
                semantics,
                max_cartesian,
                ..MatchOptions::default()
            };
            assert!(compare(&tg.g, &ce, &q, &opts));
            let plain = Engine::new(&tg.g).count(&q, &opts).map(|r| r.rows);
            let ours = ce.count(&q, &opts).map(|r| r.report.rows);
            assert_eq!(plain, ours);
        }
    }
}

/// The shipped graphs, compressed with the paper's thresholds.
fn shipped(name: &str) -> KnowledgeGraph {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets");
    let files: &[&str] = match name {
        "conceptnet-100k" => &["conceptnet-100k/train.txt.gz"],
        "pattern-commonsense" => &["pattern-commonsense/commonsense.csv"],
        "wordnet30" => &[
            "wordnet30/wn30_synset.nodes.tsv.gz",
            "wordnet30/wn30_synset.lemmas.tsv.gz",
            "wordnet30/wn30_synset.edges.tsv.gz",
        ],
        "russian-conceptnet" => &["russian-conceptnet/edges.tsv.gz"],
        "conceptnet5-sample" => &["conceptnet5-sample/assertions.csv"],
        other => panic!("no dataset {other}"),
    };
    let paths: Vec<_> = files.iter().map(|f| dir.join(f)).collect();
    gpsense_graph::ingest::ingest(
        &paths,
        &gpsense_graph::ingest::IngestOptions::default(),
        &gpsense_graph::ingest::NoProgress,
    )
    .unwrap_or_else(|e| panic!("{name}: {e}"))
    .0
}

/// A query grown by BFS (both directions) from `start`, over `k` nodes, with up to `max_edges` of
/// the data edges among them; `start` becomes a concept (named by its first lemma on a graph with
/// aliases, WordNet's: a concept set when the word has several senses), other nodes now and then
/// too, and some edges get a variable label.
fn grown_query(g: &KnowledgeGraph, start: u32, k: usize, rng: &mut SplitMix64) -> Option<String> {
    use gpsense_planner::parse::quote_if_needed;
    let mut nodes = vec![start];
    let mut i = 0;
    while nodes.len() < k && i < nodes.len() {
        let v = nodes[i];
        let around: Vec<u32> = g
            .out()
            .neighbours(v)
            .0
            .iter()
            .chain(g.inc().neighbours(v).0)
            .copied()
            .collect();
        if !around.is_empty() {
            let w = around[rng.index(around.len())];
            if !nodes.contains(&w) {
                nodes.push(w);
                continue;
            }
        }
        i += 1;
    }
    if nodes.len() < 2 {
        return None;
    }
    let term = |j: usize, v: u32| {
        if j == 0 && !g.aliases().is_empty() {
            // `lemma/synset`, the lemma with its adjective marker (`(a)`) in the node table only.
            let name = g.node_name(v);
            let lemma = name.split(['/', '(']).next().unwrap_or(name);
            quote_if_needed(lemma)
        } else if j == 0 || rng_pick(j, v) {
            quote_if_needed(g.node_name(v))
        } else {
            format!("?v{j}")
        }
    };
    let mut triples = Vec::new();
    let mut vars = 0;
    for (a, &v) in nodes.iter().enumerate() {
        let (targets, labels) = g.out().neighbours(v);
        for (&w, &r) in targets.iter().zip(labels) {
            let Some(b) = nodes.iter().position(|&x| x == w) else {
                continue;
            };
            if triples.len() == 5 {
                break;
            }
            let rel = if rng.chance(1, 4) {
                vars += 1;
                format!("?r{vars}")
            } else {
                quote_if_needed(g.relation_name(r))
            };
            triples.push(format!("{} {rel} {}", term(a, v), term(b, w)));
        }
    }
    Some(format!("SELECT * WHERE {{ {} }}", triples.join(" . ")))
}

/// A second, deterministic concept now and then (one node in five, by id).
fn rng_pick(j: usize, v: u32) -> bool {
    j == 2 && v.is_multiple_of(5)
}

fn check_dataset(name: &str, queries: usize, seed: u64) {
    let g = shipped(name);
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    let table = c.table();
    assert_eq!(table.len(), 4, "{name}: three levels");
    assert!(table[3].ratio < 0.95, "{name} barely compressed: {table:?}");
    let ce = CompressedEngine::new(&g, &c).unwrap();
    let merged: Vec<u32> = (0..g.node_count() as u32)
        .filter(|&v| c.members(c.hyper_node(v)).len() > 1 && g.degree(v) >= 1)
        .collect();
    let mut rng = SplitMix64::new(seed);
    let (mut compared, mut tried) = (0, 0);
    while compared < queries && tried < queries * 20 {
        tried += 1;
        // Half the queries start at a node inside a hyper-node: a concept with company.
        let start = if rng.chance(1, 2) && !merged.is_empty() {
            merged[rng.index(merged.len())]
        } else {
            rng.index(g.node_count()) as u32
        };
        let Some(text) = grown_query(&g, start, 2 + rng.index(3), &mut rng) else {
            continue;
        };
        let q =
            gpsense_planner::compile(&text, &g).unwrap_or_else(|e| panic!("{}", e.render(&text)));
        let mut all = true;
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let opts = MatchOptions {
                semantics,
                engine: EngineKind::Dfs,
                ..MatchOptions::default()
            };
            all &= compare(&g, &ce, &q, &opts);
        }
        compared += all as usize;
    }
    assert_eq!(compared, queries, "{name}: too few comparable queries");
}

#[test]
fn conceptnet_100k_answers_exactly() {
    check_dataset("conceptnet-100k", 40, 1);
    let g = shipped("conceptnet-100k");
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    let ce = CompressedEngine::new(&g, &c).unwrap();
    for text in [
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
        "SELECT DISTINCT ?r ?y WHERE { chocolate ?r ?y } LIMIT 20",
        "SELECT * WHERE { ?a UsedFor ?b . ?b AtLocation ?c . ?a AtLocation ?c }",
        "SELECT ?a WHERE { ?a IsA ?b . ?b IsA animal }",
        "SELECT * WHERE { ?a ?r ?b . ?b ?s ?a }",
    ] {
        let q = gpsense_planner::compile(text, &g).unwrap();
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let opts = MatchOptions {
                semantics,
                ..MatchOptions::default()
            };
            assert!(compare(&g, &ce, &q, &opts), "{text}");
        }
    }
    counts_equal_dfs_with_leaves_counted(&g, &ce, BIG_STAR, &[Semantics::Iso, Semantics::Hom]);
}

/// The generated ConceptNet query with 99,252,414 matches under iso: `?v1`, `?v2` and `?v5` are
/// leaves of `?v0`, which two concepts pin down. Listing its matches took minutes.
const BIG_STAR: &str = "SELECT * WHERE { ?v0 AtLocation ?v1 . ?v0 AtLocation ?v2 . \
    ?v0 AtLocation \"hardware store\" . ?v0 AtLocation \"tool chest\" . ?v0 AtLocation ?v5 }";

/// Counts `text` through `ce` and on the original with dfs: equal, and leaves were counted, not
/// expanded.
fn counts_equal_dfs_with_leaves_counted(
    g: &KnowledgeGraph,
    ce: &CompressedEngine,
    text: &str,
    semantics: &[Semantics],
) {
    let q = gpsense_planner::compile(text, g).unwrap();
    for &semantics in semantics {
        let opts = MatchOptions {
            semantics,
            engine: EngineKind::Dfs,
            ..MatchOptions::default()
        };
        let want = Engine::new(g).count(&q, &opts).unwrap().rows;
        let got = ce.count(&q, &opts).unwrap();
        assert_eq!(got.report.rows, want, "{semantics:?}: {text}");
        assert!(got.expansion.counted_leaves > 0, "{text}: leaves expanded");
    }
}

/// HPRD and yeast (node labels, undirected, many leaves) compressed: iso counts through the
/// compressed graph equal the published ones, most queries with leaves counted on the original.
#[test]
fn benchmark_graphs_count_exactly_through_compression() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../datasets/subgraph-matching");
    let suites = [
        (
            "hprd-study/data_graph/HPRD.graph",
            "hprd-study/query_graph",
            "hprd-study/expected_output.res",
            7,
        ),
        (
            "yeast/data_graph/yeast.graph",
            "yeast/query_graph",
            "yeast/yeast_ans.txt",
            37,
        ),
    ];
    for (data, queries, expected, every) in suites {
        let load = |p: &std::path::Path| {
            gpsense_graph::ingest::ingest(
                &[p.to_path_buf()],
                &gpsense_graph::ingest::IngestOptions::default(),
                &gpsense_graph::ingest::NoProgress,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
            .0
        };
        let g = load(&dir.join(data));
        let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
        let ce = CompressedEngine::new(&g, &c).unwrap();
        let text = std::fs::read_to_string(dir.join(expected)).unwrap();
        let mut expected: Vec<(String, u128)> = text
            .lines()
            .filter_map(|l| {
                let (name, count) = l.split_once([':', ' '])?;
                let name = name.trim().trim_end_matches(".graph").to_owned();
                Some((name, count.trim().parse().ok()?))
            })
            .filter(|(_, count)| *count <= 100_000)
            .collect();
        expected.sort();
        let (mut checked, mut with_leaves) = (0, 0);
        for (name, count) in expected.iter().step_by(every) {
            let qg = load(&dir.join(queries).join(format!("{name}.graph")));
            let q = gpsense_planner::benchmark_query(&qg, &g).unwrap();
            let opts = MatchOptions {
                semantics: Semantics::Iso,
                engine: EngineKind::Dfs,
                ..MatchOptions::default()
            };
            let got = ce.count(&q, &opts).unwrap();
            assert_eq!(got.report.rows, *count, "{data}: {name}");
            checked += 1;
            with_leaves += usize::from(got.expansion.counted_leaves > 0);
        }
        assert!(
            checked >= 20 && with_leaves * 2 >= checked,
            "{data}: {checked} checked, {with_leaves} with leaves"
        );
    }
}

#[test]
fn wordnet_answers_exactly() {
    check_dataset("wordnet30", 25, 2);
}

/// Words with several senses: the compressed answer of a concept set is the plain one.
#[test]
fn wordnet_words_answer_exactly() {
    let g = shipped("wordnet30");
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    let ce = CompressedEngine::new(&g, &c).unwrap();
    for text in [
        "SELECT ?x WHERE { dog hypernym ?x }",
        "SELECT * WHERE { ?x hypernym dog . ?x ?r ?y }",
        "SELECT ?x WHERE { dog hypernym ?x . cat hypernym ?x }",
        "SELECT ?y WHERE { run ?r ?y } LIMIT 30",
    ] {
        let q = gpsense_planner::compile(text, &g).unwrap();
        assert!(
            q.nodes
                .iter()
                .any(|n| matches!(n.kind, gpsense_planner::NodeKind::ConceptSet(_))),
            "{text}: no word with several senses"
        );
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let opts = MatchOptions {
                semantics,
                ..MatchOptions::default()
            };
            assert!(compare(&g, &ce, &q, &opts), "{text}");
        }
    }
}

#[test]
fn russian_conceptnet_answers_exactly() {
    check_dataset("russian-conceptnet", 25, 3);
}

#[test]
fn small_shipped_graphs_answer_exactly() {
    check_dataset("pattern-commonsense", 25, 4);
    check_dataset("conceptnet5-sample", 25, 5);
}

/// A time limit stops the compressed path too, keeping the answer so far.
#[test]
fn the_time_limit_applies() {
    let g = shipped("conceptnet-100k");
    let c = compress(&g, &CompressOptions::default(), &NoProgress).unwrap();
    let ce = CompressedEngine::new(&g, &c).unwrap();
    let q =
        gpsense_planner::compile("SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d }", &g).unwrap();
    let opts = MatchOptions {
        semantics: Semantics::Hom,
        timeout: Some(std::time::Duration::from_millis(200)),
        ..MatchOptions::default()
    };
    let start = std::time::Instant::now();
    let report = ce.count(&q, &opts).unwrap().report;
    assert!(report.timed_out, "{report:?}");
    assert!(start.elapsed() < std::time::Duration::from_secs(20));
}

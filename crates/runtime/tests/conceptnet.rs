//! Real queries over ConceptNet-100K (`datasets/conceptnet-100k/train.txt.gz`), compiled by the
//! planner: every row checked against the graph directly, the full answers compared with a plain
//! backtracking evaluator written here (no filtering, no plan), across engines and configurations,
//! with iso answers exactly the injective hom answers, and a few counts derived by hand from the CSR.

use std::collections::HashSet;
use std::sync::OnceLock;
use std::time::Instant;

use gpsense_graph::{KnowledgeGraph, NodeId};
use gpsense_planner::{EdgeLabel, NodeKind, Projected, QueryGraph};
use gpsense_runtime::{Engine, EngineKind, MatchOptions, Semantics};

mod conceptnet100k;
use conceptnet100k::{compiled, conceptnet};

fn engine() -> &'static Engine<'static> {
    static E: OnceLock<Engine<'static>> = OnceLock::new();
    E.get_or_init(|| Engine::new(conceptnet()))
}

/// The same query answering every node, then every edge variable, in index order; no DISTINCT,
/// no LIMIT: one row per match.
fn full(q: &QueryGraph) -> QueryGraph {
    let mut projection: Vec<Projected> = (0..q.nodes.len()).map(Projected::Node).collect();
    projection.extend((0..q.edge_variables.len()).map(Projected::Edge));
    QueryGraph {
        projection,
        distinct: false,
        limit: None,
        ..q.clone()
    }
}

/// Engine configurations to cross-check: both engines, 1 and 32 lanes, one or many threads, and a
/// small memory budget that makes the kernels engine work in batches.
fn configurations(semantics: Semantics) -> Vec<MatchOptions> {
    let base = MatchOptions {
        semantics,
        ..MatchOptions::default()
    };
    let mut out = Vec::new();
    for single_thread in [true, false] {
        out.push(MatchOptions {
            engine: EngineKind::Dfs,
            single_thread,
            ..base.clone()
        });
        for lanes in [1, 32] {
            out.push(MatchOptions {
                engine: EngineKind::Kernels,
                lanes,
                single_thread,
                ..base.clone()
            });
        }
    }
    // The candidate bitsets (about 10 KB per query node here) count against the budget; the join
    // gets what is left, small enough to run in batches.
    out.push(MatchOptions {
        engine: EngineKind::Kernels,
        memory_budget: 96 << 10,
        ..base
    });
    out
}

/// Whether a full row (nodes in index order, then edge variables) is a match of `q`: concepts kept,
/// every edge in the graph with its fixed or bound relation, injective under iso.
fn is_match(g: &KnowledgeGraph, q: &QueryGraph, row: &[u32], semantics: Semantics) -> bool {
    let n = q.nodes.len();
    let concepts_kept = (0..n).all(|u| {
        q.concept_nodes(u)
            .is_none_or(|nodes| nodes.contains(&row[u]))
    });
    let edges_exist = q.edges.iter().all(|e| {
        let r = match e.label {
            EdgeLabel::Fixed(r) => r,
            EdgeLabel::Variable(k) => row[n + k] as u16,
        };
        g.out().has_edge(row[e.source], Some(r), row[e.target])
    });
    let nodes: HashSet<u32> = row[..n].iter().copied().collect();
    concepts_kept && edges_exist && (semantics == Semantics::Hom || nodes.len() == n)
}

/// A plain backtracking evaluator, independent of the engine: concepts first, then nodes adjacent
/// to assigned ones (candidates from the CSR), checking every edge as soon as both ends are known;
/// edge variables bound last. Full rows, sorted.
fn evaluate(g: &KnowledgeGraph, q: &QueryGraph, semantics: Semantics) -> Vec<Vec<u32>> {
    let n = q.nodes.len();
    let mut order: Vec<usize> = (0..n).filter(|&u| q.nodes[u].is_concept()).collect();
    while order.len() < n {
        let next = (0..n)
            .filter(|u| !order.contains(u))
            .find(|&u| {
                q.edges.iter().any(|e| {
                    (e.source == u && order.contains(&e.target))
                        || (e.target == u && order.contains(&e.source))
                })
            })
            .or_else(|| (0..n).find(|u| !order.contains(u)))
            .unwrap();
        order.push(next);
    }
    let mut rows = Vec::new();
    let mut assign = vec![u32::MAX; n];
    extend(g, q, semantics, &order, 0, &mut assign, &mut rows);
    rows.sort_unstable();
    rows
}

fn extend(
    g: &KnowledgeGraph,
    q: &QueryGraph,
    semantics: Semantics,
    order: &[usize],
    pos: usize,
    assign: &mut Vec<u32>,
    rows: &mut Vec<Vec<u32>>,
) {
    if pos == order.len() {
        bind(
            g,
            q,
            assign,
            0,
            &mut vec![u32::MAX; q.edge_variables.len()],
            rows,
        );
        return;
    }
    let u = order[pos];
    let assigned = |w: usize| assign[w] != u32::MAX;
    let candidates: Vec<NodeId> = match q.nodes[u].kind {
        NodeKind::Concept(_) | NodeKind::ConceptSet(_) => {
            q.concept_nodes(u).unwrap_or(&[]).to_vec()
        }
        NodeKind::Variable => {
            let via = q.edges.iter().find_map(|e| {
                if e.target == u && e.source != u && assigned(e.source) {
                    Some(g.out().neighbours(assign[e.source]).0)
                } else if e.source == u && e.target != u && assigned(e.target) {
                    Some(g.inc().neighbours(assign[e.target]).0)
                } else {
                    None
                }
            });
            match via {
                Some(list) => {
                    let mut c = list.to_vec();
                    c.sort_unstable();
                    c.dedup();
                    c
                }
                None => (0..g.node_count() as NodeId).collect(),
            }
        }
    };
    for v in candidates {
        if semantics == Semantics::Iso && assign.contains(&v) {
            continue;
        }
        assign[u] = v;
        let ok = q.edges.iter().all(|e| {
            if assign[e.source] == u32::MAX || assign[e.target] == u32::MAX {
                return true;
            }
            let r = match e.label {
                EdgeLabel::Fixed(r) => Some(r),
                EdgeLabel::Variable(_) => None,
            };
            g.out().has_edge(assign[e.source], r, assign[e.target])
        });
        if ok {
            extend(g, q, semantics, order, pos + 1, assign, rows);
        }
        assign[u] = u32::MAX;
    }
}

/// Every binding of edge variables `k..` (relations from the data, each a separate row).
fn bind(
    g: &KnowledgeGraph,
    q: &QueryGraph,
    assign: &[u32],
    k: usize,
    bound: &mut Vec<u32>,
    rows: &mut Vec<Vec<u32>>,
) {
    if k == bound.len() {
        let ok = q.edges.iter().all(|e| {
            let r = match e.label {
                EdgeLabel::Fixed(r) => r,
                EdgeLabel::Variable(k) => bound[k] as u16,
            };
            g.out()
                .has_edge(assign[e.source], Some(r), assign[e.target])
        });
        if ok {
            rows.push(assign.iter().chain(bound.iter()).copied().collect());
        }
        return;
    }
    for r in 0..g.relation_count() as u32 {
        bound[k] = r;
        bind(g, q, assign, k + 1, bound, rows);
    }
    bound[k] = u32::MAX;
}

/// Full rows of `q` from one configuration, sorted, with the report's row count checked.
fn rows_of(q: &QueryGraph, opts: &MatchOptions) -> Vec<Vec<u32>> {
    let (mut rows, report) = engine()
        .collect(q, opts)
        .unwrap_or_else(|e| panic!("{q}: {e}"));
    assert_eq!(report.rows, rows.len() as u128);
    rows.sort_unstable();
    rows
}

/// Everything about one query text; returns (iso, hom) match counts.
fn check_query(text: &str) -> (u64, u64) {
    let g = conceptnet();
    let q = compiled(text);
    let fq = full(&q);
    let mut counts = [0u64; 2];
    let mut answers: Vec<Vec<Vec<u32>>> = Vec::new();
    for (i, semantics) in [Semantics::Iso, Semantics::Hom].into_iter().enumerate() {
        let expected = evaluate(g, &fq, semantics);
        for row in &expected {
            assert!(
                is_match(g, &fq, row, semantics),
                "{text}: evaluator row {row:?}"
            );
        }
        for opts in configurations(semantics) {
            let what = format!(
                "{text} ({semantics}, {} lanes {} single_thread {} budget {})",
                opts.engine, opts.lanes, opts.single_thread, opts.memory_budget
            );
            let rows = rows_of(&fq, &opts);
            for row in &rows {
                assert!(
                    is_match(g, &fq, row, semantics),
                    "{what}: {row:?} is no match"
                );
            }
            assert!(
                rows == expected,
                "{what}: {} rows, the evaluator {}",
                rows.len(),
                expected.len()
            );
            let count = engine().count(&fq, &opts).unwrap();
            assert_eq!(count.rows, expected.len() as u128, "{what}: count");
            // The query as written: its projection, DISTINCT and LIMIT over the same matches.
            let (mut projected, report) = engine().collect(&q, &opts).unwrap();
            projected.sort_unstable();
            let mut want: Vec<Vec<u32>> = expected
                .iter()
                .map(|row| {
                    q.projection
                        .iter()
                        .map(|p| match *p {
                            Projected::Node(u) => row[u],
                            Projected::Edge(k) => row[q.nodes.len() + k],
                        })
                        .collect()
                })
                .collect();
            want.sort_unstable();
            if q.distinct {
                want.dedup();
            }
            match q.limit {
                Some(l) => {
                    assert_eq!(projected.len() as u64, (want.len() as u64).min(l), "{what}");
                    assert_eq!(report.limit_reached, want.len() as u64 > l, "{what}");
                    let have: HashSet<&Vec<u32>> = want.iter().collect();
                    assert!(projected.iter().all(|r| have.contains(r)), "{what}");
                }
                None => assert!(projected == want, "{what}: projected rows differ"),
            }
        }
        counts[i] = expected.len() as u64;
        answers.push(expected);
    }
    // Iso answers are exactly the injective hom answers.
    let n = q.nodes.len();
    let injective: Vec<Vec<u32>> = answers[1]
        .iter()
        .filter(|row| row[..n].iter().collect::<HashSet<_>>().len() == n)
        .cloned()
        .collect();
    assert!(injective == answers[0], "{text}: iso is not injective hom");
    assert!(counts[1] >= counts[0]);
    println!("{text}: {} iso, {} hom", counts[0], counts[1]);
    (counts[0], counts[1])
}

fn id(name: &str) -> NodeId {
    conceptnet()
        .node_id(name)
        .unwrap_or_else(|| panic!("no {name:?}"))
}

fn rel(name: &str) -> u16 {
    conceptnet().relation_id(name).unwrap()
}

/// Sources of `v`'s incoming `r` edges.
fn sources(v: NodeId, r: &str) -> Vec<NodeId> {
    conceptnet().inc().neighbours_by_label(v, rel(r)).to_vec()
}

#[test]
fn animals_at_home() {
    let start = Instant::now();
    let (iso, hom) = check_query("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }");
    // By hand: the sources of both edges.
    let at_home: HashSet<NodeId> = sources(id("home"), "AtLocation").into_iter().collect();
    let both: Vec<NodeId> = sources(id("animal"), "IsA")
        .into_iter()
        .filter(|x| at_home.contains(x))
        .collect();
    let distinct = both
        .iter()
        .filter(|&&x| x != id("animal") && x != id("home"))
        .count();
    assert_eq!((iso, hom), (distinct as u64, both.len() as u64));
    assert!(both.contains(&id("lizard")));
    println!(
        "animals at home: {iso} iso, {hom} hom, {:.1?}",
        start.elapsed()
    );
}

#[test]
fn two_hops_and_variable_relations() {
    let start = Instant::now();
    // ?x IsA ?y IsA animal, by hand.
    let animal = id("animal");
    let mut hom = 0;
    let mut iso = 0;
    for y in sources(animal, "IsA") {
        for x in sources(y, "IsA") {
            hom += 1;
            iso += (x != y && x != animal && y != animal) as u64;
        }
    }
    assert!(iso > 0);
    assert_eq!(
        check_query("SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA animal }"),
        (iso, hom)
    );
    // ?x ?r animal: one row per (node, relation) edge into animal (bag semantics).
    let g = conceptnet();
    let into = g.inc().neighbours(animal).0;
    let not_self = into.iter().filter(|&&x| x != animal).count() as u64;
    assert_eq!(
        check_query("SELECT ?x ?r WHERE { ?x ?r animal }"),
        (not_self, into.len() as u64)
    );
    check_query("SELECT DISTINCT ?r WHERE { ?x ?r animal }");
    check_query("SELECT DISTINCT ?x WHERE { ?x ?r animal } LIMIT 7");
    // One edge variable on two edges: the same relation to both.
    check_query("SELECT ?x ?r WHERE { ?x ?r home . ?x ?r house }");
    check_query("SELECT ?r ?s WHERE { dog ?r ?x . ?x ?s animal }");
    println!("two hops and variable relations: {:.1?}", start.elapsed());
}

#[test]
fn cycles_self_loops_and_disconnected_components() {
    let start = Instant::now();
    check_query("SELECT * WHERE { ?x AtLocation ?y . ?y AtLocation ?x }");
    check_query("SELECT ?x WHERE { ?x IsA ?x }");
    check_query("SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?a IsA ?c . ?c IsA animal }");
    check_query("SELECT ?x ?y ?r WHERE { ?x IsA animal . ?y IsA animal . ?x ?r ?y }");
    // Two components: hom answers are all pairs, iso answers the pairs of distinct nodes.
    let animal = id("animal");
    let a: Vec<NodeId> = sources(animal, "IsA");
    let b: Vec<NodeId> = sources(id("home"), "AtLocation");
    let home = id("home");
    let hom = (a.len() * b.len()) as u64;
    let iso = a
        .iter()
        .flat_map(|&x| b.iter().map(move |&y| (x, y)))
        .filter(|&(x, y)| x != y && ![animal, home].contains(&x) && ![animal, home].contains(&y))
        .count() as u64;
    assert_eq!(
        check_query("SELECT ?x ?y WHERE { ?x IsA animal . ?y AtLocation home }"),
        (iso, hom)
    );
    check_query("SELECT ?x ?y WHERE { ?x IsA animal . ?y AtLocation home } LIMIT 50");
    // The count of a disconnected query under hom (the product of the components' counts).
    let q = compiled("SELECT ?x ?y WHERE { ?x IsA animal . ?y AtLocation home }");
    for engine_kind in [EngineKind::Dfs, EngineKind::Kernels] {
        let opts = MatchOptions {
            semantics: Semantics::Hom,
            engine: engine_kind,
            ..MatchOptions::default()
        };
        assert_eq!(engine().count(&q, &opts).unwrap().rows, u128::from(hom));
    }
    println!("cycles, self-loops, components: {:.1?}", start.elapsed());
}

#[test]
fn limits_on_large_answers() {
    // Large answers stop at the limit on every configuration; the rows are matches.
    let g = conceptnet();
    for text in [
        "SELECT * WHERE { ?x IsA ?y } LIMIT 25",
        "SELECT * WHERE { ?x ?r ?y . ?y ?s ?z } LIMIT 1000",
        "SELECT DISTINCT ?r WHERE { ?x ?r ?y } LIMIT 3",
    ] {
        let q = compiled(text);
        let fq = QueryGraph {
            limit: q.limit,
            ..full(&q)
        };
        for semantics in [Semantics::Iso, Semantics::Hom] {
            for opts in configurations(semantics) {
                let (rows, report) = engine().collect(&fq, &opts).unwrap();
                assert_eq!(rows.len() as u64, q.limit.unwrap(), "{text}");
                assert!(report.limit_reached, "{text}");
                let distinct: HashSet<&Vec<u32>> = rows.iter().collect();
                assert_eq!(distinct.len(), rows.len(), "{text}: repeated matches");
                for row in &rows {
                    assert!(is_match(g, &fq, row, semantics), "{text}: {row:?}");
                }
                let (rows, report) = engine().collect(&q, &opts).unwrap();
                assert_eq!(rows.len() as u64, q.limit.unwrap(), "{text}");
                assert!(report.limit_reached);
            }
        }
    }
}

#[test]
fn a_seven_leaf_star_counts_past_64_bits_exactly() {
    // Issue 27: the leaf-group product overflowed u64 and the count wrapped (5,238,237,727,772,648).
    let q = compiled(
        "SELECT * WHERE { ?x IsA ?a0 . ?x IsA ?a1 . ?x IsA ?a2 . ?x IsA ?a3 . ?x IsA ?a4 . \
         ?x IsA ?a5 . ?x IsA ?a6 }",
    );
    // By hand: per source of IsA edges, its targets to the 7th (hom), or its targets other than
    // itself, 7 distinct ones in order (iso).
    let g = conceptnet();
    let (mut hom, mut iso) = (0u128, 0u128);
    for x in 0..g.node_count() as NodeId {
        let targets = g.out().neighbours_by_label(x, rel("IsA"));
        let others = targets.iter().filter(|&&a| a != x).count() as u128;
        hom += (targets.len() as u128).pow(7);
        iso += (0..7).map(|j| others.saturating_sub(j)).product::<u128>();
    }
    assert_eq!(hom, 5_753_810_593_750_889_762_793);
    assert!(iso > 1 << 64, "{iso}");
    for (semantics, want) in [(Semantics::Hom, hom), (Semantics::Iso, iso)] {
        for single_thread in [true, false] {
            let opts = MatchOptions {
                semantics,
                engine: EngineKind::Dfs,
                single_thread,
                ..MatchOptions::default()
            };
            assert_eq!(engine().count(&q, &opts).unwrap().rows, want, "{semantics}");
        }
    }
}

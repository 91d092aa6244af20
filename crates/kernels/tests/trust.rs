//! TruST kernel bodies against brute force: Levenshtein against the textbook table, the Hungarian
//! assignment against every permutation, the one-hop score (with its top-k column restriction and
//! its fast path) against an exhaustive matching over all data edges, and branch extension against
//! a direct enumeration.

mod common;

use common::{view, Rng};
use gpsense_graph::{GraphBuilder, KnowledgeGraph};
use gpsense_kernels::trust::{
    assignment_scratch_len, build_pattern, hop_scratch_len, levenshtein_bits, levenshtein_bounded,
    max_weight_assignment, one_hop, similarity_at_least, similarity_bits_item, Extension, Judge,
    Link, Pattern, Scoring, TemplateView, ANY_RELATION,
};
use gpsense_kernels::{Dir, GraphView, NONE};

/// The seed's weights: name and neighbourhood alike, half a relation's bonus.
const HALVES: Scoring = Scoring {
    alpha: 0.5,
    relation_weight: 0.5,
};

fn random_graph(rng: &mut Rng, nodes: u32, edges: usize, relations: u64) -> KnowledgeGraph {
    random_builder(rng, nodes, edges, relations)
        .build()
        .expect("build")
        .0
}

fn random_builder(rng: &mut Rng, nodes: u32, edges: usize, relations: u64) -> GraphBuilder {
    let mut b = GraphBuilder::new();
    for v in 0..nodes {
        b.node(&v.to_string()).expect("node");
    }
    for r in 0..relations {
        b.relation(&format!("r{r}")).expect("relation");
    }
    for _ in 0..edges {
        let (s, t) = (
            rng.below(nodes as u64) as u32,
            rng.below(nodes as u64) as u32,
        );
        b.add_edge(s, rng.below(relations) as u16, t, 1.0);
    }
    b
}

/// The full table of the optimal-string-alignment distance (adjacent transpositions cost 1).
fn naive_levenshtein(a: &[u32], b: &[u32]) -> u32 {
    let mut d = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i as u32;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j as u32;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]) as u32;
            d[i][j] = sub.min(d[i - 1][j] + 1).min(d[i][j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()]
}

fn code_points(s: &str) -> Vec<u32> {
    s.chars().map(u32::from).collect()
}

#[test]
fn levenshtein_matches_the_full_table_and_respects_its_bound() {
    let mut rng = Rng(1);
    let alphabet = ['a', 'b', 'c', 'é', '水'];
    let mut row = vec![0u32; 32];
    for _ in 0..5000 {
        let word = |rng: &mut Rng| -> Vec<u32> {
            (0..rng.below(9))
                .map(|_| alphabet[rng.below(5) as usize] as u32)
                .collect()
        };
        let (a, b) = (word(&mut rng), word(&mut rng));
        let exact = naive_levenshtein(&a, &b);
        let max = rng.below(10) as u32;
        let got = levenshtein_bounded(&a, &b, max, &mut row);
        if exact <= max {
            assert_eq!(got, exact, "{a:?} {b:?} max {max}");
        } else {
            assert_eq!(got, max + 1, "{a:?} {b:?} max {max}");
        }
    }
}

#[test]
fn bit_parallel_levenshtein_matches_the_full_table() {
    let mut rng = Rng(11);
    let alphabet = ['a', 'b', 'c', ' ', 'é', '水', 'ß'];
    let (mut ascii, mut oc, mut om) = (vec![0u64; 128], vec![0u32; 64], vec![0u64; 64]);
    let mut row = vec![0u32; 2 * 65];
    for round in 0..20000 {
        // Mostly short names; some up to the 64-character limit.
        let len = |rng: &mut Rng| {
            if round % 10 == 0 {
                rng.below(65) as usize
            } else {
                rng.below(12) as usize
            }
        };
        let (la, lb) = (len(&mut rng), len(&mut rng));
        let a: Vec<u32> = (0..la)
            .map(|_| alphabet[rng.below(7) as usize] as u32)
            .collect();
        let b: Vec<u32> = (0..lb)
            .map(|_| alphabet[rng.below(7) as usize] as u32)
            .collect();
        let others = build_pattern(&a, &mut ascii, &mut oc, &mut om);
        let p = Pattern {
            ascii: &ascii,
            other_chars: &oc[..others],
            other_masks: &om[..others],
            len: a.len(),
        };
        assert_eq!(
            levenshtein_bits(&p, &b),
            naive_levenshtein(&a, &b),
            "{a:?} {b:?}"
        );
        // The item kernel agrees with the dynamic programme's thresholded similarity.
        let t = rng.below(5) as f32 * 0.25;
        let chars = b.clone();
        let ends = [b.len() as u32];
        let bits = similarity_bits_item(0, &p, &[0], &chars, &ends, t);
        assert_eq!(
            bits,
            similarity_at_least(&a, &b, t, &mut row),
            "{a:?} {b:?} {t}"
        );
    }
}

#[test]
fn a_swap_of_two_letters_is_one_edit() {
    let mut row = vec![0u32; 32];
    let d = |a: &str, b: &str, row: &mut Vec<u32>| {
        levenshtein_bounded(&code_points(a), &code_points(b), 10, row)
    };
    assert_eq!(d("pioson", "poison", &mut row), 1);
    assert_eq!(d("pioson", "person", &mut row), 2);
    assert_eq!(d("ab", "ba", &mut row), 1);
    // Optimal string alignment: a swapped pair is not edited again (`ca` -> `abc` is 3, not 2).
    assert_eq!(d("ca", "abc", &mut row), 3);
}

#[test]
fn similarity_is_by_code_points_and_thresholded() {
    let mut row = vec![0u32; 32];
    let s = |a: &str, b: &str, t: f32, row: &mut Vec<u32>| {
        similarity_at_least(&code_points(a), &code_points(b), t, row)
    };
    // "café" and "cafe" differ by one code point of four (five UTF-8 bytes for the first).
    assert_eq!(s("café", "cafe", 0.0, &mut row), 0.75);
    assert_eq!(
        s("chocolate cakes", "chocolate cake", 0.5, &mut row),
        1.0 - 1.0 / 15.0
    );
    assert_eq!(s("", "", 0.9, &mut row), 1.0);
    assert_eq!(s("abc", "xyz", 0.0, &mut row), 0.0);
    assert_eq!(s("kitten", "sitting", 0.5, &mut row), 1.0 - 3.0 / 7.0);
    assert_eq!(s("kitten", "sitting", 0.6, &mut row), 0.0);
    // Exactly at the threshold counts (0.3 * 10 is not exactly 3 in f32).
    assert_eq!(s("aaaaaaaaaa", "aaaaaaabbb", 0.7, &mut row), 0.7);
}

/// The best assignment of rows to distinct columns, by trying every injection.
fn brute_assignment(w: &[f32], rows: usize, cols: usize) -> f32 {
    fn go(w: &[f32], r: usize, rows: usize, cols: usize, used: &mut Vec<bool>) -> f32 {
        if r == rows {
            return 0.0;
        }
        let mut best = f32::NEG_INFINITY;
        for c in 0..cols {
            if !used[c] {
                used[c] = true;
                best = best.max(w[r * cols + c] + go(w, r + 1, rows, cols, used));
                used[c] = false;
            }
        }
        best
    }
    go(w, 0, rows, cols, &mut vec![false; cols])
}

#[test]
fn hungarian_assignment_is_optimal() {
    let mut rng = Rng(2);
    for _ in 0..3000 {
        let rows = 1 + rng.below(5) as usize;
        let cols = rows + rng.below(3) as usize;
        // Coarse values make ties (and zeros) common, which is where assignment codes go wrong.
        let w: Vec<f32> = (0..rows * cols)
            .map(|_| (rng.below(5) as f32) * 0.25)
            .collect();
        let (nf, nu) = assignment_scratch_len(rows, cols);
        let got = max_weight_assignment(&w, rows, cols, &mut vec![0.0; nf], &mut vec![0; nu]);
        let want = brute_assignment(&w, rows, cols);
        assert!(
            (got - want).abs() < 1e-5,
            "{rows}x{cols} {w:?}: {got} vs {want}"
        );
    }
}

/// `W(t, d) * deg(t)` by exhaustive search over all data edges at `d` (no column restriction).
fn brute_neighbourhood(
    t: usize,
    d: u32,
    tpl: &TemplateView,
    sim: &[f32],
    g: &GraphView,
    scoring: &Scoring,
) -> f32 {
    let nt = tpl.node_count();
    let (a, b) = tpl.entries(t as u32);
    let mut data: Vec<(Dir, u32, u16)> = Vec::new();
    for (dir, adj) in [(Dir::Out, &g.out), (Dir::In, &g.inc)] {
        let (ts, ls) = adj.list(d);
        data.extend(ts.iter().zip(ls).map(|(&o, &l)| (dir, o, l)));
    }
    let rows = b - a;
    let cols = data.len().max(rows);
    let mut w = vec![0.0f32; rows * cols];
    for r in 0..rows {
        for (c, &(dir, o, l)) in data.iter().enumerate() {
            if tpl.dirs[a + r] == dir {
                w[r * cols + c] = sim[o as usize * nt + tpl.others[a + r] as usize]
                    * scoring.relation_factor(tpl.relations[a + r], l);
            }
        }
    }
    if cols > 9 {
        // Too many to enumerate: the Hungarian method (checked against brute force above).
        let (nf, nu) = assignment_scratch_len(rows, cols);
        return max_weight_assignment(&w, rows, cols, &mut vec![0.0; nf], &mut vec![0; nu]);
    }
    brute_assignment(&w, rows, cols)
}

/// A random template over `n` nodes as kernel arrays.
struct RandomTemplate {
    offsets: Vec<u32>,
    others: Vec<u32>,
    dirs: Vec<Dir>,
    relations: Vec<u32>,
}

impl RandomTemplate {
    fn new(rng: &mut Rng, n: usize, edges: usize, relations: u64) -> Self {
        let mut lists: Vec<Vec<(u32, Dir, u32)>> = vec![Vec::new(); n];
        for _ in 0..edges {
            let (s, t) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
            let rel = if rng.below(4) == 0 {
                ANY_RELATION
            } else {
                rng.below(relations) as u32
            };
            lists[s].push((t as u32, Dir::Out, rel));
            lists[t].push((s as u32, Dir::In, rel));
        }
        let mut t = RandomTemplate {
            offsets: vec![0],
            others: Vec::new(),
            dirs: Vec::new(),
            relations: Vec::new(),
        };
        for l in lists {
            for (o, d, r) in l {
                t.others.push(o);
                t.dirs.push(d);
                t.relations.push(r);
            }
            t.offsets.push(t.others.len() as u32);
        }
        t
    }

    fn view(&self) -> TemplateView<'_> {
        TemplateView {
            offsets: &self.offsets,
            others: &self.others,
            dirs: &self.dirs,
            relations: &self.relations,
        }
    }
}

#[test]
fn one_hop_equals_an_exhaustive_matching() {
    let mut rng = Rng(3);
    let scoring = HALVES;
    for round in 0..40 {
        // Dense little graphs (hubs with many more edges than template rows) and sparse ones.
        let nodes = 6 + rng.below(20) as u32;
        let g = random_graph(&mut rng, nodes, (nodes as usize) * (1 + round % 6), 3);
        let g = view(&g);
        let n = 2 + rng.below(4) as usize;
        let edges = 1 + rng.below(7) as usize;
        let tpl = RandomTemplate::new(&mut rng, n, edges, 3);
        let tpl = tpl.view();
        let nd = g.node_count();
        let sim: Vec<f32> = (0..n * nd)
            .map(|_| match rng.below(4) {
                0 => 0.0,
                1 => 1.0,
                _ => (rng.below(4) as f32 + 1.0) * 0.2,
            })
            .collect();
        let k = (0..n)
            .map(|t| tpl.entries(t as u32))
            .map(|(a, b)| b - a)
            .max()
            .unwrap_or(0);
        let (nf, nu) = hop_scratch_len(k);
        let (mut sf, mut su) = (vec![0.0f32; nf], vec![0u32; nu]);
        for t in 0..n {
            let (a, b) = tpl.entries(t as u32);
            for d in 0..nd as u32 {
                let got = one_hop(t as u32, d, &tpl, &sim, &g, &scoring, &mut sf, &mut su);
                let w = if a == b {
                    1.0
                } else {
                    brute_neighbourhood(t, d, &tpl, &sim, &g, &scoring) / (b - a) as f32
                };
                let want = 0.5 * sim[d as usize * n + t] + 0.5 * w;
                assert!(
                    (got - want).abs() < 1e-5,
                    "round {round} t {t} d {d}: {got} vs {want}"
                );
            }
        }
    }
}

#[test]
fn extend_branch_lists_each_injective_neighbour_once() {
    let mut rng = Rng(4);
    let scoring = HALVES;
    for _ in 0..200 {
        let nodes = 5 + rng.below(15) as u32;
        let kg = random_graph(&mut rng, nodes, nodes as usize * 3, 3);
        let g = view(&kg);
        // Template nodes 0 and 1 are matched; node 2 is added with links to both and a self-loop.
        let row = [
            rng.below(nodes as u64) as u32,
            rng.below(nodes as u64) as u32,
            NONE,
        ];
        if row[0] == row[1] {
            continue;
        }
        let links = [
            Link {
                other: 0,
                dir: Dir::Out,
                relation: rng.below(3) as u32,
            },
            Link {
                other: 1,
                dir: Dir::In,
                relation: ANY_RELATION,
            },
            Link {
                other: 2,
                dir: Dir::Out,
                relation: 0,
            },
        ];
        let ext = Extension {
            node: 2,
            links: &links,
            seeds: &[],
        };
        // Data-major one-hop table: only template node 2's column is read.
        let column: Vec<f32> = (0..nodes).map(|_| rng.unit()).collect();
        let mut oh = vec![0.0f32; nodes as usize * 3];
        for (c, &v) in column.iter().enumerate() {
            oh[c * 3 + 2] = v;
        }
        let mut got = Vec::new();
        judge(&ext, &g, &oh, &scoring).extend_branch(&row, &mut |c, inc| {
            got.push((c, inc));
            f32::NEG_INFINITY
        });
        let mut want = Vec::new();
        for c in 0..nodes {
            let adjacent = kg.out().neighbours(row[0]).0.contains(&c)
                || kg.out().neighbours(c).0.contains(&row[1]);
            if !adjacent || row.contains(&c) {
                continue;
            }
            let edge = |from: u32, rel: Option<u16>, to: u32| {
                if rel.is_some_and(|r| kg.out().has_edge(from, Some(r), to)) {
                    1.0
                } else if kg.out().has_edge(from, None, to) {
                    if rel.is_none() {
                        1.0
                    } else {
                        0.5
                    }
                } else {
                    0.0
                }
            };
            let inc = column[c as usize]
                + edge(row[0], Some(links[0].relation as u16), c)
                + edge(c, None, row[1])
                + edge(c, Some(0), c);
            want.push((c, inc));
        }
        got.sort_by_key(|x| x.0);
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for ((c, a), (c2, b)) in got.iter().zip(&want) {
            assert_eq!(c, c2);
            assert!((a - b).abs() < 1e-6);
        }
        // With a floor, nothing at or above it is ever skipped.
        let floor = want.get(want.len() / 2).map_or(0.0, |w| w.1);
        let mut pruned = Vec::new();
        judge(&ext, &g, &oh, &scoring).extend_branch(&row, &mut |c, _| {
            pruned.push(c);
            floor
        });
        for (c, inc) in &want {
            assert!(
                *inc < floor || pruned.contains(c),
                "candidate {c} ({inc} >= {floor}) was skipped"
            );
        }
    }
}

#[test]
fn extend_branch_uses_seeds_without_a_matched_neighbour() {
    let mut rng = Rng(5);
    let kg = random_graph(&mut rng, 10, 20, 2);
    let g = view(&kg);
    let oh = vec![0.5f32; 20];
    let row = [3, NONE];
    let ext = Extension {
        node: 1,
        links: &[],
        seeds: &[3, 7, 1],
    };
    let scoring = HALVES;
    let mut got = Vec::new();
    judge(&ext, &g, &oh, &scoring).extend_branch(&row, &mut |c, _| {
        got.push(c);
        f32::NEG_INFINITY
    });
    assert_eq!(got, [7, 1], "seed 3 is taken by the branch already");
}

/// A level's judge for `extend_branch`, which reads no similarity.
fn judge<'a>(
    ext: &'a Extension<'a>,
    g: &'a GraphView<'a>,
    oh: &'a [f32],
    scoring: &'a Scoring,
) -> Judge<'a> {
    Judge {
        ext,
        g,
        oh,
        sim: &[],
        scoring,
    }
}

fn dev<T>(s: &[T]) -> gpsense_kernels::abi::DevSlice {
    gpsense_kernels::abi::DevSlice {
        ptr: s.as_ptr() as u64,
        len: s.len() as u64,
    }
}

/// A buffer the kernel writes: its address comes from a mutable borrow.
fn dev_mut<T>(s: &mut [T]) -> gpsense_kernels::abi::DevSlice {
    gpsense_kernels::abi::DevSlice {
        ptr: s.as_mut_ptr() as u64,
        len: s.len() as u64,
    }
}

/// The PTX entry bodies of the TruST kernels (`entry::trust_*`), run over host memory in two
/// launches each, give what the CPU path computes.
#[test]
fn gpu_entries_match_the_bodies() {
    use gpsense_kernels::abi::{GraphArgs, TrustOneHopArgs, TrustSimilarityArgs};
    use gpsense_kernels::entry;
    let mut rng = Rng(11);
    let scoring = HALVES;
    let kg = random_graph(&mut rng, 30, 120, 3);
    let g = view(&kg);
    let tpl = RandomTemplate::new(&mut rng, 4, 6, 3);
    let tv = tpl.view();
    let (nt, nd) = (4usize, g.node_count());
    let sim: Vec<f32> = (0..nt * nd).map(|_| rng.unit()).collect();
    let k = (0..nt)
        .map(|t| tv.entries(t as u32))
        .map(|(a, b)| b - a)
        .max()
        .unwrap_or(0);
    let (nf, nu) = hop_scratch_len(k);
    let dirs: Vec<u32> = tpl.dirs.iter().map(|&d| d as u32).collect();
    let graph = GraphArgs {
        out_offsets: dev(g.out.offsets),
        out_targets: dev(g.out.targets),
        out_labels: dev(g.out.labels),
        in_offsets: dev(g.inc.offsets),
        in_targets: dev(g.inc.targets),
        in_labels: dev(g.inc.labels),
        node_labels: dev(g.node_labels),
    };
    let items = nt * nd;
    let mut got = vec![0.0f32; items];
    for (first, len) in [(0, items / 2), (items / 2, items - items / 2)] {
        let (mut sf, mut su) = (vec![0.0f32; nf * len], vec![0u32; nu * len]);
        let args = TrustOneHopArgs {
            graph,
            tpl_offsets: dev(&tpl.offsets),
            tpl_others: dev(&tpl.others),
            tpl_dirs: dev(&dirs),
            tpl_relations: dev(&tpl.relations),
            sim: dev(&sim),
            alpha: scoring.alpha,
            relation_weight: scoring.relation_weight,
            scratch_f: dev_mut(&mut sf),
            scratch_f_len: nf as u64,
            scratch_u: dev_mut(&mut su),
            scratch_u_len: nu as u64,
            first: first as u64,
            out: dev_mut(&mut got[first..first + len]),
        };
        for i in 0..len + 3 {
            unsafe { entry::trust_one_hop(&args, i) };
        }
    }
    let (mut sf, mut su) = (vec![0.0f32; nf], vec![0u32; nu]);
    for (item, &got) in got.iter().enumerate() {
        let want = one_hop(
            (item % nt) as u32,
            (item / nt) as u32,
            &tv,
            &sim,
            &g,
            &scoring,
            &mut sf,
            &mut su,
        );
        assert!((got - want).abs() < 1e-6, "item {item}: {got} vs {want}");
    }

    let names = [
        "chocolate cake",
        "chocolate",
        "cake",
        "кошка",
        "choc",
        "cakes",
    ];
    let mut chars = Vec::new();
    let mut ends = Vec::new();
    for n in names {
        chars.extend(code_points(n));
        ends.push(chars.len() as u32);
    }
    let query = code_points("chocolate cakes");
    let ids: Vec<u32> = (0..names.len() as u32).collect();
    let row_len = 32;
    // The bit-parallel distance (with the name's pattern), then the dynamic programme (without).
    let (mut ascii, mut other_chars, mut other_masks) = ([0u64; 128], [0u32; 64], [0u64; 64]);
    let others = build_pattern(&query, &mut ascii, &mut other_chars, &mut other_masks);
    for with_pattern in [true, false] {
        let mut scratch = vec![0u32; row_len * ids.len()];
        let mut out = vec![0.0f32; ids.len()];
        let pattern = |s: &[u64]| {
            if with_pattern {
                dev(s)
            } else {
                dev::<u64>(&[])
            }
        };
        let args = TrustSimilarityArgs {
            query: dev(&query),
            ids: dev(&ids),
            chars: dev(&chars),
            ends: dev(&ends),
            threshold: 0.3,
            _pad: 0,
            ascii: pattern(&ascii),
            other_chars: dev(&other_chars[..others]),
            other_masks: dev(&other_masks[..others]),
            scratch: if with_pattern {
                dev::<u32>(&[])
            } else {
                dev_mut(&mut scratch)
            },
            row_len: row_len as u64,
            first: 0,
            out: dev_mut(&mut out),
        };
        for i in 0..ids.len() + 2 {
            unsafe { entry::trust_similarity(&args, i) };
        }
        let mut row = vec![0u32; row_len];
        for i in 0..ids.len() {
            let want = gpsense_kernels::trust::similarity_item(
                i, &query, &ids, &chars, &ends, 0.3, &mut row,
            );
            assert_eq!(out[i], want, "{}, pattern {with_pattern}", names[i]);
        }
        assert!(out[0] > 0.9 && out[3] == 0.0, "{out:?}");
    }
}

/// A branch's kept children are the best `capacity` by `ChildKey` (resembling first, then score,
/// then the lower node), whatever order they are offered in; the floor never skips one of them.
#[test]
fn top_children_keep_the_best_whatever_the_order() {
    use gpsense_kernels::trust::{ChildKey, TopChildren};
    let mut rng = Rng(11);
    for round in 0..300 {
        let n = 1 + rng.below(60) as usize;
        let cap = 1 + rng.below(12) as usize;
        // Few distinct scores, so ties are common.
        let keys: Vec<ChildKey> = (0..n)
            .map(|i| ChildKey {
                resembles: rng.below(3) > 0,
                score: rng.below(5) as f32 * 0.25,
                node: i as u32,
            })
            .collect();
        let mut want = keys.clone();
        want.sort_by(|a, b| {
            if a.better(b) {
                std::cmp::Ordering::Less
            } else {
                std::cmp::Ordering::Greater
            }
        });
        want.truncate(cap);
        let (mut nodes, mut scores, mut res) = (vec![0; cap], vec![0.0; cap], vec![0; cap]);
        let mut top = TopChildren {
            nodes: &mut nodes,
            scores: &mut scores,
            resembles: &mut res,
            len: 0,
        };
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        for &i in &order {
            let floor = top.floor(0.0);
            let k = keys[i];
            // A key the floor would skip is never one of the best.
            if k.score < floor {
                assert!(!want.contains(&k), "round {round}: {k:?} below {floor}");
                continue;
            }
            top.offer(k);
        }
        let mut got: Vec<ChildKey> = (0..top.len).map(|i| top.key(i)).collect();
        got.sort_by_key(|k| k.node);
        want.sort_by_key(|k| k.node);
        assert_eq!(got, want, "round {round}");
    }
}

/// A warp per branch (`extend_top_warp`, its 32 lanes judging candidates at once and lane 0
/// offering them) keeps exactly the children one thread keeps (`extend_top`), on lists longer than
/// a warp (hubs: many rounds), with rooms that fill (the floor then prunes) or never do, on
/// anchored levels and seeded ones; a round is taken per 32 positions of the lists together.
#[test]
fn a_warp_per_branch_keeps_what_one_thread_keeps() {
    use gpsense_kernels::trust::{Judge, TopChildren, WarpRooms};
    use gpsense_kernels::warp::HostWarp;
    let mut rng = Rng(21);
    let scoring = HALVES;
    let warp = HostWarp {
        on_lane: &|_| {},
        on_item: &|_, _| {},
    };
    let (mut filled, mut pruned_rounds) = (0, 0);
    for round in 0..300 {
        let nodes = 8 + rng.below(120) as u32;
        // Node 0 is a hub in both directions: its lists run to several rounds.
        let mut kg_edges = nodes as usize * 2;
        kg_edges += rng.below(3 * nodes as u64) as usize;
        let kg = random_graph_with_hub(&mut rng, nodes, kg_edges, 3);
        let g = view(&kg);
        let nt = 4;
        let row = [0, 1 + rng.below(nodes as u64 - 1) as u32, NONE, NONE];
        let links = [
            Link {
                other: 0,
                dir: Dir::Out,
                relation: rng.below(3) as u32,
            },
            Link {
                other: 1,
                dir: if rng.below(2) == 0 { Dir::In } else { Dir::Out },
                relation: ANY_RELATION,
            },
            Link {
                other: 2,
                dir: Dir::Out,
                relation: 1,
            },
        ];
        let seeded = round % 4 == 3;
        let seeds: Vec<u32> = (0..rng.below(100) as u32).map(|s| s % nodes).collect();
        let ext = Extension {
            node: 2,
            links: if seeded { &links[2..] } else { &links[..] },
            seeds: &seeds,
        };
        // Few distinct values, so that ties are common.
        let oh: Vec<f32> = (0..nodes as usize * nt)
            .map(|_| rng.below(5) as f32 * 0.25)
            .collect();
        let sim: Vec<f32> = (0..nodes as usize * nt)
            .map(|_| if rng.below(3) == 0 { 0.0 } else { 0.9 })
            .collect();
        let keep = 1 + rng.below(40) as usize;
        let base = rng.unit();

        let (mut n1, mut s1, mut r1) = (vec![0; keep], vec![0.0; keep], vec![0; keep]);
        let mut top = TopChildren {
            nodes: &mut n1,
            scores: &mut s1,
            resembles: &mut r1,
            len: 0,
        };
        let level = Judge {
            ext: &ext,
            g: &g,
            oh: &oh,
            sim: &sim,
            scoring: &scoring,
        };
        level.extend_top(&row, base, &mut top);
        let mut want: Vec<(u32, u32, u32)> = (0..top.len)
            .map(|i| (top.nodes[i], top.scores[i].to_bits(), top.resembles[i]))
            .collect();

        // The warp's rooms sit after another branch's, as on the device.
        let (mut n2, mut s2, mut r2) =
            (vec![7; 2 * keep], vec![0.0f32; 2 * keep], vec![0; 2 * keep]);
        let mut stage = vec![0u32; 2 * 32 * 3];
        let rooms = WarpRooms {
            nodes: dev_mut(&mut n2),
            scores: dev_mut(&mut s2),
            resembles: dev_mut(&mut r2),
            first: keep,
            keep,
            stage: dev_mut(&mut stage),
            first_slot: 32,
        };
        let (kept, work) = unsafe { level.extend_top_warp(&warp, &row, base, &rooms) };
        let mut got: Vec<(u32, u32, u32)> = (keep..keep + kept)
            .map(|i| (n2[i], s2[i].to_bits(), r2[i]))
            .collect();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want, "round {round}: keep {keep}, seeded {seeded}");
        assert!(
            n2[..keep].iter().all(|&n| n == 7),
            "another branch's rooms untouched"
        );
        // The work: every list (or the seeds) judged in rounds of 32.
        let lists: Vec<usize> = if seeded {
            vec![seeds.len()]
        } else {
            vec![
                g.adj(Dir::Out).degree(row[0]),
                g.adj(links[1].dir).degree(row[1]),
            ]
        };
        let judged: usize = lists.iter().sum();
        let rounds = judged.div_ceil(32);
        assert_eq!((work.judged, work.rounds), (judged as u64, rounds as u64));
        filled += usize::from(kept == keep && judged > keep);
        pruned_rounds += usize::from(rounds > 1 && kept == keep);
    }
    // The cases meant: rooms that filled, and several rounds past a full heap.
    assert!(
        filled > 50 && pruned_rounds > 20,
        "{filled} {pruned_rounds}"
    );
}

/// As `random_graph`, with node 0 joined to about half the nodes both ways.
fn random_graph_with_hub(
    rng: &mut Rng,
    nodes: u32,
    edges: usize,
    relations: u64,
) -> KnowledgeGraph {
    let mut b = random_builder(rng, nodes, edges, relations);
    for v in (1..nodes).step_by(2) {
        b.add_edge(0, rng.below(relations) as u16, v, 1.0);
        b.add_edge(v, rng.below(relations) as u16, 0, 1.0);
    }
    b.build().expect("build").0
}

/// Host arrays for `BeamRuns`: `runs` runs of `stride` children.
struct HostRuns {
    resembling: Vec<u32>,
    scores: Vec<f32>,
    parents: Vec<u32>,
    nodes: Vec<u32>,
    lens: Vec<u32>,
    stride: usize,
}

impl HostRuns {
    fn new(runs: usize, stride: usize) -> HostRuns {
        // Garbage where nothing was written, as on the device.
        HostRuns {
            resembling: vec![7; runs * stride],
            scores: vec![-3.0; runs * stride],
            parents: vec![NONE; runs * stride],
            nodes: vec![NONE; runs * stride],
            lens: vec![99; runs],
            stride,
        }
    }

    fn args(&mut self) -> gpsense_kernels::trust::BeamRuns {
        gpsense_kernels::trust::BeamRuns {
            resembling: dev_mut(&mut self.resembling),
            scores: dev_mut(&mut self.scores),
            parents: dev_mut(&mut self.parents),
            nodes: dev_mut(&mut self.nodes),
            lens: dev_mut(&mut self.lens),
            stride: self.stride as u64,
        }
    }
}

/// The next beam chosen on the device (each warp's rooms written best first by `rank_rooms`, the
/// runs merged in pairs some rounds by `entry::trust_merge`, then a thread per child placing it by
/// `entry::trust_select`) is the CPU's: every child of the level sorted by resemblances, score,
/// parent and node, the first `beam` kept, each with its parent's row. Any number of merge rounds
/// gives it, up to a single run and past it; ties are common, some branches kept nothing, and the
/// lengths past the live branches are stale (as a level's warps leave them).
#[test]
fn the_device_selects_the_beam_the_cpu_selects() {
    use gpsense_kernels::abi::{DevSlice, TrustMergeArgs, TrustSelectArgs};
    use gpsense_kernels::entry;
    use gpsense_kernels::trust::{rank_rooms, WarpRooms};
    use gpsense_kernels::warp::HostWarp;
    let mut rng = Rng(33);
    let warp = HostWarp {
        on_lane: &|_| {},
        on_item: &|_, _| {},
    };
    let (mut cut, mut whole, mut merged) = (0, 0, 0);
    for round in 0..400 {
        let (width, node) = (1 + rng.below(5) as usize, rng.below(5) as u32 % 5);
        let node = node.min(width as u32 - 1);
        let live = if rng.below(10) == 0 {
            0
        } else {
            1 + rng.below(12) as usize
        };
        let capacity = live.max(1) + rng.below(3) as usize;
        let keep = 1 + rng.below(70) as usize;
        let beam = 1 + rng.below(60) as usize;
        let rows: Vec<u32> = (0..capacity * width)
            .map(|_| rng.below(1000) as u32)
            .collect();
        let resembling: Vec<u32> = (0..capacity).map(|_| rng.below(3) as u32).collect();
        // Each branch's rooms, unordered: distinct nodes, few distinct scores.
        let (mut nodes, mut scores, mut resembles) = (
            vec![0u32; capacity * keep],
            vec![0f32; capacity * keep],
            vec![0u32; capacity * keep],
        );
        let mut stage = vec![0u32; capacity * 96];
        let mut first = HostRuns::new(capacity, keep);
        first.lens.fill(keep as u32);
        let mut want = Vec::new();
        for (b, &parent_resembling) in resembling.iter().enumerate().take(live) {
            let len = if rng.below(5) == 0 {
                0
            } else {
                rng.below(keep as u64 + 1) as usize
            };
            first.lens[b] = len as u32;
            let mut pool: Vec<u32> = (0..200).collect();
            for i in 0..len {
                let j = b * keep + i;
                nodes[j] = pool.swap_remove(rng.below(pool.len() as u64) as usize);
                scores[j] = rng.below(4) as f32 * 0.5;
                resembles[j] = rng.below(2) as u32;
                want.push((
                    parent_resembling + resembles[j],
                    scores[j],
                    b as u32,
                    nodes[j],
                ));
            }
            let rooms = WarpRooms {
                nodes: dev_mut(&mut nodes),
                scores: dev_mut(&mut scores),
                resembles: dev_mut(&mut resembles),
                first: b * keep,
                keep,
                stage: dev_mut(&mut stage),
                first_slot: b * 32,
            };
            let out = first.args();
            unsafe { rank_rooms(&warp, &rooms, len, b as u32, parent_resembling, &out) };
        }
        want.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.1.total_cmp(&a.1))
                .then(a.2.cmp(&b.2))
                .then(a.3.cmp(&b.3))
        });
        want.truncate(beam);

        let live_word = [live as u32];
        let rounds = rng.below(6) as u32;
        let mut runs = first;
        let mut span = 1u64;
        for _ in 0..rounds {
            let count = capacity.div_ceil(span as usize);
            let mut next = HostRuns::new(count.div_ceil(2), beam.min(2 * runs.stride));
            let args = TrustMergeArgs {
                live: dev(&live_word),
                span,
                beam: beam as u64,
                runs: runs.args(),
                merged: next.args(),
            };
            for t in 0..count * runs.stride {
                unsafe { entry::trust_merge(&args, t) };
            }
            runs = next;
            span *= 2;
        }
        let mut next_rows = vec![NONE; beam * width];
        let mut next_scores = vec![-1f32; beam];
        let mut next_resembling = vec![NONE; beam];
        let mut next_live = [NONE];
        let count = capacity.div_ceil(span as usize);
        let args = TrustSelectArgs {
            rows: dev(&rows),
            live: dev(&live_word),
            span,
            width: width as u64,
            node,
            _pad: 0,
            beam: beam as u64,
            runs: runs.args(),
            next_rows: dev_mut(&mut next_rows),
            next_scores: dev_mut(&mut next_scores),
            next_resembling: dev_mut(&mut next_resembling),
            next_live: DevSlice {
                ptr: next_live.as_mut_ptr() as u64,
                len: 1,
            },
        };
        for t in 0..(count * runs.stride).max(1) {
            unsafe { entry::trust_select(&args, t) };
        }
        assert_eq!(next_live[0] as usize, want.len(), "round {round}");
        for (place, &(res, score, parent, child)) in want.iter().enumerate() {
            let mut row = rows[parent as usize * width..][..width].to_vec();
            row[node as usize] = child;
            assert_eq!(
                (
                    &next_rows[place * width..][..width],
                    next_scores[place].to_bits(),
                    next_resembling[place]
                ),
                (&row[..], score.to_bits(), res),
                "round {round}: place {place} of {}, {rounds} merge rounds",
                want.len()
            );
        }
        if want.len() == beam {
            cut += 1;
        } else {
            whole += 1;
        }
        merged += usize::from(rounds > 0 && live > 2);
    }
    assert!(
        cut > 50 && whole > 50 && merged > 100,
        "{cut} {whole} {merged}"
    );
}

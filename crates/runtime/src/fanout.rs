//! How much a join position multiplies the partial matches, estimated on the host by random walks
//! down the join order (Wander Join, Li et al., SIGMOD 2016) before the device runs it.
//!
//! A walk matches the order's nodes one at a time: each node's extensions of the walk's row are
//! the data nodes adjacent to its pivot's along the pivot's relation that pass its filter, its
//! other backward edges and (under iso) injectivity; the walk takes one at random and weighs
//! itself by their number. The weighted extensions at a position over the weighted walks that
//! reached it estimate its mean fan-out. Independence estimates from label statistics miss the
//! dense clusters where heavy queries match (yeast's fan-outs of 10 where they predicted 0.01);
//! walks on the data see them.

use gpsense_kernels::{Dir, GraphView, NONE};

use gpsense_planner::{Plan, QueryGraph};

use crate::layout::{DataShape, Layout};
use crate::Semantics;

/// Walks per query at most.
const WALKS: usize = 2000;

/// Walks that decide whether to go on: most queries (HPRD's all) have too few partial matches
/// at the positions asked about for their order to matter, and stop here, in tens of
/// microseconds.
const PILOT: usize = 32;

/// Estimated rows entering a wanted position below which its deferral is not worth estimating
/// (a device level of this size takes microseconds).
const WORTH_ROWS: f64 = 64.0;

/// Adjacency entries the walks of one query may read in all (a bound on the host's time: about a
/// millisecond).
const WORK: usize = 1 << 21;

/// Per join position (of `layout`, a join order), the estimated mean number of extensions of a
/// partial match reaching it, where `wanted[position]`; `None` where no walk reached it, or for
/// every position when a step has no fixed relation to walk along (edge variables, a second
/// component).
pub fn fanouts(
    layout: &Layout,
    g: &GraphView,
    sets: &Sets,
    injective: bool,
    wanted: &[bool],
) -> Vec<Option<f64>> {
    let n = layout.steps.len();
    let mut reached = vec![0f64; n];
    let mut grown = vec![0f64; n];
    let walkable = layout.steps.iter().skip(1).all(|js| pivot(js).is_some());
    let Some(start) = layout
        .steps
        .first()
        .filter(|_| walkable && wanted.iter().any(|&w| w))
    else {
        return vec![None; n];
    };
    let nodes = g.node_count() as u32;
    let starts: Vec<u32> = sets
        .members(start.node)
        .take_while(|&v| v < nodes)
        .collect();
    let last = wanted.iter().rposition(|&w| w).unwrap_or(0);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut row = vec![NONE; layout.width];
    let mut options = Vec::new();
    let mut work = starts.len();
    for walk in 0..WALKS {
        if starts.is_empty() || work > WORK {
            break;
        }
        if walk == PILOT && !worth_it(&reached, walk) {
            return vec![None; n];
        }
        let mut weight = starts.len() as f64;
        row[start.slot as usize] = starts[rng.below(starts.len())];
        for (i, js) in layout.steps.iter().enumerate().take(last + 1).skip(1) {
            options.clear();
            work += extensions(layout, g, sets, injective, i, &row, &mut options);
            if wanted[i] {
                reached[i] += weight;
                grown[i] += weight * options.len() as f64;
            }
            if options.is_empty() {
                break;
            }
            weight *= options.len() as f64;
            row[js.slot as usize] = options[rng.below(options.len())];
        }
        row.fill(NONE);
    }
    (0..n)
        .map(|i| (wanted[i] && reached[i] > 0.0).then(|| grown[i] / reached[i]))
        .collect()
}

/// Whether to go on after the first `walks` walks: they saw enough partial matches at a wanted
/// position for its deferral to matter (the mean weight arriving there estimates the rows
/// entering it), or none reached one at all, which says nothing (dense queries' walks die early
/// where the filtered sets still hold dead ends).
fn worth_it(reached: &[f64], walks: usize) -> bool {
    reached.iter().all(|&r| r == 0.0) || reached.iter().any(|&r| r / walks as f64 >= WORTH_ROWS)
}

/// The check a step walks along: a backward edge with a fixed relation.
fn pivot(js: &crate::layout::JoinStep) -> Option<usize> {
    js.checks
        .iter()
        .position(|c| c.slot != NONE && c.label != NONE)
}

/// Pushes the extensions of `row` at position `i` to `out`; returns the adjacency entries read.
fn extensions(
    layout: &Layout,
    g: &GraphView,
    sets: &Sets,
    injective: bool,
    i: usize,
    row: &[u32],
    out: &mut Vec<u32>,
) -> usize {
    let js = &layout.steps[i];
    let Some(p) = pivot(js) else {
        return 0;
    };
    let c = js.checks[p];
    let (list, _) = g.adj(c.dir).by_label(row[c.slot as usize], c.label);
    let taken = &row[..i.min(layout.nodes)];
    let edges = |y: u32| {
        js.checks.iter().enumerate().all(|(k, c)| {
            k == p
                || match (c.slot, c.dir) {
                    (NONE, _) => g.has_edge(y, c.label, y),
                    (s, Dir::Out) => g.has_edge(row[s as usize], c.label, y),
                    (s, Dir::In) => g.has_edge(y, c.label, row[s as usize]),
                }
        })
    };
    // The bit test first: most of a pivot's neighbours are no candidates.
    for &y in list {
        if sets.has(js.node, y) && !(injective && taken.contains(&y)) && edges(y) {
            out.push(y);
        }
    }
    list.len()
}

/// A query's candidate bitsets as filtering left them: `stride` words per query node.
pub struct Sets<'s> {
    pub words: &'s [u32],
    pub stride: usize,
}

impl Sets<'_> {
    fn has(&self, u: usize, v: u32) -> bool {
        let w = u * self.stride + v as usize / 32;
        self.words.get(w).is_some_and(|x| x >> (v % 32) & 1 == 1)
    }

    fn members(&self, u: usize) -> impl Iterator<Item = u32> + '_ {
        let words = self
            .words
            .get(u * self.stride..(u + 1) * self.stride)
            .unwrap_or(&[]);
        words.iter().enumerate().flat_map(|(i, &w)| {
            (0..32u32)
                .filter(move |b| w >> b & 1 == 1)
                .map(move |b| i as u32 * 32 + b)
        })
    }
}

/// xorshift64: deterministic walks, so a query's plan does not change from run to run.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// [`fanouts`] per query node, for the join order `plan` of `q`: `wanted` and the answer indexed by
/// query node.
pub fn by_node(
    q: &QueryGraph,
    plan: &Plan,
    wanted: &[bool],
    g: &GraphView,
    sets: &Sets,
    semantics: Semantics,
    shape: DataShape,
) -> Vec<Option<f64>> {
    let Ok(layout) = Layout::new(q, plan, semantics, shape) else {
        return vec![None; wanted.len()];
    };
    let at: Vec<bool> = layout.steps.iter().map(|js| wanted[js.node]).collect();
    let estimates = fanouts(&layout, g, sets, semantics == Semantics::Iso, &at);
    let mut out = vec![None; wanted.len()];
    for (js, f) in layout.steps.iter().zip(estimates) {
        out[js.node] = f;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;
    use gpsense_graph::GraphBuilder;

    /// A directed ring of 200 nodes, each with edges to the next two: every partial match of a
    /// path has exactly two extensions, so the estimate is exact, whatever the walks pick (and
    /// enough rows reach each position for the pilot to go on).
    #[test]
    fn every_position_of_a_regular_graph_has_its_exact_fanout() {
        let mut b = GraphBuilder::new();
        let name = |i: usize| format!("n{}", i % 200);
        for i in 0..200 {
            b.add_triple(&name(i), "r", &name(i + 1), 1.0).unwrap();
            b.add_triple(&name(i), "r", &name(i + 2), 1.0).unwrap();
        }
        let g = b.build().unwrap().0;
        let q =
            gpsense_planner::compile("SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d }", &g).unwrap();
        let plan = Plan {
            order: (0..4).collect(),
            components: std::iter::once(0..4).collect(),
            rationale: vec![String::new(); 4],
        };
        let engine = Engine::new(&g);
        let stride = gpsense_kernels::bits::words_for(g.node_count());
        let mut words = vec![0u32; 4 * stride];
        for u in 0..4 {
            for v in 0..200 {
                words[u * stride + v / 32] |= 1 << (v % 32);
            }
        }
        let estimate = |words: &[u32], semantics| {
            let sets = Sets { words, stride };
            let wanted = [false, true, true, true];
            let g = engine.view();
            by_node(
                &q,
                &plan,
                &wanted,
                &g,
                &sets,
                semantics,
                DataShape::default(),
            )
        };
        for semantics in [Semantics::Iso, Semantics::Hom] {
            let f = estimate(&words, semantics);
            assert_eq!(f, [None, Some(2.0), Some(2.0), Some(2.0)], "{semantics}");
        }
        // Only candidates walked: with `?c` allowed nowhere, nothing reaches `?d`.
        words[2 * stride..3 * stride].fill(0);
        let f = estimate(&words, Semantics::Iso);
        assert_eq!(f, [None, Some(2.0), Some(0.0), None]);
    }
}

//! Filtering phase kernels: identify node candidates, filter neighbour candidates, refine.

use core::sync::atomic::{AtomicU32, Ordering};

use crate::bits;
use crate::view::{Dir, GraphView};
use crate::warp::{Warp, LANES};
use crate::NONE;

/// A lower bound a candidate's adjacency must meet: at least `count` entries in direction `dir`
/// with edge label `label` (`NONE`: any label) — or, in [`NodeFilter::neighbour_labels`], with a
/// neighbour of node label `label`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Need {
    pub dir: Dir,
    pub label: u32,
    pub count: u32,
}

/// What a data node must satisfy to be a candidate of one query node. Every test is a necessary
/// condition of a match, so filtering never loses an answer.
#[derive(Clone, Copy, Debug)]
pub struct NodeFilter<'a> {
    /// The data node a concept node is bound to, or `NONE`.
    pub fixed: u32,
    /// The required node label, or `NONE`.
    pub label: u32,
    /// Per-relation (and any-relation) degree bounds.
    pub degrees: &'a [Need],
    /// Neighbourhood label frequencies (under injective semantics only).
    pub neighbour_labels: &'a [Need],
    /// Relations of the query node's self-loops (`NONE`: a variable self-loop).
    pub self_loops: &'a [u32],
}

impl NodeFilter<'_> {
    /// Whether a test of this filter reads a node's CSR offsets in direction `dir`.
    pub fn reads(&self, dir: Dir) -> bool {
        self.degrees.iter().any(|n| n.dir == dir)
            || self
                .neighbour_labels
                .iter()
                .any(|n| n.dir == dir && n.count > 0)
            || (dir == Dir::Out && !self.self_loops.is_empty())
    }
}

/// Whether data node `v` passes `f`. O(sum of the degrees it inspects).
pub fn node_matches(f: &NodeFilter, g: &GraphView, v: u32) -> bool {
    if f.fixed != NONE && v != f.fixed {
        return false;
    }
    if f.label != NONE && g.node_label(v) != f.label {
        return false;
    }
    for need in f.degrees {
        if (g.adj(need.dir).by_label(v, need.label).0.len() as u32) < need.count {
            return false;
        }
    }
    for &label in f.self_loops {
        if !g.out.has(v, label, v) {
            return false;
        }
    }
    has_neighbour_labels(g, v, f.neighbour_labels, Dir::Out)
        && has_neighbour_labels(g, v, f.neighbour_labels, Dir::In)
}

/// The neighbour-label needs of one direction, checked in one pass over `v`'s list (per need when
/// there are more than fit the counters).
fn has_neighbour_labels(g: &GraphView, v: u32, needs: &[Need], dir: Dir) -> bool {
    const MAX: usize = 16;
    let mut want = [0u32; MAX];
    let mut labels = [0u32; MAX];
    let mut n = 0;
    for need in needs
        .iter()
        .filter(|need| need.dir == dir && need.count > 0)
    {
        if n == MAX {
            return needs
                .iter()
                .filter(|need| need.dir == dir)
                .all(|need| has_labelled_neighbours(g, v, need));
        }
        labels[n] = need.label;
        want[n] = need.count;
        n += 1;
    }
    let mut open = n;
    if open == 0 {
        return true;
    }
    for &w in g.adj(dir).list(v).0 {
        let l = g.node_label(w);
        for k in 0..n {
            if labels[k] == l && want[k] > 0 {
                want[k] -= 1;
                if want[k] == 0 {
                    open -= 1;
                    if open == 0 {
                        return true;
                    }
                }
            }
        }
    }
    false
}

fn has_labelled_neighbours(g: &GraphView, v: u32, need: &Need) -> bool {
    let mut found = 0;
    for &w in g.adj(need.dir).list(v).0 {
        if g.node_label(w) == need.label {
            found += 1;
            if found >= need.count {
                return true;
            }
        }
    }
    need.count == 0
}

/// Kernel (one work-item per 32 data nodes): the candidate bitset word `w` of a query node, testing
/// only the nodes whose bit is set in `within` (`u32::MAX`: all; the bits a neighbour filter marked).
pub fn identify_node_candidates(w: usize, within: u32, f: &NodeFilter, g: &GraphView) -> u32 {
    let n = g.node_count() as u32;
    let first = (w as u32) << 5;
    let mut todo = within;
    if f.fixed != NONE {
        // A concept node: one possible bit.
        todo &= if f.fixed >> 5 == w as u32 {
            1 << (f.fixed & 31)
        } else {
            0
        };
    }
    let mut word = 0;
    while todo != 0 {
        let bit = todo.trailing_zeros();
        todo &= todo - 1;
        let v = first + bit;
        if v >= n {
            break;
        }
        if node_matches(f, g, v) {
            word |= 1 << bit;
        }
    }
    word
}

/// Kernel (one warp per candidate, lanes striding the adjacency list): marks in `mark` every
/// neighbour of candidate `candidates[i]` reached over `dir`/`label` that is still allowed by
/// `allowed` (the other query node's current candidate bitset; empty: no set yet, all allowed).
#[allow(clippy::too_many_arguments)]
pub fn filter_neighbour_candidates(
    i: usize,
    lane: usize,
    lanes: usize,
    candidates: &[u32],
    dir: Dir,
    label: u32,
    allowed: &[u32],
    mark: &[AtomicU32],
    g: &GraphView,
) {
    let targets = g.adj(dir).by_label(candidates[i], label).0;
    let mut j = lane;
    while j < targets.len() {
        let w = targets[j];
        if allowed.is_empty() || bits::test(allowed, w) {
            bits::set_atomic(mark, w);
        }
        j += lanes;
    }
}

/// A query edge at the node being refined: the other endpoint's candidate bitset is
/// `sets[other * stride..][..stride]`, reached over `dir`/`label`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Incident {
    pub dir: Dir,
    pub label: u32,
    pub other: u32,
}

/// Kernel (one work-item per candidate): whether candidate `v` keeps, for every incident query edge,
/// at least one neighbour among the other endpoint's candidates. Self-loops are checked by
/// [`node_matches`] and must not be listed.
pub fn refine_candidate(
    v: u32,
    incident: &[Incident],
    sets: &[u32],
    stride: usize,
    g: &GraphView,
) -> bool {
    incident.iter().all(|e| {
        let other = &sets[e.other as usize * stride..][..stride];
        g.adj(e.dir)
            .by_label(v, e.label)
            .0
            .iter()
            .any(|&w| bits::test(other, w))
    })
}

/// Kernel (one warp per bitset word of the candidates `from`): [`filter_neighbour_candidates`] for
/// every candidate in word `w`, the warp's lanes striding each adjacency list. The paper's warp per
/// candidate, over the bitset itself, so no compaction is needed between filtering steps.
#[allow(clippy::too_many_arguments)]
pub fn mark_neighbours(
    warp: &impl Warp,
    w: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    allowed: &[u32],
    mark: &[AtomicU32],
    g: &GraphView,
) {
    let mut word = from[w];
    while word != 0 {
        let v = (w as u32) << 5 | word.trailing_zeros();
        word &= word - 1;
        let one = [v];
        warp.each(|lane| {
            filter_neighbour_candidates(
                0,
                lane as usize,
                LANES as usize,
                &one,
                dir,
                label,
                allowed,
                mark,
                g,
            )
        });
    }
}

/// Kernel (one work-item per bitset word): word `w` of query node `u`'s candidates after one
/// refinement: the candidates that keep, for every incident query edge, a neighbour among the other
/// endpoint's candidates. `sets` holds every query node's bitset (`stride` words each), read
/// atomically because other work-items refine their own words of the same node meanwhile.
pub fn refine_word(
    u: usize,
    w: usize,
    incident: &[Incident],
    sets: &[AtomicU32],
    stride: usize,
    g: &GraphView,
) -> u32 {
    let mut word = sets[u * stride + w].load(Ordering::Relaxed);
    let mut todo = word;
    while todo != 0 {
        let bit = todo.trailing_zeros();
        todo &= todo - 1;
        let v = (w as u32) << 5 | bit;
        let supported = incident.iter().all(|e| {
            let other = &sets[e.other as usize * stride..][..stride];
            g.adj(e.dir)
                .by_label(v, e.label)
                .0
                .iter()
                .any(|&x| bits::test_atomic(other, x))
        });
        if !supported {
            word &= !(1 << bit);
        }
    }
    word
}

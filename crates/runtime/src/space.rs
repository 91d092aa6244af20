//! The candidate space (as DAF, VEQ, CECI and EGSM build it): per query node a sorted candidate
//! array, per query edge and direction the candidate-to-candidate adjacency, refined to a fixpoint.
//!
//! Candidates are generated in plan order, each query node from the neighbourhood of an earlier
//! neighbour's candidates when that is cheaper than scanning its label's nodes (or all nodes), so an
//! anchored query never touches all `|V|` nodes. Every per-candidate step is a `gpsense_kernels`
//! body (`node_matches`, `count_expansion`/`write_expansion`, `count_space_edges`/
//! `write_space_edges`) run by the CPU executor with the two-step output (count, scan, write): the
//! same work a GPU launch does. Refinement drops candidates with an empty list toward some query
//! neighbour (arc consistency over the query's edges, alternating reverse and forward plan order
//! as DAF's dynamic programme over its query DAG does) until nothing changes or `MAX_PASSES`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use gpsense_kernels::filter::{node_matches, NodeFilter};
use gpsense_kernels::space::{
    count_expansion, count_space_edges, dedup_sorted, write_expansion, write_space_edges,
};
use gpsense_kernels::{Dir, GraphView, NONE};

use crate::executor::{offsets_of, Executor};
use crate::filtering::{FilterReport, LabelIndex, NeighbourLabels};
use crate::layout::Layout;

/// Refinement passes at most (each one is linear in the space; real queries settle in 2-4).
const MAX_PASSES: usize = 8;

/// The lists of one query edge seen from one endpoint: for candidate `i` of `from`, the indices of its
/// data neighbours among `to`'s candidates, `targets[offsets[i]..offsets[i + 1]]`, ascending.
#[derive(Clone, Debug)]
pub struct SpaceEdge {
    pub from: usize,
    pub to: usize,
    /// Direction seen from `from`.
    pub dir: Dir,
    /// The fixed relation, or `NONE` for a variable edge.
    pub label: u32,
    pub offsets: Vec<u32>,
    pub targets: Vec<u32>,
}

impl SpaceEdge {
    #[inline]
    pub fn list(&self, i: u32) -> &[u32] {
        let i = i as usize;
        &self.targets[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// Candidates and candidate edges of every query node and non-loop query edge.
#[derive(Clone, Debug, Default)]
pub struct CandidateSpace {
    /// Per query node, its candidates (data nodes), ascending.
    pub cands: Vec<Vec<u32>>,
    /// Two per non-loop query edge, one from each endpoint.
    pub edges: Vec<SpaceEdge>,
    /// Per query node, the indexes into `edges` that start at it.
    pub from: Vec<Vec<usize>>,
    /// `0, 1, 2, ...` as long as the longest candidate array: a root's list of candidate indices.
    pub identity: Vec<u32>,
}

impl CandidateSpace {
    pub fn any_empty(&self) -> bool {
        self.cands.iter().any(Vec::is_empty)
    }

    /// Candidate edges in all lists.
    pub fn edge_count(&self) -> u64 {
        self.edges.iter().map(|e| e.targets.len() as u64).sum()
    }
}

/// Builds a [`CandidateSpace`] for a layout (its filters and plan order) over a graph.
pub struct SpaceBuilder<'a> {
    pub layout: &'a Layout,
    pub g: GraphView<'a>,
    pub labels: &'a LabelIndex,
    /// Neighbour-label sets, when the engine keeps them: they decide the count-one needs.
    pub neighbour_labels: Option<&'a NeighbourLabels>,
    pub ex: Executor,
}

impl SpaceBuilder<'_> {
    pub fn build(&self) -> (CandidateSpace, FilterReport) {
        let n = self.layout.nodes;
        let mut report = FilterReport::default();
        let start = Instant::now();
        let mut space = CandidateSpace {
            cands: vec![Vec::new(); n],
            edges: Vec::new(),
            from: vec![Vec::new(); n],
            identity: Vec::new(),
        };
        let mut done = vec![false; n];
        for &u in &self.layout.order {
            space.cands[u] = self.generate(u, &space.cands, &done);
            done[u] = true;
            if space.cands[u].is_empty() {
                break;
            }
        }
        report.after_filter = space.cands.iter().map(Vec::len).collect();
        if !space.any_empty() {
            self.collect_edges(&mut space);
        }
        report.filter_time = start.elapsed();
        let start = Instant::now();
        if !space.any_empty() {
            refine(&mut space, &self.layout.order);
        }
        report.refine_time = start.elapsed();
        report.after_refine = space.cands.iter().map(Vec::len).collect();
        let longest = space.cands.iter().map(Vec::len).max().unwrap_or(0);
        space.identity = (0..longest as u32).collect();
        (space, report)
    }

    /// The candidates of `u`: from the cheapest earlier neighbour's adjacency, or by a scan.
    fn generate(&self, u: usize, cands: &[Vec<u32>], done: &[bool]) -> Vec<u32> {
        let f = self.layout.filters[u].view();
        let g = self.g;
        if f.fixed != NONE {
            let ok = (f.fixed as usize) < g.node_count() && node_matches(&f, &g, f.fixed);
            return if ok { vec![f.fixed] } else { Vec::new() };
        }
        let scan: &[u32] = match (f.label != NONE).then(|| self.labels.nodes(f.label)) {
            Some(Some(nodes)) => nodes,
            _ => &[],
        };
        let scan_cost = if f.label != NONE && self.labels.nodes(f.label).is_some() {
            scan.len() as u64
        } else {
            g.node_count() as u64
        };
        // The cheapest earlier neighbour to expand from; a sum stops once it cannot win.
        let mut best: Option<(u64, usize, Dir, u32)> = None;
        for e in self.layout.incident[u]
            .iter()
            .filter(|e| done[e.other as usize])
        {
            let bound = best.map_or(scan_cost, |b| b.0.min(scan_cost));
            let dir = e.dir.reverse();
            let mut cost = 0u64;
            for &w in &cands[e.other as usize] {
                cost += g.adj(dir).by_label(w, e.label).0.len() as u64;
                if cost >= bound {
                    break;
                }
            }
            if cost < bound {
                best = Some((cost, e.other as usize, dir, e.label));
            }
        }
        let pool: Vec<u32> = match best {
            Some((cost, w, dir, label)) if cost < scan_cost => {
                self.expand(&cands[w], dir, label, f.label)
            }
            _ if scan_cost < g.node_count() as u64 => scan.to_vec(),
            _ => (0..g.node_count() as u32).collect(),
        };
        let mut pool = pool;
        // With neighbour-label sets, the count-one needs are a few word tests and the pass over a
        // node's list is left to the needs of two or more.
        let spec = &self.layout.filters[u];
        let (mask, counted) = match self.neighbour_labels {
            Some(nl) if !spec.neighbour_labels.is_empty() => (
                Some(nl.mask(&spec.neighbour_labels)),
                spec.neighbour_labels
                    .iter()
                    .copied()
                    .filter(|n| n.count > 1)
                    .collect(),
            ),
            _ => (None, Vec::new()),
        };
        let f = match mask {
            Some(_) => NodeFilter {
                neighbour_labels: &counted,
                ..f
            },
            None => f,
        };
        let pass = |v: u32| {
            mask.as_ref()
                .zip(self.neighbour_labels)
                .is_none_or(|(m, nl)| nl.covers(v, m))
                && node_matches(&f, &g, v)
        };
        if !self.ex.is_parallel_for(pool.len()) {
            pool.retain(|&v| pass(v));
            return pool;
        }
        let mut keep = vec![false; pool.len()];
        self.ex.map(&mut keep, |i| pass(pool[i]));
        pool.into_iter()
            .zip(keep)
            .filter_map(|(v, k)| k.then_some(v))
            .collect()
    }

    /// The distinct neighbours of `from` over `dir`/`label` with node label `node_label`, ascending
    /// (two-step output, then sort).
    fn expand(&self, from: &[u32], dir: Dir, label: u32, node_label: u32) -> Vec<u32> {
        let g = self.g;
        // The label test needs labels on the graph (an absent label matches no node anyway).
        let node_label = if g.node_labels.is_empty() {
            NONE
        } else {
            node_label
        };
        let mut out = if self.ex.is_parallel_for(from.len()) {
            let mut counts = vec![0u32; from.len()];
            self.ex.map(&mut counts, |i| {
                count_expansion(i, from, dir, label, node_label, &g)
            });
            let offsets = offsets_of(&counts);
            let mut out = vec![0u32; *offsets.last().unwrap_or(&0) as usize];
            self.ex.scatter(&mut out, &offsets, 1, |i, region| {
                write_expansion(i, from, dir, label, node_label, &g, region);
            });
            out
        } else {
            // The same write body into a growing buffer: no count pass, no offsets.
            let mut out = Vec::new();
            for i in 0..from.len() {
                let at = out.len();
                out.resize(at + g.adj(dir).by_label(from[i], label).0.len(), 0);
                let n = write_expansion(i, from, dir, label, node_label, &g, &mut out[at..]);
                out.truncate(at + n);
            }
            out
        };
        out.sort_unstable();
        let n = dedup_sorted(&mut out);
        out.truncate(n);
        out
    }

    /// Both directions' lists of every non-loop query edge: one by intersections, from the endpoint
    /// with fewer candidates, the other by transposing it (linear in the lists).
    fn collect_edges(&self, space: &mut CandidateSpace) {
        for u in 0..self.layout.nodes {
            for inc in &self.layout.incident[u] {
                let w = inc.other as usize;
                // Each edge once: from the endpoint with fewer candidates (ties: the lower id).
                let (cu, cw) = (space.cands[u].len(), space.cands[w].len());
                if (cw, w) < (cu, u) {
                    continue;
                }
                let forward = self.lists(
                    SpaceEdge {
                        from: u,
                        to: w,
                        dir: inc.dir,
                        label: inc.label,
                        offsets: Vec::new(),
                        targets: Vec::new(),
                    },
                    &space.cands,
                );
                let backward = transpose(&forward, cw);
                space.from[u].push(space.edges.len());
                space.edges.push(forward);
                space.from[w].push(space.edges.len());
                space.edges.push(backward);
            }
        }
    }

    /// Fills `e`'s lists: count (an upper bound), scan, write (sorted, distinct), compact. Below the
    /// executor's parallel size, one pass writes into a growing buffer instead (each list's room is
    /// its adjacency's length): the same write body, half the intersections.
    fn lists(&self, mut e: SpaceEdge, cands: &[Vec<u32>]) -> SpaceEdge {
        let g = self.g;
        let (from, to) = (&cands[e.from], &cands[e.to]);
        let (dir, label) = (e.dir, e.label);
        if !self.ex.is_parallel_for(from.len()) {
            let mut targets = Vec::new();
            e.offsets = Vec::with_capacity(from.len() + 1);
            e.offsets.push(0);
            for (i, &v) in from.iter().enumerate() {
                let at = targets.len();
                targets.resize(at + g.adj(dir).by_label(v, label).0.len(), 0);
                let n = write_space_edges(i, from, dir, label, to, &g, &mut targets[at..]);
                targets.truncate(at + n);
                e.offsets.push(targets.len() as u32);
            }
            e.targets = targets;
            return e;
        }
        let mut counts = vec![0u32; from.len()];
        self.ex.map(&mut counts, |i| {
            count_space_edges(i, from, dir, label, to, &g)
        });
        let offsets = offsets_of(&counts);
        let mut out = vec![0u32; *offsets.last().unwrap_or(&0) as usize];
        let written: Vec<AtomicU32> = (0..from.len()).map(|_| AtomicU32::new(0)).collect();
        self.ex.scatter(&mut out, &offsets, 1, |i, region| {
            let n = write_space_edges(i, from, dir, label, to, &g, region);
            written[i].store(n as u32, Ordering::Relaxed);
        });
        if label == NONE {
            // Variable edges may have counted one neighbour more than once: close the gaps.
            let mut w = 0usize;
            e.offsets = Vec::with_capacity(from.len() + 1);
            e.offsets.push(0);
            for i in 0..from.len() {
                let (s, n) = (
                    offsets[i] as usize,
                    written[i].load(Ordering::Relaxed) as usize,
                );
                out.copy_within(s..s + n, w);
                w += n;
                e.offsets.push(w as u32);
            }
            out.truncate(w);
        } else {
            e.offsets = offsets.iter().map(|&o| o as u32).collect();
        }
        e.targets = out;
        e
    }
}

/// The same edge's lists seen from its other endpoint (with `to_len` candidates): ascending, since
/// the sources are visited in order.
fn transpose(e: &SpaceEdge, to_len: usize) -> SpaceEdge {
    let mut offsets = vec![0u32; to_len + 1];
    for &j in &e.targets {
        offsets[j as usize + 1] += 1;
    }
    for j in 0..to_len {
        offsets[j + 1] += offsets[j];
    }
    let mut next = offsets.clone();
    let mut targets = vec![0u32; e.targets.len()];
    for i in 0..e.offsets.len() - 1 {
        for &j in e.list(i as u32) {
            targets[next[j as usize] as usize] = i as u32;
            next[j as usize] += 1;
        }
    }
    SpaceEdge {
        from: e.to,
        to: e.from,
        dir: e.dir.reverse(),
        label: e.label,
        offsets,
        targets,
    }
}

/// Arc consistency over the candidate space: a candidate stays while each of its lists holds a
/// live candidate. Passes alternate reverse and forward plan order; then dead candidates are removed
/// and the lists renumbered.
fn refine(space: &mut CandidateSpace, order: &[usize]) {
    let mut alive: Vec<Vec<bool>> = space.cands.iter().map(|c| vec![true; c.len()]).collect();
    let mut left: Vec<usize> = space.cands.iter().map(Vec::len).collect();
    for pass in 0..MAX_PASSES {
        let mut changed = false;
        let nodes: Box<dyn Iterator<Item = &usize>> = if pass % 2 == 0 {
            Box::new(order.iter().rev())
        } else {
            Box::new(order.iter())
        };
        for &u in nodes {
            for i in 0..space.cands[u].len() {
                if !alive[u][i] {
                    continue;
                }
                let supported = space.from[u].iter().all(|&k| {
                    let e = &space.edges[k];
                    e.list(i as u32).iter().any(|&j| alive[e.to][j as usize])
                });
                if !supported {
                    alive[u][i] = false;
                    left[u] -= 1;
                    changed = true;
                }
            }
            if left[u] == 0 {
                break;
            }
        }
        if !changed || left.contains(&0) {
            break;
        }
    }
    compact(space, &alive);
}

/// Keeps the live candidates and renumbers every list.
fn compact(space: &mut CandidateSpace, alive: &[Vec<bool>]) {
    if alive.iter().all(|a| a.iter().all(|&x| x)) {
        return;
    }
    let renumber: Vec<Vec<u32>> = alive
        .iter()
        .map(|a| {
            let mut next = 0;
            a.iter()
                .map(|&x| {
                    if x {
                        next += 1;
                        next - 1
                    } else {
                        NONE
                    }
                })
                .collect()
        })
        .collect();
    for e in &mut space.edges {
        let mut offsets = Vec::with_capacity(e.offsets.len());
        let mut targets = Vec::with_capacity(e.targets.len());
        offsets.push(0);
        for (i, &keep) in alive[e.from].iter().enumerate() {
            if !keep {
                continue;
            }
            let old = &e.targets[e.offsets[i] as usize..e.offsets[i + 1] as usize];
            targets.extend(
                old.iter()
                    .map(|&j| renumber[e.to][j as usize])
                    .filter(|&j| j != NONE),
            );
            offsets.push(targets.len() as u32);
        }
        e.offsets = offsets;
        e.targets = targets;
    }
    for (c, a) in space.cands.iter_mut().zip(alive) {
        let mut k = 0;
        c.retain(|_| {
            k += 1;
            a[k - 1]
        });
    }
}

//! Estimates from samples of the data's partial matches, for the device's counts: how much each
//! join position multiplies its level (which nodes gpu_leaves.rs defers and counts), and a join
//! order cheaper than the default one.
//!
//! A population of weighted partial matches (particles: sequential importance resampling, the
//! sampling form of Wander Join, Li et al., SIGMOD 2016) is grown down an order inside the filtered
//! candidate sets; after each position it is resampled back to [`PARTICLES`] rows of equal weight,
//! so it does not die out where single random walks would (dense queries' filtered sets hold many
//! dead ends). A node whose neighbours all come before it and which does not shrink its level is
//! left out, as the device counts it. Label statistics miss the dense clusters where heavy queries
//! match (yeast's fan-outs of 10 where they predicted 0.01); samples of the data see them. A level
//! of many particles is extended on every core, with the very result of one particle after
//! another: this is host time between a lone query's filtering and its join.
//!
//! The order: the default one (order.rs) looks only at candidate counts and edges back, and on
//! dense queries can put a node that multiplies its level twentyfold before the neighbour that
//! would have let the device count it. The walk estimates the partial matches the device would
//! enumerate for an order; a hill climb moves one node at a time to another place while the
//! estimate falls. Every estimate draws the same random numbers, so two orders are compared on the
//! same samples, and a move's estimate resumes from the particles of the prefix it keeps. Most
//! queries (HPRD's all) stay below [`WORTH`] with the default order and keep it. The climb reads
//! at most a sixteenth as many adjacency entries as the default order's estimated partial matches
//! (the device's work it could save), or two walks' worth where that is more, and [`WORK`] at
//! most. A found order replaces the default only when fresh samples, four times as many, estimate
//! it [`GAIN`] times cheaper: the climb keeps the lowest of many noisy estimates, which flatters
//! its pick.

use gpsense_kernels::{Dir, GraphView, NONE};
use gpsense_planner::{EdgeLabel, Plan, QueryGraph};
use rayon::prelude::*;

/// A query's candidate bitsets as filtering left them: `stride` words per query node.
pub struct Sets<'s> {
    pub words: &'s [u32],
    pub stride: usize,
}

impl Sets<'_> {
    pub(crate) fn has(&self, u: usize, v: u32) -> bool {
        let w = u * self.stride + v as usize / 32;
        self.words.get(w).is_some_and(|x| x >> (v % 32) & 1 == 1)
    }

    pub(crate) fn members(&self, u: usize) -> impl Iterator<Item = u32> + '_ {
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
#[derive(Clone)]
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Particles: partial matches carried from one level to the next.
const PARTICLES: usize = 64;

/// Particles per task when a level's extensions are found on every core: a level of fewer than
/// two tasks' worth stays on the calling thread (a fork costs about as much as 64 short lists).
const TASK: usize = 64;

/// Particles of a walk estimating fan-outs: one walk decides every deferral, so it can afford
/// more, and yeast's fan-outs are heavy-tailed (a few partial matches with dozens of extensions,
/// most with none): with 256, `query_sparse_16_83`'s fan-outs of 2.5 and 4.0 came out 0.6, and its
/// partial matches grew 17 times.
const FANOUT_PARTICLES: usize = 1024;

/// Estimated partial matches of the default order below which it stays: such a join takes the
/// device about a millisecond, less than a search could win.
const WORTH: f64 = 1e5;

/// How many times cheaper a found order must be estimated to replace the default.
const GAIN: f64 = 1.5;

/// How much cheaper a move must be estimated for the climb to take it.
const STEP: f64 = 0.95;

/// Extensions of one position a walk keeps in memory (256 KiB) before it takes its picks in a
/// second pass instead.
const KEPT: usize = 1 << 16;

/// Adjacency entries the first passes of one query's search may read in all (a second pass, past
/// [`KEPT`] extensions, reads at most as many again): tens of milliseconds of host time.
const WORK: usize = 1 << 24;

/// An edge of the query seen from one endpoint `y`: the other endpoint, and the direction and
/// relation in which the other's adjacency lists `y`'s data nodes.
#[derive(Clone, Copy)]
struct Arm {
    other: usize,
    dir: Dir,
    label: u32,
}

/// A better join order for a one-component count whose edges all have fixed relations, when one
/// is estimated at least [`GAIN`] times cheaper than `default` (the default join order) and
/// `default` at least [`WORTH`] partial matches; else `None`.
pub fn better_order(
    q: &QueryGraph,
    default: &Plan,
    g: &GraphView,
    sets: &Sets,
    injective: bool,
) -> Option<Plan> {
    let n = q.nodes.len();
    if n < 3 || default.components.len() != 1 || default.order.len() != n {
        return None;
    }
    let arms = arms_of(q, false)?;
    let mut sampler = Sampler::new(g, sets, &arms, injective, PARTICLES);
    let walk = sampler.walk(&default.order, 0, &State::new(n), true)?;
    // Where no particle reaches the end there are too few matches for an order to matter, and
    // estimates of the orders tried would be guesses.
    if walk.cost < WORTH || walk.died {
        return None;
    }
    // The climb may read a sixteenth of the estimated rows, and two walks' worth at least.
    let more = ((walk.cost / 16.0) as usize).max(2 * sampler.work);
    sampler.budget = WORK.min(sampler.work + more);
    let (order, _) = sampler.climb(default.order.clone(), walk);
    if order == default.order {
        return None;
    }
    // The climb kept the lowest of many noisy estimates, which flatters its pick: both orders
    // are estimated again on fresh samples, four times as many, before one replaces the other.
    sampler.seed = 0x2545_f491_4f6c_dd1d;
    sampler.particles = 4 * PARTICLES;
    sampler.budget = usize::MAX;
    let fresh = |s: &mut Sampler, order: &[usize]| s.walk(order, 0, &State::new(n), false);
    let (before, after) = (
        fresh(&mut sampler, &default.order)?,
        fresh(&mut sampler, &order)?,
    );
    if after.died || after.cost * GAIN >= before.cost {
        return None;
    }
    let rationale = order
        .iter()
        .zip(&after.notes)
        .enumerate()
        .map(|(i, (&u, note))| format!("{}. {}: {note}", i + 1, q.nodes[u].name))
        .collect();
    Some(Plan {
        order,
        components: default.components.clone(),
        rationale,
    })
}

/// Each query node's arms; with `variables`, an edge with a variable relation is an arm along
/// every relation (its binding is not followed), else `None`.
fn arms_of(q: &QueryGraph, variables: bool) -> Option<Vec<Vec<Arm>>> {
    let mut arms = vec![Vec::new(); q.nodes.len()];
    for e in &q.edges {
        let label = match e.label {
            EdgeLabel::Fixed(r) => r as u32,
            EdgeLabel::Variable(_) if variables => NONE,
            EdgeLabel::Variable(_) => return None,
        };
        arms[e.target].push(Arm {
            other: e.source,
            dir: Dir::Out,
            label,
        });
        if e.source != e.target {
            arms[e.source].push(Arm {
                other: e.target,
                dir: Dir::In,
                label,
            });
        }
    }
    Some(arms)
}

/// Per query node where `wanted`, the estimated mean number of extensions of a partial match
/// reaching its place in `order` (a join order of one component); `None` where no particle reached
/// it, for nodes not wanted, and for every node when the walk down to the last node wanted passes
/// the work bound.
pub fn fanouts(
    q: &QueryGraph,
    order: &[usize],
    wanted: &[bool],
    g: &GraphView,
    sets: &Sets,
    injective: bool,
) -> Vec<Option<f64>> {
    let n = q.nodes.len();
    let none = vec![None; n];
    let Some(arms) = arms_of(q, true) else {
        return none;
    };
    if order.len() != n {
        return none;
    }
    // The walk ends at the last node wanted: a position's estimate depends only on those before it.
    let Some(last) = order.iter().rposition(|&y| wanted[y]) else {
        return none;
    };
    let mut sampler = Sampler::new(g, sets, &arms, injective, FANOUT_PARTICLES);
    let Some(walk) = sampler.walk(&order[..=last], 0, &State::new(n), false) else {
        return none;
    };
    let mut out = none;
    for (&y, f) in order.iter().zip(walk.fanouts) {
        out[y] = f.filter(|_| wanted[y]);
    }
    out
}

/// Whether every node of `order` after the first has a neighbour before it.
fn connected(arms: &[Vec<Arm>], order: &[usize]) -> bool {
    let mut seen = vec![false; arms.len()];
    order.iter().enumerate().all(|(i, &y)| {
        let ok = i == 0 || arms[y].iter().any(|a| seen[a.other]);
        seen[y] = true;
        ok
    })
}

/// Weighted partial matches: `PARTICLES` rows of one data node per query node (`NONE` where not
/// matched), each standing for `weight` partial matches.
#[derive(Clone)]
struct Particles {
    rows: Vec<u32>,
    width: usize,
    weight: f64,
    rng: Rng,
}

impl Particles {
    fn count(&self) -> usize {
        self.rows.len() / self.width.max(1)
    }

    fn total(&self) -> f64 {
        self.weight * self.count() as f64
    }

    fn row(&self, i: usize) -> &[u32] {
        &self.rows[i * self.width..(i + 1) * self.width]
    }
}

struct Sampler<'a> {
    g: &'a GraphView<'a>,
    sets: &'a Sets<'a>,
    arms: &'a [Vec<Arm>],
    injective: bool,
    /// Adjacency entries read so far, and the most it may read.
    work: usize,
    budget: usize,
    /// The random numbers' start, and how many particles a walk keeps.
    seed: u64,
    particles: usize,
}

impl<'a> Sampler<'a> {
    fn new(
        g: &'a GraphView<'a>,
        sets: &'a Sets<'a>,
        arms: &'a [Vec<Arm>],
        injective: bool,
        particles: usize,
    ) -> Self {
        Sampler {
            g,
            sets,
            arms,
            injective,
            work: 0,
            budget: WORK,
            seed: 0x9e37_79b9_7f4a_7c15,
            particles,
        }
    }

    /// The particles of `first` alone: all its candidates when they are few, else a uniform
    /// sample.
    fn start(&self, first: usize) -> Particles {
        let width = self.arms.len();
        let limit = self.g.node_count() as u32;
        let members: Vec<u32> = self
            .sets
            .members(first)
            .take_while(|&v| v < limit)
            .collect();
        let mut rng = Rng(self.seed);
        let picks: Vec<u32> = if members.len() <= self.particles {
            members.clone()
        } else {
            (0..self.particles)
                .map(|_| members[rng.below(members.len())])
                .collect()
        };
        let mut rows = vec![NONE; picks.len() * width];
        for (i, &v) in picks.iter().enumerate() {
            rows[i * width + first] = v;
        }
        let weight = if picks.is_empty() {
            0.0
        } else {
            members.len() as f64 / picks.len() as f64
        };
        Particles {
            rows,
            width,
            weight,
            rng,
        }
    }

    /// Calls `found` with each extension of `row` by query node `y`; returns `None` past the work
    /// bound.
    fn extensions(
        &mut self,
        row: &[u32],
        y: usize,
        matched: &[usize],
        found: impl FnMut(u32),
    ) -> Option<()> {
        let (pivot, list) = self.pivot_list(row, y)?;
        self.work += list.len();
        if self.work > self.budget {
            return None;
        }
        self.extend_row(row, y, matched, (pivot, list), found);
        Some(())
    }

    /// The arm `row` is extended by `y` along (its index among `y`'s arms) and its adjacency
    /// list: the shortest among the arms back to matched nodes (the others are tested); `None`
    /// when there is none.
    fn pivot_list(&self, row: &[u32], y: usize) -> Option<(usize, &'a [u32])> {
        let list = |a: &Arm| self.g.adj(a.dir).by_label(row[a.other], a.label).0;
        self.arms[y]
            .iter()
            .enumerate()
            .filter(|(_, a)| a.other != y && row[a.other] != NONE)
            .map(|(i, a)| (i, list(a)))
            .min_by_key(|(_, l)| l.len())
    }

    /// Calls `found` with each node of `pivot`'s list that extends `row` by `y` (the pivot arm's
    /// edge is there: the list is its adjacency).
    fn extend_row(
        &self,
        row: &[u32],
        y: usize,
        matched: &[usize],
        (pivot, list): (usize, &[u32]),
        mut found: impl FnMut(u32),
    ) {
        let back = |a: &Arm| a.other == y || row[a.other] != NONE;
        let arms = &self.arms[y];
        let g = self.g;
        let holds = |v: u32| {
            let others = arms
                .iter()
                .enumerate()
                .filter(|&(i, a)| i != pivot && back(a));
            others.map(|(_, a)| a).all(|a| {
                let w = if a.other == y { v } else { row[a.other] };
                match a.dir {
                    Dir::Out => g.has_edge(w, a.label, v),
                    Dir::In => g.has_edge(v, a.label, w),
                }
            })
        };
        for &v in list {
            if self.sets.has(y, v)
                && holds(v)
                && !(self.injective && matched.iter().any(|&m| row[m] == v))
            {
                found(v);
            }
        }
    }

    /// Every particle's extensions by `y`: how many each has, and (with `keep`) the first
    /// [`KEPT`] of them in the particles' order. Many particles are extended on every core, in
    /// tasks of [`TASK`] particles, with the same result as one after another; `None` past the
    /// work bound.
    fn level(&mut self, p: &Particles, y: usize, matched: &[usize], keep: bool) -> Option<Level> {
        let n = p.count();
        if n < 2 * TASK {
            return self.level_here(p, y, matched, keep);
        }
        // Each task stops at the budget left; past it the walk has failed whatever the others
        // read, as it would have one particle after another.
        let left = self.budget.saturating_sub(self.work);
        let this = &*self;
        let tasks: Vec<_> = (0..n.div_ceil(TASK))
            .into_par_iter()
            .map(|t| this.task(p, t * TASK..n.min((t + 1) * TASK), y, matched, keep, left))
            .collect();
        self.merge(tasks, n)
    }

    /// [`Sampler::level`] one particle after another, on the calling thread.
    fn level_here(
        &mut self,
        p: &Particles,
        y: usize,
        matched: &[usize],
        keep: bool,
    ) -> Option<Level> {
        let left = self.budget.saturating_sub(self.work);
        let all = self.task(p, 0..p.count(), y, matched, keep, left);
        self.merge(vec![all], p.count())
    }

    /// The particles `range` of a level and the adjacency entries they read; `None` when one
    /// has no arm back or they read more than `left`.
    fn task(
        &self,
        p: &Particles,
        range: std::ops::Range<usize>,
        y: usize,
        matched: &[usize],
        keep: bool,
        left: usize,
    ) -> Option<(Level, usize)> {
        let mut level = Level {
            counts: vec![0; range.len()],
            kept: Vec::new(),
        };
        let mut work = 0usize;
        for (i, c) in range.zip(level.counts.iter_mut()) {
            let row = p.row(i);
            let (pivot, list) = self.pivot_list(row, y)?;
            work += list.len();
            if work > left {
                return None;
            }
            self.extend_row(row, y, matched, (pivot, list), |v| {
                *c += 1;
                if keep && level.kept.len() < KEPT {
                    level.kept.push(v);
                }
            });
        }
        Some((level, work))
    }

    /// A level from its tasks in the particles' order, their reads charged to the work bound.
    fn merge(&mut self, tasks: Vec<Option<(Level, usize)>>, n: usize) -> Option<Level> {
        let mut level = Level {
            counts: Vec::with_capacity(n),
            kept: Vec::new(),
        };
        for task in tasks {
            let (part, work) = task?;
            self.work += work;
            if self.work > self.budget {
                return None;
            }
            level.counts.extend(part.counts);
            let room = KEPT - level.kept.len();
            level.kept.extend(part.kept.into_iter().take(room));
        }
        Some(level)
    }

    /// The estimated partial matches after extending `p` by `y`, without extending it.
    fn estimate(&mut self, p: &Particles, y: usize, matched: &[usize]) -> Option<f64> {
        let level = self.level(p, y, matched, false)?;
        let found: usize = level.counts.iter().map(|&c| c as usize).sum();
        Some(found as f64 * p.weight)
    }

    /// Extends `p` by `y`: every particle's extensions, resampled (systematically) back to at most
    /// `particles` rows of equal weight. The extensions are kept while they are at most
    /// [`KEPT`]; past that, a second pass over the particles takes the picked ones, so memory stays
    /// bounded however many there are (a hub's neighbours).
    fn advance(&mut self, p: &mut Particles, y: usize, matched: &[usize]) -> Option<()> {
        let Level { counts, kept } = self.level(p, y, matched, true)?;
        let grown: usize = counts.iter().map(|&c| c as usize).sum();
        let keep = grown.min(self.particles);
        let mut rows = Vec::with_capacity(keep * p.width);
        if keep > 0 {
            let step = grown as f64 / keep as f64;
            let offset = p.rng.below(1 << 20) as f64 / (1 << 20) as f64 * step;
            // The k-th pick is extension `offset + k * step` in the particles' order.
            let mut picks = (0..keep)
                .map(|k| ((offset + k as f64 * step) as usize).min(grown - 1))
                .peekable();
            let mut take = |i: usize, v: u32| {
                rows.extend_from_slice(p.row(i));
                let last = rows.len() - p.width;
                rows[last + y] = v;
            };
            let mut first = 0;
            if grown <= KEPT {
                for (i, &c) in counts.iter().enumerate() {
                    let end = first + c as usize;
                    while let Some(at) = picks.next_if(|&at| at < end) {
                        take(i, kept[at]);
                    }
                    first = end;
                }
            } else {
                // The budget counts the first pass; this one reads at most as much again.
                let (work, budget) = (self.work, std::mem::replace(&mut self.budget, usize::MAX));
                for (i, &c) in counts.iter().enumerate() {
                    let end = first + c as usize;
                    if picks.peek().is_some_and(|&at| at < end) {
                        let mut seen = first;
                        self.extensions(p.row(i), y, matched, |v| {
                            while picks.next_if(|&at| at == seen).is_some() {
                                take(i, v);
                            }
                            seen += 1;
                        })?;
                    }
                    first = end;
                }
                (self.work, self.budget) = (work, budget);
            }
        }
        p.weight = if keep > 0 {
            grown as f64 * p.weight / keep as f64
        } else {
            0.0
        };
        p.rows = rows;
        Some(())
    }

    /// Whether every neighbour of `y` is matched.
    fn closed(&self, y: usize, is_matched: &[bool]) -> bool {
        self.arms[y]
            .iter()
            .all(|a| is_matched[a.other] || a.other == y)
    }

    /// Grows `from` (the state before `order[at]`, as a walk left it) down the rest of `order`,
    /// keeping the state before each position when `keep`. `None` past the work bound.
    fn walk(&mut self, order: &[usize], at: usize, from: &State, keep: bool) -> Option<State> {
        let mut st = from.clone_light();
        for &y in &order[at..] {
            if keep {
                st.before.push(st.clone_light());
            }
            if st.matched.is_empty() {
                st.p = self.start(y);
                st.is_matched[y] = true;
                st.matched.push(y);
                st.cost = st.p.total();
                st.notes.push(Note::Start(st.cost));
                st.fanouts.push(None);
                continue;
            }
            if st.p.count() == 0 {
                st.notes.push(Note::Unreached);
                st.fanouts.push(None);
                st.died = true;
                continue;
            }
            let total = st.p.total();
            if self.closed(y, &st.is_matched) {
                let rows = self.estimate(&st.p, y, &st.matched)?;
                if rows >= total {
                    st.notes.push(Note::Counted(rows / total));
                    st.fanouts.push(Some(rows / total));
                    continue;
                }
            }
            self.advance(&mut st.p, y, &st.matched)?;
            st.is_matched[y] = true;
            st.matched.push(y);
            st.cost += st.p.total();
            st.notes.push(Note::Rows(st.p.total()));
            st.fanouts.push(Some(st.p.total() / total));
        }
        Some(st)
    }

    /// Hill climbing from `order` (whose walk is `walk`): moves one node to another place while
    /// the estimate falls by [`STEP`], latest places first (the last levels hold most rows, and
    /// their estimates reuse the longest prefixes). Stops at a local optimum or the work budget;
    /// returns the best order found and its estimate.
    fn climb(&mut self, mut order: Vec<usize>, mut walk: State) -> (Vec<usize>, f64) {
        let n = order.len();
        'climb: loop {
            for i in (1..n).rev() {
                for j in (1..n).rev().filter(|&j| j != i) {
                    let mut moved = order.clone();
                    let y = moved.remove(i);
                    moved.insert(j, y);
                    if !connected(self.arms, &moved) {
                        continue;
                    }
                    let at = i.min(j);
                    let Some(w) = self.walk(&moved, at, &walk.before[at], false) else {
                        return (order, walk.cost);
                    };
                    if !w.died && w.cost < walk.cost * STEP {
                        // Walked again from the start, the same samples, to keep its prefixes.
                        let Some(w) = self.walk(&moved, 0, &State::new(n), true) else {
                            return (moved, w.cost);
                        };
                        order = moved;
                        walk = w;
                        continue 'climb;
                    }
                }
            }
            return (order, walk.cost);
        }
    }
}

/// What a walk found at one position of an order.
#[derive(Clone, Copy)]
enum Note {
    Start(f64),
    Rows(f64),
    Counted(f64),
    Unreached,
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Note::Start(c) => write!(
                f,
                "join start, {c:.0} candidates (the order after it improved on estimates from samples of the data)"
            ),
            Note::Rows(r) => write!(f, "about {r:.0} partial matches after it (sampled)"),
            Note::Counted(x) => write!(
                f,
                "neighbours all matched, about {x:.1} extensions per partial match (sampled): counted"
            ),
            Note::Unreached => write!(f, "no sampled partial match reaches it"),
        }
    }
}

/// One level of a walk: per particle its number of extensions, and the first of them.
#[derive(Debug, PartialEq)]
struct Level {
    counts: Vec<u32>,
    kept: Vec<u32>,
}

/// Particles partway down an order, with what the walk so far found.
struct State {
    p: Particles,
    is_matched: Vec<bool>,
    matched: Vec<usize>,
    /// Estimated partial matches enumerated so far.
    cost: f64,
    /// Whether no particle reached some position.
    died: bool,
    notes: Vec<Note>,
    /// Per position walked, the estimated extensions per partial match reaching it.
    fanouts: Vec<Option<f64>>,
    /// Per position walked, the state before it (without its own `before`).
    before: Vec<State>,
}

impl State {
    /// Before the first position of an order over `n` query nodes.
    fn new(n: usize) -> State {
        State {
            p: Particles {
                rows: Vec::new(),
                width: n,
                weight: 0.0,
                rng: Rng(0),
            },
            is_matched: vec![false; n],
            matched: Vec::new(),
            cost: 0.0,
            died: false,
            notes: Vec::new(),
            fanouts: Vec::new(),
            before: Vec::new(),
        }
    }

    /// A copy without `before`.
    fn clone_light(&self) -> State {
        State {
            p: self.p.clone(),
            is_matched: self.is_matched.clone(),
            matched: self.matched.clone(),
            cost: self.cost,
            died: self.died,
            notes: self.notes.clone(),
            fanouts: self.fanouts.clone(),
            before: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;
    use gpsense_graph::GraphBuilder;

    /// A directed ring of 200 nodes, each with edges to the next two.
    /// With the path `?a r ?b . ?b r ?c . ?c r ?d` on it.
    fn ring() -> (gpsense_graph::KnowledgeGraph, QueryGraph) {
        let mut b = GraphBuilder::new();
        let name = |i: usize| format!("n{}", i % 200);
        for i in 0..200 {
            b.add_triple(&name(i), "r", &name(i + 1), 1.0).unwrap();
            b.add_triple(&name(i), "r", &name(i + 2), 1.0).unwrap();
        }
        let g = b.build().unwrap().0;
        let text = "SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d }";
        let q = gpsense_planner::compile(text, &g).unwrap();
        (g, q)
    }

    #[test]
    fn a_walk_down_a_regular_graph_estimates_the_enumerated_partial_matches_exactly() {
        let (g, q) = ring();
        let engine = Engine::new(&g);
        let view = engine.view();
        let stride = gpsense_kernels::bits::words_for(g.node_count());
        let words = vec![u32::MAX; 4 * stride];
        let sets = Sets {
            words: &words,
            stride,
        };
        let arms = arms_of(&q, false).unwrap();
        let mut sampler = Sampler::new(&view, &sets, &arms, true, PARTICLES);
        let walk = sampler
            .walk(&[0, 1, 2, 3], 0, &State::new(4), true)
            .unwrap();
        // 200 starts, 400 and 800 partial matches; `?d` counted.
        assert_eq!(walk.cost, 1400.0);
        assert!(!walk.died);
        assert!(matches!(walk.notes[3], Note::Counted(x) if x == 2.0));
        // The prefix states let a walk resume: from `?c` on, the same estimate.
        let resumed = sampler.walk(&[0, 1, 2, 3], 2, &walk.before[2], false);
        assert_eq!(resumed.map(|w| w.cost), Some(1400.0));
        // Past the work bound there is no estimate.
        sampler.budget = sampler.work + 10;
        assert!(sampler
            .walk(&[0, 1, 2, 3], 0, &State::new(4), false)
            .is_none());
    }

    /// A walk for a node early in the order stops there: a hub past it, whose list every particle
    /// would read (past the work bound), no longer costs the node its estimate.
    #[test]
    fn the_fanout_walk_ends_at_the_last_node_wanted() {
        let mut b = GraphBuilder::new();
        let (feeds, leaves) = (1_100, 20_000);
        for i in 0..feeds {
            b.add_triple(&format!("a{i}"), "s", "hub", 1.0).unwrap();
        }
        for i in 0..leaves {
            b.add_triple("hub", "r", &format!("c{i}"), 1.0).unwrap();
        }
        let g = b.build().unwrap().0;
        let q = gpsense_planner::compile("SELECT * WHERE { ?a s ?b . ?b r ?c }", &g).unwrap();
        let engine = Engine::new(&g);
        let view = engine.view();
        let stride = gpsense_kernels::bits::words_for(g.node_count());
        let mut words = vec![0u32; 3 * stride];
        for v in 0..g.node_count() as u32 {
            let name = g.node_name(v);
            let u = match name.as_bytes()[0] {
                b'a' => 0,
                b'h' => 1,
                _ => 2,
            };
            words[u * stride + v as usize / 32] |= 1 << (v % 32);
        }
        let sets = Sets {
            words: &words,
            stride,
        };
        let order = [0, 1, 2];
        // 1,024 particles at the hub, each reading its 20,000 entries: past `WORK`.
        assert!(FANOUT_PARTICLES * leaves > WORK);
        let f = fanouts(&q, &order, &[false, true, false], &view, &sets, true);
        assert_eq!(f, [None, Some(1.0), None]);
        let f = fanouts(&q, &order, &[false, true, true], &view, &sets, true);
        assert_eq!(f, [None; 3]);
    }

    /// A level of many particles is extended on every core with the same counts, kept
    /// extensions and adjacency entries read as one particle after another, and fails at the same
    /// work bounds.
    #[test]
    fn a_level_on_every_core_is_the_level_one_particle_after_another() {
        let (g, q) = ring();
        let engine = Engine::new(&g);
        let view = engine.view();
        let stride = gpsense_kernels::bits::words_for(g.node_count());
        // `?b` allowed on every third node only, so the counts differ from particle to particle.
        let mut words = vec![u32::MAX; 4 * stride];
        for v in 0..g.node_count() as u32 {
            if v % 3 != 0 {
                words[stride + v as usize / 32] &= !(1 << (v % 32));
            }
        }
        let sets = Sets {
            words: &words,
            stride,
        };
        let arms = arms_of(&q, false).unwrap();
        let sampler = || Sampler::new(&view, &sets, &arms, true, FANOUT_PARTICLES);
        // All 200 nodes start: past two tasks' worth of particles.
        let p = sampler().start(0);
        assert!(p.count() >= 2 * TASK, "{}", p.count());
        let (mut here, mut cores) = (sampler(), sampler());
        let want = here.level_here(&p, 1, &[0], true).unwrap();
        assert_eq!(cores.level(&p, 1, &[0], true), Some(want));
        assert_eq!((here.work, cores.work), (400, 400));
        for budget in [0, 1, 150, 399, 400, 401] {
            let (mut here, mut cores) = (sampler(), sampler());
            here.budget = budget;
            cores.budget = budget;
            assert_eq!(
                here.level_here(&p, 1, &[0], false).is_some(),
                cores.level(&p, 1, &[0], false).is_some(),
                "budget {budget}"
            );
        }
    }

    /// On the ring every partial match of a path has exactly two extensions: each position's
    /// estimate is exact, under both semantics, and only candidates are walked.
    #[test]
    fn every_position_of_a_regular_graph_has_its_exact_fanout() {
        let (g, q) = ring();
        let engine = Engine::new(&g);
        let view = engine.view();
        let stride = gpsense_kernels::bits::words_for(g.node_count());
        let mut words = vec![u32::MAX; 4 * stride];
        let wanted = [false, true, true, true];
        let estimate = |words: &[u32], injective| {
            let sets = Sets { words, stride };
            fanouts(&q, &[0, 1, 2, 3], &wanted, &view, &sets, injective)
        };
        for injective in [true, false] {
            let f = estimate(&words, injective);
            assert_eq!(f, [None, Some(2.0), Some(2.0), Some(2.0)], "{injective}");
        }
        // With `?c` allowed nowhere, nothing reaches `?d`.
        words[2 * stride..3 * stride].fill(0);
        assert_eq!(estimate(&words, true), [None, Some(2.0), Some(0.0), None]);
        // Not wanted, not estimated.
        let sets = Sets {
            words: &words,
            stride,
        };
        let f = fanouts(&q, &[0, 1, 2, 3], &[false; 4], &view, &sets, true);
        assert_eq!(f, [None; 4]);
        // The walk stops at the last node wanted, with the estimates a whole walk gives there.
        let f = fanouts(
            &q,
            &[0, 1, 2, 3],
            &[false, true, false, false],
            &view,
            &sets,
            true,
        );
        assert_eq!(f, [None, Some(2.0), None, None]);
    }

    /// A hub with more neighbours than a walk keeps in memory: the second pass still picks
    /// `particles` distinct extensions, spread over them, and the estimate stays exact.
    #[test]
    fn a_hub_past_the_kept_extensions_is_resampled_in_a_second_pass() {
        let mut b = GraphBuilder::new();
        let spokes = KEPT + 4_464;
        for i in 0..spokes {
            b.add_triple("hub", "r", &format!("n{i}"), 1.0).unwrap();
        }
        let g = b.build().unwrap().0;
        let q = gpsense_planner::compile("SELECT * WHERE { hub r ?b }", &g).unwrap();
        let engine = Engine::new(&g);
        let view = engine.view();
        let stride = gpsense_kernels::bits::words_for(g.node_count());
        let hub = q.nodes.iter().position(|u| u.is_concept()).unwrap();
        let mut words = vec![u32::MAX; 2 * stride];
        let other = 1 - hub;
        // The hub is no candidate of `?b`.
        let h = g.node_id("hub").unwrap() as usize;
        words[other * stride + h / 32] &= !(1 << (h % 32));
        words[hub * stride..(hub + 1) * stride].fill(0);
        words[hub * stride + h / 32] |= 1 << (h % 32);
        let sets = Sets {
            words: &words,
            stride,
        };
        let arms = arms_of(&q, false).unwrap();
        let mut sampler = Sampler::new(&view, &sets, &arms, true, PARTICLES);
        let mut p = sampler.start(hub);
        assert_eq!(p.total(), 1.0);
        sampler.advance(&mut p, other, &[hub]).unwrap();
        assert_eq!((p.count(), p.total()), (PARTICLES, spokes as f64));
        let mut picked: Vec<u32> = (0..p.count()).map(|i| p.row(i)[other]).collect();
        assert!(picked
            .iter()
            .all(|&v| view.has_edge(h as u32, arms[other][0].label, v)));
        picked.sort_unstable();
        picked.dedup();
        assert_eq!(picked.len(), PARTICLES);
        // The picks spread over the list: at most one per step's worth of neighbours.
        let step = spokes / PARTICLES;
        let list = view
            .adj(Dir::Out)
            .by_label(h as u32, arms[other][0].label)
            .0;
        let places: Vec<usize> = picked
            .iter()
            .map(|v| list.iter().position(|w| w == v).unwrap())
            .collect();
        let mut places = places;
        places.sort_unstable();
        assert!(
            places.windows(2).all(|w| w[1] - w[0] >= step - 1),
            "{places:?}"
        );
    }

    #[test]
    fn a_moved_node_needs_a_neighbour_before_it() {
        let mut b = GraphBuilder::new();
        b.add_triple("x", "r", "y", 1.0).unwrap();
        let g = b.build().unwrap().0;
        let q =
            gpsense_planner::compile("SELECT * WHERE { ?a r ?b . ?b r ?c . ?c r ?d }", &g).unwrap();
        let arms = arms_of(&q, false).unwrap();
        assert!(connected(&arms, &[1, 2, 0, 3]));
        assert!(!connected(&arms, &[0, 2, 1, 3]));
        assert!(!connected(&arms, &[0, 1, 3, 2]));
    }
}

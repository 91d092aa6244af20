//! GpSense's filtering phase across parts: per query node a candidate bitset over each part's own
//! nodes, then neighbour filtering and one refinement round before the join.
//!
//! A part starts each query node's set from the node filter (the single-machine engine's
//! `FilterSpec`, a concept's own nodes); a node an earlier one reaches starts from that one's
//! marks instead, so that filtering an anchored query costs what its neighbourhood holds, not what
//! the part holds. A step "filter `a` by `b`" marks every neighbour (over the
//! query edge, seen from `b`) of each candidate of `b`: the marks go to each neighbour's owner, which
//! keeps only the marked candidates of `a`. Steps run along the plan order (each node by its earlier
//! neighbours), then once in reverse (each node by its later neighbours), as the paper's one
//! refinement round. Every step keeps only nodes some match could use, so no answer is lost; the
//! join then tests a candidate's bit where it tests the node filter, at the candidate's owner.

use std::cell::RefCell;
use std::rc::Rc;

use gpsense_kernels::{Dir, NONE};
use gpsense_planner::EdgeLabel;
use timely::dataflow::operators::Exchange;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::{InputHandleVec, ProbeHandle};
use timely::worker::Worker;

use crate::dataflow::{adj, passes, step, Topology};
use crate::partition::local;
use crate::plan::DistPlan;
use crate::{DistError, Partition};

/// Candidate bitsets of one part, per slot (plan position), over the part's local nodes.
#[derive(Clone, Debug)]
pub struct Candidates {
    bits: Vec<Vec<u64>>,
}

impl Candidates {
    /// Whether local node `l` is a candidate of slot `j`.
    #[inline]
    pub fn has(&self, j: usize, l: u32) -> bool {
        let l = l as usize;
        self.bits[j]
            .get(l / 64)
            .is_some_and(|w| w >> (l % 64) & 1 == 1)
    }

    /// The local candidates of slot `j`, ascending.
    pub fn iter(&self, j: usize) -> impl Iterator<Item = u32> + '_ {
        self.bits[j]
            .iter()
            .enumerate()
            .flat_map(|(i, &w)| ones(w).map(move |b| (i * 64) as u32 + b))
    }

    /// Candidates of slot `j` on this part.
    pub fn count(&self, j: usize) -> u64 {
        self.bits[j].iter().map(|w| u64::from(w.count_ones())).sum()
    }
}

/// One filtering step: slot `target`'s candidates must be reached from a candidate of `source`
/// over `dir` (seen from the source) and `label` (`NONE`: any relation).
#[derive(Clone, Copy, Debug)]
struct FilterStep {
    target: usize,
    source: usize,
    dir: Dir,
    label: u32,
}

/// The steps: along the plan order, each node by its earlier neighbours; then, in reverse, each node
/// by its later neighbours (one refinement round).
fn steps(plan: &DistPlan) -> Vec<FilterStep> {
    let label = |l: EdgeLabel| match l {
        EdgeLabel::Fixed(r) => u32::from(r),
        EdgeLabel::Variable(_) => NONE,
    };
    let mut forward = Vec::new();
    for (j, level) in plan.levels.iter().enumerate() {
        for check in &level.checks {
            let Some(s) = check.other else { continue };
            // The check looks from `j` along `check.dir` to `s`; from `s` the edge runs the other way.
            forward.push(FilterStep {
                target: j,
                source: s,
                dir: check.dir.reverse(),
                label: label(check.label),
            });
        }
    }
    let mut reverse: Vec<FilterStep> = forward
        .iter()
        .map(|f| FilterStep {
            target: f.source,
            source: f.target,
            dir: f.dir.reverse(),
            label: f.label,
        })
        .collect();
    reverse.sort_by_key(|f| std::cmp::Reverse(f.target));
    forward.extend(reverse);
    forward
}

/// Runs the filtering phase on this worker (every worker of a part computes the same sets).
pub fn filter(
    worker: &mut Worker,
    part: &Partition,
    topo: Topology,
    plan: &DistPlan,
    stopped: &dyn Fn() -> bool,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Candidates, DistError> {
    let steps = steps(plan);
    // `pending[j]`: slot j's set is started by the first step into it.
    let (mut c, mut pending) = initial_sets(part, plan, &steps);
    for s in steps {
        if stopped() {
            break;
        }
        let marks = mark_round(worker, part, topo, &c, s, failed)?;
        let filter = &plan.levels[s.target].filter;
        let set = &mut c.bits[s.target];
        if std::mem::take(&mut pending[s.target]) {
            // The first step into a node starts its set: the marked nodes that pass its filter.
            for (i, (w, m)) in set.iter_mut().zip(marks).enumerate() {
                *w = ones(m)
                    .filter(|&b| passes(filter, part, part.global((i * 64) as u32 + b)))
                    .fold(0, |w, b| w | 1 << b);
            }
        } else {
            for (w, m) in set.iter_mut().zip(marks) {
                *w &= m;
            }
        }
    }
    Ok(c)
}

/// Each slot's starting set: a concept's nodes on this part that pass the node filter; every node of
/// the part that passes it, for a slot no earlier neighbour reaches (the first of a component); none
/// yet, for the others (flagged in the second vector), whose first step starts them from its marks
/// (so an anchored query never looks at every node of the part).
fn initial_sets(
    part: &Partition,
    plan: &DistPlan,
    steps: &[FilterStep],
) -> (Candidates, Vec<bool>) {
    let n = part.local_count();
    let words = n.div_ceil(64);
    let reached = |j: usize| steps.iter().any(|s| s.target == j && s.source < j);
    let mut bits = Vec::with_capacity(plan.levels.len());
    let mut pending = Vec::with_capacity(plan.levels.len());
    for (j, level) in plan.levels.iter().enumerate() {
        let mut set = vec![0u64; words];
        let mut mark = |c: u32| {
            if part.owns(c) && passes(&level.filter, part, c) {
                let l = local(c, part.parts) as usize;
                set[l / 64] |= 1 << (l % 64);
            }
        };
        let lazy = level.domain.is_empty() && reached(j);
        if !level.domain.is_empty() {
            level.domain.iter().for_each(|&c| mark(c));
        } else if !lazy {
            (0..n as u32).for_each(|l| mark(part.global(l)));
        }
        bits.push(set);
        pending.push(lazy);
    }
    (Candidates { bits }, pending)
}

/// The set bits of a word, ascending.
fn ones(mut w: u64) -> impl Iterator<Item = u32> {
    std::iter::from_fn(move || {
        (w != 0).then(|| {
            let b = w.trailing_zeros();
            w &= w - 1;
            b
        })
    })
}

/// One step's marks on this part: the local nodes reached from the source's candidates anywhere.
fn mark_round(
    worker: &mut Worker,
    part: &Partition,
    topo: Topology,
    c: &Candidates,
    s: FilterStep,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Vec<u64>, DistError> {
    let words = part.local_count().div_ceil(64);
    let marks = Rc::new(RefCell::new(vec![0u64; words]));
    let mut input: InputHandleVec<u64, (u32, u32)> = InputHandleVec::new();
    let probe = ProbeHandle::new();
    let parts = part.parts;
    let sink = Rc::clone(&marks);
    worker.dataflow::<u64, _, _>(|scope| {
        // `(k, v)`: node `v` reached, for the `k`-th worker of its part (each keeps the part's sets).
        let route = move |&(k, v): &(u32, u32)| {
            u64::from(crate::partition::owner(v, parts)) * topo.per_part as u64 + u64::from(k)
        };
        scope
            .input_from(&mut input)
            .exchange(route)
            .inspect(move |&(_, v)| {
                let l = local(v, parts) as usize;
                if let Some(w) = sink.borrow_mut().get_mut(l / 64) {
                    *w |= 1 << (l % 64);
                }
            })
            .probe_with(&probe);
    });
    let sub = worker.index() % topo.per_part;
    let a = adj(part, s.dir);
    let mut sent = 0usize;
    // This worker's share of the source's candidates; every worker of the target part gets a copy.
    for l in c
        .iter(s.source)
        .filter(|l| *l as usize % topo.per_part == sub)
    {
        for &v in a.by_label(l, s.label).0 {
            for k in 0..topo.per_part as u32 {
                input.send((k, v));
            }
            sent += 1;
            if sent.is_multiple_of(1 << 16) {
                step(worker, failed)?;
            }
        }
    }
    drop(input);
    while !probe.done() {
        step(worker, failed)?;
    }
    let out = std::mem::take(&mut *marks.borrow_mut());
    Ok(out)
}

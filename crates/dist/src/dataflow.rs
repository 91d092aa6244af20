//! The join as a timely dataflow, BiGJoin's way.
//!
//! Per level `j` two operators: *propose* runs at the owner of the bound neighbour a partial match
//! chose (the fewest candidates, by the count the match carries) and lists that neighbour's
//! neighbours; *intersect* runs at each candidate's owner, which holds the candidate's out- and
//! in-lists and so checks, in one place, the node filter (the single-machine engine's
//! [`FilterSpec`]), every query edge back to the match (binding edge variables), injectivity, and
//! writes the counts later levels choose by. A concept level proposes its own nodes. A level with no
//! bound neighbour (a new component) asks every part to scan its nodes.
//!
//! Records are `(tag, row)`: a row is the partial match (node slots, edge-variable slots, counts).
//! Full matches are projected, deduplicated at a worker chosen by hash under DISTINCT, named at the
//! owners of their nodes, and sent to worker 0, which applies OFFSET and LIMIT, hands rows to the
//! caller, and broadcasts a stop when the caller has enough. Memory: seeds enter in epochs, a few in
//! flight, and each operator works its queue only while the next stage's queue on its worker is
//! below a bound, so deeper levels drain first.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpsense_kernels::{Dir, NONE};
use gpsense_planner::EdgeLabel;
use gpsense_runtime::layout::FilterSpec;
use gpsense_runtime::Semantics;
use hashbrown::HashSet;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::vec::Broadcast;
use timely::dataflow::operators::Capability;
use timely::dataflow::operators::{Input, Inspect, Probe};
use timely::dataflow::{InputHandleVec, ProbeHandle, StreamVec};
use timely::worker::Worker;

use crate::filter::Candidates;
use crate::partition::{local, owner};
use crate::plan::{bound_label, DistPlan, Level};
use crate::{DistError, Partition};

/// A tag and a row.
pub type Rec = (u32, Vec<u32>);

/// Propose tags beyond proposer indexes.
const DOMAIN: u32 = u32::MAX;
const SCAN: u32 = 0x8000_0000;
/// Count records sent to worker 0 (row = low, high word).
const COUNT: u32 = u32::MAX - 1;

/// Records an operator works through per activation before it yields to the others.
const CHUNK: usize = 1024;

/// Where rows go on worker 0.
pub trait RowSink {
    /// One row of names (edge-variable columns hold relation names); false stops the query.
    fn row(&mut self, names: &[&str]) -> bool;
}

/// How workers map to parts: worker `w` serves part `w / per_part`.
#[derive(Clone, Copy, Debug)]
pub struct Topology {
    pub parts: u32,
    pub per_part: usize,
}

impl Topology {
    fn worker_of(&self, v: u32, spread: u32) -> u64 {
        let p = owner(v, self.parts) as u64;
        p * self.per_part as u64 + (spread as usize % self.per_part) as u64
    }

    fn owner_worker(&self, v: u32) -> u64 {
        self.worker_of(v, local(v, self.parts))
    }
}

/// What to do with full matches.
#[derive(Clone, Debug)]
pub struct Finish {
    /// Count instead of producing rows.
    pub count_only: bool,
    pub distinct: bool,
    pub offset: u64,
    pub limit: Option<u64>,
    /// Bytes the DISTINCT set of one worker may hold.
    pub distinct_budget: u64,
}

/// One worker's settings for a match.
#[derive(Clone, Debug)]
pub struct Settings {
    pub finish: Finish,
    pub deadline: Option<Instant>,
    /// Seeds a worker feeds per epoch, and epochs in flight.
    pub batch: usize,
    pub in_flight: u64,
    /// Records a stage may have queued on one worker before the stage before it waits.
    pub high_water: usize,
}

/// What worker 0 learned (other workers return their own part of it).
#[derive(Clone, Debug, Default)]
pub struct Answer {
    /// Rows handed to the sink, or matches counted (`u128`, as the single-machine engine counts).
    pub rows: u128,
    pub limit_reached: bool,
    pub timed_out: bool,
    /// Partial matches this worker produced (all levels), for the report.
    pub partial_matches: u64,
    /// The most partial matches waiting in one of this worker's stage queues at any time: what the
    /// memory budget (through `Settings::high_water`) bounds.
    pub peak_queued: u64,
    /// A worker's error (DISTINCT over its budget).
    pub error: Option<String>,
}

/// Per-worker state the operators share.
struct Local {
    stop: Cell<bool>,
    timed_out: Cell<bool>,
    deadline: Option<Instant>,
    pending: Vec<Cell<usize>>,
    peak_queued: Cell<usize>,
    produced: Cell<u64>,
    error: RefCell<Option<String>>,
}

impl Local {
    fn stopped(&self) -> bool {
        if self.stop.get() {
            return true;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.timed_out.set(true);
            self.stop.set(true);
        }
        self.stop.get()
    }
}

/// Worker 0's sink state.
struct SinkState {
    sink: Option<Box<dyn RowSink>>,
    skipped: u64,
    rows: u64,
    counted: u128,
    limit_reached: bool,
}

/// What one worker's operators read: its part, the cut, the plan and its candidate sets.
pub struct Shared {
    pub part: Arc<Partition>,
    pub topo: Topology,
    pub plan: Arc<DistPlan>,
    pub cands: Rc<Candidates>,
}

/// Runs one match on this worker: builds the dataflow, feeds this worker's seeds in epochs and steps
/// until every worker is done or stopped. `failed` reports a broken peer (checked between steps).
pub fn run(
    worker: &mut Worker,
    shared: &Shared,
    settings: &Settings,
    sink: Option<Box<dyn RowSink>>,
    failed: &dyn Fn() -> Option<String>,
) -> Result<Answer, DistError> {
    let Shared {
        part,
        topo,
        plan,
        cands,
    } = shared;
    let topo = *topo;
    let levels = plan.levels.len();
    let local_state = Rc::new(Local {
        stop: Cell::new(false),
        timed_out: Cell::new(false),
        deadline: settings.deadline,
        pending: (0..2 * levels + 2).map(|_| Cell::new(0)).collect(),
        peak_queued: Cell::new(0),
        produced: Cell::new(0),
        error: RefCell::new(None),
    });
    let sink_state = Rc::new(RefCell::new(SinkState {
        sink,
        skipped: 0,
        rows: 0,
        counted: 0,
        limit_reached: false,
    }));
    let mut input: InputHandleVec<u64, Rec> = InputHandleVec::new();
    let probe = ProbeHandle::new();
    let me = worker.index() as u64;
    worker.dataflow::<u64, _, _>(|scope| {
        let seeds = scope.input_from(&mut input);
        let mut stream = intersect_stage(seeds, 0, shared, &local_state, settings);
        for j in 1..levels {
            let proposals = propose_stage(stream, j, shared, &local_state, me, settings.high_water);
            stream = intersect_stage(proposals, j, shared, &local_state, settings);
        }
        let done = finish_stage(
            stream,
            part,
            topo,
            plan,
            &local_state,
            settings,
            &sink_state,
        );
        let watcher = Rc::clone(&local_state);
        done.broadcast()
            .inspect(move |_| watcher.stop.set(true))
            .probe_with(&probe);
    });
    feed_seeds(
        worker,
        part,
        topo,
        plan,
        cands,
        settings,
        &local_state,
        &mut input,
        &probe,
        failed,
    )?;
    drop(input);
    while !probe.done() {
        step(worker, failed)?;
        local_state.stopped();
    }
    let sink = sink_state.borrow();
    let error = local_state.error.borrow().clone();
    Ok(Answer {
        rows: if settings.finish.count_only {
            // The limit applies after the offset: count up to `offset + limit`, then take off.
            let f = &settings.finish;
            let cap = f.limit.map(|l| u128::from(l.saturating_add(f.offset)));
            cap.map_or(sink.counted, |c| sink.counted.min(c))
                .saturating_sub(u128::from(f.offset))
        } else {
            u128::from(sink.rows)
        },
        limit_reached: sink.limit_reached,
        timed_out: local_state.timed_out.get(),
        partial_matches: local_state.produced.get(),
        peak_queued: local_state.peak_queued.get() as u64,
        error,
    })
}

/// One scheduling step, parking briefly, and a look at the peers.
pub fn step(worker: &mut Worker, failed: &dyn Fn() -> Option<String>) -> Result<(), DistError> {
    worker.step_or_park(Some(Duration::from_millis(20)));
    match failed() {
        Some(why) => Err(DistError::Peer(why)),
        None => Ok(()),
    }
}

/// This worker's seeds: the first level's nodes it owns (a concept's nodes, or its share of its
/// part's nodes), fed `batch` per epoch with at most `in_flight` epochs unfinished.
#[allow(clippy::too_many_arguments)]
fn feed_seeds(
    worker: &mut Worker,
    part: &Partition,
    topo: Topology,
    plan: &DistPlan,
    cands: &Candidates,
    settings: &Settings,
    local_state: &Local,
    input: &mut InputHandleVec<u64, Rec>,
    probe: &ProbeHandle<u64>,
    failed: &dyn Fn() -> Option<String>,
) -> Result<(), DistError> {
    let sub = worker.index() % topo.per_part;
    let empty = vec![NONE; plan.row_width()];
    let seeds = cands
        .iter(0)
        .filter(move |l| *l as usize % topo.per_part == sub)
        .map(|l| part.global(l));
    let mut epoch = 0u64;
    let mut fed = 0usize;
    for v in seeds {
        if local_state.stopped() {
            break;
        }
        input.send((v, empty.clone()));
        fed += 1;
        if fed == settings.batch {
            fed = 0;
            epoch += 1;
            input.advance_to(epoch);
            while epoch >= settings.in_flight
                && probe.less_than(&(epoch - settings.in_flight + 1))
                && !local_state.stopped()
            {
                step(worker, failed)?;
            }
        }
    }
    Ok(())
}

/// Queues records by time and works through them a chunk at a time while the next stage's queue on
/// this worker is below the bound.
struct Queue {
    stash: VecDeque<(Capability<u64>, Vec<Rec>)>,
}

#[allow(clippy::too_many_arguments)]
fn stage<'s, R, W>(
    stream: StreamVec<'s, u64, Rec>,
    name: &str,
    route: R,
    me: usize,
    next: Option<usize>,
    local_state: &Rc<Local>,
    high_water: usize,
    mut work: W,
) -> StreamVec<'s, u64, Rec>
where
    R: FnMut(&Rec) -> u64 + 'static,
    W: FnMut(Rec, &mut dyn FnMut(Rec)) + 'static,
{
    let scope = stream.scope();
    let local_state = Rc::clone(local_state);
    stream.unary(Exchange::new(route), name, move |_, info| {
        let activator = scope.activator_for(info.address);
        let mut queue = Queue {
            stash: VecDeque::new(),
        };
        move |input, output| {
            input.for_each_stamp(|cap, data| {
                let mut recs = Vec::new();
                for c in data {
                    recs.append(c);
                }
                if let Some(cap) = cap.retain_least(output.output_index()) {
                    let pending = &local_state.pending[me];
                    pending.set(pending.get() + recs.len());
                    let peak = &local_state.peak_queued;
                    peak.set(peak.get().max(pending.get()));
                    queue.stash.push_back((cap, recs));
                }
            });
            if local_state.stopped() {
                let dropped: usize = queue.stash.iter().map(|(_, r)| r.len()).sum();
                local_state.pending[me].set(local_state.pending[me].get() - dropped);
                queue.stash.clear();
                return;
            }
            // The next stage counts what reached it; what this activation sends is not there
            // yet, so an activation also stops once it has sent a high-water mark's worth.
            let mut emitted = 0usize;
            let gated = |emitted: usize| {
                emitted >= high_water
                    || next.is_some_and(|s| local_state.pending[s].get() >= high_water)
            };
            let mut budget = CHUNK;
            while budget > 0 && !gated(emitted) {
                let Some((cap, recs)) = queue.stash.front_mut() else {
                    break;
                };
                let mut session = output.session(cap);
                let mut produced = 0u64;
                while budget > 0 && (produced as usize) + emitted < high_water {
                    let Some(rec) = recs.pop() else { break };
                    work(rec, &mut |r| {
                        produced += 1;
                        session.give(r);
                    });
                    budget -= 1;
                    local_state.pending[me].set(local_state.pending[me].get() - 1);
                }
                local_state
                    .produced
                    .set(local_state.produced.get() + produced);
                emitted += produced as usize;
                drop(session);
                if recs.is_empty() {
                    queue.stash.pop_front();
                }
            }
            if !queue.stash.is_empty() {
                activator.activate();
            }
        }
    })
}

/// Level `j`'s proposals: at the chosen proposer's owner, its neighbours; or the concept's nodes;
/// or, for a new component, this part's nodes.
fn propose_stage<'s>(
    stream: StreamVec<'s, u64, Rec>,
    j: usize,
    shared: &Shared,
    local_state: &Rc<Local>,
    me: u64,
    high_water: usize,
) -> StreamVec<'s, u64, Rec> {
    let topo = shared.topo;
    let cands = Rc::clone(&shared.cands);
    let (route_plan, work_plan) = (Arc::clone(&shared.plan), Arc::clone(&shared.plan));
    let part = Arc::clone(&shared.part);
    let route = move |(tag, row): &Rec| match *tag {
        DOMAIN => me,
        t if t & SCAN != 0 => {
            let p = (t & !SCAN) as u64;
            p * topo.per_part as u64 + (row_spread(row) % topo.per_part) as u64
        }
        k => topo.owner_worker(row[route_plan.levels[j].proposers[k as usize].slot]),
    };
    let mut scratch = Vec::new();
    let work = move |(tag, row): Rec, emit: &mut dyn FnMut(Rec)| {
        let level = &work_plan.levels[j];
        let injective = work_plan.semantics == Semantics::Iso;
        let mut give = |c: u32| {
            if !(injective && row[..j].contains(&c)) {
                emit((c, row.clone()));
            }
        };
        match tag {
            DOMAIN => level.domain.iter().for_each(|&c| give(c)),
            t if t & SCAN != 0 => {
                for l in cands.iter(j) {
                    give(part.global(l));
                }
            }
            k => {
                let p = level.proposers[k as usize];
                let b = row[p.slot];
                let label = bound_label(p.label, p.edge_var, &row, &work_plan);
                let (targets, _) = adj(&part, p.dir).by_label(local(b, part.parts), label);
                if label == NONE {
                    // Every relation: a neighbour may appear under several.
                    scratch.clear();
                    scratch.extend_from_slice(targets);
                    scratch.sort_unstable();
                    scratch.dedup();
                    scratch.iter().for_each(|&c| give(c));
                } else {
                    targets.iter().for_each(|&c| give(c));
                }
            }
        }
    };
    stage(
        stream,
        "propose",
        route,
        2 * j,
        Some(2 * j + 1),
        local_state,
        high_water,
        work,
    )
}

/// Level `j`'s intersection at the candidate's owner; its output is level `j + 1`'s proposals (or
/// full matches after the last level).
fn intersect_stage<'s>(
    stream: StreamVec<'s, u64, Rec>,
    j: usize,
    shared: &Shared,
    local_state: &Rc<Local>,
    settings: &Settings,
) -> StreamVec<'s, u64, Rec> {
    let topo = shared.topo;
    let cands = Rc::clone(&shared.cands);
    let plan = Arc::clone(&shared.plan);
    let part = Arc::clone(&shared.part);
    let route = move |(c, _): &Rec| topo.owner_worker(*c);
    let last = j + 1 == plan.levels.len();
    let work = move |(c, mut row): Rec, emit: &mut dyn FnMut(Rec)| {
        intersect(
            &part,
            &plan,
            &cands,
            j,
            c,
            &mut row,
            &mut |row: &[u32]| {
                if last {
                    emit((0, row.to_vec()));
                    return;
                }
                let next = &plan.levels[j + 1];
                match choose(&plan, next, row) {
                    Choice::Dead => {}
                    Choice::Domain => emit((DOMAIN, row.to_vec())),
                    Choice::Proposer(k) => emit((k, row.to_vec())),
                    Choice::Scan => {
                        for p in 0..topo.parts {
                            emit((SCAN | p, row.to_vec()));
                        }
                    }
                }
            },
        );
    };
    let next = if last { None } else { Some(2 * j + 2) };
    stage(
        stream,
        "intersect",
        route,
        2 * j + 1,
        next,
        local_state,
        settings.high_water,
        work,
    )
}

enum Choice {
    Dead,
    Domain,
    Proposer(u32),
    Scan,
}

/// BiGJoin's count step: the proposer with the fewest candidates, from the counts in the row.
fn choose(plan: &DistPlan, next: &Level, row: &[u32]) -> Choice {
    let mut best: Option<(u32, Choice)> = None;
    if !next.domain.is_empty() {
        best = Some((next.domain.len() as u32, Choice::Domain));
    }
    for (k, p) in next.proposers.iter().enumerate() {
        let n = row[plan.count_slot(p.count)];
        if best.as_ref().is_none_or(|b| n < b.0) {
            best = Some((n, Choice::Proposer(k as u32)));
        }
    }
    match best {
        None => Choice::Scan,
        Some((0, _)) => Choice::Dead,
        Some((_, c)) => c,
    }
}

/// Binds candidate `c` at level `j` if it passes: injectivity, the node filter, every edge back
/// (each binding of an unbound edge variable is a row of its own); writes the level's counts.
pub fn intersect(
    part: &Partition,
    plan: &DistPlan,
    cands: &Candidates,
    j: usize,
    c: u32,
    row: &mut [u32],
    emit: &mut dyn FnMut(&[u32]),
) {
    if plan.semantics == Semantics::Iso && row[..j].contains(&c) {
        return;
    }
    let level = &plan.levels[j];
    let l = local(c, part.parts);
    // The candidate set holds only nodes that pass the node filter (and the neighbour filtering).
    if !cands.has(j, l) {
        return;
    }
    for carry in &level.carries {
        let n = adj(part, carry.dir).by_label(l, carry.label).0.len();
        row[plan.count_slot(carry.count)] = n as u32;
    }
    row[j] = c;
    check_edges(part, plan, level, 0, c, row, emit);
}

fn check_edges(
    part: &Partition,
    plan: &DistPlan,
    level: &Level,
    k: usize,
    c: u32,
    row: &mut [u32],
    emit: &mut dyn FnMut(&[u32]),
) {
    let Some(check) = level.checks.get(k) else {
        emit(row);
        return;
    };
    let other = check.other.map_or(c, |s| row[s]);
    let adj = adj(part, check.dir);
    let l = local(c, part.parts);
    match check.label {
        EdgeLabel::Fixed(r) => {
            if adj.has(l, r as u32, other) {
                check_edges(part, plan, level, k + 1, c, row, emit);
            }
        }
        EdgeLabel::Variable(i) => {
            let slot = plan.edge_slot(i);
            if row[slot] != NONE {
                if adj.has(l, row[slot], other) {
                    check_edges(part, plan, level, k + 1, c, row, emit);
                }
                return;
            }
            let (targets, labels) = adj.list(l);
            for (&t, &r) in targets.iter().zip(labels) {
                if t == other {
                    row[slot] = r as u32;
                    check_edges(part, plan, level, k + 1, c, row, emit);
                }
            }
            row[slot] = NONE;
        }
    }
}

/// The node filter of the single-machine engines, on the candidate's own lists.
pub fn passes(f: &FilterSpec, part: &Partition, c: u32) -> bool {
    if f.fixed != NONE && c != f.fixed {
        return false;
    }
    if !f.domain.is_empty() && f.domain.binary_search(&c).is_err() {
        return false;
    }
    let l = local(c, part.parts);
    if f.label != NONE && part.node_label(c) != f.label {
        return false;
    }
    for need in &f.degrees {
        if (adj(part, need.dir).by_label(l, need.label).0.len() as u32) < need.count {
            return false;
        }
    }
    for &r in &f.self_loops {
        if !adj(part, Dir::Out).has(l, r, c) {
            return false;
        }
    }
    f.neighbour_labels.iter().all(|need| {
        let csr = match need.dir {
            Dir::Out => &part.out,
            Dir::In => &part.inc,
        };
        if csr.target_labels.is_empty() {
            return true;
        }
        let (s, e) = (
            csr.offsets[l as usize] as usize,
            csr.offsets[l as usize + 1] as usize,
        );
        let have = csr.target_labels[s..e]
            .iter()
            .filter(|&&x| x == need.label)
            .count();
        have as u32 >= need.count
    })
}

fn row_spread(row: &[u32]) -> usize {
    row.iter()
        .fold(0u64, |h, &x| {
            (h ^ u64::from(x)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        })
        .rotate_right(29) as usize
}

/// Full matches to worker 0: counted where they are found (count only), or projected, deduplicated
/// (DISTINCT), named at their nodes' owners, and handed to the sink. Its output is the stop signal.
fn finish_stage<'s>(
    stream: StreamVec<'s, u64, Rec>,
    part: &Arc<Partition>,
    topo: Topology,
    plan: &Arc<DistPlan>,
    local_state: &Rc<Local>,
    settings: &Settings,
    sink: &Rc<RefCell<SinkState>>,
) -> StreamVec<'s, u64, Rec> {
    let f = settings.finish.clone();
    let columns = plan.columns.clone();
    let projected = {
        let columns = columns.clone();
        stream.unary(Pipeline, "project", move |_, _| {
            let mut counted = 0u64;
            move |input, output| {
                input.for_each(|cap, data| {
                    let mut session = output.session(&cap);
                    for (_, row) in data.drain(..) {
                        if f.count_only && !f.distinct {
                            counted += 1;
                        } else {
                            session.give((0, columns.iter().map(|&(s, _)| row[s]).collect()));
                        }
                    }
                    if counted > 0 {
                        session.give((COUNT, vec![counted as u32, (counted >> 32) as u32]));
                        counted = 0;
                    }
                });
            }
        })
    };
    let f = settings.finish.clone();
    let deduplicated = if f.distinct {
        let local_state = Rc::clone(local_state);
        let per_part = topo.per_part as u64 * u64::from(topo.parts);
        projected.unary(
            Exchange::new(move |(tag, row): &Rec| {
                if *tag == COUNT {
                    0
                } else {
                    row_spread(row) as u64 % per_part
                }
            }),
            "distinct",
            move |_, _| {
                let mut seen: HashSet<Vec<u32>> = HashSet::new();
                let mut bytes = 0u64;
                move |input, output| {
                    input.for_each(|cap, data| {
                        let mut session = output.session(&cap);
                        let mut fresh = 0u64;
                        for (tag, row) in data.drain(..) {
                            if tag == COUNT || seen.contains(&row) {
                                continue;
                            }
                            bytes += row.len() as u64 * 4 + 32;
                            if bytes > f.distinct_budget {
                                local_state.error.borrow_mut().get_or_insert_with(|| {
                                    format!(
                                        "DISTINCT needs more than its budget of {} bytes on one worker; \
                                         raise --memory-budget or add LIMIT",
                                        f.distinct_budget
                                    )
                                });
                                local_state.stop.set(true);
                                return;
                            }
                            seen.insert(row.clone());
                            if f.count_only {
                                fresh += 1;
                            } else {
                                session.give((0, row));
                            }
                        }
                        if fresh > 0 {
                            session.give((COUNT, vec![fresh as u32, (fresh >> 32) as u32]));
                        }
                    });
                }
            },
        )
    } else {
        projected
    };
    let named = name_stage(deduplicated, part, topo, &columns);
    let sink = Rc::clone(sink);
    let f = settings.finish.clone();
    let relations = part.vocab.relations.clone();
    named.unary(Exchange::new(|_: &Rec| 0), "sink", move |_, _| {
        move |input, output| {
            input.for_each(|cap, data| {
                let mut s = sink.borrow_mut();
                let mut stop = false;
                for (tag, row) in data.drain(..) {
                    if tag == COUNT {
                        // A batch's count (one worker's matches of one batch) fits in 64 bits;
                        // the total is summed wide.
                        s.counted += u128::from(u64::from(row[0]) | u64::from(row[1]) << 32);
                        let cap = f.limit.map(|l| u128::from(l.saturating_add(f.offset)));
                        if cap.is_some_and(|c| s.counted > c) {
                            s.limit_reached = true;
                            stop = true;
                        }
                        continue;
                    }
                    if stop || s.limit_reached {
                        continue;
                    }
                    if s.skipped < f.offset {
                        s.skipped += 1;
                        continue;
                    }
                    if f.limit.is_some_and(|l| s.rows >= l) {
                        s.limit_reached = true;
                        stop = true;
                        continue;
                    }
                    s.rows += 1;
                    if f.count_only {
                        continue;
                    }
                    let mut names = decode_names(&row);
                    for (i, &(_, is_edge)) in columns.iter().enumerate() {
                        if is_edge {
                            names[i] = relations.name(row[1 + i]).to_owned();
                        }
                    }
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    if let Some(out) = s.sink.as_mut() {
                        if !out.row(&refs) {
                            stop = true;
                        }
                    }
                }
                if stop {
                    output.session(&cap).give((0, vec![1]));
                }
            });
        }
    })
}

/// Names ride in the row after the ids: `[ids.., len0, bytes0.., len1, bytes1..]` packed in u32s.
fn encode_name(row: &mut Vec<u32>, name: &str) {
    row.push(name.len() as u32);
    for chunk in name.as_bytes().chunks(4) {
        let mut w = [0u8; 4];
        w[..chunk.len()].copy_from_slice(chunk);
        row.push(u32::from_le_bytes(w));
    }
}

fn decode_names(row: &[u32]) -> Vec<String> {
    let width = row[0] as usize;
    let mut names = Vec::with_capacity(width);
    let mut at = 1 + width;
    for _ in 0..width {
        let len = row[at] as usize;
        let words = len.div_ceil(4);
        let bytes: Vec<u8> = row[at + 1..at + 1 + words]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take(len)
            .collect();
        names.push(String::from_utf8_lossy(&bytes).into_owned());
        at += 1 + words;
    }
    names
}

/// Rows of ids to rows of names: each hop goes to the owner of the first node column still
/// unnamed, which names every column it owns; edge-variable columns are named from the shared
/// relation names. The output row is `[width, ids.., names..]` (see `encode_name`).
fn name_stage<'s>(
    stream: StreamVec<'s, u64, Rec>,
    part: &Arc<Partition>,
    topo: Topology,
    columns: &[(usize, bool)],
) -> StreamVec<'s, u64, Rec> {
    // Names are filled in place: `named[i]` is held in a side vector per row (as strings) only at
    // the end; until then each hop records names in a per-row string list encoded after the ids.
    let node_columns = columns.iter().filter(|c| !c.1).count();
    let hops = node_columns.min(topo.parts as usize).max(1);
    let edge: Vec<bool> = columns.iter().map(|c| c.1).collect();
    let width = columns.len();
    let mut stream = stream;
    for _ in 0..hops {
        let part = Arc::clone(part);
        let edge = edge.clone();
        let route_edge = edge.clone();
        stream = stream.unary(
            Exchange::new(move |(tag, row): &Rec| {
                if *tag == COUNT {
                    return 0;
                }
                let named = named_columns(row, width);
                (0..width)
                    .find(|&i| !route_edge[i] && named & (1 << i) == 0)
                    .map_or(0, |i| topo.owner_worker(row[i]))
            }),
            "name",
            move |_, _| {
                move |input, output| {
                    input.for_each(|cap, data| {
                        let mut session = output.session(&cap);
                        for (tag, mut row) in data.drain(..) {
                            if tag == COUNT {
                                session.give((tag, row));
                                continue;
                            }
                            if row.len() == width {
                                row.push(0);
                            }
                            name_owned(&part, &edge, width, &mut row);
                            session.give((tag, row));
                        }
                    });
                }
            },
        );
    }
    let edge_final = edge;
    // Assemble `[width, ids.., names..]` from the per-hop name records.
    stream.unary(Pipeline, "named", move |_, _| {
        move |input, output| {
            input.for_each(|cap, data| {
                let mut session = output.session(&cap);
                for (tag, row) in data.drain(..) {
                    if tag == COUNT {
                        session.give((tag, row));
                        continue;
                    }
                    session.give((tag, assemble(&row, width, &edge_final)));
                }
            });
        }
    })
}

/// Row under naming: `[ids (width).., name count, (column, len, bytes..)*]`.
fn name_owned(part: &Partition, edge: &[bool], width: usize, row: &mut Vec<u32>) {
    let named = named_columns(row, width);
    for i in 0..width {
        if edge[i] || named & (1 << i) != 0 || !part.owns(row[i]) {
            continue;
        }
        row[width] += 1;
        row.push(i as u32);
        let name = part.name(row[i]).to_owned();
        encode_name(row, &name);
    }
}

/// The columns a row under naming has names for, as a bit set (at most 80 columns: 64 query nodes
/// and 16 edge variables).
fn named_columns(row: &[u32], width: usize) -> u128 {
    let mut named = 0u128;
    if row.len() == width {
        return named;
    }
    let mut at = width + 1;
    for _ in 0..row[width] {
        named |= 1 << row[at];
        at += 2 + (row[at + 1] as usize).div_ceil(4);
    }
    named
}

/// `[width, ids.., names in column order..]`; edge columns get their relation id as a marker the
/// sink replaces (see `RelationNames`).
fn assemble(row: &[u32], width: usize, edge: &[bool]) -> Vec<u32> {
    let mut by_column: Vec<Option<(usize, usize)>> = vec![None; width];
    let mut at = width + 1;
    for _ in 0..row.get(width).copied().unwrap_or(0) {
        let col = row[at] as usize;
        let len = row[at + 1] as usize;
        by_column[col] = Some((at + 1, len));
        at += 2 + len.div_ceil(4);
    }
    let mut out = Vec::with_capacity(row.len());
    out.push(width as u32);
    out.extend_from_slice(&row[..width]);
    for i in 0..width {
        match by_column[i] {
            Some((start, len)) => {
                out.extend_from_slice(&row[start..start + 1 + len.div_ceil(4)]);
            }
            None => {
                debug_assert!(edge[i]);
                out.push(0);
            }
        }
    }
    out
}

/// One direction of a part's lists, indexed by local node.
pub(crate) fn adj(part: &Partition, dir: Dir) -> gpsense_kernels::view::Adjacency<'_> {
    match dir {
        Dir::Out => part.out_adj(),
        Dir::In => part.inc_adj(),
    }
}

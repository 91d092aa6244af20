//! The emulator's model of how long a warp-join launch takes on a GPU, in warp steps. The emulator
//! runs a launch's warps one after another, so the order in which they take work-items from a
//! queue says nothing of a GPU's; what it can measure is each work-item's cost. This module
//! replays those costs on a model GPU: at most [`resident_warps`] warps run at once, the others
//! start in index order as slots free (as a GPU starts blocks), every warp runs at one step per
//! tick, and a warp takes work-items as the kernels do: its own (`w`), then its job's queue, then
//! the queues of the jobs after its own ([`Schedule::Stealing`]). The same costs replayed with each
//! warp keeping its own stride of items (`w`, `w + per`, ..., the kernels' schedule before work
//! stealing: [`Schedule::Strided`]) give the comparison in the same run.
//!
//! The replay also checks the kernels' claim of work-items: each job's items must have run once
//! each, numbered from 0 without a gap.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use gpsense_kernels::entry::STEAL_WINDOW;

/// An H100's streaming multiprocessors.
const SMS: usize = 132;

/// Warps the model runs at once for kernel `name`: an H100's SMs times the 256-thread blocks an
/// SM holds at the registers a thread that `cargo xtask ptx` reports on sm_90 (65,536 a SM):
/// `extend_warp` 64 (4 blocks), `extend_warp_batch` 115 (2), the bindings kernels 132 and 164 (1).
pub fn resident_warps(name: &str) -> usize {
    let blocks = match name {
        "extend_warp" => 4,
        "extend_warp_batch" => 2,
        _ => 1,
    };
    SMS * blocks * 8
}

/// One work-item a warp ran: its job (a batch's query), its number, its steps (at least 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    pub job: usize,
    pub item: u64,
    pub steps: u64,
}

/// A launch's shape: `warps` warps in all, `per` of them for each job (0: one job, warp `w` takes
/// item `w` and no other), `resident` of them running at once.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub warps: u64,
    pub per: u64,
    pub jobs: usize,
    pub resident: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    Stealing,
    Strided,
}

/// What a replay found: the launch's span (ticks until its last warp ends), the steps of all
/// its items, the warps that ran at least one, and the least span any schedule could reach (the
/// steps shared evenly by the warps that run at once, or the longest item).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    pub span: u64,
    pub steps: u64,
    pub working: u64,
    pub bound: u64,
}

/// Each job's item costs by number, or the first item that ran twice or not at all.
pub fn costs(shape: Shape, ran: &[Ran]) -> Result<Vec<Vec<u64>>, String> {
    let mut costs: Vec<Vec<u64>> = vec![Vec::new(); shape.jobs];
    for r in ran {
        let job = costs.get_mut(r.job).ok_or_else(|| {
            format!(
                "work-item {} of job {}, of {} jobs",
                r.item, r.job, shape.jobs
            )
        })?;
        let i = r.item as usize;
        if job.len() <= i {
            job.resize(i + 1, 0);
        }
        if job[i] != 0 {
            return Err(format!("work-item {i} of job {} ran twice", r.job));
        }
        job[i] = r.steps.max(1);
    }
    for (j, job) in costs.iter().enumerate() {
        if let Some(i) = job.iter().position(|&c| c == 0) {
            return Err(format!(
                "work-item {i} of job {j} never ran, item {} did",
                job.len() - 1
            ));
        }
    }
    Ok(costs)
}

/// The launch replayed on the model GPU under `schedule`.
pub fn replay(shape: Shape, costs: &[Vec<u64>], schedule: Schedule) -> Replay {
    let steps: u64 = costs.iter().flatten().sum();
    let longest = costs.iter().flatten().max().copied().unwrap_or(0);
    let at_once = shape.warps.clamp(1, shape.resident.max(1) as u64);
    let mut model = Model::new(shape, costs);
    let (span, working) = match schedule {
        Schedule::Stealing => model.stealing(),
        Schedule::Strided => model.strided(),
    };
    Replay {
        span,
        steps,
        working,
        bound: steps.div_ceil(at_once).max(longest),
    }
}

struct Model<'c> {
    shape: Shape,
    costs: &'c [Vec<u64>],
    /// Per job, the next item of its queue.
    next: Vec<u64>,
    /// Jobs whose queue still holds items.
    queued: BTreeSet<usize>,
}

impl<'c> Model<'c> {
    fn new(shape: Shape, costs: &'c [Vec<u64>]) -> Self {
        let first = if shape.per == 0 { u64::MAX } else { shape.per };
        let next = vec![first; costs.len()];
        let queued = (0..costs.len())
            .filter(|&j| first < costs[j].len() as u64)
            .collect();
        Model {
            shape,
            costs,
            next,
            queued,
        }
    }

    /// Warp `w`'s job and own item.
    fn own(&self, w: u64) -> (usize, u64) {
        match self.shape.per {
            0 => (0, w),
            per => ((w / per) as usize, w % per),
        }
    }

    fn cost(&self, job: usize, item: u64) -> Option<u64> {
        self.costs.get(job)?.get(item as usize).copied()
    }

    /// The next item of job `job`'s queue, if any is left.
    fn take(&mut self, job: usize) -> Option<u64> {
        let i = self.next[job];
        let cost = self.cost(job, i)?;
        self.next[job] += 1;
        if self.cost(job, i + 1).is_none() {
            self.queued.remove(&job);
        }
        Some(cost)
    }

    /// The first job after offset `d` from `j` with queued items, within `STEAL_WINDOW` of `j`
    /// (cyclically, short of `j`), as an offset from `j`: the kernels' order of looking.
    fn queued_after(&self, j: usize, d: usize) -> Option<usize> {
        let n = self.costs.len();
        let end = n.min(STEAL_WINDOW + 1);
        let (from, to) = (j + d + 1, j + end);
        let after = self
            .queued
            .range(from.min(n)..to.min(n))
            .next()
            .map(|&k| k - j);
        after
            .or_else(|| {
                let (low, high) = (from.saturating_sub(n), to.saturating_sub(n).min(j));
                let wrapped = self.queued.range(low..high.max(low)).next();
                wrapped.map(|&k| k + n - j)
            })
            .filter(|&e| e < end)
    }

    /// Warp `w` starts at tick `at` with its own item, if its job has it.
    fn begin(&self, running: &mut BinaryHeap<Reverse<Running>>, at: u64, w: u64) {
        let (job, own) = self.own(w);
        let took = self.cost(job, own).unwrap_or(0);
        running.push(Reverse((at + took, w, 0, took > 0)));
    }

    /// Whether warp `w` would start and end at once: no own item and no queue to take from.
    fn idle(&self, w: u64) -> bool {
        let (job, own) = self.own(w);
        self.queued.is_empty() && self.cost(job, own).is_none()
    }

    /// Warps start in index order as slots free; each takes its own item, its job's queue, then
    /// the others' (as `take_items` in the kernels). Returns the span and the working warps.
    fn stealing(&mut self) -> (u64, u64) {
        if self.queued.is_empty() {
            // Every warp runs its own item at most: the strided schedule.
            return self.strided();
        }
        let mut running: BinaryHeap<Reverse<Running>> = BinaryHeap::new();
        let (mut started, mut span, mut working) = (0u64, 0u64, 0u64);
        while started < self.shape.warps && running.len() < self.shape.resident.max(1) {
            self.begin(&mut running, 0, started);
            started += 1;
        }
        while let Some(Reverse((at, w, mut d, ran))) = running.pop() {
            span = span.max(at);
            working += u64::from(ran);
            let (j, _) = self.own(w);
            let n = self.costs.len().max(1);
            let took = loop {
                if let Some(c) = self.take((j + d) % n) {
                    break Some(c);
                }
                match self.queued_after(j, d) {
                    Some(e) => d = e,
                    None => break None,
                }
            };
            match took {
                Some(c) => {
                    // Counted once, when it ends.
                    working -= u64::from(ran);
                    running.push(Reverse((at + c, w, d, true)));
                }
                None => {
                    while started < self.shape.warps && self.idle(started) {
                        started += 1;
                    }
                    if started < self.shape.warps {
                        self.begin(&mut running, at, started);
                        started += 1;
                    }
                }
            }
        }
        (span, working)
    }

    /// Each warp runs its own stride of its job's items (`own`, `own + per`, ...) and ends;
    /// warps start in index order as slots free. Warps without an item start and end at once.
    fn strided(&mut self) -> (u64, u64) {
        let mut slots: BinaryHeap<Reverse<u64>> = BinaryHeap::new();
        let (mut span, mut working) = (0, 0);
        let loads: Box<dyn Iterator<Item = u64>> = match self.shape.per {
            0 => Box::new(self.costs.iter().flatten().copied()),
            per => Box::new(self.costs.iter().flat_map(move |job| {
                (0..per.min(job.len() as u64))
                    .map(move |own| job.iter().skip(own as usize).step_by(per as usize).sum())
            })),
        };
        for load in loads {
            working += 1;
            let at = if slots.len() < self.shape.resident.max(1) {
                0
            } else {
                slots.pop().map_or(0, |Reverse(t)| t)
            };
            span = span.max(at + load);
            slots.push(Reverse(at + load));
        }
        (span, working)
    }
}

/// A running warp: the tick it next looks for work, its index, the offset of the job it takes
/// from, and whether it has run an item.
type Running = (u64, u64, usize, bool);

#[cfg(test)]
mod tests {
    use super::*;

    /// The model's residency in these tests.
    const RESIDENT: usize = 1024;

    fn ran(costs: &[&[u64]]) -> Vec<Ran> {
        costs
            .iter()
            .enumerate()
            .flat_map(|(job, c)| {
                c.iter().enumerate().map(move |(i, &steps)| Ran {
                    job,
                    item: i as u64,
                    steps,
                })
            })
            .collect()
    }

    fn both(shape: Shape, job_costs: &[&[u64]]) -> (Replay, Replay) {
        let c = costs(shape, &ran(job_costs)).unwrap();
        (
            replay(shape, &c, Schedule::Stealing),
            replay(shape, &c, Schedule::Strided),
        )
    }

    #[test]
    fn one_warp_per_item_takes_the_longest_item() {
        let shape = Shape {
            warps: 4,
            per: 0,
            jobs: 1,
            resident: RESIDENT,
        };
        let (s, t) = both(shape, &[&[3, 9, 1, 2]]);
        assert_eq!(s, t);
        assert_eq!((s.span, s.steps, s.working), (9, 15, 4));
    }

    #[test]
    fn a_heavy_job_is_shared_by_the_idle_warps_of_the_others() {
        // Two warps a job: job 0 has 8 items of 10 steps, jobs 1-3 one item of 1 step.
        let shape = Shape {
            warps: 8,
            per: 2,
            jobs: 4,
            resident: RESIDENT,
        };
        let (s, t) = both(shape, &[&[10; 8], &[1], &[1], &[1]]);
        // Strided: job 0's two warps take 4 items each.
        assert_eq!((t.span, t.working), (40, 5));
        // Stealing: 8 warps share its 8 items; the light jobs' warps join after their own.
        assert!(s.span <= 20, "{s:?}");
        assert_eq!(s.bound, 83u64.div_ceil(8).max(10));
        assert_eq!(s.steps, t.steps);
        assert!(s.working > t.working, "{s:?}");
    }

    #[test]
    fn a_warp_steals_only_within_its_window() {
        // One warp a job; job 0 is heavy. Only the jobs up to STEAL_WINDOW before it (cyclically:
        // the last ones) look at it.
        let jobs = STEAL_WINDOW + 10;
        let shape = Shape {
            warps: jobs as u64,
            per: 1,
            jobs,
            resident: RESIDENT,
        };
        let mut c: Vec<Vec<u64>> = vec![vec![1]; jobs];
        c[0] = vec![1; 1000];
        let s = replay(shape, &c, Schedule::Stealing);
        // Job 0's own warp and STEAL_WINDOW helpers share its 1,000 items.
        let helpers = STEAL_WINDOW as u64 + 1;
        assert!(
            s.span >= 1000 / helpers && s.span <= 1000 / helpers + 3,
            "{s:?}"
        );
        assert_eq!(s.working, jobs as u64);
    }

    #[test]
    fn queued_items_of_one_job_go_to_the_warp_that_frees_first() {
        // Two warps, items 0 and 1 their own, the queue 2..: one long item, many short.
        let shape = Shape {
            warps: 2,
            per: 2,
            jobs: 1,
            resident: RESIDENT,
        };
        let (s, t) = both(shape, &[&[100, 1, 1, 1, 1, 1, 1, 1]]);
        // Strided: warp 0 takes 0, 2, 4, 6 (103 steps); stealing: warp 1 takes all the rest.
        assert_eq!(t.span, 103);
        assert_eq!(s.span, 100);
    }

    #[test]
    fn warps_past_the_resident_ones_wait_for_a_slot() {
        let warps = RESIDENT as u64 * 2;
        let shape = Shape {
            warps,
            per: 0,
            jobs: 1,
            resident: RESIDENT,
        };
        let c = vec![vec![5; warps as usize]];
        for schedule in [Schedule::Stealing, Schedule::Strided] {
            assert_eq!(replay(shape, &c, schedule).span, 10, "{schedule:?}");
        }
    }

    #[test]
    fn an_item_run_twice_or_skipped_is_an_error() {
        let shape = Shape {
            warps: 2,
            per: 1,
            jobs: 1,
            resident: RESIDENT,
        };
        let twice = [
            Ran {
                job: 0,
                item: 0,
                steps: 1,
            },
            Ran {
                job: 0,
                item: 0,
                steps: 2,
            },
        ];
        assert!(costs(shape, &twice).unwrap_err().contains("twice"));
        let gap = [Ran {
            job: 0,
            item: 1,
            steps: 1,
        }];
        assert!(costs(shape, &gap).unwrap_err().contains("never ran"));
    }
}

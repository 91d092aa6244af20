//! The GpSense join as a GPU runs it, on the CPU executor: collect edge candidates per query edge
//! (count kernel, scan, write kernel), then combine level by level: for the partial matches of one
//! level, count the extensions of each (partial match, lane), scan, and write the next level at the
//! scanned offsets. When a level would exceed the memory budget, its partial matches are split into
//! batches that go through the remaining levels one after another (depth-first, as EGSM and GSI do).

use gpsense_kernels::join::{
    count_edge_candidates, count_extensions, write_edge_candidates, write_extensions, Step,
};
use gpsense_kernels::{GraphView, NONE};

use crate::executor::Executor;
use crate::filtering::Candidates;
use crate::layout::Layout;
use crate::output::Output;
use crate::MatchError;

/// Edge candidates of one query edge, keyed by the index of the earlier endpoint's candidate:
/// the data edges from `arrays[from][i]` are `targets[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, Default)]
pub struct EdgeCandidates {
    pub from: usize,
    pub offsets: Vec<u64>,
    pub targets: Vec<u32>,
    pub labels: Vec<u16>,
}

/// Rows first sent to the output in small batches, growing fourfold, so the first rows of a large
/// answer appear at once.
const FIRST_BATCH_ROWS: u64 = 1 << 12;

pub struct KernelJoin<'a> {
    pub layout: &'a Layout,
    pub cands: &'a Candidates,
    pub g: GraphView<'a>,
    pub injective: bool,
    pub ex: Executor,
    pub lanes: usize,
    pub memory_budget: u64,
}

struct Level<'a> {
    step: Step<'a>,
    /// Edge candidates of the pivot check, when there is one.
    pivot: Option<&'a EdgeCandidates>,
    /// The whole candidate array, when the node starts a component.
    all: &'a [u32],
}

impl KernelJoin<'_> {
    /// Collects the edge candidates of every non-loop query edge (`edge_candidates[e]`), each with
    /// the two-step output scheme: count per source candidate, scan, write.
    pub fn collect_edge_candidates(&self) -> Vec<Option<EdgeCandidates>> {
        let mut out = vec![None; self.layout.edge_count];
        for ns in &self.layout.neighbour_steps {
            let from = &self.cands.arrays[ns.from];
            let to_set = self.cands.set(ns.to);
            let g = self.g;
            let mut counts = vec![0u32; from.len()];
            self.ex.map(&mut counts, |i| {
                count_edge_candidates(i, from, ns.dir, ns.label, to_set, &g)
            });
            let offsets = crate::executor::offsets_of(&counts);
            let total = *offsets.last().unwrap_or(&0) as usize;
            let mut targets = vec![0u32; total];
            let mut labels = vec![0u16; total];
            self.ex
                .scatter2(&mut targets, &mut labels, &offsets, |i, t, l| {
                    write_edge_candidates(i, from, ns.dir, ns.label, to_set, &g, t, l)
                });
            out[ns.edge] = Some(EdgeCandidates {
                from: ns.from,
                offsets,
                targets,
                labels,
            });
        }
        out
    }

    pub fn run(
        &self,
        edge_candidates: &[Option<EdgeCandidates>],
        out: &Output,
    ) -> Result<(), MatchError> {
        let levels = self.levels(edge_candidates);
        let root = vec![NONE; self.layout.width];
        let mut batch_rows = FIRST_BATCH_ROWS;
        self.level(&levels, 0, &root, out, &mut batch_rows, 0)
    }

    /// The kernel step of each plan position, with a static pivot: among the checks whose relation is
    /// known, the one with the fewest edge candidates per source candidate.
    fn levels<'s>(&'s self, ecs: &'s [Option<EdgeCandidates>]) -> Vec<Level<'s>> {
        self.layout
            .steps
            .iter()
            .map(|js| {
                let avg = |p: &u32| {
                    let ec = ecs[js.edge_of_check[*p as usize]].as_ref();
                    ec.map_or(f64::MAX, |ec| {
                        ec.targets.len() as f64 / (ec.offsets.len().max(2) - 1) as f64
                    })
                };
                let pivot = js
                    .fixed_pivots
                    .iter()
                    .min_by(|a, b| avg(a).total_cmp(&avg(b)))
                    .copied()
                    .unwrap_or(js.variable_pivot);
                let step = Step {
                    slot: js.slot,
                    nodes: self.layout.nodes as u32,
                    injective: self.injective,
                    checks: &js.checks,
                    pivot,
                    candidates: self.cands.set(js.node),
                };
                let pivot_ec = (pivot != NONE)
                    .then(|| ecs[js.edge_of_check[pivot as usize]].as_ref())
                    .flatten();
                Level {
                    step,
                    pivot: pivot_ec,
                    all: &self.cands.arrays[js.node],
                }
            })
            .collect()
    }

    /// The list a row scans at a level: the pivot's edge candidates from the row's data node.
    fn list<'l>(&self, level: &'l Level, row: &[u32]) -> (&'l [u32], &'l [u16]) {
        let Some(ec) = level.pivot else {
            return (level.all, &[]);
        };
        let check = &level.step.checks[level.step.pivot as usize];
        let x = row[check.slot as usize];
        match self.cands.arrays[ec.from].binary_search(&x) {
            Ok(i) => {
                let (s, e) = (ec.offsets[i] as usize, ec.offsets[i + 1] as usize);
                (&ec.targets[s..e], &ec.labels[s..e])
            }
            Err(_) => (&[], &[]),
        }
    }

    fn level(
        &self,
        levels: &[Level],
        depth: usize,
        parents: &[u32],
        out: &Output,
        batch_rows: &mut u64,
        held: u64,
    ) -> Result<(), MatchError> {
        let width = self.layout.width;
        let lanes = self.lanes;
        let last = depth + 1 == levels.len();
        let level = &levels[depth];
        let n_parents = parents.len() / width;
        let mut counts = vec![0u64; n_parents * lanes];
        let g = self.g;
        self.ex.map(&mut counts, |item| {
            // A deadline or a satisfied limit ends the launch early, as a GPU kernel would check a flag.
            if out.stopped() {
                return 0;
            }
            let row = &parents[item / lanes * width..][..width];
            let (t, l) = self.list(level, row);
            count_extensions(row, item % lanes, lanes, &level.step, t, l, &g)
        });
        if out.stopped() {
            return Ok(());
        }
        // Summed wide: each count is bounded by a list, their sum only by the memory budget.
        let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
        if last && out.count_only() {
            out.add_count(total);
            return Ok(());
        }
        let total = u64::try_from(total).unwrap_or(u64::MAX);
        let budget = self.budget_rows(last, *batch_rows, held);
        if total > budget {
            return self.split(
                levels, depth, parents, &counts, budget, out, batch_rows, held,
            );
        }
        let mut offsets = vec![0u64; counts.len() + 1];
        for (i, &c) in counts.iter().enumerate() {
            offsets[i + 1] = offsets[i] + c;
        }
        let mut children = vec![0u32; total as usize * width];
        self.ex
            .scatter(&mut children, &offsets, width, |item, region| {
                // The time limit stops the write pass too; its rows are then dropped.
                if out.stopped() {
                    return;
                }
                let row = &parents[item / lanes * width..][..width];
                let (t, l) = self.list(level, row);
                write_extensions(row, item % lanes, lanes, &level.step, t, l, &g, region);
            });
        drop(counts);
        if out.stopped() {
            return Ok(());
        }
        if last {
            out.rows(&children, width);
            *batch_rows = batch_rows.saturating_mul(4);
            return Ok(());
        }
        let held = held + (children.len() * 4) as u64;
        self.level(levels, depth + 1, &children, out, batch_rows, held)
    }

    /// Rows the next level may hold at once: what the memory budget leaves after the levels above
    /// (`held` bytes of partial matches, kept while their parts run), and for the last level, the
    /// current streaming batch. The budget covers the whole query, not each level.
    fn budget_rows(&self, last: bool, batch_rows: u64, held: u64) -> u64 {
        let per_row = (self.layout.width * 4 + self.lanes * 8) as u64;
        let budget = (self.memory_budget.saturating_sub(held) / per_row).max(1);
        if last {
            budget.min(batch_rows)
        } else {
            budget
        }
    }

    /// Processes `parents` in consecutive batches whose extensions fit `budget`; a partial match whose
    /// extensions alone exceed the memory budget is split along its pivot list
    /// ([`KernelJoin::split_one`]).
    #[allow(clippy::too_many_arguments)]
    fn split(
        &self,
        levels: &[Level],
        depth: usize,
        parents: &[u32],
        counts: &[u64],
        budget: u64,
        out: &Output,
        batch_rows: &mut u64,
        held: u64,
    ) -> Result<(), MatchError> {
        let (width, lanes) = (self.layout.width, self.lanes);
        let memory_rows = self.budget_rows(false, u64::MAX, held);
        let per_row: Vec<u64> = counts.chunks(lanes).map(|c| c.iter().sum()).collect();
        let mut start = 0;
        while start < per_row.len() {
            if per_row[start] > memory_rows {
                let row = &parents[start * width..][..width];
                self.split_one(levels, depth, row, memory_rows, out, batch_rows, held)?;
                if out.stopped() {
                    return Ok(());
                }
                start += 1;
                continue;
            }
            let (mut end, mut sum) = (start + 1, per_row[start]);
            while end < per_row.len() && per_row[end] <= memory_rows && sum + per_row[end] <= budget
            {
                sum += per_row[end];
                end += 1;
            }
            // A lone partial match may exceed the streaming batch (not the memory budget).
            *batch_rows = (*batch_rows).max(sum);
            self.level(
                levels,
                depth,
                &parents[start * width..end * width],
                out,
                batch_rows,
                held,
            )?;
            if out.stopped() {
                return Ok(());
            }
            start = end;
        }
        Ok(())
    }

    /// One partial match whose extensions exceed the memory budget: its pivot list is cut into
    /// consecutive pieces whose extensions fit (count per entry, scan, write per piece), each piece
    /// going through the remaining levels before the next. One entry's own extensions (its relation
    /// bindings, bounded by the parallel edges of its variable edges) are never cut.
    #[allow(clippy::too_many_arguments)]
    fn split_one(
        &self,
        levels: &[Level],
        depth: usize,
        row: &[u32],
        memory_rows: u64,
        out: &Output,
        batch_rows: &mut u64,
        held: u64,
    ) -> Result<(), MatchError> {
        let width = self.layout.width;
        let level = &levels[depth];
        let last = depth + 1 == levels.len();
        let g = self.g;
        let (targets, labels) = self.list(level, row);
        // `labels` is empty when the level has no pivot (the whole candidate array).
        let entries = |s: usize, e: usize| {
            let l = if labels.is_empty() {
                labels
            } else {
                &labels[s..e]
            };
            (&targets[s..e], l)
        };
        let mut per_entry = vec![0u64; targets.len()];
        self.ex.map(&mut per_entry, |i| {
            let (t, l) = entries(i, i + 1);
            count_extensions(row, 0, 1, &level.step, t, l, &g)
        });
        let mut start = 0;
        while start < targets.len() {
            let (mut end, mut sum) = (start + 1, per_entry[start]);
            while end < targets.len() && sum + per_entry[end] <= memory_rows {
                sum += per_entry[end];
                end += 1;
            }
            if sum == 0 {
                start = end;
                continue;
            }
            let mut offsets = vec![0u64; end - start + 1];
            for (i, &c) in per_entry[start..end].iter().enumerate() {
                offsets[i + 1] = offsets[i] + c;
            }
            let mut children = vec![0u32; sum as usize * width];
            self.ex
                .scatter(&mut children, &offsets, width, |i, region| {
                    let (t, l) = entries(start + i, start + i + 1);
                    write_extensions(row, 0, 1, &level.step, t, l, &g, region);
                });
            if last {
                out.rows(&children, width);
            } else {
                let held = held + (children.len() * 4) as u64;
                self.level(levels, depth + 1, &children, out, batch_rows, held)?;
            }
            if out.stopped() {
                return Ok(());
            }
            start = end;
        }
        Ok(())
    }
}

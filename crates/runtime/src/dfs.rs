//! The CPU-first join: depth-first over the plan, each step scanning the shortest of the adjacency
//! lists that lead back to matched nodes and testing the others by binary search (set intersection
//! over sorted lists), in parallel over a frontier of partial matches. The last level is counted, not
//! materialised, when only a count is wanted.

use gpsense_kernels::join::{extend, pivot_list, Step};
use gpsense_kernels::{GraphView, NONE};
use rayon::prelude::*;

use crate::filtering::Candidates;
use crate::layout::{JoinStep, Layout, MAX_QUERY_NODES};
use gpsense_kernels::join::MAX_EDGE_VARIABLES;

use crate::output::Output;

const MAX_WIDTH: usize = MAX_QUERY_NODES + MAX_EDGE_VARIABLES;
type Row = [u32; MAX_WIDTH];

/// Rows buffered per worker before they go to the output.
const FLUSH_ROWS: usize = 1024;

pub struct Dfs<'a> {
    pub layout: &'a Layout,
    pub cands: &'a Candidates,
    pub g: GraphView<'a>,
    pub injective: bool,
    pub parallel: bool,
}

impl Dfs<'_> {
    pub fn run(&self, out: &Output) {
        let width = self.layout.width;
        let last = self.layout.steps.len() - 1;
        // Grow a frontier breadth-first until there is enough independent work for the threads.
        let target = if self.parallel {
            64 * rayon::current_num_threads()
        } else {
            1
        };
        let mut frontier: Vec<Row> = vec![[NONE; MAX_WIDTH]];
        let mut depth = 0;
        while depth < last && frontier.len() < target && frontier.len() < 1 << 16 {
            let mut next = Vec::new();
            for row in &frontier {
                self.each_extension(depth, row, &mut |r| {
                    next.push(*r);
                    true
                });
            }
            frontier = next;
            depth += 1;
        }
        let work = |chunk: &[Row]| {
            let mut buf = Vec::with_capacity(FLUSH_ROWS * width);
            for row in chunk {
                if out.stopped() || !self.descend(depth, row, out, &mut buf) {
                    break;
                }
            }
            if !buf.is_empty() {
                out.rows(&buf, width);
            }
        };
        if self.parallel && frontier.len() > 1 {
            frontier.par_chunks(1).for_each(work);
        } else {
            work(&frontier);
        }
    }

    /// Depth-first below `row` (which has slots `0..depth` filled); false once the output stops.
    fn descend(&self, depth: usize, row: &Row, out: &Output, buf: &mut Vec<u32>) -> bool {
        let width = self.layout.width;
        let last = self.layout.steps.len() - 1;
        if depth == last && out.count_only() {
            let n = self.count_extensions(depth, row);
            out.add_count(n);
            return !out.stopped();
        }
        let mut go_on = true;
        self.each_extension(depth, row, &mut |next| {
            if depth == last {
                buf.extend_from_slice(&next[..width]);
                if buf.len() >= FLUSH_ROWS * width {
                    go_on = out.rows(buf, width);
                    buf.clear();
                }
            } else {
                go_on = self.descend(depth + 1, next, out, buf);
            }
            go_on
        });
        go_on && !out.stopped()
    }

    fn count_extensions(&self, depth: usize, row: &Row) -> u64 {
        let (step, targets, labels) = self.step_for(depth, row);
        extend(
            &row[..self.layout.width],
            0,
            1,
            &step,
            targets,
            labels,
            &self.g,
            &mut |_, _| true,
        )
    }

    /// Calls `f` with each extension of `row` by the node at `depth`; `f` returns whether to go on.
    fn each_extension(&self, depth: usize, row: &Row, f: &mut dyn FnMut(&Row) -> bool) {
        let width = self.layout.width;
        let nodes = self.layout.nodes;
        let (step, targets, labels) = self.step_for(depth, row);
        let mut next = *row;
        extend(
            &row[..width],
            0,
            1,
            &step,
            targets,
            labels,
            &self.g,
            &mut |b, bound| {
                next[step.slot as usize] = b;
                next[nodes..width].copy_from_slice(bound);
                f(&next)
            },
        );
    }

    /// The kernel step at `depth` for this row, with the pivot whose list is shortest here.
    fn step_for<'s>(&'s self, depth: usize, row: &Row) -> (Step<'s>, &'s [u32], &'s [u16]) {
        let js: &JoinStep = &self.layout.steps[depth];
        let mut step = Step {
            slot: js.slot,
            nodes: self.layout.nodes as u32,
            injective: self.injective,
            checks: &js.checks,
            pivot: NONE,
            candidates: self.cands.set(js.node),
        };
        let row = &row[..self.layout.width];
        let mut best: Option<(u32, &[u32], &[u16])> = None;
        for &p in &js.fixed_pivots {
            step.pivot = p;
            let (targets, labels) = pivot_list(&step, row, &self.g);
            if best.is_none_or(|b| targets.len() < b.1.len()) {
                best = Some((p, targets, labels));
                if targets.is_empty() {
                    break;
                }
            }
        }
        match best {
            Some((p, targets, labels)) => {
                step.pivot = p;
                (step, targets, labels)
            }
            None if js.variable_pivot != NONE => {
                step.pivot = js.variable_pivot;
                let list = pivot_list(&step, row, &self.g);
                (step, list.0, list.1)
            }
            None => (step, &self.cands.arrays[js.node], &[]),
        }
    }
}

//! Phase 3 of TruST: beam search over template nodes in a connected order.
//!
//! Level `i` adds template node `order[i]` to every kept branch: the kernel
//! [`extend_branch`] lists its injective extensions to data nodes adjacent (in the template edge's
//! direction, any relation) to the images of its already matched template neighbours, each with
//! its score increment (`OH` plus the agreement of the edges closed). The `beam` best branches by
//! cumulative score survive, after removing branches that reach the same matching. Because every
//! branch at a level has matched the same template nodes, cumulative scores are comparable, and an
//! exact embedding's prefixes have the highest possible score at every level.

use gpsense_kernels::trust::{extend_branch, Extension, Link, Scoring};
use gpsense_kernels::{Dir, GraphView, NONE};
use hashbrown::HashSet;
use rayon::prelude::*;

use crate::template::{NodeLabel, Template};

/// The matching order and, per level, the template edges it closes.
pub(crate) struct Plan {
    pub order: Vec<usize>,
    /// Per level: the template edges between `order[level]` and earlier nodes, and its self-loops.
    pub links: Vec<Vec<Link>>,
}

impl Plan {
    pub fn new(t: &Template, edge_relations: &[u32]) -> Plan {
        let order = order(t);
        let mut position = vec![usize::MAX; t.nodes.len()];
        for (i, &v) in order.iter().enumerate() {
            position[v] = i;
        }
        let mut links = vec![Vec::new(); order.len()];
        for (e, &relation) in t.edges.iter().zip(edge_relations) {
            let (ps, pt) = (position[e.source], position[e.target]);
            // The edge is closed when its later endpoint is added; seen from the earlier one.
            let (level, other, dir) = if ps <= pt {
                (pt, e.source, Dir::Out)
            } else {
                (ps, e.target, Dir::In)
            };
            links[level].push(Link {
                other: other as u32,
                dir,
                relation,
            });
        }
        Plan { order, links }
    }

    /// Whether level `i`'s node has a matched neighbour to grow from (else it needs seeds).
    fn anchored(&self, level: usize) -> bool {
        let node = self.order[level] as u32;
        self.links[level].iter().any(|l| l.other != node)
    }
}

/// A connected order: start at the fuzzy node of highest degree (a named node narrows the search
/// most, and a high degree makes its one-hop score most informative), then repeatedly the node with
/// the most edges back to the ordered ones. A new component starts like the first.
fn order(t: &Template) -> Vec<usize> {
    let n = t.nodes.len();
    let degree: Vec<usize> = (0..n).map(|v| t.degree(v)).collect();
    let fuzzy = |v: usize| matches!(t.nodes[v].label, NodeLabel::Fuzzy(_));
    let mut placed = vec![false; n];
    let mut back = vec![0usize; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let next = (0..n)
            .filter(|&v| !placed[v])
            .max_by_key(|&v| (back[v], fuzzy(v), degree[v], std::cmp::Reverse(v)))
            .unwrap_or(0);
        placed[next] = true;
        order.push(next);
        for e in &t.edges {
            if e.source == next && e.target != next {
                back[e.target] += 1;
            } else if e.target == next && e.source != next {
                back[e.source] += 1;
            }
        }
    }
    order
}

/// The search itself.
pub(crate) struct Beam<'a> {
    pub plan: &'a Plan,
    /// `OH`, row-major data nodes x template nodes.
    pub oh: &'a [f32],
    pub g: &'a GraphView<'a>,
    pub scoring: Scoring,
    pub beam: usize,
}

/// Kept branches: one row of data nodes per branch (indexed by template node), and its cumulative
/// score; sorted best first.
pub(crate) struct Branches {
    pub rows: Vec<u32>,
    pub scores: Vec<f32>,
    pub width: usize,
}

impl Branches {
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn row(&self, b: usize) -> &[u32] {
        &self.rows[b * self.width..(b + 1) * self.width]
    }
}

/// One extension: its cumulative score, parent branch and data node.
type Child = (f32, u32, u32);

impl Beam<'_> {
    /// The search, stopped before a level that starts once `stop` is hit (the rows are then
    /// incomplete).
    pub(crate) fn run(&self, stop: crate::Stop) -> Branches {
        let width = self.plan.order.len();
        let mut branches = Branches {
            rows: vec![NONE; width],
            scores: vec![0.0],
            width,
        };
        for level in 0..width {
            if stop.hit() {
                break;
            }
            let node = self.plan.order[level];
            let seeds = if self.plan.anchored(level) {
                Vec::new()
            } else {
                self.seeds(node)
            };
            let ext = Extension {
                node: node as u32,
                links: &self.plan.links[level],
                seeds: &seeds,
            };
            let children = self.children(&branches, &ext);
            branches = self.select(&branches, children, node);
            if branches.len() == 0 {
                break;
            }
        }
        branches
    }

    /// The `beam` data nodes with the best one-hop score for `node` (ties: lower id).
    fn seeds(&self, node: usize) -> Vec<u32> {
        let nt = self.plan.order.len();
        let oh = |d: u32| self.oh[d as usize * nt + node];
        let mut ids: Vec<u32> = (0..self.g.node_count() as u32).collect();
        let by_score = |a: &u32, b: &u32| oh(*b).total_cmp(&oh(*a)).then(a.cmp(b));
        if ids.len() > self.beam {
            ids.select_nth_unstable_by(self.beam - 1, by_score);
            ids.truncate(self.beam);
        }
        ids.sort_unstable_by(by_score);
        ids
    }

    /// Every branch's best `beam` extensions (no more of one parent can survive), in parallel over
    /// branches.
    fn children(&self, branches: &Branches, ext: &Extension) -> Vec<Child> {
        let beam = self.beam;
        let per_branch: Vec<Vec<Child>> = (0..branches.len())
            .into_par_iter()
            .map_init(Vec::new, |buf: &mut Vec<Child>, b| {
                buf.clear();
                let base = branches.scores[b];
                let row = branches.row(b);
                // Once `2 * beam` children are buffered, the buffer is cut to its best `beam`; a
                // later child must beat the worst of those. The kernel skips only candidates whose
                // bound is strictly below, so ties survive and results do not depend on list order.
                let mut floor = f32::NEG_INFINITY;
                extend_branch(row, ext, self.g, self.oh, &self.scoring, &mut |c, inc| {
                    buf.push((base + inc, b as u32, c));
                    if buf.len() >= 2 * beam {
                        keep_best(buf, beam);
                        floor = buf.iter().map(|c| c.0).fold(f32::INFINITY, f32::min) - base;
                    }
                    floor
                });
                keep_best(buf, beam);
                buf.clone()
            })
            .collect();
        per_branch.into_iter().flatten().collect()
    }

    /// The `beam` best distinct matchings among `children`.
    fn select(&self, parents: &Branches, mut children: Vec<Child>, node: usize) -> Branches {
        children.sort_unstable_by(best_first);
        let width = parents.width;
        let mut next = Branches {
            rows: Vec::with_capacity(self.beam.min(children.len()) * width),
            scores: Vec::new(),
            width,
        };
        let mut seen: HashSet<Vec<u32>> = HashSet::new();
        for (score, parent, c) in children {
            if next.len() == self.beam {
                break;
            }
            let mut row = parents.row(parent as usize).to_vec();
            row[node] = c;
            // With a fixed order two parents never yield the same row, but a repeat would waste a
            // slot of the beam (the seed paper's GPU version kept them), so it is checked.
            if seen.insert(row.clone()) {
                next.rows.extend_from_slice(&row);
                next.scores.push(score);
            }
        }
        next
    }
}

/// Best score first; ties by parent rank, then data node, so results never depend on threads.
fn best_first(a: &Child, b: &Child) -> std::cmp::Ordering {
    b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2))
}

/// Keeps the `k` best of `buf`.
fn keep_best(buf: &mut Vec<Child>, k: usize) {
    if buf.len() > k {
        buf.select_nth_unstable_by(k - 1, best_first);
        buf.truncate(k);
    }
}

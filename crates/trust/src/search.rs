//! Phase 3 of TruST: beam search over template nodes in a connected order.
//!
//! Level `i` adds template node `order[i]` to every kept branch: the kernel
//! [`Judge::extend_branch`] lists its injective extensions to data nodes adjacent (in the template
//! edge's direction, any relation) to the images of its already matched template neighbours, each with
//! its score increment (`OH` plus the agreement of the edges closed). The `beam` best branches
//! survive, after removing branches that reach the same matching: first those with the most
//! template nodes whose data node resembles them by name (similarity above 0, i.e. at least the
//! threshold; a variable always does), then by cumulative score. Because every branch at a level has
//! matched the same template nodes, both are comparable, and an exact embedding's prefixes rank
//! first at every level (every name resembles, and no score is higher).

use gpsense_kernels::trust::{ChildKey, Extension, Judge, Link, Scoring, TopChildren};
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
    pub(crate) fn anchored(&self, level: usize) -> bool {
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
    /// `S`, same layout: whether a child resembles its template node.
    pub sim: &'a [f32],
    pub g: &'a GraphView<'a>,
    pub scoring: Scoring,
    pub beam: usize,
}

/// Kept branches: one row of data nodes per branch (indexed by template node), its cumulative
/// score, and how many of its template nodes resemble their data nodes (similarity above 0; every
/// variable does); sorted best first.
pub(crate) struct Branches {
    pub rows: Vec<u32>,
    pub scores: Vec<f32>,
    pub resembling: Vec<u32>,
    pub width: usize,
}

impl Branches {
    /// The empty branch a search starts from.
    pub fn root(width: usize) -> Branches {
        Branches {
            rows: vec![NONE; width],
            scores: vec![0.0],
            resembling: vec![0],
            width,
        }
    }

    pub fn len(&self) -> usize {
        self.scores.len()
    }

    pub fn row(&self, b: usize) -> &[u32] {
        &self.rows[b * self.width..(b + 1) * self.width]
    }
}

/// One extension: its template nodes that resemble, cumulative score, parent branch and data node.
pub(crate) type Child = (u32, f32, u32, u32);

impl Beam<'_> {
    /// The search, stopped before a level that starts once `stop` is hit (the rows are then
    /// incomplete).
    pub(crate) fn run(&self, stop: crate::Stop) -> Branches {
        let width = self.plan.order.len();
        let mut branches = Branches::root(width);
        for level in 0..width {
            if stop.hit() {
                break;
            }
            let node = self.plan.order[level];
            let seeds = seeds_for(self.plan, level, self.oh, self.sim, self.beam);
            let ext = Extension {
                node: node as u32,
                links: &self.plan.links[level],
                seeds: &seeds,
            };
            let children = self.children(&branches, &ext);
            branches = select(&branches, children, node, self.beam);
            if branches.len() == 0 {
                break;
            }
        }
        branches
    }

    /// Every branch's best `beam` extensions by [`ChildKey`] (no more of one parent can survive),
    /// in parallel over branches, judging each candidate with the functions the device's
    /// `trust_extend` warps call.
    fn children(&self, branches: &Branches, ext: &Extension) -> Vec<Child> {
        let beam = self.beam;
        let judge = Judge {
            ext,
            g: self.g,
            oh: self.oh,
            sim: self.sim,
            scoring: &self.scoring,
        };
        let per_branch: Vec<Vec<Child>> = (0..branches.len())
            .into_par_iter()
            .map_init(
                || (vec![0u32; beam], vec![0f32; beam], vec![0u32; beam]),
                |(nodes, scores, resembles), b| {
                    let mut top = TopChildren {
                        nodes,
                        scores,
                        resembles,
                        len: 0,
                    };
                    let (row, base) = (branches.row(b), branches.scores[b]);
                    judge.extend_top(row, base, &mut top);
                    let count = branches.resembling[b];
                    (0..top.len)
                        .map(|i| {
                            let k = top.key(i);
                            (count + k.resembles as u32, k.score, b as u32, k.node)
                        })
                        .collect()
                },
            )
            .collect();
        per_branch.into_iter().flatten().collect()
    }
}

/// The seeds of level `level` when its node has no matched neighbour (else none): the `beam` data
/// nodes ranked first by [`ChildKey`] on their one-hop score (resembling first, ties: lower id).
pub(crate) fn seeds_for(
    plan: &Plan,
    level: usize,
    oh: &[f32],
    sim: &[f32],
    beam: usize,
) -> Vec<u32> {
    if plan.anchored(level) {
        return Vec::new();
    }
    let node = plan.order[level];
    let nt = plan.order.len();
    let key = |d: u32| ChildKey {
        resembles: sim[d as usize * nt + node] > 0.0,
        score: oh[d as usize * nt + node],
        node: d,
    };
    let mut ids: Vec<u32> = (0..(oh.len() / nt.max(1)) as u32).collect();
    let by_key = |a: &u32, b: &u32| {
        let (ka, kb) = (key(*a), key(*b));
        if ka.better(&kb) {
            std::cmp::Ordering::Less
        } else if kb.better(&ka) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    };
    if ids.len() > beam {
        ids.select_nth_unstable_by(beam - 1, by_key);
        ids.truncate(beam);
    }
    ids.sort_unstable_by(by_key);
    ids
}

/// The `beam` best distinct matchings among `children`: most resembling template nodes first,
/// then the highest score.
pub(crate) fn select(
    parents: &Branches,
    mut children: Vec<Child>,
    node: usize,
    beam: usize,
) -> Branches {
    children.sort_unstable_by(best_first);
    let width = parents.width;
    let mut next = Branches {
        rows: Vec::with_capacity(beam.min(children.len()) * width),
        scores: Vec::new(),
        resembling: Vec::new(),
        width,
    };
    let mut seen: HashSet<Vec<u32>> = HashSet::new();
    for (count, score, parent, c) in children {
        if next.len() == beam {
            break;
        }
        let mut row = parents.row(parent as usize).to_vec();
        row[node] = c;
        // With a fixed order two parents never yield the same row, but a repeat would waste a
        // slot of the beam (the seed paper's GPU version kept them), so it is checked.
        if seen.insert(row.clone()) {
            next.rows.extend_from_slice(&row);
            next.scores.push(score);
            next.resembling.push(count);
        }
    }
    next
}

/// Most resembling template nodes first, then the best score; ties by parent rank, then data
/// node, so results never depend on threads (or on the device).
fn best_first(a: &Child, b: &Child) -> std::cmp::Ordering {
    b.0.cmp(&a.0)
        .then(b.1.total_cmp(&a.1))
        .then(a.2.cmp(&b.2))
        .then(a.3.cmp(&b.3))
}

//! Joining phase kernels: collect edge candidates (two-step output: count, scan, write) and
//! combine: grow a partial match by one query node.
//!
//! A partial match is a row of `width` `u32`s: one slot per query node (in plan order) holding its data
//! node, then one slot per edge variable holding its relation; unbound slots hold `NONE`.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::bits;
use crate::view::{Dir, GraphView};
use crate::warp::{rank_below, Warp, LANES};
use crate::NONE;

/// The most edge variables a query may have, and the most backward edges one query node may have:
/// bounds for the fixed-size state of [`extend`] (no allocation, no recursion, as on a GPU).
pub const MAX_EDGE_VARIABLES: usize = 16;
pub const MAX_CHECKS: usize = 64;

/// Kernel, count step: how many neighbours of `from[i]` over `dir`/`label` are candidates of the
/// other endpoint (`to_set`).
pub fn count_edge_candidates(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    to_set: &[u32],
    g: &GraphView,
) -> u32 {
    let targets = g.adj(dir).by_label(from[i], label).0;
    targets.iter().filter(|&&w| bits::test(to_set, w)).count() as u32
}

/// Kernel, write step: those neighbours (and their relations) into `out_targets`/`out_labels`, which
/// hold exactly the counted number of slots at `i`'s scanned offset.
#[allow(clippy::too_many_arguments)]
pub fn write_edge_candidates(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    to_set: &[u32],
    g: &GraphView,
    out_targets: &mut [u32],
    out_labels: &mut [u16],
) {
    let (targets, labels) = g.adj(dir).by_label(from[i], label);
    let mut k = 0;
    for (&w, &l) in targets.iter().zip(labels) {
        if bits::test(to_set, w) {
            out_targets[k] = w;
            out_labels[k] = l;
            k += 1;
        }
    }
}

/// A query edge between the node being added (`y`) and an earlier one.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Check {
    /// Row slot of the earlier endpoint; `NONE` for a self-loop on `y`.
    pub slot: u32,
    /// Direction seen from the earlier endpoint: `Out` is `earlier -> y`.
    pub dir: Dir,
    /// The fixed relation, or `NONE` for a variable edge.
    pub label: u32,
    /// Row slot of the edge variable (for a variable edge), else `NONE`.
    pub var: u32,
}

/// How a partial match grows by query node `y`.
#[derive(Clone, Copy, Debug)]
pub struct Step<'a> {
    /// The slot `y` fills; slots `0..slot` are the nodes matched so far (rows fill slots in order).
    pub slot: u32,
    /// Slots `0..nodes` are query nodes (checked for injectivity); the rest are edge variables.
    pub nodes: u32,
    pub injective: bool,
    /// Every query edge between `y` and earlier nodes, and `y`'s self-loops.
    pub checks: &'a [Check],
    /// The check whose list is scanned for `y`'s data node, or `NONE` when `y` starts a new connected
    /// component (then the list is `y`'s whole candidate array).
    pub pivot: u32,
    /// `y`'s candidate bitset.
    pub candidates: &'a [u32],
}

/// The relation to look up for check `c` given the row: its fixed label, its bound variable, or
/// `NONE` (any, to be bound).
#[inline]
pub fn check_label(c: &Check, row: &[u32]) -> u32 {
    if c.label != NONE {
        c.label
    } else {
        row[c.var as usize]
    }
}

/// The edge candidates of a pivot edge from data node `x`: `from` is the earlier endpoint's sorted
/// candidate array; `offsets` (one more than `from`), `targets` and `labels` the collected edge
/// candidates, keyed by the index in `from`. The warp-centric join scans this list.
pub fn edge_candidate_list<'a>(
    x: u32,
    from: &[u32],
    offsets: &[u64],
    targets: &'a [u32],
    labels: &'a [u16],
) -> (&'a [u32], &'a [u16]) {
    match from.binary_search(&x) {
        Ok(i) => {
            let (s, e) = (offsets[i] as usize, offsets[i + 1] as usize);
            (&targets[s..e], &labels[s..e])
        }
        Err(_) => (&[], &[]),
    }
}

/// Kernel body of combine: grows `row` by every data node for `y` found at positions
/// `lane, lane + lanes, ...` of the pivot list (`targets` with relations `labels`; `labels` may be
/// empty when the step has no pivot), calling `emit(y_node, edge_variable_slots)` for each extension.
/// `emit` returns whether to go on (a reached limit stops it). Returns the number emitted. The count
/// kernel passes an `emit` that only counts; the write kernel one that writes rows at the scanned
/// offset.
#[allow(clippy::too_many_arguments)]
pub fn extend(
    row: &[u32],
    lane: usize,
    lanes: usize,
    step: &Step,
    targets: &[u32],
    labels: &[u16],
    g: &GraphView,
    emit: &mut impl FnMut(u32, &[u32]) -> bool,
) -> u64 {
    let mut emitted = 0;
    let mut j = lane;
    while j < targets.len() {
        let (n, go_on) = extend_entry(row, j, step, targets, labels, g, emit);
        emitted += n;
        if !go_on {
            break;
        }
        j += lanes;
    }
    emitted
}

/// The extensions of `row` by entry `j` of the pivot list (see [`extend`]): none when the entry is
/// not a candidate of `y` or breaks injectivity, else one per binding of the step's edge
/// variables. Returns the number emitted and whether to go on.
#[inline]
pub fn extend_entry(
    row: &[u32],
    j: usize,
    step: &Step,
    targets: &[u32],
    labels: &[u16],
    g: &GraphView,
    emit: &mut impl FnMut(u32, &[u32]) -> bool,
) -> (u64, bool) {
    let nodes = step.nodes as usize;
    let vars = row.len() - nodes;
    let b = targets[j];
    if !bits::test(step.candidates, b) || (step.injective && row[..nodes].contains(&b)) {
        return (0, true);
    }
    let mut bound = [NONE; MAX_EDGE_VARIABLES];
    bound[..vars].copy_from_slice(&row[nodes..]);
    // A variable pivot edge: its relation is bound by the row, or by the list entry.
    if let Some(p) = step.checks.get(step.pivot as usize) {
        if p.label == NONE {
            let (v, label) = (p.var as usize - nodes, labels[j] as u32);
            if bound[v] == NONE {
                bound[v] = label;
            } else if bound[v] != label {
                return (0, true);
            }
        }
    }
    enumerate_bindings(row, b, step, &mut bound[..vars], g, emit)
}

/// Checks every non-pivot edge for `y = b`, enumerating relations for unbound edge variables
/// (each relation a separate solution, as in SPARQL), without recursion.
fn enumerate_bindings(
    row: &[u32],
    b: u32,
    step: &Step,
    bound: &mut [u32],
    g: &GraphView,
    emit: &mut impl FnMut(u32, &[u32]) -> bool,
) -> (u64, bool) {
    let nodes = step.nodes as usize;
    let endpoint = |c: &Check| {
        if c.slot == NONE {
            b
        } else {
            row[c.slot as usize]
        }
    };
    // Edges whose relation is known now are plain lookups: test them all first.
    let mut open = [0u8; MAX_CHECKS];
    let mut n_open = 0;
    for (k, c) in step.checks.iter().enumerate() {
        if k as u32 == step.pivot {
            continue;
        }
        let label = if c.label != NONE {
            c.label
        } else {
            bound[c.var as usize - nodes]
        };
        if label == NONE {
            open[n_open] = k as u8;
            n_open += 1;
        } else if !edge_exists(c, endpoint(c), b, label, g) {
            return (0, true);
        }
    }
    if n_open == 0 {
        return (1, emit(b, bound));
    }
    // Depth-first over the open variable edges: cursor[d] is the next position to try in the
    // earlier endpoint's list; a variable bound at an earlier depth is only checked.
    let mut cursor = [0u32; MAX_CHECKS];
    let mut binds = [false; MAX_CHECKS];
    let mut emitted = 0;
    let mut d = 0usize;
    loop {
        let c = &step.checks[open[d] as usize];
        let slot = c.var as usize - nodes;
        if binds[d] {
            bound[slot] = NONE;
            binds[d] = false;
        }
        let next = if bound[slot] != NONE {
            // Bound at a shallower depth: one choice, the bound relation.
            let ok = cursor[d] == 0 && edge_exists(c, endpoint(c), b, bound[slot], g);
            cursor[d] = 1;
            ok
        } else {
            match next_relation(c, endpoint(c), b, cursor[d], g) {
                Some((label, pos)) => {
                    bound[slot] = label;
                    binds[d] = true;
                    cursor[d] = pos + 1;
                    true
                }
                None => false,
            }
        };
        if next && d + 1 == n_open {
            emitted += 1;
            if !emit(b, bound) {
                return (emitted, false);
            }
        } else if next {
            d += 1;
            cursor[d] = 0;
            continue;
        } else {
            cursor[d] = 0;
            if d == 0 {
                return (emitted, true);
            }
            d -= 1;
        }
    }
}

/// Whether the query edge `c` holds between the earlier endpoint's node `x` and `b` with `label`.
#[inline]
fn edge_exists(c: &Check, x: u32, b: u32, label: u32, g: &GraphView) -> bool {
    match c.dir {
        Dir::Out => g.has_edge(x, label, b),
        Dir::In => g.has_edge(b, label, x),
    }
}

/// The next relation at or after position `from` of `x`'s list (in `c`'s direction) whose target is
/// `b`, with its position.
#[inline]
fn next_relation(c: &Check, x: u32, b: u32, from: u32, g: &GraphView) -> Option<(u32, u32)> {
    let (targets, labels) = g.adj(c.dir).list(x);
    let mut k = from as usize;
    while k < targets.len() {
        if targets[k] == b {
            return Some((labels[k] as u32, k as u32));
        }
        k += 1;
    }
    None
}

/// Kernel, count step of combine: how many rows `row` grows into over its lane's share.
pub fn count_extensions(
    row: &[u32],
    lane: usize,
    lanes: usize,
    step: &Step,
    targets: &[u32],
    labels: &[u16],
    g: &GraphView,
) -> u64 {
    extend(row, lane, lanes, step, targets, labels, g, &mut |_, _| true)
}

/// Kernel, write step of combine: writes the grown rows into `out` (exactly the counted number of
/// rows of `row.len()` slots, at this work-item's scanned offset).
#[allow(clippy::too_many_arguments)]
pub fn write_extensions(
    row: &[u32],
    lane: usize,
    lanes: usize,
    step: &Step,
    targets: &[u32],
    labels: &[u16],
    g: &GraphView,
    out: &mut [u32],
) {
    let width = row.len();
    let nodes = step.nodes as usize;
    let mut at = 0;
    extend(
        row,
        lane,
        lanes,
        step,
        targets,
        labels,
        g,
        &mut |b, bound| {
            let dst = &mut out[at..at + width];
            dst[..nodes].copy_from_slice(&row[..nodes]);
            dst[step.slot as usize] = b;
            dst[nodes..].copy_from_slice(bound);
            at += width;
            true
        },
    );
}

/// Where [`extend_warp`] puts what it finds: a shared counter of rows claimed (every extension is
/// claimed, written or not, so the host learns the level's size), and, when rows are wanted, a
/// writer of slot values.
pub struct Claims<'a, W: Fn(u64) -> &'a mut [u32]> {
    pub claimed: &'a AtomicU64,
    /// Rows the output holds; claims past it are counted, not written.
    pub capacity: u64,
    /// Stop once this many rows are claimed (LIMIT on the last level; `u64::MAX`: never).
    pub stop_at: u64,
    /// `row(r)`: output row `r` to write; `None` when only counting.
    pub row: Option<W>,
    /// The time limit: `clock[0]` is the launch's start (set by the first warp to look),
    /// `clock[1]` is set to 1 by a warp that stopped on it; `budget_ns` is `u64::MAX` without one.
    pub clock: &'a [AtomicU64],
    pub budget_ns: u64,
}

impl<'a, W: Fn(u64) -> &'a mut [u32]> Claims<'a, W> {
    /// Whether the launch has run past its time budget (then the stop is recorded).
    fn expired(&self) -> bool {
        crate::warp::clock::expired(self.clock, self.budget_ns)
    }

    /// Whether the level wants no more rows: its LIMIT's rows are claimed, or a warp stopped on
    /// the time limit. A look, for warps about to take another work-item.
    pub fn stopped(&self) -> bool {
        self.claimed.load(Ordering::Relaxed) >= self.stop_at
            || self
                .clock
                .get(1)
                .is_some_and(|f| f.load(Ordering::Relaxed) != 0)
    }
}

/// Kernel body of the warp-centric combine (one warp per parent row, every check a fixed relation
/// or a fixed self-loop): the candidates of `y` for `row` are the shortest of its backward edges'
/// candidate-edge lists (`list(check, x)`, sorted), filtered by membership in every other one; with
/// no backward edge, `all` (`y`'s candidates). The lanes take 32 entries at a time, a ballot says
/// which pass, one atomic add per warp claims their rows, and each lane writes its row at its rank:
/// one pass, no count-then-write.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn extend_warp<'l, 'o, W: Fn(u64) -> &'o mut [u32]>(
    warp: &impl Warp,
    row: &[u32],
    step: &Step,
    list: &impl Fn(usize, u32) -> &'l [u32],
    all: &'l [u32],
    g: &GraphView,
    out: &Claims<'o, W>,
    part: (usize, usize),
) {
    let slot = step.slot as usize;
    let (pivot, scan) = pivot(row, step, list, all);
    // This warp's part of the list: all of it, or one segment of a long one.
    let scan = &scan[part.0.min(scan.len())..part.1.min(scan.len())];
    let accepts = |b: u32| {
        if step.injective && row[..slot].contains(&b) {
            return false;
        }
        step.checks.iter().enumerate().all(|(k, c)| {
            k == pivot
                || if c.slot == NONE {
                    g.has_edge(b, c.label, b)
                } else {
                    list(k, row[c.slot as usize]).binary_search(&b).is_ok()
                }
        })
    };
    let mut base = 0;
    while base < scan.len() {
        if warp.leader(|| out.expired() as u64) != 0 {
            return;
        }
        let mask = warp.ballot(|l| {
            let j = base + l as usize;
            j < scan.len() && accepts(scan[j])
        });
        if mask != 0 {
            let n = mask.count_ones() as u64;
            let at = warp.leader(|| out.claimed.fetch_add(n, Ordering::Relaxed));
            if let Some(out_row) = &out.row {
                let chunk = &scan[base..];
                warp.each(|l| {
                    if mask >> l & 1 == 1 {
                        let r = at + rank_below(mask, l) as u64;
                        if r < out.capacity {
                            let dst = out_row(r);
                            dst.copy_from_slice(row);
                            dst[slot] = chunk[l as usize];
                        }
                    }
                });
            }
            if at + n >= out.stop_at {
                return;
            }
        }
        base += LANES as usize;
    }
}

/// Kernel body of the warp-centric combine for a step with an edge variable: the lanes take 32
/// entries of the pivot list at a time (`targets`, with relations `labels`), each lane counts the
/// rows its entry grows into (one per binding of the step's edge variables, [`extend_entry`]), a
/// warp scan ranks them, one atomic add per warp claims their rows, and each lane enumerates its
/// entry again to write its rows from its rank: the two-step output scheme inside the warp, so
/// the level needs no count launch, device scan, read or write launch, and queues as
/// [`extend_warp`] does (same [`Claims`]: capacity, LIMIT, clock).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn extend_warp_bindings<'o, W: Fn(u64) -> &'o mut [u32]>(
    warp: &impl Warp,
    row: &[u32],
    step: &Step,
    targets: &[u32],
    labels: &[u16],
    g: &GraphView,
    out: &Claims<'o, W>,
) {
    let mut base = 0;
    while base < targets.len() {
        if warp.leader(|| out.expired() as u64) != 0 {
            return;
        }
        let entry = |l: u32| base + l as usize;
        let (at, n) = warp.claim(
            |l| entry_rows(row, entry(l), step, targets, labels, g, out, None),
            |total| out.claimed.fetch_add(total, Ordering::Relaxed),
            |l, first| {
                if out.row.is_some() && first < out.capacity {
                    entry_rows(row, entry(l), step, targets, labels, g, out, Some(first));
                }
            },
        );
        if n > 0 && at + n >= out.stop_at {
            return;
        }
        base += LANES as usize;
    }
}

/// The rows `row` grows into by entry `j` of the pivot list (none past its end): counted, or with
/// `first` also written from row `first` on (those below `out.capacity`). Not inlined: the count
/// and the write pass share one copy of the enumeration and its fixed-size state.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn entry_rows<'o, W: Fn(u64) -> &'o mut [u32]>(
    row: &[u32],
    j: usize,
    step: &Step,
    targets: &[u32],
    labels: &[u16],
    g: &GraphView,
    out: &Claims<'o, W>,
    first: Option<u64>,
) -> u64 {
    if j >= targets.len() {
        return 0;
    }
    let (slot, nodes) = (step.slot as usize, step.nodes as usize);
    let mut r = first.unwrap_or(u64::MAX);
    let write = first.and(out.row.as_ref());
    extend_entry(row, j, step, targets, labels, g, &mut |b, bound| {
        if let Some(out_row) = write {
            if r < out.capacity {
                let dst = out_row(r);
                dst[..nodes].copy_from_slice(&row[..nodes]);
                dst[slot] = b;
                dst[nodes..].copy_from_slice(bound);
            }
            r += 1;
        }
        true
    })
    .0
}

/// The list [`extend_warp`] scans for `row`: the shortest of its backward edges' candidate-edge lists
/// (the check's index), or `all` with no backward edge (`NONE`).
#[inline]
pub fn pivot<'l>(
    row: &[u32],
    step: &Step,
    list: &impl Fn(usize, u32) -> &'l [u32],
    all: &'l [u32],
) -> (usize, &'l [u32]) {
    let mut pivot = NONE as usize;
    let mut scan = all;
    for (k, c) in step.checks.iter().enumerate() {
        if c.slot != NONE {
            let l = list(k, row[c.slot as usize]);
            if pivot == NONE as usize || l.len() < scan.len() {
                pivot = k;
                scan = l;
            }
        }
    }
    (pivot, scan)
}

/// The candidate-edge list of `x` (a candidate of the earlier endpoint, in `from`), without labels.
#[inline]
pub fn list_of<'a>(x: u32, from: &[u32], offsets: &[u64], targets: &'a [u32]) -> &'a [u32] {
    match from.binary_search(&x) {
        Ok(i) => &targets[offsets[i] as usize..offsets[i + 1] as usize],
        Err(_) => &[],
    }
}

/// Most lists one counted group meets (its query nodes' edges back to the enumerated nodes).
pub const MAX_GROUP_LISTS: usize = 8;

/// Most groups counted together as one linked component (injective only: their candidates may
/// meet, so they are not independent).
pub const MAX_LINKED_GROUPS: usize = 4;

/// Most query nodes of one linked component: its count sums over the set partitions of its nodes
/// (203 for 6), merged into [`LeafTerm`]s.
pub const MAX_LINKED_NODES: usize = 6;

/// Query nodes of one partial match counted together, not enumerated: `leaves` nodes with the very
/// same candidates, those in every one of `lists[..len]` (sorted lists of data nodes, each from
/// one of their matched neighbours). A leaf has one list; a node with all its neighbours matched
/// has one per edge. `linked`: counted with the group before it (their candidates may meet).
#[derive(Clone, Copy, Debug)]
pub struct LeafGroup<'a> {
    pub lists: [&'a [u32]; MAX_GROUP_LISTS],
    pub len: usize,
    pub leaves: u32,
    pub linked: bool,
}

impl<'a> LeafGroup<'a> {
    /// A group with the one list `list`, not linked.
    pub fn one(list: &'a [u32], leaves: u32) -> Self {
        let mut lists: [&[u32]; MAX_GROUP_LISTS] = [&[]; MAX_GROUP_LISTS];
        lists[0] = list;
        LeafGroup {
            lists,
            len: 1,
            leaves,
            linked: false,
        }
    }

    /// Whether `v` is in every list.
    fn contains(&self, v: u32) -> bool {
        self.lists[..self.len]
            .iter()
            .all(|l| l.binary_search(&v).is_ok())
    }

    /// How many data nodes are in every list.
    fn common(&self) -> u64 {
        if self.len == 1 {
            return self.lists[0].len() as u64;
        }
        let mut n = 0;
        self.for_each_common(|_| n += 1);
        n
    }

    /// Calls `f` on each data node in every list, ascending: the shortest list walked, the others
    /// searched from a cursor that only moves forward.
    fn for_each_common(&self, mut f: impl FnMut(u32)) {
        let lists = &self.lists[..self.len];
        let Some((first, _)) = lists.iter().enumerate().min_by_key(|(_, l)| l.len()) else {
            return;
        };
        let mut cursor = [0usize; MAX_GROUP_LISTS];
        'next: for &v in lists[first] {
            for (j, l) in lists.iter().enumerate() {
                if j == first {
                    continue;
                }
                let at = cursor[j] + l[cursor[j]..].partition_point(|&x| x < v);
                cursor[j] = at;
                if at == l.len() {
                    break 'next;
                }
                if l[at] != v {
                    continue 'next;
                }
            }
            f(v);
        }
    }
}

/// One term of a linked component's count: `coef` times the product, over `masks[..blocks]`, of
/// the free data nodes in the candidates of every group in the mask (bit `j`: the component's
/// `j`th group). Built by [`partition_terms`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LeafTerm {
    pub coef: i64,
    pub masks: [u8; 8],
    pub component: u32,
    pub blocks: u32,
}

/// Kernel body (one work-item per partial match): the matches of `groups`' nodes for `row`, as a
/// product instead of an enumeration. Under injective semantics the nodes take distinct data nodes
/// not already in the row (`row[..nodes]`): a group alone by falling factorials, groups linked
/// together (their candidates may meet) by the component's `terms`; otherwise any. `None` past
/// `u128::MAX`, or for a component of more than `MAX_LINKED_GROUPS` groups.
pub fn count_leaves<'a>(
    row: &[u32],
    nodes: usize,
    injective: bool,
    groups: impl Iterator<Item = LeafGroup<'a>>,
    terms: &[LeafTerm],
) -> Option<u128> {
    let used = &row[..nodes.min(row.len())];
    let mut linked = [LeafGroup::one(&[], 0); MAX_LINKED_GROUPS];
    let (mut m, mut component, mut product) = (0, 0u32, 1u128);
    let mut groups = groups.peekable();
    while let Some(g) = groups.next() {
        *linked.get_mut(m)? = g;
        m += 1;
        if groups.peek().is_some_and(|next| next.linked) {
            continue;
        }
        let ways = match &linked[..m] {
            [g] if injective => {
                let taken = used.iter().filter(|&&v| v != NONE && g.contains(v)).count();
                falling(g.common().saturating_sub(taken as u64), g.leaves as u64)?
            }
            [g] => (g.common() as u128).checked_pow(g.leaves)?,
            all => linked_ways(used, all, terms.iter().filter(|t| t.component == component))?,
        };
        if ways == 0 {
            return Some(0);
        }
        product = product.checked_mul(ways)?;
        (m, component) = (0, component + 1);
    }
    Some(product)
}

/// Injective matches of linked groups: per membership mask the free data nodes (walked once per
/// group, each counted with the first group holding it, the row's own taken out), then per mask
/// those in all its groups (sums over supersets), then the terms' sum. Signed terms summed as two
/// `u128`s (the host bounds both below `2^127`).
fn linked_ways<'t>(
    used: &[u32],
    groups: &[LeafGroup],
    terms: impl Iterator<Item = &'t LeafTerm>,
) -> Option<u128> {
    let m = groups.len();
    let mut free = [0u64; 1 << MAX_LINKED_GROUPS];
    let holders = |v: u32| {
        groups
            .iter()
            .enumerate()
            .filter(|(_, g)| g.contains(v))
            .fold(0usize, |mask, (h, _)| mask | 1 << h)
    };
    for (j, g) in groups.iter().enumerate() {
        g.for_each_common(|v| {
            let mask = holders(v);
            if mask & ((1 << j) - 1) == 0 {
                free[mask] += 1;
            }
        });
    }
    for &v in used.iter().filter(|&&v| v != NONE) {
        let mask = holders(v);
        free[mask] = free[mask].saturating_sub((mask != 0) as u64);
    }
    for bit in 0..m {
        for mask in 0..1usize << m {
            if mask & 1 << bit == 0 {
                free[mask] += free[mask | 1 << bit];
            }
        }
    }
    let (mut plus, mut minus) = (0u128, 0u128);
    for t in terms {
        let mut p = u128::from(t.coef.unsigned_abs());
        for &mask in &t.masks[..(t.blocks as usize).min(8)] {
            p = p.checked_mul(u128::from(free[mask as usize & 0xf]))?;
        }
        if t.coef < 0 {
            minus = minus.checked_add(p)?;
        } else {
            plus = plus.checked_add(p)?;
        }
    }
    plus.checked_sub(minus)
}

/// The terms of the injective count of one linked component whose query node `i` is in group
/// `group_of[i]` (at most `MAX_LINKED_NODES` nodes, groups below `MAX_LINKED_GROUPS`): the
/// number of ways to give the nodes distinct data nodes, node `i` one of its group's set `A_g`, is
/// the sum over the set partitions `P` of the nodes of the product, over the blocks `b` of `P`, of
/// `(-1)^(|b|-1) (|b|-1)! |A_b|`, `A_b` the intersection of the sets of `b`'s groups (Möbius
/// inversion on the partition lattice: `|A|^2 - |A|` for two nodes of one group). Partitions with
/// the same blocks' masks are merged, zero terms dropped. Writes them to `out` (tagged
/// `component`) and returns how many; `None` if `out` is too short or the component too large.
pub fn partition_terms(group_of: &[u8], component: u32, out: &mut [LeafTerm]) -> Option<usize> {
    let k = group_of.len();
    if k > MAX_LINKED_NODES || group_of.iter().any(|&g| g as usize >= MAX_LINKED_GROUPS) {
        return None;
    }
    let mut n = 0;
    // Restricted growth strings: `block[i]` at most one above the largest before it.
    let mut block = [0u8; MAX_LINKED_NODES];
    loop {
        let mut t = LeafTerm {
            coef: 1,
            component,
            ..LeafTerm::default()
        };
        let mut sizes = [0i64; MAX_LINKED_NODES];
        for i in 0..k {
            let b = block[i] as usize;
            t.masks[b] |= 1 << group_of[i];
            sizes[b] += 1;
            t.blocks = t.blocks.max(b as u32 + 1);
        }
        for &s in sizes.iter().filter(|&&s| s > 1) {
            t.coef *= -(1..s).product::<i64>() * if s % 2 == 0 { 1 } else { -1 };
        }
        t.masks[..t.blocks as usize].sort_unstable();
        match out[..n]
            .iter_mut()
            .find(|o| o.blocks == t.blocks && o.masks == t.masks)
        {
            Some(o) => o.coef += t.coef,
            None => {
                *out.get_mut(n)? = t;
                n += 1;
            }
        }
        if !next_partition(&mut block[..k]) {
            break;
        }
    }
    let mut kept = 0;
    for i in 0..n {
        if out[i].coef != 0 {
            out[kept] = out[i];
            kept += 1;
        }
    }
    Some(kept)
}

/// The next restricted growth string after `block` (false after the last, all distinct).
fn next_partition(block: &mut [u8]) -> bool {
    for i in (1..block.len()).rev() {
        let top = block[..i].iter().copied().max().unwrap_or(0);
        if block[i] <= top {
            block[i] += 1;
            for b in &mut block[i + 1..] {
                *b = 0;
            }
            return true;
        }
    }
    false
}

/// `n (n - 1) ... (n - k + 1)`; `None` past `u128::MAX`.
fn falling(n: u64, k: u64) -> Option<u128> {
    if k > n {
        return Some(0);
    }
    (0..k).try_fold(1u128, |a, j| a.checked_mul((n - j) as u128))
}

/// Adds `n` to the `u128` held as two `u64` words (`lo`, `hi`) by atomic adds: the carry out of the
/// low word is added to the high one by the thread whose add wrapped it. Returns false when the
/// total passes `u128::MAX`.
pub fn add_u128(lo: &AtomicU64, hi: &AtomicU64, n: u128) -> bool {
    let (low, high) = (n as u64, (n >> 64) as u64);
    let old = lo.fetch_add(low, Ordering::Relaxed);
    let carry = old.checked_add(low).is_none() as u64;
    let Some(add) = high.checked_add(carry) else {
        return false;
    };
    if add == 0 {
        return true;
    }
    hi.fetch_add(add, Ordering::Relaxed)
        .checked_add(add)
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every injective (or any) choice of nodes for `groups`' leaves, avoiding the row under iso.
    fn brute(row: &[u32], groups: &[(&[u32], u32)], injective: bool) -> u128 {
        fn go(row: &mut [u32; 16], at: usize, lists: &[&[u32]], injective: bool) -> u128 {
            let Some((l, rest)) = lists.split_first() else {
                return 1;
            };
            let mut n = 0;
            for &v in l.iter() {
                if !injective || !row[..at].contains(&v) {
                    row[at] = v;
                    n += go(row, at + 1, rest, injective);
                }
            }
            n
        }
        let mut lists: [&[u32]; 8] = [&[]; 8];
        let mut k = 0;
        for &(l, leaves) in groups {
            for _ in 0..leaves {
                lists[k] = l;
                k += 1;
            }
        }
        let mut buf = [NONE; 16];
        buf[..row.len()].copy_from_slice(row);
        go(&mut buf, row.len(), &lists[..k], injective)
    }

    #[test]
    fn leaf_products_equal_enumeration() {
        let row = [3, 7, NONE];
        let cases: [&[(&[u32], u32)]; 4] = [
            &[(&[1, 2, 3, 4, 5], 3)],
            &[(&[1, 3, 7], 2), (&[10, 11], 1)],
            &[(&[7], 1)],
            &[(&[2, 4, 6, 8], 2), (&[20, 21, 22], 2), (&[30], 1)],
        ];
        for groups in cases {
            for injective in [true, false] {
                let it = groups
                    .iter()
                    .map(|&(list, leaves)| LeafGroup::one(list, leaves));
                let counted = count_leaves(&row, 2, injective, it, &[]);
                assert_eq!(
                    counted,
                    Some(brute(&row[..2], groups, injective)),
                    "{groups:?}"
                );
            }
        }
        // Past u128::MAX: no count (the kernel raises its overflow flag).
        static WIDE: [u32; 70_000] = {
            let mut a = [0u32; 70_000];
            let mut i = 0;
            while i < a.len() {
                a[i] = i as u32 + 100;
                i += 1;
            }
            a
        };
        let wide = [LeafGroup::one(&WIDE, 8)];
        assert_eq!(count_leaves(&row, 2, true, wide.into_iter(), &[]), None);
    }

    /// A group's candidates are the data nodes in all its lists: the same counts as the group
    /// with their intersection as its one list.
    #[test]
    fn a_group_of_several_lists_counts_their_intersection() {
        let row = [3, 7, 12, NONE];
        let a: &[u32] = &[1, 3, 4, 7, 9, 12, 15, 20];
        let b: &[u32] = &[0, 3, 4, 5, 9, 12, 20, 21];
        let c: &[u32] = &[3, 4, 9, 12, 13, 20];
        let meet: &[u32] = &[3, 4, 9, 12, 20];
        // Independent of the first group (no common candidate), as the caller guarantees.
        let other: &[u32] = &[2, 5, 6, 7];
        for leaves in 1..=3 {
            for injective in [true, false] {
                let mut g = LeafGroup::one(a, leaves);
                (g.lists[1], g.lists[2], g.len) = (b, c, 3);
                let groups = [g, LeafGroup::one(other, 1)];
                let counted = count_leaves(&row, 3, injective, groups.into_iter(), &[]);
                let expected = brute(&row[..3], &[(meet, leaves), (other, 1)], injective);
                assert_eq!(counted, Some(expected), "{leaves} {injective}");
            }
        }
        // Lists with nothing in common, one list empty.
        let mut g = LeafGroup::one(&[1, 2], 1);
        (g.lists[1], g.len) = (&[3, 4], 2);
        assert_eq!(count_leaves(&row, 3, true, [g].into_iter(), &[]), Some(0));
        (g.lists[1], g.len) = (&[], 2);
        assert_eq!(count_leaves(&row, 3, false, [g].into_iter(), &[]), Some(0));
    }

    /// Groups whose candidates meet, linked: the same count as enumerating every injective choice,
    /// over random lists, group sizes and rows, with an independent group beside them.
    #[test]
    fn linked_groups_count_their_injective_choices() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |bound: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % bound
        };
        let mut terms = [LeafTerm::default(); 256];
        let mut storage = [[0u32; 12]; MAX_LINKED_GROUPS];
        for case in 0..400 {
            let m = 2 + next(3) as usize;
            let mut lens = [0usize; MAX_LINKED_GROUPS];
            for (j, list) in storage.iter_mut().enumerate().take(m) {
                for v in 0..12u32 {
                    if next(3) > 0 {
                        list[lens[j]] = v;
                        lens[j] += 1;
                    }
                }
            }
            // Nodes per group, at most MAX_LINKED_NODES - 1 in all (the other group has one).
            let mut leaves = [1u32; MAX_LINKED_GROUPS];
            let mut total = m;
            while total < MAX_LINKED_NODES - 1 && next(2) == 0 {
                leaves[next(m as u64) as usize] += 1;
                total += 1;
            }
            let row = [next(14) as u32, 20, NONE];
            let mut group_of = [0u8; MAX_LINKED_NODES];
            let mut k = 0;
            for (j, &l) in leaves.iter().enumerate().take(m) {
                for _ in 0..l {
                    group_of[k] = j as u8;
                    k += 1;
                }
            }
            let n = partition_terms(&group_of[..k], 0, &mut terms).unwrap();
            let other: &[u32] = &[20, 30, 31];
            let mut groups = [LeafGroup::one(&[], 0); MAX_LINKED_GROUPS + 1];
            let mut expected_groups = [(&[][..], 0u32); MAX_LINKED_GROUPS + 1];
            for j in 0..m {
                groups[j] = LeafGroup::one(&storage[j][..lens[j]], leaves[j]);
                groups[j].linked = j > 0;
                expected_groups[j] = (&storage[j][..lens[j]], leaves[j]);
            }
            groups[m] = LeafGroup::one(other, 1);
            expected_groups[m] = (other, 1);
            // The independent group is component 1: its terms are none (a falling factorial).
            let counted = count_leaves(&row, 2, true, groups[..=m].iter().copied(), &terms[..n]);
            let expected = brute(&row[..2], &expected_groups[..=m], true);
            assert_eq!(
                counted,
                Some(expected),
                "case {case}: {expected_groups:?} row {row:?}"
            );
        }
    }

    #[test]
    fn partition_terms_of_one_group_are_the_falling_factorial() {
        // k nodes of one group: sum of s(k, j) |A|^j, Stirling numbers of the first kind.
        let mut terms = [LeafTerm::default(); 256];
        let n = partition_terms(&[0, 0, 0], 0, &mut terms).unwrap();
        let mut by_blocks: [i64; 4] = [0; 4];
        for t in &terms[..n] {
            by_blocks[t.blocks as usize] += t.coef;
        }
        assert_eq!(by_blocks, [0, 2, -3, 1]);
        // Too many nodes, or too little room: no terms.
        assert_eq!(partition_terms(&[0; 7], 0, &mut terms), None);
        assert_eq!(partition_terms(&[0, 1, 2, 3], 0, &mut terms[..3]), None);
    }

    #[test]
    fn u128_totals_carry_and_overflow() {
        let (lo, hi) = (AtomicU64::new(u64::MAX - 1), AtomicU64::new(0));
        assert!(add_u128(&lo, &hi, 3));
        assert_eq!((lo.into_inner(), hi.load(Ordering::Relaxed)), (1, 1));
        let (lo, hi) = (AtomicU64::new(0), AtomicU64::new(u64::MAX));
        assert!(add_u128(&lo, &hi, 5));
        assert!(!add_u128(&lo, &hi, 1 << 64));
    }
}

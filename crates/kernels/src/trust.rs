//! TruST kernel bodies (inexact subgraph matching, paper `002`): the per-pair work of its three
//! phases, as `no_std` functions over slices and scalars that never allocate (scratch space comes
//! from the caller), so the CPU executor runs them now and a GPU launch can later.
//!
//! - Names: [`levenshtein_bounded`] and [`similarity_at_least`] compare two names given as Unicode
//!   code points (one work-item per template node / data node pair).
//! - One-hop score: [`one_hop`] mixes the name similarity of a (template node, data node) pair with
//!   the value of a maximum-weight bipartite matching between their incident edges, computed
//!   exactly by the Hungarian (Kuhn-Munkres) method in [`max_weight_assignment`].
//! - Tree traversal: a level's [`Judge`] grows one beam-search branch by one template node
//!   ([`Judge::extend_branch`]), emitting every injective, topology-respecting extension with its
//!   score increment; [`Judge::extend_top`] keeps the best of them, and [`Judge::extend_top_warp`]
//!   does the same with a warp, 32 candidates at once. The next beam is chosen among the branches'
//!   children on the device too ([`rank_rooms`], [`RunsView`]).
//!
//! Scoring (all scores lie in `[0, 1]`):
//! - `S(t, d)`: `1 - lev(t, d) / max(|t|, |d|)` over code points, `0` below the threshold; `1` for a
//!   variable template node.
//! - Pair weight of a template edge `(t, t', dir, rel)` and a data edge `(d, d', dir', rel')` at `t`
//!   and `d`: `0` unless `dir == dir'`; otherwise `S(t', d') * (1 - b + b * [rel matches rel'])`
//!   with `b` the relation weight (a variable relation always matches).
//! - `W(t, d)`: the best assignment of `t`'s incident template edges to distinct incident data edges
//!   of `d`, divided by the template degree of `t` (`1` when `t` has no edges).
//! - `OH(t, d) = a * S(t, d) + (1 - a) * W(t, d)`.
//! - Edge agreement `E(u -rel-> v)` of a matching `m`: `1` when `m(u) -rel-> m(v)` is a data edge
//!   (any relation for a variable one), `1 - b` when only other relations join them in that
//!   direction, `0` otherwise.
//! - A matching's score: `(sum over template nodes of OH + sum over template edges of E) / (|V| + |E|)`.
//!   It is `1` exactly when every name is equal and every template edge is present with its
//!   relation: an exact (non-induced, injective) embedding.

use crate::abi::DevSlice;
use crate::view::{Adjacency, Dir, GraphView};
use crate::warp::{Warp, LANES};
use crate::NONE;

/// A template edge without a fixed relation (`?r`): any data relation matches it.
pub const ANY_RELATION: u32 = NONE;
/// A template relation that the data graph does not have: it never earns the relation bonus.
pub const ABSENT_RELATION: u32 = NONE - 1;
/// The most incident edges (both directions, a self-loop counting twice) of one template node: the
/// bound on the one-hop scratch space.
pub const MAX_TEMPLATE_DEGREE: usize = 32;

/// The two weights of the scoring formula.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scoring {
    /// `a`: the share of the name similarity in the one-hop score (the rest is the neighbourhood).
    pub alpha: f32,
    /// `b`: the share of a neighbour pair's or an edge's score that needs the relation to match.
    pub relation_weight: f32,
}

impl Scoring {
    /// The factor a pair of edges in the same direction gets: `1` when the relations agree (or the
    /// template's is a variable), `1 - b` otherwise.
    #[inline]
    pub fn relation_factor(&self, wanted: u32, found: u16) -> f32 {
        if wanted == ANY_RELATION || wanted == found as u32 {
            1.0
        } else {
            1.0 - self.relation_weight
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Names

/// Edit distance between `a` and `b` (code points; unit costs) in its optimal-string-alignment form:
/// insertions, deletions, substitutions and transpositions of two adjacent characters each cost 1
/// (Damerau's restricted distance), so the commonest typo, two letters swapped, is one edit
/// (`pioson` is 1 from `poison`, 2 from `person`). Returns `max + 1` as soon as the distance is
/// certain to exceed `max`. `row` needs `2 * (b.len() + 1)` slots (two rows of the table).
/// O(|a| |b|) at worst; it stops once two consecutive rows exceed `max`, since a transposition
/// reaches back two rows.
pub fn levenshtein_bounded(a: &[u32], b: &[u32], max: u32, row: &mut [u32]) -> u32 {
    let over = max.saturating_add(1);
    if a.len().abs_diff(b.len()) as u64 > max as u64 {
        return over;
    }
    let n = b.len() + 1;
    // `r1`: row i - 1 of the table; `r2`: row i - 2, overwritten by row i (then they swap).
    let (mut r1, mut r2) = row[..2 * n].split_at_mut(n);
    for (j, r) in r1.iter_mut().enumerate() {
        *r = j as u32;
    }
    let mut prev_best = 0;
    for (i, &ca) in a.iter().enumerate() {
        // Row i - 2's values at j - 2 and j - 1, kept as the row is overwritten.
        let (mut old_jm2, mut old_jm1) = (0, r2[0]);
        r2[0] = i as u32 + 1;
        let mut best = r2[0];
        for j in 1..n {
            let cb = b[j - 1];
            let old_j = r2[j];
            let mut v = (r1[j - 1] + (ca != cb) as u32)
                .min(r1[j] + 1)
                .min(r2[j - 1] + 1);
            if i > 0 && j > 1 && ca == b[j - 2] && a[i - 1] == cb {
                v = v.min(old_jm2 + 1);
            }
            r2[j] = v;
            best = best.min(v);
            (old_jm2, old_jm1) = (old_jm1, old_j);
        }
        core::mem::swap(&mut r1, &mut r2);
        if best > max && prev_best > max {
            return over;
        }
        prev_best = best;
    }
    if r1[b.len()] > max {
        over
    } else {
        r1[b.len()]
    }
}

/// The largest edit distance that keeps `1 - dist / longest` at or above `threshold`.
#[inline]
pub fn max_distance(longest: usize, threshold: f32) -> u32 {
    // The small slack absorbs rounding (0.3 * 10 is 2.9999998 in f32).
    let d = (1.0 - threshold) * longest as f32 + 1e-4;
    if d <= 0.0 {
        0
    } else {
        d as u32
    }
}

/// Normalised similarity `1 - d(a, b) / max(|a|, |b|)` (`d`: [`levenshtein_bounded`]) when it is at
/// least `threshold`, else `0`. Two empty names are identical (`1`). `row` needs `2 * (b.len() + 1)`
/// slots.
pub fn similarity_at_least(a: &[u32], b: &[u32], threshold: f32, row: &mut [u32]) -> f32 {
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    let max = max_distance(longest, threshold);
    let d = levenshtein_bounded(a, b, max, row);
    if d > max {
        0.0
    } else {
        1.0 - d as f32 / longest as f32
    }
}

/// The longest pattern the bit-parallel distance handles (one machine word).
pub const PATTERN_BITS: usize = 64;

/// A name prepared for the bit-parallel distance: for each character, the bit mask of its positions
/// (Myers 1999). ASCII characters are looked up in a table; others in a short list.
#[derive(Clone, Copy, Debug)]
pub struct Pattern<'a> {
    /// Mask per ASCII character (128 entries).
    pub ascii: &'a [u64],
    /// Distinct non-ASCII characters of the pattern and their masks.
    pub other_chars: &'a [u32],
    pub other_masks: &'a [u64],
    /// Pattern length (at most [`PATTERN_BITS`]).
    pub len: usize,
}

impl Pattern<'_> {
    #[inline]
    fn mask(&self, c: u32) -> u64 {
        if c < 128 {
            return self.ascii[c as usize];
        }
        for (i, &o) in self.other_chars.iter().enumerate() {
            if o == c {
                return self.other_masks[i];
            }
        }
        0
    }
}

/// Fills a [`Pattern`]'s tables for `query` (at most [`PATTERN_BITS`] code points): `ascii` has 128
/// slots, `other_chars`/`other_masks` room for `query.len()`. Returns the number of non-ASCII
/// characters used.
pub fn build_pattern(
    query: &[u32],
    ascii: &mut [u64],
    other_chars: &mut [u32],
    other_masks: &mut [u64],
) -> usize {
    ascii.iter_mut().for_each(|m| *m = 0);
    let mut others = 0;
    for (i, &c) in query.iter().enumerate() {
        let bit = 1u64 << i;
        if c < 128 {
            ascii[c as usize] |= bit;
            continue;
        }
        match other_chars[..others].iter().position(|&o| o == c) {
            Some(k) => other_masks[k] |= bit,
            None => {
                other_chars[others] = c;
                other_masks[others] = bit;
                others += 1;
            }
        }
    }
    others
}

/// The distance of [`levenshtein_bounded`] (transpositions included) between a pattern and `text`,
/// by the bit-parallel method of Myers (1999) in Hyyrö's form for the global distance, with Hyyrö's
/// (2003) extension to transpositions: one pass of a few word operations per text character.
pub fn levenshtein_bits(p: &Pattern, text: &[u32]) -> u32 {
    let m = p.len;
    if m == 0 {
        return text.len() as u32;
    }
    let last = 1u64 << (m - 1);
    let (mut pv, mut mv) = (u64::MAX, 0u64);
    let (mut d0, mut prev_eq) = (0u64, 0u64);
    let mut score = m as u32;
    for &c in text {
        let eq = p.mask(c);
        // A transposition: this character matches one position on, the previous one here.
        let tr = ((!d0 & eq) << 1) & prev_eq;
        d0 = ((eq & pv).wrapping_add(pv) ^ pv) | eq | mv | tr;
        let mut ph = mv | !(d0 | pv);
        let mut mh = pv & d0;
        if ph & last != 0 {
            score += 1;
        } else if mh & last != 0 {
            score -= 1;
        }
        // Row 0 of the table is 0, 1, 2, ...: every horizontal step there is +1.
        ph = (ph << 1) | 1;
        mh <<= 1;
        pv = mh | !(d0 | ph);
        mv = ph & d0;
        prev_eq = eq;
    }
    score
}

/// Kernel: the similarity of a pattern (a template name) and data name `ids[i]` (see
/// [`similarity_item`] for the name layout), `0` below `threshold`.
pub fn similarity_bits_item(
    i: usize,
    p: &Pattern,
    ids: &[u32],
    chars: &[u32],
    ends: &[u32],
    threshold: f32,
) -> f32 {
    let k = ids[i] as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] as usize };
    let text = &chars[start..ends[k] as usize];
    let longest = p.len.max(text.len());
    if longest == 0 {
        return 1.0;
    }
    let max = max_distance(longest, threshold);
    if p.len.abs_diff(text.len()) as u64 > max as u64 {
        return 0.0;
    }
    let d = levenshtein_bits(p, text);
    if d > max {
        0.0
    } else {
        1.0 - d as f32 / longest as f32
    }
}

/// Kernel: the similarity of `query` and data name `ids[i]`, names given as code points in `chars`
/// with name `k` at `chars[ends[k - 1]..ends[k]]` (from 0 for `k = 0`).
pub fn similarity_item(
    i: usize,
    query: &[u32],
    ids: &[u32],
    chars: &[u32],
    ends: &[u32],
    threshold: f32,
    row: &mut [u32],
) -> f32 {
    let k = ids[i] as usize;
    let start = if k == 0 { 0 } else { ends[k - 1] as usize };
    similarity_at_least(query, &chars[start..ends[k] as usize], threshold, row)
}

// ---------------------------------------------------------------------------------------------
// One-hop score

/// The template as kernels see it: per template node, its incident edges ("entries"), in CSR form.
/// A template edge `u -> v` is an `Out` entry of `u` and an `In` entry of `v`.
#[derive(Clone, Copy, Debug)]
pub struct TemplateView<'a> {
    /// `nodes + 1` offsets into the entry arrays.
    pub offsets: &'a [u32],
    /// The other endpoint of each entry.
    pub others: &'a [u32],
    /// Direction seen from the node: `Out` is `node -> other`.
    pub dirs: &'a [Dir],
    /// The data relation id, [`ANY_RELATION`] or [`ABSENT_RELATION`].
    pub relations: &'a [u32],
}

impl TemplateView<'_> {
    #[inline]
    pub fn node_count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    #[inline]
    pub fn entries(&self, t: u32) -> (usize, usize) {
        (
            self.offsets[t as usize] as usize,
            self.offsets[t as usize + 1] as usize,
        )
    }
}

/// Scratch sizes (`f32` slots, `u32` slots) that [`one_hop`] needs for template degree `k`.
pub const fn hop_scratch_len(k: usize) -> (usize, usize) {
    let m = if k * k > k { k * k } else { k };
    // f32: top weights k*k, cost k*m, u k+1, v m+1, minv m+1.
    // u32: top columns k*k, top lengths k, columns m, p m+1, way m+1, used m+1.
    (
        k * k + k * m + (k + 1) + 2 * (m + 1),
        k * k + k + m + 3 * (m + 1),
    )
}

/// The data edges at one node as columns: `(direction, other endpoint, relation)` of column `c`,
/// where columns `0..E` are outgoing CSR positions and `E..2E` incoming ones.
#[inline]
fn column(g: &GraphView, c: u32) -> (Dir, u32, u16) {
    let e = g.out.targets.len() as u32;
    if c < e {
        (
            Dir::Out,
            g.out.targets[c as usize],
            g.out.labels[c as usize],
        )
    } else {
        let p = (c - e) as usize;
        (Dir::In, g.inc.targets[p], g.inc.labels[p])
    }
}

/// The weight of template entry `r` against a data edge, as in the module's formula.
#[inline]
#[allow(clippy::too_many_arguments)]
fn pair_weight(
    tpl: &TemplateView,
    r: usize,
    sim: &[f32],
    nt: usize,
    dir: Dir,
    other: u32,
    rel: u16,
    scoring: &Scoring,
) -> f32 {
    if tpl.dirs[r] != dir {
        return 0.0;
    }
    let s = sim[other as usize * nt + tpl.others[r] as usize];
    if s <= 0.0 {
        return 0.0;
    }
    s * scoring.relation_factor(tpl.relations[r], rel)
}

/// Kernel: `OH(t, d)` (see the module documentation). `sim` is the similarity table, row-major
/// `data nodes x template nodes`: the similarities of one data node to all template nodes share a
/// cache line, which is what the neighbour scan reads (one miss per data edge, not one per pair).
/// The scratch slices need [`hop_scratch_len`] of `t`'s degree.
#[allow(clippy::too_many_arguments)]
pub fn one_hop(
    t: u32,
    d: u32,
    tpl: &TemplateView,
    sim: &[f32],
    g: &GraphView,
    scoring: &Scoring,
    scratch_f: &mut [f32],
    scratch_u: &mut [u32],
) -> f32 {
    let s = sim[d as usize * tpl.node_count() + t as usize];
    let (a, b) = tpl.entries(t);
    let w = if a == b {
        // Nothing in the template's neighbourhood can disagree.
        1.0
    } else {
        neighbourhood_match(t, d, tpl, sim, g, scoring, scratch_f, scratch_u) / (b - a) as f32
    };
    scoring.alpha * s + (1.0 - scoring.alpha) * w
}

/// The value of a maximum-weight matching between `t`'s template entries and `d`'s data edges.
///
/// Exact, and cheap on hubs: each row (template entry) keeps only its `k` best columns (data
/// edges), `k` the number of rows. That loses nothing: if an optimal assignment gave row `r` a
/// column outside its `k` best, one of those `k` is free (the other `k - 1` rows hold at most
/// `k - 1` columns) and at least as heavy, so swapping keeps it optimal.
#[allow(clippy::too_many_arguments)]
fn neighbourhood_match(
    t: u32,
    d: u32,
    tpl: &TemplateView,
    sim: &[f32],
    g: &GraphView,
    scoring: &Scoring,
    scratch_f: &mut [f32],
    scratch_u: &mut [u32],
) -> f32 {
    let (a, b) = tpl.entries(t);
    let k = b - a;
    let m_cap = if k * k > k { k * k } else { k };
    let (top_w, rest_f) = scratch_f.split_at_mut(k * k);
    let (top_c, rest_u) = scratch_u.split_at_mut(k * k);
    let (top_n, rest_u) = rest_u.split_at_mut(k);
    let (cols, rest_u) = rest_u.split_at_mut(m_cap);
    top_n.iter_mut().for_each(|n| *n = 0);
    let nt = tpl.node_count();
    let e = g.out.targets.len() as u32;
    for (dir, adj, base) in [(Dir::Out, &g.out, 0u32), (Dir::In, &g.inc, e)] {
        let (s, end) = adj.range(d);
        for pos in s..end {
            let (other, rel) = (adj.targets[pos], adj.labels[pos]);
            for r in 0..k {
                let w = pair_weight(tpl, a + r, sim, nt, dir, other, rel, scoring);
                if w > 0.0 {
                    keep_best(
                        &mut top_w[r * k..(r + 1) * k],
                        &mut top_c[r * k..(r + 1) * k],
                        &mut top_n[r],
                        w,
                        base + pos as u32,
                    );
                }
            }
        }
    }
    if let Some(sum) = distinct_row_maxima(top_w, top_c, top_n, k) {
        return sum;
    }
    // Union of the kept columns, sorted and deduplicated (insertion sort: at most k*k entries).
    let mut n = 0;
    for r in 0..k {
        for &c in &top_c[r * k..r * k + top_n[r] as usize] {
            cols[n] = c;
            n += 1;
        }
    }
    let ncols = sort_dedup(&mut cols[..n]);
    let m = if ncols > k { ncols } else { k };
    let (cost, rest_f) = rest_f.split_at_mut(k * m);
    for r in 0..k {
        for j in 0..m {
            let w = if j < ncols {
                let (dir, other, rel) = column(g, cols[j]);
                pair_weight(tpl, a + r, sim, nt, dir, other, rel, scoring)
            } else {
                0.0
            };
            cost[r * m + j] = -w;
        }
    }
    -min_cost_assignment(cost, k, m, rest_f, rest_u)
}

/// Inserts `(w, c)` into a row's list of its `k` heaviest columns (unsorted, `len` used).
#[inline]
fn keep_best(ws: &mut [f32], cs: &mut [u32], len: &mut u32, w: f32, c: u32) {
    let n = *len as usize;
    if n < ws.len() {
        ws[n] = w;
        cs[n] = c;
        *len += 1;
        return;
    }
    let mut lightest = 0;
    for i in 1..n {
        if ws[i] < ws[lightest] {
            lightest = i;
        }
    }
    if w > ws[lightest] {
        ws[lightest] = w;
        cs[lightest] = c;
    }
}

/// When every row's heaviest column is different, taking them all is optimal: the sum.
fn distinct_row_maxima(top_w: &[f32], top_c: &[u32], top_n: &[u32], k: usize) -> Option<f32> {
    let mut sum = 0.0;
    for r in 0..k {
        let Some((w, c)) = row_max(top_w, top_c, top_n, k, r) else {
            continue;
        };
        for r2 in 0..r {
            if row_max(top_w, top_c, top_n, k, r2).is_some_and(|(_, c2)| c2 == c) {
                return None;
            }
        }
        sum += w;
    }
    Some(sum)
}

#[inline]
fn row_max(top_w: &[f32], top_c: &[u32], top_n: &[u32], k: usize, r: usize) -> Option<(f32, u32)> {
    let mut best: Option<(f32, u32)> = None;
    for i in r * k..r * k + top_n[r] as usize {
        if best.is_none_or(|(w, _)| top_w[i] > w) {
            best = Some((top_w[i], top_c[i]));
        }
    }
    best
}

/// Sorts a small slice in place and removes repeats; returns the new length.
fn sort_dedup(xs: &mut [u32]) -> usize {
    for i in 1..xs.len() {
        let mut j = i;
        while j > 0 && xs[j - 1] > xs[j] {
            xs.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut n = 0;
    for i in 0..xs.len() {
        if n == 0 || xs[n - 1] != xs[i] {
            xs[n] = xs[i];
            n += 1;
        }
    }
    n
}

/// Maximum-weight assignment: the largest total of `weights` (row-major `rows x cols`, all
/// non-negative, `rows <= cols`) over assignments of every row to a distinct column. With
/// non-negative weights this is also the maximum-weight matching (a zero-weight pair is as good as
/// none). Scratch sizes: [`assignment_scratch_len`].
pub fn max_weight_assignment(
    weights: &[f32],
    rows: usize,
    cols: usize,
    scratch_f: &mut [f32],
    scratch_u: &mut [u32],
) -> f32 {
    let (cost, rest) = scratch_f.split_at_mut(rows * cols);
    for (c, &w) in cost.iter_mut().zip(weights) {
        *c = -w;
    }
    -min_cost_assignment(cost, rows, cols, rest, scratch_u)
}

/// Scratch sizes (`f32`, `u32`) for [`max_weight_assignment`].
pub const fn assignment_scratch_len(rows: usize, cols: usize) -> (usize, usize) {
    (rows * cols + rows + 1 + 2 * (cols + 1), 3 * (cols + 1))
}

/// The Hungarian method with potentials (Kuhn-Munkres; O(rows^2 cols)): the minimum total `cost`
/// (row-major `rows x cols`, `rows <= cols`) of assigning every row a distinct column. Iterative,
/// no recursion: one shortest augmenting path per row.
fn min_cost_assignment(
    cost: &[f32],
    rows: usize,
    cols: usize,
    scratch_f: &mut [f32],
    scratch_u: &mut [u32],
) -> f32 {
    let (u, rest) = scratch_f.split_at_mut(rows + 1);
    let (v, rest) = rest.split_at_mut(cols + 1);
    let minv = &mut rest[..cols + 1];
    let (p, rest) = scratch_u.split_at_mut(cols + 1);
    let (way, rest) = rest.split_at_mut(cols + 1);
    let used = &mut rest[..cols + 1];
    u.iter_mut().for_each(|x| *x = 0.0);
    v.iter_mut().for_each(|x| *x = 0.0);
    p.iter_mut().for_each(|x| *x = 0);
    // Rows and columns are 1-based below; column 0 is the virtual start of each augmenting path.
    for i in 1..=rows {
        p[0] = i as u32;
        let mut j0 = 0usize;
        minv.iter_mut().for_each(|x| *x = f32::INFINITY);
        used.iter_mut().for_each(|x| *x = 0);
        loop {
            used[j0] = 1;
            let i0 = p[j0] as usize;
            let mut delta = f32::INFINITY;
            let mut j1 = 0;
            for j in 1..=cols {
                if used[j] != 0 {
                    continue;
                }
                let cur = cost[(i0 - 1) * cols + j - 1] - u[i0] - v[j];
                if cur < minv[j] {
                    minv[j] = cur;
                    way[j] = j0 as u32;
                }
                if minv[j] < delta || j1 == 0 {
                    delta = minv[j];
                    j1 = j;
                }
            }
            for j in 0..=cols {
                if used[j] != 0 {
                    u[p[j] as usize] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        // Flip the augmenting path.
        loop {
            let j1 = way[j0] as usize;
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut total = 0.0;
    for j in 1..=cols {
        if p[j] != 0 {
            total += cost[(p[j] as usize - 1) * cols + j - 1];
        }
    }
    total
}

// ---------------------------------------------------------------------------------------------
// Tree traversal

/// A template edge between the node being added and a node matched earlier (or itself: a
/// self-loop).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// The other template node (the added node itself for a self-loop).
    pub other: u32,
    /// Direction seen from `other`: `Out` is `other -> added`.
    pub dir: Dir,
    /// The data relation id, [`ANY_RELATION`] or [`ABSENT_RELATION`].
    pub relation: u32,
}

/// How branches grow by one template node.
#[derive(Clone, Copy, Debug)]
pub struct Extension<'a> {
    /// The template node added at this level.
    pub node: u32,
    /// Every template edge between `node` and already matched nodes, and `node`'s self-loops.
    pub links: &'a [Link],
    /// Candidates when `node` has no matched neighbour (the start node, or the first node of another
    /// connected component): the data nodes with the best one-hop scores for `node`.
    pub seeds: &'a [u32],
}

/// `E(from -wanted-> to)` (see the module documentation).
#[inline]
pub fn edge_score(g: &GraphView, from: u32, to: u32, wanted: u32, scoring: &Scoring) -> f32 {
    if wanted < ABSENT_RELATION && g.out.has(from, wanted, to) {
        return 1.0;
    }
    if !has_any_edge(g, from, to) {
        return 0.0;
    }
    if wanted == ANY_RELATION {
        1.0
    } else {
        1.0 - scoring.relation_weight
    }
}

/// Whether any relation leads `from -> to`: searched in the shorter of `from`'s outgoing and `to`'s
/// incoming list, one binary search per relation run.
#[inline]
pub fn has_any_edge(g: &GraphView, from: u32, to: u32) -> bool {
    if g.out.degree(from) <= g.inc.degree(to) {
        list_has(&g.out, from, to, usize::MAX)
    } else {
        list_has(&g.inc, to, from, usize::MAX)
    }
}

/// Whether `w` is in `v`'s list (sorted by `(label, target)`) before position `before`: one binary
/// search per label run.
#[inline]
fn list_has(adj: &Adjacency, v: u32, w: u32, before: usize) -> bool {
    let (targets, labels) = adj.list(v);
    let end = if before < targets.len() {
        before
    } else {
        targets.len()
    };
    let mut s = 0;
    while s < end {
        let l = labels[s];
        let e = s + labels[s..].partition_point(|&x| x == l);
        let e = if e < end { e } else { end };
        if targets[s..e].binary_search(&w).is_ok() {
            return true;
        }
        s = e;
    }
    false
}

/// What a level of the beam judges its candidates by: the extension, the graph, the one-hop table
/// `oh` and the similarity table `sim` (both row-major data nodes x template nodes) and the
/// scoring. One per level, shared by every branch (and every lane of a warp).
#[derive(Clone, Copy)]
pub struct Judge<'a> {
    pub ext: &'a Extension<'a>,
    pub g: &'a GraphView<'a>,
    pub oh: &'a [f32],
    pub sim: &'a [f32],
    pub scoring: &'a Scoring,
}

impl Judge<'_> {
    /// Kernel: grows the branch `row` (data node per template node, `NONE` when unmatched) by
    /// `ext.node`, calling `emit(data node, score increment)` once per distinct candidate.
    /// Candidates are the data nodes joined to the image of a linked template node in the link's
    /// direction (any relation), or `ext.seeds` when no link leads back to a matched node; a
    /// candidate already in the branch is skipped (injective). The increment is `OH(node, c)` plus
    /// `E` of every link. `emit` returns the smallest increment still wanted
    /// (`f32::NEG_INFINITY` for all): a candidate whose bound `OH + links` is below it is skipped
    /// before its edges are looked up, which keeps hubs cheap. Returns the number emitted. Each
    /// candidate is judged alone ([`Judge::link_candidate`], [`Judge::seed_candidate`]), so a warp
    /// may judge 32 at once ([`Judge::extend_top_warp`]).
    pub fn extend_branch(&self, row: &[u32], emit: &mut impl FnMut(u32, f32) -> f32) -> u32 {
        let (mut emitted, mut floor) = (0, f32::NEG_INFINITY);
        let mut any_link = false;
        for i in 0..self.ext.links.len() {
            let Some(len) = self.anchored_list_len(row, i) else {
                continue;
            };
            any_link = true;
            for pos in 0..len {
                if let Some((c, inc)) = self.link_candidate(row, floor, i, pos) {
                    floor = emit(c, inc);
                    emitted += 1;
                }
            }
        }
        if !any_link {
            for &c in self.ext.seeds {
                if let Some((c, inc)) = self.seed_candidate(row, floor, c) {
                    floor = emit(c, inc);
                    emitted += 1;
                }
            }
        }
        emitted
    }

    /// The length of the list link `i` leads through: its other node's image's list in the link's
    /// direction; `None` for a self-loop or a link to a node not yet matched.
    #[inline]
    pub fn anchored_list_len(&self, row: &[u32], i: usize) -> Option<usize> {
        let l = self.ext.links[i];
        if l.other == self.ext.node || row[l.other as usize] == NONE {
            return None;
        }
        Some(self.g.adj(l.dir).degree(row[l.other as usize]))
    }

    /// The candidate at position `pos` of anchored link `i`'s list, with its increment: none when
    /// its bound is below `floor`, when the branch holds it already, or when an earlier position
    /// (of this list, or of an earlier link's) reaches it, so that each candidate is judged once.
    #[inline]
    pub fn link_candidate(
        &self,
        row: &[u32],
        floor: f32,
        i: usize,
        pos: usize,
    ) -> Option<(u32, f32)> {
        let (ext, g) = (self.ext, self.g);
        let l = ext.links[i];
        let adj = g.adj(l.dir);
        let x = row[l.other as usize];
        let (targets, labels) = adj.list(x);
        let c = targets[pos];
        let one_hop = self.oh[c as usize * row.len() + ext.node as usize];
        // Each link adds at most 1.
        if one_hop + (ext.links.len() as f32) < floor || row.contains(&c) {
            return None;
        }
        // Each candidate once: at its first position in the first link's list that reaches it.
        let later_run = pos > 0 && labels[pos] != labels[0];
        if (later_run && list_has(adj, x, c, pos)) || self.reached_before(row, i, c) {
            return None;
        }
        Some((c, self.increment(row, one_hop, c)))
    }

    /// Seed `c` of an unanchored level with its increment, unless its bound is below `floor` or
    /// the branch holds it already.
    #[inline]
    pub fn seed_candidate(&self, row: &[u32], floor: f32, c: u32) -> Option<(u32, f32)> {
        let one_hop = self.oh[c as usize * row.len() + self.ext.node as usize];
        if one_hop + (self.ext.links.len() as f32) < floor || row.contains(&c) {
            return None;
        }
        Some((c, self.increment(row, one_hop, c)))
    }

    /// Whether a link before `i` already reaches `c`.
    #[inline]
    fn reached_before(&self, row: &[u32], i: usize, c: u32) -> bool {
        let ext = self.ext;
        ext.links[..i].iter().any(|l| {
            l.other != ext.node
                && row[l.other as usize] != NONE
                && list_has(self.g.adj(l.dir), row[l.other as usize], c, usize::MAX)
        })
    }

    /// `OH(node, c)` (given) plus the edge agreement of every link when `node` is matched to `c`.
    #[inline]
    fn increment(&self, row: &[u32], one_hop: f32, c: u32) -> f32 {
        let mut inc = one_hop;
        for l in self.ext.links {
            let x = if l.other == self.ext.node {
                c
            } else {
                row[l.other as usize]
            };
            if x == NONE {
                continue;
            }
            let (from, to) = match l.dir {
                Dir::Out => (x, c),
                Dir::In => (c, x),
            };
            inc += edge_score(self.g, from, to, l.relation, self.scoring);
        }
        inc
    }

    /// Whether data node `c`'s name resembles the level's template node's (similarity above 0).
    #[inline]
    fn resembles(&self, row: &[u32], c: u32) -> bool {
        self.sim[c as usize * row.len() + self.ext.node as usize] > 0.0
    }

    /// Position `k` of the anchored links' lists taken one after another: the link and the
    /// position in its list (`None` past the last).
    #[inline]
    fn list_position(&self, row: &[u32], mut k: usize) -> Option<(usize, usize)> {
        for i in 0..self.ext.links.len() {
            let Some(n) = self.anchored_list_len(row, i) else {
                continue;
            };
            if k < n {
                return Some((i, k));
            }
            k -= n;
        }
        None
    }
}

// ---------------------------------------------------------------------------------------------
// Ranking the children of a branch

/// How the beam ranks the children of one branch: first whether the child's data node resembles
/// the template node's name (its similarity is above 0, i.e. at least the threshold; always for a
/// variable), then the higher cumulative score, then the lower data node. A matching that earns a
/// concept only through its neighbourhood thus never displaces one that also matches its name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChildKey {
    pub resembles: bool,
    pub score: f32,
    pub node: u32,
}

impl ChildKey {
    /// Whether `self` ranks strictly before `other`.
    #[inline]
    pub fn better(&self, other: &ChildKey) -> bool {
        if self.resembles != other.resembles {
            return self.resembles;
        }
        match self.score.total_cmp(&other.score) {
            core::cmp::Ordering::Greater => true,
            core::cmp::Ordering::Less => false,
            core::cmp::Ordering::Equal => self.node < other.node,
        }
    }
}

/// A score bound below which [`Judge::extend_branch`] may skip candidates is lowered by this much, so
/// that rounding of `score - base` never skips a candidate that ties the worst kept child.
pub const FLOOR_MARGIN: f32 = 1e-4;

/// The best `capacity` children of one branch, unordered until the rooms are full, then a binary
/// heap with the worst at the root, in caller-provided slices (a branch's region of the output on
/// the device, buffers on the CPU). The kept set does not depend on the order children are offered
/// in.
pub struct TopChildren<'a> {
    pub nodes: &'a mut [u32],
    pub scores: &'a mut [f32],
    pub resembles: &'a mut [u32],
    pub len: usize,
}

impl TopChildren<'_> {
    #[inline]
    pub fn key(&self, i: usize) -> ChildKey {
        ChildKey {
            resembles: self.resembles[i] != 0,
            score: self.scores[i],
            node: self.nodes[i],
        }
    }

    #[inline]
    fn put(&mut self, i: usize, k: ChildKey) {
        self.nodes[i] = k.node;
        self.scores[i] = k.score;
        self.resembles[i] = k.resembles as u32;
    }

    #[inline]
    fn swap(&mut self, i: usize, j: usize) {
        self.nodes.swap(i, j);
        self.scores.swap(i, j);
        self.resembles.swap(i, j);
    }

    /// Keeps `k` if there is room or it beats the worst kept child (which it then replaces).
    /// Children go in unordered until the last room is taken, then become a heap once: a branch
    /// with fewer candidates than rooms (most, on sparse graphs) never pays for ordering.
    pub fn offer(&mut self, k: ChildKey) {
        let cap = self.nodes.len();
        if self.len < cap {
            self.put(self.len, k);
            self.len += 1;
            if self.len == cap {
                for i in (0..cap / 2).rev() {
                    self.sift_down(i);
                }
            }
            return;
        }
        if cap == 0 || !k.better(&self.key(0)) {
            return;
        }
        self.put(0, k);
        self.sift_down(0);
    }

    /// Moves child `i` down until no child below it ranks after it (the root is the worst).
    fn sift_down(&mut self, mut i: usize) {
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let mut worst = i;
            if l < self.len && self.key(worst).better(&self.key(l)) {
                worst = l;
            }
            if r < self.len && self.key(worst).better(&self.key(r)) {
                worst = r;
            }
            if worst == i {
                break;
            }
            self.swap(i, worst);
            i = worst;
        }
    }

    /// The increment a candidate of a branch with cumulative score `base` must reach to be kept,
    /// for [`Judge::extend_branch`]'s pruning: none until the heap is full, and none while the worst kept
    /// child does not resemble (a resembling candidate beats it whatever its score).
    pub fn floor(&self, base: f32) -> f32 {
        if self.len < self.nodes.len() || self.len == 0 || self.resembles[0] == 0 {
            return f32::NEG_INFINITY;
        }
        self.scores[0] - base - FLOOR_MARGIN
    }
}

impl Judge<'_> {
    /// Kernel: grows branch `row` (cumulative score `base`) by `ext.node` into `top` (its best
    /// children by [`ChildKey`], scores cumulative). The CPU's beam calls this; the device's
    /// `trust_extend` keeps the same children with a warp ([`Judge::extend_top_warp`]).
    pub fn extend_top(&self, row: &[u32], base: f32, top: &mut TopChildren) {
        self.extend_branch(row, &mut |c, inc| {
            top.offer(ChildKey {
                resembles: self.resembles(row, c),
                score: base + inc,
                node: c,
            });
            top.floor(base)
        });
    }

    /// Kernel, a warp per branch: [`Judge::extend_top`]'s children of branch `row` (cumulative
    /// score `base`), its lanes judging 32 candidates at once ([`Judge::link_candidate`],
    /// [`Judge::seed_candidate`]); lane 0 offers the ones judged wanted to the branch's rooms, in
    /// lane order, and tells every lane the new floor. The kept children are `extend_top`'s: the
    /// kept set does not depend on the order of the offers, and the floor a round judges by is
    /// never above the serial one. Returns how many were kept, and the work.
    ///
    /// # Safety
    /// `rooms` describe live buffers that no other warp uses during the launch.
    pub unsafe fn extend_top_warp<W: Warp>(
        &self,
        warp: &W,
        row: &[u32],
        base: f32,
        rooms: &WarpRooms,
    ) -> (usize, WarpWork) {
        let resembles = |c: u32| self.resembles(row, c);
        let mut kept = Kept {
            len: 0,
            floor: f32::NEG_INFINITY,
            base,
        };
        let mut work = WarpWork::default();
        // The anchored links' lists as one run of positions, 32 judged a round: a level's lists
        // are often shorter than a warp.
        let lists = (0..self.ext.links.len()).filter_map(|i| self.anchored_list_len(row, i));
        let (any_link, total) = lists.fold((false, 0), |(_, t), n| (true, t + n));
        for start in (0..total).step_by(LANES as usize) {
            let floor = kept.floor;
            let judge = |lane: u32| {
                let (i, pos) = self.list_position(row, start + lane as usize)?;
                self.link_candidate(row, floor, i, pos)
            };
            unsafe { kept.round(warp, rooms, &resembles, judge) };
            work.judged += (total - start).min(LANES as usize) as u64;
            work.rounds += 1;
        }
        if !any_link {
            let seeds = self.ext.seeds;
            for start in (0..seeds.len()).step_by(LANES as usize) {
                let floor = kept.floor;
                let judge = |lane: u32| {
                    let c = *seeds.get(start + lane as usize)?;
                    self.seed_candidate(row, floor, c)
                };
                unsafe { kept.round(warp, rooms, &resembles, judge) };
                work.judged += (seeds.len() - start).min(LANES as usize) as u64;
                work.rounds += 1;
            }
        }
        (kept.len, work)
    }
}

/// Where a warp keeps one branch's children: `keep` rooms from element `first` of the three output
/// arrays (as [`TopChildren`]'s slices), and the branch's 32 staging slots (three `u32`s each:
/// node, score bits, resembles; node `NONE` for none) from slot `first_slot` of `stage`.
#[derive(Clone, Copy, Debug)]
pub struct WarpRooms {
    pub nodes: DevSlice,
    pub scores: DevSlice,
    pub resembles: DevSlice,
    pub first: usize,
    pub keep: usize,
    pub stage: DevSlice,
    pub first_slot: usize,
}

impl WarpRooms {
    /// The rooms as a [`TopChildren`] holding `len` children (lane 0 alone writes them).
    ///
    /// # Safety
    /// The slices describe live buffers; no other warp uses these rooms during the launch.
    unsafe fn top(&self, len: usize) -> TopChildren<'_> {
        let (a, b) = (self.first, self.first + self.keep);
        unsafe {
            TopChildren {
                nodes: self.nodes.region_mut(a, b),
                scores: self.scores.region_mut(a, b),
                resembles: self.resembles.region_mut(a, b),
                len,
            }
        }
    }

    fn slot(&self, lane: u32) -> usize {
        (self.first_slot + lane as usize) * 3
    }
}

/// What one branch's warp did: candidates judged (what a thread per branch judges one after
/// another) and rounds (up to 32 judged at once in each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarpWork {
    pub judged: u64,
    pub rounds: u64,
}

/// A warp's view of its branch's rooms between rounds (warp-uniform).
struct Kept {
    len: usize,
    floor: f32,
    base: f32,
}

impl Kept {
    /// One round: lane `l` stages `judge(l)`; lane 0 offers what was staged and returns the
    /// rooms' count and floor to every lane.
    ///
    /// # Safety
    /// As [`Judge::extend_top_warp`].
    unsafe fn round<W: Warp>(
        &mut self,
        warp: &W,
        rooms: &WarpRooms,
        resembles: &impl Fn(u32) -> bool,
        judge: impl Fn(u32) -> Option<(u32, f32)>,
    ) {
        let base = self.base;
        warp.each(|lane| unsafe {
            let at = rooms.slot(lane);
            match judge(lane) {
                Some((c, inc)) => {
                    rooms.stage.write(at, c);
                    rooms.stage.write(at + 1, (base + inc).to_bits());
                    rooms.stage.write(at + 2, u32::from(resembles(c)));
                }
                None => rooms.stage.write(at, NONE),
            }
        });
        warp.sync();
        let staged =
            warp.ballot(|lane| unsafe { rooms.stage.get::<u32>()[rooms.slot(lane)] != NONE });
        if staged == 0 {
            return;
        }
        let len = self.len;
        let packed = warp.leader(|| unsafe {
            let stage = rooms.stage.get::<u32>();
            let mut top = rooms.top(len);
            let mut lanes = staged;
            while lanes != 0 {
                let at = rooms.slot(lanes.trailing_zeros());
                lanes &= lanes - 1;
                top.offer(ChildKey {
                    resembles: stage[at + 2] != 0,
                    score: f32::from_bits(stage[at + 1]),
                    node: stage[at],
                });
            }
            (top.len as u64) << 32 | u64::from(top.floor(base).to_bits())
        });
        self.len = (packed >> 32) as usize;
        self.floor = f32::from_bits(packed as u32);
    }
}

// ---------------------------------------------------------------------------------------------
// Selecting the next beam on the device

/// A level's children as the beam ranks them across branches, in four arrays: resemblances (the
/// parent's plus the child's), cumulative scores, parents and data nodes. Runs of them, each best
/// first by [`BeamKey`], sit `stride` elements apart; `lens[r]` (`u32`) is run `r`'s length. Crosses
/// to the device inside the `trust_*` argument structs.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct BeamRuns {
    pub resembling: DevSlice,
    pub scores: DevSlice,
    pub parents: DevSlice,
    pub nodes: DevSlice,
    pub lens: DevSlice,
    pub stride: u64,
}

impl BeamRuns {
    /// Writes `k` as element `i` of run `r`.
    ///
    /// # Safety
    /// The slices describe live buffers; no other thread writes that element during the launch.
    #[inline]
    pub unsafe fn put(&self, r: usize, i: usize, k: &BeamKey) {
        let j = r * self.stride as usize + i;
        unsafe {
            self.resembling.write(j, k.resembling);
            self.scores.write(j, k.score);
            self.parents.write(j, k.parent);
            self.nodes.write(j, k.node);
        }
    }

    /// The runs to read.
    ///
    /// # Safety
    /// As [`DevSlice::get`]; nothing writes them during the launch.
    pub unsafe fn view(&self, runs: usize) -> RunsView<'_> {
        unsafe {
            RunsView {
                resembling: self.resembling.get(),
                scores: self.scores.get(),
                parents: self.parents.get(),
                nodes: self.nodes.get(),
                lens: &self.lens.get::<u32>()[..runs.min(self.lens.len as usize)],
                stride: self.stride as usize,
            }
        }
    }
}

/// Writes branch `parent`'s `len` children in `rooms` (unordered, or a heap) as run `parent` of
/// `out`, best first: lane `l` places children `l`, `l + 32`, … each at the number of children that
/// rank before it (a branch's children are distinct data nodes, so no two share a place);
/// `resembling` is the parent's resemblances.
///
/// # Safety
/// As [`Judge::extend_top_warp`], after it (and a [`Warp::sync`]); run `parent` of `out` is this warp's.
pub unsafe fn rank_rooms<W: Warp>(
    warp: &W,
    rooms: &WarpRooms,
    len: usize,
    parent: u32,
    resembling: u32,
    out: &BeamRuns,
) {
    let at = rooms.first;
    let (nodes, scores, resembles) = unsafe {
        (
            &rooms.nodes.get::<u32>()[at..at + len],
            &rooms.scores.get::<f32>()[at..at + len],
            &rooms.resembles.get::<u32>()[at..at + len],
        )
    };
    let key = |i: usize| ChildKey {
        resembles: resembles[i] != 0,
        score: scores[i],
        node: nodes[i],
    };
    warp.each(|lane| {
        for i in (lane as usize..len).step_by(LANES as usize) {
            let k = key(i);
            let place = (0..len).filter(|&j| key(j).better(&k)).count();
            let child = BeamKey {
                resembling: resembling + u32::from(k.resembles),
                score: k.score,
                parent,
                node: k.node,
            };
            unsafe { out.put(parent as usize, place, &child) };
        }
    });
}

/// A child as the beam ranks children across branches (the CPU's `select`): more resembling
/// template nodes first, then the higher score, then the lower parent, then the lower data node.
/// Within one parent this is [`ChildKey`]'s order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BeamKey {
    pub resembling: u32,
    pub score: f32,
    pub parent: u32,
    pub node: u32,
}

impl BeamKey {
    /// Whether `self` ranks strictly before `other`.
    #[inline]
    pub fn before(&self, other: &BeamKey) -> bool {
        let order = other
            .resembling
            .cmp(&self.resembling)
            .then(other.score.total_cmp(&self.score))
            .then(self.parent.cmp(&other.parent))
            .then(self.node.cmp(&other.node));
        order == core::cmp::Ordering::Less
    }
}

/// [`BeamRuns`] to read: run `r` is `lens[r]` children best first from element `r * stride`.
pub struct RunsView<'a> {
    pub resembling: &'a [u32],
    pub scores: &'a [f32],
    pub parents: &'a [u32],
    pub nodes: &'a [u32],
    pub lens: &'a [u32],
    pub stride: usize,
}

impl RunsView<'_> {
    /// Child `i` of run `r`.
    #[inline]
    pub fn key(&self, r: usize, i: usize) -> BeamKey {
        let j = r * self.stride + i;
        BeamKey {
            resembling: self.resembling[j],
            score: self.scores[j],
            parent: self.parents[j],
            node: self.nodes[j],
        }
    }

    /// Run `r`'s length.
    #[inline]
    pub fn len(&self, r: usize) -> usize {
        (self.lens[r] as usize).min(self.stride)
    }

    /// How many of run `r`'s children rank before `k` (a binary search: they are best first).
    pub fn before_in(&self, r: usize, k: &BeamKey) -> usize {
        let (mut lo, mut hi) = (0, self.len(r));
        if hi == 0 || !self.key(r, 0).before(k) {
            return 0;
        }
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.key(r, mid).before(k) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Child `i` of run `r`'s place among the children of every run: how many rank before it,
    /// when fewer than `beam` do. No two children share a parent and a node, so places are
    /// distinct. The work is a binary search per other run (fewer once `beam` are found).
    pub fn place(&self, r: usize, i: usize, beam: usize) -> Option<usize> {
        let k = self.key(r, i);
        let mut place = i;
        for other in (0..self.lens.len()).filter(|&o| o != r) {
            if place >= beam {
                return None;
            }
            place += self.before_in(other, &k);
        }
        (place < beam).then_some(place)
    }

    /// Child `i` of run `r`'s place in the merge of runs `r` and `r ^ 1` (when there is one),
    /// when fewer than `beam` rank before it there.
    pub fn merged_place(&self, r: usize, i: usize, beam: usize) -> Option<usize> {
        let partner = r ^ 1;
        let before = if partner < self.lens.len() {
            self.before_in(partner, &self.key(r, i))
        } else {
            0
        };
        Some(i + before).filter(|&p| p < beam)
    }
}

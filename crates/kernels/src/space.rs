//! Candidate-space kernels: the per-candidate work of building a candidate space (DAF, VEQ, CECI,
//! EGSM) with the two-step output scheme, and the sorted-set intersection the search runs on it.
//!
//! A candidate space holds, per query node, a sorted candidate array, and per query edge and
//! direction, for each candidate of one endpoint (by index) the sorted *indices* of its data
//! neighbours among the other endpoint's candidates. Work-item `i` is candidate `i` of the endpoint a
//! list starts from: a GPU thread (or warp) each, and a CPU executor's loop iteration.

use crate::view::{Dir, GraphView};
use crate::NONE;

/// Below this ratio of list lengths a merge beats galloping (each galloping probe costs ~log steps).
const GALLOP_RATIO: usize = 16;

/// Expansion, count step: how many neighbours `from[i]` has over `dir`/`label` (`NONE`: any relation)
/// with node label `node_label` (`NONE`: any). The candidates a neighbouring query node gets from
/// this list are at most that many.
pub fn count_expansion(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    node_label: u32,
    g: &GraphView,
) -> u32 {
    let list = g.adj(dir).by_label(from[i], label).0;
    if node_label == NONE {
        return list.len() as u32;
    }
    list.iter()
        .filter(|&&w| g.node_label(w) == node_label)
        .count() as u32
}

/// Expansion, write step: those neighbours into `out` (at least the counted slots, at the scanned
/// offset); returns how many. The host sorts and deduplicates the concatenation, then filters it.
pub fn write_expansion(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    node_label: u32,
    g: &GraphView,
    out: &mut [u32],
) -> usize {
    let list = g.adj(dir).by_label(from[i], label).0;
    if node_label == NONE {
        out[..list.len()].copy_from_slice(list);
        return list.len();
    }
    let mut k = 0;
    for &w in list {
        if g.node_label(w) == node_label {
            out[k] = w;
            k += 1;
        }
    }
    k
}

/// Candidate edges, count step: an upper bound on the list of candidate `i` of `from` toward the
/// candidates `to` (sorted) over `dir`/`label`: exact for a fixed relation; a variable edge may
/// reach one neighbour by several relations, counted once each here.
pub fn count_space_edges(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    to: &[u32],
    g: &GraphView,
) -> u32 {
    let mut n = 0;
    for_each_run(g, dir, from[i], label, |run| {
        n += intersect_count(run, to);
    });
    n as u32
}

/// Candidate edges, write step: the indices in `to` of candidate `i`'s neighbours, ascending and
/// distinct, into `out` (at least the counted slots); returns how many were written. Sorting happens
/// in place (no allocation), only for variable edges, whose list merges one run per relation.
pub fn write_space_edges(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    to: &[u32],
    g: &GraphView,
    out: &mut [u32],
) -> usize {
    write_space_edges_indexed(i, from, dir, label, to, &[], g, out)
}

/// [`write_space_edges`] with `index_of`, per data node its index in `to` (`NONE` when it is not
/// there): each neighbour is one lookup instead of a step of an intersection. A run much longer
/// than `to` is still galloped through; an empty `index_of` intersects every run. Same output, but
/// `out` needs room for `from[i]`'s whole list over `dir` (`label`), not just for what is kept.
#[allow(clippy::too_many_arguments)]
pub fn write_space_edges_indexed(
    i: usize,
    from: &[u32],
    dir: Dir,
    label: u32,
    to: &[u32],
    index_of: &[u32],
    g: &GraphView,
    out: &mut [u32],
) -> usize {
    let mut n = 0;
    let mut runs = 0;
    for_each_run(g, dir, from[i], label, |run| {
        if index_of.is_empty() || run.len() > to.len() * GALLOP_RATIO {
            n += intersect_indices(run, to, &mut out[n..]);
        } else {
            // Written whether kept or not, kept by moving on: no branch to mispredict (about half
            // the neighbours are candidates on yeast's 32-node queries).
            for &x in run {
                let j = index_of[x as usize];
                out[n] = j;
                n += usize::from(j != NONE);
            }
        }
        runs += 1;
    });
    if runs > 1 {
        out[..n].sort_unstable();
        n = dedup_sorted(&mut out[..n]);
    }
    n
}

/// Kernel (one work-item per bitset word): the total length of the adjacency lists over
/// `dir`/`label` of the candidates in word `w`. Summed over the words, it bounds the candidate-edge
/// lists of a query edge from these candidates before they are counted, so their room can be
/// reserved with the candidate counts, in one read.
pub fn adjacency_total(w: usize, word: u32, dir: Dir, label: u32, g: &GraphView) -> u64 {
    let mut todo = word;
    let mut total = 0u64;
    while todo != 0 {
        let v = (w as u32) << 5 | todo.trailing_zeros();
        todo &= todo - 1;
        total += g.adj(dir).by_label(v, label).0.len() as u64;
    }
    total
}

/// Calls `f` with each sorted run of `v`'s list over `dir`: the one relation's neighbours for a fixed
/// `label`, else one run per relation.
fn for_each_run<'g>(g: &GraphView<'g>, dir: Dir, v: u32, label: u32, mut f: impl FnMut(&'g [u32])) {
    let adj = g.adj(dir);
    if label != NONE {
        f(adj.by_label(v, label).0);
        return;
    }
    let (targets, labels) = adj.list(v);
    let mut start = 0;
    while start < targets.len() {
        let l = labels[start];
        let len = labels[start..].partition_point(|&x| x == l);
        f(&targets[start..start + len]);
        start += len;
    }
}

/// Removes repeats from a sorted slice in place; returns the new length.
pub fn dedup_sorted(s: &mut [u32]) -> usize {
    if s.is_empty() {
        return 0;
    }
    let mut w = 1;
    for r in 1..s.len() {
        if s[r] != s[w - 1] {
            s[w] = s[r];
            w += 1;
        }
    }
    w
}

/// The first position in `s[from..]` holding a value `>= x`, by exponential then binary search.
#[inline]
fn gallop(s: &[u32], from: usize, x: u32) -> usize {
    let mut step = 1;
    let mut lo = from;
    let mut hi = from;
    while hi < s.len() && s[hi] < x {
        lo = hi + 1;
        hi += step;
        step <<= 1;
    }
    let hi = hi.min(s.len());
    lo + s[lo..hi].partition_point(|&y| y < x)
}

/// Calls `hit(position in short, position in long)` for each shared value, galloping through `long`.
#[inline]
fn gallop_through(short: &[u32], long: &[u32], mut hit: impl FnMut(usize, usize)) {
    let mut j = 0;
    for (i, &x) in short.iter().enumerate() {
        j = gallop(long, j, x);
        if j == long.len() {
            return;
        }
        if long[j] == x {
            hit(i, j);
        }
    }
}

/// Calls `hit(position in a, position in b)` for each value in both sorted, distinct slices, by
/// merging when their lengths are close and by galloping through the longer one otherwise.
#[inline]
fn intersect_with(a: &[u32], b: &[u32], mut hit: impl FnMut(usize, usize)) {
    if a.is_empty() || b.is_empty() {
        return;
    }
    if a.len() * GALLOP_RATIO < b.len() {
        gallop_through(a, b, hit);
    } else if b.len() * GALLOP_RATIO < a.len() {
        gallop_through(b, a, |j, i| hit(i, j));
    } else {
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            let (x, y) = (a[i], b[j]);
            if x < y {
                i += 1;
            } else if y < x {
                j += 1;
            } else {
                hit(i, j);
                i += 1;
                j += 1;
            }
        }
    }
}

/// How many values two sorted, distinct slices share.
pub fn intersect_count(a: &[u32], b: &[u32]) -> usize {
    let mut n = 0;
    intersect_with(a, b, |_, _| n += 1);
    n
}

/// The positions in `b` of the values `a` and `b` share, ascending, into `out` (room for
/// `min(a.len(), b.len())`); returns how many.
pub fn intersect_indices(a: &[u32], b: &[u32], out: &mut [u32]) -> usize {
    let mut n = 0;
    intersect_with(a, b, |_, j| {
        out[n] = j as u32;
        n += 1;
    });
    n
}

/// The values two sorted, distinct slices share, ascending, into `out` (room for
/// `min(a.len(), b.len())`); returns how many. The search's step: a node's extendable candidates are
/// the intersection of its matched neighbours' candidate-space lists.
pub fn intersect_into(a: &[u32], b: &[u32], out: &mut [u32]) -> usize {
    // (A merge without branches on the values, writing every value and keeping it on a match,
    // made yeast-32's searches 18% slower on this EPYC: the branches predict well enough.)
    let mut n = 0;
    intersect_with(a, b, |_, j| {
        out[n] = b[j];
        n += 1;
    });
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[u32], b: &[u32]) -> ([u32; 64], usize) {
        let mut out = [0u32; 64];
        let mut n = 0;
        for (j, y) in b.iter().enumerate() {
            if a.contains(y) {
                out[n] = j as u32;
                n += 1;
            }
        }
        (out, n)
    }

    #[test]
    fn intersections_agree_with_a_naive_one_at_every_length_ratio() {
        // A small LCG: the kernels crate has no dependencies.
        let mut seed = 12345u64;
        let mut next = |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        for trial in 0..2000 {
            let mut a = [0u32; 64];
            let mut b = [0u32; 64];
            let la = next(if trial % 3 == 0 { 3 } else { 64 }) as usize;
            let lb = next(64) as usize;
            let span = 1 + next(200);
            for x in a.iter_mut().take(la) {
                *x = next(span) as u32;
            }
            for x in b.iter_mut().take(lb) {
                *x = next(span) as u32;
            }
            a[..la].sort_unstable();
            b[..lb].sort_unstable();
            let la = dedup_sorted(&mut a[..la]);
            let lb = dedup_sorted(&mut b[..lb]);
            let (want, wn) = naive(&a[..la], &b[..lb]);
            let mut got = [0u32; 64];
            let n = intersect_indices(&a[..la], &b[..lb], &mut got);
            assert_eq!(&got[..n], &want[..wn]);
            assert_eq!(intersect_count(&a[..la], &b[..lb]), wn);
            // With exactly the room the contract names.
            let n = intersect_into(&a[..la], &b[..lb], &mut got[..la.min(lb)]);
            assert_eq!(n, wn);
            for k in 0..n {
                assert_eq!(got[k], b[want[k] as usize]);
            }
        }
    }

    #[test]
    fn dedup_keeps_one_of_each() {
        let mut s = [1, 1, 2, 5, 5, 5, 9];
        let n = dedup_sorted(&mut s);
        assert_eq!(&s[..n], &[1, 2, 5, 9]);
        assert_eq!(dedup_sorted(&mut []), 0);
    }
}

//! The filtering phase (paper `001`, section 4, Algorithm 1 lines 2-7): candidate bitsets per query
//! node, compaction into sorted candidate arrays, neighbour filtering in plan order over the outgoing
//! and incoming CSR, then refinement in reversed plan order.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use gpsense_kernels::filter::{
    filter_neighbour_candidates, identify_node_candidates, node_matches, refine_candidate, Need,
};
use gpsense_kernels::{bits, scan, Dir, GraphView, NONE};

use crate::executor::{offsets_of, Executor};
use crate::layout::Layout;
use crate::prefetch::Lines;

/// Data nodes grouped by node label, so a labelled query node is identified from its label's nodes
/// rather than from every node.
#[derive(Clone, Debug, Default)]
pub struct LabelIndex {
    offsets: Vec<u32>,
    nodes: Vec<u32>,
}

impl LabelIndex {
    /// Its arrays, for [`prefetch::read_lines`](crate::prefetch::read_lines).
    pub fn arrays(&self) -> [&dyn Lines; 2] {
        [&self.offsets, &self.nodes]
    }

    pub fn new(node_labels: &[u32], label_count: usize) -> Self {
        let mut offsets = vec![0u32; label_count + 1];
        for &l in node_labels {
            offsets[l as usize + 1] += 1;
        }
        for i in 0..label_count {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut nodes = vec![0u32; node_labels.len()];
        for (v, &l) in node_labels.iter().enumerate() {
            nodes[next[l as usize] as usize] = v as u32;
            next[l as usize] += 1;
        }
        LabelIndex { offsets, nodes }
    }

    /// Nodes with `label`, ascending; `None` when the index does not cover it.
    pub fn nodes(&self, label: u32) -> Option<&[u32]> {
        let l = label as usize;
        if l + 1 >= self.offsets.len() {
            return None;
        }
        Some(&self.nodes[self.offsets[l] as usize..self.offsets[l + 1] as usize])
    }
}

/// Per data node and direction, the set of its neighbours' node labels as a bit set (DAF keeps one
/// per node for the same test): a query node's "a neighbour labelled l" needs are checked with a few
/// word ANDs instead of a pass over the node's list. Built once per engine, O(E); absent on graphs
/// without node labels or whose sets would be too large.
#[derive(Clone, Debug)]
pub struct NeighbourLabels {
    words: usize,
    out: Vec<u64>,
    /// Empty when the graph is symmetric (the in-sets equal the out-sets).
    inc: Vec<u64>,
    /// The same sets turned around, per direction (`inc_pairs` empty when symmetric), and whether
    /// they fitted their bound.
    out_pairs: LabelPairs,
    inc_pairs: LabelPairs,
    pairs: bool,
    /// Per direction, each node's neighbours' labels, ascending, at the node's CSR range (`inc`
    /// empty when symmetric; both empty past [`LabelPairs::MAX_ENTRIES`]): a "two neighbours
    /// labelled l" need is two binary searches in one short run, not a pass over the list reading
    /// each neighbour's label from elsewhere.
    out_sorted: Vec<u32>,
    inc_sorted: Vec<u32>,
}

/// Per node label `l` and neighbour label `m`, the nodes labelled `l` with a neighbour labelled `m`,
/// ascending: a query node's candidates that pass a neighbour-label need are one of these lists, and
/// several needs are their intersection, so a filter starts from the shortest instead of testing
/// every node of its label (DAF's neighbour-label test is per node). At most one entry per data edge.
#[derive(Clone, Debug, Default)]
struct LabelPairs {
    /// Label `l`'s neighbour labels `m` are `keys[key_at[l]..key_at[l + 1]]`, ascending; key `k`'s
    /// nodes are `nodes[at[k]..at[k + 1]]`.
    key_at: Vec<u32>,
    keys: Vec<u32>,
    at: Vec<u32>,
    nodes: Vec<u32>,
    /// The same pairs in an open-addressing table, each slot a pair and its range of `nodes`
    /// (empty past [`LabelPairs::MAX_SLOT_BYTES`]): a lookup reads one slot, where the binary
    /// search in `keys` took five to eight dependent reads, which a query's first run finds
    /// outside the caches (8% of HPRD's time per query in fresh processes).
    slots: Vec<PairSlot>,
}

/// A pair `(l, m)` of [`LabelPairs`] (`l << 16 | m`: labels are below 4,096 where there are
/// neighbour-label sets at all) and its range of `nodes`.
#[derive(Clone, Copy, Debug)]
struct PairSlot {
    key: u32,
    start: u32,
    end: u32,
}

const EMPTY_SLOT: PairSlot = PairSlot {
    key: u32::MAX,
    start: 0,
    end: 0,
};

impl LabelPairs {
    /// What a lookup reads, hottest first: the slots (else the keys it bisects), then the lists.
    fn arrays<'s>(&'s self, out: &mut Vec<&'s dyn Lines>) {
        if self.slots.is_empty() {
            out.extend([&self.key_at as &dyn Lines, &self.keys, &self.at]);
        } else {
            out.push(&self.slots);
        }
        out.push(&self.nodes);
    }

    /// Entries at most (16 bytes each while building): past it the sets are tested node by node.
    const MAX_ENTRIES: usize = 32 << 20;
    /// The slot table's size at most (HPRD's: 0.4 MB); past it lookups bisect `keys`.
    const MAX_SLOT_BYTES: usize = 32 << 20;

    /// From the neighbour-label sets `rows` (`words` per node) and each node's label (below
    /// `labels`); `None` past [`Self::MAX_ENTRIES`].
    fn new(rows: &[u64], words: usize, node_labels: &[u32], labels: usize) -> Option<Self> {
        let entries: usize = rows.iter().map(|w| w.count_ones() as usize).sum();
        if entries > Self::MAX_ENTRIES {
            return None;
        }
        let mut triples: Vec<(u32, u32, u32)> = Vec::with_capacity(entries);
        for (v, &l) in node_labels.iter().enumerate() {
            for (w, &bits) in rows[v * words..(v + 1) * words].iter().enumerate() {
                let mut b = bits;
                while b != 0 {
                    triples.push((l, w as u32 * 64 + b.trailing_zeros(), v as u32));
                    b &= b - 1;
                }
            }
        }
        triples.sort_unstable();
        let mut pairs = LabelPairs {
            key_at: vec![0; labels + 1],
            nodes: triples.iter().map(|t| t.2).collect(),
            ..Default::default()
        };
        let mut last = None;
        for (k, t) in triples.iter().enumerate() {
            if last != Some((t.0, t.1)) {
                last = Some((t.0, t.1));
                pairs.key_at[t.0 as usize + 1] += 1;
                pairs.keys.push(t.1);
                pairs.at.push(k as u32);
            }
        }
        for l in 0..labels {
            pairs.key_at[l + 1] += pairs.key_at[l];
        }
        pairs.at.push(entries as u32);
        pairs.slots = pairs.table(labels);
        Some(pairs)
    }

    /// The slots: at most three quarters full (a miss ends at an empty slot after a few probes),
    /// empty when they would take more than [`Self::MAX_SLOT_BYTES`] or a label is past 16 bits.
    fn table(&self, labels: usize) -> Vec<PairSlot> {
        let room = (self.keys.len() * 4 / 3 + 1).next_power_of_two().max(2);
        if labels >= 1 << 16 || room * std::mem::size_of::<PairSlot>() > Self::MAX_SLOT_BYTES {
            return Vec::new();
        }
        let mut slots = vec![EMPTY_SLOT; room];
        let mask = room - 1;
        for l in 0..labels {
            for k in self.key_at[l] as usize..self.key_at[l + 1] as usize {
                let key = (l as u32) << 16 | self.keys[k];
                let mut i = slot_of(key, mask);
                while slots[i].key != EMPTY_SLOT.key {
                    i = (i + 1) & mask;
                }
                slots[i] = PairSlot {
                    key,
                    start: self.at[k],
                    end: self.at[k + 1],
                };
            }
        }
        slots
    }

    /// Asks the cache for the slot of `(label, neighbour)`.
    fn prefetch(&self, label: u32, neighbour: u32) {
        if !self.slots.is_empty() {
            let i = slot_of(label << 16 | neighbour, self.slots.len() - 1);
            crate::prefetch::read(&self.slots[i]);
        }
    }

    fn nodes(&self, label: u32, neighbour: u32) -> &[u32] {
        if !self.slots.is_empty() && label < 1 << 16 && neighbour < 1 << 16 {
            let key = label << 16 | neighbour;
            let mask = self.slots.len() - 1;
            let mut i = slot_of(key, mask);
            loop {
                let slot = self.slots[i];
                if slot.key == key {
                    return &self.nodes[slot.start as usize..slot.end as usize];
                }
                if slot.key == EMPTY_SLOT.key {
                    return &[];
                }
                i = (i + 1) & mask;
            }
        }
        let l = label as usize;
        if l + 1 >= self.key_at.len() {
            return &[];
        }
        let (s, e) = (self.key_at[l] as usize, self.key_at[l + 1] as usize);
        match self.keys[s..e].binary_search(&neighbour) {
            Ok(k) => &self.nodes[self.at[s + k] as usize..self.at[s + k + 1] as usize],
            Err(_) => &[],
        }
    }
}

/// Fibonacci hashing: the key times 2^32 / phi, its top bits (`mask + 1` a power of two, at least
/// two).
#[inline]
fn slot_of(key: u32, mask: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9) >> (32 - mask.count_ones())) as usize
}

/// A query node's neighbour-label needs of count one, as bit masks: `(word, bits)` per direction.
#[derive(Clone, Debug, Default)]
pub struct LabelMask {
    out: Vec<(u32, u64)>,
    inc: Vec<(u32, u64)>,
    /// A needed label no data node has.
    never: bool,
}

impl NeighbourLabels {
    /// Its arrays, hottest first (as a node test reads them: every test reads a set; pair lists are
    /// read a few per query node; sorted labels only for needs of two or more).
    pub fn arrays(&self) -> Vec<&dyn Lines> {
        let mut a: Vec<&dyn Lines> = vec![&self.out, &self.inc];
        self.out_pairs.arrays(&mut a);
        self.inc_pairs.arrays(&mut a);
        a.extend([&self.out_sorted as &dyn Lines, &self.inc_sorted]);
        a
    }

    /// Words per node at most (4,096 labels), and bytes in all.
    const MAX_WORDS: usize = 64;
    const MAX_BYTES: usize = 256 << 20;

    pub fn new(g: &GraphView, label_count: usize, symmetric: bool) -> Option<Self> {
        let words = label_count.div_ceil(64);
        let n = g.node_count();
        let dirs = if symmetric { 1 } else { 2 };
        if g.node_labels.is_empty()
            || words == 0
            || words > Self::MAX_WORDS
            || n.saturating_mul(words * 8 * dirs) > Self::MAX_BYTES
        {
            return None;
        }
        let sets = |dir: Dir| {
            let mut bits = vec![0u64; n * words];
            for v in 0..n {
                let row = &mut bits[v * words..(v + 1) * words];
                for &w in g.adj(dir).list(v as u32).0 {
                    let l = g.node_label(w) as usize;
                    row[l / 64] |= 1 << (l % 64);
                }
            }
            bits
        };
        let out = sets(Dir::Out);
        let inc = if symmetric { Vec::new() } else { sets(Dir::In) };
        let pairs = |rows: &[u64]| LabelPairs::new(rows, words, g.node_labels, label_count);
        let out_pairs = pairs(&out);
        let inc_pairs = if symmetric {
            Some(LabelPairs::default())
        } else {
            pairs(&inc)
        };
        let fitted = out_pairs.is_some() && inc_pairs.is_some();
        let sorted = |dir: Dir| {
            let adj = g.adj(dir);
            if adj.targets.len() > LabelPairs::MAX_ENTRIES {
                return Vec::new();
            }
            let mut labels: Vec<u32> = adj.targets.iter().map(|&w| g.node_label(w)).collect();
            for v in 0..n as u32 {
                let (s, e) = adj.range(v);
                labels[s..e].sort_unstable();
            }
            labels
        };
        let out_sorted = sorted(Dir::Out);
        let inc_sorted = if symmetric || out_sorted.is_empty() {
            Vec::new()
        } else {
            sorted(Dir::In)
        };
        Some(NeighbourLabels {
            out_sorted,
            inc_sorted,
            words,
            out_pairs: out_pairs.unwrap_or_default(),
            inc_pairs: inc_pairs.unwrap_or_default(),
            pairs: fitted,
            out,
            inc,
        })
    }

    /// Whether [`NeighbourLabels::with_neighbour`] answers (the pairs fitted their bound).
    pub fn has_pairs(&self) -> bool {
        self.pairs
    }

    /// The nodes labelled `label` with a neighbour labelled `neighbour` over `dir`, ascending (empty
    /// for a label no node has). Only when [`NeighbourLabels::has_pairs`].
    pub fn with_neighbour(&self, dir: Dir, label: u32, neighbour: u32) -> &[u32] {
        let pairs = match dir {
            Dir::In if !self.inc.is_empty() => &self.inc_pairs,
            _ => &self.out_pairs,
        };
        pairs.nodes(label, neighbour)
    }

    /// Asks the cache for what [`NeighbourLabels::with_neighbour`] reads first.
    pub fn prefetch_pair(&self, dir: Dir, label: u32, neighbour: u32) {
        let pairs = match dir {
            Dir::In if !self.inc.is_empty() => &self.inc_pairs,
            _ => &self.out_pairs,
        };
        pairs.prefetch(label, neighbour);
    }

    /// The count-one needs of `needs` as masks, into `m` (its room reused).
    pub fn mask_into(&self, needs: &[Need], m: &mut LabelMask) {
        m.out.clear();
        m.inc.clear();
        m.never = false;
        for need in needs.iter().filter(|n| n.count == 1) {
            let l = need.label as usize;
            if l >= self.words * 64 {
                m.never = true;
                continue;
            }
            let side = match need.dir {
                Dir::Out => &mut m.out,
                Dir::In => &mut m.inc,
            };
            let word = (l / 64) as u32;
            match side.iter_mut().find(|(w, _)| *w == word) {
                Some((_, bits)) => *bits |= 1 << (l % 64),
                None => side.push((word, 1 << (l % 64))),
            }
        }
    }

    /// Whether [`NeighbourLabels::has_counts`] answers (the sorted labels fitted their bound).
    pub fn has_sorted(&self) -> bool {
        !self.out_sorted.is_empty() && (self.inc.is_empty() || !self.inc_sorted.is_empty())
    }

    /// Whether `v` has, per need, at least `count` neighbours labelled `label` over `dir` (`g`:
    /// the graph these sets were built from). Only when [`NeighbourLabels::has_sorted`].
    pub fn has_counts(&self, g: &GraphView, v: u32, needs: &[Need]) -> bool {
        needs.iter().all(|need| {
            // Symmetric: the in-lists are the out-lists.
            let (dir, sorted) = if need.dir == Dir::In && !self.inc.is_empty() {
                (Dir::In, &self.inc_sorted)
            } else {
                (Dir::Out, &self.out_sorted)
            };
            let (s, e) = g.adj(dir).range(v);
            let run = &sorted[s..e];
            // Sorted: `count` of them exactly when the `count`-th from the first is one.
            let first = run.partition_point(|&l| l < need.label);
            need.count == 0 || run.get(first + need.count as usize - 1) == Some(&need.label)
        })
    }

    /// Asks the cache for `v`'s neighbour-label sets (both directions) ahead of [`Self::covers`].
    #[inline]
    pub fn prefetch(&self, v: u32) {
        // A row's first and last words: a row of several words may span two cache lines.
        let first = v as usize * self.words;
        let last = (first + self.words).saturating_sub(1);
        for sets in [&self.out, &self.inc] {
            for at in [first, last] {
                if let Some(w) = sets.get(at) {
                    crate::prefetch::read(w);
                }
            }
        }
    }

    /// Whether `v` has a neighbour of every label `m` needs.
    #[inline]
    pub fn covers(&self, v: u32, m: &LabelMask) -> bool {
        let at = v as usize * self.words;
        let inc = if self.inc.is_empty() {
            &self.out
        } else {
            &self.inc
        };
        let has = |bits: &[u64], side: &[(u32, u64)]| {
            side.iter().all(|&(w, b)| bits[at + w as usize] & b == b)
        };
        !m.never && has(&self.out, &m.out) && has(inc, &m.inc)
    }
}

/// Candidate sets of every query node, as bitsets (`sets[u * stride..][..stride]`) and as sorted arrays.
#[derive(Clone, Debug)]
pub struct Candidates {
    pub stride: usize,
    pub sets: Vec<u32>,
    pub arrays: Vec<Vec<u32>>,
}

impl Candidates {
    pub fn set(&self, u: usize) -> &[u32] {
        &self.sets[u * self.stride..][..self.stride]
    }

    fn set_mut(&mut self, u: usize) -> &mut [u32] {
        &mut self.sets[u * self.stride..][..self.stride]
    }

    /// Whether some query node has no candidate left (then there is no match).
    pub fn any_empty(&self) -> bool {
        self.arrays.iter().any(|a| a.is_empty())
    }
}

/// Candidate counts and times per phase, for `--explain`.
#[derive(Clone, Debug, Default)]
pub struct FilterReport {
    pub after_filter: Vec<usize>,
    pub after_refine: Vec<usize>,
    /// Data nodes given the node test (dfs): what generation could not rule out wholesale.
    pub tested: u64,
    pub filter_time: Duration,
    pub refine_time: Duration,
}

pub struct Filtering<'a> {
    pub layout: &'a Layout,
    pub g: GraphView<'a>,
    pub labels: &'a LabelIndex,
    pub ex: Executor,
}

/// What a refinement round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Round {
    /// A query node lost its last candidate: there is no match.
    Emptied,
    /// Some candidate went: another round may remove more.
    Changed,
    /// Nothing went: every further round would do the same.
    Fixpoint,
}

impl Filtering<'_> {
    /// Filtering, then up to `rounds` refinement rounds; refinement ends early at its fixpoint and
    /// when `expired` says the time limit passed (or the caller cancelled): fewer rounds leave
    /// more candidates, never a wrong one, and the join that follows sees the same clock.
    pub fn run(&self, rounds: u32, expired: &dyn Fn() -> bool) -> (Candidates, FilterReport) {
        let n = self.layout.nodes;
        let stride = bits::words_for(self.g.node_count());
        let mut c = Candidates {
            stride,
            sets: vec![0; n * stride],
            arrays: vec![Vec::new(); n],
        };
        let mut report = FilterReport::default();
        let start = Instant::now();
        self.forward(&mut c);
        report.filter_time = start.elapsed();
        report.after_filter = c.arrays.iter().map(Vec::len).collect();
        let start = Instant::now();
        if !c.any_empty() {
            for _ in 0..rounds {
                if expired() || self.refine(&mut c) != Round::Changed {
                    break;
                }
            }
        }
        report.refine_time = start.elapsed();
        report.after_refine = c.arrays.iter().map(Vec::len).collect();
        (c, report)
    }

    /// Plan order: identify a node's candidates unless a neighbour filtered them already, compact,
    /// then mark the candidates of its later neighbours. Stops early when a set is empty.
    fn forward(&self, c: &mut Candidates) {
        let mut has = vec![false; self.layout.nodes];
        // A concept set's nodes bound its candidates from the start: they are the bits a neighbour
        // may mark and the ones it is identified from.
        let mut seeded = vec![false; self.layout.nodes];
        for (u, spec) in self.layout.filters.iter().enumerate() {
            if !spec.domain.is_empty() {
                seed(c.set_mut(u), &spec.domain);
                seeded[u] = true;
            }
        }
        for &u in &self.layout.order {
            if !has[u] {
                self.identify_all(u, c);
                has[u] = true;
            }
            c.arrays[u] = self.compact(c.set(u));
            if c.arrays[u].is_empty() {
                return;
            }
            for step in self.layout.neighbour_steps.iter().filter(|s| s.from == u) {
                let bounded = has[step.to] || seeded[step.to];
                let marked =
                    self.mark_neighbours(c, step.from, step.to, step.dir, step.label, bounded);
                if has[step.to] {
                    c.set_mut(step.to).copy_from_slice(&marked);
                } else {
                    let f = self.layout.filters[step.to].view();
                    let g = self.g;
                    let mut words = vec![0u32; c.stride];
                    self.ex.map_light(&mut words, |w| {
                        if marked[w] == 0 {
                            0
                        } else {
                            identify_node_candidates(w, marked[w], &f, &g)
                        }
                    });
                    c.set_mut(step.to).copy_from_slice(&words);
                    has[step.to] = true;
                }
            }
        }
    }

    /// Identifies `u`'s candidates from scratch: its concept, its concept set's seeded bits, its
    /// label's nodes, or every node.
    fn identify_all(&self, u: usize, c: &mut Candidates) {
        let f = self.layout.filters[u].view();
        let g = self.g;
        let set = c.set_mut(u);
        if !self.layout.filters[u].domain.is_empty() {
            let seeded = set.to_vec();
            self.ex
                .map_light(set, |w| identify_node_candidates(w, seeded[w], &f, &g));
            return;
        }
        if f.fixed != NONE || f.label == NONE || self.labels.nodes(f.label).is_none() {
            self.ex
                .map_light(set, |w| identify_node_candidates(w, u32::MAX, &f, &g));
            return;
        }
        let nodes = self.labels.nodes(f.label).unwrap_or_default();
        let mut keep = vec![false; nodes.len()];
        self.ex.map(&mut keep, |i| node_matches(&f, &g, nodes[i]));
        for (&v, _) in nodes.iter().zip(&keep).filter(|(_, &k)| k) {
            set[(v >> 5) as usize] |= 1 << (v & 31);
        }
    }

    /// The neighbours of `from`'s candidates over `dir`/`label` that `to` still allows (all, unless
    /// `to_has_set`: its set bounds them).
    fn mark_neighbours(
        &self,
        c: &Candidates,
        from: usize,
        to: usize,
        dir: gpsense_kernels::Dir,
        label: u32,
        to_has_set: bool,
    ) -> Vec<u32> {
        let mark: Vec<AtomicU32> = (0..c.stride).map(|_| AtomicU32::new(0)).collect();
        let allowed: &[u32] = if to_has_set { c.set(to) } else { &[] };
        let cands = &c.arrays[from];
        let g = self.g;
        self.ex.for_each(cands.len(), |i| {
            filter_neighbour_candidates(i, 0, 1, cands, dir, label, allowed, &mark, &g)
        });
        mark.into_iter().map(|a| a.into_inner()).collect()
    }

    /// One refinement round in reversed plan order.
    fn refine(&self, c: &mut Candidates) -> Round {
        let mut changed = false;
        for &u in self.layout.order.iter().rev() {
            let incident = &self.layout.incident[u];
            if incident.is_empty() {
                continue;
            }
            let mut keep = vec![false; c.arrays[u].len()];
            let (g, sets, stride, cands) = (self.g, &c.sets, c.stride, &c.arrays[u]);
            self.ex.map(&mut keep, |i| {
                refine_candidate(cands[i], incident, sets, stride, &g)
            });
            if keep.iter().all(|&k| k) {
                continue;
            }
            changed = true;
            let set: Vec<AtomicU32> = c.set(u).iter().map(|&w| AtomicU32::new(w)).collect();
            for (&v, _) in c.arrays[u].iter().zip(&keep).filter(|(_, &k)| !k) {
                bits::clear_atomic(&set, v);
            }
            let words: Vec<u32> = set.iter().map(|a| a.load(Ordering::Relaxed)).collect();
            c.set_mut(u).copy_from_slice(&words);
            c.arrays[u] = c.arrays[u]
                .iter()
                .zip(&keep)
                .filter(|(_, &k)| k)
                .map(|(&v, _)| v)
                .collect();
            if c.arrays[u].is_empty() {
                return Round::Emptied;
            }
        }
        if changed {
            Round::Changed
        } else {
            Round::Fixpoint
        }
    }

    /// Stream compaction: count per word, scan, write (sorted ascending).
    pub fn compact(&self, set: &[u32]) -> Vec<u32> {
        let mut counts = vec![0u32; set.len()];
        self.ex.map_light(&mut counts, |w| scan::count_word(set[w]));
        let offsets = offsets_of(&counts);
        let mut out = vec![0u32; *offsets.last().unwrap_or(&0) as usize];
        self.ex.scatter(&mut out, &offsets, 1, |w, region| {
            scan::write_word(w, set[w], region)
        });
        out
    }
}

/// Sets the bits of `nodes` (ascending data nodes; any beyond the set's range are no candidates).
pub(crate) fn seed(set: &mut [u32], nodes: &[u32]) {
    for &v in nodes {
        if let Some(word) = set.get_mut((v >> 5) as usize) {
            *word |= 1 << (v & 31);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Engine;
    use gpsense_graph::GraphBuilder;

    /// Node `i` labelled `i % 3`, with an edge `i -> j` for a seeded half of the pairs: directed,
    /// so in- and out-lists differ.
    fn labelled() -> gpsense_graph::KnowledgeGraph {
        let mut b = GraphBuilder::new();
        let nodes: Vec<_> = (0..30)
            .map(|i| {
                let v = b.node(&format!("n{i}")).unwrap();
                b.set_node_label(v, &format!("L{}", i % 3)).unwrap();
                v
            })
            .collect();
        let r = b.relation("r").unwrap();
        let mut state = 7u64;
        for &s in &nodes {
            for &t in &nodes {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                if s != t && state >> 62 == 0 {
                    b.add_edge(s, r, t, 1.0);
                }
            }
        }
        b.build().unwrap().0
    }

    #[test]
    fn pair_lists_by_the_table_are_those_by_bisection() {
        let g = labelled();
        let e = Engine::new(&g);
        let view = e.view();
        let nl = NeighbourLabels::new(&view, g.node_label_names().len(), false).unwrap();
        for pairs in [&nl.out_pairs, &nl.inc_pairs] {
            assert!(!pairs.slots.is_empty());
            let bisect = LabelPairs {
                slots: Vec::new(),
                ..pairs.clone()
            };
            for l in 0..5 {
                for m in 0..5 {
                    assert_eq!(pairs.nodes(l, m), bisect.nodes(l, m), "({l}, {m})");
                }
            }
            // Every node of label 1 with a neighbour of label 2, and only those.
            let listed = pairs.nodes(1, 2);
            assert!(!listed.is_empty() && listed.iter().all(|&v| view.node_label(v) == 1));
        }
    }

    #[test]
    fn counted_needs_by_the_sorted_labels_agree_with_a_pass_over_the_list() {
        let g = labelled();
        let e = Engine::new(&g);
        let view = e.view();
        let nl = NeighbourLabels::new(&view, g.node_label_names().len(), false).unwrap();
        assert!(nl.has_sorted());
        for v in 0..g.node_count() as u32 {
            for dir in [Dir::Out, Dir::In] {
                for label in 0..3 {
                    let have = view
                        .adj(dir)
                        .list(v)
                        .0
                        .iter()
                        .filter(|&&w| view.node_label(w) == label)
                        .count() as u32;
                    for count in 1..=have + 1 {
                        let need = Need { dir, label, count };
                        assert_eq!(
                            nl.has_counts(&view, v, &[need]),
                            have >= count,
                            "node {v} {dir:?} label {label} count {count}"
                        );
                    }
                }
            }
        }
    }
}

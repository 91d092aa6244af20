//! The name index: data-node texts as case-folded code points, and a padded-bigram inverted index
//! that finds every name within a similarity threshold of a template name without comparing it
//! with all of them.
//!
//! The filter is exact (it never drops a name whose similarity reaches the threshold):
//! - length: `sim >= t` needs `|len(a) - len(b)| <= dist <= (1 - t) * max(len)`;
//! - count: with `#` padding at both ends a name of length `L` has `L + 1` bigrams; an insertion,
//!   deletion or substitution destroys at most two of them and a transposition of two adjacent
//!   characters at most three (`abcd` -> `acbd` loses `ab`, `bc`, `cd`), so names within distance
//!   `k` share at least `max(L, M) + 1 - 3k` bigrams (as multisets). Where that bound is not
//!   positive, names of that length can share no bigram at all; those lengths are scanned whole.
//!
//! Candidates that pass are verified with the edit-distance kernel, in parallel.

use gpsense_graph::KnowledgeGraph;
use gpsense_kernels::trust::{
    build_pattern, max_distance, similarity_bits_item, similarity_item, Pattern, PATTERN_BITS,
};
use hashbrown::HashMap;
use rayon::prelude::*;

use crate::template::{node_text, NodeText};

/// Padding code points: outside Unicode, so they never equal a real character.
const START: u32 = 0x11_0000;
const END: u32 = 0x11_0001;

/// Case-folded code points of `s` (so `Cake` and `cake` are the same name).
pub fn fold(s: &str) -> Vec<u32> {
    s.chars()
        .flat_map(char::to_lowercase)
        .map(u32::from)
        .collect()
}

/// Data-node texts and their bigram index; built once per graph, shared by every search.
pub struct NameIndex {
    /// All texts' code points; text `k` is `chars[ends[k - 1]..ends[k]]`.
    chars: Vec<u32>,
    ends: Vec<u32>,
    /// Bigram -> its range in `postings`.
    grams: HashMap<u64, (u32, u32)>,
    /// `(node, occurrences of the bigram in its text)`, grouped by bigram.
    postings: Vec<(u32, u16)>,
    /// Nodes by text length: `by_length[len]` lists the nodes whose text has `len` code points.
    by_length: Vec<Vec<u32>>,
}

impl NameIndex {
    pub fn build(g: &KnowledgeGraph, text: NodeText) -> NameIndex {
        let n = g.node_count();
        let mut chars = Vec::new();
        let mut ends = Vec::with_capacity(n);
        let mut by_length: Vec<Vec<u32>> = Vec::new();
        for v in 0..n as u32 {
            let folded = fold(node_text(g, v, text));
            if by_length.len() <= folded.len() {
                by_length.resize(folded.len() + 1, Vec::new());
            }
            by_length[folded.len()].push(v);
            chars.extend_from_slice(&folded);
            ends.push(chars.len() as u32);
        }
        let mut index = NameIndex {
            chars,
            ends,
            grams: HashMap::new(),
            postings: Vec::new(),
            by_length,
        };
        index.build_postings();
        index
    }

    /// Sorts `(bigram, node)` pairs once and cuts them into posting lists.
    fn build_postings(&mut self) {
        let mut pairs: Vec<(u64, u32)> = Vec::with_capacity(self.chars.len() + self.ends.len());
        for v in 0..self.ends.len() as u32 {
            pairs.extend(bigrams(self.text(v)).map(|g| (g, v)));
        }
        pairs.par_sort_unstable();
        let mut i = 0;
        while i < pairs.len() {
            let gram = pairs[i].0;
            let start = self.postings.len() as u32;
            while i < pairs.len() && pairs[i].0 == gram {
                let v = pairs[i].1;
                let mut count = 0u16;
                while i < pairs.len() && pairs[i] == (gram, v) {
                    count = count.saturating_add(1);
                    i += 1;
                }
                self.postings.push((v, count));
            }
            self.grams.insert(gram, (start, self.postings.len() as u32));
        }
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// The folded text of node `v`.
    pub fn text(&self, v: u32) -> &[u32] {
        let i = v as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.chars[start..self.ends[i] as usize]
    }

    /// Every node whose similarity to `query` (folded code points) is at least `threshold`, with
    /// that similarity. Filtered by the index, verified in parallel by the bit-parallel edit-distance
    /// kernel (the dynamic programme for names over 64 characters).
    pub fn matches(&self, query: &[u32], threshold: f32) -> Vec<(u32, f32)> {
        let ids = self.candidates(query, threshold);
        let scored: Vec<(u32, f32)> = if query.len() <= PATTERN_BITS {
            let (mut ascii, mut chars, mut masks) = ([0u64; 128], [0u32; 64], [0u64; 64]);
            let others = build_pattern(query, &mut ascii, &mut chars, &mut masks);
            let p = Pattern {
                ascii: &ascii,
                other_chars: &chars[..others],
                other_masks: &masks[..others],
                len: query.len(),
            };
            (0..ids.len())
                .into_par_iter()
                .map(|i| {
                    let s = similarity_bits_item(i, &p, &ids, &self.chars, &self.ends, threshold);
                    (ids[i], s)
                })
                .collect()
        } else {
            let longest = self.by_length.len();
            (0..ids.len())
                .into_par_iter()
                .map_init(
                    || vec![0u32; 2 * (longest + 1)],
                    |row, i| {
                        let s = similarity_item(
                            i,
                            query,
                            &ids,
                            &self.chars,
                            &self.ends,
                            threshold,
                            row,
                        );
                        (ids[i], s)
                    },
                )
                .collect()
        };
        scored
            .into_iter()
            .filter(|&(_, s)| s > 0.0 && s >= threshold)
            .collect()
    }

    /// Nodes that may reach `threshold`: those passing the length and bigram-count filters, plus
    /// every node of a length where the count filter proves nothing.
    pub fn candidates(&self, query: &[u32], threshold: f32) -> Vec<u32> {
        let l = query.len();
        let lengths: Vec<usize> = (0..self.by_length.len())
            .filter(|&m| within_length(l, m, threshold))
            .collect();
        let mut out = Vec::new();
        let mut counted = false;
        for &m in &lengths {
            if required_common(l, m, threshold) <= 0 {
                out.extend_from_slice(&self.by_length[m]);
            } else {
                counted = true;
            }
        }
        if counted {
            self.count_filter(query, threshold, &mut out);
        }
        out.sort_unstable();
        out
    }

    /// Adds to `out` the nodes whose shared bigram count reaches the bound for their length (only
    /// lengths where the bound is positive: the others are in `out` already).
    fn count_filter(&self, query: &[u32], threshold: f32, out: &mut Vec<u32>) {
        let mut wanted: Vec<u64> = bigrams(query).collect();
        wanted.sort_unstable();
        // Dense counters: posting lists of common bigrams are long, and a hash map per hit costs
        // more than one pass over a counter per node.
        let mut common = vec![0u16; self.len()];
        let mut touched = Vec::new();
        let mut i = 0;
        while i < wanted.len() {
            let gram = wanted[i];
            let j = i + wanted[i..].partition_point(|&g| g == gram);
            let in_query = (j - i).min(u16::MAX as usize) as u16;
            if let Some(&(s, e)) = self.grams.get(&gram) {
                for &(v, c) in &self.postings[s as usize..e as usize] {
                    let slot = &mut common[v as usize];
                    if *slot == 0 {
                        touched.push(v);
                    }
                    *slot = slot.saturating_add(in_query.min(c));
                }
            }
            i = j;
        }
        let l = query.len();
        for v in touched {
            let m = self.text(v).len();
            let need = required_common(l, m, threshold);
            if need > 0 && within_length(l, m, threshold) && common[v as usize] as i64 >= need {
                out.push(v);
            }
        }
    }
}

/// Whether names of lengths `l` and `m` can reach `threshold` at all.
fn within_length(l: usize, m: usize, threshold: f32) -> bool {
    let longest = l.max(m);
    longest == 0 || l.abs_diff(m) as u64 <= max_distance(longest, threshold) as u64
}

/// The fewest padded bigrams two names of lengths `l` and `m` share when their similarity reaches
/// `threshold` (may be zero or negative: then the filter proves nothing).
fn required_common(l: usize, m: usize, threshold: f32) -> i64 {
    let longest = l.max(m);
    if longest == 0 {
        return 0;
    }
    longest as i64 + 1 - 3 * max_distance(longest, threshold) as i64
}

/// The padded bigrams of a name: `#a`, `ab`, ..., `z#` (`len + 1` of them).
fn bigrams(text: &[u32]) -> impl Iterator<Item = u64> + '_ {
    let n = text.len();
    (0..=n).map(move |i| {
        let a = if i == 0 { START } else { text[i - 1] };
        let b = if i == n { END } else { text[i] };
        (a as u64) << 32 | b as u64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A swap of two letters is one edit, and the bigram filter lets it through: `pioson` is
    /// `poison` at 1 - 1/6, `person` only at 1 - 2/6 (with 2 edits per swap they tied, and the
    /// filter's bound for one edit dropped `poison` at 0.8).
    #[test]
    fn a_swap_is_one_edit_through_the_index() {
        let mut b = gpsense_graph::GraphBuilder::new();
        for (h, t) in [
            ("poison", "person"),
            ("person", "pigeon"),
            ("piston", "poison"),
        ] {
            b.add_triple(h, "RelatedTo", t, 1.0).unwrap();
        }
        let g = b.build().unwrap().0;
        let index = NameIndex::build(&g, NodeText::Name);
        let found = |t: f32| -> Vec<(String, f32)> {
            let mut m: Vec<(String, f32)> = index
                .matches(&fold("pioson"), t)
                .into_iter()
                .map(|(v, s)| (g.node_name(v).to_owned(), s))
                .collect();
            m.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            m
        };
        let at_08 = found(0.8);
        assert_eq!(at_08.len(), 1, "{at_08:?}");
        assert_eq!(at_08[0].0, "poison");
        assert!((at_08[0].1 - 5.0 / 6.0).abs() < 1e-6);
        let at_06: Vec<String> = found(0.6).into_iter().map(|(n, _)| n).collect();
        assert_eq!(at_06[0], "poison", "{at_06:?}");
        assert!(at_06.contains(&"person".to_owned()), "{at_06:?}");
    }
}

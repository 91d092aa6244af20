//! The name index: data-node texts as case-folded code points, and a padded-bigram inverted index
//! that finds every text within a similarity threshold of a template name without comparing it
//! with all of them.
//!
//! A node may have several texts: under [`NodeText::Name`] its name and every alias that names it
//! (WordNet: a synset `dog/02084071-n` is also `dog` and `domestic dog`); under [`NodeText::Label`]
//! its label name only. The index is over texts, each stored once with the nodes it names (an alias
//! such as `dog` names eight synsets: one text, compared once); a node's similarity is the maximum
//! over its texts.
//!
//! The filter is exact per text (it never drops a text whose similarity reaches the threshold, so
//! it never drops a node whose best text does):
//! - length: `sim >= t` needs `|len(a) - len(b)| <= dist <= (1 - t) * max(len)`;
//! - count: with `#` padding at both ends a text of length `L` has `L + 1` bigrams; an insertion,
//!   deletion or substitution destroys at most two of them and a transposition of two adjacent
//!   characters at most three (`abcd` -> `acbd` loses `ab`, `bc`, `cd`), so texts within distance
//!   `k` share at least `max(L, M) + 1 - 3k` bigrams (as multisets). Where that bound is not
//!   positive, texts of that length can share no bigram at all; those lengths are scanned whole.
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
    let mut out = Vec::with_capacity(s.len());
    fold_into(s, &mut out);
    out
}

/// `s` lower-cased, appended to `out` as code points; an ASCII text (nearly every English name)
/// byte by byte, the same code points `char::to_lowercase` gives it.
fn fold_into(s: &str, out: &mut Vec<u32>) {
    if s.is_ascii() {
        out.extend(s.bytes().map(|b| u32::from(b.to_ascii_lowercase())));
    } else {
        out.extend(s.chars().flat_map(char::to_lowercase).map(u32::from));
    }
}

/// Data-node texts and their bigram index; built once per graph, shared by every search.
///
/// Text `k < len()` is node `k`'s own text (its name or label name), so a node's name is always at
/// hand; the aliases' texts follow. All arrays are flat: WordNet's 117,659 synsets with 206,978
/// (lemma, synset) pairs would otherwise cost an allocation per node.
pub struct NameIndex {
    /// The number of data nodes.
    nodes: usize,
    /// All texts' code points; text `k` is `chars[ends[k - 1]..ends[k]]`.
    chars: Vec<u32>,
    ends: Vec<u32>,
    /// The nodes text `k` names: `text_nodes[node_ends[k - 1]..node_ends[k]]`, ascending.
    node_ends: Vec<u32>,
    text_nodes: Vec<u32>,
    /// Bigram -> its range in `posting_texts` and `posting_counts`.
    grams: HashMap<u64, (u32, u32)>,
    /// Postings grouped by bigram: a text holding it, and how often it does. Two arrays, as a
    /// `(u32, u16)` pair pads to 8 bytes (9 MB more on WordNet).
    posting_texts: Vec<u32>,
    posting_counts: Vec<u16>,
    /// Texts by length: `by_length[len]` lists the texts of `len` code points.
    by_length: Vec<Vec<u32>>,
    /// A hash of the texts, computed when a device first asks (it keeps them by it).
    fingerprint: std::sync::OnceLock<u64>,
}

impl NameIndex {
    /// The index of `g`'s node texts under `text`: names and aliases, or label names only (labels
    /// are what the benchmark format compares; aliases are further names, not labels).
    pub fn build(g: &KnowledgeGraph, text: NodeText) -> NameIndex {
        let n = g.node_count();
        let aliases = g.aliases();
        let with_aliases = text == NodeText::Name && !aliases.is_empty();
        let texts = n + if with_aliases {
            aliases.names().len()
        } else {
            0
        };
        let mut index = NameIndex {
            nodes: n,
            chars: Vec::new(),
            ends: Vec::with_capacity(texts),
            node_ends: Vec::with_capacity(texts),
            text_nodes: Vec::with_capacity(n),
            grams: HashMap::new(),
            posting_texts: Vec::new(),
            posting_counts: Vec::new(),
            by_length: Vec::new(),
            fingerprint: std::sync::OnceLock::new(),
        };
        for v in 0..n as u32 {
            index.push_text(node_text(g, v, text), &[v]);
        }
        if with_aliases {
            for (name, nodes) in aliases.iter() {
                index.push_text(name, nodes);
            }
        }
        // The texts were appended one by one: give back the growth slack.
        index.chars.shrink_to_fit();
        index.build_postings();
        index
    }

    /// Appends one text naming `nodes` (folded straight into `chars`: no buffer per text).
    fn push_text(&mut self, text: &str, nodes: &[u32]) {
        let k = self.ends.len() as u32;
        let start = self.chars.len();
        fold_into(text, &mut self.chars);
        let len = self.chars.len() - start;
        if self.by_length.len() <= len {
            self.by_length.resize(len + 1, Vec::new());
        }
        self.by_length[len].push(k);
        self.ends.push(self.chars.len() as u32);
        self.text_nodes.extend_from_slice(nodes);
        self.node_ends.push(self.text_nodes.len() as u32);
    }

    /// Cuts the texts' padded bigrams into posting lists by a counting sort over bigram ids.
    /// Distinct bigrams are few (WordNet: about 1,200 among 4.4 million), so this beats sorting
    /// `(bigram, text)` pairs (and their 70 MB on WordNet). Texts are placed in order, so each
    /// posting list is ascending by text.
    fn build_postings(&mut self) {
        let (ids, text_grams, counts) = self.gram_ids();
        // `next[id]`: where bigram `id`'s next posting goes; from its start to its end.
        let mut next = Vec::with_capacity(counts.len());
        let mut total = 0u32;
        for &c in &counts {
            next.push(total);
            total += c;
        }
        let starts = next.clone();
        let mut texts = vec![0u32; total as usize];
        let mut repeats = vec![0u16; total as usize];
        let mut start = 0;
        for k in 0..self.text_count() as u32 {
            let end = start + self.text(k).len() + 1;
            for run in text_grams[start..end].chunk_by(|a, b| a == b) {
                let slot = &mut next[run[0] as usize];
                texts[*slot as usize] = k;
                repeats[*slot as usize] = run.len().min(u16::MAX as usize) as u16;
                *slot += 1;
            }
            start = end;
        }
        self.posting_texts = texts;
        self.posting_counts = repeats;
        self.grams = ids
            .grams()
            .filter(|&(id, _)| counts[id] > 0)
            .map(|(id, gram)| (gram, (starts[id], next[id])))
            .collect();
    }

    /// Numbers the bigrams ([`GramIds`]): every text's `len + 1` bigram ids in text order (sorted
    /// within a text, so a repeated bigram is a run), and the texts holding each id. Texts in
    /// chunks on every core, each chunk writing its own part.
    fn gram_ids(&self) -> (GramIds, Vec<u32>, Vec<u32>) {
        let ids = GramIds::new(self);
        let texts = self.text_count();
        // Text k's bigrams start at its first code point's place plus k (one more per text).
        let first = |k: usize| {
            if k == 0 {
                0
            } else {
                self.ends[k - 1] as usize + k
            }
        };
        let mut text_grams = vec![0u32; self.chars.len() + texts];
        let per = texts
            .div_ceil(4 * rayon::current_num_threads())
            .max(1 << 12);
        let mut parts = Vec::new();
        let mut rest = text_grams.as_mut_slice();
        for from in (0..texts).step_by(per) {
            let to = (from + per).min(texts);
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(first(to) - first(from));
            parts.push((from, to, part));
            rest = tail;
        }
        let counts = parts
            .into_par_iter()
            .map(|(from, to, part)| {
                let mut counts = vec![0u32; ids.len()];
                let mut at = 0;
                for k in from..to {
                    let text = self.text(k as u32);
                    let own = &mut part[at..at + text.len() + 1];
                    for (slot, gram) in own.iter_mut().zip(bigrams(text)) {
                        *slot = ids.id(gram);
                    }
                    own.sort_unstable();
                    for run in own.chunk_by(|a, b| a == b) {
                        counts[run[0] as usize] += 1;
                    }
                    at += own.len();
                }
                counts
            })
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
                a
            })
            .unwrap_or_else(|| vec![0; ids.len()]);
        (ids, text_grams, counts)
    }

    /// The number of data nodes (the similarity table's width), not of texts.
    pub fn len(&self) -> usize {
        self.nodes
    }

    pub fn is_empty(&self) -> bool {
        self.nodes == 0
    }

    /// Bytes held on the heap (the bigram map's table estimated from its capacity).
    pub fn heap_bytes(&self) -> usize {
        let vecs = (self.chars.capacity()
            + self.ends.capacity()
            + self.node_ends.capacity()
            + self.text_nodes.capacity())
            * 4
            + self.posting_texts.capacity() * 4
            + self.posting_counts.capacity() * 2
            + self.by_length.capacity() * std::mem::size_of::<Vec<u32>>()
            + self
                .by_length
                .iter()
                .map(|l| l.capacity() * 4)
                .sum::<usize>();
        vecs + self.grams.capacity() * (std::mem::size_of::<(u64, (u32, u32))>() + 1)
    }

    /// The number of texts: one per node, then one per alias.
    pub fn text_count(&self) -> usize {
        self.ends.len()
    }

    /// Every text's code points, and where each ends (text `k` is `chars[ends[k - 1]..ends[k]]`).
    pub(crate) fn texts(&self) -> (&[u32], &[u32]) {
        (&self.chars, &self.ends)
    }

    /// A hash of every text (FNV-1a over the code points and the ends), which tells a device's
    /// copy of one index's texts from another's. Computed once, on a device's first search.
    pub(crate) fn fingerprint(&self) -> u64 {
        *self.fingerprint.get_or_init(|| {
            let words = self.chars.iter().chain([&u32::MAX]).chain(&self.ends);
            words.fold(0xcbf2_9ce4_8422_2325, |h, &w| {
                (h ^ u64::from(w)).wrapping_mul(0x0000_0100_0000_01b3)
            })
        })
    }

    /// The length of text `k`, in code points.
    pub(crate) fn text_len(&self, k: u32) -> usize {
        self.text(k).len()
    }

    /// The folded text `k`; for `k < len()` node `k`'s own text (its name or label name).
    pub fn text(&self, k: u32) -> &[u32] {
        let i = k as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.chars[start..self.ends[i] as usize]
    }

    /// The nodes text `k` names, ascending.
    pub fn nodes_of(&self, k: u32) -> &[u32] {
        let i = k as usize;
        let start = if i == 0 {
            0
        } else {
            self.node_ends[i - 1] as usize
        };
        &self.text_nodes[start..self.node_ends[i] as usize]
    }

    /// Every node whose similarity to `query` (folded code points) is at least `threshold`, with
    /// that similarity (the best over the node's texts), ascending by node.
    pub fn matches(&self, query: &[u32], threshold: f32) -> Vec<(u32, f32)> {
        self.best_per_node(&self.text_matches(query, threshold))
    }

    /// Per node, the best similarity among `texts` (text ids with their similarity), ascending by
    /// node.
    pub fn best_per_node(&self, texts: &[(u32, f32)]) -> Vec<(u32, f32)> {
        let mut best: Vec<(u32, f32)> = texts
            .iter()
            .flat_map(|&(k, s)| self.nodes_of(k).iter().map(move |&v| (v, s)))
            .collect();
        // Per node, the highest first; `dedup_by_key` keeps it.
        best.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        best.dedup_by_key(|&mut (v, _)| v);
        best
    }

    /// Every text whose similarity to `query` is at least `threshold`, with that similarity.
    /// Filtered by the index, verified in parallel by the bit-parallel edit-distance kernel (the
    /// dynamic programme for names over 64 characters).
    pub fn text_matches(&self, query: &[u32], threshold: f32) -> Vec<(u32, f32)> {
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
            .filter(|&(_, s)| reaches(s, threshold))
            .collect()
    }

    /// Texts that may reach `threshold`: those passing the length and bigram-count filters, plus
    /// every text of a length where the count filter proves nothing.
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

    /// Adds to `out` the texts whose shared bigram count reaches the bound for their length (only
    /// lengths where the bound is positive: the others are in `out` already).
    fn count_filter(&self, query: &[u32], threshold: f32, out: &mut Vec<u32>) {
        let mut wanted: Vec<u64> = bigrams(query).collect();
        wanted.sort_unstable();
        // Dense counters: posting lists of common bigrams are long, and a hash map per hit costs
        // more than one pass over a counter per text.
        let mut common = vec![0u16; self.text_count()];
        let mut touched = Vec::new();
        let mut i = 0;
        while i < wanted.len() {
            let gram = wanted[i];
            let j = i + wanted[i..].partition_point(|&g| g == gram);
            let in_query = (j - i).min(u16::MAX as usize) as u16;
            if let Some(&(s, e)) = self.grams.get(&gram) {
                let range = s as usize..e as usize;
                for (&k, &c) in self.posting_texts[range.clone()]
                    .iter()
                    .zip(&self.posting_counts[range])
                {
                    let slot = &mut common[k as usize];
                    if *slot == 0 {
                        touched.push(k);
                    }
                    *slot = slot.saturating_add(in_query.min(c));
                }
            }
            i = j;
        }
        let l = query.len();
        for k in touched {
            let m = self.text(k).len();
            let need = required_common(l, m, threshold);
            if need > 0 && within_length(l, m, threshold) && common[k as usize] as i64 >= need {
                out.push(k);
            }
        }
    }
}

/// Whether a verified similarity counts (the kernels give 0 below the threshold; the slack of
/// `max_distance` can let one just under it through).
pub(crate) fn reaches(s: f32, threshold: f32) -> bool {
    s > 0.0 && s >= threshold
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

/// Bigram ids, a function of the bigram alone (so that texts are numbered on every core at
/// once): pairs of the graph's letters (the first [`LETTERS`] code points below [`PLACED`] that
/// its texts use: Latin, Cyrillic, Greek, ...) and padding marks by their place in a table, the
/// rare others (gathered first, sorted) after it. Hashing each of ConceptNet-100K's 1.3 million
/// bigrams was most of the index's build.
struct GramIds {
    /// A code point's place in the table (below [`PLACED`]; [`NO_PLACE`] for none).
    places: Vec<u16>,
    /// The code point of each place, the padding marks last.
    letters: Vec<u32>,
    /// The bigrams outside the table, sorted: ids from `letters.len()²` on.
    others: Vec<u64>,
}

/// Code points that may have a place in the table, and how many places it has at most.
const PLACED: usize = 0x3000;
const LETTERS: usize = 254;
const NO_PLACE: u16 = u16::MAX;

impl GramIds {
    fn new(index: &NameIndex) -> Self {
        let used = index
            .chars
            .par_chunks(1 << 16)
            .map(|chars| {
                let mut used = vec![false; PLACED];
                for &c in chars.iter().filter(|&&c| (c as usize) < PLACED) {
                    used[c as usize] = true;
                }
                used
            })
            .reduce_with(|mut a, b| {
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
                a
            })
            .unwrap_or_default();
        let mut letters: Vec<u32> = (0..used.len() as u32)
            .filter(|&c| used[c as usize])
            .take(LETTERS)
            .collect();
        let mut places = vec![NO_PLACE; PLACED];
        for (p, &c) in letters.iter().enumerate() {
            places[c as usize] = p as u16;
        }
        letters.extend([START, END]);
        let mut ids = GramIds {
            places,
            letters,
            others: Vec::new(),
        };
        let mut others: Vec<u64> = (0..index.text_count() as u32)
            .into_par_iter()
            .map(|k| index.text(k))
            .filter(|text| text.iter().any(|&c| ids.place(c).is_none()))
            .flat_map_iter(|text| bigrams(text).filter(|&g| ids.table_id(g).is_none()))
            .collect();
        others.par_sort_unstable();
        others.dedup();
        ids.others = others;
        ids
    }

    fn place(&self, c: u32) -> Option<usize> {
        let n = self.letters.len();
        match c {
            START => Some(n - 2),
            END => Some(n - 1),
            _ => match self.places.get(c as usize) {
                Some(&p) if p != NO_PLACE => Some(p as usize),
                _ => None,
            },
        }
    }

    fn table_id(&self, gram: u64) -> Option<usize> {
        let (a, b) = (self.place((gram >> 32) as u32)?, self.place(gram as u32)?);
        Some(a * self.letters.len() + b)
    }

    /// Ids run from 0 to this (not all of them used).
    fn len(&self) -> usize {
        self.letters.len() * self.letters.len() + self.others.len()
    }

    fn id(&self, gram: u64) -> u32 {
        let table = self.letters.len() * self.letters.len();
        match self.table_id(gram) {
            Some(id) => id as u32,
            // Every bigram outside the table was gathered by `new`.
            None => self
                .others
                .binary_search(&gram)
                .map_or(u32::MAX, |i| (table + i) as u32),
        }
    }

    /// Every id with its bigram.
    fn grams(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let n = self.letters.len();
        let table = (0..n * n).map(move |id| {
            let (a, b) = (self.letters[id / n], self.letters[id % n]);
            (id, u64::from(a) << 32 | u64::from(b))
        });
        let others = self.others.iter().enumerate();
        table.chain(others.map(move |(i, &g)| (n * n + i, g)))
    }
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
    use gpsense_kernels::trust::similarity_at_least;

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

    /// WordNet's shape: synsets named `lemma/id`, every lemma an alias, one lemma naming several
    /// synsets.
    fn synsets() -> KnowledgeGraph {
        let mut b = gpsense_graph::GraphBuilder::new();
        let entity = b.node("entity/3-n").unwrap();
        let dog = b.node("dog/1-n").unwrap();
        let frump = b.node("frump/2-n").unwrap();
        let hypernym = b.relation("hypernym").unwrap();
        b.add_edge(dog, hypernym, entity, 1.0);
        b.add_edge(frump, hypernym, entity, 1.0);
        for (alias, v) in [
            ("entity", entity),
            ("dog", dog),
            ("domestic dog", dog),
            ("dog", frump),
            ("frump", frump),
        ] {
            b.alias(alias, v).unwrap();
        }
        b.build().unwrap().0
    }

    fn named(g: &KnowledgeGraph, found: Vec<(u32, f32)>) -> Vec<(&str, f32)> {
        found
            .into_iter()
            .map(|(v, s)| (g.node_name(v), s))
            .collect()
    }

    #[test]
    fn a_node_is_matched_by_its_best_alias() {
        let g = synsets();
        let index = NameIndex::build(&g, NodeText::Name);
        assert_eq!(index.len(), 3);
        assert_eq!(
            index.text_count(),
            3 + 4,
            "one text per node, one per distinct alias"
        );
        // `dog` is a text of two synsets, scored once and given to both.
        let dog = named(&g, index.matches(&fold("dog"), 0.5));
        assert_eq!(dog, [("dog/1-n", 1.0), ("frump/2-n", 1.0)]);
        // A typo reaches the lemma (one transposition in three), never the `lemma/id` name.
        let dgo = named(&g, index.matches(&fold("dgo"), 0.5));
        assert_eq!(dgo.len(), 2, "{dgo:?}");
        assert!(
            dgo.iter().all(|&(_, s)| (s - 2.0 / 3.0).abs() < 1e-6),
            "{dgo:?}"
        );
        // Low enough for the name `dog/1-n` (1 - 4/7) too: the node comes once, with its best.
        let low = named(&g, index.matches(&fold("dog"), 0.4));
        assert_eq!(low, [("dog/1-n", 1.0), ("frump/2-n", 1.0)]);
        let two_words = named(&g, index.matches(&fold("Domestic Dgo"), 0.5));
        assert_eq!(two_words.len(), 1, "{two_words:?}");
        assert_eq!(two_words[0].0, "dog/1-n");
    }

    /// The index (filters, bit-parallel verification, the best text per node) gives exactly what a
    /// scan of every node's every text with the plain dynamic programme gives, on ASCII and
    /// other letters.
    #[test]
    fn the_index_agrees_with_a_scan_of_all_texts() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let word = |next: &mut dyn FnMut(u64) -> u64| -> String {
            let len = 1 + next(7);
            // Other letters too, in the table (é, Д) and past it (猫, numbered apart).
            let letters = ['a', 'b', 'c', 'd', 'A', 'a', 'b', 'é', 'Д', '猫'];
            (0..len)
                .map(|_| letters[next(letters.len() as u64) as usize])
                .collect()
        };
        let mut b = gpsense_graph::GraphBuilder::new();
        // More texts than a part of the build takes (4,096), so that parts meet.
        for _ in 0..12_000 {
            b.node(&word(&mut next)).unwrap();
        }
        let nodes = b.node_count() as u64;
        assert!(nodes > 4_096, "{nodes}");
        for _ in 0..120 {
            let alias = word(&mut next);
            b.alias(&alias, next(nodes) as u32).unwrap();
        }
        let g = b.build().unwrap().0;
        let index = NameIndex::build(&g, NodeText::Name);
        let mut row = vec![0u32; 64];
        // Matches the name alone would not give (the scan's best is an alias's).
        let mut by_alias = 0;
        for _ in 0..40 {
            let query = fold(&word(&mut next));
            for t in [0.0, 0.3, 0.5, 0.6, 0.75, 0.9, 1.0] {
                let mut sim = |text: &str| similarity_at_least(&query, &fold(text), t, &mut row);
                let names: Vec<f32> = (0..g.node_count() as u32)
                    .map(|v| sim(g.node_name(v)))
                    .collect();
                let mut best = names.clone();
                for (alias, of) in g.aliases().iter() {
                    let s = sim(alias);
                    of.iter()
                        .for_each(|&v| best[v as usize] = best[v as usize].max(s));
                }
                by_alias += (0..best.len()).filter(|&v| best[v] > names[v]).count();
                let scan: Vec<(u32, f32)> = (0..g.node_count() as u32)
                    .map(|v| (v, best[v as usize]))
                    .filter(|&(_, s)| s > 0.0 && s >= t)
                    .collect();
                assert_eq!(index.matches(&query, t), scan, "{query:?} at {t}");
            }
        }
        assert!(by_alias > 1000, "{by_alias}");
    }

    #[test]
    fn labels_ignore_aliases() {
        let g = synsets();
        // No node labels: the label text falls back to the name, and aliases are not labels.
        let index = NameIndex::build(&g, NodeText::Label);
        assert_eq!(index.text_count(), 3);
        assert!(index.matches(&fold("dog"), 0.5).is_empty());
    }
}

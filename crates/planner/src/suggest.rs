//! "Did you mean ...?": the names nearest to an unknown one by edit distance over `char`s, with a
//! swap of two adjacent characters (the commonest typo, `dgo` for `dog`) one edit: the optimal
//! string alignment distance, as TruST's similarity counts it.
//!
//! Case differences are resolved first: the distance is taken between lower-cased names, with the
//! case-sensitive distance breaking ties, so `isa` suggests `IsA` before anything else; remaining
//! ties go to the more popular name (higher degree or frequency), then alphabetical order.
//!
//! The scan keeps the best `limit` names found so far and uses the worst of them as a bound. Three
//! filters, cheapest first, skip most names before any dynamic programming: the length difference, a
//! lower bound from character counts (64 hashed buckets), and a banded dynamic programme that stops
//! as soon as a whole row exceeds the bound.

use std::cmp::{Ordering, Reverse};

/// Character-count buckets for the lower bound; merging characters into buckets keeps it a bound.
const BUCKETS: usize = 64;

/// Up to `limit` relations of `g` nearest to `name` (more frequent first among equals): what
/// `query` suggests for an unknown relation, for other front ends (TruST) to say the same.
pub fn relations_near(g: &gpsense_graph::KnowledgeGraph, name: &str, limit: usize) -> Vec<String> {
    let freq = g.relation_frequencies();
    let names = g.relations().iter().map(|(id, n)| {
        let popularity = freq.get(id as usize).copied().unwrap_or(0);
        (n, popularity)
    });
    nearest(name, names, limit)
}

/// Up to `limit` concept names of `g` nearest to `name`: node names and aliases (WordNet's lemmas),
/// a node's popularity its degree, an alias's the summed degrees of its nodes.
///
/// Names that are `name` followed by `/` and a qualifier come first, most popular first: WordNet
/// loaded without its lemma table names the synsets of `dog` only `dog/02084071-n` and so on, a
/// few edits too far for the nearest names to find them.
pub fn concept_names(g: &gpsense_graph::KnowledgeGraph, name: &str, limit: usize) -> Vec<String> {
    let mut qualified: Vec<(&str, u64)> = g
        .nodes()
        .iter()
        .filter(|(_, n)| qualifies(n, name))
        .map(|(id, n)| (n, g.degree(id) as u64))
        .collect();
    qualified.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut out: Vec<String> = qualified
        .into_iter()
        .take(limit)
        .map(|(n, _)| n.to_owned())
        .collect();
    let nodes = g.nodes().iter().map(|(id, n)| (n, g.degree(id) as u64));
    let aliases = g
        .aliases()
        .iter()
        .filter(|(n, _)| g.node_id(n).is_none())
        .map(|(n, vs)| (n, vs.iter().map(|&v| g.degree(v) as u64).sum()));
    for near in nearest(name, nodes.chain(aliases), limit) {
        if out.len() < limit && !out.contains(&near) {
            out.push(near);
        }
    }
    out
}

/// Whether `candidate` is `name/` followed by a qualifier (`dog/02084071-n`, `dog/n`).
fn qualifies(candidate: &str, name: &str) -> bool {
    candidate
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|q| !q.is_empty())
}

/// Up to `limit` names from `names` (each with a popularity: degree or frequency, for ties)
/// nearest to `wanted`, nearest first, ranked as `query`'s "did you mean" ranks them: for front
/// ends whose names are not one graph's (a part of a partitioned graph ranks its own names, and
/// the parts' candidates are ranked again together).
pub fn nearest_names<'a>(
    wanted: &str,
    names: impl Iterator<Item = (&'a str, u64)>,
    limit: usize,
) -> Vec<String> {
    nearest(wanted, names, limit)
}

/// Up to `limit` names from `names` (each with a popularity, for ties) nearest to `wanted`,
/// nearest first.
///
/// Only names within `max(2, len / 2)` edits (after lower-casing) are suggested, so a short typo
/// does not drag in unrelated words. O(N · l) for N names of length l, plus O(l · b) for each name
/// that passes the filters (band width b).
pub(crate) fn nearest<'a>(
    wanted: &str,
    names: impl Iterator<Item = (&'a str, u64)>,
    limit: usize,
) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    let target: Vec<char> = wanted.chars().flat_map(char::to_lowercase).collect();
    let mut histogram = [0i32; BUCKETS];
    for &c in &target {
        histogram[bucket(c)] += 1;
    }
    let mut scan = Scan {
        script: script(wanted),
        max: (target.len() / 2).max(2),
        target,
        histogram,
        best: Vec::with_capacity(limit + 1),
        limit,
        lowered: Vec::new(),
        rows: Rows::default(),
    };
    for (name, popularity) in names {
        scan.consider(wanted, name, popularity);
    }
    scan.best.into_iter().map(|c| c.name.to_owned()).collect()
}

/// The writing system of a name: the script of its first letter, by coarse Unicode ranges (Latin,
/// Greek, Cyrillic, Armenian, Hebrew, Arabic, Indic, Thai, Georgian, Chinese and Japanese, Korean,
/// other), or `None` when it has no letter.
fn script(name: &str) -> Option<u8> {
    if name.is_ascii() {
        return name.bytes().any(|b| b.is_ascii_alphabetic()).then_some(0);
    }
    let c = name.chars().find(|c| c.is_alphabetic())? as u32;
    Some(match c {
        0..=0x24F | 0x1E00..=0x1EFF => 0,
        0x370..=0x3FF | 0x1F00..=0x1FFF => 1,
        0x400..=0x52F => 2,
        0x530..=0x58F => 3,
        0x590..=0x5FF => 4,
        0x600..=0x6FF | 0x750..=0x77F => 5,
        0x900..=0xDFF => 6,
        0xE00..=0xE7F => 7,
        0x10A0..=0x10FF => 8,
        0x3040..=0x30FF | 0x31F0..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => {
            9
        }
        0x20000..=0x2FA1F => 9,
        0x1100..=0x11FF | 0x3130..=0x318F | 0xAC00..=0xD7AF => 10,
        _ => 255,
    })
}

fn bucket(c: char) -> usize {
    c as usize % BUCKETS
}

struct Candidate<'a> {
    folded: usize,
    exact: usize,
    popularity: u64,
    name: &'a str,
}

impl Candidate<'_> {
    fn key(&self) -> (usize, usize, Reverse<u64>, &str) {
        (self.folded, self.exact, Reverse(self.popularity), self.name)
    }

    fn cmp(&self, other: &Candidate) -> Ordering {
        self.key().cmp(&other.key())
    }
}

struct Scan<'a> {
    /// The wanted name's script: only names in the same one are suggested (two edits turn any
    /// two-letter word into any other, so `日本` would otherwise suggest `it`, `i`, `we`).
    script: Option<u8>,
    target: Vec<char>,
    histogram: [i32; BUCKETS],
    max: usize,
    /// Sorted, at most `limit` long.
    best: Vec<Candidate<'a>>,
    limit: usize,
    lowered: Vec<char>,
    rows: Rows,
}

impl<'a> Scan<'a> {
    /// The largest distance that could still enter the list.
    fn bound(&self) -> usize {
        match self.best.get(self.limit - 1) {
            Some(worst) => worst.folded,
            None => self.max,
        }
    }

    fn consider(&mut self, wanted: &str, name: &'a str, popularity: u64) {
        if self.script.is_some() && script(name) != self.script {
            return;
        }
        let bound = self.bound();
        if name.is_ascii() {
            // Bytes are chars: filter on length and counts before lower-casing into the buffer.
            if name.len().abs_diff(self.target.len()) > bound {
                return;
            }
            let lowered = name.bytes().map(|b| b.to_ascii_lowercase() as usize);
            if self.count_bound(lowered) > bound {
                return;
            }
            self.lowered.clear();
            self.lowered
                .extend(name.bytes().map(|b| b.to_ascii_lowercase() as char));
        } else {
            // Lower-casing may change the length, so count the lowered chars in the same pass.
            let codes = name
                .chars()
                .flat_map(char::to_lowercase)
                .map(|c| c as usize);
            if self.count_bound(codes) > bound {
                return;
            }
            self.lowered.clear();
            self.lowered
                .extend(name.chars().flat_map(char::to_lowercase));
        }
        let Some(folded) = bounded_distance(&self.target, &self.lowered, bound, &mut self.rows)
        else {
            return;
        };
        let candidate = Candidate {
            folded,
            exact: distance(wanted, name),
            popularity,
            name,
        };
        let at = self
            .best
            .partition_point(|c| c.cmp(&candidate) == Ordering::Less);
        if at < self.limit {
            self.best.insert(at, candidate);
            self.best.truncate(self.limit);
        }
    }

    /// A lower bound on the distance between the target and a (lower-cased) name given by its code
    /// points, from character counts: each edit removes at most one surplus character from each
    /// side. It is at least the length difference. O(length).
    fn count_bound(&self, codes: impl Iterator<Item = usize>) -> usize {
        let mut remaining = self.histogram;
        let (mut len, mut surplus) = (0usize, 0usize); // surplus: name chars the target lacks
        for code in codes {
            len += 1;
            let slot = &mut remaining[code % BUCKETS];
            *slot -= 1;
            if *slot < 0 {
                surplus += 1;
            }
        }
        let shared = len - surplus;
        surplus.max(self.target.len() - shared)
    }
}

/// The last three rows of the distance table, reused from name to name.
#[derive(Default)]
pub(crate) struct Rows {
    before: Vec<usize>,
    prev: Vec<usize>,
    cur: Vec<usize>,
}

/// Optimal string alignment distance between `a` and `b` (insertions, deletions, substitutions
/// and swaps of adjacent characters, each one edit) if it is at most `bound`, over `char`s.
///
/// Banded: only cells with `|i - j| <= bound` are computed, and the scan stops when a row has no
/// cell within the bound (a swap reaches back two rows, but the row between holds a cell no larger
/// than what it gives). O(min(|a|, |b|) · bound) time.
pub(crate) fn bounded_distance(
    a: &[char],
    b: &[char],
    bound: usize,
    rows: &mut Rows,
) -> Option<usize> {
    const FAR: usize = usize::MAX / 2;
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > bound {
        return None;
    }
    let Rows { before, prev, cur } = rows;
    before.clear();
    before.resize(m + 1, FAR);
    prev.clear();
    prev.extend((0..=m).map(|j| if j <= bound { j } else { FAR }));
    for i in 1..=n {
        cur.clear();
        cur.resize(m + 1, FAR);
        if i <= bound {
            cur[0] = i;
        }
        let mut row_min = cur[0];
        for j in i.saturating_sub(bound).max(1)..=(i + bound).min(m) {
            let substitute = prev[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut value = substitute.min(prev[j] + 1).min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                value = value.min(before[j - 2] + 1);
            }
            cur[j] = value;
            row_min = row_min.min(value);
        }
        if row_min > bound {
            return None;
        }
        std::mem::swap(before, prev);
        std::mem::swap(prev, cur);
    }
    (prev[m] <= bound).then_some(prev[m])
}

/// The same distance, unbounded; only for tie-breaking among a few finalists.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let bound = a.len().max(b.len());
    bounded_distance(&a, &b, bound, &mut Rows::default()).unwrap_or(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        distance(a, b)
    }

    /// The whole optimal-string-alignment table, unbanded: the reference for the banded scan.
    fn full_table(a: &[char], b: &[char]) -> usize {
        let (n, m) = (a.len(), b.len());
        let mut t = vec![vec![0usize; m + 1]; n + 1];
        for (i, row) in t.iter_mut().enumerate() {
            row[0] = i;
        }
        for (j, cell) in t[0].iter_mut().enumerate() {
            *cell = j;
        }
        for i in 1..=n {
            for j in 1..=m {
                let cost = usize::from(a[i - 1] != b[j - 1]);
                t[i][j] = (t[i - 1][j - 1] + cost)
                    .min(t[i - 1][j] + 1)
                    .min(t[i][j - 1] + 1);
                if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                    t[i][j] = t[i][j].min(t[i - 2][j - 2] + 1);
                }
            }
        }
        t[n][m]
    }

    /// WordNet without its lemma table: `dog` names no node, but `dog/02084071-n` (and the other
    /// synsets of the word) come first, most connected first, before any merely near name.
    #[test]
    fn qualified_names_of_the_word_come_first() {
        use gpsense_graph::ingest::{ingest_bytes, Format, IngestOptions};
        let triples = "hypernym\tdog/02084071-n\tcanine/02083346-n\n\
                       hypernym\tdog/02084071-n\tdomestic_animal/01317541-n\n\
                       hypernym\tdog/10114209-n\tchap/09908025-n\n\
                       hypernym\tdoe\tdeer\n\
                       hypernym\tdogma/06170498-n\tbelief/05941423-n\n";
        let opts = IngestOptions::default();
        let (g, _) = ingest_bytes(triples.as_bytes(), Format::Triples, &opts).expect("ingest");
        let found = concept_names(&g, "dog", 3);
        assert_eq!(found[..2], ["dog/02084071-n", "dog/10114209-n"]);
        assert_eq!(found, ["dog/02084071-n", "dog/10114209-n", "doe"]);
        assert!(!qualifies("dog/", "dog") && !qualifies("dogma/x", "dog"));
    }

    #[test]
    fn suggestions_stay_in_the_wanted_names_script() {
        let names = [
            ("it", 9),
            ("i", 9),
            ("we", 9),
            ("日本語", 1),
            ("кошка", 1),
            ("cat", 5),
        ];
        let near = |w: &str| nearest(w, names.iter().map(|&(n, p)| (n, p)), 3);
        assert_eq!(near("日本"), vec!["日本語"]);
        assert_eq!(near("кошки"), vec!["кошка"]);
        assert!(!near("ca").contains(&"кошка".to_owned()));
        assert!(near("東京").is_empty() || near("東京") == vec!["日本語"]);
        assert_eq!(script("1990"), None);
    }

    #[test]
    fn distances() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("flaw", "lawn"), 2);
        assert_eq!(d("кошка", "кошки"), 1);
        assert_eq!(d("chocolate cakes", "chocolate cake"), 1);
        assert_eq!(d("dgo", "dog"), 1, "a swap is one edit");
        assert_eq!(d("pioson", "poison"), 1);
        assert_eq!(
            d("ca", "abc"),
            3,
            "optimal string alignment, not Damerau's unrestricted one"
        );
    }

    #[test]
    fn band_agrees_with_the_full_table_within_the_bound() {
        let words = [
            "", "a", "ab", "ba", "abc", "bca", "acb", "kitten", "sitting", "mitten", "bitten",
            "xyz", "dgo", "dog", "god",
        ];
        for a in words {
            for b in words {
                let (ac, bc): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                let full = full_table(&ac, &bc);
                for bound in 0..5 {
                    let got = bounded_distance(&ac, &bc, bound, &mut Rows::default());
                    assert_eq!(got, (full <= bound).then_some(full), "{a:?} {b:?} {bound}");
                }
            }
        }
    }

    #[test]
    fn case_is_resolved_first() {
        let names = [("IsA", 1), ("HasA", 1), ("PartOf", 1), ("UsedFor", 1)];
        assert_eq!(nearest("isa", names.into_iter(), 2), ["IsA", "HasA"]);
        assert_eq!(nearest("usedfor", names.into_iter(), 5), ["UsedFor"]);
    }

    #[test]
    fn a_swapped_pair_is_one_edit() {
        // Four names one edit away: `dog`, two edits under plain Levenshtein, would not make it.
        let names = [("go", 50), ("do", 50), ("duo", 5), ("ego", 5), ("dog", 9)];
        assert_eq!(
            nearest("dgo", names.into_iter(), 4),
            ["do", "go", "dog", "duo"]
        );
    }

    #[test]
    fn nearest_first_and_limited() {
        let names = ["dog", "dogs", "do", "cat", "doge", "fog", "god"].map(|n| (n, 1));
        assert_eq!(nearest("dog", names.into_iter(), 3), ["dog", "do", "doge"]);
        assert!(nearest("zzzzzzzz", names.into_iter(), 5).is_empty());
        assert!(nearest("dog", names.into_iter(), 0).is_empty());
    }

    #[test]
    fn popularity_breaks_ties() {
        let names = [("anima", 1), ("animal", 900), ("anime", 3)];
        assert_eq!(
            nearest("animl", names.into_iter(), 5),
            ["animal", "anime", "anima"]
        );
    }

    #[test]
    fn count_bound_never_exceeds_the_distance() {
        let words = [
            "",
            "a",
            "ab",
            "ba",
            "abc",
            "kitten",
            "sitting",
            "кошка",
            "кошки",
            "xyz",
        ];
        for a in words {
            for b in words {
                let mut scan = Scan {
                    script: None,
                    target: a.chars().collect(),
                    histogram: [0; BUCKETS],
                    max: 9,
                    best: Vec::new(),
                    limit: 1,
                    lowered: Vec::new(),
                    rows: Rows::default(),
                };
                for &c in &scan.target {
                    scan.histogram[bucket(c)] += 1;
                }
                let codes = b.chars().map(|c| c as usize);
                let bound = scan.count_bound(codes);
                assert!(bound <= d(a, b), "{a:?} {b:?}");
            }
        }
    }
}

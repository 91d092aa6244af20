//! "Did you mean ...?": the names nearest to an unknown one by Levenshtein distance over `char`s.
//!
//! Case differences are resolved first: the distance is taken between lower-cased names, with the
//! case-sensitive distance only breaking ties, so `isa` suggests `IsA` before anything else. The scan
//! keeps the best `limit` names found so far and uses the worst of them as a bound: names whose
//! length differs by more are skipped without any work, and the dynamic programme runs in a band of
//! that width and stops as soon as a whole row exceeds it. Over the 78,000 concepts of
//! ConceptNet-100K a lookup takes a few milliseconds in a release build.

use std::cmp::Ordering;

/// Up to `limit` names from `names` nearest to `wanted`, nearest first.
///
/// Only names within `max(2, len / 2)` edits (after lower-casing) are suggested, so a short typo
/// does not drag in unrelated words. O(N + M·b·l) for N names, M of them passing the length filter,
/// band width b and name length l.
pub(crate) fn nearest<'a>(
    wanted: &str,
    names: impl Iterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    let target: Vec<char> = wanted.chars().flat_map(char::to_lowercase).collect();
    let mut scan = Scan {
        target,
        max: 0,
        best: Vec::with_capacity(limit + 1),
        limit,
        lowered: Vec::new(),
        rows: (Vec::new(), Vec::new()),
    };
    scan.max = (scan.target.len() / 2).max(2);
    for name in names {
        scan.consider(wanted, name);
    }
    scan.best.into_iter().map(|c| c.name.to_owned()).collect()
}

struct Candidate<'a> {
    folded: usize,
    exact: usize,
    name: &'a str,
}

impl Candidate<'_> {
    fn cmp(&self, other: &Candidate) -> Ordering {
        (self.folded, self.exact, self.name).cmp(&(other.folded, other.exact, other.name))
    }
}

struct Scan<'a> {
    target: Vec<char>,
    max: usize,
    /// Sorted, at most `limit` long.
    best: Vec<Candidate<'a>>,
    limit: usize,
    lowered: Vec<char>,
    rows: (Vec<usize>, Vec<usize>),
}

impl<'a> Scan<'a> {
    /// The largest distance that could still enter the list.
    fn bound(&self) -> usize {
        match self.best.get(self.limit - 1) {
            Some(worst) => worst.folded,
            None => self.max,
        }
    }

    fn consider(&mut self, wanted: &str, name: &'a str) {
        let bound = self.bound();
        // ASCII names have as many chars as bytes: filter on length before touching the text.
        if name.is_ascii() && name.len().abs_diff(self.target.len()) > bound {
            return;
        }
        self.lowered.clear();
        self.lowered
            .extend(name.chars().flat_map(char::to_lowercase));
        let (prev, cur) = &mut self.rows;
        let Some(folded) = bounded_distance(&self.target, &self.lowered, bound, prev, cur) else {
            return;
        };
        let exact = distance(wanted, name);
        let candidate = Candidate {
            folded,
            exact,
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
}

/// Levenshtein distance between `a` and `b` if it is at most `bound`, over `char`s.
///
/// Banded: only cells with `|i - j| <= bound` are computed, and the scan stops when a row has no
/// cell within the bound. O(min(|a|, |b|) · bound) time; `prev` and `cur` are reused buffers.
pub(crate) fn bounded_distance(
    a: &[char],
    b: &[char],
    bound: usize,
    prev: &mut Vec<usize>,
    cur: &mut Vec<usize>,
) -> Option<usize> {
    const FAR: usize = usize::MAX / 2;
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > bound {
        return None;
    }
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
            let value = substitute.min(prev[j] + 1).min(cur[j - 1] + 1);
            cur[j] = value;
            row_min = row_min.min(value);
        }
        if row_min > bound {
            return None;
        }
        std::mem::swap(prev, cur);
    }
    (prev[m] <= bound).then_some(prev[m])
}

/// Plain Levenshtein distance over `char`s; only for tie-breaking among a few finalists.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let bound = a.len().max(b.len());
    bounded_distance(&a, &b, bound, &mut Vec::new(), &mut Vec::new()).unwrap_or(bound)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(a: &str, b: &str) -> usize {
        distance(a, b)
    }

    #[test]
    fn distances() {
        assert_eq!(d("", ""), 0);
        assert_eq!(d("", "abc"), 3);
        assert_eq!(d("kitten", "sitting"), 3);
        assert_eq!(d("flaw", "lawn"), 2);
        assert_eq!(d("кошка", "кошки"), 1);
        assert_eq!(d("chocolate cakes", "chocolate cake"), 1);
    }

    #[test]
    fn band_agrees_with_the_full_table_within_the_bound() {
        let words = [
            "", "a", "ab", "abc", "kitten", "sitting", "mitten", "bitten", "xyz",
        ];
        for a in words {
            for b in words {
                let full = d(a, b);
                let (ac, bc): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
                for bound in 0..5 {
                    let got = bounded_distance(&ac, &bc, bound, &mut Vec::new(), &mut Vec::new());
                    assert_eq!(got, (full <= bound).then_some(full), "{a:?} {b:?} {bound}");
                }
            }
        }
    }

    #[test]
    fn case_is_resolved_first() {
        let names = ["IsA", "HasA", "PartOf", "UsedFor"];
        assert_eq!(nearest("isa", names.into_iter(), 2), ["IsA", "HasA"]);
        assert_eq!(nearest("usedfor", names.into_iter(), 5), ["UsedFor"]);
    }

    #[test]
    fn nearest_first_and_limited() {
        let names = ["dog", "dogs", "do", "cat", "doge", "fog", "god"];
        assert_eq!(nearest("dog", names.into_iter(), 3), ["dog", "do", "doge"]);
        assert!(nearest("zzzzzzzz", names.into_iter(), 5).is_empty());
        assert!(nearest("dog", names.into_iter(), 0).is_empty());
    }
}

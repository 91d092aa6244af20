//! Holding the engine's answers to dfs's: count tables (the benchmark suites) and full row multisets
//! (the common-sense queries). Pure functions, unit-tested below.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use super::parse::MatchLine;

/// A query whose answers differ, with what each side said.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    pub query: String,
    pub detail: String,
}

/// The outcome of comparing one suite's answers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Queries answered by either side.
    pub queries: usize,
    /// Queries answered by both sides within the time limit.
    pub compared: usize,
    pub mismatches: Vec<Mismatch>,
    /// Queries that timed out on either side: their counts are lower bounds, so nothing is proven.
    pub unverified: Vec<String>,
}

/// Compares `gpsense match` outputs query by query: the engine against dfs, and both against the
/// expected counts where the file names the query. A query only one side answered is a mismatch.
pub fn counts(
    engine: &str,
    ours: &[MatchLine],
    dfs: &[MatchLine],
    expected: Option<&BTreeMap<String, u64>>,
) -> Comparison {
    let ours: BTreeMap<&str, &MatchLine> = ours.iter().map(|l| (l.name.as_str(), l)).collect();
    let dfs: BTreeMap<&str, &MatchLine> = dfs.iter().map(|l| (l.name.as_str(), l)).collect();
    let names: BTreeSet<&str> = ours.keys().chain(dfs.keys()).copied().collect();
    let mut out = Comparison {
        queries: names.len(),
        ..Comparison::default()
    };
    for name in names {
        let want = expected.and_then(|e| e.get(name)).copied();
        let (a, b) = match (ours.get(name), dfs.get(name)) {
            (Some(a), Some(b)) => (a, b),
            (a, _) => {
                let missing = if a.is_none() { engine } else { "dfs" };
                out.mismatches.push(Mismatch {
                    query: name.to_owned(),
                    detail: format!("no answer from {missing}"),
                });
                continue;
            }
        };
        if a.timed_out || b.timed_out {
            out.unverified.push(name.to_owned());
            continue;
        }
        out.compared += 1;
        if a.count != b.count || want.is_some_and(|w| w != a.count || w != b.count) {
            let expected = want.map_or(String::new(), |w| format!(", expected {w}"));
            out.mismatches.push(Mismatch {
                query: name.to_owned(),
                detail: format!("{engine} {}, dfs {}{expected}", a.count, b.count),
            });
        }
    }
    out
}

/// One `gpsense query` answer: a count (`--count`), or the TSV header and the rows, sorted, since
/// engines stream rows in different orders but must give the same multiset.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    Count(u64),
    Rows { header: String, rows: Vec<String> },
}

/// The line gpsense ends an answer with when the time limit cut it (the summary says so too).
const TIMED_OUT_LINE: &str = "# timed out: the answer is incomplete\n";

impl Answer {
    /// Reads `gpsense query`'s standard output (without the time-out mark); `None` when a count is
    /// not a number.
    pub fn parse(stdout: &str, count: bool) -> Option<Answer> {
        let stdout = stdout.strip_suffix(TIMED_OUT_LINE).unwrap_or(stdout);
        if count {
            return stdout.trim().parse().ok().map(Answer::Count);
        }
        let mut lines = stdout.lines();
        let header = lines.next().unwrap_or_default().to_owned();
        let mut rows: Vec<String> = lines.map(str::to_owned).collect();
        rows.sort_unstable();
        Some(Answer::Rows { header, rows })
    }

    /// `455 rows` or `6,949 matches`-style size, for listings.
    pub fn size(&self) -> String {
        match self {
            Answer::Count(n) => format!("{n} matches"),
            Answer::Rows { rows, .. } => n_rows(rows.len()),
        }
    }
}

/// `None` when the answers are the same; otherwise what differs, with a few example rows.
pub fn answers(engine: &str, ours: &Answer, dfs: &Answer) -> Option<String> {
    match (ours, dfs) {
        (Answer::Count(a), Answer::Count(b)) => (a != b).then(|| format!("{engine} {a}, dfs {b}")),
        (
            Answer::Rows {
                header: ha,
                rows: ra,
            },
            Answer::Rows {
                header: hb,
                rows: rb,
            },
        ) => {
            if ha != hb {
                return Some(format!("header: {engine} {ha:?}, dfs {hb:?}"));
            }
            row_difference(engine, ra, rb)
        }
        _ => Some(format!("{engine} {}, dfs {}", ours.size(), dfs.size())),
    }
}

/// Rows (sorted, with repeats) on one side only, as a multiset difference.
fn row_difference(engine: &str, ours: &[String], dfs: &[String]) -> Option<String> {
    let (only_ours, only_dfs) = multiset_difference(ours, dfs);
    if only_ours.is_empty() && only_dfs.is_empty() {
        return None;
    }
    let mut text = format!("{engine} {}, dfs {}", n_rows(ours.len()), n_rows(dfs.len()));
    for (side, rows) in [(engine, &only_ours), ("dfs", &only_dfs)] {
        if !rows.is_empty() {
            text.push_str(&format!("; only from {side}: {}", examples(rows)));
        }
    }
    Some(text)
}

/// Elements of `a` not matched in `b` and of `b` not matched in `a`, both inputs sorted.
fn multiset_difference<'a>(a: &'a [String], b: &'a [String]) -> (Vec<&'a str>, Vec<&'a str>) {
    let (mut i, mut j) = (0, 0);
    let (mut only_a, mut only_b) = (Vec::new(), Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Equal => (i, j) = (i + 1, j + 1),
            Ordering::Less => {
                only_a.push(a[i].as_str());
                i += 1;
            }
            Ordering::Greater => {
                only_b.push(b[j].as_str());
                j += 1;
            }
        }
    }
    only_a.extend(a[i..].iter().map(String::as_str));
    only_b.extend(b[j..].iter().map(String::as_str));
    (only_a, only_b)
}

/// Up to three rows, tabs shown as ` | `, and how many more.
fn examples(rows: &[&str]) -> String {
    let shown: Vec<String> = rows
        .iter()
        .take(3)
        .map(|r| format!("`{}`", r.replace('\t', " | ")))
        .collect();
    let more = rows.len().saturating_sub(3);
    let tail = if more > 0 {
        format!(" (+{more} more)")
    } else {
        String::new()
    };
    format!("{}: {}{tail}", n_rows(rows.len()), shown.join(", "))
}

fn n_rows(n: usize) -> String {
    if n == 1 {
        "1 row".to_owned()
    } else {
        format!("{n} rows")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, count: u64, timed_out: bool) -> MatchLine {
        MatchLine {
            name: name.into(),
            count,
            ms: 1.0,
            timed_out,
        }
    }

    #[test]
    fn equal_counts_pass() {
        let a = [line("q1", 3, false), line("q2", 80, false)];
        let expected = BTreeMap::from([("q1".to_owned(), 3), ("q2".to_owned(), 80)]);
        let c = counts("gpu", &a, &a, Some(&expected));
        assert_eq!(c.compared, 2);
        assert!(c.mismatches.is_empty() && c.unverified.is_empty());
    }

    #[test]
    fn differing_counts_and_missing_queries_are_mismatches() {
        let ours = [line("q1", 3, false), line("q2", 79, false)];
        let dfs = [
            line("q1", 3, false),
            line("q2", 80, false),
            line("q3", 1, false),
        ];
        let c = counts("gpu", &ours, &dfs, None);
        assert_eq!((c.queries, c.compared), (3, 2));
        assert_eq!(
            c.mismatches,
            [
                Mismatch {
                    query: "q2".into(),
                    detail: "gpu 79, dfs 80".into()
                },
                Mismatch {
                    query: "q3".into(),
                    detail: "no answer from gpu".into()
                }
            ]
        );
    }

    #[test]
    fn agreeing_engines_still_fail_against_the_expected_count() {
        let both = [line("q1", 4, false)];
        let expected = BTreeMap::from([("q1".to_owned(), 3)]);
        let c = counts("emulated", &both, &both, Some(&expected));
        assert_eq!(c.mismatches[0].detail, "emulated 4, dfs 4, expected 3");
        // A query the file does not name is held to dfs only.
        let c = counts("emulated", &both, &both, Some(&BTreeMap::new()));
        assert!(c.mismatches.is_empty());
    }

    #[test]
    fn a_timed_out_query_is_unverified_not_compared() {
        let ours = [line("q1", 2, true)];
        let dfs = [line("q1", 5, false)];
        let c = counts("gpu", &ours, &dfs, None);
        assert_eq!((c.compared, c.unverified), (0, vec!["q1".to_owned()]));
        assert!(c.mismatches.is_empty());
    }

    #[test]
    fn rows_compare_as_multisets_in_any_order() {
        let a = Answer::parse("x\ty\ncat\thome\ndog\thome\ndog\thome\n", false).unwrap();
        let b = Answer::parse("x\ty\ndog\thome\ncat\thome\ndog\thome\n", false).unwrap();
        assert_eq!(answers("gpu", &a, &b), None);
        let c = Answer::parse("x\ty\ndog\thome\ncat\thome\n", false).unwrap();
        assert_eq!(
            answers("gpu", &a, &c).unwrap(),
            "gpu 3 rows, dfs 2 rows; only from gpu: 1 row: `dog | home`"
        );
    }

    #[test]
    fn headers_and_counts_are_compared() {
        let a = Answer::parse("x\ncat\n", false).unwrap();
        let b = Answer::parse("y\ncat\n", false).unwrap();
        assert!(answers("gpu", &a, &b).unwrap().starts_with("header"));
        let n = Answer::parse("6949\n", true).unwrap();
        let m = Answer::parse("6950\n", true).unwrap();
        assert_eq!(answers("gpu", &n, &n), None);
        assert_eq!(answers("gpu", &n, &m).unwrap(), "gpu 6949, dfs 6950");
        assert_eq!(Answer::parse("lots\n", true), None);
        let cut = "6949\n# timed out: the answer is incomplete\n";
        assert_eq!(Answer::parse(cut, true), Some(n.clone()));
        assert!(answers("gpu", &n, &a).is_some());
    }

    #[test]
    fn row_examples_are_capped() {
        let many: Vec<String> = (0..5).map(|i| format!("r{i}")).collect();
        let text = row_difference("gpu", &many, &[]).unwrap();
        assert!(text.ends_with("`r0`, `r1`, `r2` (+2 more)"), "{text}");
        assert!(text.contains("only from gpu: 5 rows"));
    }
}

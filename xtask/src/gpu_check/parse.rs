//! Reading what the tools print: `gpsense match` lines, `gpsense query`'s summary, expected-count
//! files, compute-sanitizer's summaries and nvidia-smi's CSV. Pure functions, unit-tested below.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

/// One line of `gpsense match`: `name<TAB>count<TAB>ms`, then optional fields (`limit reached`,
/// `timed out`, `MISMATCH: expected N`, search counters), of which only a time-out matters here.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchLine {
    pub name: String,
    pub count: u64,
    pub ms: f64,
    /// The count is only a lower bound.
    pub timed_out: bool,
}

pub fn match_line(line: &str) -> Result<MatchLine> {
    let mut fields = line.split('\t');
    let (Some(name), Some(count), Some(ms)) = (fields.next(), fields.next(), fields.next()) else {
        bail!("expected `name<TAB>count<TAB>ms`, got {line:?}");
    };
    Ok(MatchLine {
        name: name.to_owned(),
        count: count
            .parse()
            .with_context(|| format!("bad count {count:?} in {line:?}"))?,
        ms: ms
            .parse()
            .with_context(|| format!("bad time {ms:?} in {line:?}"))?,
        timed_out: fields.any(|f| f == "timed out"),
    })
}

/// Every non-empty line of `gpsense match`'s standard output, and the errors of those that could not
/// be read (a run killed mid-line leaves half a line).
pub fn match_output(text: &str) -> (Vec<MatchLine>, Vec<String>) {
    let mut lines = Vec::new();
    let mut errors = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match match_line(line) {
            Ok(l) => lines.push(l),
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    (lines, errors)
}

/// Expected counts as `gpsense match --expected` reads them: `name:count` (the SIGMOD study) or
/// `name count` (yeast_ans.txt) lines, a trailing `.graph` dropped from the name.
pub fn expected(text: &str) -> Result<BTreeMap<String, u64>> {
    Ok(gpsense_graph::ingest::expected_counts(text)?
        .into_iter()
        .collect())
}

/// What `gpsense query` says on stderr when done: `N rows in X ms [iso semantics, dfs engine]`.
#[derive(Clone, Debug, PartialEq)]
pub struct QuerySummary {
    pub ms: f64,
    pub timed_out: bool,
}

pub fn query_summary(stderr: &str) -> Option<QuerySummary> {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.contains(" ms [") && l.ends_with(" engine]"))?;
    let (before, _) = line.rsplit_once(" ms [")?;
    let (_, ms) = before.rsplit_once(' ')?;
    Some(QuerySummary {
        ms: ms.parse().ok()?,
        timed_out: line.contains("(timed out"),
    })
}

/// compute-sanitizer's verdict lines (`ERROR SUMMARY: 0 errors`, `RACECHECK SUMMARY: 0 hazards
/// displayed (0 errors, 0 warnings)`) and the errors they add up to; `None` when it printed no
/// summary, i.e. it did not check anything.
#[derive(Clone, Debug, PartialEq)]
pub struct SanitizerSummary {
    pub lines: Vec<String>,
    pub errors: Option<u64>,
}

pub fn sanitizer_summary(output: &str) -> SanitizerSummary {
    let mut lines = Vec::new();
    let mut errors = None;
    for line in output.lines() {
        let text = line.trim_start_matches('=').trim();
        let n = if let Some(rest) = text.strip_prefix("ERROR SUMMARY:") {
            leading_number(rest)
        } else if let Some(rest) = text.strip_prefix("RACECHECK SUMMARY:") {
            // Hazards are counted in the parentheses as errors and warnings; only errors fail.
            rest.split_once('(').and_then(|(_, r)| leading_number(r))
        } else {
            continue;
        };
        lines.push(text.to_owned());
        // A summary whose number cannot be read counts as an error rather than a pass.
        errors = Some(errors.unwrap_or(0) + n.unwrap_or(1));
    }
    SanitizerSummary { lines, errors }
}

fn leading_number(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// nvidia-smi's `--format=csv` output without its header: one GPU per line.
pub fn gpu_rows(csv: &str) -> Vec<String> {
    csv.lines()
        .skip(1)
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_match_lines_with_and_without_flags() {
        let plain = match_line("query_dense_16_1\t3\t0.281").unwrap();
        assert_eq!(
            plain,
            MatchLine {
                name: "query_dense_16_1".into(),
                count: 3,
                ms: 0.281,
                timed_out: false
            }
        );
        let cut = match_line("q\t10\t60000.1\ttimed out\tMISMATCH: expected 12").unwrap();
        assert!(cut.timed_out);
        assert_eq!(cut.count, 10);
        let stats = match_line("q\t5\t1.0\tnodes=3 backjumps=0 twins=0").unwrap();
        assert!(!stats.timed_out);
    }

    #[test]
    fn rejects_malformed_match_lines() {
        assert!(match_line("q 3 0.2").is_err());
        assert!(match_line("q\tmany\t0.2").is_err());
        assert!(match_line("q\t3").is_err());
        let (all, errors) = match_output("a\t1\t0.1\n\nb\t2\t0.2\n");
        assert_eq!((all.len(), errors.len()), (2, 0));
        let (some, errors) = match_output("a\t1\t0.1\nb\t2");
        assert_eq!(some.len(), 1);
        assert_eq!(errors, ["expected `name<TAB>count<TAB>ms`, got \"b\\t2\""]);
    }

    #[test]
    fn reads_both_expected_formats() {
        let hprd = expected("query_dense_16_1:3\nquery_dense_16_2:80\n").unwrap();
        assert_eq!(hprd.get("query_dense_16_2"), Some(&80));
        let yeast = expected("query_dense_4_1.graph 720\n\nquery_dense_4_2.graph 296\n").unwrap();
        assert_eq!(yeast.get("query_dense_4_1"), Some(&720));
        assert_eq!(yeast.len(), 2);
        assert!(expected("no count here\n").is_err());
    }

    #[test]
    fn reads_the_query_summary() {
        let err = "note: x\n455 rows in 0.6 ms [iso semantics, dfs engine]\n";
        assert_eq!(
            query_summary(err),
            Some(QuerySummary {
                ms: 0.6,
                timed_out: false
            })
        );
        let cut = "1,000 matches (timed out: the answer is incomplete) in 60001.2 ms \
                   [hom semantics, gpu engine]";
        let s = query_summary(cut).unwrap();
        assert!(s.timed_out);
        assert_eq!(s.ms, 60001.2);
        assert_eq!(query_summary("error: --engine gpu: no GPU"), None);
    }

    #[test]
    fn adds_up_sanitizer_summaries() {
        let clean = "========= COMPUTE-SANITIZER\nq\t3\t1.0\n========= ERROR SUMMARY: 0 errors\n";
        assert_eq!(sanitizer_summary(clean).errors, Some(0));
        let race = "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n";
        let s = sanitizer_summary(race);
        assert_eq!(s.errors, Some(1));
        assert_eq!(
            s.lines,
            ["RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)"]
        );
        let bad = "========= ERROR SUMMARY: 4 errors\n";
        assert_eq!(sanitizer_summary(bad).errors, Some(4));
        assert_eq!(sanitizer_summary("no tool output").errors, None);
    }

    #[test]
    fn reads_nvidia_smi_rows() {
        let csv = "name, driver_version, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB\n";
        assert_eq!(
            gpu_rows(csv),
            ["NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB"]
        );
        assert!(gpu_rows("name\n").is_empty());
    }
}

//! Results: one [`Record`] per (query, engine, semantics); the count check against the reference
//! under the same semantics; per-workload summaries; `results.csv`, `summary.csv` and the markdown
//! tables of `report.md`.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::exec::{median, Outcome};
use super::text::Sem;

/// Our engine every ratio is taken against.
pub const OURS: &str = "gpsense-dfs";

/// One query on one engine.
#[derive(Clone, Debug)]
pub struct Record {
    pub workload: String,
    pub experiment: Option<String>,
    pub x: Option<f64>,
    pub group: String,
    pub query: String,
    pub engine: String,
    pub sem: Sem,
    pub outcome: Outcome,
    /// The published answer (benchmark suites, iso).
    pub expected: Option<u64>,
    /// The count this one must equal (same semantics), once [`check`] has run.
    pub reference: Option<u64>,
    pub agree: Agreement,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agreement {
    Agree,
    Disagree,
    /// No reference under the same semantics (or no count).
    Unchecked,
}

impl Record {
    pub fn count(&self) -> Option<u64> {
        match &self.outcome {
            Outcome::Ok { count, .. } => Some(*count),
            _ => None,
        }
    }

    /// The median of the runs, for answered queries.
    pub fn seconds(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Ok { seconds, .. } => median(seconds),
            _ => None,
        }
    }

    pub fn status(&self) -> &'static str {
        match self.outcome {
            Outcome::Ok { .. } => "ok",
            Outcome::Timeout(_) => "timeout",
            Outcome::Error(_) => "error",
            Outcome::Unsupported(_) => "unsupported",
            Outcome::Skipped(_) => "skipped",
        }
    }

    pub fn note(&self) -> &str {
        match &self.outcome {
            Outcome::Ok { .. } => "",
            Outcome::Timeout(m)
            | Outcome::Error(m)
            | Outcome::Unsupported(m)
            | Outcome::Skipped(m) => m,
        }
    }
}

/// Sets `reference` and `agree` of every record:
/// - `iso`: the published answer where there is one; otherwise gpsense-dfs's count (for gpsense-dfs
///   itself, the first other gpsense engine's);
/// - `hom`: gpsense-dfs's `hom` count;
/// - `induced` (petgraph): gpsense's matches without extra edges, computed by the runner.
pub fn check(records: &mut [Record]) {
    let mut counts: BTreeMap<(String, String, Sem, String), u64> = BTreeMap::new();
    for r in records.iter() {
        if let Some(c) = r.count() {
            counts.insert(
                (r.workload.clone(), r.query.clone(), r.sem, r.engine.clone()),
                c,
            );
        }
    }
    let get = |r: &Record, engine: &str| {
        counts
            .get(&(
                r.workload.clone(),
                r.query.clone(),
                r.sem,
                engine.to_owned(),
            ))
            .copied()
    };
    for r in records.iter_mut() {
        r.reference = match r.sem {
            Sem::Induced => match &r.outcome {
                Outcome::Ok { reference, .. } => *reference,
                _ => None,
            },
            Sem::Iso if r.expected.is_some() => r.expected,
            _ if r.engine == OURS => ["gpsense-kernels", "gpsense-emulated"]
                .iter()
                .find_map(|e| get(r, e)),
            _ => get(r, OURS),
        };
        r.agree = match (r.count(), r.reference) {
            (Some(c), Some(want)) if c == want => Agreement::Agree,
            (Some(_), Some(_)) => Agreement::Disagree,
            _ => Agreement::Unchecked,
        };
    }
}

/// One engine on one workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub workload: String,
    pub engine: String,
    pub sem: Sem,
    pub queries: usize,
    pub ok: usize,
    pub timeouts: usize,
    pub errors: usize,
    pub unsupported: usize,
    pub skipped: usize,
    pub disagree: usize,
    pub unchecked: usize,
    /// Median over answered queries.
    pub median_ms: Option<f64>,
    /// Sum over answered queries.
    pub total_ms: f64,
    /// Median over the queries both answered of (this engine's time / gpsense-dfs's time under the
    /// same semantics; `iso` for petgraph's `induced`), and how many queries that is.
    pub ratio: Option<f64>,
    pub ratio_queries: usize,
    /// A reason shared by every unanswered query, for the table.
    pub reason: Option<String>,
}

/// Summaries in a stable order: workloads as given, engines as given.
pub fn summarise(records: &[Record], workloads: &[String], engines: &[String]) -> Vec<Summary> {
    let mut ours: BTreeMap<(String, String, Sem), f64> = BTreeMap::new();
    for r in records.iter().filter(|r| r.engine == OURS) {
        if let Some(s) = r.seconds() {
            ours.insert((r.workload.clone(), r.query.clone(), r.sem), s);
        }
    }
    let mut out = Vec::new();
    for w in workloads {
        for e in engines {
            for sem in [Sem::Iso, Sem::Hom, Sem::Induced] {
                let rs: Vec<&Record> = records
                    .iter()
                    .filter(|r| &r.workload == w && &r.engine == e && r.sem == sem)
                    .collect();
                if rs.is_empty() {
                    continue;
                }
                let times: Vec<f64> = rs.iter().filter_map(|r| r.seconds()).collect();
                let ours_sem = if sem == Sem::Induced { Sem::Iso } else { sem };
                let ratios: Vec<f64> = rs
                    .iter()
                    .filter_map(|r| {
                        let mine = r.seconds()?;
                        let base = ours.get(&(r.workload.clone(), r.query.clone(), ours_sem))?;
                        (*base > 0.0).then(|| mine / base)
                    })
                    .collect();
                let unanswered: Vec<&str> = rs
                    .iter()
                    .filter(|r| r.count().is_none())
                    .map(|r| r.note())
                    .collect();
                let reason = match unanswered.first() {
                    Some(first) if unanswered.iter().all(|n| n == first) && !first.is_empty() => {
                        Some(first.to_string())
                    }
                    _ => None,
                };
                let n = |s: &str| rs.iter().filter(|r| r.status() == s).count();
                out.push(Summary {
                    workload: w.clone(),
                    engine: e.clone(),
                    sem,
                    queries: rs.len(),
                    ok: n("ok"),
                    timeouts: n("timeout"),
                    errors: n("error"),
                    unsupported: n("unsupported"),
                    skipped: n("skipped"),
                    disagree: rs.iter().filter(|r| r.agree == Agreement::Disagree).count(),
                    unchecked: rs
                        .iter()
                        .filter(|r| r.count().is_some() && r.agree == Agreement::Unchecked)
                        .count(),
                    median_ms: median(&times).map(|s| s * 1e3),
                    total_ms: times.iter().sum::<f64>() * 1e3,
                    ratio: median(&ratios),
                    ratio_queries: ratios.len(),
                    reason,
                });
            }
        }
    }
    out
}

/// A CSV field, quoted when needed.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|v| v.to_string()).unwrap_or_default()
}

/// `results.csv`: one line per query and engine; DISAGREE marks a count that differs from the
/// reference under the same semantics.
pub fn results_csv(records: &[Record]) -> String {
    let mut out = String::from(
        "workload,experiment,x,group,query,engine,semantics,status,count,reference,expected,DISAGREE,median_seconds,runs,seconds,note\n",
    );
    for r in records {
        let (runs, seconds) = match &r.outcome {
            Outcome::Ok { seconds, .. } => (
                seconds.len().to_string(),
                seconds
                    .iter()
                    .map(|s| format!("{s:.9}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ),
            _ => (String::new(), String::new()),
        };
        let row = [
            field(&r.workload),
            field(r.experiment.as_deref().unwrap_or("")),
            opt(r.x),
            field(&r.group),
            field(&r.query),
            field(&r.engine),
            r.sem.name().to_owned(),
            r.status().to_owned(),
            opt(r.count()),
            opt(r.reference),
            opt(r.expected),
            if r.agree == Agreement::Disagree {
                "DISAGREE".into()
            } else {
                String::new()
            },
            opt(r.seconds().map(|s| format!("{s:.9}"))),
            runs,
            seconds,
            field(r.note()),
        ];
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out
}

/// `summary.csv`: one line per workload, engine and semantics.
pub fn summary_csv(summaries: &[Summary]) -> String {
    let mut out = String::from(
        "workload,engine,semantics,queries,ok,timeout,error,unsupported,skipped,DISAGREE,unchecked,median_ms,total_ms,ratio_to_gpsense_dfs,ratio_queries\n",
    );
    for s in summaries {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{:.6},{},{}",
            field(&s.workload),
            field(&s.engine),
            s.sem.name(),
            s.queries,
            s.ok,
            s.timeouts,
            s.errors,
            s.unsupported,
            s.skipped,
            s.disagree,
            s.unchecked,
            opt(s.median_ms.map(|m| format!("{m:.6}"))),
            s.total_ms,
            opt(s.ratio.map(|r| format!("{r:.3}"))),
            s.ratio_queries
        );
    }
    out
}

/// Milliseconds for a table: three significant digits.
pub fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn ratio_text(s: &Summary) -> String {
    match s.ratio {
        _ if s.engine == OURS && s.sem != Sem::Induced => "1 (reference)".into(),
        Some(r) => {
            let mark = if s.sem == Sem::Induced {
                " (induced: another problem)"
            } else {
                ""
            };
            let r = if r >= 10.0 {
                format!("{r:.0}x")
            } else {
                format!("{r:.2}x")
            };
            format!("{r} on {}{mark}", s.ratio_queries)
        }
        None => "n/a".into(),
    }
}

fn red(s: &str) -> String {
    format!("<span style=\"color:red\">{s}</span>")
}

/// The markdown table of one workload's summaries.
pub fn workload_table(summaries: &[&Summary]) -> String {
    let mut out = String::from(
        "| engine | semantics | answered | timeouts | not run | median ms | ratio to gpsense-dfs (median of per-query ratios, on N queries) | counts |\n|---|---|---|---|---|---|---|---|\n",
    );
    for s in summaries {
        let not_run = s.errors + s.unsupported + s.skipped;
        let not_run = match (&s.reason, not_run) {
            (_, 0) => "0".to_owned(),
            (Some(r), n) => format!("{n}: {}", r.replace('|', "/")),
            (None, n) => format!(
                "{n} (errors {}, unsupported {}, skipped {})",
                s.errors, s.unsupported, s.skipped
            ),
        };
        let counts = if s.disagree > 0 {
            red(&format!("DISAGREE on {} of {}", s.disagree, s.ok))
        } else if s.ok == 0 {
            "-".into()
        } else if s.unchecked > 0 {
            format!("agree on {}, {} unchecked", s.ok - s.unchecked, s.unchecked)
        } else {
            format!("all {} agree", s.ok)
        };
        let _ = writeln!(
            out,
            "| {} | {} | {}/{} | {} | {} | {} | {} | {} |",
            s.engine,
            s.sem.name(),
            s.ok,
            s.queries,
            s.timeouts,
            not_run,
            s.median_ms.map(ms).unwrap_or_else(|| "-".into()),
            ratio_text(s),
            counts
        );
    }
    out
}

/// Every disagreement, in red, with the counts.
pub fn disagreements(records: &[Record]) -> String {
    let mut out = String::new();
    for r in records.iter().filter(|r| r.agree == Agreement::Disagree) {
        let _ = writeln!(
            out,
            "- {}",
            red(&format!(
                "{} / {} / {} ({}): count {} but {} under the same semantics",
                r.workload,
                r.query,
                r.engine,
                r.sem.name(),
                opt(r.count()),
                opt(r.reference)
            ))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(query: &str, engine: &str, sem: Sem, outcome: Outcome) -> Record {
        Record {
            workload: "w".into(),
            experiment: None,
            x: None,
            group: "g".into(),
            query: query.into(),
            engine: engine.into(),
            sem,
            outcome,
            expected: None,
            reference: None,
            agree: Agreement::Unchecked,
        }
    }

    fn ok(count: u64, seconds: &[f64]) -> Outcome {
        Outcome::Ok {
            count,
            seconds: seconds.to_vec(),
            reference: None,
        }
    }

    fn sample() -> Vec<Record> {
        vec![
            rec("q1", OURS, Sem::Iso, ok(10, &[0.001, 0.002, 0.003])),
            rec("q2", OURS, Sem::Iso, ok(5, &[0.004])),
            rec("q1", "oxigraph-sparql", Sem::Iso, ok(10, &[0.010])),
            rec("q2", "oxigraph-sparql", Sem::Iso, ok(6, &[0.040])),
            rec("q1", OURS, Sem::Hom, ok(12, &[0.001])),
            rec("q1", "kuzu-cypher", Sem::Hom, ok(12, &[0.003])),
            rec(
                "q2",
                "kuzu-cypher",
                Sem::Iso,
                Outcome::Timeout("killed after 60 s".into()),
            ),
            rec(
                "q1",
                "petgraph-vf2",
                Sem::Induced,
                Outcome::Ok {
                    count: 3,
                    seconds: vec![0.02],
                    reference: Some(3),
                },
            ),
        ]
    }

    #[test]
    fn counts_are_checked_under_the_same_semantics() {
        let mut rs = sample();
        rs[1].expected = Some(5);
        check(&mut rs);
        assert_eq!(
            rs[0].agree,
            Agreement::Unchecked,
            "no other gpsense engine ran"
        );
        assert_eq!(rs[1].agree, Agreement::Agree, "published answer");
        assert_eq!(rs[2].agree, Agreement::Agree);
        assert_eq!(rs[3].agree, Agreement::Disagree);
        assert_eq!(rs[3].reference, Some(5));
        assert_eq!(
            rs[5].agree,
            Agreement::Agree,
            "hom against our hom, not our iso"
        );
        assert_eq!(rs[6].agree, Agreement::Unchecked);
        assert_eq!(
            rs[7].agree,
            Agreement::Agree,
            "induced against the induced reference"
        );
    }

    #[test]
    fn summaries_ratios_and_tables() {
        let mut rs = sample();
        check(&mut rs);
        let engines: Vec<String> = [OURS, "oxigraph-sparql", "kuzu-cypher", "petgraph-vf2"]
            .map(String::from)
            .to_vec();
        let s = summarise(&rs, &["w".into()], &engines);
        let ours = &s[0];
        assert_eq!((ours.engine.as_str(), ours.sem), (OURS, Sem::Iso));
        assert_eq!(ours.ok, 2);
        // Medians of runs: q1 2 ms, q2 4 ms; median over queries 3 ms.
        assert!((ours.median_ms.unwrap() - 3.0).abs() < 1e-9);
        let ox = s.iter().find(|x| x.engine == "oxigraph-sparql").unwrap();
        // Ratios 10/2 = 5 and 40/4 = 10: median 7.5.
        assert!((ox.ratio.unwrap() - 7.5).abs() < 1e-9);
        assert_eq!(ox.disagree, 1);
        let kuzu_iso = s
            .iter()
            .find(|x| x.engine == "kuzu-cypher" && x.sem == Sem::Iso)
            .unwrap();
        assert_eq!((kuzu_iso.timeouts, kuzu_iso.ok), (1, 0));
        let pet = s.iter().find(|x| x.engine == "petgraph-vf2").unwrap();
        assert!(
            (pet.ratio.unwrap() - 10.0).abs() < 1e-9,
            "against our iso time"
        );

        let table = workload_table(&s.iter().collect::<Vec<_>>());
        assert!(
            table.contains("<span style=\"color:red\">DISAGREE on 1 of 2</span>"),
            "{table}"
        );
        assert!(
            table.contains("| gpsense-dfs | iso | 2/2 | 0 | 0 | 3.00 | 1 (reference) |"),
            "{table}"
        );
        assert!(
            table.contains("10x on 1 (induced: another problem)"),
            "{table}"
        );
        let list = disagreements(&rs);
        assert!(
            list.contains("q2 / oxigraph-sparql (iso): count 6 but 5"),
            "{list}"
        );
    }

    #[test]
    fn csv_has_a_disagree_column_and_quotes() {
        let mut rs = sample();
        rs[6].outcome = Outcome::Error("boom, \"quoted\"".into());
        check(&mut rs);
        let csv = results_csv(&rs);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), rs.len() + 1);
        let header: Vec<&str> = lines[0].split(',').collect();
        let col = header.iter().position(|h| *h == "DISAGREE").unwrap();
        let row3: Vec<&str> = lines[4].split(',').collect();
        assert_eq!(row3[col], "DISAGREE");
        assert_eq!(row3[8], "6");
        assert!(
            lines[7].ends_with(",\"boom, \"\"quoted\"\"\""),
            "{}",
            lines[7]
        );
        assert!(lines[1].contains(",0.002000000,3,0.001000000 0.002000000 0.003000000,"));
        let summary = summary_csv(&summarise(&rs, &["w".into()], &[OURS.into()]));
        assert!(summary
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("w,gpsense-dfs,iso,2,2,0,0,0,0,0,"));
    }

    #[test]
    fn milliseconds_are_rounded_to_three_digits() {
        assert_eq!(ms(0.01234), "0.012");
        assert_eq!(ms(1.234), "1.23");
        assert_eq!(ms(12.34), "12.3");
        assert_eq!(ms(1234.5), "1234");
    }
}

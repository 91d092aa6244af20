//! The side-by-side report: a summary section of `report.md`, every query in `egsm.md`, and
//! `egsm.csv`. Pure, unit-tested below.

use std::fmt::Write as _;

use super::side::{Outcome, Row, SideBySide, SuiteSide};

/// How EGSM's times compare with gpsense's (said once in each file).
const TIMES: &str = "gpsense's times are the per-query milliseconds it prints, in one process \
    with the data graph loaded once. EGSM ms: its own timers (cuckoo tries, filtering, join; the \
    host's wall time of each, synchronised); they leave out reading \
    the graphs, the upload, its ordering on the host and its result pool's allocation. EGSM \
    process: the whole process, CUDA's start included (its command line takes one query).";

/// One suite's figures.
#[derive(Default)]
struct Tally {
    rows: usize,
    ran: usize,
    differ: Vec<String>,
    timed_out: usize,
    failed: Vec<String>,
    skipped: usize,
    /// Queries all three answered alike within their limits: the times below are theirs.
    compared: usize,
    engine_ms: f64,
    dfs_ms: f64,
    egsm_ms: f64,
    egsm_process_ms: f64,
    /// Compared queries on which gpsense's engine, dfs, EGSM was the fastest.
    fastest: [usize; 3],
}

fn tally(s: &SuiteSide, engine: &str) -> Tally {
    let mut t = Tally {
        rows: s.rows.len(),
        ..Tally::default()
    };
    for row in &s.rows {
        match &row.egsm {
            Outcome::Skipped(_) => t.skipped += 1,
            Outcome::TimedOut => t.timed_out += 1,
            Outcome::Failed(why) => t.failed.push(format!("{}: {why}", row.query)),
            Outcome::Ran { run, wall_ms } => {
                t.ran += 1;
                if agrees(row) == Some(false) {
                    t.differ.push(format!(
                        "{}: EGSM {}, {}",
                        row.query,
                        run.count,
                        gpsense_counts(row, engine)
                    ));
                    continue;
                }
                let (Some(e), Some(d)) = (&row.engine, &row.dfs) else {
                    continue;
                };
                if e.timed_out || d.timed_out || e.count != d.count || agrees(row).is_none() {
                    continue;
                }
                t.compared += 1;
                (t.engine_ms, t.dfs_ms) = (t.engine_ms + e.ms, t.dfs_ms + d.ms);
                t.egsm_ms += run.ms();
                t.egsm_process_ms += wall_ms;
                let times = [e.ms, d.ms, run.ms()];
                let best = (0..3).fold(0, |b, i| if times[i] < times[b] { i } else { b });
                t.fastest[best] += 1;
            }
        }
    }
    t
}

/// Whether EGSM's count equals the reference; `None` when either is missing.
fn agrees(row: &Row) -> Option<bool> {
    match (&row.egsm, row.reference()) {
        (Outcome::Ran { run, .. }, Some(want)) => Some(run.count == want),
        _ => None,
    }
}

fn gpsense_counts(row: &Row, engine: &str) -> String {
    let c = |l: &Option<crate::gpu_check::parse::MatchLine>| {
        l.as_ref().map_or("-".to_owned(), |l| {
            format!(
                "{}{}",
                l.count,
                if l.timed_out { " (timed out)" } else { "" }
            )
        })
    };
    let published = row
        .published
        .map_or(String::new(), |p| format!(", published {p}"));
    format!(
        "dfs {}, {engine} {}{published}",
        c(&row.dfs),
        c(&row.engine)
    )
}

/// The section of `report.md`.
pub fn summary(md: &mut String, s: &SideBySide, detail_file: &str) {
    let e = &s.engine;
    let _ = writeln!(md, "## EGSM side by side\n");
    let _ = writeln!(
        md,
        "EGSM (`{}`, default settings: BFS-DFS, all filters, adaptive order, load balancing) on \
         the iso suites' queries, each count held to dfs's (else the published one); skipped: \
         the queries beyond its bounds (more than 16 vertices or 32 edges); a process per query, killed after {:.0} s. {TIMES} \
         Every query: [{detail_file}]({detail_file}). EGSM's answers do not decide the verdict.\n",
        s.bin,
        s.limit.as_secs_f64()
    );
    if let Some(why) = &s.problem {
        let _ = writeln!(md, "**EGSM did not run**: {why}\n");
        return;
    }
    let _ = writeln!(
        md,
        "| suite | queries | EGSM ran | agree | differ | timed out | failed | skipped | \
         compared | {e} ms | dfs ms | EGSM ms | EGSM process ms | fastest: {e} / dfs / EGSM |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let tallies: Vec<Tally> = s.suites.iter().map(|x| tally(x, e)).collect();
    for (suite, t) in s.suites.iter().zip(&tallies) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.0} | {} / {} / {} |",
            suite.name,
            t.rows,
            t.ran,
            t.ran - t.differ.len(),
            t.differ.len(),
            t.timed_out,
            t.failed.len(),
            t.skipped,
            t.compared,
            t.engine_ms,
            t.dfs_ms,
            t.egsm_ms,
            t.egsm_process_ms,
            t.fastest[0],
            t.fastest[1],
            t.fastest[2]
        );
    }
    md.push_str(
        "\nThe times are sums over the compared queries (all three answered, alike, within their limits).\n\n",
    );
    for (suite, t) in s.suites.iter().zip(&tallies) {
        if let Some(why) = &suite.problem {
            let _ = writeln!(md, "- {}: nothing ran: {why}", suite.name);
        }
        for d in &t.differ {
            let _ = writeln!(md, "- {}: **EGSM differs**: {d}", suite.name);
        }
        for f in t.failed.iter().take(20) {
            let _ = writeln!(md, "- {}: EGSM failed: {f}", suite.name);
        }
        if t.failed.len() > 20 {
            let _ = writeln!(
                md,
                "- {}: {} more failures in {detail_file}",
                suite.name,
                t.failed.len() - 20
            );
        }
    }
    md.push('\n');
}

/// One line for the terminal: what ran and how much agreed, over all suites.
pub fn line(s: &SideBySide) -> String {
    if let Some(why) = &s.problem {
        return format!("did not run: {why}");
    }
    let tallies: Vec<Tally> = s.suites.iter().map(|x| tally(x, &s.engine)).collect();
    let sum = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    format!(
        "{} queries ran, {} agree with dfs, {} differ, {} timed out, {} failed, {} skipped",
        sum(|t| t.ran),
        sum(|t| t.ran - t.differ.len()),
        sum(|t| t.differ.len()),
        sum(|t| t.timed_out),
        sum(|t| t.failed.len()),
        sum(|t| t.skipped)
    )
}

/// `egsm.md`: every query of every suite.
pub fn detail(s: &SideBySide) -> String {
    let e = &s.engine;
    let mut md = format!("# EGSM side by side, per query\n\n{TIMES}\n\n");
    if let Some(why) = &s.problem {
        let _ = writeln!(md, "**EGSM did not run**: {why}");
        return md;
    }
    for suite in &s.suites {
        let _ = writeln!(md, "## {}\n", suite.name);
        if let Some(why) = &suite.problem {
            let _ = writeln!(md, "Nothing ran: {why}\n");
            continue;
        }
        let _ = writeln!(
            md,
            "| query | published | dfs | {e} | EGSM | agrees | {e} ms | dfs ms | EGSM ms | EGSM process ms |\n\
             |---|---:|---:|---:|---|---|---:|---:|---:|---:|"
        );
        for r in &suite.rows {
            let f = fields(r);
            let _ = writeln!(md, "| {} |", f.join(" | ").replace('\n', " "));
        }
        md.push('\n');
    }
    md
}

/// The columns of one row, as text (the table's order).
fn fields(r: &Row) -> Vec<String> {
    let count = |l: &Option<crate::gpu_check::parse::MatchLine>| {
        l.as_ref().map_or("-".to_owned(), |l| {
            format!(
                "{}{}",
                l.count,
                if l.timed_out { " (timed out)" } else { "" }
            )
        })
    };
    let ms = |l: &Option<crate::gpu_check::parse::MatchLine>| {
        l.as_ref()
            .map_or("-".to_owned(), |l| format!("{:.3}", l.ms))
    };
    let (egsm, egsm_ms, process) = match &r.egsm {
        Outcome::Ran { run, wall_ms } => (
            run.count.to_string(),
            format!("{:.3}", run.ms()),
            format!("{wall_ms:.0}"),
        ),
        Outcome::Skipped(why) => (format!("skipped: {why}"), "-".into(), "-".into()),
        Outcome::TimedOut => ("timed out".into(), "-".into(), "-".into()),
        Outcome::Failed(why) => (format!("failed: {why}"), "-".into(), "-".into()),
    };
    let agrees = match agrees(r) {
        Some(true) => "yes",
        Some(false) => "**no**",
        None => "-",
    };
    vec![
        r.query.clone(),
        r.published.map_or("-".into(), |p| p.to_string()),
        count(&r.dfs),
        count(&r.engine),
        egsm.replace('|', "\\|"),
        agrees.into(),
        ms(&r.engine),
        ms(&r.dfs),
        egsm_ms,
        process,
    ]
}

/// `egsm.csv`: one line per query, EGSM's outcome as a word and its detail apart.
pub fn csv(s: &SideBySide) -> String {
    let mut out = String::from(
        "suite,query,published,dfs_count,dfs_ms,engine,engine_count,engine_ms,egsm,egsm_count,egsm_ms,egsm_process_ms,egsm_detail\n",
    );
    let opt = |v: Option<String>| v.unwrap_or_default();
    for suite in &s.suites {
        for r in &suite.rows {
            let (word, count, ms, process, detail) = match &r.egsm {
                Outcome::Ran { run, wall_ms } => (
                    "ran",
                    run.count.to_string(),
                    format!("{:.4}", run.ms()),
                    format!("{wall_ms:.1}"),
                    String::new(),
                ),
                Outcome::Skipped(w) => (
                    "skipped",
                    String::new(),
                    String::new(),
                    String::new(),
                    w.clone(),
                ),
                Outcome::TimedOut => (
                    "timed_out",
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                ),
                Outcome::Failed(w) => (
                    "failed",
                    String::new(),
                    String::new(),
                    String::new(),
                    w.clone(),
                ),
            };
            let line = |l: &Option<crate::gpu_check::parse::MatchLine>| {
                (
                    opt(l.as_ref().map(|l| l.count.to_string())),
                    opt(l.as_ref().map(|l| format!("{:.4}", l.ms))),
                )
            };
            let ((dc, dm), (ec, em)) = (line(&r.dfs), line(&r.engine));
            let _ = writeln!(
                out,
                "{},{},{},{dc},{dm},{},{ec},{em},{word},{count},{ms},{process},\"{}\"",
                suite.name.replace(',', ";"),
                r.query,
                opt(r.published.map(|p| p.to_string())),
                s.engine,
                detail.replace('"', "'")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_check::egsm::output::EgsmRun;
    use crate::gpu_check::parse::MatchLine;
    use std::time::Duration;

    fn line(count: u64, ms: f64) -> Option<MatchLine> {
        Some(MatchLine {
            name: String::new(),
            count,
            ms,
            timed_out: false,
        })
    }

    fn ran(count: u64, ms: f64) -> Outcome {
        Outcome::Ran {
            run: EgsmRun {
                count,
                tries_ms: ms / 2.0,
                filter_ms: ms / 2.0,
                join_ms: 0.0,
            },
            wall_ms: 300.0,
        }
    }

    fn row(query: &str, dfs: u64, egsm: Outcome) -> Row {
        Row {
            query: query.into(),
            published: Some(dfs),
            engine: line(dfs, 2.0),
            dfs: line(dfs, 0.1),
            egsm,
        }
    }

    fn side() -> SideBySide {
        SideBySide {
            bin: "egsm/build/EGSM".into(),
            engine: "gpu".into(),
            limit: Duration::from_secs(70),
            problem: None,
            suites: vec![SuiteSide {
                name: "HPRD-200, iso".into(),
                problem: None,
                rows: vec![
                    row("q1", 80, ran(80, 1.0)),
                    row("q2", 3, ran(4, 1.0)),
                    row(
                        "q3",
                        5,
                        Outcome::Skipped("17 vertices (EGSM takes at most 16)".into()),
                    ),
                    row("q4", 6, Outcome::TimedOut),
                    row(
                        "q5",
                        7,
                        Outcome::Failed("exit status: 255; stdout: File not exist!".into()),
                    ),
                    row("q6", 9, ran(9, 0.05)),
                ],
            }],
        }
    }

    #[test]
    fn the_summary_counts_agreements_and_sums_the_compared_queries() {
        let mut md = String::new();
        summary(&mut md, &side(), "egsm.md");
        assert!(
            md.contains("| HPRD-200, iso | 6 | 3 | 2 | 1 | 1 | 1 | 1 | 2 | 4.0 | 0.2 | 1.1 | 600 | 0 / 1 / 1 |"),
            "{md}"
        );
        assert!(
            md.contains("- HPRD-200, iso: **EGSM differs**: q2: EGSM 4, dfs 3, gpu 3, published 3"),
            "{md}"
        );
        assert!(md.contains("EGSM failed: q5: exit status: 255; stdout: File not exist!"));
        assert!(md.contains("[egsm.md](egsm.md)"));
        assert_eq!(
            super::line(&side()),
            "3 queries ran, 2 agree with dfs, 1 differ, 1 timed out, 1 failed, 1 skipped"
        );
    }

    #[test]
    fn the_detail_lists_every_query_with_all_three_answers() {
        let md = detail(&side());
        assert!(
            md.contains("| q1 | 80 | 80 | 80 | 80 | yes | 2.000 | 0.100 | 1.000 | 300 |"),
            "{md}"
        );
        assert!(md.contains("| q2 | 3 | 3 | 3 | 4 | **no** |"));
        assert!(
            md.contains("| q3 | 5 | 5 | 5 | skipped: 17 vertices (EGSM takes at most 16) | - |")
        );
        assert!(md.contains("| q4 | 6 | 6 | 6 | timed out | - |"));
        let csv = csv(&side());
        assert_eq!(csv.lines().count(), 7);
        assert!(
            csv.contains("HPRD-200; iso,q1,80,80,0.1000,gpu,80,2.0000,ran,80,1.0000,300.0,\"\"\n"),
            "{csv}"
        );
        assert!(csv.contains(
            ",q3,5,5,0.1000,gpu,5,2.0000,skipped,,,,\"17 vertices (EGSM takes at most 16)\"\n"
        ));
    }

    #[test]
    fn egsm_that_did_not_run_says_why() {
        let mut s = side();
        s.problem = Some("no EGSM binary at egsm/build/EGSM (see egsm/build.log)".into());
        let mut md = String::new();
        summary(&mut md, &s, "egsm.md");
        assert!(md.contains("**EGSM did not run**: no EGSM binary at egsm/build/EGSM"));
        assert!(!md.contains("| suite |"));
        assert!(super::line(&s).starts_with("did not run: no EGSM binary"));
    }
}

//! The check's results and their markdown report, with the verdict. Pure, unit-tested below.

use std::fmt::Write as _;
use std::time::Duration;

use super::compare::Mismatch;

/// Time spent on one suite by one engine: the processes' wall time, and the sum of the per-query
/// milliseconds the binary reports (which leaves out start-up and loading the data graph).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    pub wall: Duration,
    pub query_ms: f64,
}

/// One query of a suite listed in the report (the common-sense queries, which are few).
#[derive(Clone, Debug, PartialEq)]
pub struct Listed {
    pub query: String,
    pub answer: String,
    pub engine_ms: Option<f64>,
    pub dfs_ms: Option<f64>,
    pub ok: bool,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Suite {
    pub name: String,
    /// How to run the engine's side by hand.
    pub command: String,
    pub queries: usize,
    pub mismatches: Vec<Mismatch>,
    pub unverified: Vec<String>,
    /// Commands that failed (exit status, a kill, unreadable output), with the reason.
    pub failures: Vec<String>,
    pub engine: Timing,
    pub dfs: Timing,
    pub listed: Vec<Listed>,
}

/// One compute-sanitizer run.
#[derive(Clone, Debug, PartialEq)]
pub struct SanitizerRun {
    pub tool: String,
    pub target: String,
    pub passed: bool,
    pub summary: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Sanitizers {
    /// Not run, and why (another engine, no compute-sanitizer, the engine did not start).
    NotRun(String),
    Ran(Vec<SanitizerRun>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// GPUs as nvidia-smi lists them, or why there are none.
    pub gpus: String,
    pub host: String,
    /// What gpsense says about the device it opened (`GPU: ...`), when it says anything.
    pub device: Option<String>,
    pub binary: String,
    pub engine: String,
    pub datasets: String,
    pub quick: bool,
    pub timeout_ms: u64,
    /// Set when the engine could not answer a first query: then no suite ran.
    pub preflight: Option<String>,
    pub suites: Vec<Suite>,
    pub sanitizers: Sanitizers,
    /// TruST on the seed's Figure 13 (empty when it did not run).
    pub trust: Vec<super::trust::TrustRow>,
    /// EGSM beside gpsense, when asked for (`--egsm`).
    pub egsm: Option<super::egsm::SideBySide>,
    pub wall: Duration,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub pass: bool,
    pub line: String,
}

/// PASS only when the engine ran, every query was compared and agreed, every command succeeded and
/// every sanitizer run was clean; a check that compared nothing does not pass.
pub fn verdict(r: &Report) -> Verdict {
    let sum = |f: fn(&Suite) -> usize| r.suites.iter().map(f).sum::<usize>();
    let queries = sum(|s| s.queries);
    let mismatches = sum(|s| s.mismatches.len());
    let unverified = sum(|s| s.unverified.len());
    let failures = sum(|s| s.failures.len());
    let sanitizer_failures = match &r.sanitizers {
        Sanitizers::Ran(runs) => runs.iter().filter(|s| !s.passed).count(),
        Sanitizers::NotRun(_) => 0,
    };
    let mut problems = Vec::new();
    if let Some(why) = &r.preflight {
        problems.push(format!("the {} engine did not start ({why})", r.engine));
    } else if queries == 0 {
        problems.push("no query was run".to_owned());
    }
    for (n, what) in [
        (mismatches, "mismatches"),
        (unverified, "queries timed out (unverified)"),
        (failures, "failed commands"),
        (sanitizer_failures, "failed sanitizer runs"),
        (
            super::trust::problems(&r.trust),
            "TruST rows failed or disagreeing",
        ),
    ] {
        if n > 0 {
            problems.push(format!("{n} {what}"));
        }
    }
    let sanitizers = match &r.sanitizers {
        Sanitizers::Ran(runs) => format!("{} sanitizer runs", runs.len()),
        Sanitizers::NotRun(why) => format!("sanitizers not run: {why}"),
    };
    let scope = format!(
        "{} vs dfs, {} suites, {queries} queries, {sanitizers}",
        r.engine,
        r.suites.len()
    );
    let pass = problems.is_empty();
    let line = if pass {
        format!("PASS: {scope}; every answer agrees")
    } else {
        format!("FAIL: {}; {scope}", problems.join(", "))
    };
    Verdict { pass, line }
}

pub fn render(r: &Report) -> String {
    let mut md = String::from("# gpsense GPU check\n\n");
    header(&mut md, r);
    if let Some(why) = &r.preflight {
        let _ = writeln!(
            md,
            "**The {} engine did not answer a first query**, so no suite ran:\n\n```\n{why}\n```\n",
            r.engine
        );
    }
    suites(&mut md, r);
    for s in &r.suites {
        suite_details(&mut md, s, &r.engine);
    }
    if let Some(side) = &r.egsm {
        super::egsm::summary(&mut md, side, "egsm.md");
    }
    super::trust::render(&mut md, &r.trust, &r.engine);
    sanitizers(&mut md, &r.sanitizers);
    let _ = writeln!(md, "## Verdict\n\n**{}**", verdict(r).line);
    md
}

fn header(md: &mut String, r: &Report) {
    let _ = writeln!(md, "- GPU (nvidia-smi: name, driver, memory): {}", r.gpus);
    let _ = writeln!(md, "- Host: {}", r.host);
    if let Some(d) = &r.device {
        let _ = writeln!(md, "- Device opened by gpsense: {d}");
    }
    let _ = writeln!(md, "- Binary: {}", r.binary);
    let _ = writeln!(md, "- Datasets: {}", r.datasets);
    let mode = if r.quick { "--quick" } else { "full" };
    let _ = writeln!(
        md,
        "- Engine: `{}` against `dfs`; {mode} run; per-query limit {} ms; {:.1} s in all\n",
        r.engine,
        r.timeout_ms,
        r.wall.as_secs_f64()
    );
}

fn suites(md: &mut String, r: &Report) {
    if r.suites.is_empty() {
        return;
    }
    let e = &r.engine;
    let _ = writeln!(
        md,
        "## Suites\n\nWall: the processes' time. Query ms: the sum of the per-query times gpsense \
         reports (without start-up and graph loading). Ratios are {e} / dfs: below 1, {e} is \
         faster.\n"
    );
    let _ = writeln!(
        md,
        "| suite | queries | mismatches | unverified | failed commands | {e} wall | dfs wall | \
         wall ratio | {e} query ms | dfs query ms | query ms ratio |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for s in &r.suites {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.2} s | {:.2} s | {} | {:.1} | {:.1} | {} |",
            s.name,
            s.queries,
            s.mismatches.len(),
            s.unverified.len(),
            s.failures.len(),
            s.engine.wall.as_secs_f64(),
            s.dfs.wall.as_secs_f64(),
            ratio(s.engine.wall.as_secs_f64(), s.dfs.wall.as_secs_f64()),
            s.engine.query_ms,
            s.dfs.query_ms,
            ratio(s.engine.query_ms, s.dfs.query_ms),
        );
    }
    md.push('\n');
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}x", a / b)
    } else {
        "n/a".to_owned()
    }
}

fn suite_details(md: &mut String, s: &Suite, engine: &str) {
    let _ = writeln!(md, "### {}\n\n`{}`\n", s.name, s.command);
    bullets(
        md,
        "Mismatches",
        s.mismatches
            .iter()
            .map(|m| format!("{}: {}", m.query, m.detail)),
    );
    bullets(md, "Unverified (timed out)", s.unverified.iter().cloned());
    bullets(md, "Failed commands", s.failures.iter().cloned());
    if s.listed.is_empty() {
        return;
    }
    let _ = writeln!(
        md,
        "| query | answer | {engine} ms | dfs ms | agrees |\n|---|---|---:|---:|---|"
    );
    let ms = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.1}"));
    for l in &s.listed {
        let ok = if l.ok { "yes" } else { "**no**" };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {ok} |",
            l.query.replace('|', "\\|"),
            l.answer,
            ms(l.engine_ms),
            ms(l.dfs_ms)
        );
    }
    md.push('\n');
}

/// A titled list, or nothing when empty.
fn bullets(md: &mut String, title: &str, items: impl Iterator<Item = String>) {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return;
    }
    let _ = writeln!(md, "{title}:\n");
    for item in items {
        let _ = writeln!(md, "- {item}");
    }
    md.push('\n');
}

fn sanitizers(md: &mut String, s: &Sanitizers) {
    md.push_str("## compute-sanitizer\n\n");
    match s {
        Sanitizers::NotRun(why) => {
            let _ = writeln!(md, "Not run: {why}.\n");
        }
        Sanitizers::Ran(runs) => {
            md.push_str("| tool | run | result | summary |\n|---|---|---|---|\n");
            for run in runs {
                let result = if run.passed { "pass" } else { "**FAIL**" };
                let _ = writeln!(
                    md,
                    "| {} | {} | {result} | {} |",
                    run.tool,
                    run.target.replace('|', "\\|"),
                    run.summary.replace('|', "\\|")
                );
            }
            md.push('\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn suite(name: &str, queries: usize) -> Suite {
        Suite {
            name: name.into(),
            command: format!("gpsense match {name}"),
            queries,
            engine: Timing {
                wall: Duration::from_millis(500),
                query_ms: 40.0,
            },
            dfs: Timing {
                wall: Duration::from_secs(1),
                query_ms: 80.0,
            },
            ..Suite::default()
        }
    }

    fn report(suites: Vec<Suite>) -> Report {
        Report {
            gpus: "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB".into(),
            host: "linux x86_64, 16 cores".into(),
            device: Some("GPU: NVIDIA H100 80GB HBM3 (sm_90)".into()),
            binary: "gpsense".into(),
            engine: "gpu".into(),
            datasets: "datasets".into(),
            quick: false,
            timeout_ms: 60_000,
            preflight: None,
            suites,
            sanitizers: Sanitizers::NotRun("compute-sanitizer not present".into()),
            trust: Vec::new(),
            egsm: None,
            wall: Duration::from_secs(3),
        }
    }

    #[test]
    fn a_clean_run_passes_and_reports_ratios() {
        let r = report(vec![suite("HPRD-200 (iso)", 200), suite("yeast", 840)]);
        let v = verdict(&r);
        assert!(v.pass, "{}", v.line);
        assert!(v
            .line
            .starts_with("PASS: gpu vs dfs, 2 suites, 1040 queries"));
        let md = render(&r);
        assert!(md.contains("| HPRD-200 (iso) | 200 | 0 | 0 | 0 | 0.50 s | 1.00 s | 0.50x | 40.0 | 80.0 | 0.50x |"), "{md}");
        assert!(md.contains("NVIDIA H100 80GB HBM3, 550.54.15"));
        assert!(md.contains("Not run: compute-sanitizer not present."));
        assert!(md.ends_with(&format!("**{}**\n", v.line)));
    }

    #[test]
    fn mismatches_unverified_and_failures_fail() {
        let mut s = suite("HPRD-200 (iso)", 200);
        s.mismatches.push(Mismatch {
            query: "query_dense_16_3".into(),
            detail: "gpu 7, dfs 8, expected 8".into(),
        });
        s.unverified.push("query_dense_16_9".into());
        s.failures.push("gpu: exit status: 1: error: boom".into());
        let r = report(vec![s]);
        let v = verdict(&r);
        assert!(!v.pass);
        assert!(v.line.starts_with(
            "FAIL: 1 mismatches, 1 queries timed out (unverified), 1 failed commands;"
        ));
        let md = render(&r);
        assert!(md.contains("- query_dense_16_3: gpu 7, dfs 8, expected 8"));
        assert!(md.contains("- gpu: exit status: 1: error: boom"));
    }

    #[test]
    fn sanitizer_errors_fail_and_are_listed() {
        let mut r = report(vec![suite("HPRD-200 (iso)", 200)]);
        r.sanitizers = Sanitizers::Ran(vec![
            SanitizerRun {
                tool: "memcheck".into(),
                target: "HPRD: 5 queries".into(),
                passed: true,
                summary: "ERROR SUMMARY: 0 errors".into(),
            },
            SanitizerRun {
                tool: "racecheck".into(),
                target: "cs01".into(),
                passed: false,
                summary: "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)".into(),
            },
        ]);
        let v = verdict(&r);
        assert!(!v.pass);
        assert!(v.line.contains("1 failed sanitizer runs"));
        let md = render(&r);
        assert!(md.contains("| racecheck | cs01 | **FAIL** | RACECHECK SUMMARY: 1 hazard"));
    }

    #[test]
    fn an_engine_that_does_not_start_or_an_empty_run_fails() {
        let mut r = report(Vec::new());
        assert_eq!(verdict(&r).line, "FAIL: no query was run; gpu vs dfs, 0 suites, 0 queries, sanitizers not run: compute-sanitizer not present");
        r.preflight = Some("--engine gpu: no GPU".into());
        let v = verdict(&r);
        assert!(v
            .line
            .starts_with("FAIL: the gpu engine did not start (--engine gpu: no GPU)"));
        assert!(render(&r).contains("did not answer a first query"));
    }

    #[test]
    fn listed_queries_and_zero_times_render() {
        let mut s = suite("common-sense", 1);
        s.dfs = Timing::default();
        s.listed.push(Listed {
            query: "cs01 `SELECT ?x WHERE { ?x IsA animal }`".into(),
            answer: "455 rows".into(),
            engine_ms: Some(0.5),
            dfs_ms: None,
            ok: true,
        });
        let md = render(&report(vec![s]));
        assert!(md.contains("| n/a |"), "{md}");
        assert!(
            md.contains("| cs01 `SELECT ?x WHERE { ?x IsA animal }` | 455 rows | 0.5 | - | yes |")
        );
    }
}

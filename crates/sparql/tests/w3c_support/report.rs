//! A run over every folder of the copied suite, its table, and the record it is held to.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::manifest::{manifests, read_folder, Form, Skip};
use super::run::{judge, one_line, Evaluate, Verdict};

/// Where the copy of the suite is: `crates/sparql/tests/w3c`, also from the CLI's tests, which
/// include this harness.
pub fn suite_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../sparql/tests/w3c");
    std::fs::canonicalize(&root).unwrap_or(root)
}

/// `GPSENSE_W3C_ONLY=TEXT`: only the tests whose name holds TEXT (`cargo xtask w3c --only`).
pub fn only() -> Option<String> {
    std::env::var("GPSENSE_W3C_ONLY")
        .ok()
        .filter(|text| !text.is_empty())
}

/// One test's outcome.
pub struct Outcome {
    pub name: String,
    pub folder: String,
    pub form: Form,
    pub verdict: Verdict,
}

pub struct Run {
    pub tests: Vec<Outcome>,
    pub skipped: BTreeMap<String, BTreeMap<Skip, usize>>,
    pub elapsed: Duration,
    /// Only the tests whose name holds this text ran: the run is not held to the record.
    pub only: Option<String>,
}

/// Runs every test of every folder under `root` through `evaluate` (those whose name holds
/// `only`, if given).
pub fn run(root: &Path, evaluate: Evaluate, only: Option<&str>) -> Result<Run> {
    let start = Instant::now();
    let mut tests = Vec::new();
    let mut skipped = BTreeMap::new();
    for manifest in manifests(root)? {
        let mut folder = read_folder(root, &manifest)?;
        if let Some(only) = only {
            folder.tests.retain(|t| t.name.contains(only));
        }
        for test in &folder.tests {
            let verdict = match judge(test, &evaluate)
                .with_context(|| format!("{}: the expected result", test.name))?
            {
                Verdict::Wrong(why) => Verdict::Wrong(one_line(&why, root)),
                Verdict::Refused(why) => Verdict::Refused(one_line(&why, root)),
                Verdict::Pass => Verdict::Pass,
            };
            tests.push(Outcome {
                name: test.name.clone(),
                folder: test.folder.clone(),
                form: test.form,
                verdict,
            });
        }
        if let Some(test) = folder.tests.first() {
            skipped.insert(test.folder.clone(), folder.skipped);
        }
    }
    Ok(Run {
        tests,
        skipped,
        elapsed: start.elapsed(),
        only: only.map(str::to_owned),
    })
}

/// Pass, wrong, refused.
#[derive(Clone, Copy, Default)]
struct Counts([usize; 3]);

impl Counts {
    fn add(&mut self, verdict: &Verdict) {
        let i = match verdict {
            Verdict::Pass => 0,
            Verdict::Wrong(_) => 1,
            Verdict::Refused(_) => 2,
        };
        self.0[i] += 1;
    }

    fn total(&self) -> usize {
        self.0.iter().sum()
    }
}

impl Run {
    pub fn passed(&self) -> usize {
        self.count(|_| true).0[0]
    }

    pub fn failing(&self) -> impl Iterator<Item = &Outcome> {
        self.tests.iter().filter(|t| t.verdict != Verdict::Pass)
    }

    pub fn wrong(&self) -> impl Iterator<Item = &Outcome> {
        self.tests
            .iter()
            .filter(|t| matches!(t.verdict, Verdict::Wrong(_)))
    }

    fn count(&self, keep: impl Fn(&Outcome) -> bool) -> Counts {
        let mut counts = Counts::default();
        for test in self.tests.iter().filter(|t| keep(t)) {
            counts.add(&test.verdict);
        }
        counts
    }

    /// The table per folder, the totals, and every test that does not pass with why.
    pub fn table(&self, evaluator: &str) -> String {
        let mut out = format!("W3C SPARQL query evaluation tests, {evaluator}\n\n");
        let _ = writeln!(
            out,
            "{:<34} {:>5} {:>5} {:>7} {:>7}  skipped",
            "folder", "pass", "wrong", "refused", "tests"
        );
        let folders: BTreeSet<&str> = self.tests.iter().map(|t| t.folder.as_str()).collect();
        for folder in folders {
            let counts = self.count(|t| t.folder == folder);
            let skipped: usize = self.skipped.get(folder).map_or(0, |s| s.values().sum());
            let _ = writeln!(out, "{}  {skipped}", row(folder, counts));
        }
        out.push('\n');
        let forms = [
            ("SELECT / ASK", Form::SelectOrAsk),
            ("CONSTRUCT / DESCRIBE", Form::ConstructOrDescribe),
        ];
        for (label, form) in forms {
            let _ = writeln!(out, "{}", row(label, self.count(|t| t.form == form)));
        }
        let _ = writeln!(out, "{}", row("all", self.count(|_| true)));
        let _ = writeln!(out, "\nSkipped (not run), by reason:");
        for (reason, n) in self.skip_reasons() {
            let _ = writeln!(out, "  {n:>4}  {reason}");
        }
        let _ = writeln!(out, "\nNot passing:");
        for test in self.failing() {
            let _ = writeln!(out, "  {}", record_line(test));
        }
        let _ = writeln!(out, "\n{:.1} s", self.elapsed.as_secs_f64());
        out
    }

    fn skip_reasons(&self) -> BTreeMap<String, usize> {
        let mut reasons = BTreeMap::new();
        for (skip, n) in self.skipped.values().flatten() {
            let reason = match skip {
                Skip::NotQueryEvaluation(_) => "not a query evaluation test".to_owned(),
                other => other.to_string(),
            };
            *reasons.entry(reason).or_default() += n;
        }
        reasons
    }
}

fn row(label: &str, counts: Counts) -> String {
    let [pass, wrong, refused] = counts.0;
    format!(
        "{label:<34} {pass:>5} {wrong:>5} {refused:>7} {:>7}",
        counts.total()
    )
}

fn record_line(test: &Outcome) -> String {
    format!("{}\t{}", test.name, verdict_text(&test.verdict))
}

/// What `expected.txt` holds: the pass count that must not drop, and the tests known not to pass.
pub struct Record {
    pub passed: usize,
    pub failing: BTreeSet<String>,
}

/// The record's opening comment; `about` names the run it holds (the library, a front end).
fn record_header(about: &str) -> String {
    format!(
        "\
# The W3C SPARQL query evaluation tests gpsense passes {about}:
# the pass count must not drop and no answer may be wrong. Each further line is a test that does
# not pass yet, and why. Rewritten by `cargo xtask w3c --record` (or GPSENSE_W3C_RECORD=1).
"
    )
}

pub fn read_record(path: &Path) -> Result<Record> {
    let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let mut passed = None;
    let mut failing = BTreeSet::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        if let Some(n) = line.strip_prefix("pass ") {
            passed = Some(
                n.trim()
                    .parse()
                    .with_context(|| format!("{}:{}: a bad pass count", path.display(), i + 1))?,
            );
        } else if let Some((name, _why)) = line.split_once('\t') {
            failing.insert(name.to_owned());
        } else {
            bail!(
                "{}:{}: neither `pass N` nor `test<TAB>reason`",
                path.display(),
                i + 1
            );
        }
    }
    let Some(passed) = passed else {
        bail!("{}: no `pass N` line", path.display());
    };
    Ok(Record { passed, failing })
}

pub fn write_record(path: &Path, run: &Run, about: &str) -> Result<()> {
    let mut text = format!("{}pass {}\n", record_header(about), run.passed());
    for test in run.failing() {
        text.push_str(&record_line(test));
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| path.display().to_string())
}

/// Ends a run: rewrites the record at `path` (`GPSENSE_W3C_RECORD=1`) or holds the run to it, and
/// fails on any wrong answer. A run of some tests only (`GPSENSE_W3C_ONLY`) is held to nothing
/// but the wrong answers.
pub fn settle(run: &Run, path: &Path, about: &str) {
    let record = std::env::var_os("GPSENSE_W3C_RECORD").is_some_and(|v| v == "1");
    match (&run.only, record) {
        (Some(only), true) => panic!("only the tests holding {only:?} ran: nothing to record"),
        (Some(only), false) => println!("only the tests holding {only:?} ran: no record held"),
        (None, true) => {
            write_record(path, run, about).unwrap_or_else(|e| panic!("{e:#}"));
            println!("recorded {} passes in {}", run.passed(), path.display());
        }
        (None, false) => held_to_record(run, path),
    }
    let wrong: Vec<&str> = run.wrong().map(|t| t.name.as_str()).collect();
    assert!(wrong.is_empty(), "wrong answers: {wrong:?}");
}

/// Fewer passes than recorded fails, naming the tests that no longer pass.
fn held_to_record(run: &Run, path: &Path) {
    let record = read_record(path).unwrap_or_else(|e| {
        panic!(
            "{e:#}\nno record to hold the run to: GPSENSE_W3C_RECORD=1 cargo xtask w3c writes one"
        )
    });
    let regressed: Vec<&str> = run
        .failing()
        .filter(|t| !record.failing.contains(&t.name))
        .map(|t| t.name.as_str())
        .collect();
    assert!(
        run.passed() >= record.passed,
        "{} tests pass, {} recorded in {}; no longer passing: {regressed:?}",
        run.passed(),
        record.passed,
        path.display()
    );
    if run.passed() > record.passed {
        println!(
            "{} more tests pass than {} records: GPSENSE_W3C_RECORD=1 records them",
            run.passed() - record.passed,
            path.display()
        );
    }
}

/// The tests both runs hold whose verdicts differ in kind (pass, wrong, refused), in `a`'s order.
pub fn differences<'r>(a: &'r Run, b: &'r Run) -> Vec<(&'r Outcome, &'r Outcome)> {
    let by_name: BTreeMap<&str, &Outcome> = b.tests.iter().map(|t| (t.name.as_str(), t)).collect();
    a.tests
        .iter()
        .filter_map(|t| Some((t, *by_name.get(t.name.as_str())?)))
        .filter(|(x, y)| std::mem::discriminant(&x.verdict) != std::mem::discriminant(&y.verdict))
        .collect()
}

/// A verdict as the table shows it.
pub fn verdict_text(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Pass => "pass".into(),
        Verdict::Wrong(why) => format!("wrong: {why}"),
        Verdict::Refused(why) => format!("refused: {why}"),
    }
}

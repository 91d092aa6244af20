//! A run over every folder of the copied suite, its table, and the record it is held to.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::manifest::{manifests, read_folder, Form, Skip};
use super::run::{judge, one_line, Evaluate, Verdict};

/// Where the copy of the suite is.
pub fn suite_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/w3c")
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
}

/// Runs every test of every folder under `root` through `evaluate`.
pub fn run(root: &Path, evaluate: Evaluate) -> Result<Run> {
    let start = Instant::now();
    let mut tests = Vec::new();
    let mut skipped = BTreeMap::new();
    for manifest in manifests(root)? {
        let folder = read_folder(root, &manifest)?;
        for test in &folder.tests {
            let verdict = match judge(test, evaluate)
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
    match &test.verdict {
        Verdict::Pass => format!("{}\tpass", test.name),
        Verdict::Wrong(why) => format!("{}\twrong: {why}", test.name),
        Verdict::Refused(why) => format!("{}\trefused: {why}", test.name),
    }
}

/// What `expected.txt` holds: the pass count that must not drop, and the tests known not to pass.
pub struct Record {
    pub passed: usize,
    pub failing: BTreeSet<String>,
}

const RECORD_HEADER: &str = "\
# The W3C SPARQL query evaluation tests gpsense passes (crates/sparql/tests/w3c.rs): the pass
# count must not drop and no answer may be wrong. Each further line is a test that does not pass
# yet, and why. Rewritten by `cargo xtask w3c --record` (or GPSENSE_W3C_RECORD=1 cargo test).
";

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

pub fn write_record(path: &Path, run: &Run) -> Result<()> {
    let mut text = format!("{RECORD_HEADER}pass {}\n", run.passed());
    for test in run.failing() {
        text.push_str(&record_line(test));
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| path.display().to_string())
}

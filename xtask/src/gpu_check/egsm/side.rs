//! EGSM beside gpsense on one suite: a process per query (its command line takes one query graph),
//! on the converted files, under a time limit, after gpsense has answered the suite on the engine
//! under test and on dfs; each row keeps all three answers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::output::{self, EgsmRun};
use super::Inputs;
use crate::gpu_check::exec;
use crate::gpu_check::parse::MatchLine;

/// How EGSM is run.
#[derive(Clone, Debug)]
pub struct Peer {
    pub bin: PathBuf,
    /// What `convert_inputs` wrote.
    pub inputs: PathBuf,
    /// A process is killed after this (it has no limit of its own).
    pub limit: Duration,
    /// At most this many queries per suite, spread evenly over the names (all when `None`).
    pub per_suite: Option<usize>,
}

/// What EGSM did with one query.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Ran {
        run: EgsmRun,
        wall_ms: f64,
    },
    /// Not run, and why (beyond its bounds, not converted).
    Skipped(String),
    TimedOut,
    Failed(String),
}

/// One query: the published count, gpsense's two answers and EGSM's.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub query: String,
    pub published: Option<u64>,
    pub engine: Option<MatchLine>,
    pub dfs: Option<MatchLine>,
    pub egsm: Outcome,
}

impl Row {
    /// The count EGSM is held to: dfs's within its limit, else the published one.
    pub fn reference(&self) -> Option<u64> {
        match &self.dfs {
            Some(d) if !d.timed_out => Some(d.count),
            _ => self.published,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct SuiteSide {
    pub name: String,
    /// Why nothing ran (the converted files could not be read).
    pub problem: Option<String>,
    pub rows: Vec<Row>,
}

/// Everything the report says about EGSM.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SideBySide {
    pub bin: String,
    pub engine: String,
    pub limit: Duration,
    /// Why EGSM did not run at all (no binary).
    pub problem: Option<String>,
    pub suites: Vec<SuiteSide>,
}

/// Runs EGSM on the queries gpsense answered in suite `key` (a directory of `SUITES`).
pub fn run_suite(
    peer: &Peer,
    key: &str,
    name: &str,
    ours: &[MatchLine],
    dfs: &[MatchLine],
    expected: Option<&BTreeMap<String, u64>>,
) -> SuiteSide {
    let mut side = SuiteSide {
        name: name.to_owned(),
        ..SuiteSide::default()
    };
    let inputs = match Inputs::open(&peer.inputs, key) {
        Ok(i) => i,
        Err(e) => {
            side.problem = Some(format!("{e:#}"));
            return side;
        }
    };
    let find = |lines: &[MatchLine], q: &str| lines.iter().find(|l| l.name == q).cloned();
    for query in pick(ours, dfs, peer.per_suite) {
        let egsm = match inputs.query(&query) {
            Ok(file) => run_one(peer, &inputs.data(), &file),
            Err(why) => Outcome::Skipped(why),
        };
        side.rows.push(Row {
            published: expected.and_then(|e| e.get(&query)).copied(),
            engine: find(ours, &query),
            dfs: find(dfs, &query),
            egsm,
            query,
        });
    }
    side
}

/// The names either engine answered, sorted; at most `per_suite`, evenly spread.
fn pick(ours: &[MatchLine], dfs: &[MatchLine], per_suite: Option<usize>) -> Vec<String> {
    let names: Vec<String> = ours
        .iter()
        .chain(dfs)
        .map(|l| l.name.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    match per_suite {
        Some(n) if n < names.len() => (0..n).map(|i| names[i * names.len() / n].clone()).collect(),
        _ => names,
    }
}

fn run_one(peer: &Peer, data: &std::path::Path, query: &std::path::Path) -> Outcome {
    let mut cmd = Command::new(&peer.bin);
    cmd.arg("-q").arg(query).arg("-d").arg(data);
    let run = match exec::run_within(&mut cmd, peer.limit) {
        Ok(run) => run,
        Err(e) => return Outcome::Failed(format!("{e:#}")),
    };
    if run.at_limit {
        return Outcome::TimedOut;
    }
    if !run.success() {
        let why = run.failure().unwrap_or_default();
        // EGSM reports CUDA errors on stderr, its own refusals on stdout.
        let said = run.stdout.lines().rev().find(|l| !l.trim().is_empty());
        return Outcome::Failed(match said {
            Some(l) => format!("{why}; stdout: {l}"),
            None => why,
        });
    }
    match output::parse(&run.stdout) {
        Ok(parsed) => Outcome::Ran {
            run: parsed,
            wall_ms: run.wall.as_secs_f64() * 1e3,
        },
        Err(e) => Outcome::Failed(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(name: &str, count: u64) -> MatchLine {
        MatchLine {
            name: name.into(),
            count,
            ms: 1.0,
            timed_out: false,
        }
    }

    #[test]
    fn picks_all_names_or_an_even_spread() {
        let ours: Vec<MatchLine> = (0..10).map(|i| line(&format!("q{i}"), 1)).collect();
        let dfs = vec![line("q9", 1), line("r", 2)];
        assert_eq!(pick(&ours, &dfs, None).len(), 11);
        assert_eq!(pick(&ours, &dfs, Some(20)).len(), 11);
        assert_eq!(pick(&ours, &dfs, Some(4)), ["q0", "q2", "q5", "q8"]);
    }

    #[test]
    fn the_reference_is_dfs_within_its_limit_else_the_published_count() {
        let mut row = Row {
            query: "q".into(),
            published: Some(7),
            engine: None,
            dfs: Some(line("q", 5)),
            egsm: Outcome::TimedOut,
        };
        assert_eq!(row.reference(), Some(5));
        row.dfs.as_mut().unwrap().timed_out = true;
        assert_eq!(row.reference(), Some(7));
    }
}

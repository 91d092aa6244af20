//! The exact-matcher table (`cargo xtask bench --only exact-peers`, also part of a full run):
//! gpsense-dfs against DAF, VEQ, GuP and RapidMatch (`native.rs`) on three workloads of the shipped
//! suites, engines interleaved per chunk of queries so that machine noise hits all alike.
//!
//! - `exact-hprd`: the 200 HPRD queries, full counts;
//! - `exact-yeast-150`: yeast queries of at most 16 vertices whose published count is at most 1e7,
//!   names sorted, `random.Random(7).shuffle`d (Python's, see `pyrandom.rs`), the first 150; full
//!   counts;
//! - `exact-yeast-32`: the 400 yeast queries of 32 vertices, the first 1e5 embeddings, 10 s a query.
//!
//! gpsense runs in `gpsense-bench-runner` (graph loaded once per chunk, one thread, the time of
//! each query's match); a peer runs as one process per query and its own reported processing time
//! (without loading the data graph) is taken, its wall time recorded beside it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use gpsense_benches::suite::{read_expected, Listed, ListedGraph, ListedQuery, ListedWorkload};

use super::exec::{self, Limits, Outcome};
use super::native::{self, Built, Files, Peer, Ran};
use super::pyrandom::PyRandom;

pub const OURS: &str = "gpsense-dfs";
/// gpsense-dfs free to use two threads (issue 30: never slower than one); not in the win counts.
pub const OURS_2T: &str = "gpsense-dfs-2t";
/// A query took "longer on two threads" past this ratio to its one-thread time and
/// [`SLOWER_2T_BY`] more (one run's noise: a 0.05 ms query varies by a third between processes).
const SLOWER_2T: f64 = 1.25;
const SLOWER_2T_BY: f64 = 1e-4;

/// An engine's column title.
fn title(e: &str) -> &str {
    match e {
        OURS => "gpsense dfs",
        OURS_2T => "gpsense dfs, 2 threads",
        other => other,
    }
}
/// The match limit of `exact-yeast-32`.
pub const LIMIT_32: u64 = 100_000;

pub struct Options<'a> {
    pub root: &'a Path,
    /// `target/bench` (or `target/bench/quick`): the section writes `exact-peers/` there.
    pub out: &'a Path,
    /// `target/bench/peers`.
    pub peers_dir: &'a Path,
    pub runner: &'a Path,
    pub quick: bool,
    /// Limit per query of the full-count workloads [default 60 s]; `exact-yeast-32` keeps 10 s.
    pub timeout: Option<Duration>,
    pub peer_src: Option<&'a Path>,
    pub clone: bool,
    pub peers: Vec<&'static Peer>,
    pub chunk: usize,
    /// Times every engine answers every query, each time in fresh processes; the report takes
    /// each query's median (see [`median_of_rounds`]).
    pub rounds: usize,
}

/// The section's outcome.
pub struct Section {
    pub markdown: String,
    /// gpsense counts that differ from the published ones.
    pub ours_wrong: usize,
}

/// A query of the yeast suite: name, vertices, published count.
pub type YeastQuery = (String, usize, Option<u64>);

/// `exact-yeast-150`'s queries: at most 16 vertices, a published count of at most 1e7, names
/// sorted, shuffled by Python's `random.Random(7)`, the first `n`.
pub fn yeast_150(queries: &[YeastQuery], n: usize) -> Vec<String> {
    let mut names: Vec<String> = queries
        .iter()
        .filter(|(_, size, answer)| *size <= 16 && answer.is_some_and(|a| a <= 10_000_000))
        .map(|(name, _, _)| name.clone())
        .collect();
    names.sort();
    PyRandom::new(7).shuffle(&mut names);
    names.truncate(n);
    names
}

/// `query_dense_16_2` before `query_dense_16_10`.
fn natural_key(name: &str) -> (String, u64) {
    let (prefix, n) = name.rsplit_once('_').unwrap_or((name, "0"));
    (prefix.to_owned(), n.parse().unwrap_or(u64::MAX))
}

/// Query files of a directory: (stem, path, vertices), in natural order.
fn queries_in(dir: &Path) -> Result<Vec<(String, PathBuf, usize)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_none_or(|x| x != "graph") {
            continue;
        }
        let stem = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&p)?;
        let n = text
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("{}: no `t N M` header", p.display()))?;
        out.push((stem, p, n));
    }
    out.sort_by_key(|(s, _, _)| natural_key(s));
    Ok(out)
}

struct Def {
    listed: ListedWorkload,
    timeout: Duration,
}

/// The three workloads (2 queries each with `quick`).
fn definitions(
    datasets: &Path,
    quick: bool,
    timeout: Option<Duration>,
) -> Result<(Vec<ListedGraph>, Vec<Def>)> {
    let sm = datasets.join("subgraph-matching");
    let full_timeout = timeout.unwrap_or(Duration::from_secs(if quick { 5 } else { 60 }));
    let graphs = vec![
        ListedGraph {
            key: "hprd".into(),
            description: "HPRD (SIGMOD 2020 study)".into(),
            file: sm.join("hprd-study/data_graph/HPRD.graph"),
        },
        ListedGraph {
            key: "yeast".into(),
            description: "yeast (openGraphMatching)".into(),
            file: sm.join("yeast/data_graph/yeast.graph"),
        },
    ];
    let take = |v: Vec<ListedQuery>| -> Vec<ListedQuery> {
        if quick {
            v.into_iter().take(2).collect()
        } else {
            v
        }
    };
    let hprd_expected = read_expected(&sm.join("hprd-study/expected_output.res"))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let hprd: Vec<ListedQuery> = queries_in(&sm.join("hprd-study/query_graph"))?
        .into_iter()
        .map(|(id, file, _)| ListedQuery {
            expected: hprd_expected.get(&id).copied(),
            group: "hprd".into(),
            id,
            file,
        })
        .collect();
    let answers =
        read_expected(&sm.join("yeast/yeast_ans.txt")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let yeast = queries_in(&sm.join("yeast/query_graph"))?;
    let listed = |id: &str, file: &Path, group: &str| ListedQuery {
        id: id.to_owned(),
        group: group.to_owned(),
        file: file.to_path_buf(),
        expected: answers.get(id).copied(),
    };
    let candidates: Vec<YeastQuery> = yeast
        .iter()
        .map(|(id, _, n)| (id.clone(), *n, answers.get(id).copied()))
        .collect();
    let by_name: HashMap<&str, &PathBuf> =
        yeast.iter().map(|(id, p, _)| (id.as_str(), p)).collect();
    let y150: Vec<ListedQuery> = yeast_150(&candidates, 150)
        .iter()
        .map(|id| listed(id, by_name[id.as_str()], "yeast-150"))
        .collect();
    let y32: Vec<ListedQuery> = yeast
        .iter()
        .filter(|(_, _, n)| *n == 32)
        .map(|(id, p, _)| listed(id, p, "yeast-32"))
        .collect();
    let n = |v: &Vec<ListedQuery>| v.len();
    let mut defs = vec![
        Def {
            listed: ListedWorkload {
                name: "exact-hprd".into(),
                title: "HPRD, 200 queries of 16 vertices, full counts".into(),
                graph: "hprd".into(),
                selection: format!("all {} HPRD queries by number; published counts from expected_output.res", n(&hprd)),
                limit: None,
                queries: take(hprd),
            },
            timeout: full_timeout,
        },
        Def {
            listed: ListedWorkload {
                name: "exact-yeast-150".into(),
                title: "yeast, 150 queries of at most 16 vertices, full counts".into(),
                graph: "yeast".into(),
                selection: "yeast queries of at most 16 vertices whose published count (yeast_ans.txt) is at most 1e7, \
                            names sorted, random.Random(7).shuffle(names) (Python), the first 150"
                    .into(),
                limit: None,
                queries: take(y150),
            },
            timeout: full_timeout,
        },
        Def {
            listed: ListedWorkload {
                name: "exact-yeast-32".into(),
                title: "yeast, the 400 queries of 32 vertices, first 1e5 embeddings".into(),
                graph: "yeast".into(),
                selection: format!(
                    "all {} yeast queries of 32 vertices (dense, then sparse, by number); each stops at {LIMIT_32} embeddings",
                    n(&y32)
                ),
                limit: Some(LIMIT_32),
                queries: take(y32),
            },
            timeout: Duration::from_secs(10),
        },
    ];
    if quick {
        for d in &mut defs {
            d.listed.selection.push_str("; --quick: the first 2 only");
        }
    }
    Ok((graphs, defs))
}

#[derive(Clone, Debug)]
enum Status {
    Ok {
        count: u64,
        seconds: f64,
        wall: Option<f64>,
    },
    Timeout,
    Error(String),
    Skipped(String),
}

#[derive(Clone, Debug)]
struct Row {
    workload: String,
    query: String,
    engine: String,
    status: Status,
    expected: Option<u64>,
    limit: Option<u64>,
    /// gpsense-dfs's count, for the peers.
    ours: Option<u64>,
    wrong: bool,
    /// Each round's time (`Status::Ok`'s is their median).
    rounds: Vec<f64>,
}

/// Whether `count` differs from a reference, counts capped at the limit (a peer stopped by it may
/// report more than the limit: VEQ and DAF add leaf matches in bulk).
pub fn differs(count: u64, reference: Option<u64>, limit: Option<u64>) -> bool {
    let cap = |x: u64| limit.map_or(x, |l| x.min(l));
    reference.is_some_and(|r| cap(r) != cap(count))
}

pub fn run(o: &Options, log: &mut dyn FnMut(&str)) -> Result<Section> {
    let dir = o.out.join("exact-peers");
    let work = dir.join("work");
    std::fs::create_dir_all(&work)?;
    let (graphs, defs) = definitions(&o.root.join("datasets"), o.quick, o.timeout)?;

    // gpsense's workloads.
    let list = Listed {
        graphs: graphs.clone(),
        workloads: defs.iter().map(|d| d.listed.clone()).collect(),
    };
    let list_file = work.join("list.json");
    std::fs::write(&list_file, serde_json::to_vec_pretty(&list)?)?;
    let status = Command::new(o.runner)
        .arg("prepare-listed")
        .arg(&list_file)
        .arg(&work)
        .status()
        .context("cannot run gpsense-bench-runner")?;
    if !status.success() {
        bail!("gpsense-bench-runner prepare-listed failed");
    }

    // Peers: sources, builds, inputs.
    let sources = native::Sources {
        dir: o.peer_src,
        clone: o.clone,
        patches: &o.root.join("xtask/bench"),
    };
    let mut built: Vec<(&Peer, Result<Built, String>)> = Vec::new();
    for &p in &o.peers {
        let b = native::prepare(p, &sources, o.peers_dir, log);
        match &b {
            Ok(b) => log(&format!("{}: {}", p.engine, b.origin)),
            Err(e) => log(&format!("{} skipped: {e}", p.engine)),
        }
        built.push((p, b));
    }
    let inputs = work.join("inputs");
    let mut data_files: HashMap<String, Files> = HashMap::new();
    let mut query_files: HashMap<(String, String), Files> = HashMap::new();
    if built.iter().any(|(_, b)| b.is_ok()) {
        for g in &graphs {
            let f = native::convert(&g.file, &inputs.join(&g.key), &g.key, true)
                .map_err(anyhow::Error::msg)?;
            data_files.insert(g.key.clone(), f);
        }
        for d in &defs {
            for q in &d.listed.queries {
                let f = native::convert(
                    &q.file,
                    &inputs.join(&d.listed.graph).join("queries"),
                    &q.id,
                    false,
                )
                .map_err(anyhow::Error::msg)?;
                query_files.insert((d.listed.graph.clone(), q.id.clone()), f);
            }
        }
    }

    // Runs, interleaved per chunk, the harness on a core of its own (see `cores`).
    let pinned = super::cores::Pinned::harness();
    if let Some((_, cpu)) = &pinned {
        log(&format!(
            "harness pinned to CPU {cpu}; engines run on every CPU"
        ));
    }
    let engine_cpus = |cmd: &mut Command| {
        if let Some((p, _)) = &pinned {
            p.engine(cmd);
        }
    };
    let mut engines: Vec<String> = vec![OURS.to_owned(), OURS_2T.to_owned()];
    engines.extend(o.peers.iter().map(|p| p.engine.to_owned()));
    let rounds = o.rounds.max(1);
    let mut by_round: Vec<Vec<Row>> = Vec::new();
    let total: usize = rounds * defs.iter().map(|d| d.listed.queries.len()).sum::<usize>();
    let mut done = 0usize;
    for round in 0..rounds {
        // A query an engine did not answer in the first round (time limit, crash) is not run again:
        // its first outcome stands, and a 60 s time-out is paid once.
        let failed: std::collections::HashSet<(String, String, String)> = by_round
            .first()
            .map(|first| {
                first
                    .iter()
                    .filter(|r| !matches!(r.status, Status::Ok { .. }))
                    .map(|r| (r.workload.clone(), r.query.clone(), r.engine.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut rows: Vec<Row> = Vec::new();
        for d in &defs {
            let w = &d.listed;
            let limits = Limits {
                timeout: d.timeout,
                load_timeout: Duration::from_secs(600),
                max_timeouts: usize::MAX,
            };
            let chunk = o.chunk.max(1);
            for (c, start) in (0..w.queries.len()).step_by(chunk).enumerate() {
                let end = (start + chunk).min(w.queries.len());
                let qs = &w.queries[start..end];
                // Rotate who goes first from chunk to chunk, and from round to round.
                let n_eng = engines.len();
                for k in 0..n_eng {
                    let engine = &engines[(c + k + round) % n_eng];
                    let failed_before = |q: &ListedQuery| {
                        failed.contains(&(w.name.clone(), q.id.clone(), engine.clone()))
                    };
                    let row = |q: &ListedQuery, status: Status| Row {
                        workload: w.name.clone(),
                        query: q.id.clone(),
                        engine: engine.clone(),
                        status,
                        expected: q.expected,
                        limit: w.limit,
                        ours: None,
                        wrong: false,
                        rounds: Vec::new(),
                    };
                    if engine == OURS || engine == OURS_2T {
                        if qs.iter().any(failed_before) {
                            // One process answers the chunk: rerun none of it (the merge keeps
                            // the first round's outcomes).
                            continue;
                        }
                        let groups: Vec<String> = qs.iter().map(|q| q.group.clone()).collect();
                        let command = |s: usize| {
                            let mut cmd = Command::new(o.runner);
                            cmd.arg("run")
                                .arg(&work)
                                .arg(&w.name)
                                .arg(engine)
                                .arg("iso")
                                .arg((start + s).to_string())
                                .arg("1")
                                .arg(end.to_string());
                            engine_cpus(&mut cmd);
                            cmd
                        };
                        let (outcomes, _) =
                            exec::run_job_from(&command, &groups, start, limits, &mut || {});
                        for (q, out) in qs.iter().zip(outcomes) {
                            let status = match out {
                                Outcome::Ok { count, seconds, .. } => Status::Ok {
                                    count,
                                    seconds: seconds.first().copied().unwrap_or(0.0),
                                    wall: None,
                                },
                                Outcome::Timeout(_) => Status::Timeout,
                                Outcome::Error(m) | Outcome::Unsupported(m) => Status::Error(m),
                                Outcome::Skipped(m) => Status::Skipped(m),
                            };
                            rows.push(row(q, status));
                        }
                        continue;
                    }
                    let (peer, b) = built
                        .iter()
                        .find(|(p, _)| p.engine == engine)
                        .expect("a built entry per peer");
                    for q in qs.iter().filter(|q| !failed_before(q)) {
                        let status = match b {
                            Err(e) => Status::Skipped(e.clone()),
                            Ok(b) => {
                                let data = &data_files[&w.graph];
                                let qf = &query_files[&(w.graph.clone(), q.id.clone())];
                                let mut cmd =
                                    native::command(peer, b, data, qf, w.limit, d.timeout);
                                engine_cpus(&mut cmd);
                                match native::run_limited(cmd, d.timeout + Duration::from_secs(2)) {
                                    Ran::Exited {
                                        ok,
                                        stdout,
                                        stderr,
                                        wall,
                                    } => match native::parse_output(peer.engine, &stdout) {
                                        Ok(p) if p.seconds >= d.timeout.as_secs_f64() => {
                                            Status::Timeout
                                        }
                                        Ok(p) if ok => Status::Ok {
                                            count: p.count,
                                            seconds: p.seconds,
                                            wall: Some(wall),
                                        },
                                        Ok(_) => Status::Error(format!(
                                            "exit status not 0: {}",
                                            tail(&stderr)
                                        )),
                                        Err(e) => Status::Error(if stderr.trim().is_empty() {
                                            e
                                        } else {
                                            format!("{e}; stderr: {}", tail(&stderr))
                                        }),
                                    },
                                    Ran::TimedOut => Status::Timeout,
                                    Ran::Failed(e) => Status::Error(e),
                                }
                            }
                        };
                        rows.push(row(q, status));
                    }
                }
                done += qs.len();
                log(&format!(
                    "{} queries of {total} done (round {} of {rounds}: {} {start}..{end})",
                    done,
                    round + 1,
                    w.name
                ));
            }
        }
        by_round.push(rows);
    }
    let mut rows = median_of_rounds(by_round);

    // Checks.
    let ours: HashMap<(String, String), u64> = rows
        .iter()
        .filter(|r| r.engine == OURS)
        .filter_map(|r| match r.status {
            Status::Ok { count, .. } => Some(((r.workload.clone(), r.query.clone()), count)),
            _ => None,
        })
        .collect();
    for r in rows.iter_mut() {
        r.ours = if r.engine == OURS {
            None
        } else {
            ours.get(&(r.workload.clone(), r.query.clone())).copied()
        };
        if let Status::Ok { count, .. } = r.status {
            r.wrong = differs(count, r.expected, r.limit) || differs(count, r.ours, r.limit);
        }
    }
    std::fs::write(dir.join("results.csv"), csv(&rows))?;
    let peer_notes: Vec<String> = built
        .iter()
        .map(|(p, b)| match b {
            Ok(b) => format!(
                "{} (github.com/{} at {}{}): {}",
                p.engine,
                p.repo,
                &p.commit[..12],
                p.patch
                    .map(|x| format!(", with xtask/bench/{x}"))
                    .unwrap_or_default(),
                b.origin
            ),
            Err(e) => format!(
                "{} (github.com/{} at {}): **skipped**: {e}",
                p.engine,
                p.repo,
                &p.commit[..12]
            ),
        })
        .collect();
    let markdown = markdown(&defs, &engines, &rows, &peer_notes, o.chunk, rounds);
    std::fs::write(dir.join("per-query.md"), per_query(&defs, &engines, &rows))?;
    std::fs::write(
        dir.join("report.md"),
        format!("# gpsense and the exact matchers\n\n{markdown}"),
    )?;
    let ours_wrong = rows
        .iter()
        .filter(|r| (r.engine == OURS || r.engine == OURS_2T) && r.wrong)
        .count();
    Ok(Section {
        markdown,
        ours_wrong,
    })
}

/// One row per (workload, query, engine), in the first round's order: answered in every round with
/// the same count, the median time (and wall time) of the rounds; otherwise the first round's
/// outcome that was not an answer, or an error naming counts that changed between rounds.
fn median_of_rounds(by_round: Vec<Vec<Row>>) -> Vec<Row> {
    let mut rounds = by_round.into_iter();
    let Some(first) = rounds.next() else {
        return Vec::new();
    };
    let key = |r: &Row| (r.workload.clone(), r.query.clone(), r.engine.clone());
    let mut later: HashMap<(String, String, String), Vec<Status>> = HashMap::new();
    for r in rounds.flatten() {
        later.entry(key(&r)).or_default().push(r.status);
    }
    first
        .into_iter()
        .map(|mut r| {
            let mut statuses = vec![r.status.clone()];
            statuses.extend(later.remove(&key(&r)).unwrap_or_default());
            r.status = merge(&statuses);
            r.rounds = statuses
                .iter()
                .filter_map(|s| match s {
                    Status::Ok { seconds, .. } => Some(*seconds),
                    _ => None,
                })
                .collect();
            r
        })
        .collect()
}

fn merge(statuses: &[Status]) -> Status {
    let mut secs = Vec::new();
    let mut walls = Vec::new();
    let mut counts = Vec::new();
    for s in statuses {
        match s {
            Status::Ok {
                count,
                seconds,
                wall,
            } => {
                counts.push(*count);
                secs.push(*seconds);
                walls.extend(*wall);
            }
            other => return other.clone(),
        }
    }
    if counts.iter().any(|&c| c != counts[0]) {
        return Status::Error(format!("counts differ between rounds: {counts:?}"));
    }
    Status::Ok {
        count: counts[0],
        seconds: median(&mut secs),
        wall: (!walls.is_empty()).then(|| median(&mut walls)),
    }
}

/// The middle value (the mean of the two middle ones for an even count); `xs` is not empty.
fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(2)..].join(" | ")
}

fn csv(rows: &[Row]) -> String {
    let mut out = String::from("workload,query,engine,status,count,expected,gpsense_count,limit,WRONG,seconds,wall_seconds,round_seconds,note\n");
    for r in rows {
        let (status, count, secs, wall, note) = match &r.status {
            Status::Ok {
                count,
                seconds,
                wall,
            } => (
                "ok",
                count.to_string(),
                format!("{seconds:.9}"),
                wall.map(|w| format!("{w:.6}")).unwrap_or_default(),
                String::new(),
            ),
            Status::Timeout => (
                "timeout",
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ),
            Status::Error(m) => (
                "error",
                String::new(),
                String::new(),
                String::new(),
                m.clone(),
            ),
            Status::Skipped(m) => (
                "skipped",
                String::new(),
                String::new(),
                String::new(),
                m.clone(),
            ),
        };
        let o = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
        let note = if note.contains([',', '"', '\n']) {
            format!("\"{}\"", note.replace('"', "\"\"").replace('\n', " "))
        } else {
            note
        };
        let each: Vec<String> = r.rounds.iter().map(|t| format!("{t:.9}")).collect();
        let each = each.join(";");
        let _ = writeln!(
            out,
            "{},{},{},{status},{count},{},{},{},{},{secs},{wall},{each},{note}",
            r.workload,
            r.query,
            r.engine,
            o(r.expected),
            o(r.ours),
            o(r.limit),
            if r.wrong { "WRONG" } else { "" }
        );
    }
    out
}

/// One engine on one workload.
#[derive(Default)]
struct Tally {
    queries: usize,
    ok: usize,
    timeouts: usize,
    errors: usize,
    skipped: usize,
    wrong: usize,
    seconds: f64,
    wall: f64,
    walls: usize,
    skip_reason: Option<String>,
}

fn tally(rows: &[Row], workload: &str, engine: &str) -> Tally {
    let mut t = Tally::default();
    for r in rows
        .iter()
        .filter(|r| r.workload == workload && r.engine == engine)
    {
        t.queries += 1;
        t.wrong += usize::from(r.wrong);
        match &r.status {
            Status::Ok { seconds, wall, .. } => {
                t.ok += 1;
                t.seconds += seconds;
                if let Some(w) = wall {
                    t.wall += w;
                    t.walls += 1;
                }
            }
            Status::Timeout => t.timeouts += 1,
            Status::Error(_) => t.errors += 1,
            Status::Skipped(m) => {
                t.skipped += 1;
                t.skip_reason.get_or_insert_with(|| m.clone());
            }
        }
    }
    t
}

/// Seconds to three significant digits (milliseconds below a second).
pub fn secs(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0} s")
    } else if v >= 10.0 {
        format!("{v:.1} s")
    } else if v >= 1.0 {
        format!("{v:.2} s")
    } else {
        format!("{} ms", super::report::ms(v * 1e3))
    }
}

fn cell(t: &Tally, wall: bool) -> String {
    if t.queries == 0 {
        return "-".into();
    }
    if t.skipped == t.queries {
        return "skipped".into();
    }
    let mut s = if wall {
        if t.walls == 0 {
            "-".to_owned()
        } else {
            secs(t.wall)
        }
    } else {
        secs(t.seconds)
    };
    if t.ok < t.queries {
        let _ = write!(s, " ({}/{})", t.ok, t.queries);
    }
    if t.timeouts > 0 {
        let _ = write!(s, ", {} t/o", t.timeouts);
    }
    if t.errors > 0 {
        let _ = write!(s, ", {} err", t.errors);
    }
    if t.wrong > 0 {
        s = format!("{s}, <span style=\"color:red\">{} wrong</span>", t.wrong);
    }
    s
}

/// A query's time on `engine` when it answered with the right count.
fn time_of(rows: &[Row], workload: &str, query: &str, engine: &str) -> Option<f64> {
    rows.iter()
        .find(|r| r.workload == workload && r.query == query && r.engine == engine)
        .and_then(|r| match r.status {
            Status::Ok { seconds, .. } if !r.wrong => Some(seconds),
            _ => None,
        })
}

/// Per engine, the queries of `workload` it answered fastest (right counts only; a tie goes to
/// the engine listed first), and the queries any engine answered.
fn wins(
    rows: &[Row],
    workload: &str,
    queries: &[String],
    engines: &[String],
) -> (Vec<usize>, usize) {
    let mut won = vec![0; engines.len()];
    let mut answered = 0;
    for q in queries {
        let best = engines
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((time_of(rows, workload, q, e)?, i)))
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        if let Some((_, i)) = best {
            won[i] += 1;
            answered += 1;
        }
    }
    (won, answered)
}

/// gpsense on two threads against one, per workload: the summed times and the queries two threads
/// answered more than [`SLOWER_2T`] times slower.
fn two_threads(md: &mut String, defs: &[Def], rows: &[Row]) {
    let _ = writeln!(
        md,
        "\ngpsense-dfs on two threads against one (both right; slower: more than {SLOWER_2T}x the \
         one-thread time and {:.1} ms more):\n\n| workload | 1 thread | 2 threads | ratio | slower on 2 threads |\n|---|---|---|---|---|",
        SLOWER_2T_BY * 1e3
    );
    for d in defs {
        let w = &d.listed;
        let (mut one, mut two, mut slower) = (0.0, 0.0, Vec::new());
        for q in &w.queries {
            let times = (
                time_of(rows, &w.name, &q.id, OURS),
                time_of(rows, &w.name, &q.id, OURS_2T),
            );
            if let (Some(a), Some(b)) = times {
                one += a;
                two += b;
                if b > SLOWER_2T * a && b > a + SLOWER_2T_BY {
                    slower.push(format!("{} ({:.2} / {:.2} ms)", q.id, a * 1e3, b * 1e3));
                }
            }
        }
        let ratio = if one > 0.0 { two / one } else { 0.0 };
        let listed = match slower.len() {
            0 => "0".to_owned(),
            n if n <= 3 => format!("{n}: {}", slower.join(", ")),
            n => format!("{n}: {}, ...", slower[..3].join(", ")),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {ratio:.2} | {listed} |",
            w.name,
            secs(one),
            secs(two)
        );
    }
}

/// `per-query.md`: every query's time on every engine, the fastest in bold.
fn per_query(defs: &[Def], engines: &[String], rows: &[Row]) -> String {
    let mut md = String::from(
        "# Per query: gpsense and the exact matchers\n\nMilliseconds per query (each engine's own \
         time, as in report.md); bold: the fastest right answer; t/o, err, wrong, skipped as there.\n",
    );
    for d in defs {
        let w = &d.listed;
        let _ = write!(md, "\n## {}\n\n| query |", w.name);
        for e in engines {
            let _ = write!(md, " {} |", title(e));
        }
        md.push_str("\n|---|");
        md.push_str(&"---|".repeat(engines.len()));
        md.push('\n');
        for q in &w.queries {
            let times: Vec<Option<f64>> = engines
                .iter()
                .map(|e| time_of(rows, &w.name, &q.id, e))
                .collect();
            let best = times.iter().flatten().copied().min_by(f64::total_cmp);
            let _ = write!(md, "| {} |", q.id);
            for (e, t) in engines.iter().zip(&times) {
                let text = match (
                    t,
                    rows.iter()
                        .find(|r| r.workload == w.name && r.query == q.id && &r.engine == e),
                ) {
                    (Some(t), _) if Some(*t) == best => {
                        format!("**{}**", super::report::ms(t * 1e3))
                    }
                    (Some(t), _) => super::report::ms(t * 1e3),
                    (None, Some(r)) if r.wrong => "wrong".into(),
                    (None, Some(r)) => match r.status {
                        Status::Timeout => "t/o".into(),
                        Status::Error(_) => "err".into(),
                        Status::Skipped(_) => "skipped".into(),
                        Status::Ok { .. } => "-".into(),
                    },
                    (None, None) => "-".into(),
                };
                let _ = write!(md, " {text} |");
            }
            md.push('\n');
        }
    }
    md
}

/// A workload's first four cells: name, queries, match limit, time limit.
fn row_head(md: &mut String, d: &Def) {
    let w = &d.listed;
    let limit = w.limit.map_or_else(|| "all".into(), |l| l.to_string());
    let _ = write!(
        md,
        "| {} | {} | {limit} | {} s |",
        w.name,
        w.queries.len(),
        d.timeout.as_secs()
    );
}

fn markdown(
    defs: &[Def],
    engines: &[String],
    rows: &[Row],
    peers: &[String],
    chunk: usize,
    rounds: usize,
) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Total per-query processing time of the answered queries, summed (answered/queries where not all; \
         t/o: past the time limit; err: crashed or unreadable output; <span style=\"color:red\">wrong</span>: a count that \
         differs from the published one or from gpsense-dfs's, counts capped at the workload's limit). gpsense-dfs: \
         `gpsense-bench-runner`, one thread, the graph loaded once, the time of each query's match (plan, filter, join, \
         count). Peers: one process per query, the time each prints for the query without loading the data graph \
         (DAF `Total time`, VEQ `Processing Time`, GuP `search_sec`, RapidMatch `Query time`). Engines take turns \
         per chunk of {chunk} queries. Non-induced subgraph isomorphism on vertex-labelled graphs (gpsense's `iso`).\n"
    );
    if rounds > 1 {
        let _ = writeln!(
            md,
            "Each engine answered each query {rounds} times (rounds: the whole suite, then again, who goes first \
             rotated, every time in fresh processes); a query's time is the median of its rounds (all rounds' \
             times: `round_seconds` in results.csv). A query not answered in the first round is not run again.\n"
        );
    }
    let header = |md: &mut String, engines: &[String]| {
        let _ = write!(md, "| workload | queries | limit | time limit |");
        for e in engines {
            let _ = write!(md, " {} |", title(e));
        }
        let _ = write!(md, "\n|---|---|---|---|");
        for _ in engines {
            md.push_str("---|");
        }
        md.push('\n');
    };
    for wall in [false, true] {
        if wall {
            let _ = writeln!(
                md,
                "\nWall time of the peers' processes, summed (each loads the data graph; gpsense-dfs: in-process, not shown):\n"
            );
        }
        header(&mut md, engines);
        for d in defs {
            let w = &d.listed;
            row_head(&mut md, d);
            for e in engines {
                let t = tally(rows, &w.name, e);
                let c = if wall && (e == OURS || e == OURS_2T) {
                    "-".to_owned()
                } else {
                    cell(&t, wall)
                };
                let _ = write!(md, " {c} |");
            }
            md.push('\n');
        }
    }
    md.push_str(
        "\nQueries each engine answered fastest (right counts only; the engines' own times as above; \
         per query: `exact-peers/per-query.md`):\n\n",
    );
    // gpsense on one thread against the peers; two threads have a table of their own.
    let contenders: Vec<String> = engines.iter().filter(|e| *e != OURS_2T).cloned().collect();
    header(&mut md, &contenders);
    for d in defs {
        let w = &d.listed;
        let names: Vec<String> = w.queries.iter().map(|q| q.id.clone()).collect();
        let (won, answered) = wins(rows, &w.name, &names, &contenders);
        row_head(&mut md, d);
        for n in won {
            let share = if answered == 0 {
                0.0
            } else {
                100.0 * n as f64 / answered as f64
            };
            let _ = write!(md, " {n} ({share:.0}%) |");
        }
        md.push('\n');
    }
    if engines.iter().any(|e| e == OURS_2T) {
        two_threads(&mut md, defs, rows);
    }
    md.push_str("\nWorkloads:\n\n");
    for d in defs {
        let _ = writeln!(md, "- `{}`: {}.", d.listed.name, d.listed.selection);
    }
    md.push_str("\nPeers (built from source under target/bench/peers/, never vendored):\n\n");
    for p in peers {
        let _ = writeln!(md, "- {p}");
    }
    let wrong: Vec<&Row> = rows.iter().filter(|r| r.wrong).collect();
    if !wrong.is_empty() {
        md.push_str("\nWrong counts:\n\n");
        for r in wrong {
            let count = match r.status {
                Status::Ok { count, .. } => count,
                _ => 0,
            };
            let o = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
            let _ = writeln!(
                md,
                "- <span style=\"color:red\">{} / {} / {}: {count}, published {}, gpsense-dfs {}</span>",
                r.workload,
                r.query,
                r.engine,
                o(r.expected),
                o(r.ours)
            );
        }
    }
    let errors: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.status, Status::Error(_)))
        .take(10)
        .collect();
    if !errors.is_empty() {
        md.push_str("\nErrors (first 10):\n\n");
        for r in errors {
            if let Status::Error(m) = &r.status {
                let _ = writeln!(
                    md,
                    "- {} / {} / {}: {}",
                    r.workload,
                    r.query,
                    r.engine,
                    m.replace('|', "/")
                );
            }
        }
    }
    md.push_str("\nPer query: `exact-peers/per-query.md`, `exact-peers/results.csv`.\n");
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(query: &str, engine: &str, status: Status, wrong: bool) -> Row {
        Row {
            workload: "w".into(),
            query: query.into(),
            engine: engine.into(),
            status,
            expected: None,
            limit: None,
            ours: None,
            wrong,
            rounds: Vec::new(),
        }
    }

    fn ok(seconds: f64) -> Status {
        Status::Ok {
            count: 1,
            seconds,
            wall: None,
        }
    }

    #[test]
    fn a_query_is_won_by_the_fastest_right_answer() {
        let engines = vec![OURS.to_owned(), "DAF".to_owned()];
        let rows = vec![
            row("a", OURS, ok(2.0), false),
            row("a", "DAF", ok(1.0), false),
            // DAF is faster but wrong: gpsense wins.
            row("b", OURS, ok(2.0), false),
            row("b", "DAF", ok(1.0), true),
            // A tie goes to the engine listed first.
            row("c", OURS, ok(1.0), false),
            row("c", "DAF", ok(1.0), false),
            // Nobody answered.
            row("d", OURS, Status::Timeout, false),
            row("d", "DAF", Status::Error("x".into()), false),
        ];
        let queries: Vec<String> = ["a", "b", "c", "d"].map(String::from).into();
        assert_eq!(wins(&rows, "w", &queries, &engines), (vec![2, 1], 3));
    }

    #[test]
    fn rounds_merge_into_the_median_or_the_first_failure() {
        let wall = |seconds: f64, wall: f64| Status::Ok {
            count: 1,
            seconds,
            wall: Some(wall),
        };
        let rounds = vec![
            vec![
                row("a", OURS, ok(3.0), false),
                row("b", OURS, ok(1.0), false),
                row("c", "DAF", wall(1.0, 9.0), false),
                row("d", "DAF", Status::Timeout, false),
            ],
            // A later round may come in another order, and without what failed in the first.
            vec![
                row("c", "DAF", wall(4.0, 7.0), false),
                row("b", OURS, Status::Error("crashed".into()), false),
                row("a", OURS, ok(1.0), false),
            ],
            vec![
                row("a", OURS, ok(2.5), false),
                row("b", OURS, ok(1.0), false),
                row("c", "DAF", wall(2.0, 8.0), false),
            ],
        ];
        let merged = median_of_rounds(rounds);
        let got: Vec<(&str, String)> = merged
            .iter()
            .map(|r| (r.query.as_str(), format!("{:?}", r.status)))
            .collect();
        assert_eq!(
            got,
            [
                ("a", format!("{:?}", ok(2.5))),
                ("b", format!("{:?}", Status::Error("crashed".into()))),
                ("c", format!("{:?}", wall(2.0, 8.0))),
                ("d", format!("{:?}", Status::Timeout)),
            ]
        );
        assert_eq!(merged[0].rounds, [3.0, 1.0, 2.5]);
        // An even number of rounds: the mean of the middle two; counts that change are an error.
        let two = median_of_rounds(vec![
            vec![row("a", OURS, ok(1.0), false)],
            vec![row("a", OURS, ok(2.0), false)],
        ]);
        assert_eq!(format!("{:?}", two[0].status), format!("{:?}", ok(1.5)));
        let other_count = Status::Ok {
            count: 2,
            seconds: 1.0,
            wall: None,
        };
        let changed = median_of_rounds(vec![
            vec![row("a", OURS, ok(1.0), false)],
            vec![row("a", OURS, other_count, false)],
        ]);
        assert!(matches!(&changed[0].status, Status::Error(m) if m.contains("[1, 2]")));
    }

    #[test]
    fn yeast_150_filters_sorts_and_shuffles_as_python() {
        let qs: Vec<YeastQuery> = vec![
            ("b".into(), 8, Some(5)),
            ("a".into(), 4, Some(10_000_000)),
            ("c".into(), 16, Some(10_000_001)),
            ("d".into(), 24, Some(1)),
            ("e".into(), 16, None),
            ("f".into(), 16, Some(0)),
        ];
        // Python: names = sorted(["b", "a", "f"]); random.Random(7).shuffle(names) -> ['f', 'a', 'b']
        assert_eq!(yeast_150(&qs, 150), ["f", "a", "b"]);
        assert_eq!(yeast_150(&qs, 2), ["f", "a"]);
    }

    #[test]
    fn yeast_150_on_the_shipped_suite() {
        let sm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/subgraph-matching/yeast");
        let answers = read_expected(&sm.join("yeast_ans.txt")).unwrap();
        let qs: Vec<YeastQuery> = queries_in(&sm.join("query_graph"))
            .unwrap()
            .into_iter()
            .map(|(id, _, n)| {
                let a = answers.get(&id).copied();
                (id, n, a)
            })
            .collect();
        let picked = yeast_150(&qs, 150);
        assert_eq!(picked.len(), 150);
        // The same selection done in Python over the same files (see the module docs).
        assert_eq!(&picked[..3], PYTHON_FIRST_3);
        assert_eq!(picked[149], PYTHON_LAST);
    }

    // 844 candidates; Python 3.11 over the same files and yeast_ans.txt.
    const PYTHON_FIRST_3: [&str; 3] = [
        "query_sparse_8_33",
        "query_sparse_8_171",
        "query_sparse_16_197",
    ];
    const PYTHON_LAST: &str = "query_sparse_8_164";

    #[test]
    fn counts_are_compared_below_the_limit() {
        assert!(!differs(5, Some(5), None));
        assert!(differs(5, Some(6), None));
        assert!(!differs(5, None, None));
        // Both reached the limit: equal as far as the workload goes.
        assert!(!differs(100_012, Some(3_000_000), Some(100_000)));
        assert!(differs(99_999, Some(3_000_000), Some(100_000)));
        assert!(!differs(42, Some(42), Some(100_000)));
    }

    #[test]
    fn totals_are_shown_to_three_digits() {
        assert_eq!(secs(123.4), "123 s");
        assert_eq!(secs(1.234), "1.23 s");
        assert_eq!(secs(0.01234), "12.3 ms");
    }

    #[test]
    fn natural_order_of_query_names() {
        let mut v = vec!["q_16_10", "q_16_2", "q_8_1"];
        v.sort_by_key(|s| natural_key(s));
        assert_eq!(v, ["q_16_2", "q_16_10", "q_8_1"]);
    }
}

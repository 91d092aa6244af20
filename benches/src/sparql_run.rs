//! gpsense's side of the SPARQL algebra measurement (`cargo xtask bench --only sparql`, the
//! `sparql_algebra` example, `gpsense-bench-runner sparql`): the embedded ConceptNet-100K loaded
//! once, then each query of a set ([`crate::sparql_set`]) answered warm, as `gpsense query` does
//! (`gpsense::read`: the graph path or the full evaluator), one JSON line per query with its rows, a
//! digest of its answer and its times.
//!
//! Each query runs once untimed (warm-up, and the digest: FNV-1a over the sorted rows, terms in
//! N-Triples form, as `xtask/bench/sparql_peer.py` computes it for Oxigraph), then up to `runs`
//! timed runs (fewer once they took 2 s in all) that consume every row. One thread, as the peer.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use gpsense::sparql::{Answer, Options, Sparql};
use gpsense::{solutions, Form, Loaded, MatchOptions, Matcher, Prepared, Reading};
use gpsense_graph::export::{dump, DumpFormat};
use gpsense_graph::ingest::NoProgress;
use gpsense_graph::rdf::{nt_predicate, nt_term};
use gpsense_planner::Projected;
use serde_json::json;

use crate::sparql_set::{self, Digest, SetQuery};

/// `QUERIES [--runs N] [--dump FILE]`: measures every query of the set in QUERIES and prints one
/// JSON line each (after `{"ready": true, "load_seconds": s}`); `--dump FILE` first writes the
/// graph as N-Triples (what `gpsense dump` writes), for the peer to load.
pub fn main_with(args: impl IntoIterator<Item = String>) -> Result<(), String> {
    let mut args = args.into_iter();
    let mut queries = None;
    let mut runs = 5usize;
    let mut dump_to = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => {
                runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--runs takes a positive number")?
            }
            "--dump" => dump_to = Some(args.next().ok_or("--dump takes a file")?),
            _ if queries.is_none() => queries = Some(a),
            _ => return Err(format!("unexpected argument {a:?}")),
        }
    }
    let queries = queries.ok_or("usage: QUERIES [--runs N] [--dump FILE]")?;
    let text = std::fs::read_to_string(&queries).map_err(|e| format!("{queries}: {e}"))?;
    let set = sparql_set::parse(&text).map_err(|e| format!("{queries}: {e}"))?;

    let start = Instant::now();
    let loaded = Loaded::open(None, &NoProgress).map_err(|e| e.to_string())?;
    let matcher = Matcher::new(&loaded).map_err(|e| e.to_string())?;
    let load_seconds = start.elapsed().as_secs_f64();
    if let Some(path) = dump_to {
        write_dump(&loaded, Path::new(&path))?;
    }
    emit(&json!({"ready": true, "load_seconds": load_seconds}));
    let sparql = Sparql::new(&matcher);
    for q in &set {
        emit(&measure(&matcher, &sparql, q, runs));
    }
    Ok(())
}

/// Timed runs stop once they took this long in all.
const RUN_BUDGET_S: f64 = 2.0;

fn write_dump(loaded: &Loaded, path: &Path) -> Result<(), String> {
    let file = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
    dump(&loaded.graph, DumpFormat::NTriples, file).map_err(|e| e.to_string())?;
    Ok(())
}

fn emit(value: &serde_json::Value) {
    let mut out = io::stdout().lock();
    // A closed pipe ends the run the way a reader that has enough would want.
    if writeln!(out, "{value}").and_then(|()| out.flush()).is_err() {
        std::process::exit(0);
    }
}

/// One query: the untimed run (rows and digest), then the timed runs.
fn measure(m: &Matcher, sparql: &Sparql<Matcher>, q: &SetQuery, runs: usize) -> serde_json::Value {
    let base = json!({"name": q.name, "class": q.class});
    let first = answer(m, sparql, &q.text, true);
    let (rows, digest, path) = match first {
        Ok(a) => (a.rows, a.digest.finish(), a.path),
        Err(e) => return with(base, json!({"status": "error", "message": e})),
    };
    let mut seconds = Vec::new();
    while seconds.len() < runs && seconds.iter().sum::<f64>() < RUN_BUDGET_S {
        let t = Instant::now();
        if let Err(e) = answer(m, sparql, &q.text, false) {
            return with(base, json!({"status": "error", "message": e}));
        }
        seconds.push(t.elapsed().as_secs_f64());
    }
    with(
        base,
        json!({"status": "ok", "rows": rows, "digest": format!("{digest:016x}"),
               "path": path, "seconds": seconds}),
    )
}

fn with(mut a: serde_json::Value, b: serde_json::Value) -> serde_json::Value {
    if let (Some(a), serde_json::Value::Object(b)) = (a.as_object_mut(), b) {
        a.extend(b);
    }
    a
}

/// What one run gives: the rows, their digest (when asked for), and which path answered (the
/// graph's, the native evaluator, or spareval's algebra).
struct Answered {
    rows: u64,
    digest: Digest,
    path: &'static str,
}

fn answer(
    m: &Matcher,
    sparql: &Sparql<Matcher>,
    text: &str,
    digest: bool,
) -> Result<Answered, String> {
    let options = MatchOptions {
        single_thread: true,
        ..MatchOptions::default()
    };
    match gpsense::read(m, text, None).map_err(|e| e.to_string())? {
        Reading::Graph(p) => graph_path(m, &p, &options, digest),
        Reading::Algebra(query) => {
            let options = Options {
                base_iri: None,
                matching: options,
            };
            let evaluation = sparql
                .evaluate_query(*query, &options)
                .map_err(|e| e.to_string())?;
            let native = evaluation.matcher.native;
            let mut answered = algebra_answer(evaluation.answer, digest)?;
            if native {
                answered.path = "native";
            }
            Ok(answered)
        }
    }
}

/// The full evaluator's answer, every row consumed; terms in N-Triples form for the digest.
fn algebra_answer(answer: Answer, digest: bool) -> Result<Answered, String> {
    let mut out = Answered {
        rows: 0,
        digest: Digest::default(),
        path: "algebra",
    };
    match answer {
        Answer::Boolean(yes) => {
            out.rows = 1;
            out.digest.row([Some(yes.to_string())]);
        }
        Answer::Solutions { rows, .. } => {
            for row in rows {
                let row = row.map_err(|e| e.to_string())?;
                out.rows += 1;
                if digest {
                    out.digest
                        .row(row.iter().map(|t| t.as_ref().map(|t| t.to_string())));
                }
            }
        }
        Answer::Graph(triples) => {
            for t in triples {
                let t = t.map_err(|e| e.to_string())?;
                out.rows += 1;
                if digest {
                    let terms = [
                        t.subject.to_string(),
                        t.predicate.to_string(),
                        t.object.to_string(),
                    ];
                    out.digest.row(terms.into_iter().map(Some));
                }
            }
        }
    }
    Ok(out)
}

/// The graph path, as `gpsense query` runs it: `COUNT(*)` and ASK counted, other forms streamed.
fn graph_path(
    m: &Matcher,
    p: &Prepared,
    options: &MatchOptions,
    digest: bool,
) -> Result<Answered, String> {
    let opts = solutions::options_for(p, options, None);
    let mut out = Answered {
        rows: 0,
        digest: Digest::default(),
        path: "graph",
    };
    match p.form {
        Form::Count { .. } => {
            let n = solutions::count(m, p, &opts).map_err(|e| e.to_string())?;
            out.rows = 1;
            out.digest.row([Some(format!(
                "\"{}\"^^<http://www.w3.org/2001/XMLSchema#integer>",
                n.report.rows
            ))]);
        }
        Form::Ask => {
            let (yes, _) = solutions::ask(m, p, &opts).map_err(|e| e.to_string())?;
            out.rows = 1;
            out.digest.row([Some(yes.to_string())]);
        }
        Form::Select => {
            let g = m.graph();
            let edge: Vec<bool> = p
                .graph
                .projection
                .iter()
                .map(|c| matches!(c, Projected::Edge(_)))
                .collect();
            let (rows, d) = (&mut out.rows, &mut out.digest);
            solutions::select(m, p, &opts, &mut |batch| {
                *rows += batch.rows as u64;
                if digest {
                    for row in batch.iter() {
                        d.row(row.iter().zip(&edge).map(|(&id, &is_edge)| {
                            Some(if is_edge {
                                nt_predicate(g.relation_name(id as u16))
                            } else {
                                nt_term(g.node_name(id))
                            })
                        }));
                    }
                }
                true
            })
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}

//! `/trust`: TruST's ranked near matches of a query whose concepts may be misspelt, as `gpsense
//! trust` finds them, as JSON: the template (for the drawing), and per matching its score, the
//! data node of each template node and how each template edge was found. A server on a device
//! engine searches on that device too (`auto`: the GPU when one opens, falling back to the CPU if
//! it fails mid-search).

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gpsense::EngineKind;
use gpsense_runtime::device::DeviceError;
use gpsense_runtime::MatchError;
use gpsense_trust::{
    Cancel, EdgeFound, Match, NodeLabel, Params, Template, TrustEngine, TrustError,
};
use serde_json::{json, Value};

use super::execute::{Engine, Failure};
use crate::commands::trust::{query_job, render, Job};

/// The most matchings one request may ask for (`k`); the server's row cap may lower it.
pub const MAX_K: usize = 1_000;

/// What one search asks.
pub struct Search<'a> {
    pub text: &'a str,
    /// Matchings wanted (already within [`MAX_K`] and the row cap).
    pub k: usize,
    pub timeout: Duration,
    pub cancel: &'static AtomicBool,
}

/// TruST's name index, built by the first search, and where the searches run: the server's
/// engine's device (`auto`: the GPU when one opens, else the CPU), opened by the first search on
/// the matcher's own device state.
pub type Trusts = gpsense::Trusts<'static>;

/// The engine TruST runs on for the server's: the same device, or the CPU for a CPU engine.
fn trust_engine(kind: EngineKind) -> TrustEngine {
    match kind {
        EngineKind::Gpu => TrustEngine::Gpu,
        EngineKind::Emulated => TrustEngine::Emulated,
        EngineKind::Auto => TrustEngine::Auto,
        _ => TrustEngine::Cpu,
    }
}

/// A search's failure as the server answers it: the device's as the engine's, the rest as the
/// query's (a budget, a bad parameter).
fn failure(e: TrustError) -> Failure {
    match e {
        TrustError::Device(d) => Failure::Engine(MatchError::Device(d)),
        TrustError::NoGpu(why) => Failure::Engine(MatchError::Device(DeviceError::Fault(format!(
            "TruST on the device: {why}"
        )))),
        other => Failure::BadQuery(other.to_string()),
    }
}

/// The ranked matchings; the name index is built on the first search and kept.
pub fn search(engine: &Engine, trusts: &Trusts, s: &Search) -> Result<Value, Failure> {
    let (template, query) =
        Template::parse(s.text).map_err(|e| Failure::BadQuery(render(&e, s.text)))?;
    let job = query_job(template, &query);
    let graph = engine.matcher.graph();
    let top = job.limit.map_or(s.k, |l| s.k.min(l as usize));
    if top == 0 {
        return Ok(answer_json(graph, &job, &[], false, &[]));
    }
    let params = Params {
        beam: Params::default().beam.max(top),
        top,
        timeout: Some(s.timeout),
        // The first request's limit counts the name index and the device's opening too.
        started: Some(Instant::now()),
        memory_budget: Some(engine.options.memory_budget),
        cancel: Some(Cancel(s.cancel)),
        ..Params::default()
    };
    let kind = trust_engine(engine.options.engine);
    let answer = trusts
        .search(engine.matcher, kind, &job.template, &params)
        .map_err(failure);
    if s.cancel.load(Relaxed) {
        return Err(Failure::Cancelled);
    }
    let answer = answer?.answer;
    // Matchings complete within the limit are an answer; none by then is not.
    if answer.timed_out && answer.matches.is_empty() {
        return Err(Failure::TimedOut(s.timeout));
    }
    Ok(answer_json(
        graph,
        &job,
        &answer.matches,
        answer.timed_out,
        &answer.unknown_relations,
    ))
}

fn answer_json(
    g: &gpsense_graph::KnowledgeGraph,
    job: &Job,
    matches: &[Match],
    timed_out: bool,
    unknown_relations: &[String],
) -> Value {
    let t = &job.template;
    let column_of = |i: usize| {
        job.columns
            .iter()
            .position(|&c| c == i)
            .map(|k| &job.headers[k])
    };
    let nodes: Vec<Value> = t
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let kind = match n.label {
                NodeLabel::Any => "variable",
                NodeLabel::Fuzzy(_) => "concept",
            };
            json!({"name": n.name, "kind": kind, "column": column_of(i)})
        })
        .collect();
    let edges: Vec<Value> = t
        .edges
        .iter()
        .map(|e| {
            json!({"from": e.source, "to": e.target,
                   "label": e.relation.as_deref().unwrap_or("?"),
                   "variable": e.relation.is_none()})
        })
        .collect();
    let rows: Vec<Value> = matches.iter().map(|m| match_json(g, m)).collect();
    json!({
        "columns": job.headers,
        "drawing": {"nodes": nodes, "edges": edges},
        "matches": rows,
        "timed_out": timed_out,
        "unknown_relations": unknown_relations,
    })
}

/// One matching: score, each template node's data node and similarity, each edge as found.
fn match_json(g: &gpsense_graph::KnowledgeGraph, m: &Match) -> Value {
    let round = |x: f32| (f64::from(x) * 1e4).round() / 1e4;
    let edges: Vec<Value> = m
        .edge_agreement
        .iter()
        .map(|a| {
            let (found, relation) = match a.found {
                EdgeFound::Exact(r) => ("exact", Some(g.relation_name(r))),
                EdgeFound::OtherRelation(r) => ("other relation", Some(g.relation_name(r))),
                EdgeFound::Reversed(r) => ("reversed", Some(g.relation_name(r))),
                EdgeFound::Missing => ("missing", None),
            };
            json!({"found": found, "relation": relation, "score": round(a.score)})
        })
        .collect();
    json!({
        "score": round(m.score),
        "nodes": m.nodes.iter().map(|&v| g.node_name(v)).collect::<Vec<_>>(),
        "similarity": m.node_agreement.iter().map(|a| round(a.similarity)).collect::<Vec<_>>(),
        "edges": edges,
    })
}

/// Stop flags for searches, which take a `'static` flag: each leaked once and reused, so no more
/// exist than searches ever ran at once (each holds a slot).
static FLAGS: Mutex<Vec<&'static AtomicBool>> = Mutex::new(Vec::new());

/// A stop flag from [`FLAGS`], lowered and given back when dropped.
pub struct Flag(pub &'static AtomicBool);

impl Flag {
    pub fn take() -> Flag {
        let reused = FLAGS.lock().unwrap_or_else(|p| p.into_inner()).pop();
        Flag(reused.unwrap_or_else(|| Box::leak(Box::new(AtomicBool::new(false)))))
    }
}

impl Drop for Flag {
    fn drop(&mut self) {
        self.0.store(false, Relaxed);
        FLAGS.lock().unwrap_or_else(|p| p.into_inner()).push(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_reused_lowered() {
        let a = Flag::take();
        a.0.store(true, Relaxed);
        let at = a.0 as *const AtomicBool;
        drop(a);
        let b = Flag::take();
        assert!(std::ptr::eq(b.0, at), "the flag given back is taken again");
        assert!(!b.0.load(Relaxed));
    }
}

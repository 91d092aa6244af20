//! The workbench's side of `gpsense serve` over HTTP on the embedded ConceptNet-100K: the page and
//! its files, `/examples`, `/explain` and `/trust`, under the server's limits. The page in a real
//! browser: `tests/workbench.rs`.

mod common;

use std::thread;

use common::http::{encode, request, Reply, Server};
use serde_json::Value;

/// Runs far past any time limit here (as in `serve.rs`).
const SLOW: &str = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e \
                    FILTER(?a != ?e) }";

fn json(reply: &Reply) -> Value {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    serde_json::from_str(&reply.body).expect("JSON")
}

fn explain(s: &Server, query: &str) -> Reply {
    s.get(&format!("/explain?query={}", encode(query)), "*/*")
}

fn trust(s: &Server, query: &str, extra: &str) -> Reply {
    s.get(&format!("/trust?query={}{extra}", encode(query)), "*/*")
}

#[test]
fn browsers_get_the_workbench_and_others_the_text_index() {
    let s = Server::start(&[]);
    let text = s.get("/", "*/*");
    assert_eq!(text.status, 200);
    assert!(
        text.body.starts_with("gpsense SPARQL endpoint\n"),
        "{}",
        text.body
    );
    assert!(text.body.contains("/explain") && text.body.contains("/trust"));
    assert_eq!(s.get("/help", "text/html").body, text.body);
    let page = s.get("/", "text/html,application/xhtml+xml,*/*;q=0.8");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(page.body.contains("<title>gpsense workbench</title>"));
    let csp = page.header("content-security-policy").expect("a policy");
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self'"));
    for (path, kind) in [
        ("/ui/app.js", "text/javascript"),
        ("/ui/app.css", "text/css"),
    ] {
        let r = s.get(path, "*/*");
        assert_eq!(r.status, 200, "{path}");
        assert!(r.header("content-type").unwrap().starts_with(kind));
        assert!(r.body.len() > 1000, "{path}");
    }
}

#[test]
fn the_examples_answer_on_the_loaded_graph() {
    let s = Server::start(&[]);
    let ex = json(&s.get("/examples", "*/*"));
    assert_eq!(ex["relations"][0]["name"], "IsA");
    let examples = ex["examples"].as_array().expect("examples");
    assert!(examples.len() >= 4);
    assert!(examples.iter().any(|e| e["dialect"] == "short"));
    assert!(examples.iter().any(|e| e["dialect"] == "sparql"));
    for e in examples {
        let q = e["query"].as_str().unwrap();
        let r = s.query(q, "text/tab-separated-values");
        assert_eq!(r.status, 200, "{q}: {}", r.body);
        assert!(r.body.lines().count() > 1, "{q}: no rows");
    }
    // The first has a handful of rows: a table and a drawing that fit the page.
    let first = s.query(examples[0]["query"].as_str().unwrap(), "text/csv");
    let rows = first.body.trim_end().lines().count() - 1;
    assert!((3..=12).contains(&rows), "{rows} rows");
    let t = json(&trust(&s, ex["trust"]["query"].as_str().unwrap(), ""));
    assert_eq!(t["matches"].as_array().unwrap().len(), 10);
}

#[test]
fn explain_gives_the_query_graph_its_plan_and_the_figures() {
    let s = Server::start(&[]);
    let v = json(&explain(
        &s,
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
    ));
    assert_eq!(v["evaluator"], "graph");
    assert_eq!(v["dialect"], "short");
    let nodes = &v["drawing"]["nodes"];
    assert_eq!(nodes[0]["name"], "?x");
    assert_eq!(nodes[0]["kind"], "variable");
    assert_eq!(nodes[0]["column"], "x");
    assert_eq!(nodes[1]["name"], "animal");
    assert_eq!(nodes[1]["kind"], "concept");
    assert_eq!(nodes[2]["kind"], "concept");
    let edges = &v["drawing"]["edges"];
    assert_eq!(edges[0]["label"], "IsA");
    assert_eq!(
        (edges[0]["from"].as_u64(), edges[0]["to"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(edges[1]["label"], "AtLocation");
    // The figures are the engine's: as many matches as the query has rows.
    let rows = s.query(
        "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
        "text/csv",
    );
    let n = rows.body.trim_end().lines().count() - 1;
    assert_eq!(v["matches"], n.to_string());
    assert_eq!(v["plan"]["steps"].as_array().unwrap().len(), 3);
    assert!(v["plan"]["steps"][0]["why"]
        .as_str()
        .unwrap()
        .contains("start"));
    let text = v["explain"].as_str().unwrap();
    assert!(text.contains("candidates per query node") && text.contains("time: plan"));
    // An edge variable is a variable edge with its column.
    let v = json(&explain(&s, "SELECT ?r WHERE { cat ?r animal }"));
    assert_eq!(v["drawing"]["edges"][0]["variable"], true);
    assert_eq!(v["drawing"]["edges"][0]["column"], "r");
    // Standard SPARQL beyond a pattern: drawn from its patterns, no plan.
    let v = json(&explain(
        &s,
        "PREFIX r: <gpsense:r/> SELECT * WHERE { ?x r:IsA ?y OPTIONAL { ?y r:AtLocation ?z } }",
    ));
    assert_eq!(v["evaluator"], "full");
    assert_eq!(v["plan"], Value::Null);
    assert_eq!(v["drawing"]["nodes"].as_array().unwrap().len(), 3);
    // A mistake is the parser's, as /query gives it.
    let bad = explain(&s, "SELECT ?x WHERE { ?x IsA animl }");
    assert_eq!(bad.status, 400);
    assert!(
        bad.body.contains("unknown concept \"animl\""),
        "{}",
        bad.body
    );
    assert_eq!(s.get("/explain", "*/*").status, 400);
}

#[test]
fn trust_ranks_near_matches_within_the_limits() {
    let s = Server::start(&["--max-rows", "4"]);
    let v = json(&trust(&s, "SELECT * WHERE { ?x IsA animals }", "&k=3"));
    assert_eq!(v["columns"], serde_json::json!(["x", "animals"]));
    let matches = v["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 3);
    let scores: Vec<f64> = matches
        .iter()
        .map(|m| m["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // The misspelt concept matched `animal`, and the edge is there.
    assert_eq!(matches[0]["nodes"][1], "animal");
    assert_eq!(matches[0]["edges"][0]["found"], "exact");
    assert_eq!(v["drawing"]["nodes"][1]["kind"], "concept");
    // The row cap bounds k; k out of range and a bad query are refused.
    let v = json(&trust(&s, "SELECT * WHERE { ?x IsA animals }", "&k=50"));
    assert_eq!(v["matches"].as_array().unwrap().len(), 4);
    for k in ["0", "1001", "x"] {
        let r = trust(&s, "SELECT * WHERE { ?x IsA animals }", &format!("&k={k}"));
        assert_eq!(r.status, 400, "k={k}");
        assert!(r.body.contains("k="), "{}", r.body);
    }
    let bad = trust(&s, "SELECT * WHERE { ?x IsA", "");
    assert_eq!(bad.status, 400);
    // The time limit holds: a search cut at 1 ms is incomplete, or no answer.
    let cut = trust(
        &s,
        "SELECT * WHERE { ?x IsA ?y . ?y AtLocation ?z }",
        "&timeout=1",
    );
    if cut.status == 200 {
        assert_eq!(json(&cut)["timed_out"], true, "{}", cut.body);
    } else {
        assert_eq!(cut.status, 503, "{}", cut.body);
        assert_eq!(cut.header("x-gpsense-timed-out"), Some("true"));
    }
}

/// A server on a device engine searches `/trust` on its device: the emulator's ranking is a CPU
/// server's, for requests one at a time and for several at once on the one device; with a fault
/// injected into `trust_extend` the search fails with the device's error (so it ran there) and the
/// server answers queries still.
#[test]
fn trust_runs_on_the_servers_device() {
    let q = "SELECT * WHERE { ?x IsA animals . ?x AtLocation hom }";
    let cpu = Server::start(&["--engine", "dfs"]);
    let want = json(&trust(&cpu, q, "&k=5"));
    assert_eq!(want["matches"].as_array().map(Vec::len), Some(5));
    let quiet = [("GPSENSE_EMULATOR_CHECK", "0")];
    let emulated = Server::start_with_env(&quiet, &["--engine", "emulated"]);
    assert_eq!(json(&trust(&emulated, q, "&k=5")), want);
    let several = [
        q,
        r#"SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }"#,
        "SELECT * WHERE { ?x IsA animl . ?x CapableOf ?y }",
        "SELECT * WHERE { lemmon IsA ?f . ?f HasProperty ?p }",
    ];
    let wanted: Vec<Value> = several
        .iter()
        .map(|q| json(&trust(&cpu, q, "&k=8")))
        .collect();
    let port = emulated.port;
    let at_once: Vec<_> = (0..8)
        .map(|i| {
            let q = several[i % several.len()];
            thread::spawn(move || {
                let path = format!("/trust?query={}&k=8", encode(q));
                request(port, "GET", &path, &[], b"")
            })
        })
        .collect();
    for (i, reply) in at_once.into_iter().enumerate() {
        let reply = reply.join().expect("a request");
        assert_eq!(
            json(&reply),
            wanted[i % several.len()],
            "{}",
            several[i % 4]
        );
    }
    let fault = [("GPSENSE_EMULATOR_FAULT", "trust_extend")];
    let faulty = Server::start_with_env(&fault, &["--engine", "emulated"]);
    let failed = trust(&faulty, q, "&k=5");
    assert_ne!(failed.status, 200, "{}", failed.body);
    assert!(
        failed.body.contains("trust_extend raised the fault flag"),
        "{}",
        failed.body
    );
    let count = "SELECT ?x WHERE { ?x IsA animal } LIMIT 3";
    let answered = faulty.get(&format!("/query?query={}", encode(count)), "text/csv");
    assert_eq!(answered.status, 200, "{}", answered.body);
}

#[test]
fn explain_and_trust_wait_for_a_slot_like_queries() {
    let s = Server::start(&[
        "--max-concurrent",
        "1",
        "--max-queued",
        "0",
        "--light-slots",
        "0",
    ]);
    let port = s.port;
    let slow = thread::spawn(move || {
        request(
            port,
            "GET",
            &format!("/query?query={}&timeout=4000", encode(SLOW)),
            &[],
            b"",
        )
    });
    s.wait_running(1);
    for busy in [
        explain(&s, "SELECT ?x WHERE { ?x IsA animal }"),
        trust(&s, "SELECT * WHERE { ?x IsA animals }", ""),
    ] {
        assert_eq!(busy.status, 503, "{}", busy.body);
        assert_eq!(busy.header("retry-after"), Some("1"));
    }
    assert_eq!(slow.join().expect("the slow request").status, 503);
    // The slot is free again once the timed-out search has wound down (its answer can reach the
    // client first: CI once got 503 here).
    s.wait_running(0);
    assert_eq!(explain(&s, "SELECT ?x WHERE { ?x IsA animal }").status, 200);
}

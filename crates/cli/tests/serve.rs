//! `gpsense serve` end to end: the real binary on the embedded ConceptNet-100K, queried over HTTP
//! with a minimal client (one request per connection), answers checked against `gpsense query`.

mod common;

use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use common::http::{encode, request, Server};
use common::ok;

const P: &str = "PREFIX c: <http://conceptnet.io/c/en/>\nPREFIX r: <http://conceptnet.io/r/>\n";
/// A query that runs far longer than any time limit here: every path of four edges is enumerated
/// (a filter on rows) to be counted, one row out.
const SLOW: &str = "SELECT (COUNT(*) AS ?n) WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e \
                    FILTER(?a != ?e) }";

/// `gpsense query`'s rows (TSV, no header), each name as a TSV literal (`"kitten"`), sorted.
fn cli_rows(args: &[&str]) -> Vec<String> {
    let (out, _) = ok(&[&["query", "-q", "--semantics", "hom"][..], args].concat());
    let mut rows: Vec<String> = out
        .lines()
        .skip(1)
        .map(|l| {
            l.split('\t')
                .map(|v| format!("\"{v}\""))
                .collect::<Vec<_>>()
                .join("\t")
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn get_and_post_answer_in_every_format() {
    let s = Server::start(&[]);
    let q = format!("{P}SELECT ?x WHERE {{ ?x r:IsA c:animal ; r:AtLocation c:home }}");
    let expected = cli_rows(&["SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"]);
    assert!(!expected.is_empty());
    // GET, TSV.
    let tsv = s.query(&q, "text/tab-separated-values");
    assert_eq!(
        tsv.header("content-type"),
        Some("text/tab-separated-values; charset=utf-8")
    );
    assert!(tsv.body.starts_with("?x\n"));
    assert_eq!(tsv.tsv_rows(), expected);
    // POST of a form, TSV; POST of the query itself, TSV: the same rows.
    let form = s.post(
        "application/x-www-form-urlencoded",
        &format!("query={}", encode(&q)),
        "text/tab-separated-values",
    );
    assert_eq!(form.tsv_rows(), expected);
    let direct = s.post("application/sparql-query", &q, "text/tab-separated-values");
    assert_eq!(direct.tsv_rows(), expected);
    // CSV: plain values, CRLF.
    let csv = s.query(&q, "text/csv");
    assert_eq!(csv.header("content-type"), Some("text/csv; charset=utf-8"));
    let mut values: Vec<String> = csv
        .body
        .split("\r\n")
        .skip(1)
        .map(|v| format!("\"{v}\""))
        .collect();
    values.retain(|v| v != "\"\"");
    values.sort();
    assert_eq!(values, expected);
    // JSON (also without Accept), every value a literal.
    let json = s.query(&q, "application/sparql-results+json");
    assert_eq!(
        json.header("content-type"),
        Some("application/sparql-results+json")
    );
    assert!(json.body.starts_with(
        r#"{"head":{"vars":["x"]},"results":{"bindings":[{"x":{"type":"literal","value":""#
    ));
    for row in &expected {
        let value = row.trim_matches('"');
        assert!(
            json.body.contains(&format!(
                r#"{{"x":{{"type":"literal","value":"{value}"}}}}"#
            )),
            "{value} in {}",
            json.body
        );
    }
    let default = request(
        s.port,
        "GET",
        &format!("/query?query={}", encode(&q)),
        &[],
        b"",
    );
    assert_eq!(default.body, json.body);
    // XML.
    let xml = s.query(&q, "application/sparql-results+xml");
    assert!(xml.body.contains("<variable name=\"x\"/>"));
    assert_eq!(xml.body.matches("<result>").count(), expected.len());
    // A predicate variable: relations in their own column, standard and short dialect alike.
    let edges = s.query(
        "SELECT ?r ?y WHERE { \"chocolate\" ?r ?y }",
        "text/tab-separated-values",
    );
    assert_eq!(
        edges.tsv_rows(),
        cli_rows(&["SELECT ?r ?y WHERE { chocolate ?r ?y }"])
    );
}

#[test]
fn ask_and_count_answer_as_sparql_does() {
    let s = Server::start(&[]);
    let yes = s.query(&format!("{P}ASK {{ c:cat r:IsA ?y }}"), "application/json");
    assert_eq!(yes.body.trim(), r#"{"head":{},"boolean":true}"#);
    let no = s.query(&format!("{P}ASK {{ c:cat r:IsA c:cat }}"), "text/csv");
    assert_eq!((no.status, no.body.as_str()), (200, "false"));
    let count = s.query(
        &format!("{P}SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"),
        "text/tab-separated-values",
    );
    let expected = cli_rows(&["SELECT ?x WHERE { ?x IsA animal }"]).len();
    assert!(expected > 0);
    assert_eq!(count.body, format!("?n\n{expected}\n"));
    let json = s.query(
        &format!("{P}SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA c:animal }}"),
        "application/json",
    );
    assert!(json.body.contains(&format!(
        r#"{{"n":{{"type":"literal","value":"{expected}","datatype":"http://www.w3.org/2001/XMLSchema#integer"}}}}"#
    )));
}

#[test]
fn a_bad_query_is_a_400_with_the_parsers_message() {
    let s = Server::start(&[]);
    let syntax = s.query(&format!("{P}SELECT ?x WHERE {{ ?x r:IsA c:animal "), "*/*");
    assert_eq!(syntax.status, 400, "{}", syntax.body);
    assert_eq!(
        syntax.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(syntax.body.contains("line 3, column"), "{}", syntax.body);
    assert!(
        syntax.body.contains('^'),
        "a caret under the column: {}",
        syntax.body
    );
    // One default graph: a dataset clause names graphs the server does not have.
    let unsupported = s.query(
        &format!("{P}SELECT ?x FROM <http://example.org/g> WHERE {{ ?x r:IsA c:animal }}"),
        "*/*",
    );
    assert_eq!(unsupported.status, 400);
    assert!(
        unsupported
            .body
            .contains("FROM and FROM NAMED are not supported"),
        "{}",
        unsupported.body
    );
    // OPTIONAL (the full evaluator): an unbound value is left out of the JSON binding.
    let optional = s.query(
        &format!(
            "{P}SELECT ?x ?y WHERE {{ VALUES ?x {{ c:dog c:animl }} OPTIONAL {{ ?x r:IsA ?y }} }}"
        ),
        "application/sparql-results+json",
    );
    assert_eq!(optional.status, 200, "{}", optional.body);
    assert!(
        optional
            .body
            .contains(r#"{"x":{"type":"uri","value":"http://conceptnet.io/c/en/animl"}}"#),
        "{}",
        optional.body
    );
    // A name the graph lacks: no solution, as SPARQL has it, and the suggestion in a header.
    let unknown = s.query(&format!("{P}SELECT ?x WHERE {{ ?x r:IsA c:animl }}"), "*/*");
    assert_eq!(unknown.status, 200);
    assert_eq!(
        unknown.body.trim(),
        r#"{"head":{"vars":["x"]},"results":{"bindings":[]}}"#
    );
    assert!(unknown
        .header("x-gpsense-warning")
        .is_some_and(|w| w.contains("\"animal\"")));
    // The short dialect keeps its errors.
    let short = s.query("SELECT ?x WHERE { ?x IsA animl }", "*/*");
    assert_eq!(short.status, 400);
    // Nesting deep enough to overflow the parser's stack is refused, and the server lives on.
    let deep = format!("ASK {{ {}?a ?r ?b{} }}", "{".repeat(5000), "}".repeat(5000));
    let refused = s.post("application/sparql-query", &deep, "*/*");
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("nests brackets 5001 deep"),
        "{}",
        refused.body
    );
    assert_eq!(s.query("ASK { ?a ?r ?b }", "*/*").status, 200);
    assert!(
        short.body.contains("did you mean \"animal\""),
        "{}",
        short.body
    );
}

#[test]
fn requests_outside_the_protocol_are_refused() {
    let s = Server::start(&["--max-body", "1K", "--max-query-bytes", "1K"]);
    let health = s.get("/health", "*/*");
    assert_eq!(health.status, 200);
    assert!(health.body.contains(r#""status":"ok""#) && health.body.contains(r#""nodes":78093"#));
    assert_eq!(s.get("/query", "*/*").status, 400);
    assert_eq!(s.get("/elsewhere", "*/*").status, 404);
    assert_eq!(s.query("ASK { ?a ?r ?b }", "text/html").status, 406);
    assert_eq!(s.post("text/plain", "ASK { ?a ?r ?b }", "*/*").status, 415);
    let long = format!("ASK {{ ?a ?r ?b }} #{}", "x".repeat(2000));
    assert_eq!(s.post("application/sparql-query", &long, "*/*").status, 413);
    assert_eq!(s.query(&long, "*/*").status, 413);
    let graph = s.query("ASK { ?a ?r ?b }", "*/*");
    assert_eq!(graph.status, 200);
    let dataset = s.get(
        &format!(
            "/query?query={}&default-graph-uri=http://x/g",
            encode("ASK { ?a ?r ?b }")
        ),
        "*/*",
    );
    assert_eq!(dataset.status, 400);
}

#[test]
fn the_row_cap_cuts_and_says_so() {
    let s = Server::start(&["--max-rows", "10"]);
    let all = s.query("SELECT * WHERE { ?a ?r ?b }", "text/csv");
    assert_eq!(all.header("x-gpsense-truncated"), Some("true"));
    assert_eq!(all.body.matches("\r\n").count(), 1 + 10);
    // A request may ask for fewer rows, never more.
    let fewer = s.get(
        &format!(
            "/query?query={}&max-rows=3",
            encode("SELECT * WHERE { ?a ?r ?b }")
        ),
        "text/csv",
    );
    assert_eq!(fewer.body.matches("\r\n").count(), 1 + 3);
    let more = s.get(
        &format!(
            "/query?query={}&max-rows=50",
            encode("SELECT * WHERE { ?a ?r ?b }")
        ),
        "text/csv",
    );
    assert_eq!(more.body.matches("\r\n").count(), 1 + 10);
    // Within the cap: no mark.
    let small = s.query(
        &format!("{P}SELECT ?x WHERE {{ ?x r:IsA c:animal }} LIMIT 5"),
        "text/csv",
    );
    assert_eq!(small.header("x-gpsense-truncated"), None);
    assert_eq!(small.body.matches("\r\n").count(), 1 + 5);
}

#[test]
fn the_time_limit_stops_a_query_and_a_request_cannot_raise_it() {
    let s = Server::start(&["--timeout-ms", "800"]);
    let start = Instant::now();
    let asked = s.get(&format!("/query?query={}&timeout=200", encode(SLOW)), "*/*");
    let short = start.elapsed();
    assert_eq!(asked.status, 503, "{}", asked.body);
    assert_eq!(asked.header("x-gpsense-timed-out"), Some("true"));
    assert_eq!(asked.header("retry-after"), None);
    assert!(
        asked.body.contains("time limit of 200 ms"),
        "{}",
        asked.body
    );
    let start = Instant::now();
    let raised = s.get(
        &format!("/query?query={}&timeout=600000", encode(SLOW)),
        "*/*",
    );
    assert_eq!(raised.status, 503);
    assert!(
        raised.body.contains("time limit of 800 ms"),
        "{}",
        raised.body
    );
    let long = start.elapsed();
    assert!(short < Duration::from_secs(20) && long < Duration::from_secs(20));
    assert!(long >= Duration::from_millis(800), "{long:?}");
}

#[test]
fn beyond_the_concurrency_bound_requests_get_503() {
    // No light slot: the bound is the main slots'.
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
    let busy = s.query("ASK { ?a ?r ?b }", "*/*");
    assert_eq!(busy.status, 503, "{}", busy.body);
    assert_eq!(busy.header("retry-after"), Some("1"));
    assert!(busy.body.contains("server busy"), "{}", busy.body);
    let slow = slow.join().expect("the slow request");
    assert_eq!(slow.status, 503);
    assert_eq!(slow.header("x-gpsense-timed-out"), Some("true"));
    // The slot is free again, once the slow request's handler has let it go (the client can read
    // the end of the response a moment before that).
    s.wait_running(0);
    assert_eq!(s.query("ASK { ?a ?r ?b }", "*/*").status, 200);
}

#[test]
fn requests_wait_in_the_queue_for_a_slot() {
    let s = Server::start(&[
        "--max-concurrent",
        "1",
        "--max-queued",
        "4",
        "--queue-wait-ms",
        "20000",
        "--light-slots",
        "0",
    ]);
    let port = s.port;
    let slow = thread::spawn(move || {
        request(
            port,
            "GET",
            &format!("/query?query={}&timeout=700", encode(SLOW)),
            &[],
            b"",
        )
    });
    s.wait_running(1);
    // Waits for the slow query's slot, then answers.
    let queued = s.query("ASK { ?a ?r ?b }", "*/*");
    assert_eq!(queued.status, 200, "{}", queued.body);
    assert_eq!(slow.join().expect("the slow request").status, 503);
}

/// Sends `signal` (`TERM`, `INT`) to the server; its exit status.
fn stop_with(s: &mut Server, signal: &str) -> std::process::ExitStatus {
    let pid = s.child.id().to_string();
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid])
        .status();
    assert!(sent.is_ok_and(|st| st.success()), "kill -{signal}");
    let start = Instant::now();
    loop {
        if let Some(status) = s.child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "still running after SIG{signal}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigterm_and_sigint_stop_the_server_cleanly() {
    // At once after start: the handlers are in place before the address is printed.
    let mut fresh = Server::start(&[]);
    assert_eq!(stop_with(&mut fresh, "TERM").code(), Some(0));
    let mut used = Server::start(&[]);
    assert_eq!(used.query("ASK { ?a ?r ?b }", "*/*").status, 200);
    assert_eq!(stop_with(&mut used, "INT").code(), Some(0));
}

#[test]
fn a_count_past_64_bits_is_exact() {
    // Issue 27: the 7-leaf star's count wrapped past 2^64 (the leaf-group product).
    let s = Server::start(&[]);
    let star = format!(
        "{P}SELECT (COUNT(*) AS ?n) WHERE {{ ?x r:IsA ?a0, ?a1, ?a2, ?a3, ?a4, ?a5, ?a6 }}"
    );
    let tsv = s.query(&star, "text/tab-separated-values");
    assert_eq!(
        (tsv.status, tsv.body.as_str()),
        (200, "?n\n5753810593750889762793\n")
    );
    let json = s.query(&star, "application/json");
    assert!(
        json.body.contains(r#""value":"5753810593750889762793""#),
        "{}",
        json.body
    );
}

/// A graph ingested from a file with no data is empty, and the endpoint answers on it as the
/// standard says: no rows, `false`, a count of 0, an unknown IRI included.
#[test]
fn an_empty_graph_answers_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ttl = dir.path().join("empty.ttl");
    std::fs::write(&ttl, "@prefix e: <http://e.org/> .\n").expect("write");
    let graph = dir.path().join("empty.gps");
    let graph = graph.to_str().expect("utf-8 path");
    ok(&["ingest", ttl.to_str().expect("utf-8 path"), "-o", graph]);
    let s = Server::start(&["--graph", graph]);
    let rows = s.query("SELECT ?x WHERE { ?x ?p ?y }", "text/tab-separated-values");
    assert_eq!((rows.status, rows.body.as_str()), (200, "?x\n"));
    let iri = s.query(
        "SELECT ?x WHERE { ?x <http://e.org/p> ?y }",
        "text/tab-separated-values",
    );
    assert_eq!((iri.status, iri.body.as_str()), (200, "?x\n"));
    let ask = s.query("ASK { ?x ?p ?y }", "text/csv");
    assert_eq!((ask.status, ask.body.as_str()), (200, "false"));
    let count = s.query(
        "SELECT (COUNT(*) AS ?n) WHERE { ?x ?p ?y }",
        "text/tab-separated-values",
    );
    assert_eq!((count.status, count.body.as_str()), (200, "?n\n0\n"));
}

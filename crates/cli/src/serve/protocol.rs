//! The SPARQL 1.1 Protocol's query operation, as Oxigraph serves it: the query from a GET's
//! `query` parameter, a form-encoded POST, or a POST of `application/sparql-query`; the result
//! format by the `Accept` header. gpsense's own parameters: `timeout` (milliseconds) and
//! `max-rows`, which may lower the server's limits but never raise them.

use axum::http::StatusCode;

use gpsense_planner::sparql::{nesting_depth, MAX_NESTING};

use super::results::Format;

/// A request refused before it runs: the status and a message for the client.
#[derive(Debug, PartialEq, Eq)]
pub struct Reject {
    pub status: StatusCode,
    pub message: String,
}

fn bad(message: impl Into<String>) -> Reject {
    Reject {
        status: StatusCode::BAD_REQUEST,
        message: message.into(),
    }
}

/// What a request asks.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Params {
    pub query: String,
    pub timeout_ms: Option<u64>,
    pub max_rows: Option<u64>,
}

/// A GET: everything in the URL's query string.
pub fn from_get(url_query: Option<&str>, max_query_bytes: usize) -> Result<Params, Reject> {
    collect(
        pairs(url_query.unwrap_or("").as_bytes()),
        None,
        max_query_bytes,
    )
}

/// A POST: a form-encoded body (its parameters and the URL's), or the query itself as the body
/// (`application/sparql-query`, other parameters in the URL).
pub fn from_post(
    url_query: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
    max_query_bytes: usize,
) -> Result<Params, Reject> {
    let url = pairs(url_query.unwrap_or("").as_bytes());
    let Some(content_type) = content_type else {
        return Err(bad(
            "no Content-Type: send application/sparql-query or application/x-www-form-urlencoded",
        ));
    };
    let (media, charset) = media_type(content_type);
    if charset
        .as_deref()
        .is_some_and(|c| !c.eq_ignore_ascii_case("utf-8"))
    {
        return Err(unsupported_type(content_type));
    }
    match media.as_str() {
        "application/sparql-query" => {
            let text =
                std::str::from_utf8(body).map_err(|_| bad("the query is not valid UTF-8"))?;
            collect(url, Some(text.to_owned()), max_query_bytes)
        }
        "application/x-www-form-urlencoded" => {
            let mut all = url;
            all.extend(pairs(body));
            collect(all, None, max_query_bytes)
        }
        _ => Err(unsupported_type(content_type)),
    }
}

fn unsupported_type(content_type: &str) -> Reject {
    Reject {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        message: format!(
            "unsupported Content-Type {content_type:?}: send application/sparql-query or \
             application/x-www-form-urlencoded (UTF-8)"
        ),
    }
}

/// The media type of a header value, lower-cased, and its `charset` parameter.
fn media_type(value: &str) -> (String, Option<String>) {
    let mut parts = value.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (name, v) = p.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| v.trim().trim_matches('"').to_owned())
    });
    (media, charset)
}

fn pairs(encoded: &[u8]) -> Vec<(String, String)> {
    form_urlencoded::parse(encoded).into_owned().collect()
}

/// The parameters of a request; `body_query` is a query sent as the body.
fn collect(
    pairs: Vec<(String, String)>,
    body_query: Option<String>,
    max_query_bytes: usize,
) -> Result<Params, Reject> {
    let mut params = Params::default();
    let mut queries = Vec::new();
    for (name, value) in pairs {
        match name.as_str() {
            "query" => queries.push(value),
            "timeout" => params.timeout_ms = Some(number(&name, &value)?),
            "max-rows" => params.max_rows = Some(number(&name, &value)?),
            "default-graph-uri" | "named-graph-uri" => {
                return Err(bad(format!(
                    "{name} is not supported: this endpoint answers on its one graph"
                )))
            }
            "update" | "using-graph-uri" | "using-named-graph-uri" => {
                return Err(bad(
                    "SPARQL Update is not supported: gpsense serve is read-only",
                ))
            }
            // Others (`format`, `output` as some clients add) are not ours: Accept decides.
            _ => {}
        }
    }
    let query = match (body_query, queries.len()) {
        (Some(q), 0) => q,
        (Some(_), _) => {
            return Err(bad(
                "the query is both in the body and in the URL's query parameter: send it once",
            ))
        }
        (None, 1) => queries.pop().unwrap_or_default(),
        (None, 0) => {
            return Err(bad(
                "no query: pass it as the `query` parameter (GET or a form POST) or as an \
                 application/sparql-query body",
            ))
        }
        (None, n) => return Err(bad(format!("{n} `query` parameters: send exactly one"))),
    };
    if query.len() > max_query_bytes {
        return Err(Reject {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            message: format!(
                "the query has {} bytes, more than this server's limit of {max_query_bytes}",
                query.len()
            ),
        });
    }
    let depth = nesting_depth(&query);
    if depth > MAX_NESTING {
        return Err(bad(format!(
            "the query nests brackets {depth} deep, more than this server's limit of {MAX_NESTING}"
        )));
    }
    params.query = query;
    Ok(params)
}

fn number(name: &str, value: &str) -> Result<u64, Reject> {
    value
        .trim()
        .parse()
        .map_err(|_| bad(format!("{name}={value:?}: expected a whole number")))
}

/// Each format's media type (a wildcard range like `text/*` matches only this one) and its other
/// names (matched exactly), in order of preference when the client has none.
const FORMATS: [(Format, &str, &[&str]); 4] = [
    (
        Format::Json,
        "application/sparql-results+json",
        &["application/json", "text/json"],
    ),
    (
        Format::Xml,
        "application/sparql-results+xml",
        &["application/xml", "text/xml"],
    ),
    (Format::Csv, "text/csv", &[]),
    (Format::Tsv, "text/tab-separated-values", &["text/tsv"]),
];

/// The result format for an `Accept` header (absent or empty: JSON). Each format takes the
/// quality of the most specific range naming it (`text/csv` before `text/*` before `*/*`); the
/// highest quality wins, ties going to the order of [`FORMATS`]. None acceptable: 406.
pub fn negotiate(accept: Option<&str>) -> Result<Format, Reject> {
    let header = accept.unwrap_or("").trim();
    if header.is_empty() {
        return Ok(Format::Json);
    }
    // Per format: (specificity, quality) of the best-matching range so far.
    let mut best: [Option<(u8, f32)>; FORMATS.len()] = [None; FORMATS.len()];
    for range in header.split(',').filter(|r| !r.trim().is_empty()) {
        let (media, quality) = media_range(range)?;
        for (k, (_, primary, others)) in FORMATS.iter().enumerate() {
            let Some(specificity) = specificity(&media, primary, others) else {
                continue;
            };
            if best[k].is_none_or(|(s, _)| specificity > s) {
                best[k] = Some((specificity, quality));
            }
        }
    }
    let mut chosen: Option<(Format, f32)> = None;
    for (k, (format, _, _)) in FORMATS.iter().enumerate() {
        if let Some((_, q)) = best[k] {
            if q > 0.0 && chosen.is_none_or(|(_, cq)| q > cq) {
                chosen = Some((*format, q));
            }
        }
    }
    // A client asking for a graph (CONSTRUCT, DESCRIBE) names an RDF type only: those answers are
    // N-Triples (valid Turtle) whatever the format; a SELECT asked so gets JSON.
    let graph_types = ["application/n-triples", "text/turtle", "text/plain"];
    let wants_graph = header.split(',').any(|r| {
        let media = r
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        graph_types.contains(&media.as_str())
    });
    if chosen.is_none() && wants_graph {
        return Ok(Format::Json);
    }
    chosen.map(|(f, _)| f).ok_or_else(|| Reject {
        status: StatusCode::NOT_ACCEPTABLE,
        message: format!(
            "no acceptable result format in Accept: {header:?}; this endpoint writes \
             application/sparql-results+json, application/sparql-results+xml, text/csv and \
             text/tab-separated-values, and application/n-triples for CONSTRUCT and DESCRIBE"
        ),
    })
}

/// How specifically a media range names a format: 2 exactly, 1 by `type/*`, 0 by `*/*`.
fn specificity(range: &str, primary: &str, others: &[&str]) -> Option<u8> {
    if range == "*/*" {
        return Some(0);
    }
    if let Some(main) = range.strip_suffix("/*") {
        return primary
            .strip_prefix(main)
            .is_some_and(|rest| rest.starts_with('/'))
            .then_some(1);
    }
    (range == primary || others.contains(&range)).then_some(2)
}

/// One range of an Accept header: its media type (lower-cased) and its `q` (default 1).
fn media_range(range: &str) -> Result<(String, f32), Reject> {
    let mut parts = range.split(';');
    let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
    if !media.contains('/') {
        return Err(bad(format!(
            "invalid media range {:?} in Accept",
            range.trim()
        )));
    }
    let mut quality = 1.0;
    for p in parts {
        if let Some((name, value)) = p.split_once('=') {
            if name.trim().eq_ignore_ascii_case("q") {
                quality = value
                    .trim()
                    .parse::<f32>()
                    .ok()
                    .filter(|q| (0.0..=1.0).contains(q))
                    .ok_or_else(|| bad(format!("invalid quality {:?} in Accept", value.trim())))?;
            }
        }
    }
    Ok((media, quality))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 1000;

    #[test]
    fn the_query_comes_from_the_url_a_form_or_the_body() {
        let p = from_get(Some("query=SELECT%20*%20WHERE%20%7B%7D&timeout=50"), MAX).unwrap();
        assert_eq!(p.query, "SELECT * WHERE {}");
        assert_eq!(p.timeout_ms, Some(50));
        let form = from_post(
            Some("max-rows=3"),
            Some("application/x-www-form-urlencoded"),
            b"query=ASK+%7B%7D&format=json",
            MAX,
        )
        .unwrap();
        assert_eq!((form.query.as_str(), form.max_rows), ("ASK {}", Some(3)));
        let direct = from_post(
            None,
            Some("application/sparql-query; charset=UTF-8"),
            b"ASK {}",
            MAX,
        )
        .unwrap();
        assert_eq!(direct.query, "ASK {}");
    }

    #[test]
    fn malformed_requests_are_refused_with_a_reason() {
        let status = |r: Result<Params, Reject>| r.unwrap_err().status;
        assert_eq!(status(from_get(None, MAX)), StatusCode::BAD_REQUEST);
        assert_eq!(
            status(from_get(Some("query=a&query=b"), MAX)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(from_get(Some("query=a&timeout=x"), MAX)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(from_get(Some("query=a&default-graph-uri=http://x"), MAX)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(from_post(None, Some("text/plain"), b"ASK {}", MAX)),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            status(from_post(
                None,
                Some("application/sparql-query;charset=latin1"),
                b"x",
                MAX
            )),
            StatusCode::UNSUPPORTED_MEDIA_TYPE
        );
        assert_eq!(
            status(from_post(
                None,
                Some("application/sparql-query"),
                b"\xff",
                MAX
            )),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(from_post(
                Some("query=x"),
                Some("application/sparql-query"),
                b"ASK {}",
                MAX
            )),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            status(from_get(
                Some(&format!("query={}", "a".repeat(MAX + 1))),
                MAX
            )),
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[test]
    fn deep_nesting_is_refused_before_parsing() {
        let deep = format!("ASK {{ {}?a ?b ?c{} }}", "{".repeat(100), "}".repeat(100));
        let refused = from_post(
            None,
            Some("application/sparql-query"),
            deep.as_bytes(),
            10_000,
        );
        assert!(refused
            .unwrap_err()
            .message
            .contains("nests brackets 101 deep"));
    }

    #[test]
    fn accept_chooses_the_format() {
        let f = |a: &str| negotiate(Some(a));
        assert_eq!(negotiate(None), Ok(Format::Json));
        assert_eq!(f("*/*"), Ok(Format::Json));
        assert_eq!(f("text/csv"), Ok(Format::Csv));
        assert_eq!(f("text/tab-separated-values"), Ok(Format::Tsv));
        assert_eq!(f("application/sparql-results+xml"), Ok(Format::Xml));
        // SPARQLWrapper's JSON header.
        assert_eq!(
            f("application/sparql-results+json,application/json,text/javascript,application/javascript"),
            Ok(Format::Json)
        );
        assert_eq!(f("text/*;q=0.9, application/json;q=0.5"), Ok(Format::Csv));
        assert_eq!(f("text/csv;q=0, text/*"), Ok(Format::Tsv));
        assert_eq!(f("application/*"), Ok(Format::Json));
        assert_eq!(
            f("text/csv;q=0.2, text/tab-separated-values"),
            Ok(Format::Tsv)
        );
        // A specific range beats a wildcard, including its q=0.
        assert_eq!(
            f("*/*;q=0.5, application/sparql-results+json;q=0"),
            Ok(Format::Xml)
        );
        assert_eq!(
            f("text/html").unwrap_err().status,
            StatusCode::NOT_ACCEPTABLE
        );
        // A graph client: its CONSTRUCT answers N-Triples, a SELECT JSON.
        assert_eq!(f("application/n-triples"), Ok(Format::Json));
        assert_eq!(f("text/turtle;q=0.9"), Ok(Format::Json));
        assert_eq!(f("csv").unwrap_err().status, StatusCode::BAD_REQUEST);
        assert_eq!(
            f("text/csv;q=x").unwrap_err().status,
            StatusCode::BAD_REQUEST
        );
    }
}

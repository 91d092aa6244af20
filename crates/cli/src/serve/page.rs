//! The query workbench: one page, its script and its style sheet, all compiled into the binary
//! (no other origin is ever contacted, so it works offline), under a Content-Security-Policy that
//! allows only this server's own script, style and requests.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

const PAGE: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");

/// Same-origin everything; no inline script or style, no frames, no plugins, forms post here.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' \
                       data:; connect-src 'self'; form-action 'self'; base-uri 'none'; \
                       frame-ancestors 'none'";

/// The endpoint's description in plain text, for curl users (`/` without `Accept: text/html`,
/// and `/help`).
pub const HELP: &str = "gpsense SPARQL endpoint\n\
     GET  /query?query=...   (or POST: application/sparql-query, or a form with query=...)\n\
     results by Accept: application/sparql-results+json (default), \
     application/sparql-results+xml, text/csv, text/tab-separated-values\n\
     parameters: timeout (ms), max-rows: lower than the server's limits\n\
     GET  /explain?query=...   the query's graph, plan and --explain figures (JSON)\n\
     GET  /trust?query=...&k=10   TruST's ranked near matches (JSON)\n\
     GET  /examples   example queries for this graph (JSON)\n\
     GET  /health\n\
     a browser opening / gets the query workbench";

/// Whether the client asks for a web page (a browser's `Accept` names `text/html`).
pub fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| {
            a.split(',').any(|m| {
                let mut parts = m.split(';');
                let media = parts.next().unwrap_or("").trim();
                let refused = parts.any(|p| p.trim().replace(' ', "") == "q=0");
                media.eq_ignore_ascii_case("text/html") && !refused
            })
        })
}

pub fn page() -> Response {
    asset(PAGE, "text/html; charset=utf-8")
}

pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The binary's own files: a new binary may change them.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn browsers_get_the_page_and_others_the_text() {
        let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
        assert!(wants_html(&accept(firefox)));
        assert!(!wants_html(&accept("*/*")));
        assert!(!wants_html(&accept("text/plain")));
        assert!(!wants_html(&accept("text/html;q=0, */*")));
        assert!(!wants_html(&HeaderMap::new()));
    }

    #[test]
    fn the_page_loads_only_its_own_files() {
        assert!(PAGE.contains(r#"<script src="/ui/app.js""#));
        assert!(PAGE.contains(r#"<link rel="stylesheet" href="/ui/app.css""#));
        // No other origin, no inline script or style for the policy to refuse.
        for text in [PAGE, SCRIPT, STYLE] {
            let text = text.replace("http://www.w3.org/2000/svg", "");
            assert!(!text.contains("http://") && !text.contains("https://"));
        }
        assert!(!PAGE.contains("<script>") && !PAGE.contains("style="));
    }
}

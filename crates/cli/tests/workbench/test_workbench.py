"""The workbench at `gpsense serve`'s `/` in a real browser (Debian's Chromium, driven by
Playwright): loads the page, runs the graph's examples with the keyboard, checks the table's rows
against `gpsense query`, the SVG drawing against the query, the plan, a TruST search and the CSV
download, and saves screenshots.

    python test_workbench.py --gpsense target/debug/gpsense --out target/workbench

Exits non-zero on the first failed check. Every request the page makes must go to the server
itself, and the page must log no error (a Content-Security-Policy refusal would).
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("GPSENSE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000

checks = 0


def check(condition, message):
    global checks
    if not condition:
        raise AssertionError(message)
    checks += 1


def start_server(gpsense):
    server = subprocess.Popen(
        [gpsense, "serve", "--bind", "127.0.0.1:0", "-q"],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = server.stdout.readline().strip()
    prefix = "listening on "
    if not line.startswith(prefix):
        server.kill()
        raise RuntimeError(f"no address from gpsense serve: {line!r}")
    return server, line[len(prefix):]


def cli_rows(gpsense, text):
    """`gpsense query`'s rows as a set of tuples (CSV, the header dropped)."""
    out = subprocess.run(
        [gpsense, "query", "-q", "--format", "csv", text],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    rows = list(csv.reader(io.StringIO(out)))
    return rows[0], sorted(tuple(r) for r in rows[1:])


def table(page, selector):
    """The header and body cells of a results table (the row number column dropped)."""
    header = page.eval_on_selector_all(f"{selector} thead th", "ths => ths.map(t => t.textContent)")
    body = page.eval_on_selector_all(
        f"{selector} tbody tr",
        "trs => trs.map(tr => Array.from(tr.cells).map(td => td.textContent))",
    )
    return header[1:], [tuple(r[1:]) for r in body]


def drawing(page, selector):
    """The SVG's nodes (kind, texts) and edge labels."""
    return page.eval_on_selector(
        selector,
        """svg => ({
            nodes: Array.from(svg.querySelectorAll('g.node')).map(g => ({
                kind: g.classList.contains('concept') ? 'concept'
                    : g.classList.contains('variable') ? 'variable' : '?',
                name: g.dataset.name,
                texts: Array.from(g.querySelectorAll('text')).map(t => t.textContent),
            })),
            edges: svg.querySelectorAll('g.edge path[marker-end]').length,
            labels: Array.from(svg.querySelectorAll('g.edge-label text')).map(t => t.textContent),
        })""",
    )


def run_with_keyboard(page, status_prefix="Running"):
    page.focus("#query")
    page.keyboard.press("Control+Enter")
    page.wait_for_function(
        "() => { const s = document.getElementById('status').textContent;"
        " return s && !s.startsWith('Running'); }",
        timeout=TIMEOUT_MS,
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpsense", required=True)
    parser.add_argument("--out", required=True, help="folder for the screenshots")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    server, origin = start_server(args.gpsense)
    try:
        with urllib.request.urlopen(f"{origin}/examples") as r:
            examples = json.load(r)
        with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
            browser = p.chromium.launch_persistent_context(
                profile,
                executable_path=CHROMIUM,
                args=CHROMIUM_ARGS,
                headless=True,
                accept_downloads=True,
                viewport={"width": 1280, "height": 860},
            )
            try:
                exercise(browser, origin, examples, args)
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(f"workbench: {checks} checks passed")


def exercise(browser, origin, examples, args):
    page = browser.pages[0] if browser.pages else browser.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    elsewhere, errors = [], []
    page.on("request", lambda r: None if r.url.startswith(origin) or r.url.startswith("blob:")
            else elsewhere.append(r.url))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))

    response = page.goto(f"{origin}/")
    check(response.status == 200, f"/ answered {response.status}")
    check("script-src 'self'" in response.headers.get("content-security-policy", ""),
          "the page has a Content-Security-Policy")
    page.wait_for_selector("#examples option", state="attached")
    first = examples["examples"][0]
    check(page.input_value("#query") == first["query"], "the first example is in the editor")
    check("nodes" in page.text_content("#graph-info"), "the graph is described")

    # Tab order: the editor, then Run.
    page.focus("#query")
    page.keyboard.press("Tab")
    check(page.evaluate("document.activeElement.id") == "run", "Tab from the editor reaches Run")
    check(page.get_attribute("#query", "id") == page.get_attribute("label[for=query]", "for"),
          "the editor has a label")

    # The first example (short dialect), run with Ctrl+Enter.
    run_with_keyboard(page)
    header, rows = table(page, "#results")
    want_header, want_rows = cli_rows(args.gpsense, first["query"])
    check(header == [f"?{h}" for h in want_header], f"columns {header} != {want_header}")
    check(sorted(rows) == want_rows, f"rows {rows} != gpsense query's {want_rows}")
    check(len(rows) > 0, "the first example has rows")
    shape = drawing(page, "#drawing svg")
    concepts = [n for n in shape["nodes"] if n["kind"] == "concept"]
    variables = [n for n in shape["nodes"] if n["kind"] == "variable"]
    check(len(concepts) == 1 and len(variables) == 2, f"one concept, two variables: {shape}")
    check(shape["edges"] == 2, f"two edges: {shape}")
    relations = [r["name"] for r in examples["relations"][:2]]
    check(sorted(shape["labels"]) == sorted(relations), f"edge labels {shape['labels']}")
    check(concepts[0]["texts"] == [concepts[0]["name"]], "the concept shows its name")
    bound = {n["name"]: n["texts"] for n in variables}
    check(bound == {"?x": ["?x", rows_first(page)[0]], "?y": ["?y", rows_first(page)[1]]},
          f"the variables show row 1's values: {bound}")
    # The picture the README opens with: the figures of a warm server (the first query of a
    # process pays for starting its threads), no focus ring.
    run_with_keyboard(page)
    check(table(page, "#results")[1] == rows, "the same rows again")
    page.evaluate("document.activeElement.blur()")
    page.screenshot(path=os.path.join(args.out, "workbench.png"))

    # The plan and the --explain figures.
    steps = page.eval_on_selector_all("#plan tbody tr", "trs => trs.length")
    check(steps == 3, f"three plan steps, got {steps}")
    check("candidates per query node" in page.text_content("#explain"), "the --explain text")

    # Another row, by keyboard: its values are drawn.
    page.focus("#results tbody tr[data-row='0']")
    page.keyboard.press("ArrowDown")
    second = page.eval_on_selector_all("#results tbody tr[data-row='1'] td",
                                       "tds => tds.map(t => t.textContent)")[1:]
    check(page.evaluate("document.activeElement.dataset.row") == "1", "ArrowDown moves the focus")
    bound = {n["name"]: n["texts"][1] for n in drawing(page, "#drawing svg")["nodes"]
             if n["kind"] == "variable"}
    check(bound == {"?x": second[0], "?y": second[1]}, f"row 2 drawn: {bound}")
    thumbs = page.eval_on_selector_all("#thumbnails svg", "s => s.length")
    check(thumbs == min(len(rows), 8), f"a small drawing per row, got {thumbs}")

    # Download as CSV: the same rows.
    with page.expect_download() as d:
        page.click("#download-csv")
    with open(d.value.path(), newline="") as f:
        downloaded = list(csv.reader(f))
    check(downloaded[0] == want_header, f"CSV header {downloaded[0]}")
    check(sorted(tuple(r) for r in downloaded[1:]) == want_rows, "CSV rows")
    with page.expect_download() as d:
        page.click("#download-json")
    with open(d.value.path()) as f:
        check(len(json.load(f)["results"]["bindings"]) == len(want_rows), "JSON rows")

    # The standard SPARQL example: the same answer as gpsense query gives it.
    standard = examples["examples"][1]
    page.select_option("#examples", "1")
    check(page.input_value("#query") == standard["query"], "the example is in the editor")
    run_with_keyboard(page)
    _, rows = table(page, "#results")
    _, want = cli_rows(args.gpsense, standard["query"])
    check(sorted(rows) == want, "standard SPARQL rows")
    check(len(drawing(page, "#drawing svg")["nodes"]) == 3, "standard SPARQL drawn")

    # A query for the full evaluator: its patterns drawn, no plan.
    full = next(e for e in examples["examples"] if "OPTIONAL" in e["query"])
    page.fill("#query", full["query"])
    run_with_keyboard(page)
    check("full SPARQL evaluator" in page.text_content("#drawing-caption"), "the caption says why")
    check(len(drawing(page, "#drawing svg")["nodes"]) == 3, "the OPTIONAL query drawn")
    check("no single plan" in page.text_content("#plan-summary"), "no plan for the full evaluator")

    # A mistake: the parser's message.
    page.fill("#query", "SELECT ?x WHERE { ?x IsA }")
    run_with_keyboard(page)
    check(page.is_visible("#error"), "a bad query shows its error")
    check("400" in page.text_content("#status"), "the status says 400")

    # TruST: the example (a misspelt concept), k from the form.
    page.fill("#trust-k", "5")
    page.focus("#trust-k")
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => /matching/.test(document.getElementById('trust-status').textContent)")
    header, trust_rows = table(page, "#trust-results")
    check(header[0] == "score" and len(trust_rows) == 5, f"five matchings: {header} {trust_rows}")
    scores = [float(r[0]) for r in trust_rows]
    check(scores == sorted(scores, reverse=True), "best first")
    shape = drawing(page, "#trust-drawing svg")
    fuzzy = [n for n in shape["nodes"] if n["kind"] == "concept"]
    check(len(fuzzy) == 1 and len(fuzzy[0]["texts"]) == 2,
          f"the misspelt concept and what it matched: {fuzzy}")
    page.locator("#trust-panel").screenshot(path=os.path.join(args.out, "trust.png"))

    check(not elsewhere, f"requests to other origins: {elsewhere}")
    bad = [e for e in errors if "400" not in e]
    check(not bad, f"errors in the page: {bad}")


def rows_first(page):
    return page.eval_on_selector_all("#results tbody tr[data-row='0'] td",
                                     "tds => tds.map(t => t.textContent)")[1:]


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"workbench: FAILED after {checks} checks: {e}", file=sys.stderr)
        sys.exit(1)

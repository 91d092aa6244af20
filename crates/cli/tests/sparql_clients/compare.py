"""`gpsense serve` and `gpsense query` against pyoxigraph, the server through a real SPARQL client
(SPARQLWrapper).

Starts `gpsense serve --graph fixture.nt`, loads the same file into a pyoxigraph Store, and runs
every query of QUERIES through SPARQLWrapper against the server (GET, form POST and direct POST
in turn) in JSON, XML, CSV and TSV. The server's answer must equal pyoxigraph's own serialization
of its answer, parsed the same way: as multisets of rows, or as lists where ORDER BY fixes the
order. Blank node labels are compared as "some blank node" (each store names its own).

Then the same queries through `gpsense query --graph fixture.nt --format json`: its rows hold node
names (IRIs bare, literals in N-Triples form), compared with pyoxigraph's terms named the same way.
A query naming something the fixture lacks is an error with suggestions there (exit 1), where
SPARQL answers nothing: that counts as the same answer when pyoxigraph's is empty.

    python compare.py --gpsense target/debug/gpsense [--fixture fixture.nt]

Prints one line per failure and a closing `N passed, N failed`; exits 1 on any failure.
Needs `pip install -r requirements.txt` (the Rust test `sparql_clients` makes the venv).
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import warnings
import xml.etree.ElementTree as ET

import pyoxigraph as ox
from SPARQLWrapper import CSV, JSON, POST, POSTDIRECTLY, TSV, URLENCODED, XML, SPARQLWrapper

HERE = os.path.dirname(os.path.abspath(__file__))

PREFIXES = """PREFIX ex: <http://example.org/>
PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
PREFIX xsd: <http://www.w3.org/2001/XMLSchema#>
"""

# (name, query): every construct gpsense supports. ORDER BY queries order on all their variables,
# so the order is total.
QUERIES = [
    ("prefix and a", "SELECT ?x WHERE { ?x a ex:Animal }"),
    ("full IRIs", "SELECT ?x WHERE { ?x <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://example.org/Plant> }"),
    ("semicolon", "SELECT ?x ?l WHERE { ?x a ex:Animal ; ex:label ?l }"),
    ("comma", "SELECT ?x WHERE { ?x ex:likes ex:cat , ex:dog }"),
    ("two hops", "SELECT ?x ?c WHERE { ?x a ?k . ?k rdfs:subClassOf ?c }"),
    ("language literal", 'SELECT ?x WHERE { ?x ex:label "chat"@fr }'),
    ("language literal, region", 'SELECT ?x WHERE { ?x ex:label "rose"@en-gb }'),
    ("integer literal", "SELECT ?x WHERE { ?x ex:legs 4 }"),
    ("typed literal", 'SELECT ?x WHERE { ?x ex:legs "2"^^xsd:integer }'),
    ("boolean literal", "SELECT ?x WHERE { ?x ex:friendly true }"),
    ("simple literal", 'SELECT ?x WHERE { ?x ex:note "a plain string" }'),
    ("xsd:string literal", 'SELECT ?x WHERE { ?x ex:note "typed as xsd:string"^^xsd:string }'),
    ("values of every kind", "SELECT ?x ?v WHERE { ?x ?p ?v . ?x a ex:Animal }"),
    ("quoting and escapes", "SELECT ?n WHERE { ?x ex:note ?n }"),
    ("predicate variable", "SELECT ?p ?o WHERE { ex:dog ?p ?o }"),
    ("every triple", "SELECT * WHERE { ?s ?p ?o }"),
    ("blank node results", "SELECT ?h ?x WHERE { ?h ex:houses ?x }"),
    ("blank node in the pattern", "SELECT ?x WHERE { _:h ex:houses ?x . _:h ex:name ?n }"),
    ("anonymous blank node", "SELECT ?x WHERE { [] ex:houses ?x }"),
    ("blank node chain", "SELECT ?k WHERE { ?n ex:partOf ?t . ?t a ?k }"),
    ("self-loop under hom", "SELECT ?x ?y WHERE { ?x ex:likes ?y }"),
    ("filter =", "SELECT ?x ?y WHERE { ?x ex:likes ?y FILTER(?y = ex:rose) }"),
    ("filter = literal", 'SELECT ?x WHERE { ?x ex:label ?l FILTER(?l = "dog"@en) }'),
    ("filter !=", "SELECT ?x ?y WHERE { ?x ex:likes ?y FILTER(?x != ?y) }"),
    ("filter sameTerm", "SELECT ?x ?y WHERE { ?x ex:likes ?y FILTER(sameTerm(?x, ?y)) }"),
    ("filter IN", "SELECT ?x ?y WHERE { ?x ex:likes ?y FILTER(?x IN (ex:cat, ex:bird)) }"),
    ("filter NOT IN", "SELECT ?x ?y WHERE { ?x ex:likes ?y FILTER(?y NOT IN (ex:cat, ex:dog)) }"),
    ("filter conjunction", "SELECT ?x ?y WHERE { ?x ex:likes ?y FILTER(?x != ex:dog && ?y != ex:rose) }"),
    ("pairwise != (iso)", "SELECT * WHERE { ?a ex:likes ?b . ?b ex:likes ?c FILTER(?a != ?b && ?b != ?c && ?a != ?c) }"),
    ("cycle, pairwise !=", "SELECT * WHERE { ?a ex:likes ?b . ?b ex:likes ?c . ?c ex:likes ?a FILTER(?a != ?b && ?b != ?c && ?a != ?c) }"),
    ("ask yes", "ASK { ex:dog ex:likes ex:dog }"),
    ("ask no", "ASK { ex:rose ex:likes ?x }"),
    ("ask with filter", "ASK { ?x ex:likes ?y FILTER(?x = ?y) }"),
    ("count", "SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }"),
    ("count with filter", "SELECT (COUNT(*) AS ?n) WHERE { ?x ex:likes ?y FILTER(?x != ?y) }"),
    ("count of nothing", "SELECT (COUNT(*) AS ?n) WHERE { ex:rose ex:likes ?x }"),
    ("distinct", "SELECT DISTINCT ?x WHERE { ?x ex:likes ?y }"),
    ("distinct predicates", "SELECT DISTINCT ?p WHERE { ?s ?p ?o }"),
    ("order by", "SELECT ?x ?y WHERE { ?x ex:likes ?y } ORDER BY ?x ?y"),
    ("order by desc", "SELECT ?x ?y WHERE { ?x ex:likes ?y } ORDER BY DESC(?x) ?y"),
    ("order by, limit", "SELECT ?x ?y WHERE { ?x ex:likes ?y } ORDER BY ?y ?x LIMIT 3"),
    ("order by, offset", "SELECT ?x ?y WHERE { ?x ex:likes ?y } ORDER BY ?x ?y OFFSET 2"),
    ("order by, offset, limit", "SELECT ?x ?y WHERE { ?x ex:likes ?y } ORDER BY DESC(?y) ?x LIMIT 2 OFFSET 1"),
    ("order by a literal", "SELECT ?x ?n WHERE { ?x ex:note ?n } ORDER BY ?n ?x"),
    ("order by a number", "SELECT ?x ?n WHERE { ?x ex:legs ?n } ORDER BY ?n ?x"),
    ("order by a number, desc", "SELECT ?x ?n WHERE { ?x ex:legs ?n } ORDER BY DESC(?n) ?x"),
    ("order by mixed kinds", "SELECT ?s WHERE { ?s ?p ?o } ORDER BY ?s"),
    ("limit over everything", "SELECT ?s ?o WHERE { ?s ex:likes ?o } ORDER BY ?s ?o LIMIT 100"),
    ("unknown concept", "SELECT ?x WHERE { ?x ex:likes ex:unicorn }"),
    ("unknown relation", "ASK { ?x ex:hates ?y }"),
]

FORMATS = [
    ("json", JSON, ox.QueryResultsFormat.JSON),
    ("xml", XML, ox.QueryResultsFormat.XML),
    ("csv", CSV, ox.QueryResultsFormat.CSV),
    ("tsv", TSV, ox.QueryResultsFormat.TSV),
]

METHODS = ["GET", "POST form", "POST direct"]

XML_NS = "{http://www.w3.org/2005/sparql-results#}"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def start_server(binary, fixture):
    server = subprocess.Popen(
        [binary, "serve", "-q", "--bind", "127.0.0.1:0", "--graph", fixture],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = server.stdout.readline().strip()
    prefix = "listening on "
    if not line.startswith(prefix):
        server.kill()
        raise SystemExit(f"gpsense serve did not start: {line!r}")
    return server, line[len(prefix):] + "/query"


def client(endpoint, query, fmt, method):
    w = SPARQLWrapper(endpoint)
    w.setQuery(query)
    w.setReturnFormat(fmt)
    if method != "GET":
        w.setMethod(POST)
        w.setRequestMethod(URLENCODED if method == "POST form" else POSTDIRECTLY)
    return w.query().convert()


def bnode(value):
    return "_:" if value.startswith("_:") else value


def from_json(doc):
    if "boolean" in doc:
        return ("boolean", doc["boolean"]), None
    variables = doc["head"]["vars"]
    rows = []
    for b in doc["results"]["bindings"]:
        row = []
        for v in variables:
            term = dict(b[v])
            if term["type"] == "bnode":
                term["value"] = "_"
            row.append(tuple(sorted(term.items())))
        rows.append(tuple(row))
    return variables, rows


def from_xml(text):
    root = ET.fromstring(text)
    boolean = root.find(XML_NS + "boolean")
    if boolean is not None:
        return ("boolean", boolean.text), None
    variables = [v.get("name") for v in root.find(XML_NS + "head")]
    rows = []
    for result in root.find(XML_NS + "results"):
        bound = {}
        for binding in result:
            (term,) = list(binding)
            kind = term.tag[len(XML_NS):]
            value = "_" if kind == "bnode" else (term.text or "")
            bound[binding.get("name")] = (kind, value, term.get(XML_LANG), term.get("datatype"))
        rows.append(tuple(bound.get(v) for v in variables))
    return variables, rows


def from_csv(data):
    text = data.decode("utf-8")
    if text in ("true", "false"):
        return ("boolean", text), None
    records = list(csv.reader(io.StringIO(text, newline="")))
    return records[0], [tuple(bnode(v) for v in r) for r in records[1:]]


def from_tsv(data):
    text = data.decode("utf-8")
    if text in ("true", "false"):
        return ("boolean", text), None
    lines = text.split("\n")
    if lines[-1] != "":
        raise ValueError("TSV must end with a line break")
    rows = [tuple(bnode(v) for v in line.split("\t")) for line in lines[1:-1]]
    return lines[0].split("\t"), rows


def parse(name, value):
    if name == "json":
        return from_json(value if isinstance(value, dict) else json.loads(value))
    if name == "xml":
        return from_xml(value if isinstance(value, (bytes, str)) else value.toxml())
    return (from_csv if name == "csv" else from_tsv)(value)


def compare(query, fmt_name, served, expected):
    (s_head, s_rows), (e_head, e_rows) = parse(fmt_name, served), parse(fmt_name, expected)
    if s_head != e_head:
        return f"header {s_head!r}, expected {e_head!r}"
    if e_rows is None:
        return None
    if "ORDER BY" not in query:
        s_rows, e_rows = sorted(s_rows, key=repr), sorted(e_rows, key=repr)
    if s_rows != e_rows:
        missing = [r for r in e_rows if r not in s_rows][:3]
        extra = [r for r in s_rows if r not in e_rows][:3]
        return (
            f"{len(s_rows)} rows, expected {len(e_rows)}; missing {missing}; extra {extra}"
            + ("; order differs" if not missing and not extra else "")
        )
    return None


def name_of(term):
    """A pyoxigraph term as gpsense names a node: IRIs bare, literals in N-Triples form."""
    if isinstance(term, ox.NamedNode):
        return term.value
    if isinstance(term, ox.BlankNode):
        return "_"
    return str(term)


def cli_answer(binary, fixture, query):
    """`gpsense query`'s answer: ("boolean", bool), ("count", n), ("rows", [tuple]) or ("empty", why)."""
    run = subprocess.run(
        [binary, "query", "-q", "--graph", fixture, "--format", "json", query],
        capture_output=True,
        text=True,
    )
    if run.stdout.strip() in ("yes", "no"):
        return ("boolean", run.stdout.strip() == "yes")
    if run.returncode != 0:
        if "unknown concept" in run.stderr or "unknown relation" in run.stderr:
            return ("empty", run.stderr.strip().splitlines()[0])
        raise RuntimeError(f"exit {run.returncode}: {run.stderr.strip()}")
    rows = json.loads(run.stdout)
    if "COUNT(*)" in query:
        return ("count", rows[0]["n"])
    return ("rows", [tuple("_" if str(v).startswith("_:") else v for v in r.values()) for r in rows])


def oxigraph_answer(store, query):
    result = store.query(query)
    if isinstance(result, ox.QueryBoolean):
        return ("boolean", bool(result))
    variables = [v.value for v in result.variables]
    rows = [tuple(name_of(s[v]) for v in variables) for s in result]
    if "COUNT(*)" in query:
        return ("count", int(rows[0][0].split('"')[1]))
    return ("rows", rows)


def compare_cli(query, got, expected):
    if got[0] == "empty":
        empty = expected in (("boolean", False), ("count", 0)) or expected == ("rows", [])
        return None if empty else f"gpsense refused ({got[1]}), pyoxigraph answered {expected}"
    if got[0] != expected[0]:
        return f"{got[0]} answer, expected {expected[0]}"
    if got[0] != "rows":
        return None if got == expected else f"{got[1]}, expected {expected[1]}"
    g, e = got[1], expected[1]
    if "ORDER BY" not in query:
        g, e = sorted(g, key=repr), sorted(e, key=repr)
    if g != e:
        missing = [r for r in e if r not in g][:3]
        extra = [r for r in g if r not in e][:3]
        return f"{len(g)} rows, expected {len(e)}; missing {missing}; extra {extra}"
    return None


def check_cli(binary, fixture, store):
    passed = failed = 0
    for name, body in QUERIES:
        query = PREFIXES + body
        try:
            problem = compare_cli(query, cli_answer(binary, fixture, query), oxigraph_answer(store, query))
        except Exception as e:  # an unexpected failure of this case
            problem = f"{type(e).__name__}: {e}"
        if problem:
            failed += 1
            print(f"FAIL {name} [gpsense query]: {problem}", flush=True)
        else:
            passed += 1
    return passed, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpsense", required=True)
    ap.add_argument("--fixture", default=os.path.join(HERE, "fixture.nt"))
    args = ap.parse_args()
    # A content type SPARQLWrapper does not expect for the format is a failure, not a warning.
    warnings.simplefilter("error")
    store = ox.Store()
    store.load(path=args.fixture, format=ox.RdfFormat.N_TRIPLES)
    server, endpoint = start_server(args.gpsense, args.fixture)
    passed = failed = 0
    try:
        for k, (name, body) in enumerate(QUERIES):
            query = PREFIXES + body
            for fmt_name, fmt, ox_format in FORMATS:
                expected = store.query(query).serialize(format=ox_format)
                for method in METHODS:
                    what = f"{name} [{fmt_name}, {method}]"
                    try:
                        served = client(endpoint, query, fmt, method)
                        problem = compare(query, fmt_name, served, expected)
                    except Exception as e:  # the client's error: a failure of this case
                        problem = f"{type(e).__name__}: {e}"
                    if problem:
                        failed += 1
                        print(f"FAIL {what}: {problem}", flush=True)
                    else:
                        passed += 1
    finally:
        server.terminate()
        code = server.wait(timeout=30)
        server.stdout.close()
    if code != 0:
        print(f"FAIL gpsense serve exited with {code} on SIGTERM")
        failed += 1
    cli_passed, cli_failed = check_cli(args.gpsense, args.fixture, store)
    passed += cli_passed
    failed += cli_failed
    print(f"{len(QUERIES)} queries x {len(FORMATS)} formats x {len(METHODS)} methods, and each by gpsense query")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

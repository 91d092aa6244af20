"""The package and the `gpsense` CLI are the same engine: equal rows (as multisets) and counts for
common-sense queries under both semantics, on ConceptNet-100K and on a WordNet snapshot."""

from __future__ import annotations

import pytest

PREFIX = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> "

QUERIES = [
    # concepts and variables
    "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }",
    "SELECT ?x WHERE { ?x IsA animal }",
    "SELECT ?x ?y WHERE { ?x CapableOf fly . ?x IsA ?y }",
    "SELECT * WHERE { ?x AtLocation kitchen . ?x UsedFor ?y }",
    # cycles, where iso and hom differ
    "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA ?x }",
    "SELECT ?a ?b WHERE { ?a Causes ?b . ?b Causes ?a }",
    "SELECT ?x ?y ?z WHERE { ?x IsA ?y . ?y IsA ?z . ?z IsA ?x }",
    # variable relations (edge variables)
    "SELECT ?r ?y WHERE { dog ?r ?y }",
    "SELECT ?x ?r ?z WHERE { ?x IsA bird . ?x ?r ?z . ?z IsA animal }",
    "SELECT ?p ?r WHERE { person ?r ?p . ?p IsA ?q }",
    # a projection that repeats rows, and DISTINCT
    "SELECT ?y WHERE { ?x IsA animal . ?x HasA ?y }",
    "SELECT DISTINCT ?y WHERE { ?x IsA animal . ?x HasA ?y }",
    "SELECT * WHERE { ?x HasProperty sweet . ?x IsA ?y . ?y AtLocation ?z }",
    # quoted multi-word concepts
    'SELECT ?x WHERE { ?x IsA "domestic animal" }',
    # standard SPARQL
    PREFIX + "SELECT ?x ?y WHERE { ?x r:IsA ?y . ?y r:IsA ?x FILTER(?x != ?y) }",
    PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal FILTER(?x IN (c:kitten, c:lizard, c:cat)) }",
]


def unescape_tsv(field: str) -> str:
    """The CLI's TSV escapes (\\t, \\n, \\r, \\\\) undone."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        ch = field[i]
        if ch == "\\" and i + 1 < len(field):
            out.append({"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}.get(field[i + 1], field[i + 1]))
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def cli_rows(cli, text: str, *args: str) -> tuple[list[str], list[tuple]]:
    """The header and rows `gpsense query --format tsv -q` prints."""
    out = cli("query", "--format", "tsv", "-q", *args, text).stdout
    lines = out.split("\n")
    assert lines[-1] == "", "the output ends with a newline"
    header, *rows = lines[:-1]
    return header.split("\t"), [tuple(unescape_tsv(f) for f in row.split("\t")) for row in rows]


def cli_count(cli, text: str, *args: str) -> int:
    return int(cli("query", "--count", "-q", *args, text).stdout.strip())


def test_cli_tsv_format(cli):
    """The format compared with: a header of variable names, then one line per row."""
    out = cli("query", "--format", "tsv", "-q", "SELECT ?r ?y WHERE { kitten ?r ?y } LIMIT 2").stdout
    lines = out.splitlines()
    assert lines[0] == "r\ty"
    assert len(lines) == 3 and all(len(line.split("\t")) == 2 for line in lines[1:])


@pytest.mark.parametrize("semantics", ["iso", "hom"])
@pytest.mark.parametrize("text", QUERIES)
def test_rows_and_count_equal_the_clis(cn, cli, text, semantics):
    header, expected = cli_rows(cli, text, "--semantics", semantics)
    result = cn.query(text, semantics=semantics)
    assert result.variables == header
    rows = result.to_list()
    assert sorted(rows) == sorted(expected)
    n = cn.count(text, semantics=semantics)
    assert n == cli_count(cli, text, "--semantics", semantics) == len(rows)


def test_default_semantics_equal_the_clis(cn, cli):
    """Without semantics=, both use iso for the short dialect and hom for standard SPARQL."""
    short = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA ?x }"
    standard = PREFIX + "SELECT ?x ?y WHERE { ?x r:IsA ?y . ?y r:IsA ?x }"
    assert cn.count(short) == cli_count(cli, short) == 28
    assert cn.count(standard) == cli_count(cli, standard) == 38
    assert sorted(cn.query(standard)) == sorted(cli_rows(cli, standard)[1])


def test_limit_count_equal_the_clis(cn, cli):
    text = "SELECT * WHERE { ?x AtLocation kitchen . ?x UsedFor ?y }"
    assert cn.count(text, limit=50) == cli_count(cli, text, "--limit", "50") == 50
    assert len(cn.query(text, limit=50).to_list()) == len(cli_rows(cli, text, "--limit", "50")[1])


def test_count_star_equals_the_clis(cn, cli):
    text = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal . ?x r:HasA ?y }"
    header, rows = cli_rows(cli, text)
    assert header == ["n"]
    assert cn.query(text).to_list() == [(int(rows[0][0]),)]


@pytest.mark.parametrize("semantics", ["iso", "hom"])
@pytest.mark.parametrize(
    "text",
    [
        "SELECT ?x ?y WHERE { ?x hypernym ?y . ?y hypernym dog }",
        "SELECT ?r ?y WHERE { puppy ?r ?y }",
        "SELECT ?x ?y WHERE { ?x part_meronym ?y . ?x hypernym tree }",
        "SELECT ?x ?y WHERE { ?x hypernym ?y . ?y hypernym ?z . ?z hypernym animal }",
    ],
)
def test_wordnet_snapshot_equal_the_clis(wordnet, wordnet_snapshot, cli, text, semantics):
    """A WordNet graph saved by Graph.save: the CLI's --graph answers as the package does."""
    graph = ("--graph", str(wordnet_snapshot), "--semantics", semantics)
    header, expected = cli_rows(cli, text, *graph)
    result = wordnet.query(text, semantics=semantics)
    assert result.variables == header
    rows = result.to_list()
    assert rows, "a query with answers"
    assert sorted(rows) == sorted(expected)
    assert wordnet.count(text, semantics=semantics) == cli_count(cli, text, *graph) == len(rows)

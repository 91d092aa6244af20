"""Standard SPARQL read as the CLI and the endpoint read it: a text that parses as standard SPARQL is
standard (hom), and what a basic graph pattern cannot say (OPTIONAL, UNION, paths, aggregates,
CONSTRUCT) is answered by the full evaluator, with the same rows as `gpsense query`. A name the graph
lacks gives the empty answer the standard asks for, with the suggestion as a warning."""

from __future__ import annotations

import time
import warnings

import pytest

import gpsense
from test_cli_parity import cli_count, cli_rows

#: The graph's own names as IRIs, on any graph.
P = "PREFIX n: <gpsense:n/> PREFIX r: <gpsense:r/> "


def test_optional_leaves_a_value_unbound(tiny, tiny_tsv, cli):
    text = P + "SELECT ?x ?y ?t WHERE { ?x r:IsA ?y OPTIONAL { ?x r:HasA ?t } }"
    result = tiny.query(text)
    assert result.variables == ["x", "y", "t"]
    rows = result.to_list()
    assert sorted(rows, key=str) == sorted(
        [("cat", "animal", "tail"), ("dog", "animal", "tail"), ("puppy", "dog", None)], key=str
    )
    # The CLI writes an unbound value as an empty field.
    _, expected = cli_rows(cli, text, "--graph", str(tiny_tsv))
    assert sorted(tuple(v or "" for v in row) for row in rows) == sorted(expected)


def test_optional_on_conceptnet_equals_the_clis(cn, cli):
    text = (
        "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> "
        "SELECT ?x ?y WHERE { ?x r:IsA c:animal OPTIONAL { ?x r:HasA ?y } }"
    )
    rows = cn.query(text).to_list()
    assert len(rows) >= 112 and any(y is None for _, y in rows) and any(y for _, y in rows)
    _, expected = cli_rows(cli, text)
    assert sorted(tuple(v or "" for v in row) for row in rows) == sorted(expected)
    assert cn.count(text) == len(rows)


def test_union_is_answered_and_counted(tiny):
    text = P + "SELECT ?x WHERE { { ?x r:HasA n:tail } UNION { ?x r:IsA n:dog } }"
    assert sorted(tiny.query(text)) == [("cat",), ("dog",), ("puppy",)]
    assert tiny.count(text) == 3
    assert tiny.count(text, limit=2) == 2
    assert len(tiny.query(text, limit=2).to_list()) == 2


def test_a_path_follows_edges_transitively(tiny):
    assert sorted(tiny.query(P + "SELECT ?y WHERE { n:puppy r:IsA+ ?y }")) == [
        ("animal",),
        ("dog",),
    ]
    assert tiny.ask(P + "ASK { n:puppy r:IsA+ n:animal }")
    assert not tiny.ask(P + "ASK { n:animal r:IsA+ n:puppy }")


def test_group_by_with_count(tiny, tiny_tsv, cli):
    text = P + "SELECT ?y (COUNT(?x) AS ?n) WHERE { ?x r:IsA ?y } GROUP BY ?y"
    result = tiny.query(text)
    assert result.variables == ["y", "n"]
    integer = '"{}"^^<http://www.w3.org/2001/XMLSchema#integer>'
    rows = result.to_list()
    assert sorted(rows) == [("animal", integer.format(2)), ("dog", integer.format(1))]
    # The CLI's TSV writes numbers bare, as SPARQL's TSV does; Python keeps the name.
    bare = [(y, n.split('"')[1]) for y, n in rows]
    assert sorted(bare) == sorted(cli_rows(cli, text, "--graph", str(tiny_tsv))[1])


def test_construct_gives_triples_of_names(tiny):
    text = P + "CONSTRUCT { ?y r:Kind ?x } WHERE { ?x r:IsA ?y . ?y r:HasA n:tail }"
    result = tiny.query(text)
    assert result.variables == ["subject", "predicate", "object"]
    assert sorted(result) == [("dog", "Kind", "puppy")]


def test_an_unknown_name_is_an_empty_answer_with_a_warning(cn):
    text = P + "SELECT ?x WHERE { ?x r:IsA n:aniaml }"
    with pytest.warns(UserWarning, match="animal"):
        assert cn.query(text).to_list() == []
    with pytest.warns(UserWarning, match="aniaml"):
        assert cn.count(text) == 0
    with pytest.warns(UserWarning):
        assert not cn.ask(P + "ASK { n:dog r:IsA n:aniaml }")
    # The short dialect has no IRIs to leave empty: an unknown name there is still an error.
    with pytest.raises(gpsense.QueryError, match="animal"):
        cn.query("SELECT ?x WHERE { ?x IsA aniaml }")


def test_a_variables_only_query_is_standard_sparql(tiny, tiny_tsv, cli):
    """Hom, as the CLI reads it: ?a and ?c may be the same node."""
    text = "SELECT ?a ?c WHERE { ?a ?r ?b . ?c ?s ?b }"
    rows = tiny.query(text).to_list()
    assert len(rows) == tiny.count(text) == 12
    assert ("dog", "dog") in rows
    assert tiny.count(text, semantics="iso") == 6
    graph = ("--graph", str(tiny_tsv))
    assert sorted(rows) == sorted(cli_rows(cli, text, *graph)[1])
    assert cli_count(cli, text, *graph) == 12
    assert tiny.explain(text)["semantics"] == "hom"


def test_iso_is_not_applied_beyond_a_basic_graph_pattern(tiny):
    text = P + "SELECT ?x WHERE { { ?x r:HasA n:tail } UNION { ?x r:IsA n:dog } }"
    with pytest.warns(UserWarning, match="hom"):
        assert tiny.count(text, semantics="iso") == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tiny.count(text, semantics="hom") == 3


def test_explain_says_which_evaluator(tiny):
    d = tiny.explain(P + "SELECT ?x ?t WHERE { ?x r:IsA n:animal OPTIONAL { ?x r:HasA ?t } }")
    assert d["evaluator"] == "algebra" and d["matches"] == 2
    assert tiny.explain(P + "SELECT ?x WHERE { ?x r:IsA n:animal }")["evaluator"] == "graph"
    # The native evaluator ran (its one-triple patterns read from the graph, not the matcher);
    # spareval answers what the native one does not take, such as CONSTRUCT.
    assert d["native"] is True and "evaluator: native evaluator" in d["text"], d["text"]
    construct = tiny.explain(P + "CONSTRUCT { ?x r:Has ?t } WHERE { ?x r:HasA ?t }")
    assert construct["native"] is False and "evaluator: spareval" in construct["text"]


def test_ask_asks_rather_than_queries(tiny):
    with pytest.raises(gpsense.QueryError, match="ask"):
        tiny.query(P + "ASK { n:puppy r:IsA+ n:animal }")


def test_a_time_limit_stops_the_full_evaluator(cn):
    # Three hops of any relation under an OPTIONAL: tens of millions of rows for its basic graph
    # pattern, far more than a fraction of a second.
    text = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d OPTIONAL { ?d ?u ?e } }"
    start = time.monotonic()
    with pytest.raises(gpsense.QueryTimeout) as e:
        cn.count(text, timeout=0.2)
    assert isinstance(e.value.partial, int)
    with pytest.raises(gpsense.QueryTimeout) as e:
        cn.query(text, timeout=0.2).to_list()
    assert isinstance(e.value.partial, list)
    result = cn.query(text, timeout=0.2)
    with pytest.raises(gpsense.QueryTimeout):
        for _ in result:
            pass
    # The result cut short says so again, never a quiet end.
    with pytest.raises(gpsense.QueryTimeout):
        next(iter(result))
    # Generous: only that it does not run to its end.
    assert time.monotonic() - start < 60


"""Answering queries: Graph.query and QueryResult (iteration, variables, to_list, to_pandas,
to_arrow), count, ask, explain and trust, on ConceptNet-100K and WordNet."""

from __future__ import annotations

import math

import pytest

import gpsense
from conftest import ANIMALS, ANIMALS_AT_HOME, ANIMALS_AT_HOME_ROWS, ANIMALS_COUNT

PREFIX = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> "
#: Two concepts that are IsA each other: differs between iso (28) and hom (38, with `x IsA x`).
MUTUAL_ISA = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA ?x }"
DOG_EDGES = "SELECT ?r ?y WHERE { dog ?r ?y }"


# --- QueryResult ---------------------------------------------------------------------------------


def test_query_iterates_tuples_of_names(cn):
    r = cn.query(ANIMALS_AT_HOME)
    assert isinstance(r, gpsense.QueryResult)
    assert r.variables == ["x"]
    rows = list(r)
    assert sorted(rows) == ANIMALS_AT_HOME_ROWS
    assert all(type(row) is tuple and type(row[0]) is str for row in rows)


def test_query_next_and_stop_iteration(cn):
    r = cn.query(ANIMALS_AT_HOME)
    assert iter(r) is r
    first, second = next(r), next(r)
    assert sorted([first, second]) == ANIMALS_AT_HOME_ROWS
    with pytest.raises(StopIteration):
        next(r)


def test_variables_in_column_order(cn):
    assert cn.query("SELECT ?y ?x WHERE { ?x IsA ?y . ?x AtLocation home }").variables == ["y", "x"]
    star = cn.query("SELECT * WHERE { ?x IsA animal . ?x AtLocation ?where }")
    assert star.variables == ["x", "where"]


def test_to_list_equals_iteration(cn):
    rows = cn.query(ANIMALS).to_list()
    assert len(rows) == ANIMALS_COUNT == len(set(rows))
    assert sorted(rows) == sorted(cn.query(ANIMALS))
    assert ("kitten",) in rows


def test_result_is_read_once(cn):
    """A result is read once: to_list() after reading some rows gives the rest, then nothing."""
    r = cn.query(ANIMALS)
    head = [next(r) for _ in range(10)]
    rest = r.to_list()
    assert len(head) + len(rest) == ANIMALS_COUNT
    assert sorted(head + rest) == sorted(cn.query(ANIMALS).to_list())
    assert r.to_list() == []
    assert list(r) == []


def test_edge_variable_columns(cn):
    """An edge variable's column holds relation names."""
    r = cn.query(DOG_EDGES)
    assert r.variables == ["r", "y"]
    rows = r.to_list()
    assert len(rows) == 391
    relations = set(cn.relations())
    assert all(rel in relations for rel, _ in rows)
    assert ("IsA", "loyal pet") in rows
    assert ("HasA", "bone") in rows
    # The same as asking relation by relation.
    isa = {y for (y,) in cn.query("SELECT ?y WHERE { dog IsA ?y }")}
    assert isa == {y for rel, y in rows if rel == "IsA"}


def test_distinct(cn):
    """DISTINCT removes repeated rows; without it, a projection keeps one row per match."""
    q = "SELECT ?r WHERE { dog ?r ?y }"
    all_rows = cn.query(q).to_list()
    distinct = cn.query("SELECT DISTINCT ?r WHERE { dog ?r ?y }").to_list()
    assert len(all_rows) == 391
    assert len(distinct) == len(set(distinct)) == len(set(all_rows))
    assert set(distinct) == set(all_rows)
    assert cn.count("SELECT DISTINCT ?r WHERE { dog ?r ?y }") == len(distinct)


def test_limit_in_query_and_argument(cn):
    """LIMIT in the text and limit= both bound the rows; the smaller wins."""
    assert len(cn.query(ANIMALS + " LIMIT 5").to_list()) == 5
    assert len(cn.query(ANIMALS, limit=7).to_list()) == 7
    assert len(cn.query(ANIMALS + " LIMIT 3", limit=5).to_list()) == 3
    assert len(cn.query(ANIMALS + " LIMIT 9", limit=4).to_list()) == 4
    assert cn.query(ANIMALS, limit=0).to_list() == []
    assert cn.count(ANIMALS, limit=5) == 5
    rows = cn.query(ANIMALS, limit=10).to_list()
    assert set(rows) <= set(cn.query(ANIMALS).to_list())


def test_iso_and_hom_differ(cn):
    """iso is injective (x != y), hom lets two variables share a node (x IsA x)."""
    iso = cn.query(MUTUAL_ISA, semantics="iso").to_list()
    hom = cn.query(MUTUAL_ISA, semantics="hom").to_list()
    assert len(iso) == 28 and len(hom) == 38
    assert set(iso) < set(hom)
    assert all(x != y for x, y in iso)
    assert {(x, y) for x, y in hom if x == y} == set(hom) - set(iso)
    assert ("dog", "dog") in hom
    assert cn.count(MUTUAL_ISA) == 28  # the default is iso
    assert cn.count(MUTUAL_ISA, semantics="hom") == 38


def test_iso_concept_counts_as_a_node(cn):
    """Under iso a concept of the query is a node no variable may take."""
    q = "SELECT ?x WHERE { dog IsA ?x }"
    assert ("dog",) not in cn.query(q, semantics="iso").to_list()
    assert ("dog",) in cn.query(q, semantics="hom").to_list()


def test_standard_sparql_prefixes_and_iris(cn):
    """Standard SPARQL 1.1: PREFIX, prefixed names and full IRIs denote ConceptNet's concepts."""
    q = PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal . ?x r:AtLocation c:home }"
    assert sorted(cn.query(q)) == ANIMALS_AT_HOME_ROWS
    with_base = (
        "BASE <http://conceptnet.io/> "
        "SELECT ?x WHERE { ?x <http://conceptnet.io/r/IsA> <http://conceptnet.io/c/en/animal> }"
    )
    assert sorted(cn.query(with_base)) == sorted(cn.query(ANIMALS))


def test_standard_sparql_full_iris_without_prologue(cn):
    """A standard SELECT with full IRIs and no PREFIX/BASE is standard SPARQL too: the IRIs denote
    ConceptNet's relation and concept, they are not bare names of the short dialect."""
    full = "SELECT ?x WHERE { ?x <http://conceptnet.io/r/IsA> <http://conceptnet.io/c/en/animal> }"
    assert sorted(cn.query(full)) == sorted(cn.query(ANIMALS))
    assert cn.count(full) == ANIMALS_COUNT


def test_standard_sparql_is_hom_unless_asked(cn):
    """A standard query's own semantics is hom; semantics= overrides it; pairwise FILTER != is iso."""
    q = PREFIX + "SELECT ?x ?y WHERE { ?x r:IsA ?y . ?y r:IsA ?x }"
    assert cn.count(q) == 38
    assert cn.count(q, semantics="iso") == 28
    filtered = PREFIX + "SELECT ?x ?y WHERE { ?x r:IsA ?y . ?y r:IsA ?x FILTER(?x != ?y) }"
    assert sorted(cn.query(filtered)) == sorted(cn.query(MUTUAL_ISA, semantics="iso"))


def test_standard_sparql_filters(cn):
    """FILTER = and IN keep the rows they name; != removes one."""
    eq = PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal FILTER(?x = c:kitten) }"
    assert cn.query(eq).to_list() == [("kitten",)]
    within = PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal FILTER(?x IN (c:cat, c:kitten, c:rock)) }"
    assert sorted(cn.query(within)) == [("kitten",)]
    ne = PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal FILTER(?x != c:kitten) }"
    rows = cn.query(ne).to_list()
    assert len(rows) == ANIMALS_COUNT - 1 == cn.count(ne)
    assert ("kitten",) not in rows


def test_standard_sparql_order_offset(cn):
    q = PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal } ORDER BY ?x LIMIT 3 OFFSET 2"
    expected = sorted(cn.query(ANIMALS))[2:5]
    assert cn.query(q).to_list() == expected


@pytest.mark.parametrize(
    "modifiers, rows",
    [("LIMIT 5 OFFSET 2", 5), ("OFFSET 110", 2), ("LIMIT 3 OFFSET 110", 2), ("OFFSET 200", 0)],
)
def test_count_honours_offset(cn, modifiers, rows):
    """count() is the number of rows the query gives: it honours LIMIT, so OFFSET too."""
    q = PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal } " + modifiers
    assert len(cn.query(q).to_list()) == rows
    assert cn.count(q) == rows


def test_count_star_query_returns_one_int_row(cn):
    """SELECT (COUNT(*) AS ?n): one row holding an int."""
    q = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal }"
    r = cn.query(q)
    assert r.variables == ["n"]
    rows = r.to_list()
    assert rows == [(ANIMALS_COUNT,)]
    assert type(rows[0][0]) is int
    assert list(cn.query(q)) == [(ANIMALS_COUNT,)]


def test_unsupported_sparql_is_query_error(cn):
    """A graph is one default graph: FROM is refused, naming it, when the rows are read."""
    q = PREFIX + "SELECT ?x FROM <http://example.org/g> WHERE { ?x r:IsA c:animal }"
    with pytest.raises(gpsense.QueryError, match="FROM"):
        cn.query(q).to_list()


def test_ask_query_refused_by_query(cn):
    """A query with no variable is a yes/no question: query() points to ask()."""
    with pytest.raises(gpsense.QueryError, match="ask"):
        cn.query("SELECT * WHERE { kitten IsA animal }")


# --- to_pandas / to_arrow ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [ANIMALS_AT_HOME, DOG_EDGES, MUTUAL_ISA, "SELECT ?x WHERE { ?x IsA animal . ?x IsA zebra }"],
)
def test_to_pandas_matches_to_list(cn, text):
    """One column per variable, named as the variables, rows as to_list()."""
    import pandas as pd

    rows = cn.query(text).to_list()
    r = cn.query(text)
    df = r.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == r.variables
    assert len(df) == len(rows)
    assert sorted(df.itertuples(index=False, name=None)) == sorted(rows)


@pytest.mark.parametrize(
    "text",
    [ANIMALS_AT_HOME, DOG_EDGES, MUTUAL_ISA, "SELECT ?x WHERE { ?x IsA animal . ?x IsA zebra }"],
)
def test_to_arrow_matches_to_list(cn, text):
    import pyarrow as pa

    rows = cn.query(text).to_list()
    r = cn.query(text)
    table = r.to_arrow()
    assert isinstance(table, pa.Table)
    assert table.column_names == r.variables
    assert table.num_rows == len(rows)
    columns = [table.column(name).to_pylist() for name in table.column_names]
    assert sorted(zip(*columns)) == sorted(rows)


def test_to_pandas_and_arrow_of_count_star(cn):
    import pyarrow as pa

    q = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal }"
    df = cn.query(q).to_pandas()
    assert list(df.columns) == ["n"] and df["n"].tolist() == [ANIMALS_COUNT]
    table = cn.query(q).to_arrow()
    assert table.column_names == ["n"]
    assert table.column("n").to_pylist() == [ANIMALS_COUNT]
    assert pa.types.is_integer(table.schema.field("n").type)


def test_to_pandas_after_some_rows_gives_the_rest(cn):
    r = cn.query(ANIMALS)
    for _ in range(10):
        next(r)
    assert len(r.to_pandas()) == ANIMALS_COUNT - 10


# --- count / ask ---------------------------------------------------------------------------------


def test_count(cn):
    assert cn.count(ANIMALS) == ANIMALS_COUNT
    assert cn.count(ANIMALS_AT_HOME) == 2
    assert cn.count(DOG_EDGES) == 391
    assert cn.count("SELECT ?x WHERE { ?x IsA animal . ?x IsA zebra }") == 0
    assert type(cn.count(ANIMALS)) is int


def test_count_equals_rows_for_several_queries(cn):
    for q in (ANIMALS_AT_HOME, DOG_EDGES, MUTUAL_ISA, "SELECT ?x ?y WHERE { ?x CapableOf fly . ?x IsA ?y }"):
        for semantics in ("iso", "hom"):
            assert cn.count(q, semantics=semantics) == len(cn.query(q, semantics=semantics).to_list()), (q, semantics)


#: Queries for count_many: the graph path in both dialects and semantics, one that does not read,
#: one with a FILTER (counted alone) and one for the full evaluator (OPTIONAL).
MANY = [
    ANIMALS,
    ANIMALS_AT_HOME,
    DOG_EDGES,
    MUTUAL_ISA,
    "SELECT ?x WHERE { ?x IsA nosuchthingzz }",
    PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal }",
    PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal . ?x r:AtLocation ?y FILTER(?y != c:home) }",
    PREFIX + "SELECT ?x ?y WHERE { ?x r:IsA c:animal OPTIONAL { ?x r:AtLocation ?y } }",
]


@pytest.mark.parametrize("engine", ["emulated", "dfs"])
def test_count_many_answers_each_query_as_count_does(cn, engine):
    """On the emulated device the graph path's queries go as batches (two here: `batch=3`); each
    entry is the query's count, or its own error as a value, the others answered."""
    got = cn.count_many(MANY, engine=engine, batch=3)
    assert len(got) == len(MANY)
    assert isinstance(got[4], gpsense.QueryError) and "nosuchthingzz" in str(got[4])
    for q, n in zip(MANY, got):
        if q is not MANY[4]:
            assert n == cn.count(q, engine="dfs") and type(n) is int, q
    assert got[0] == ANIMALS_COUNT and got[1] == 2
    # A limit per query: each count stops at it on its own.
    assert cn.count_many([ANIMALS, ANIMALS_AT_HOME], engine=engine, limit=5) == [5, 2]
    with pytest.raises(ValueError, match="batch"):
        cn.count_many(MANY, batch=0)


def test_count_many_keeps_a_device_failure_to_the_batched_queries(monkeypatch):
    """With every `extend_warp_batch` launch failing (the emulator's fault injection), each query of
    the batch gets the device's error as its entry; the queries answered off the device (a FILTER,
    the full evaluator) keep their counts."""
    monkeypatch.setenv("GPSENSE_EMULATOR_FAULT", "extend_warp_batch")
    g = gpsense.Graph.default()  # its emulator is made after the variable is set
    got = g.count_many(MANY, engine="emulated")
    for k in (0, 1, 2, 3, 5):
        assert isinstance(got[k], gpsense.MatchError), (MANY[k], got[k])
        assert "fault flag" in str(got[k])
    assert got[6] == g.count(MANY[6], engine="dfs") > 0
    assert got[7] == g.count(MANY[7]) > 0


@pytest.mark.parametrize("engine", ["emulated", "dfs"])
def test_query_many_gives_each_query_its_own_rows(cn, engine):
    """Each entry holds the rows `query` gives the same text (a COUNT(*) query's one row), or its
    own error as a value; a limit holds per query."""
    got = cn.query_many(MANY, engine=engine, batch=3)
    assert len(got) == len(MANY)
    assert isinstance(got[4], gpsense.QueryError) and "nosuchthingzz" in str(got[4])
    for q, r in zip(MANY, got):
        if q is not MANY[4]:
            assert sorted(r.to_list()) == sorted(cn.query(q, engine="dfs").to_list()), q
    limited = cn.query_many([ANIMALS, ANIMALS_AT_HOME], engine=engine, limit=5)
    assert [len(r.to_list()) for r in limited] == [5, 2]
    # An ASK query's result would answer yes or no: its entry is the error `query` raises.
    ask = cn.query_many([ANIMALS, PREFIX + "ASK { c:kitten r:IsA c:animal }"], engine=engine)
    assert isinstance(ask[1], gpsense.QueryError) and "Graph.ask()" in str(ask[1])
    with pytest.raises(ValueError, match="batch"):
        cn.query_many(MANY, batch=0)


def test_query_many_answers_the_device_batch_before_it_returns(monkeypatch):
    """The batched queries are answered when `query_many` returns: with every `extend_warp_batch`
    launch failing, their entries are the device's error, and the queries answered off the device
    (a FILTER, the full evaluator) keep their rows."""
    monkeypatch.setenv("GPSENSE_EMULATOR_FAULT", "extend_warp_batch")
    g = gpsense.Graph.default()
    got = g.query_many(MANY, engine="emulated")
    for k in (0, 1, 2, 3, 5):
        assert isinstance(got[k], gpsense.MatchError) and "fault flag" in str(got[k]), MANY[k]
    assert sorted(got[6].to_list()) == sorted(g.query(MANY[6], engine="dfs").to_list())
    assert len(got[7].to_list()) == g.count(MANY[7])


def test_query_many_hands_out_the_rows_a_time_limit_left_then_raises(cn):
    """A batched SELECT the time limit cuts short (1.8 million rows, about 0.15 s in the emulator,
    against 0.01 s) holds the rows found by then: reading hands them out, then raises
    QueryTimeout, as `query` does; the whole answer is never passed off as complete."""
    star = "SELECT * WHERE { ?x IsA ?a0 . ?x IsA ?a1 }"
    got = cn.query_many([star], semantics="hom", timeout=0.01, engine="emulated")[0]
    rows = []
    with pytest.raises(gpsense.QueryTimeout):
        for row in got:
            rows.append(row)
    assert len(rows) < cn.count(star, semantics="hom")
    with pytest.raises(gpsense.QueryTimeout):
        next(got)


def test_query_many_lets_go_of_rows_past_its_bound_and_streams_them_when_read(cn):
    """A SELECT of 2.1 billion rows passes the batch's 2^24 held values: its rows are let go and
    its result streams them on its own when read, as `query`'s does; the query beside it keeps
    its held rows."""
    star = "SELECT * WHERE { ?x IsA ?a0 . ?x IsA ?a1 . ?x IsA ?a2 }"
    big, small = cn.query_many([star, ANIMALS_AT_HOME], semantics="hom", engine="emulated")
    first = [row for _, row in zip(range(1000), big)]
    assert len(first) == 1000 and all(len(row) == 4 for row in first)
    big.close()
    assert sorted(small.to_list()) == ANIMALS_AT_HOME_ROWS


def test_counts_past_64_bits_are_exact(cn):
    """A 7-leaf star's leaf-group product passes 2^64 (it wrapped before); past 2^128 - 1, an error."""
    star = " . ".join(f"?x IsA ?a{i}" for i in range(7))
    assert cn.count(f"SELECT * WHERE {{ {star} }}", semantics="hom") == 5_753_810_593_750_889_762_793
    q = PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA ?a0, ?a1, ?a2, ?a3, ?a4, ?a5, ?a6 }"
    assert cn.query(q).to_list() == [(5_753_810_593_750_889_762_793,)]
    assert cn.explain(f"SELECT * WHERE {{ {star} }}", semantics="hom")["matches"] == 5_753_810_593_750_889_762_793
    parts = " . ".join(f"?a{i} IsA ?b{i}" for i in range(10))
    with pytest.raises(gpsense.MatchError, match=r"more than 2\^128 - 1"):
        cn.count(f"SELECT * WHERE {{ {parts} }}", semantics="hom")


def test_ask_true_and_false(cn):
    assert cn.ask("SELECT * WHERE { kitten IsA animal }") is True
    assert cn.ask("SELECT * WHERE { kitten IsA rock }") is False
    assert cn.ask(ANIMALS_AT_HOME) is True
    assert cn.ask("SELECT ?x WHERE { ?x IsA animal . ?x IsA zebra }") is False
    assert cn.ask(PREFIX + "ASK { c:kitten r:IsA c:animal }") is True
    assert cn.ask(PREFIX + "ASK { c:kitten r:IsA c:rock }") is False
    assert cn.ask("ASK { <gpsense:n/kitten> <gpsense:r/IsA> <gpsense:n/animal> }") is True


def test_ask_semantics(cn):
    """`dog IsA dog` is a match under hom only (iso keeps ?x apart from the concept)."""
    q = "SELECT ?x WHERE { dog IsA ?x . ?x IsA dog }"
    assert cn.ask(q, semantics="hom") is True
    assert cn.ask(q, semantics="iso") is False
    assert cn.ask(q) is False  # iso by default
    assert cn.query(q, semantics="hom").to_list() == [("dog",)]


# --- WordNet -------------------------------------------------------------------------------------


def test_wordnet_hypernyms(wordnet):
    """Two levels of hyponyms of `dog`: each ?y is a direct hyponym of a synset of `dog`."""
    rows = wordnet.query("SELECT ?x ?y WHERE { ?x hypernym ?y . ?y hypernym dog }").to_list()
    assert len(rows) == 43
    direct = {x for (x,) in wordnet.query("SELECT ?x WHERE { ?x hypernym dog }")}
    assert {y for _, y in rows} <= direct
    assert ("Chihuahua/02085620-n", "toy_dog/02085374-n") in rows
    assert wordnet.ask("SELECT * WHERE { puppy hypernym dog }") is True
    assert wordnet.ask("SELECT * WHERE { dog hypernym puppy }") is False


# --- explain -------------------------------------------------------------------------------------


def test_explain_keys_and_candidates(cn):
    e = cn.explain(ANIMALS_AT_HOME)
    assert {
        "dialect",
        "semantics",
        "engine",
        "device",
        "fallback",
        "plan",
        "join_plan",
        "candidates",
        "edge_candidates",
        "times_ms",
        "matches",
        "timed_out",
        "limit_reached",
        "text",
    } <= set(e)
    assert e["dialect"] == "short"
    assert e["semantics"] == "iso"
    assert e["engine"] in ("dfs", "kernels", "gpu", "emulated")
    assert e["matches"] == 2
    assert e["timed_out"] is False and e["limit_reached"] is False
    # Candidates per query node: the concepts have one, ?x is refined to the two answers.
    assert set(e["candidates"]) == {"?x", "animal", "home"}
    assert e["candidates"]["animal"] == {"after_filter": 1, "after_refine": 1}
    assert e["candidates"]["home"] == {"after_filter": 1, "after_refine": 1}
    x = e["candidates"]["?x"]
    assert x["after_filter"] >= x["after_refine"] >= 2
    assert isinstance(e["plan"], list) and len(e["plan"]) == 3
    assert isinstance(e["join_plan"], list) and e["join_plan"]
    assert set(e["times_ms"]) >= {"plan", "filter", "refine", "join", "total"}
    assert all(v >= 0 for v in e["times_ms"].values())
    assert "plan" in e["text"]
    assert "candidates per query node" in e["text"]


def test_explain_semantics_limit_and_sparql(cn):
    assert cn.explain(MUTUAL_ISA, semantics="hom")["matches"] == 38
    limited = cn.explain(ANIMALS, limit=5)
    assert limited["matches"] == 5 and limited["limit_reached"] is True
    e = cn.explain(PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal . ?x r:AtLocation c:home }")
    assert e["dialect"] == "sparql" and e["semantics"] == "hom" and e["matches"] == 2


# --- trust ---------------------------------------------------------------------------------------


def test_trust_ranked_scores(cn):
    matches = cn.trust('SELECT * WHERE { "chocolat cake" IsA ?x . ?x HasProperty sweet }', top=5)
    assert 1 <= len(matches) <= 5
    assert all(isinstance(m, gpsense.TrustMatch) for m in matches)
    scores = [m.score for m in matches]
    assert all(0.0 <= s <= 1.0 for s in scores)
    # Ranked by the concepts matched by name, then by score.
    keys = [(m.resembling, m.score) for m in matches]
    assert keys == sorted(keys, reverse=True)
    assert all(0 <= m.resembling <= 2 for m in matches)


def test_trust_misspelt_concept_finds_chocolate(cn):
    """`chocolat cake` is in no graph; TruST still finds chocolate-related matches."""
    matches = cn.trust('SELECT * WHERE { "chocolat cake" IsA ?x . ?x HasProperty sweet }')
    assert matches
    found = [m.nodes["chocolat cake"] for m in matches]
    assert all("chocolate" in f for f in found[:3])
    best = matches[0]
    assert best.nodes["sweet"] == "sweet"
    # A real path of the graph: chocolate IsA ?x, ?x HasProperty sweet.
    x = best.nodes["?x"]
    assert cn.ask(f'SELECT * WHERE {{ "{best.nodes["chocolat cake"]}" IsA "{x}" . "{x}" HasProperty sweet }}', semantics="hom")


def test_trust_match_shapes(cn):
    m = cn.trust('SELECT * WHERE { "chocolat cake" IsA ?x . ?x HasProperty sweet }', top=3)[0]
    assert set(m.nodes) == {"chocolat cake", "?x", "sweet"}
    assert set(m.node_agreement) == set(m.nodes)
    for similarity, one_hop in m.node_agreement.values():
        assert 0.0 <= similarity <= 1.0 and 0.0 <= one_hop <= 1.0
    assert 0.0 < m.node_agreement["chocolat cake"][0] < 1.0  # misspelt: similar, not equal
    assert m.node_agreement["sweet"][0] == 1.0
    assert len(m.edge_agreement) == 2
    for edge in m.edge_agreement:
        assert set(edge) == {"source", "relation", "target", "found", "data_relation", "score"}
        assert edge["found"] in ("exact", "other_relation", "reversed", "missing")
        assert 0.0 <= edge["score"] <= 1.0
    first, second = m.edge_agreement
    assert (first["source"], first["relation"], first["target"]) == ("chocolat cake", "IsA", "?x")
    assert (second["source"], second["relation"], second["target"]) == ("?x", "HasProperty", "sweet")
    assert "TrustMatch" in repr(m)


def test_trust_exact_embedding_scores_one(cn):
    """An exact match of existing concepts scores 1 with every edge exact."""
    best = cn.trust(ANIMALS_AT_HOME, top=3)[0]
    assert math.isclose(best.score, 1.0, abs_tol=1e-6)
    assert best.nodes["?x"] in {"kitten", "lizard"}
    assert all(e["found"] == "exact" and e["data_relation"] == e["relation"] for e in best.edge_agreement)


def test_trust_variable_relation_and_top(cn):
    matches = cn.trust("SELECT * WHERE { cake ?r ?x }", top=4)
    assert len(matches) == 4
    assert all(e["relation"] is None for m in matches for e in m.edge_agreement)


def _trust_rows(matches):
    return [(m.score, m.resembling, m.nodes, m.node_agreement, m.edge_agreement) for m in matches]


@pytest.mark.parametrize("engine", ["emulated", "auto"])
def test_trust_engines_rank_as_the_cpu_does(cn, engine):
    """The device's kernels (here run by the emulator, or the GPU under auto when one is found)
    give the CPU's ranked answer, to the score; the device is opened once and kept."""
    q = 'SELECT * WHERE { "chocolat cake" IsA ?x . ?x HasProperty sweet }'
    cpu = _trust_rows(cn.trust(q, top=5, engine="cpu"))
    assert cpu
    for _ in range(2):
        assert _trust_rows(cn.trust(q, top=5, engine=engine)) == cpu
    for q in (ANIMALS_AT_HOME, "SELECT * WHERE { cake ?r ?x }"):
        assert _trust_rows(cn.trust(q, top=4, engine=engine)) == _trust_rows(cn.trust(q, top=4, engine="cpu"))


def test_trust_emulated_runs_the_kernels(monkeypatch):
    """engine="emulated" launches the kernels: a fault injected into `trust_extend` is the search's
    MatchError, naming the kernel; the CPU on the same graph answers."""
    monkeypatch.setenv("GPSENSE_EMULATOR_FAULT", "trust_extend")
    g = gpsense.Graph.default()  # its emulator is made after the variable is set
    with pytest.raises(gpsense.MatchError, match="trust_extend raised the fault flag"):
        g.trust(ANIMALS_AT_HOME, engine="emulated")
    assert g.trust(ANIMALS_AT_HOME, engine="cpu")


def test_trust_unknown_relation_warns(cn):
    with pytest.warns(UserWarning, match="FooRel"):
        cn.trust("SELECT * WHERE { cake FooRel ?x }", top=2)


def test_trust_syntax_error_is_query_error(cn):
    with pytest.raises(gpsense.QueryError) as info:
        cn.trust("SELECT * WHERE { cake IsA ")
    assert (info.value.line, info.value.column) == (1, 27)


def test_trust_timeout(cn):
    with pytest.raises(gpsense.QueryTimeout) as info:
        cn.trust('SELECT * WHERE { "chocolat cake" IsA ?x }', timeout=0.0)
    assert isinstance(info.value.partial, list)

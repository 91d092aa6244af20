"""Opening, saving and describing graphs: Graph.load, Graph.ingest, Graph.default, save, len,
info, summary, relations, to_networkx."""

from __future__ import annotations

import warnings

import pytest

import gpsense
from conftest import (
    ANIMALS,
    ANIMALS_AT_HOME,
    ANIMALS_AT_HOME_ROWS,
    ANIMALS_COUNT,
    CONCEPTNET5_SAMPLE,
    HPRD_GRAPH,
    PATTERN_COMMONSENSE,
    TINY_EDGES,
    TINY_NODES,
    TINY_TSV,
)


# --- Graph.default ----------------------------------------------------------------------------


def test_default_is_conceptnet_100k(cn):
    """The embedded graph is ConceptNet-100K: 78,093 nodes, 100,000 edges, 34 relations."""
    info = cn.info()
    assert info["nodes"] == 78_093
    assert info["edges"] == 100_000
    assert info["relations"] == 34
    assert len(cn) == 100_000
    assert "ConceptNet-100K" in info["origin"]


def test_default_info_keys_and_values(cn):
    """info() has every key the API documents, with the right types and values."""
    info = cn.info()
    assert set(info) == {
        "origin",
        "nodes",
        "edges",
        "relations",
        "node_labels",
        "weighted",
        "aliases",
        "compressed",
        "load_ms",
        "edges_by_relation",
    }
    assert info["node_labels"] is None
    assert info["weighted"] is False
    assert info["aliases"] == 0
    assert info["compressed"] is False
    assert isinstance(info["load_ms"], float) and info["load_ms"] >= 0
    by_relation = info["edges_by_relation"]
    assert len(by_relation) == 34
    assert sum(by_relation.values()) == 100_000
    assert by_relation["IsA"] == 14_925
    assert by_relation["AtLocation"] == 14_380
    assert by_relation["HasPainIntensity"] == 1


def test_default_relations_most_used_first(cn):
    """relations() lists the 34 relations by edge count, descending."""
    relations = cn.relations()
    assert len(relations) == 34 == len(set(relations))
    assert relations[:3] == ["IsA", "AtLocation", "UsedFor"]
    counts = [cn.info()["edges_by_relation"][r] for r in relations]
    assert counts == sorted(counts, reverse=True)
    assert set(relations) == set(cn.info()["edges_by_relation"])


def test_default_twice_gives_equal_graphs(cn):
    """Graph.default() can be called again; the new graph answers the same."""
    again = gpsense.Graph.default()
    assert len(again) == len(cn)
    assert sorted(again.query(ANIMALS_AT_HOME)) == ANIMALS_AT_HOME_ROWS


def test_repr_names_origin_and_sizes(cn):
    text = repr(cn)
    assert "ConceptNet-100K" in text and "78093 nodes" in text and "100000 edges" in text


# --- summary -------------------------------------------------------------------------------------


def test_summary_text(cn):
    """summary() is the report of `gpsense info`: sizes with separators, top relations."""
    text = cn.summary()
    assert "78,093" in text and "100,000" in text
    assert "relations by edge count (20 of 34)" in text
    assert "IsA" in text and "14,925" in text
    # The 21st relation is not listed by default...
    assert "NotHasProperty" not in text
    # ...and top_relations chooses how many are.
    short = cn.summary(top_relations=3)
    assert "relations by edge count (3 of 34)" in short
    assert "UsedFor" in short and "CapableOf" not in short
    assert "NotHasProperty" in cn.summary(top_relations=34)


def test_summary_equals_cli_info(cn, cli):
    """summary(n) is what `gpsense info --top n` prints, without its load-time line."""
    out = cli("info", "--top", "5").stdout
    lines = [line for line in out.splitlines() if not line.startswith("load time")]
    assert cn.summary(top_relations=5).splitlines() == lines


# --- Graph.ingest --------------------------------------------------------------------------------


def test_ingest_single_path(tiny, tiny_tsv):
    """A single path (str or Path) is ingested; names, relations and edges are the file's."""
    for g in (tiny, gpsense.Graph.ingest(str(tiny_tsv))):
        info = g.info()
        assert len(g) == 6 == info["edges"]
        assert info["nodes"] == len(TINY_NODES)
        assert info["relations"] == 3
        assert info["edges_by_relation"] == {"IsA": 3, "HasA": 2, "PartOf": 1}
        assert "tiny.tsv" in info["origin"]
        assert sorted(g.query("SELECT ?x WHERE { ?x IsA animal }")) == [("cat",), ("dog",)]


def test_ingest_list_of_paths(tmp_path):
    """A list of paths makes one graph of all their edges."""
    lines = TINY_TSV.splitlines(keepends=True)
    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("".join(lines[:3]))
    b.write_text("".join(lines[3:]))
    g = gpsense.Graph.ingest([a, str(b)])
    assert len(g) == 6
    assert g.info()["nodes"] == len(TINY_NODES)
    assert g.count("SELECT * WHERE { ?x HasA tail . ?x IsA animal }") == 2


def test_ingest_wordnet(wordnet):
    """WordNet 3.0: 117,659 synsets, 285,348 edges, 22 relations, lemmas as names."""
    info = wordnet.info()
    assert info["nodes"] == 117_659
    assert info["edges"] == 285_348 == len(wordnet)
    assert info["relations"] == 22
    assert info["node_labels"] == 5  # synset types n, v, a, s, r
    assert info["aliases"] > 100_000
    assert wordnet.relations()[0] == "hypernym"
    assert {"hypernym", "hyponym", "part_meronym", "entailment"} <= set(wordnet.relations())


def test_wordnet_lemma_names_every_synset(wordnet):
    """A lemma denotes all its synsets: `dog` has nine hypernyms over its eight synsets."""
    rows = wordnet.query("SELECT ?y WHERE { dog hypernym ?y }").to_list()
    names = {y for (y,) in rows}
    assert len(rows) == 9
    assert "canine/02083346-n" in names
    assert "domestic_animal/01317541-n" in names
    assert all("/" in y for y in names)  # synset names: lemma/offset-type


def test_ingest_format_option(tiny_tsv):
    """format= and columns= are the CLI's: hrt reads the same file with another column order."""
    g = gpsense.Graph.ingest(tiny_tsv, format="triples", columns="hrt")
    # Read as head-relation-tail, the heads are the relations.
    assert set(g.relations()) == {"dog", "cat", "puppy", "tail"}
    assert set(gpsense.Graph.ingest(tiny_tsv, columns="rht").relations()) == {"IsA", "HasA", "PartOf"}


def test_ingest_conceptnet_dump_options():
    """The ConceptNet 5 sample: 682 edges between concepts (ExternalURL lines dropped); languages=
    keeps one language with bare names; strip_pos merges part-of-speech variants."""
    everything = gpsense.Graph.ingest(CONCEPTNET5_SAMPLE)
    assert len(everything) == 682
    assert everything.info()["weighted"] is True
    assert "ExternalURL" not in everything.relations()
    english = gpsense.Graph.ingest(CONCEPTNET5_SAMPLE, languages=["en"])
    assert 0 < len(english) < 682
    stripped = gpsense.Graph.ingest(CONCEPTNET5_SAMPLE, languages=["en"], strip_pos=True)
    assert len(stripped) <= len(english)
    assert stripped.info()["nodes"] < english.info()["nodes"]


def test_ingest_russian_conceptnet(russian):
    """The Russian ConceptNet: 473,562 edges, 403,420 concepts, 12 relations; Cyrillic names."""
    info = russian.info()
    assert (info["edges"], info["nodes"], info["relations"]) == (473_562, 403_420, 12)
    assert russian.relations()[0] == "FormOf"
    assert russian.query("SELECT ?x WHERE { молитвам FormOf ?x }").to_list() == [("молитва",)]
    G = russian.to_networkx(nodes=["молитвам", "молитва"])
    assert ("молитвам", "молитва") in G.edges()


def test_ingest_pattern_commonsense():
    """Pattern's common-sense CSV (with a BOM): 9,215 edges, 3,891 concepts, 7 relations."""
    g = gpsense.Graph.ingest(PATTERN_COMMONSENSE)
    info = g.info()
    assert (info["edges"], info["nodes"], info["relations"]) == (9_215, 3_891, 7)
    assert "is-property-of" in g.relations()


def test_ingest_hprd_benchmark_graph():
    """The HPRD data graph of the subgraph-matching study: 9,460 vertices, labelled."""
    g = gpsense.Graph.ingest(HPRD_GRAPH)
    info = g.info()
    assert info["nodes"] == 9_460
    assert info["node_labels"] == 307
    # The benchmark's 34,998 undirected edges are stored both ways.
    assert len(g) == 2 * 34_998


def test_ingest_malformed_line_fails_by_default(tmp_path):
    """A malformed line is a GraphError naming the file, the line and the problem."""
    bad = tmp_path / "bad.tsv"
    bad.write_text("IsA\tdog\tanimal\nthis line is malformed\nIsA\tcat\tanimal\n")
    with pytest.raises(gpsense.GraphError) as info:
        gpsense.Graph.ingest(bad)
    message = str(info.value)
    assert "bad.tsv:2" in message
    assert "field" in message


def test_ingest_on_error_skip_warns(tmp_path):
    """on_error="skip" drops the malformed line, with a UserWarning saying how many."""
    bad = tmp_path / "bad.tsv"
    bad.write_text("IsA\tdog\tanimal\nthis line is malformed\nIsA\tcat\tanimal\n")
    with pytest.warns(UserWarning, match="skipped 1 malformed line"):
        g = gpsense.Graph.ingest(bad, on_error="skip")
    assert len(g) == 2
    assert sorted(g.query("SELECT ?x WHERE { ?x IsA animal }")) == [("cat",), ("dog",)]


def test_ingest_clean_file_does_not_warn(tiny_tsv):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gpsense.Graph.ingest(tiny_tsv, on_error="skip")


def test_ingest_max_line_bytes(tiny_tsv):
    """A line longer than max_line_bytes is malformed."""
    with pytest.raises(gpsense.GraphError, match="too long"):
        gpsense.Graph.ingest(tiny_tsv, max_line_bytes=5)
    assert len(gpsense.Graph.ingest(tiny_tsv, max_line_bytes=1 << 20)) == 6


@pytest.mark.parametrize(
    "option, bad",
    [("format", "nonsense"), ("on_error", "maybe"), ("columns", "xyz")],
)
def test_ingest_bad_option_value_is_value_error(tiny_tsv, option, bad):
    """An unknown option value is a ValueError naming it (before any file is read)."""
    with pytest.raises(ValueError, match=bad) as info:
        gpsense.Graph.ingest(tiny_tsv, **{option: bad})
    assert not isinstance(info.value, gpsense.GpsenseError)


def test_ingest_missing_file_is_graph_error(tiny_tsv, tmp_path):
    missing = tmp_path / "missing.tsv"
    with pytest.raises(gpsense.GraphError, match="missing.tsv"):
        gpsense.Graph.ingest([tiny_tsv, missing])


def test_ingest_no_paths_is_graph_error():
    with pytest.raises(gpsense.GraphError, match="no input"):
        gpsense.Graph.ingest([])


# --- save and Graph.load ---------------------------------------------------------------------------


def test_save_and_load_roundtrip(cn, tmp_path):
    """A snapshot written by save() loads into the same graph, which answers the same."""
    path = tmp_path / "cn100k.gps"
    cn.save(path)
    assert path.is_file() and path.stat().st_size > 0
    assert not [p for p in tmp_path.iterdir() if p != path]  # no temporary file left
    loaded = gpsense.Graph.load(path)
    assert len(loaded) == len(cn)
    info, original = loaded.info(), cn.info()
    for key in ("nodes", "edges", "relations", "edges_by_relation", "aliases"):
        assert info[key] == original[key], key
    assert str(path) in info["origin"]
    assert sorted(loaded.query(ANIMALS_AT_HOME)) == ANIMALS_AT_HOME_ROWS
    assert loaded.count(ANIMALS) == ANIMALS_COUNT
    # str paths work too, and save over an existing file replaces it.
    loaded.save(str(path))
    assert len(gpsense.Graph.load(str(path))) == 100_000


def test_wordnet_snapshot_roundtrip(wordnet, wordnet_snapshot):
    """WordNet's snapshot keeps node labels and lemma aliases."""
    loaded = gpsense.Graph.load(wordnet_snapshot)
    for key in ("nodes", "edges", "relations", "node_labels", "aliases"):
        assert loaded.info()[key] == wordnet.info()[key], key
    q = "SELECT ?x ?y WHERE { ?x hypernym ?y . ?y hypernym dog }"
    assert sorted(loaded.query(q)) == sorted(wordnet.query(q))


def test_load_text_file(tiny_tsv):
    """Graph.load reads any file ingest reads, with the default options."""
    g = gpsense.Graph.load(tiny_tsv)
    assert len(g) == 6
    rows = g.query("SELECT ?h ?r ?t WHERE { ?h ?r ?t }", semantics="hom").to_list()
    assert {(h, r, t) for h, r, t in rows} == TINY_EDGES


def test_load_missing_file_is_graph_error(tmp_path):
    missing = tmp_path / "nothing-here.gps"
    with pytest.raises(gpsense.GraphError) as info:
        gpsense.Graph.load(missing)
    assert "nothing-here.gps" in str(info.value)
    assert "No such file" in str(info.value)


def test_load_directory_is_graph_error(tmp_path):
    with pytest.raises(gpsense.GraphError, match=str(tmp_path.name)):
        gpsense.Graph.load(tmp_path)


@pytest.fixture
def tiny_snapshot(tiny, tmp_path) -> bytes:
    path = tmp_path / "tiny.gps"
    tiny.save(path)
    return path.read_bytes()


def test_load_truncated_snapshot(tiny_snapshot, tmp_path):
    """A snapshot cut short is a GraphError that says it is truncated."""
    cut = tmp_path / "cut.gps"
    cut.write_bytes(tiny_snapshot[: len(tiny_snapshot) // 2])
    with pytest.raises(gpsense.GraphError) as info:
        gpsense.Graph.load(cut)
    assert "cut.gps" in str(info.value) and "truncated" in str(info.value)
    # Even shorter than the header.
    cut.write_bytes(tiny_snapshot[:10])
    with pytest.raises(gpsense.GraphError, match="truncated"):
        gpsense.Graph.load(cut)


def test_load_corrupted_snapshot(tiny_snapshot, tmp_path):
    """Flipped bytes in a snapshot's body are found (checksum), not loaded as a wrong graph."""
    body = bytearray(tiny_snapshot)
    for i in range(40, min(80, len(body))):
        body[i] ^= 0xFF
    bad = tmp_path / "bad.gps"
    bad.write_bytes(bytes(body))
    with pytest.raises(gpsense.GraphError) as info:
        gpsense.Graph.load(bad)
    assert "bad.gps" in str(info.value) and "corrupt" in str(info.value)


def test_save_into_missing_directory_is_graph_error(tiny, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "g.gps"
    with pytest.raises(gpsense.GraphError, match="does not exist"):
        tiny.save(target)


# --- to_networkx -------------------------------------------------------------------------------------


def test_to_networkx_whole_small_graph(tiny):
    """The whole graph: every node, one edge per triple with its relation and weight."""
    import networkx as nx

    G = tiny.to_networkx()
    assert isinstance(G, nx.MultiDiGraph)
    assert set(G.nodes) == TINY_NODES
    assert G.number_of_edges() == len(TINY_EDGES)
    edges = {(u, d["relation"], v) for u, v, d in G.edges(data=True)}
    assert edges == TINY_EDGES
    assert all(d["weight"] == 1.0 for _, _, d in G.edges(data=True))


def test_to_networkx_subgraph(cn):
    """nodes= gives the subgraph among those nodes, edges of the data included."""
    G = cn.to_networkx(nodes=["dog", "cat", "pet", "bone"])
    assert set(G.nodes) == {"dog", "cat", "pet", "bone"}
    edges = {(u, d["relation"], v) for u, v, d in G.edges(data=True)}
    assert ("cat", "IsA", "pet") in edges
    assert ("dog", "HasA", "bone") in edges
    # Exactly the edges the query engine finds between those nodes.
    rows = cn.query(
        "SELECT ?a ?r ?b WHERE { ?a ?r ?b }", semantics="hom"
    )
    inside = {"dog", "cat", "pet", "bone"}
    expected = {(a, r, b) for a, r, b in rows if a in inside and b in inside}
    assert edges == expected
    assert G.number_of_edges() == len(expected)


def test_to_networkx_wordnet_lemma_is_all_its_synsets(wordnet):
    """A lemma given in nodes= stands for every synset it names."""
    G = wordnet.to_networkx(nodes=["dog"])
    assert sorted(G.nodes) == [
        "andiron/02710044-n",
        "cad/09886220-n",
        "chase/02001876-v",
        "dog/02084071-n",
        "dog/10023039-n",
        "frank/07676602-n",
        "frump/10114209-n",
        "pawl/03901548-n",
    ]
    G = wordnet.to_networkx(nodes=["dog", "canine", "domestic animal"])
    edges = {(u, d["relation"], v) for u, v, d in G.edges(data=True)}
    assert ("dog/02084071-n", "hypernym", "canine/02083346-n") in edges
    assert ("dog/02084071-n", "hypernym", "domestic_animal/01317541-n") in edges


def test_to_networkx_max_edges_refused(cn, tiny):
    """Beyond max_edges the conversion is refused with a GraphError saying what to do."""
    with pytest.raises(gpsense.GraphError) as info:
        cn.to_networkx(max_edges=1_000)
    assert "max_edges=1000" in str(info.value) and "nodes=" in str(info.value)
    with pytest.raises(gpsense.GraphError, match="max_edges=2"):
        tiny.to_networkx(max_edges=2)
    with pytest.raises(gpsense.GraphError, match="max_edges=1"):
        cn.to_networkx(nodes=["dog", "cat", "pet", "bone"], max_edges=1)


def test_to_networkx_unknown_node_suggests(cn):
    """An unknown node name is a GraphError with close names suggested."""
    with pytest.raises(gpsense.GraphError) as info:
        cn.to_networkx(nodes=["dog", "chocolat cake"])
    message = str(info.value)
    assert "chocolat cake" in message
    assert "did you mean" in message and "chocolate" in message


# --- compressed graphs -------------------------------------------------------------------------


def test_compressed_graph_loads_answers_and_saves(cli, tmp_path):
    """A .gpsc written by `gpsense compress` loads (compressed: True), answers exactly as the
    uncompressed graph, and save() keeps it compressed."""
    plain = gpsense.Graph.ingest(PATTERN_COMMONSENSE)
    snapshot, compressed_path = tmp_path / "pattern.gps", tmp_path / "pattern.gpsc"
    plain.save(snapshot)
    cli("compress", snapshot, "-o", compressed_path)
    g = gpsense.Graph.load(compressed_path)
    assert g.info()["compressed"] is True
    assert plain.info()["compressed"] is False
    assert (len(g), g.info()["nodes"]) == (9_215, 3_891)
    for q in (
        "SELECT ?x ?y WHERE { ?x is-a ?y . ?y is-a ?x }",
        "SELECT * WHERE { ?x is-a ?y . ?y is-property-of ?z }",
    ):
        for semantics in ("iso", "hom"):
            assert sorted(g.query(q, semantics=semantics)) == sorted(plain.query(q, semantics=semantics))
            assert g.count(q, semantics=semantics) == plain.count(q, semantics=semantics)
    again = tmp_path / "again.gpsc"
    g.save(again)
    reloaded = gpsense.Graph.load(again)
    assert reloaded.info()["compressed"] is True and len(reloaded) == 9_215

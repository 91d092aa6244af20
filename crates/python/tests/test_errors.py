"""Errors: the exception classes, QueryError's position and message (the CLI's, word for word),
bad option values, an engine that is not there, and the bounds a query can hit."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import gpsense
from conftest import ANIMALS, ANIMALS_COUNT

BAD_QUERIES = [
    # (query, line, column, words the message must hold)
    ("SELECT ?x WHERE { ?x IsA animall }", 1, 26, ['unknown concept "animall"', '"animal"']),
    ("SELECT ?x WHERE { ?x IsA animal . ", 1, 35, ["expected a subject", "missing '}'"]),
    (
        "SELECT ?x WHERE {\n  ?x IsA animal .\n  ?x AtLocaton home }",
        3,
        6,
        ['unknown relation "AtLocaton"', '"AtLocation"'],
    ),
    ("SELECT ?x WHERE { ?x IsA animal . ?x HasA ?y", 1, 45, ["missing '}'"]),
    # A standard query naming what the graph lacks is no error: an empty answer and a warning
    # (test_sparql.py).
]


def test_exception_hierarchy():
    """Every error is a GpsenseError; QueryError is a ValueError, QueryTimeout a TimeoutError."""
    for cls in (gpsense.GraphError, gpsense.QueryError, gpsense.MatchError, gpsense.QueryTimeout):
        assert issubclass(cls, gpsense.GpsenseError)
    assert issubclass(gpsense.QueryError, ValueError)
    assert issubclass(gpsense.QueryTimeout, TimeoutError)
    assert not issubclass(gpsense.GraphError, ValueError)


@pytest.mark.parametrize("text, line, column, words", BAD_QUERIES)
def test_query_error_position_and_message(cn, text, line, column, words):
    """A syntax error or an unknown name is a QueryError (a ValueError) at the right place; its
    message shows the line with a caret under the column."""
    for call in (cn.query, cn.count, cn.ask, cn.explain):
        with pytest.raises(gpsense.QueryError) as info:
            call(text)
        e = info.value
        assert isinstance(e, ValueError)
        assert (e.line, e.column) == (line, column), call.__name__
        message = str(e)
        assert message.startswith(f"line {line}, column {column}: ")
        for w in words:
            assert w in message
        # The offending line, then a caret under the column.
        shown, caret = message.splitlines()[-2:]
        assert shown.startswith(f"{line} | ")
        assert caret.rstrip().endswith("^")


def test_query_error_column_counts_characters(russian, russian_snapshot, cli):
    """Columns count characters, not bytes (Cyrillic takes two bytes each); the CLI agrees."""
    text = "SELECT ?x WHERE { молитвам FormOf ?x . ?x IsA кризззз }"
    with pytest.raises(gpsense.QueryError) as info:
        russian.query(text)
    e = info.value
    assert (e.line, e.column) == (1, text.index("кризззз") + 1) == (1, 47)
    assert 'unknown concept "кризззз"' in str(e) and '"криз"' in str(e)
    done = cli("query", "-q", "--graph", russian_snapshot, text, check=False)
    assert done.returncode != 0
    assert done.stderr[len("error: ") :].rstrip("\n") == str(e)


def test_query_error_caught_as_value_error(cn):
    with pytest.raises(ValueError):
        cn.query("SELECT ?x WHERE { ?x IsA animall }")


@pytest.mark.parametrize("text, line, column, words", BAD_QUERIES)
def test_query_error_message_is_the_clis(cn, cli, text, line, column, words):
    """str(QueryError) is exactly what `gpsense query` prints after "error: " on stderr."""
    with pytest.raises(gpsense.QueryError) as info:
        cn.query(text)
    done = cli("query", "-q", text, check=False)
    assert done.returncode != 0
    assert done.stdout == ""
    assert done.stderr.startswith("error: ")
    assert done.stderr[len("error: ") :].rstrip("\n") == str(info.value)


#: Issue 27, case 1: 10,000 nested brackets behind a prefixed name's escape (`e:a\\#`, whose `#` the
#: old nesting guard took for a comment; `e:a\\)`, whose `)` it took for a closing bracket) reached
#: the parser, whose recursion overflowed the stack: the interpreter died (SIGSEGV).
DEEP_BEHIND_ESCAPES = [
    "PREFIX e: <http://x/> SELECT * WHERE { ?s e:a\\# ?o FILTER("
    + "(" * 10_000
    + "?o"
    + ")" * 10_000
    + " = ?o) }",
    "PREFIX e: <http://x/> SELECT * WHERE { ?s ?p ?o FILTER("
    + "(e:a\\) = " * 10_000
    + "?o"
    + ")" * 10_000
    + ") }",
]


@pytest.mark.parametrize("text", DEEP_BEHIND_ESCAPES, ids=["comment-escape", "bracket-escape"])
def test_deep_query_behind_escapes_is_a_query_error(text):
    """A deeply nested query is a QueryError from every call, and the interpreter lives on. Run in
    a child interpreter: a crash there fails this test instead of killing the suite."""
    script = f"""
        import gpsense
        g = gpsense.Graph.default()
        text = {text!r}
        for call in (g.query, g.count, g.ask, g.explain):
            try:
                call(text)
            except gpsense.QueryError as e:
                assert "nest" in str(e), str(e)[:300]
            else:
                raise AssertionError(f"{{call.__name__}} accepted the deep query")
        print(g.count("SELECT * WHERE {{ ?x IsA animal }}"))
    """
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the deep query hung the interpreter")
    assert done.returncode == 0, f"the interpreter exited {done.returncode}: {done.stderr[-2000:]}"
    assert done.stdout.strip() == str(ANIMALS_COUNT)


@pytest.mark.parametrize("call", ["query", "count", "ask", "explain"])
def test_bad_semantics_is_value_error(cn, call):
    with pytest.raises(ValueError, match="unknown semantics") as info:
        getattr(cn, call)(ANIMALS, semantics="isomorphism")
    assert "iso" in str(info.value) and "hom" in str(info.value)


@pytest.mark.parametrize("call", ["query", "count", "ask", "explain"])
def test_bad_engine_is_value_error(cn, call):
    with pytest.raises(ValueError, match="unknown engine") as info:
        getattr(cn, call)(ANIMALS, engine="quantum")
    assert "quantum" in str(info.value) and "dfs" in str(info.value)


def test_negative_timeout_is_value_error(cn):
    with pytest.raises(ValueError, match="timeout"):
        cn.count(ANIMALS, timeout=-1)
    with pytest.raises(ValueError, match="timeout"):
        cn.trust(ANIMALS, timeout=-1.0)


@pytest.mark.parametrize("option", [{"top": 0}, {"beam": 0}])
def test_trust_bad_argument_is_value_error(cn, option):
    """top=0 or beam=0 is a bad argument value, a ValueError like every other bad value (not a
    MatchError, which is for bounds and engines)."""
    with pytest.raises(ValueError, match=f"{next(iter(option))} = 0"):
        cn.trust("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }", **option)


@pytest.mark.parametrize("engine", ["dfs", "kernels", "emulated", "auto"])
def test_cpu_engines_agree(cn, engine):
    assert cn.count(ANIMALS, engine=engine) == ANIMALS_COUNT
    q = "SELECT ?x ?y WHERE { ?x IsA ?y . ?y IsA ?x }"
    assert sorted(cn.query(q, engine=engine)) == sorted(cn.query(q, engine="dfs"))


def _has_gpu() -> bool:
    import ctypes.util

    return ctypes.util.find_library("cuda") is not None


def test_gpu_engine_without_gpu_is_match_error(cn, cli):
    """engine="gpu" where there is no GPU: MatchError saying why, for every call."""
    if _has_gpu():
        # On a machine with a GPU the engine must answer like the CPU does.
        assert cn.count(ANIMALS, engine="gpu") == ANIMALS_COUNT
        return
    for call in (
        lambda: cn.count(ANIMALS, engine="gpu"),
        lambda: cn.query(ANIMALS, engine="gpu").to_list(),
        lambda: list(cn.query(ANIMALS, engine="gpu")),
        lambda: cn.ask(ANIMALS, engine="gpu"),
    ):
        with pytest.raises(gpsense.MatchError) as info:
            call()
        assert "no GPU" in str(info.value)
    # The CLI says the same.
    done = cli("query", "-q", "--engine", "gpu", ANIMALS, check=False)
    assert done.returncode != 0 and "no GPU" in done.stderr
    # engine="auto" falls back to the CPU.
    assert cn.count(ANIMALS, engine="auto") == ANIMALS_COUNT


def test_trust_engines_named_and_checked(cn):
    """trust's engine: an unknown one is a ValueError naming the choices; "gpu" without a GPU a
    MatchError saying why (the CLI's words), twice (the failed opening is kept, not retried)."""
    with pytest.raises(ValueError, match="quantum") as info:
        cn.trust(ANIMALS, engine="quantum")
    assert "auto, cpu, gpu or emulated" in str(info.value)
    if _has_gpu():
        assert cn.trust(ANIMALS, engine="gpu")
        return
    for _ in range(2):
        with pytest.raises(gpsense.MatchError, match='engine="gpu": .*no GPU'):
            cn.trust(ANIMALS, engine="gpu")


DISCONNECTED = "SELECT * WHERE { ?a ?r ?b . ?c ?s ?d }"


@pytest.mark.parametrize("semantics", ["iso", "hom"])
def test_disconnected_query_cartesian_refused(cn, semantics):
    """Rows of a disconnected query whose components multiply past 10^9 are refused up front
    (MatchError naming the product), by to_list(), the DataFrame and iteration alike."""
    for read in (
        lambda r: r.to_list(),
        lambda r: next(iter(r)),
        lambda r: r.to_pandas(),
    ):
        with pytest.raises(gpsense.MatchError) as info:
            read(cn.query(DISCONNECTED, semantics=semantics))
        message = str(info.value)
        assert "disconnected" in message and "1000000000" in message
    # The graph is fine afterwards.
    assert cn.count(ANIMALS) == ANIMALS_COUNT


def test_disconnected_query_with_limit_or_count_allowed(cn):
    """A LIMIT (in the text or limit=) lifts the refusal; count() under hom is the product."""
    assert len(cn.query(DISCONNECTED + " LIMIT 5").to_list()) == 5
    assert len(cn.query(DISCONNECTED, limit=5).to_list()) == 5
    assert cn.count(DISCONNECTED, semantics="hom") == 100_000 * 100_000
    # A small disconnected query is answered: 112 animals times 2 animals at home (hom).
    small = "SELECT * WHERE { ?x IsA animal . ?y AtLocation home . ?y IsA animal }"
    assert cn.count(small, semantics="hom") == ANIMALS_COUNT * 2
    assert len(cn.query(small, semantics="hom").to_list()) == ANIMALS_COUNT * 2
    assert len(cn.query(small, semantics="iso").to_list()) == cn.count(small, semantics="iso")

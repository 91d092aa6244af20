"""Results kept half read, and results shared by threads: a reader that stops reading must hold
nothing another query needs (its stream runs on threads of its own; a query on the device buffers
its rows instead of holding the device), an abandoned result frees what it holds, the number of
streams at once is bounded with a clear error, and threads sharing a result take turns.

What could hang runs in a child interpreter with a time limit, or in a thread joined with one, so
that a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading

import pytest

import gpsense
from conftest import (
    ANIMALS,
    ANIMALS_COUNT,
    HUGE_3HOP,
    HUGE_3HOP_COUNT,
    HUGE_4HOP,
    PATTERN_COMMONSENSE,
    interrupt_during,
)
from test_streaming import no_query_thread_left

#: Two hops, every relation a variable: 1,408,626 matches on ConceptNet-100K (hom, as standard
#: SPARQL; 1,397,937 iso), more than the first try's 100,000 rows, so that reading it streams.
TWO_HOPS = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c }"
TWO_HOPS_COUNT = 1_408_626
#: The most results streaming at once (README, Python).
MAX_STREAMS = 64


def run_child(script: str, timeout: float = 120, env: dict[str, str] | None = None) -> str:
    """Runs `script` in a fresh interpreter (with `env` added to its environment); its stdout. A
    hang is a failure, not a hung suite."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(script)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child hung for {timeout} s; its output: {e.stdout!r} {e.stderr!r}")
    assert done.returncode == 0, f"the child exited {done.returncode}: {done.stderr}"
    return done.stdout


def stalled_then_counted(load: str, query: str, rows: int, engine: str = "auto") -> str:
    """A child that keeps one more half-read result of `query` than there are cores (each read
    `rows` rows, then left), then prints the count of `query`."""
    return f"""
        import itertools, os, gpsense
        g = {load}
        kept = []
        for _ in range((os.cpu_count() or 1) + 1):
            r = g.query({query!r}, engine={engine!r})
            assert sum(1 for _ in itertools.islice(r, {rows})) == {rows}
            kept.append(r)
        print(g.count({query!r}, engine={engine!r}))
    """


# --- results kept half read ----------------------------------------------------------------------


def test_half_read_results_do_not_stall_later_queries():
    """Issue 27: more results kept half read (200,000 rows each) than there are cores used to hang
    every later query for good: each stalled producer held a thread of the shared pool. Now each
    stream has threads of its own, and the later count runs."""
    script = stalled_then_counted("gpsense.Graph.default()", HUGE_3HOP, 200_000)
    script += """
        print(sorted(g.query("SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }")))
    """
    count, rows = run_child(script).splitlines()
    assert int(count) == HUGE_3HOP_COUNT
    assert rows == "[('kitten',), ('lizard',)]"


def test_half_read_result_on_the_device_does_not_hold_it():
    """A stream on the device (the emulator here) used to wait for its reader holding the device,
    which runs one query at a time: the next query on it waited forever. That takes an answer of
    more batches than the channel holds, so the emulated device reports 8 MiB free (batches of a
    few MiB). Its rows are buffered for the reader now, and the device is free once they are
    found."""
    script = stalled_then_counted("gpsense.Graph.default()", TWO_HOPS, 1_000, "emulated")
    out = run_child(script, env={"GPSENSE_EMULATOR_FREE": "8M"})
    assert int(out.splitlines()[0]) == TWO_HOPS_COUNT


def test_half_read_result_on_a_compressed_graph(cli, tmp_path):
    """A compressed graph expands its matches on a pool of its own, shared by its queries: one
    stalled stream held all of it, and every later query on the graph hung."""
    snapshot, compressed = tmp_path / "pattern.gps", tmp_path / "pattern.gpsc"
    gpsense.Graph.ingest(PATTERN_COMMONSENSE).save(snapshot)
    cli("compress", snapshot, "-o", compressed)
    g = gpsense.Graph.load(compressed)
    query = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e }"
    expected = g.count(query)
    assert expected > 100_000  # more than a first try takes: reading it streams
    load = f"gpsense.Graph.load({str(compressed)!r})"
    assert int(run_child(stalled_then_counted(load, query, 1_000)).splitlines()[0]) == expected


#: For child scripts: `g`, the default graph; `threads()`, the child's streaming query threads;
#: `down_to(n)`, whether they come down to `n` within 5 s.
CHILD_PRELUDE = """
    import os, time, gpsense
    g = gpsense.Graph.default()
    def threads():
        n = 0
        for task in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{task}/comm") as f:
                    n += f.read().strip() == "gpsense-query"
            except OSError:
                pass
        return n
    def down_to(n):
        deadline = time.monotonic() + 5
        while threads() > n and time.monotonic() < deadline:
            time.sleep(0.02)
        return threads() == n
"""


def test_dropped_and_closed_results_free_their_threads():
    """Abandoned results free what they hold: `close()`, leaving a `with` block or `del` stops the
    query thread, and a closed result reads as ended. (In a child: three streams kept half read
    hung the old code on 2 cores.)"""
    script = CHILD_PRELUDE + f"""
    kept = []
    for _ in range(3):
        r = g.query({HUGE_3HOP!r})
        next(r)
        kept.append(r)
    assert threads() == 3, threads()
    kept[0].close()
    assert down_to(2)
    assert list(kept[0]) == [] and "read" in repr(kept[0]), repr(kept[0])
    with kept[1] as r:
        assert len(next(r)) == 7
    assert down_to(1)
    del kept[:], r
    assert down_to(0)
    print(g.count({ANIMALS!r}))
    """
    assert run_child(script).strip() == str(ANIMALS_COUNT)


def test_streams_at_once_are_bounded_with_a_clear_error():
    """At most 64 results stream at once (each holds threads of its own): the 65th raises a
    MatchError saying so and what to do; once one is closed, the same result starts. Results
    answered by their first try (small answers) and to_list() are not streams, and not counted."""
    script = CHILD_PRELUDE + f"""
    kept = []
    for _ in range({MAX_STREAMS}):
        r = g.query({HUGE_3HOP!r})
        next(r)
        kept.append(r)
    extra = g.query({HUGE_3HOP!r})
    try:
        next(extra)
    except gpsense.MatchError as e:
        print(e)
    else:
        raise AssertionError("a stream beyond the bound started")
    # Small answers and counts still work meanwhile.
    assert g.count({ANIMALS!r}) == {ANIMALS_COUNT}
    assert len(g.query({ANIMALS!r}).to_list()) == {ANIMALS_COUNT}
    kept.pop().close()
    assert len(next(extra)) == 7
    del kept[:], extra, r
    assert down_to(0)
    """
    message = run_child(script)
    assert f"{MAX_STREAMS} query results are being streamed at once" in message
    assert "close()" in message and "to_list()" in message


# --- threads sharing a result --------------------------------------------------------------------


def test_threads_sharing_a_result_take_turns(cn):
    """Two threads iterating one result used to get PyO3's "Already mutably borrowed". Now their
    calls take turns: each row goes to one thread, none is lost or repeated."""
    r = cn.query(TWO_HOPS)
    got: dict[str, list] = {"a": [], "b": []}
    errors: list[BaseException] = []

    def read(name: str) -> None:
        try:
            for row in r:
                got[name].append(row)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=read, args=(n,)) for n in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread reading the shared result hangs"
    assert not errors, errors
    rows = got["a"] + got["b"]
    assert len(rows) == TWO_HOPS_COUNT == len(set(rows))
    assert got["a"] and got["b"], "one thread got every row"


# --- a result cut short stays cut short ----------------------------------------------------------


def test_timed_out_result_keeps_raising(cn):
    """Rows that ran out of time never pass for the whole answer: after QueryTimeout, every later
    read of the result raises it again (it used to end quietly, as a complete answer does)."""
    r = cn.query(HUGE_4HOP, timeout=0.2)
    with pytest.raises(gpsense.QueryTimeout):
        for _ in r:
            pass
    with pytest.raises(gpsense.QueryTimeout):
        next(r)
    with pytest.raises(gpsense.QueryTimeout) as info:
        r.to_list()
    assert info.value.partial == []
    assert "cut short" in repr(r)


def test_threads_sharing_a_timed_out_result_all_see_it(cn):
    """Two threads reading one result past its time limit: both get QueryTimeout, neither a quiet
    end."""
    r = cn.query(HUGE_4HOP, timeout=0.3)
    seen: list[object] = []

    def read() -> None:
        try:
            for _ in r:
                pass
            seen.append("end")
        except gpsense.QueryTimeout:
            seen.append("timeout")

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert seen == ["timeout", "timeout"]


def test_interrupted_result_does_not_end_quietly(cn):
    """A Ctrl-C while waiting for rows stops the stream's query; reading the result again then
    raises a MatchError saying so, not a quiet end. (The filter passes no row: the reader waits.)"""
    r = cn.query(HUGE_4HOP.replace(" }", " FILTER(?a != ?a) }"), timeout=20)
    seen = interrupt_during(lambda: next(r), delay=0.3)
    assert seen.interrupted, f"no KeyboardInterrupt; the call gave {seen.outcome!r}"
    with pytest.raises(gpsense.MatchError, match="Ctrl-C stopped this result's query"):
        next(r)
    assert no_query_thread_left()

"""Shared fixtures of gpsense's Python tests: the graphs (loaded once per session), the CLI binary,
and helpers for queries that run long on purpose.

Paths are resolved from the repository root (three levels above this folder), so the suite runs
from any working directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

import gpsense

REPO_ROOT = Path(__file__).resolve().parents[3]
DATASETS = REPO_ROOT / "datasets"
WORDNET_FILES = [
    DATASETS / "wordnet30" / "wn30_synset.nodes.tsv.gz",
    DATASETS / "wordnet30" / "wn30_synset.lemmas.tsv.gz",
    DATASETS / "wordnet30" / "wn30_synset.edges.tsv.gz",
]
CONCEPTNET5_SAMPLE = DATASETS / "conceptnet5-sample" / "assertions.csv"
PATTERN_COMMONSENSE = DATASETS / "pattern-commonsense" / "commonsense.csv"
RUSSIAN_CONCEPTNET = DATASETS / "russian-conceptnet" / "edges.tsv.gz"
HPRD_GRAPH = DATASETS / "subgraph-matching" / "hprd-study" / "data_graph" / "HPRD.graph"

#: Three hops with every relation a variable: 14,493,796 matches on ConceptNet-100K (hom: a query
#: of variables only parses as standard SPARQL; 13,642,935 iso), about 2 s to count on 2 cores, far
#: longer to read from Python.
HUGE_3HOP = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d }"
HUGE_3HOP_COUNT = 14_493_796
#: Four hops: 141,546,928 matches iso (more hom), about 20 s to count on 2 cores. Used where a query must still be
#: running when something (a time limit, a SIGINT) stops it.
HUGE_4HOP = "SELECT * WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e }"

#: A small query with a known answer, to check that a graph still works.
ANIMALS_AT_HOME = "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"
ANIMALS_AT_HOME_ROWS = [("kitten",), ("lizard",)]
ANIMALS = "SELECT ?x WHERE { ?x IsA animal }"
ANIMALS_COUNT = 112

#: A tiny graph in the triples format of ConceptNet-100K (relation, head, tail).
TINY_TSV = (
    "IsA\tdog\tanimal\n"
    "IsA\tcat\tanimal\n"
    "IsA\tpuppy\tdog\n"
    "HasA\tdog\ttail\n"
    "HasA\tcat\ttail\n"
    "PartOf\ttail\tdog\n"
)
TINY_NODES = {"dog", "cat", "puppy", "animal", "tail"}
TINY_EDGES = {
    ("dog", "IsA", "animal"),
    ("cat", "IsA", "animal"),
    ("puppy", "IsA", "dog"),
    ("dog", "HasA", "tail"),
    ("cat", "HasA", "tail"),
    ("tail", "PartOf", "dog"),
}


@pytest.fixture(scope="session")
def cn() -> gpsense.Graph:
    """The embedded ConceptNet-100K, shared by the whole session."""
    return gpsense.Graph.default()


@pytest.fixture(scope="session")
def wordnet() -> gpsense.Graph:
    """WordNet 3.0 (synsets, lemmas as names, edges), ingested once."""
    return gpsense.Graph.ingest([str(p) for p in WORDNET_FILES])


@pytest.fixture(scope="session")
def wordnet_snapshot(wordnet, tmp_path_factory) -> Path:
    """WordNet written by ``Graph.save``, for ``Graph.load`` and the CLI's ``--graph``."""
    path = tmp_path_factory.mktemp("wordnet") / "wn30.gps"
    wordnet.save(path)
    return path


@pytest.fixture(scope="session")
def russian() -> gpsense.Graph:
    """The Russian part of ConceptNet 5.7 (Cyrillic names), ingested once."""
    return gpsense.Graph.ingest(RUSSIAN_CONCEPTNET)


@pytest.fixture(scope="session")
def russian_snapshot(russian, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("russian") / "ru.gps"
    russian.save(path)
    return path


@pytest.fixture(scope="session")
def tiny_tsv(tmp_path_factory) -> Path:
    """A six-edge triples file."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.tsv"
    path.write_text(TINY_TSV)
    return path


@pytest.fixture(scope="session")
def tiny(tiny_tsv) -> gpsense.Graph:
    return gpsense.Graph.ingest(tiny_tsv)


@pytest.fixture(scope="session")
def gpsense_bin() -> Path:
    """The CLI binary (``GPSENSE_BIN``, default ``target/release/gpsense``); missing is a failure."""
    path = Path(os.environ.get("GPSENSE_BIN", REPO_ROOT / "target" / "release" / "gpsense"))
    if not path.is_absolute():
        path = REPO_ROOT / path
    if not (path.is_file() and os.access(path, os.X_OK)):
        pytest.fail(
            f"the gpsense CLI is not at {path}: build it with "
            f"`cargo build --release -p gpsense-cli` in {REPO_ROOT}, or point GPSENSE_BIN at it"
        )
    return path


@pytest.fixture(scope="session")
def cli(gpsense_bin):
    """Runs the CLI with arguments; returns the CompletedProcess (text mode)."""

    def run(*args: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
        done = subprocess.run(
            [str(gpsense_bin), *map(str, args)],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=REPO_ROOT,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"gpsense {' '.join(map(str, args))} exited {done.returncode}: {done.stderr}"
            )
        return done

    return run


def query_threads() -> int:
    """How many of the process's threads (Linux) are gpsense's streaming query threads (named
    `gpsense-query`)."""
    n = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as f:
                n += f.read().strip() == "gpsense-query"
        except (FileNotFoundError, ProcessLookupError):  # the thread just ended
            pass
    return n


class Interrupted:
    """What ``interrupt_during`` saw: whether ``KeyboardInterrupt`` reached the call, how long the
    call ran, and what it returned or raised otherwise."""

    def __init__(self) -> None:
        self.interrupted = False
        self.elapsed = 0.0
        self.outcome: object = None
        self.late = False


def interrupt_during(call, delay: float = 0.3) -> Interrupted:
    """Runs ``call()`` on the main thread while a helper thread sends this process a real SIGINT
    after ``delay`` seconds. Never lets the KeyboardInterrupt escape into pytest: one that arrives
    after ``call`` returned is caught here too (``late``)."""
    assert threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    seen = Interrupted()
    sent = threading.Event()

    def fire() -> None:
        time.sleep(delay)
        os.kill(os.getpid(), signal.SIGINT)
        sent.set()

    helper = threading.Thread(target=fire, daemon=True)
    start = time.monotonic()
    try:
        helper.start()
        try:
            seen.outcome = call()
        except KeyboardInterrupt:
            seen.interrupted = True
        except Exception as e:  # noqa: BLE001 - reported by the test
            seen.outcome = e
        seen.elapsed = time.monotonic() - start
        # A SIGINT still on its way must land here, not in pytest.
        try:
            sent.wait(10)
            for _ in range(20):
                time.sleep(0.01)
        except KeyboardInterrupt:
            seen.late = True
        helper.join(10)
    finally:
        signal.signal(signal.SIGINT, previous)
    return seen

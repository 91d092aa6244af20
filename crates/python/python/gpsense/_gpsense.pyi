"""Type stubs of gpsense's native module (``gpsense._gpsense``); import from ``gpsense``."""

from __future__ import annotations

import os
from typing import Any, Iterator, Literal, Sequence

from ._errors import GpsenseError

__version__: str

Semantics = Literal["iso", "hom"]
Engine = Literal["auto", "dfs", "kernels", "gpu", "emulated"]
StrPath = str | os.PathLike[str]

class Graph:
    """A knowledge graph: concepts joined by relations (a directed, edge-labelled graph), ready to
    answer queries. Open one with ``Graph.load(path)``, ``Graph.ingest(paths)`` or
    ``Graph.default()``."""

    @staticmethod
    def load(path: StrPath) -> Graph:
        """Opens a snapshot (``gpsense ingest -o``), a compressed graph (``.gpsc``), or any file
        ``ingest`` reads (ConceptNet CSV, triples TSV, N-Triples, Turtle, KGTK, ...), ingested with
        the default options. Raises ``GraphError``."""

    @staticmethod
    def default() -> Graph:
        """The embedded default graph: ConceptNet-100K (CC BY-SA 4.0, Li et al. 2016)."""

    @staticmethod
    def ingest(
        paths: StrPath | Sequence[StrPath],
        *,
        format: str | None = None,
        columns: Literal["hrt", "rht"] | None = None,
        languages: Sequence[str] | None = None,
        strip_pos: bool = False,
        on_error: Literal["fail", "skip"] = "fail",
        max_line_bytes: int | None = None,
    ) -> Graph:
        """Ingests text files into a graph, with the options of ``gpsense ingest``: ``format``
        (detected when None), ``columns`` (triples TSV), ``languages`` and ``strip_pos``
        (ConceptNet), ``on_error`` ("skip" drops malformed lines with a warning) and
        ``max_line_bytes`` (longer lines are malformed; default 1 MiB). Raises ``GraphError``."""

    def save(self, path: StrPath) -> None:
        """Writes the graph as a snapshot that ``Graph.load`` (and the CLI) open in milliseconds; a
        compressed graph is written as a ``.gpsc``. Atomic: a temporary file, then a rename."""

    def __len__(self) -> int:
        """The number of edges (triples)."""

    def info(self) -> dict[str, Any]:
        """What the graph holds, as ``gpsense info`` reports it: ``origin``, ``nodes``,
        ``edges``, ``relations``, ``node_labels``, ``weighted``, ``aliases``, ``compressed``,
        ``load_ms`` and ``edges_by_relation``."""

    def summary(self, top_relations: int = 20) -> str:
        """The text ``gpsense info`` prints."""

    def relations(self) -> list[str]:
        """The relation names, most used first."""

    def query(
        self,
        text: str,
        semantics: Semantics | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        engine: Engine = "auto",
    ) -> QueryResult:
        """Answers a query (gpsense's short SPARQL with bare names, or standard SPARQL 1.1) and
        returns its rows, streamed as they are found. A text that parses as standard SPARQL is
        standard (as the CLI and the endpoint read it); OPTIONAL, UNION, paths, aggregates, BIND,
        VALUES, subqueries, CONSTRUCT and DESCRIBE are answered by the full evaluator, whole on the
        first read: names as strings, ``None`` for an unbound value, ``(subject, predicate,
        object)`` rows for CONSTRUCT and DESCRIBE. A standard query naming what the graph lacks
        answers empty with a ``UserWarning`` carrying the suggestion.

        ``semantics``: "iso" (subgraph isomorphism) or "hom" (as SPARQL); None: iso, except a
        standard SPARQL query, whose semantics are its own (the full evaluator's is always hom). ``limit``: at most this many rows.
        ``timeout``: seconds; past it, reading the rows raises ``QueryTimeout``. ``engine``:
        "auto" (a GPU when present, else the CPU), "dfs", "kernels", "gpu" or "emulated".
        Raises ``QueryError`` (with ``line`` and ``column``) for a query that does not parse or
        names what the graph lacks."""

    def count(
        self,
        text: str,
        semantics: Semantics | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        engine: Engine = "auto",
    ) -> int:
        """The number of matches (or of solutions, with FILTERs), counted without materialising
        them. Raises ``QueryTimeout`` (``partial``: the count so far) at the time limit."""

    def count_many(
        self,
        texts: Sequence[str],
        semantics: Semantics | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        engine: Engine = "auto",
        batch: int = 256,
    ) -> list[int | GpsenseError]:
        """Each query's count as ``count`` gives it, in the order of ``texts``, or its own error as
        an exception object (returned, not raised: ``QueryError``, ``MatchError``,
        ``QueryTimeout`` with its ``partial`` count). On ``"gpu"`` or ``"emulated"``, or
        ``"auto"`` where it picks a GPU, the queries counted whole (no FILTER) go ``batch`` at a
        time to the device, each batch one sequence of launches; ``limit`` and ``timeout`` hold per
        query (the timeout counted from its batch's start)."""

    def query_many(
        self,
        texts: Sequence[str],
        semantics: Semantics | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        engine: Engine = "auto",
        batch: int = 256,
    ) -> list[QueryResult | GpsenseError]:
        """Each query's result as ``query`` gives it, in the order of ``texts``, or its own error
        as an exception object (returned, not raised). The SELECT (no FILTER, OFFSET or ORDER BY)
        and COUNT(*) (no FILTER) queries over a basic graph pattern are answered ``batch`` at a
        time before this returns, on ``"gpu"`` or ``"emulated"``, or ``"auto"`` where it picks a
        GPU each batch one sequence of launches; their rows are held in their results (at most
        2^24 values in all; a query past that is answered again alone when its result is read).
        The others are answered when read, streaming. ``limit`` and ``timeout`` hold per query (the timeout counted from
        its batch's start); a result the time limit cut short raises ``QueryTimeout`` after its
        rows, as ``query``'s does."""

    def ask(
        self,
        text: str,
        semantics: Semantics | None = None,
        timeout: float | None = None,
        engine: Engine = "auto",
    ) -> bool:
        """Whether the query has a match (an ASK query, or any pattern)."""

    def explain(
        self,
        text: str,
        semantics: Semantics | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        engine: Engine = "auto",
    ) -> dict[str, Any]:
        """Runs the query (counting its matches) and returns what ``gpsense query --explain``
        prints, as a dict: ``dialect``, ``semantics``, ``engine``, ``device``, ``fallback``,
        ``plan`` and ``join_plan`` (the planner's reasons), ``candidates`` (per query node:
        ``after_filter``, ``after_refine``), ``edge_candidates``, ``times_ms`` (per phase),
        ``matches``, ``timed_out``, ``limit_reached``, and ``text`` (the CLI's report). A query
        the full evaluator answers gives ``evaluator`` ("algebra"), ``dialect``, ``semantics``,
        ``engine``, ``patterns`` and ``pattern_rows`` (what the matcher answered inside),
        ``declined``, ``unknown`` (names the graph lacks), ``times_ms`` (``total``), ``matches``,
        ``timed_out`` and ``text``."""

    def trust(
        self,
        text: str,
        top: int = 10,
        beam: int = 128,
        *,
        alpha: float = 0.5,
        relation_weight: float = 0.5,
        threshold: float = 0.5,
        timeout: float | None = None,
        engine: str = "auto",
    ) -> list[TrustMatch]:
        """TruST's approximate matching: the ``top`` best near matches of the query, whose
        concepts may be misspelt or absent, ranked by name similarity and topology (``beam``
        branches kept per level). ``alpha``: weight of the name similarity in the one-hop score;
        ``relation_weight``: share of an edge's score that needs its relation; ``threshold``:
        names less similar count as dissimilar. ``engine``: ``"auto"`` (the GPU when one is
        found, else the CPU; a GPU failing mid-search warns and answers on the CPU), ``"cpu"``,
        ``"gpu"`` (``MatchError`` without one) or ``"emulated"`` (the GPU's kernels run on the
        CPU); all give the same ranked answer."""

    def to_networkx(
        self, nodes: Sequence[str] | None = None, max_edges: int = 100_000
    ) -> Any:
        """The graph, or the subgraph among ``nodes`` (names), as a ``networkx.MultiDiGraph`` with
        ``relation`` and ``weight`` on each edge. Refused (``GraphError``) beyond ``max_edges``
        edges. Needs networkx."""

class QueryResult:
    """The rows of a query, as tuples of names (a relation's name for an edge variable; ``None``
    for a value OPTIONAL left unbound). Iterating
    streams them as the engine finds them; breaking off, ``close()``, leaving a ``with`` block or
    dropping the result stops the query. ``to_list()``, ``to_pandas()`` and ``to_arrow()`` take all
    rows at once. A result is read once; threads sharing one take turns, each row going to one of
    them. A result cut short after rows were handed out (``QueryTimeout``, Ctrl-C, an error) raises
    again on every later read. At most 64 results stream at once (``MatchError`` beyond)."""

    @property
    def variables(self) -> list[str]:
        """The projected variables, without ``?``, in column order."""

    def __iter__(self) -> Iterator[tuple[Any, ...]]: ...
    def __next__(self) -> tuple[Any, ...]: ...
    def to_list(self) -> list[tuple[Any, ...]]:
        """Every row (the rest of them, if some were read). Raises ``MatchError`` when the rows
        exceed the memory budget, ``QueryTimeout`` (``partial``: the rows so far) at the time
        limit."""

    def to_pandas(self) -> Any:
        """The rows as a ``pandas.DataFrame``, one column per variable. Needs pandas."""

    def to_arrow(self) -> Any:
        """The rows as a ``pyarrow.Table``, one column per variable. Needs pyarrow."""

    def close(self) -> None:
        """Stops the query and frees what it holds; later reads find no more rows (or the error
        that had cut the result short)."""

    def __enter__(self) -> QueryResult: ...
    def __exit__(self, kind: object, value: object, traceback: object) -> bool: ...

class TrustMatch:
    """One near match found by ``Graph.trust``."""

    score: float
    """In [0, 1]; 1 for an exact embedding."""
    resembling: int
    """How many concepts match their data node by name (similarity at least ``threshold``):
    matches rank by this first, then by ``score``."""
    nodes: dict[str, str]
    """The data node matched to each query node (``?x`` for a variable)."""
    node_agreement: dict[str, tuple[float, float]]
    """Per query node: the name similarity and the one-hop score."""
    edge_agreement: list[dict[str, Any]]
    """Per query edge: ``source``, ``relation`` (None for a variable), ``target``, ``found``
    ("exact", "other_relation", "reversed" or "missing"), ``data_relation`` and ``score``."""

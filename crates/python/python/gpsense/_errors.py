"""The exceptions gpsense raises. Each carries the message the ``gpsense`` CLI prints."""

from __future__ import annotations


class GpsenseError(Exception):
    """Base class of every gpsense error."""


class GraphError(GpsenseError):
    """A graph could not be loaded, ingested, saved or converted (the message names the file and
    the problem)."""


class QueryError(GpsenseError, ValueError):
    """A query does not parse, or names what the graph lacks.

    ``line`` and ``column`` (1-based) locate the problem when it has a place in the text; the
    message then shows that line with a caret under the column, as the CLI does.
    """

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


class MatchError(GpsenseError):
    """A query could not be answered within its bounds (memory budget, result explosion), or the
    engine asked for is not available (``engine="gpu"`` without a GPU)."""


class QueryTimeout(GpsenseError, TimeoutError):
    """The time limit (``timeout=`` seconds) stopped the query. ``partial`` holds what was found by
    then: the count so far for ``count()``, the rows so far for ``to_list()``, ``None`` where the
    rows were already handed out (iteration)."""

    def __init__(self, message: str, partial: object = None):
        super().__init__(message)
        self.partial = partial

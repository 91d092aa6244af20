#!/usr/bin/env python3
"""Oxigraph's side of the SPARQL algebra measurement (`cargo xtask bench --only sparql`), in-process.

    sparql_peer.py NTRIPLES QUERIES RUNS

Loads NTRIPLES (the embedded ConceptNet-100K as `gpsense dump` writes it) into an in-memory
pyoxigraph Store once, prints `{"ready": true, "load_seconds": s, "version": v}`, then one JSON line
per query of QUERIES (the query set format of benches/src/sparql_set.rs: each query starts at a
line `#@ NAME CLASS`):
    {"name": ..., "class": ..., "status": "ok", "rows": n, "digest": hex, "seconds": [t, ...]}
    {"name": ..., "class": ..., "status": "error", "message": "..."}
Each query runs once untimed (warm-up, and the digest of its answer), then up to RUNS timed runs
(fewer once they took 2 s in all) that iterate over every row, as gpsense's side does
(benches/examples/sparql_algebra.rs computes the same digest: FNV-1a over the sorted rows, terms
in N-Triples form joined by tabs, an unbound value empty).
"""

import json
import sys
import time

RUN_BUDGET_S = 2.0


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def parse_set(text):
    queries = []
    for line in text.splitlines():
        if line.startswith("#@"):
            words = line[2:].split()
            if len(words) != 2:
                raise ValueError(f"bad query header {line!r}")
            queries.append({"name": words[0], "class": words[1], "lines": []})
        elif queries:
            queries[-1]["lines"].append(line)
    for q in queries:
        q["text"] = "\n".join(q.pop("lines")).strip()
    return queries


def digest(rows):
    """FNV-1a 64 over the sorted rows (each a list of N-Triples terms or None)."""
    lines = sorted("\t".join("" if t is None else t for t in row) for row in rows)
    h = 0xCBF29CE484222325
    for line in lines:
        for b in line.encode() + b"\n":
            h ^= b
            h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def answer_rows(ox, result):
    """Every row of a result as N-Triples terms (None for unbound)."""
    if isinstance(result, bool):
        return [["true" if result else "false"]]
    if isinstance(result, ox.QuerySolutions):
        width = len(result.variables)
        return [[None if row[i] is None else str(row[i]) for i in range(width)] for row in result]
    return [[str(t.subject), str(t.predicate), str(t.object)] for t in result]


def consume(result):
    """Iterates over every row (the timed runs); returns how many."""
    if isinstance(result, bool):
        return 1
    n = 0
    for _ in result:
        n += 1
    return n


def main():
    nt, queries_file, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import pyoxigraph as ox

    with open(queries_file) as f:
        queries = parse_set(f.read())
    t = time.perf_counter()
    store = ox.Store()
    with open(nt, "rb") as f:
        store.bulk_load(f.read(), ox.RdfFormat.N_TRIPLES)
    emit({"ready": True, "load_seconds": time.perf_counter() - t, "version": ox.__version__})
    for q in queries:
        base = {"name": q["name"], "class": q["class"]}
        try:
            rows = answer_rows(ox, store.query(q["text"]))
            seconds = []
            while len(seconds) < max(runs, 1) and sum(seconds) < RUN_BUDGET_S:
                t = time.perf_counter()
                consume(store.query(q["text"]))
                seconds.append(time.perf_counter() - t)
            emit({**base, "status": "ok", "rows": len(rows), "digest": digest(rows), "seconds": seconds})
        except Exception as e:  # the peer's own error, reported per query
            emit({**base, "status": "error", "message": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()

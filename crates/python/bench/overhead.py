"""The Python package's overhead per query against the Rust API's, on the common-sense set: the
50 generated 6-node queries of the `matching` bench on the embedded ConceptNet-100K.

    cargo build --release -p gpsense-benches --example python_overhead
    python crates/python/bench/overhead.py [--reps 200]

runs the Rust side (`benches/examples/python_overhead.rs`: prepare and match through the `gpsense`
library, rows as Strings), then the same queries from Python (`g.count`, `g.query().to_list()`,
and `list(g.query())`, which streams from a query thread), each timed warm as the median of
`--reps` runs; the two sides alternate `--rounds` times and each keeps its best median, and it
prints the ratios as the README's table.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gpsense

ROOT = Path(__file__).resolve().parents[3]


def median_us(reps: int, f) -> float:
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter_ns()
        f()
        times.append((time.perf_counter_ns() - start) / 1e3)
    return statistics.median(times)


def rust_side(binary: str, reps: int) -> list[list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        tsv = Path(tmp) / "rust.tsv"
        subprocess.run([binary, str(tsv), str(reps)], check=True)
        return [line.split("\t", 4) for line in tsv.read_text().splitlines()]


def python_side(g: gpsense.Graph, queries: list[list[str]], reps: int) -> list[tuple]:
    out = []
    for count_us, rows_us, matches, n_rows, text in queries:
        assert g.count(text) == int(matches), text
        py_count = median_us(reps, lambda: g.count(text))
        if rows_us == "NaN":  # too many rows to hold: timed for the count only
            out.append((py_count, None, None))
            continue
        assert len(g.query(text).to_list()) == int(n_rows), text
        py_list = median_us(reps, lambda: g.query(text).to_list())
        py_iter = median_us(reps, lambda: list(g.query(text)))
        out.append((py_count, py_list, py_iter))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3, help="alternate the two sides this many times")
    ap.add_argument(
        "--rust",
        default=str(ROOT / "target/release/examples/python_overhead"),
        help="the Rust side's binary",
    )
    args = ap.parse_args()
    g = gpsense.Graph.default()
    # Per query and call, the best median over the rounds on each side: the rounds alternate the
    # sides, so a burst of load elsewhere on the machine hits one round, not one side.
    best_rust: list[list[float]] | None = None
    best_py: list[list[float]] | None = None
    for _ in range(args.rounds):
        queries = rust_side(args.rust, args.reps)
        rust = [[float(q[0]), float(q[1])] for q in queries]
        py = [list(t) for t in python_side(g, queries, args.reps)]
        if best_rust is None:
            best_rust, best_py = rust, py
            meta = queries
            continue
        for b, r in zip(best_rust, rust):
            b[:] = [min(x, y) for x, y in zip(b, r)]
        for b, p in zip(best_py, py):
            b[:] = [x if y is None else min(x, y) for x, y in zip(b, p)]

    def summary(name: str, rust: list[float], py: list[float]) -> None:
        ratios = sorted(p / r for r, p in zip(rust, py))
        print(
            f"| {name} | {len(ratios)} | {statistics.median(rust):.1f} us | "
            f"{statistics.median(py):.1f} us | {statistics.median(ratios):.3f} | "
            f"{ratios[len(ratios) * 9 // 10]:.3f} | {sum(py) / sum(rust):.3f} |"
        )

    with_rows = [i for i, q in enumerate(meta) if q[1] != "NaN"]
    print(f"{len(meta)} queries, {args.reps} runs each, best median of {args.rounds} alternating rounds")
    print("| call | queries | Rust API, median | Python, median | Python / Rust per query: median | 90th percentile | sum of times |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    summary("`g.count(text)`", [r[0] for r in best_rust], [p[0] for p in best_py])
    rust_rows = [best_rust[i][1] for i in with_rows]
    summary("`g.query(text).to_list()`", rust_rows, [best_py[i][1] for i in with_rows])
    summary("`list(g.query(text))` (iteration)", rust_rows, [best_py[i][2] for i in with_rows])
    n_rows = [int(meta[i][3]) for i in with_rows]
    print(f"rows per query (the {len(with_rows)} with at most 100,000): median {statistics.median(n_rows)}, max {max(n_rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

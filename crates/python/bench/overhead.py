"""The Python package's overhead per query against the Rust API's, on the common-sense set: the
50 generated 6-node queries of the `matching` bench on the embedded ConceptNet-100K.

    cargo build --release -p gpsense-benches --example python_overhead
    python crates/python/bench/overhead.py [--reps 200]

runs the Rust side (`benches/examples/python_overhead.rs`: prepare and match through the `gpsense`
library, rows as Strings), then the same queries from Python (`g.count`, `g.query().to_list()`,
and `list(g.query())`, which streams from a query thread), each timed warm as the median of
`--reps` runs, the two sides one after the other on the same machine, and prints the ratios.
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument(
        "--rust",
        default=str(ROOT / "target/release/examples/python_overhead"),
        help="the Rust side's binary",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tsv = Path(tmp) / "rust.tsv"
        subprocess.run([args.rust, str(tsv), str(args.reps)], check=True)
        lines = tsv.read_text().splitlines()
    g = gpsense.Graph.default()
    rows, counts_only = [], []
    for line in lines:
        count_us, rows_us, matches, n_rows, text = line.split("\t", 4)
        assert g.count(text) == int(matches), text
        py_count = median_us(args.reps, lambda: g.count(text))
        if rows_us == "NaN":  # too many rows to hold: timed for the count only
            counts_only.append((float(count_us), py_count))
            continue
        assert len(g.query(text).to_list()) == int(n_rows), text
        py_list = median_us(args.reps, lambda: g.query(text).to_list())
        py_iter = median_us(args.reps, lambda: list(g.query(text)))
        rows.append((float(count_us), py_count, float(rows_us), py_list, py_iter, int(n_rows)))

    def summary(name: str, rust: list[float], py: list[float]) -> None:
        ratios = [p / r for r, p in zip(rust, py)]
        print(
            f"{name:<28} Rust median {statistics.median(rust):8.1f} us, Python median "
            f"{statistics.median(py):8.1f} us; per-query ratio median "
            f"{statistics.median(ratios):.3f}, p90 {sorted(ratios)[len(ratios) * 9 // 10]:.3f}; "
            f"sum ratio {sum(py) / sum(rust):.3f}"
        )

    print(f"{len(rows) + len(counts_only)} queries, {args.reps} runs each, medians")
    counted = [(r[0], r[1]) for r in rows] + counts_only
    summary("count", [c[0] for c in counted], [c[1] for c in counted])
    print(f"rows: the {len(rows)} queries with at most 100,000 matches")
    summary("rows: to_list()", [r[2] for r in rows], [r[3] for r in rows])
    summary("rows: list(iteration)", [r[2] for r in rows], [r[4] for r in rows])
    print(f"rows per query: median {statistics.median(r[5] for r in rows)}, max {max(r[5] for r in rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Scale-out measurements for the README: `gpsense query --processes P` on loopback.

For each graph (a snapshot, or a triples file ingested first) and P in --parts, it cuts the graph
with `gpsense partition`, starts P processes of one worker each, and records per process the
part's in-memory bytes, its resident memory once loaded (the process's note) and its peak resident
memory (`/usr/bin/time -f %M`, which includes the part file read during the load), and the bytes it
sent and received; per query and P, process 0's query time (name lookups, filtering and join), and the
same with starting the cluster (threads, connections: what a one-shot command pays; not the load),
the median of --runs. The single-process engine
(`gpsense query --graph G`) is run beside it for reference. Prints a markdown report.

    cargo build --release
    python3 benches/dist/scaling.py --graph cn100k=datasets/conceptnet-100k/train.txt.gz \
        --graph cn10x=/tmp/cn10x.txt --parts 1 2 4 --runs 3

Numbers from one run are compared with each other only: the machine is shared and noisy.
"""

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time

QUERIES = [
    # anchored: the README's first query
    ("anchored-2", "iso", "SELECT ?x WHERE { ?x IsA animal . ?x AtLocation home }"),
    # anchored, three hops from a concept
    ("anchored-3hop", "hom", "SELECT * WHERE { ?a IsA animal . ?a ?r ?b . ?b ?s ?c }"),
    # unanchored: every IsA triangle
    ("triangle", "hom", "SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?a IsA ?c }"),
    # unanchored: two hops over relations given
    ("path-2", "hom", "SELECT * WHERE { ?a AtLocation ?b . ?b PartOf ?c }"),
]

NOTE_PART = re.compile(r"([\d,.]+) MB in memory")
NOTE_RESIDENT = re.compile(r"process resident: ([\d,.]+) MB")
NOTE_TRAFFIC = re.compile(r"sent ([\d,]+) and received ([\d,]+) bytes")
NOTE_DONE = re.compile(r"^(?:[\d,]+ (?:match|row)(?:es|s)?|yes|no)\b.*? in ([\d.]+) (ms|s)\b"
                       r"(?: \(([\d.]+) (ms|s) with starting the cluster\))?", re.M)


def num(s):
    return float(s.replace(",", ""))


def seconds(value, unit):
    return float(value) / (1000 if unit == "ms" else 1)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def timed(cmd):
    """Runs cmd under /usr/bin/time; returns (stdout, stderr, peak RSS in MB, seconds)."""
    start = time.monotonic()
    p = subprocess.Popen(
        ["/usr/bin/time", "-f", "RSS_KB=%M"] + cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return p, start


def collect(p, start, limit):
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise SystemExit(f"timed out: {p.args}\n{err}")
    secs = time.monotonic() - start
    m = re.search(r"RSS_KB=(\d+)", err)
    rss = int(m.group(1)) / 1024 if m else float("nan")
    if p.returncode != 0:
        raise SystemExit(f"failed ({p.returncode}): {p.args}\n{err}")
    return out, err, rss, secs


def single(gpsense, graph, q, sem, limit):
    p, start = timed([gpsense, "query", q, "--graph", graph, "--semantics", sem, "--count"])
    out, err, rss, secs = collect(p, start, limit)
    done = NOTE_DONE.search(err)
    if done:
        secs = seconds(done.group(1), done.group(2))
    return int(out.strip()), rss, secs


def cluster(gpsense, parts_dir, n, q, sem, limit, tmp):
    hosts = os.path.join(tmp, f"hosts-{n}")
    with open(hosts, "w") as f:
        f.writelines(f"127.0.0.1:{port}\n" for port in free_ports(n))
    procs = []
    for i in range(n):
        cmd = [gpsense, "query", q, "--graph", parts_dir, "--semantics", sem, "--count",
               "--workers", "1", "--processes", str(n), "--process", str(i), "--hostfile", hosts]
        procs.append(timed(cmd))
    results = [collect(p, s, limit) for p, s in procs]
    count = int(results[0][0].strip())
    per = []
    for out, err, rss, secs in results:
        part = NOTE_PART.search(err)
        resident = NOTE_RESIDENT.search(err)
        traffic = NOTE_TRAFFIC.search(err)
        per.append({
            "rss": rss,
            "part_mb": num(part.group(1)) if part else float("nan"),
            "resident": num(resident.group(1)) if resident else float("nan"),
            "sent": num(traffic.group(1)) if traffic else 0.0,
            "received": num(traffic.group(2)) if traffic else 0.0,
        })
    done = NOTE_DONE.search(results[0][1])
    query_secs = started_secs = float("nan")
    if done:
        query_secs = seconds(done.group(1), done.group(2))
        if done.group(3):
            started_secs = seconds(done.group(3), done.group(4))
    return count, per, query_secs, started_secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpsense", default="target/release/gpsense")
    ap.add_argument("--graph", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--parts", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=600, help="seconds per process")
    ap.add_argument("--query", action="append", help="NAME=SEMANTICS=QUERY (default: the built-in four)")
    args = ap.parse_args()
    queries = QUERIES
    if args.query:
        queries = [tuple(q.split("=", 2)) for q in args.query]
    tmp = tempfile.mkdtemp(prefix="gpsense-scaling-")
    print(f"# gpsense scale-out on loopback ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d %H:%M')}\n")
    for spec in args.graph:
        name, path = spec.split("=", 1)
        snap = path
        if not path.endswith(".gps"):
            snap = os.path.join(tmp, f"{name}.gps")
            subprocess.run([args.gpsense, "ingest", path, "-o", snap], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print(f"## {name} ({os.path.getsize(snap) / 1e6:.1f} MB snapshot)\n")
        dirs = {}
        for n in args.parts:
            d = os.path.join(tmp, f"{name}-{n}")
            subprocess.run([args.gpsense, "partition", snap, "-n", str(n), "-o", d], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            dirs[n] = d
        print("| query | semantics | matches | P | part MB per process | resident MB after load "
              "| peak RSS MB per process "
              "| bytes sent, all processes | query time (process 0, median) "
              "| with starting the cluster | single-process engine: query time, peak RSS |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for qname, sem, q in queries:
            ref = [single(args.gpsense, snap, q, sem, args.limit) for _ in range(args.runs)]
            ref_count = ref[0][0]
            ref_secs = statistics.median(r[2] for r in ref)
            ref_rss = max(r[1] for r in ref)
            for n in args.parts:
                runs = [cluster(args.gpsense, dirs[n], n, q, sem, args.limit, tmp)
                        for _ in range(args.runs)]
                count = runs[0][0]
                if any(r[0] != ref_count for r in runs):
                    raise SystemExit(f"{qname} on {n} processes: {count} != {ref_count}")
                per = runs[0][1]
                parts = " / ".join(f"{p['part_mb']:.1f}" for p in per)
                resident = " / ".join(f"{p['resident']:.0f}" for p in per)
                rss = " / ".join(f"{max(r[1][i]['rss'] for r in runs):.0f}" for i in range(n))
                traffic = sum(p["sent"] for p in per)
                secs = statistics.median(r[2] for r in runs)
                started = statistics.median(r[3] for r in runs)
                print(f"| {qname} | {sem} | {count:,} | {n} | {parts} | {resident} | {rss} | {traffic:,.0f} "
                      f"| {secs * 1000:.1f} ms | {started * 1000:.1f} ms | {ref_secs * 1000:.1f} ms, "
                      f"{ref_rss:.0f} MB |")
            sys.stdout.flush()
        print()


if __name__ == "__main__":
    main()

"""Load test of `gpsense serve` on loopback: concurrent clients for a bounded time (and a bounded
number of requests), each on its own keep-alive connection, sending common-sense queries on the
embedded ConceptNet-100K. Reports requests per second, latency percentiles, status counts and the
server's resident memory (VmRSS) before, after warm-up, during and after the run. Standard library
only: no venv needed.

    python load.py --gpsense target/release/gpsense --clients 32 --duration 60
    # LIMIT queries whose roots have thousands of candidates (a device engine runs them in parts).
    python load.py --gpsense target/release/gpsense --clients 8 --duration 10 \
        --queries benches/gpu/limits.rq -- --engine gpu
    # Every request a slow query (all four-edge paths) with a 2 s time limit: 503s at work.
    python load.py --gpsense target/release/gpsense --clients 32 --duration 30 --slow-every 1 \
        --timeout-ms 2000 -- --max-queued 8

Arguments after `--` go to `gpsense serve`. Exits 1 if any request failed in a way the mode does
not expect (common queries: anything but 200; with slow queries: anything but 200 and 503).
"""

import argparse
import http.client
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

PREFIX = "PREFIX c: <http://conceptnet.io/c/en/>\nPREFIX r: <http://conceptnet.io/r/>\n"

# Common-sense questions, in standard SPARQL and the short dialect (the README's and the tests').
QUERIES = [
    PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal ; r:AtLocation c:home }",
    PREFIX + "SELECT DISTINCT ?r ?y WHERE { c:chocolate ?r ?y } LIMIT 20",
    PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal }",
    PREFIX + "ASK { c:cat r:IsA c:pet }",
    PREFIX + "SELECT ?place WHERE { c:dog r:AtLocation ?place }",
    PREFIX + "SELECT ?x WHERE { ?x r:AtLocation c:kitchen } ORDER BY ?x LIMIT 10",
    PREFIX + "SELECT ?x ?r WHERE { ?x ?r c:water }",
    PREFIX + "SELECT ?x ?y WHERE { ?x r:IsA c:bird . ?x r:CapableOf ?y }",
    PREFIX + "SELECT ?a ?b WHERE { ?a r:IsA ?b . ?b r:IsA c:animal } LIMIT 100",
    PREFIX + "SELECT ?x WHERE { ?x r:UsedFor ?y FILTER(?y IN (c:eat, c:drink)) }",
    PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal . ?x r:AtLocation ?y }",
    PREFIX
    + "SELECT * WHERE { ?a r:IsA ?b . ?b r:IsA ?c FILTER(?a != ?b && ?b != ?c && ?a != ?c) } LIMIT 50",
    "SELECT ?x WHERE { ?x IsA fruit . ?x HasProperty sweet }",
    "SELECT ?y WHERE { coffee ?r ?y }",
    "SELECT ?x WHERE { ?x UsedFor cook . ?x AtLocation kitchen }",
    "SELECT * WHERE { cat IsA pet }",
]

# Every path of four edges, enumerated (a filter on rows) to be counted: far beyond any limit.
SLOW = (
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e FILTER(?a != ?e) }"
)

ACCEPT = ["application/sparql-results+json", "text/tab-separated-values", "text/csv"]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def start_server(binary, extra):
    server = subprocess.Popen(
        [binary, "serve", "-q", "--bind", "127.0.0.1:0", *extra],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = server.stdout.readline().strip()
    if not line.startswith("listening on http://"):
        server.kill()
        raise SystemExit(f"gpsense serve did not start: {line!r}")
    host, port = line[len("listening on http://"):].rsplit(":", 1)
    return server, host, int(port)


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []  # seconds, of 200 answers
        self.timeout_latencies = []  # of 503 time-limit answers
        self.busy_latencies = []  # of 503 busy answers
        self.statuses = {}
        self.errors = []

    def record(self, kind, seconds):
        with self.lock:
            self.statuses[kind] = self.statuses.get(kind, 0) + 1
            if kind == "200":
                self.latencies.append(seconds)
            elif kind == "503 time limit":
                self.timeout_latencies.append(seconds)
            elif kind == "503 busy":
                self.busy_latencies.append(seconds)

    def error(self, what):
        with self.lock:
            self.statuses["error"] = self.statuses.get("error", 0) + 1
            if len(self.errors) < 10:
                self.errors.append(what)

    def total(self):
        with self.lock:
            return sum(self.statuses.values())


def one_request(conn, path, accept):
    start = time.perf_counter()
    conn.request("GET", path, headers={"Accept": accept})
    response = conn.getresponse()
    body = response.read()
    seconds = time.perf_counter() - start
    status = response.status
    if status == 503:
        kind = "503 time limit" if response.getheader("x-gpsense-timed-out") else "503 busy"
    else:
        kind = str(status)
    return kind, seconds, body


def client(k, args, host, port, stats, deadline, paths):
    conn = http.client.HTTPConnection(host, port, timeout=120)
    n = k
    while time.monotonic() < deadline and stats.total() < args.max_requests:
        slow = args.slow_every > 0 and n % args.slow_every == 0
        path = paths["slow"] if slow else paths["common"][n % len(paths["common"])]
        accept = ACCEPT[n % len(ACCEPT)]
        n += 1
        try:
            kind, seconds, body = one_request(conn, path, accept)
        except (OSError, http.client.HTTPException) as e:
            stats.error(f"client {k}: {type(e).__name__}: {e}")
            conn.close()
            conn = http.client.HTTPConnection(host, port, timeout=120)
            continue
        expected = {"200"} | ({"503 time limit", "503 busy"} if args.slow_every else set())
        if kind not in expected:
            stats.error(f"client {k}: {kind}: {body[:200]!r}")
        else:
            stats.record(kind, seconds)
    conn.close()


def query_path(text, timeout_ms):
    params = {"query": text}
    if timeout_ms:
        params["timeout"] = str(timeout_ms)
    return "/query?" + urllib.parse.urlencode(params)


def warm_up(host, port, paths):
    conn = http.client.HTTPConnection(host, port, timeout=120)
    for path in paths:
        for accept in ACCEPT:
            kind, _, body = one_request(conn, path, accept)
            if kind != "200":
                raise SystemExit(f"warm-up query failed: {kind} {body[:300]!r}")
    conn.close()


def queries(args):
    if not args.queries:
        return QUERIES
    try:
        with open(args.queries) as f:
            lines = [line.strip() for line in f]
    except (OSError, UnicodeDecodeError) as e:
        raise SystemExit(f"--queries {args.queries}: {e}")
    found = [line for line in lines if line and not line.startswith("#")]
    if not found:
        raise SystemExit(f"--queries {args.queries}: no query (one a line, # for comments)")
    return found


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpsense", required=True)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=60.0, help="seconds")
    ap.add_argument("--max-requests", type=int, default=5_000_000)
    ap.add_argument("--slow-every", type=int, default=0, help="every Nth request is slow (0: none)")
    ap.add_argument("--timeout-ms", type=int, default=0, help="the slow query's `timeout`")
    ap.add_argument(
        "--queries",
        help="a file of queries, one a line (# comments), sent instead of the common-sense set",
    )
    ap.add_argument("serve_args", nargs="*", help="after --: arguments of gpsense serve")
    args = ap.parse_args()

    queries(args)  # a bad --queries file ends the run before the server starts
    server, host, port = start_server(args.gpsense, args.serve_args)
    try:
        return run(args, server, host, port)
    finally:
        server.terminate()
        server.wait(timeout=60)
        server.stdout.close()


def run(args, server, host, port):
    pid = server.pid
    rss_start = rss_kib(pid)
    paths = {
        "common": [query_path(q, 0) for q in queries(args)],
        "slow": query_path(SLOW, args.timeout_ms),
    }
    warm_up(host, port, paths["common"])
    rss_warm = rss_kib(pid)
    stats = Stats()
    samples = []
    start = time.monotonic()
    deadline = start + args.duration
    threads = [
        threading.Thread(target=client, args=(k, args, host, port, stats, deadline, paths))
        for k in range(args.clients)
    ]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        time.sleep(1)
        samples.append((round(time.monotonic() - start), rss_kib(pid)))
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    rss_end = rss_kib(pid)

    total = stats.total()
    lat = [s * 1000 for s in stats.latencies]
    print(f"clients {args.clients}, {elapsed:.1f} s, {total} requests, {total / elapsed:.1f} req/s")
    print("statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(stats.statuses.items())))
    if lat:
        print(
            f"latency of 200s (ms): p50 {percentile(lat, 50):.2f}, p90 {percentile(lat, 90):.2f}, "
            f"p99 {percentile(lat, 99):.2f}, max {max(lat):.2f}, mean {statistics.mean(lat):.2f}"
        )
    for what, values in [
        ("time-limit 503s", stats.timeout_latencies),
        ("busy 503s", stats.busy_latencies),
    ]:
        if values:
            t = [s * 1000 for s in values]
            print(
                f"latency of {what} (ms): p50 {percentile(t, 50):.0f}, "
                f"p99 {percentile(t, 99):.0f}, min {min(t):.0f}, max {max(t):.0f}"
            )
    every = max(1, len(samples) // 12)
    shown = ", ".join(f"{s}s {r / 1024:.1f}" for s, r in samples[::every])
    print(
        f"server RSS (MiB): start {rss_start / 1024:.1f}, after warm-up {rss_warm / 1024:.1f}, "
        f"peak {max(r for _, r in samples) / 1024:.1f}, end {rss_end / 1024:.1f}"
    )
    print(f"RSS samples (MiB): {shown}")
    for e in stats.errors:
        print("error:", e)
    return 1 if stats.statuses.get("error") else 0


if __name__ == "__main__":
    sys.exit(main())

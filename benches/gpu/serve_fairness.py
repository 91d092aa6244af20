"""`gpsense serve`: how long light requests take beside a client looping a heavy one.

Starts a server on the embedded ConceptNet-100K with the arguments after `--` (e.g. `--engine
gpu`), then, for each kind of light request (a batchable count, a FILTER query answered alone):
its latencies alone, then beside one client that loops a heavy count (every 5-edge path, batched
and left by its batch to run alone; or the same with a FILTER, run alone in a main slot), each
heavy request limited to `--heavy-ms`. Prints one line per phase: light requests, their median,
90th percentile and largest latency, and the heavy requests' statuses and median time (a heavy
request that ended well within its limit did not test anything). On a GPU this says whether the
device's users wait for each other (they share one CUDA stream: a light query's read waits for
what a heavy one has queued). Standard library only.

    python3 benches/gpu/serve_fairness.py --gpsense target/release/gpsense -- --engine gpu
"""

import argparse
import http.client
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../crates/cli/tests/sparql_clients"))
from load import PREFIX, percentile, query_path, start_server  # noqa: E402

PATH5 = "?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e . ?e ?v ?f"
HEAVY = {
    "batched": f"SELECT (COUNT(*) AS ?n) WHERE {{ {PATH5} }}",
    "filter": f"SELECT (COUNT(*) AS ?n) WHERE {{ {PATH5} FILTER(?a != ?f) }}",
}
LIGHT = {
    "batched": PREFIX + "SELECT (COUNT(*) AS ?n) WHERE { ?x r:IsA c:animal ; r:AtLocation c:home }",
    "filter": PREFIX
    + "SELECT ?x WHERE { ?x r:IsA c:animal ; r:AtLocation ?p FILTER(?p != c:home) }",
}


def ask(host, port, path):
    """Status and seconds of one request on a fresh connection."""
    conn = http.client.HTTPConnection(host, port, timeout=120)
    start = time.monotonic()
    conn.request("GET", path, headers={"Accept": "text/tab-separated-values"})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, time.monotonic() - start


def lights(host, port, text, seconds, every):
    """Light requests, one every `every` seconds for `seconds`: their latencies, failures."""
    latencies, failed = [], []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        status, took = ask(host, port, query_path(text, 0))
        if status == 200:
            latencies.append(took)
        else:
            failed.append((status, took))
        time.sleep(every)
    return latencies, failed


def heavy_loop(host, port, text, limit_ms, stop, seen):
    while not stop.is_set():
        status, took = ask(host, port, query_path(text, limit_ms))
        seen.append((status, took))


def summary(latencies):
    if not latencies:
        return "no answer"
    ms = sorted(1000 * t for t in latencies)
    return (
        f"{len(ms)} requests, median {statistics.median(ms):.0f} ms, "
        f"p90 {percentile(ms, 90):.0f} ms, max {ms[-1]:.0f} ms"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpsense", required=True)
    parser.add_argument("--seconds", type=float, default=8.0, help="per phase")
    parser.add_argument("--every", type=float, default=0.25, help="seconds between light requests")
    parser.add_argument("--heavy-ms", type=int, default=3000, help="each heavy request's limit")
    parser.add_argument("extra", nargs="*", help="server arguments (after --)")
    args = parser.parse_args()
    server, host, port = start_server(args.gpsense, args.extra)
    failures = 0
    try:
        for kind in ("batched", "filter"):
            ask(host, port, query_path(LIGHT[kind], 0))  # warm
            alone, failed = lights(host, port, LIGHT[kind], args.seconds / 2, args.every)
            failures += len(failed)
            print(f"light {kind} alone: {summary(alone)}", flush=True)
            stop, seen = threading.Event(), []
            heavy = threading.Thread(
                target=heavy_loop, args=(host, port, HEAVY[kind], args.heavy_ms, stop, seen)
            )
            heavy.start()
            time.sleep(0.5)  # the heavy request is running
            beside, failed = lights(host, port, LIGHT[kind], args.seconds, args.every)
            stop.set()
            heavy.join()
            failures += len(failed)
            statuses = {}
            for status, _ in seen:
                statuses[status] = statuses.get(status, 0) + 1
            heavy_ms = statistics.median(1000 * t for _, t in seen) if seen else 0
            print(
                f"light {kind} beside heavy {kind}: {summary(beside)}; heavy: {statuses}, "
                f"median {heavy_ms:.0f} ms (limit {args.heavy_ms} ms)",
                flush=True,
            )
            if failed:
                print(f"  failed light requests: {failed[:5]}", flush=True)
    finally:
        server.kill()
        server.wait()
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

"""`gpsense serve` on a device engine against `dfs`: the same answers under concurrent requests.

Starts two servers on the embedded ConceptNet-100K (the first with the arguments after `--`, e.g.
`--engine gpu`; the second with `--engine dfs`), sends every query of the load test's list from
many threads at once to the first (so they meet in device batches), each query once to the
second, and compares the answers as sorted TSV lines. Prints the first server's `/health`
batching figures. Exits 1 on any difference or failed request. Standard library only.

    python3 benches/gpu/serve_compare.py --gpsense target/release/gpsense -- --engine gpu
"""

import argparse
import http.client
import json
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../crates/cli/tests/sparql_clients"))
from load import QUERIES, query_path, start_server  # noqa: E402

# Heavier questions that a device batch takes (counts, rows of joins), beside the load test's.
MORE = [
    "SELECT (COUNT(*) AS ?n) WHERE { ?a ?r ?b . ?b ?s ?c }",
    "SELECT ?a ?b ?c WHERE { ?a IsA ?b . ?b IsA ?c . ?c IsA ?a }",
    "SELECT ?x ?p WHERE { ?x IsA animal . ?y IsA animal . ?x AtLocation ?p . ?y AtLocation ?p }",
    "ASK { ?a IsA ?b . ?b IsA ?c . ?c IsA ?d . ?d IsA ?e }",
    "SELECT ?a ?b WHERE { ?a UsedFor ?b . ?b HasPrerequisite ?a }",
]


def unordered_limit(query):
    """Any LIMIT rows of the answer are right without ORDER BY: compare their number only."""
    return "LIMIT" in query and "ORDER BY" not in query


def ask(host, port, query):
    conn = http.client.HTTPConnection(host, port, timeout=120)
    conn.request("GET", query_path(query, 0), headers={"Accept": "text/tab-separated-values"})
    response = conn.getresponse()
    body = response.read().decode()
    conn.close()
    if response.status != 200:
        return f"status {response.status}: {body[:200]}"
    head, *rows = body.splitlines()
    if unordered_limit(query):
        return f"{head}\n{len(rows)} rows"
    return "\n".join([head, *sorted(rows)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpsense", required=True)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("serve_args", nargs="*", help="after --: arguments of the first gpsense serve")
    args = ap.parse_args()
    queries = QUERIES + MORE
    device, dh, dp = start_server(args.gpsense, args.serve_args)
    cpu, ch, cp = start_server(args.gpsense, ["--engine", "dfs"])
    try:
        expected = [ask(ch, cp, q) for q in queries]
        got, lock = {}, threading.Lock()

        def worker(k):
            for r in range(args.rounds):
                for i in range(k % len(queries), len(queries), args.threads):
                    answer = ask(dh, dp, queries[i])
                    with lock:
                        got.setdefault(i, []).append(answer)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(args.threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        bad = 0
        for i, q in enumerate(queries):
            for answer in got.get(i, []):
                if answer != expected[i]:
                    bad += 1
                    print(f"DIFFERS: {q}\n  device: {answer[:300]!r}\n  dfs: {expected[i][:300]!r}")
                    break
        rows = sum(e.count("\n") for e in expected)
        asked = sum(len(v) for v in got.values())
        print(f"{len(queries)} queries ({rows} rows in all), {asked} answers from {args.threads} threads: {bad} differ")
        conn = http.client.HTTPConnection(dh, dp, timeout=30)
        conn.request("GET", "/health")
        health = json.loads(conn.getresponse().read())
        print("batching:", json.dumps(health.get("batching")))
        return 1 if bad else 0
    finally:
        for s in (device, cpu):
            s.terminate()
            s.wait(timeout=60)
            s.stdout.close()


if __name__ == "__main__":
    sys.exit(main())

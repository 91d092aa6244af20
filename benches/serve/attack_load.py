"""Load test of `gpsense serve` under attack, on loopback and bounded in time: while light clients
query it, attackers hold idle connections, trickle request heads (slowloris), ask for big answers
and never read them, and loop heavy queries. Reports the light clients' latency (p50, p99, max),
how many of their requests were answered (200) and refused (503), and the server's resident
memory and open descriptors. Standard library only.

    python3 benches/serve/attack_load.py --gpsense target/release/gpsense --duration 20 \
        --out benches/serve/attack-2026-11-25.md

The server starts under `ulimit -Sn 1024` (the usual soft limit; it raises it to the hard limit) with its default limits; arguments
after `--` go to `gpsense serve`. Exits 1 if a light request failed without an HTTP answer.
"""

import argparse
import http.client
import multiprocessing
import os
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

PREFIX = "PREFIX c: <http://conceptnet.io/c/en/> PREFIX r: <http://conceptnet.io/r/> "
LIGHT = [
    PREFIX + "SELECT ?x WHERE { ?x r:IsA c:animal } LIMIT 1",
    PREFIX + "ASK { c:cat r:IsA c:pet }",
    PREFIX + "SELECT ?place WHERE { c:dog r:AtLocation ?place }",
]
HEAVY = ("SELECT (COUNT(*) AS ?n) WHERE { ?a ?r ?b . ?b ?s ?c . ?c ?t ?d . ?d ?u ?e "
         "FILTER(?a != ?e) }")
BIG = "SELECT * WHERE { ?a ?r ?b }"


def path(query, **params):
    return "/query?" + urllib.parse.urlencode({"query": query, **params})


def start_server(binary, extra):
    log = os.environ.get("ATTACK_SERVER_LOG")
    cmd = ["sh", "-c", 'ulimit -Sn 1024 && exec "$0" "$@"', binary, "serve",
           "-v" if log else "-q", "--bind", "127.0.0.1:0", *extra]
    err = open(log, "w") if log else None
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline().strip()
    prefix = "listening on http://127.0.0.1:"
    if not line.startswith(prefix):
        proc.kill()
        sys.exit(f"no address from gpsense serve: {line!r}")
    return proc, int(line[len(prefix):])


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def open_fds(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def connect(port):
    s = socket.socket()
    s.settimeout(5)
    s.connect(("127.0.0.1", port))
    return s


class Attack:
    def __init__(self, port, stop):
        self.port, self.stop = port, stop
        self.idle, self.slowloris, self.readers = [], [], []

    def hold_idle(self, n):
        for _ in range(n):
            try:
                self.idle.append(connect(self.port))
            except OSError:
                pass

    def trickle(self, n):
        """Slowloris: a byte of a head every second; a closed one reconnects."""
        head = b"GET /query?query=ASK HTTP/1.1\r\nX-Padding: " + b"a" * 4000
        conns = [None] * n
        sent = 0
        while not self.stop.is_set():
            for i in range(n):
                try:
                    if conns[i] is None:
                        conns[i] = connect(self.port)
                    conns[i].send(head[sent % len(head):][:1])
                except OSError:
                    conns[i] = None
            sent += 1
            self.stop.wait(1.0)

    def never_read(self, n):
        request = (f"GET {path(BIG)} HTTP/1.1\r\nHost: x\r\n"
                   "Accept: application/sparql-results+json\r\n\r\n").encode()
        for _ in range(n):
            try:
                s = connect(self.port)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.send(request)
                self.readers.append(s)
            except OSError:
                pass

    def heavy(self):
        while not self.stop.is_set():
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                c.request("GET", path(HEAVY))
                c.getresponse().read()
                c.close()
            except OSError:
                self.stop.wait(0.1)


def light_process(port, stop, queue):
    """Light clients in processes of their own: the attackers' threads share one interpreter lock,
    which would otherwise be measured as the server's latency."""
    out = []
    light_client(port, stop, out)
    queue.put(out)


def run_light(port, n, seconds):
    stop = multiprocessing.Event()
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=light_process, args=(port, stop, queue))
             for _ in range(n)]
    for p in procs:
        p.start()
    return stop, queue, procs


def collect_light(stop, queue, procs):
    stop.set()
    results = []
    for _ in procs:
        results.extend(queue.get(timeout=120))
    for p in procs:
        p.join(timeout=60)
    return results


def light_client(port, stop, out):
    i = 0
    while not stop.is_set():
        query = LIGHT[i % len(LIGHT)]
        i += 1
        started = time.monotonic()
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("GET", path(query), headers={"Accept": "text/csv"})
            r = c.getresponse()
            body = r.read()
            c.close()
            out.append((r.status, time.monotonic() - started))
            if r.status != 200 and os.environ.get("ATTACK_DEBUG"):
                print(r.status, body[:200], file=sys.stderr)
        except OSError as e:
            out.append((f"error: {e}", time.monotonic() - started))
        stop.wait(0.05)


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpsense", required=True)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--idle", type=int, default=1100)
    ap.add_argument("--slowloris", type=int, default=200)
    ap.add_argument("--never-read", type=int, default=60)
    ap.add_argument("--heavy", type=int, default=8)
    ap.add_argument("--light", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("serve_args", nargs="*")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    proc, port = start_server(a.gpsense, a.serve_args)
    stop = threading.Event()
    try:
        base = {"rss": rss_mb(proc.pid), "fds": open_fds(proc.pid)}
        q_stop, q_queue, q_procs = run_light(port, a.light, 0)
        time.sleep(min(3.0, a.duration / 4))
        quiet = collect_light(q_stop, q_queue, q_procs)

        attack = Attack(port, stop)
        threads = [threading.Thread(target=attack.trickle, args=(a.slowloris,))]
        threads += [threading.Thread(target=attack.heavy) for _ in range(a.heavy)]
        attack.hold_idle(a.idle)
        attack.never_read(a.never_read)
        for t in threads:
            t.start()
        l_stop, l_queue, l_procs = run_light(port, a.light, a.duration)
        peak = dict(base)
        end = time.monotonic() + a.duration
        while time.monotonic() < end:
            peak["rss"] = max(peak["rss"], rss_mb(proc.pid))
            peak["fds"] = max(peak["fds"], open_fds(proc.pid))
            time.sleep(0.25)
        results = collect_light(l_stop, l_queue, l_procs)
        stop.set()
        for t in threads:
            t.join(timeout=60)
        alive = proc.poll() is None
        after = {"rss": rss_mb(proc.pid) if alive else 0, "fds": open_fds(proc.pid)}
    finally:
        stop.set()
        proc.kill()
        proc.wait()

    report = summarize(a, quiet, results, base, peak, after, alive)
    print(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report + "\n")
    failed = sum(1 for s, _ in results if not isinstance(s, int))
    return 0 if alive and failed == 0 else 1


def latency_line(results):
    ok = sorted(t * 1000 for s, t in results if s == 200)
    return (f"{len(ok)} of {len(results)} answered 200; p50 {percentile(ok, 50):.1f} ms, "
            f"p99 {percentile(ok, 99):.1f} ms, max {max(ok, default=float('nan')):.1f} ms")


def summarize(a, quiet, results, base, peak, after, alive):
    statuses = {}
    for s, _ in results:
        statuses[s] = statuses.get(s, 0) + 1
    lines = [
        "# `gpsense serve` under attack (loopback, `ulimit -Sn 1024`)",
        "",
        f"Attackers for {a.duration:.0f} s: {a.idle} idle connections held, {a.slowloris} slowloris "
        f"(a head byte a second, reconnecting), {a.never_read} requests for a big answer never "
        f"read, {a.heavy} clients looping a heavy COUNT; {a.light} light clients. Server arguments: "
        f"{' '.join(a.serve_args) or '(defaults)'}.",
        "",
        "| | light clients | statuses |",
        "|---|---|---|",
        f"| alone, before | {latency_line(quiet)} | |",
        f"| under attack | {latency_line(results)} | "
        + ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items(), key=str)) + " |",
        "",
        f"Server: alive at the end: {'yes' if alive else 'NO'}; resident memory {base['rss']:.0f} MB "
        f"at start, {peak['rss']:.0f} MB at the peak, {after['rss']:.0f} MB at the end; open "
        f"descriptors {base['fds']} at start, {peak['fds']} at the peak, {after['fds']} at the end.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    sys.exit(main())

#!/usr/bin/env python3
"""Peer engines for `cargo xtask bench` (run by the xtask in target/bench/venv).

    peers.py PEER WORKFILE START REPEAT

WORKFILE (JSON, written by the xtask):
    {"edges": path of `source<TAB>relation<TAB>target` lines, "labels": path or null,
     "nodes": N, "undirected": bool, "relations": R,
     "queries": [{"nodes": [{"label": int|null, "fixed": int|null}], "edges": [[s, r, t]],
                  "text": SPARQL or Cypher text or null}]}

Prints one JSON line `{"ready": true, "load_seconds": s}` after loading the data graph (not timed
per query), then one line per query from index START:
    {"i": k, "status": "ok", "count": n, "seconds": [t, ...]}
    {"i": k, "status": "unsupported" | "error", "message": "..."}
A query is repeated (REPEAT runs at most) while its runs took under a second in all. The xtask
enforces the time limit by killing this process; it then starts it again after the query.

Semantics (the xtask checks every count against gpsense's under the same semantics):
- igraph-vf2, igraph-lad (induced=False), networkx-vf2 (subgraph_monomorphisms), rustworkx-vf2
  (induced=False): non-induced subgraph isomorphism, i.e. gpsense's `iso`. Knowledge graphs are
  multigraphs (two concepts joined by several relations); these libraries want simple graphs, so
  parallel edges are merged into one edge carrying the set of its relations (a bit mask) and a
  query edge matches a data edge whose set contains its own.
- oxigraph-sparql, kuzu-cypher: the text given (the xtask adds inequality filters for `iso`).
"""

import json
import os
import sys
import tempfile
import time

try:
    import resource
except ImportError:  # not on POSIX
    resource = None


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def read_graph(work):
    edges = []
    with open(work["edges"]) as f:
        for line in f:
            s, r, t = line.split("\t")
            edges.append((int(s), int(r), int(t)))
    labels = None
    if work.get("labels"):
        with open(work["labels"]) as f:
            labels = [int(x) for x in f]
    return edges, labels


def merged(edges, undirected, drop_loops=False):
    """Parallel edges merged: {(s, t): relation mask} (undirected: s <= t)."""
    masks = {}
    for s, r, t in edges:
        if drop_loops and s == t:
            continue
        if undirected and s > t:
            s, t = t, s
        masks[(s, t)] = masks.get((s, t), 0) | (1 << r)
    return masks


def query_masks(q, undirected):
    masks = {}
    for s, r, t in q["edges"]:
        if undirected and s > t:
            s, t = t, s
        masks[(s, t)] = masks.get((s, t), 0) | (1 << r)
    return masks


class IgraphVf2:
    def __init__(self, work, edges, labels):
        import igraph as ig

        self.ig = ig
        self.undirected = work["undirected"]
        self.n = work["nodes"]
        # igraph's VF2 rejects loop edges; a loop-free query never uses one under iso (non-induced),
        # so they are dropped, and a query with a loop is reported unsupported.
        masks = merged(edges, self.undirected, drop_loops=True)
        pairs = list(masks.keys())
        self.g = ig.Graph(n=self.n, edges=pairs, directed=not self.undirected)
        self.masks = list(masks.values())
        self.multi_relation = work["relations"] > 1
        self.labels = labels

    def count(self, q):
        if any(s == t for s, _, t in q["edges"]):
            raise Unsupported("igraph's VF2 does not support loop edges")
        qm = query_masks(q, self.undirected)
        pattern = self.ig.Graph(n=len(q["nodes"]), edges=list(qm.keys()), directed=not self.undirected)
        pmasks = list(qm.values())
        # Colours: the label (benchmark graphs); fixed concepts get a colour of their own, which is
        # exact under iso (a variable may not take a concept's data node anyway).
        if self.labels is not None:
            color1 = list(self.labels)
            offset = max(self.labels) + 1
        else:
            color1 = [0] * self.n
            offset = 1
        color2 = []
        for i, node in enumerate(q["nodes"]):
            if node["fixed"] is not None:
                c = offset + i
                color1[node["fixed"]] = c
                color2.append(c)
            else:
                color2.append(node["label"] if node["label"] is not None else 0)
        kwargs = {}
        if self.multi_relation:
            data_masks = self.masks
            kwargs["edge_compat_fn"] = lambda g1, g2, e1, e2: pmasks[e2] & ~data_masks[e1] == 0
        return self.g.count_subisomorphisms_vf2(pattern, color1=color1, color2=color2, **kwargs)


class IgraphLad:
    def __init__(self, work, edges, labels):
        import igraph as ig

        if not work["undirected"] or work["relations"] > 1:
            raise Unsupported("LAD has no edge labels: run on the unlabelled-edge benchmark graphs only")
        self.ig = ig
        self.n = work["nodes"]
        masks = merged(edges, True)
        self.g = ig.Graph(n=self.n, edges=list(masks.keys()), directed=False)
        self.by_label = {}
        for v, l in enumerate(labels or [0] * self.n):
            self.by_label.setdefault(l, []).append(v)

    def count(self, q):
        qm = query_masks(q, True)
        pattern = self.ig.Graph(n=len(q["nodes"]), edges=list(qm.keys()), directed=False)
        domains = []
        for node in q["nodes"]:
            if node["fixed"] is not None:
                domains.append([node["fixed"]])
            elif node["label"] is not None:
                domains.append(self.by_label.get(node["label"], []))
            else:
                domains.append(list(range(self.n)))
        return len(self.g.get_subisomorphisms_lad(pattern, domains=domains, induced=False))


class NetworkxVf2:
    def __init__(self, work, edges, labels):
        import networkx as nx
        from networkx.algorithms import isomorphism

        self.iso = isomorphism
        self.nx = nx
        self.undirected = work["undirected"]
        g = nx.Graph() if self.undirected else nx.DiGraph()
        n = work["nodes"]
        g.add_nodes_from((v, {"c": labels[v] if labels else 0}) for v in range(n))
        g.add_edges_from((s, t, {"m": m}) for (s, t), m in merged(edges, self.undirected).items())
        self.g = g
        self.labels = labels
        self.multi_relation = work["relations"] > 1

    def count(self, q):
        qm = query_masks(q, self.undirected)
        p = self.nx.Graph() if self.undirected else self.nx.DiGraph()
        offset = (max(self.labels) + 1) if self.labels else 1
        fixed = []
        for i, node in enumerate(q["nodes"]):
            if node["fixed"] is not None:
                c = -(offset + i)  # a colour of its own (see IgraphVf2)
                fixed.append((node["fixed"], c))
                p.add_node(i, c=c)
            else:
                p.add_node(i, c=node["label"] if node["label"] is not None else 0)
        p.add_edges_from((s, t, {"m": m}) for (s, t), m in qm.items())
        saved = [(v, self.g.nodes[v]["c"]) for v, _ in fixed]
        for v, c in fixed:
            self.g.nodes[v]["c"] = c
        try:
            node_match = self.iso.categorical_node_match("c", None)
            edge_match = (lambda d, e: e["m"] & ~d["m"] == 0) if self.multi_relation else None
            matcher_class = self.iso.GraphMatcher if self.undirected else self.iso.DiGraphMatcher
            matcher = matcher_class(self.g, p, node_match=node_match, edge_match=edge_match)
            return sum(1 for _ in matcher.subgraph_monomorphisms_iter())
        finally:
            for v, c in saved:
                self.g.nodes[v]["c"] = c


class RustworkxVf2:
    def __init__(self, work, edges, labels):
        import rustworkx as rx

        self.rx = rx
        self.undirected = work["undirected"]
        n = work["nodes"]
        g = rx.PyGraph(multigraph=False) if self.undirected else rx.PyDiGraph(multigraph=False)
        # Node payload: (label, id), so that a concept matches its own node only.
        g.add_nodes_from([(labels[v] if labels else 0, v) for v in range(n)])
        g.add_edges_from([(s, t, m) for (s, t), m in merged(edges, self.undirected).items()])
        self.g = g
        self.labelled = labels is not None
        self.multi_relation = work["relations"] > 1

    def count(self, q):
        rx = self.rx
        qm = query_masks(q, self.undirected)
        p = rx.PyGraph(multigraph=False) if self.undirected else rx.PyDiGraph(multigraph=False)
        p.add_nodes_from([(node["label"], node["fixed"]) for node in q["nodes"]])
        p.add_edges_from([(s, t, m) for (s, t), m in qm.items()])
        has_fixed = any(node["fixed"] is not None for node in q["nodes"])
        if has_fixed:
            def node_matcher(d, n):
                return (n[1] is None or n[1] == d[1]) and (n[0] is None or n[0] == d[0])
        elif self.labelled:
            def node_matcher(d, n):
                return n[0] is None or n[0] == d[0]
        else:
            node_matcher = None
        # rustworkx calls the edge matcher with (second graph's payload, first graph's payload), the
        # reverse of the node matcher: here (query mask, data mask).
        edge_matcher = (lambda e, d: e & ~d == 0) if self.multi_relation else None
        mappings = rx.vf2_mapping(
            self.g, p, node_matcher=node_matcher, edge_matcher=edge_matcher,
            id_order=False, subgraph=True, induced=False,
        )
        return sum(1 for _ in mappings)


class OxigraphSparql:
    def __init__(self, work, edges, labels):
        import pyoxigraph as ox

        self.store = ox.Store()
        lines = []
        for s, r, t in edges:
            lines.append(f"<urn:n:{s}> <urn:r:{r}> <urn:n:{t}> .\n")
            if work["undirected"] and s != t:
                lines.append(f"<urn:n:{t}> <urn:r:{r}> <urn:n:{s}> .\n")
        if labels is not None:
            for v, l in enumerate(labels):
                lines.append(f"<urn:n:{v}> <urn:label> <urn:l:{l}> .\n")
        self.store.bulk_load("".join(lines).encode(), ox.RdfFormat.N_TRIPLES)

    def count(self, q):
        solutions = self.store.query(q["text"])
        for row in solutions:
            return int(row[0].value)
        return 0


class KuzuCypher:
    def __init__(self, work, edges, labels):
        import kuzu

        self.dir = tempfile.TemporaryDirectory(prefix="gpsense-bench-kuzu-")
        nodes_csv = os.path.join(self.dir.name, "nodes.csv")
        edges_csv = os.path.join(self.dir.name, "edges.csv")
        with open(nodes_csv, "w") as f:
            for v in range(work["nodes"]):
                f.write(f"{v},{labels[v] if labels else 0}\n")
        with open(edges_csv, "w") as f:
            for s, r, t in edges:
                f.write(f"{s},{t},{r}\n")
        self.db = kuzu.Database(os.path.join(self.dir.name, "db"), buffer_pool_size=4 << 30)
        self.conn = kuzu.Connection(self.db)
        self.conn.set_max_threads_for_exec(1)
        self.conn.execute("CREATE NODE TABLE N(id INT64, l INT64, PRIMARY KEY(id))")
        self.conn.execute("CREATE REL TABLE E(FROM N TO N, r INT64)")
        self.conn.execute(f"COPY N FROM '{nodes_csv}' (header=false)")
        self.conn.execute(f"COPY E FROM '{edges_csv}' (header=false)")

    def count(self, q):
        result = self.conn.execute(q["text"])
        return int(result.get_next()[0])


class Unsupported(Exception):
    pass


PEERS = {
    "igraph-vf2": IgraphVf2,
    "igraph-lad": IgraphLad,
    "networkx-vf2": NetworkxVf2,
    "rustworkx-vf2": RustworkxVf2,
    "oxigraph-sparql": OxigraphSparql,
    "kuzu-cypher": KuzuCypher,
}


def main():
    peer, workfile, start, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    if resource is not None and peer != "kuzu-cypher":
        # A runaway answer list (LAD) should fail, not take the machine; kuzu reserves address space
        # for its buffer pool, so it is bounded by buffer_pool_size instead.
        limit = 8 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    with open(workfile) as f:
        work = json.load(f)
    t = time.perf_counter()
    edges, labels = read_graph(work)
    try:
        engine = PEERS[peer](work, edges, labels)
    except Unsupported as e:
        print(f"unsupported: {e}", file=sys.stderr)
        sys.exit(3)
    del edges
    emit({"ready": True, "load_seconds": time.perf_counter() - t})
    for i in range(start, len(work["queries"])):
        q = work["queries"][i]
        seconds = []
        if q.get("unsupported"):
            emit({"i": i, "status": "unsupported", "message": q["unsupported"]})
            continue
        try:
            while len(seconds) < max(repeat, 1):
                t = time.perf_counter()
                count = engine.count(q)
                seconds.append(time.perf_counter() - t)
                if sum(seconds) > 1.0:
                    break
            emit({"i": i, "status": "ok", "count": count, "seconds": seconds})
        except Unsupported as e:
            emit({"i": i, "status": "unsupported", "message": str(e)})
        except MemoryError:
            emit({"i": i, "status": "error", "message": "out of memory (8 GiB address-space limit)"})
        except Exception as e:  # a peer's own error, reported per query
            emit({"i": i, "status": "error", "message": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()

#!/bin/bash
# In-process query times on a GPU machine: the gpu engine against dfs and kernels (every CPU core),
# each query three times in one process (the first pays for the PTX's JIT compilation and the
# arena's growth). Needs no Rust there: carry a release binary built with the PTX embedded
# (`cargo xtask ptx && cargo build --release -p gpsense-cli --features gpsense-runtime/embed-ptx`).
#
#   GPSENSE=path/to/gpsense OUT=results-dir benches/gpu/measure.sh
#
# Writes wn_E.txt and cs_E.txt (one summary line per query run) and yeast_E.txt/.err per engine E.
set -u
B=${GPSENSE:-target/release/gpsense}
OUT=${OUT:-target/gpu-measure}
HERE=$(dirname "$0")
YEAST=datasets/subgraph-matching/yeast
mkdir -p "$OUT"
thrice() { awk '{for (i = 0; i < 3; i++) print}' "$1"; }
thrice "$HERE/wordnet.rq" > "$OUT/wordnet3.rq"
thrice "$HERE/conceptnet.rq" > "$OUT/conceptnet3.rq"
"$B" ingest datasets/wordnet30/wn30_synset.{nodes,lemmas,edges}.tsv.gz -o "$OUT/wordnet.gps" 2>&1 | tail -1
summary() { grep -E "matches|rows|error" | tee "$1"; }
for e in gpu dfs kernels; do
  echo "== WordNet, counts, $e"
  timeout 150 "$B" query --graph "$OUT/wordnet.gps" --engine $e --count --timeout-ms 20000 \
    -f "$OUT/wordnet3.rq" 2>&1 >/dev/null | summary "$OUT/wn_$e.txt"
  echo "== ConceptNet-100K, rows, $e"
  timeout 60 "$B" query --engine $e --timeout-ms 20000 -f "$OUT/conceptnet3.rq" 2>&1 >/dev/null |
    summary "$OUT/cs_$e.txt"
done
# Yeast's queries with a published count in (1e7, 1e9]: yeast-heavy.list.
mkdir -p "$OUT/yeast-heavy"
while read -r q; do cp "$YEAST/query_graph/$q" "$OUT/yeast-heavy/"; done < "$HERE/yeast-heavy.list"
for e in dfs gpu; do
  echo "== yeast, published count in (1e7, 1e9], $e"
  timeout 170 "$B" match --engine $e --timeout-ms 3000 --data "$YEAST/data_graph/yeast.graph" \
    --expected "$YEAST/yeast_ans.txt" --query "$OUT/yeast-heavy" > "$OUT/yeast_$e.txt" 2> "$OUT/yeast_$e.err"
  echo "exit $?"; tail -2 "$OUT/yeast_$e.err"
done

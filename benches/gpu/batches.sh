#!/bin/bash
# The standard suites on a GPU machine: batched gpu, dfs on every core and `auto`'s pick,
# interleaved in one run (issue 26's targets): HPRD-200 (iso and hom), yeast's 1,217 queries with a
# published count of at most 1e7, and yeast's 241 heavy ones (count in (1e7, 1e9], 3 s a query).
# Needs no Rust there: carry a release binary built with the PTX embedded.
#
#   GPSENSE=path/to/gpsense OUT=results-dir ROUNDS=3 benches/gpu/batches.sh
#
# Writes one .txt (per-query lines) and one .err (summary, batch counters, where the batch's time
# went) per suite, engine and round; summary.txt holds the summaries one after the other.
set -u
B=${GPSENSE:-target/release/gpsense}
OUT=${OUT:-target/gpu-batches}
ROUNDS=${ROUNDS:-3}
# The engines of the heavy yeast suite (the GPU alone takes about a minute there).
HEAVY=${HEAVY:-gpu dfs auto}
HERE=$(dirname "$0")
HPRD=datasets/subgraph-matching/hprd-study
YEAST=datasets/subgraph-matching/yeast
mkdir -p "$OUT/yeast-heavy"
while read -r q; do cp "$YEAST/query_graph/$q" "$OUT/yeast-heavy/"; done < "$HERE/yeast-heavy.list"

run() { # NAME ENGINE LIMIT_S ARGS...
  local name=$1 engine=$2 limit=$3
  shift 3
  timeout "$limit" "$B" match --engine "$engine" "$@" > "$OUT/$name.txt" 2> "$OUT/$name.err"
  echo "exit $?" >> "$OUT/$name.err"
  { echo "== $name"; grep -E "queries in|batch|mismatches|timed out|failed|exit" "$OUT/$name.err"; } |
    tee -a "$OUT/summary.txt"
}

for r in $(seq 1 "$ROUNDS"); do
  for s in iso hom; do
    # The published counts are iso's.
    expected=(); [ $s = iso ] && expected=(--expected "$HPRD/expected_output.res")
    for e in gpu dfs auto; do
      run "hprd_${s}_${e}_$r" $e 60 --semantics $s --data "$HPRD/data_graph/HPRD.graph" \
        --query "$HPRD/query_graph" "${expected[@]}"
    done
  done
  for e in gpu dfs auto; do
    run "yeast_${e}_$r" $e 120 --semantics iso --data "$YEAST/data_graph/yeast.graph" \
      --query "$YEAST/query_graph" --expected "$YEAST/yeast_ans.txt" --max-expected 10000000
  done
done
for e in $HEAVY; do
  run "yeast_heavy_$e" $e 200 --timeout-ms 3000 --data "$YEAST/data_graph/yeast.graph" \
    --expected "$YEAST/yeast_ans.txt" --query "$OUT/yeast-heavy"
done

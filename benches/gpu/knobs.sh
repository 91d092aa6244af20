#!/bin/bash
# The device pipeline's settings that the emulator cannot settle, measured on a GPU in one call
# (about three minutes): the emulator counts warp steps, not what a cut or a part costs in
# launches and reads on a real device.
#
#   benches/gpu/knobs.sh BUNDLE OUT
#
# 1. LIMIT roots in parts (the first of 128 candidates, each next four times larger) against the
#    root run whole (`GPSENSE_ROOT_SEGMENT` past any root's candidates), on limits.rq, each query
#    three times in one process; `dfs` beside them.
# 2. Pivot lists cut into segments: the default (256-entry segments for levels whose lists can pass
#    1,024 entries) against no cut, 64- and 1,024-entry segments, and a threshold of 4,096, on
#    WordNet's counts and ConceptNet-100K's rows one query at a time, and yeast's 1,217 queries
#    batched.
# 3. `serve` under LIMIT queries (limits.rq from 8 clients for 10 s), the device against `dfs`.
# 4. TruST on ConceptNet-100K, three templates three times each on the device and on the CPU (the
#    phases' times, the device's counters and the traversal's span from `--explain`).
#
# GPSENSE_KNOBS_ENGINE=emulated tries it on a machine without a GPU (slowly, yeast left out). Each
# step's summary lines go to OUT; the times are the `-v` lines' and `match`'s totals.
set -u
if [ $# -ne 2 ] || [ ! -x "$1/gpsense" ]; then
  echo "usage: $0 BUNDLE OUT" >&2
  echo "  BUNDLE: a folder holding the gpsense binary (cargo xtask gpu-check --bundle)" >&2
  exit 2
fi
bundle=$(cd "$1" && pwd)
out=$2
E=${GPSENSE_KNOBS_ENGINE:-gpu}
here=$(cd "$(dirname "$0")" && pwd)
G=$bundle/gpsense
YEAST=datasets/subgraph-matching/yeast
mkdir -p "$out"
SECONDS=0
step() { echo "== ${SECONDS}s $*" | tee -a "$out/steps.txt"; }
thrice() { awk '!/^#/ && NF {for (i = 0; i < 3; i++) print}' "$1"; }
summary() { grep -E "matches|rows|^(yes|no) |error|batch" > "$1"; }

thrice "$here/limits.rq" > "$out/limits3.rq"
thrice "$here/wordnet.rq" > "$out/wordnet3.rq"
thrice "$here/conceptnet.rq" > "$out/conceptnet3.rq"
"$G" ingest datasets/wordnet30/wn30_synset.{nodes,lemmas,edges}.tsv.gz -o "$out/wordnet.gps" \
  > "$out/ingest.txt" 2>&1

for root in parts whole; do
  segment=128; [ $root = whole ] && segment=1000000000
  step "LIMIT queries, $E, root in $root"
  GPSENSE_ROOT_SEGMENT=$segment timeout 60 "$G" query --engine "$E" -v --device-batch 1 \
    --timeout-ms 20000 -f "$out/limits3.rq" 2>&1 >/dev/null | summary "$out/limits_${E}_$root.txt"
done
step "LIMIT queries, dfs"
timeout 60 "$G" query --engine dfs -v --timeout-ms 20000 -f "$out/limits3.rq" 2>&1 >/dev/null |
  summary "$out/limits_dfs.txt"

# name, GPSENSE_SEGMENT, GPSENSE_LONG_LIST ('-': unset)
for cut in "default - -" "none 0 -" "seg64 64 1024" "seg1024 1024 1024" "long4096 - 4096"; do
  set -- $cut
  vars=()
  [ "$2" != - ] && vars+=("GPSENSE_SEGMENT=$2")
  [ "$3" != - ] && vars+=("GPSENSE_LONG_LIST=$3")
  step "segments $1 (${vars[*]:-defaults}): WordNet counts, ConceptNet rows, yeast batched"
  env "${vars[@]}" timeout 90 "$G" query --graph "$out/wordnet.gps" --engine "$E" -v --count \
    --device-batch 1 --timeout-ms 20000 -f "$out/wordnet3.rq" 2>&1 >/dev/null | summary "$out/wn_$1.txt"
  env "${vars[@]}" timeout 60 "$G" query --engine "$E" -v --device-batch 1 --timeout-ms 20000 \
    -f "$out/conceptnet3.rq" 2>&1 >/dev/null | summary "$out/cs_$1.txt"
  # The emulator takes minutes over yeast's queries.
  [ "$E" = emulated ] && continue
  env "${vars[@]}" timeout 90 "$G" match --engine "$E" --timeout-ms 3000 \
    --data "$YEAST/data_graph/yeast.graph" --query "$YEAST/query_graph" \
    --expected "$YEAST/yeast_ans.txt" --max-expected 10000000 > /dev/null 2> "$out/yeast_$1.err"
  echo "exit $?" >> "$out/yeast_$1.err"
done

loader=$here/../../crates/cli/tests/sparql_clients/load.py
for e in "$E" dfs; do
  step "serve --engine $e, LIMIT queries, 8 clients, 10 s"
  timeout 60 python3 "$loader" --gpsense "$G" --clients 8 --duration 10 \
    --queries "$here/limits.rq" -- --engine "$e" > "$out/serve_limits_$e.txt" 2>&1
  echo "exit $?" >> "$out/serve_limits_$e.txt"
done
step "TruST on ConceptNet-100K, $E and cpu"
for e in "$E" cpu; do
  for q in 'SELECT * WHERE { "chocolate cakes" IsA ?x . ?x HasProperty sweet }' \
    'SELECT ?x WHERE { ?x IsA animl . ?x AtLocation hom }' \
    'SELECT * WHERE { ?a IsA ?b . ?b IsA ?c . ?c HasProperty dangerous }'; do
    for run in 1 2 3; do
      echo "# $e, run $run: $q"
      timeout 60 "$G" trust --engine "$e" --explain "$q" 2>&1 >/dev/null |
        grep -E "^device|^traversal|TruST|error"
    done
  done
done > "$out/trust_cn100k.txt"
rm -f "$out/wordnet.gps"
step "done"

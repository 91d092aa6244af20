#!/bin/bash
# Everything a short GPU loan should measure for the GPU engine, in one call (the brief allows a
# few minutes of device time a session). From the repository root on the GPU machine, with a bundle
# (`cargo xtask gpu-check --bundle DIR --egsm-source PATH`) carried beside the tree:
#
#   benches/gpu/session.sh BUNDLE OUT [EGSM_QUERIES]
#
# Phase 1, while EGSM builds on cores 4-15 (its build takes minutes): the gpu engine alone, on
# cores 0-3 (it drives the device from one host thread): WordNet and ConceptNet queries three times
# each in one process, the same with the graph in pinned host memory (GPSENSE_GPU_MAPPED=1), the
# ConceptNet queries through a compressed graph (.gpsc), HPRD-200 batched and one at a time with
# the batch counters, and yeast's 241 heavy queries.
# Phase 2, all 16 cores: the bundle's gpu-check (gpu against dfs on HPRD-200 iso and hom, yeast's
# 1,217, the common-sense queries, TruST, the sanitizers) with EGSM beside it on EGSM_QUERIES
# queries per suite, then dfs on the phase-1 workloads.
# Every result goes into OUT/session.tar.gz (re-packed after each step, so a cut-off run still
# returns what it measured) and the gpu-check report to OUT/report.md and OUT/egsm.md.
set -u
bundle=$(cd "$1" && pwd)
out=$2
egsm_queries=${3:-60}
# `emulated` tries the script on a machine without a GPU (slowly; EGSM is then not built).
E=${GPSENSE_SESSION_ENGINE:-gpu}
here=$(cd "$(dirname "$0")" && pwd)
w=/tmp/gpsense-session
rm -rf "$w" && mkdir -p "$w" "$out"
G=$bundle/gpsense
YEAST=datasets/subgraph-matching/yeast
HPRD=datasets/subgraph-matching/hprd-study

save() {
  tar -czf "$out/session.tar.gz" --exclude='*.gps' --exclude='*.gpsc' --exclude=yeast-heavy \
    -C "$w" . 2>/dev/null
  for f in report.md egsm.md egsm.csv; do [ -f "$bundle/$f" ] && cp "$bundle/$f" "$out/"; done
  return 0
}
step() { echo "== $(date +%T) $*" | tee -a "$w/steps.txt"; }
thrice() { awk '{for (i = 0; i < 3; i++) print}' "$1"; }
# Summary lines only (one per query run), errors kept.
summary() { grep -E "matches|rows|error|GPU|placement|batch" > "$1"; }

step "machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv
  nproc; uname -r; "$G" --version; } > "$w/machine.txt" 2>&1
cat "$w/machine.txt"

step "EGSM build in the background on cores 4-15"
(
  SECONDS=0
  taskset -c 4-15 "$bundle/egsm/build.sh" > "$w/egsm-build.log" 2>&1
  echo "exit $? after $SECONDS s" >> "$w/egsm-build.log"
) &
build=$!

P1="taskset -c 0-3"
thrice "$here/wordnet.rq" > "$w/wordnet3.rq"
thrice "$here/conceptnet.rq" > "$w/conceptnet3.rq"
step "ingest WordNet and ConceptNet-100K, compress ConceptNet-100K"
$P1 "$G" ingest datasets/wordnet30/wn30_synset.{nodes,lemmas,edges}.tsv.gz -o "$w/wordnet.gps" > "$w/ingest.txt" 2>&1
$P1 "$G" ingest datasets/conceptnet-100k/train.txt.gz -o "$w/cn100k.gps" >> "$w/ingest.txt" 2>&1
$P1 "$G" compress "$w/cn100k.gps" --delta 0.8,0.7,0.7 -o "$w/cn100k.gpsc" >> "$w/ingest.txt" 2>&1
rm -f "$w/cn100k.gps"
save

for placement in device mapped; do
  mapped=0; [ $placement = mapped ] && mapped=1
  step "WordNet counts, gpu, graph in $placement memory"
  GPSENSE_GPU_MAPPED=$mapped timeout 120 $P1 "$G" query --graph "$w/wordnet.gps" --engine $E -v \
    --count --timeout-ms 20000 -f "$w/wordnet3.rq" 2>&1 >/dev/null | summary "$w/wn_${E}_$placement.txt"
  step "ConceptNet-100K rows, gpu, graph in $placement memory"
  GPSENSE_GPU_MAPPED=$mapped timeout 60 $P1 "$G" query --engine $E -v --timeout-ms 20000 \
    -f "$w/conceptnet3.rq" 2>&1 >/dev/null | summary "$w/cs_${E}_$placement.txt"
  save
done
step "ConceptNet-100K through its .gpsc, gpu"
timeout 60 $P1 "$G" query --graph "$w/cn100k.gpsc" --engine $E -v --timeout-ms 20000 \
  -f "$w/conceptnet3.rq" 2>&1 >/dev/null | summary "$w/cs_gpsc_$E.txt"
step "HPRD-200 iso, gpu, batched (default) and one query at a time"
for b in 256 1; do
  $P1 "$G" match --engine $E --device-batch $b --semantics iso --data "$HPRD/data_graph/HPRD.graph" \
    --query "$HPRD/query_graph" --expected "$HPRD/expected_output.res" \
    > "$w/hprd_${E}_batch$b.txt" 2> "$w/hprd_${E}_batch$b.err"
  echo "exit $?" >> "$w/hprd_${E}_batch$b.err"
done
save
if [ "$E" = gpu ] && command -v ncu >/dev/null; then
  step "ncu: occupancy and registers of the batched join kernel on HPRD-200"
  timeout 60 $P1 ncu --kernel-name regex:extend_warp -c 6 --section LaunchStats --section Occupancy \
    --section SpeedOfLight "$G" match --engine gpu --semantics iso \
    --data "$HPRD/data_graph/HPRD.graph" --query "$HPRD/query_graph" > "$w/ncu.txt" 2>&1
  echo "exit $?" >> "$w/ncu.txt"
fi
mkdir -p "$w/yeast-heavy"
while read -r q; do cp "$YEAST/query_graph/$q" "$w/yeast-heavy/"; done < "$here/yeast-heavy.list"
# GPSENSE_SESSION_HEAVY=0 leaves the GPU's heavy yeast run out (about a minute).
if [ "${GPSENSE_SESSION_HEAVY:-1}" = 1 ]; then
  step "yeast, 241 queries with a published count in (1e7, 1e9], gpu"
  timeout 120 $P1 "$G" match --engine $E --timeout-ms 3000 --data "$YEAST/data_graph/yeast.graph" \
    --expected "$YEAST/yeast_ans.txt" --query "$w/yeast-heavy" > "$w/yeast_$E.txt" 2> "$w/yeast_$E.err"
  echo "exit $?" >> "$w/yeast_$E.err"
  save
fi

step "waiting for the EGSM build"
wait $build
tail -3 "$w/egsm-build.log"
save

step "gpu-check with EGSM beside it ($egsm_queries queries per suite)"
timeout 240 "$bundle/run.sh" --engine "$E" --egsm-queries "$egsm_queries" > "$w/gpu-check.log" 2>&1
echo "exit $?" >> "$w/gpu-check.log"
save

step "dfs on the same workloads, 16 threads"
timeout 60 "$G" query --graph "$w/wordnet.gps" --engine dfs --count --timeout-ms 20000 \
  -f "$w/wordnet3.rq" 2>&1 >/dev/null | summary "$w/wn_dfs.txt"
timeout 60 "$G" query --engine dfs --timeout-ms 20000 -f "$w/conceptnet3.rq" 2>&1 >/dev/null |
  summary "$w/cs_dfs.txt"
timeout 60 "$G" query --graph "$w/cn100k.gpsc" --engine dfs --timeout-ms 20000 \
  -f "$w/conceptnet3.rq" 2>&1 >/dev/null | summary "$w/cs_gpsc_dfs.txt"
"$G" match --engine dfs --semantics iso --data "$HPRD/data_graph/HPRD.graph" \
  --query "$HPRD/query_graph" --expected "$HPRD/expected_output.res" \
  > "$w/hprd_dfs.txt" 2> "$w/hprd_dfs.err"
timeout 90 "$G" match --engine dfs --timeout-ms 3000 --data "$YEAST/data_graph/yeast.graph" \
  --expected "$YEAST/yeast_ans.txt" --query "$w/yeast-heavy" > "$w/yeast_dfs.txt" 2> "$w/yeast_dfs.err"
echo "exit $?" >> "$w/yeast_dfs.err"
rm -f "$w/wordnet.gps" "$w/cn100k.gpsc"
step "done"
save

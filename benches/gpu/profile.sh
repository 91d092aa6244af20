#!/bin/bash
# Where the GPU engine's time goes on the two suites where it loses to dfs (issue 26), in one short
# call: each kernel's device time summed by name under ncu (HPRD-200 iso batched, and one heavy
# yeast query), the batch phases of HPRD-200, and yeast's 241 heavy queries one at a time on the
# GPU with their device counters (`--search-stats`: launches, reads, levels, partial matches,
# chunks) beside dfs's search counters on the same queries.
#
#   benches/gpu/profile.sh GPSENSE OUT [HEAVY_QUERY]
#
# GPSENSE is a release binary built with the PTX embedded. About 2.5 minutes on an H100 or H200.
set -u
G=$1
out=$2
heavy_query=${3:-query_dense_16_133.graph}
here=$(cd "$(dirname "$0")" && pwd)
HPRD=datasets/subgraph-matching/hprd-study
YEAST=datasets/subgraph-matching/yeast
w=/tmp/gpsense-profile
rm -rf "$w" && mkdir -p "$w/yeast-heavy" "$out"
while read -r q; do cp "$YEAST/query_graph/$q" "$w/yeast-heavy/"; done < "$here/yeast-heavy.list"
SECONDS=0
step() { echo "== ${SECONDS}s $*" | tee -a "$w/steps.txt"; }
save() { tar -czf "$out/profile.tar.gz" -C "$w" --exclude=yeast-heavy . 2>/dev/null; return 0; }
hprd=(--semantics iso --data "$HPRD/data_graph/HPRD.graph" --query "$HPRD/query_graph"
  --expected "$HPRD/expected_output.res")

step "machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nproc; "$G" --version; } > "$w/machine.txt" 2>&1
step "HPRD-200 iso: gpu batched, dfs, three rounds"
for r in 1 2 3; do
  for e in gpu dfs; do
    "$G" match --engine $e "${hprd[@]}" > /dev/null 2> "$w/hprd_${e}_$r.err"
  done
done
step "HPRD-200 iso: gpu one query at a time, with device counters"
"$G" match --engine gpu --device-batch 1 --search-stats "${hprd[@]}" \
  > "$w/hprd_gpu_alone.txt" 2> "$w/hprd_gpu_alone.err"
save
if command -v ncu > /dev/null; then
  step "ncu: kernel times of HPRD-200 iso batched"
  timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
    "$G" match --engine gpu "${hprd[@]}" > "$w/ncu_hprd.txt" 2>&1
  echo "exit $?" >> "$w/ncu_hprd.txt"
  step "ncu: kernel times of $heavy_query alone"
  timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum --print-summary per-kernel \
    "$G" match --engine gpu --device-batch 1 --search-stats --data "$YEAST/data_graph/yeast.graph" \
    --query "$w/yeast-heavy/$heavy_query" > "$w/ncu_heavy.txt" 2>&1
  echo "exit $?" >> "$w/ncu_heavy.txt"
  save
fi
step "yeast's 241 heavy queries, gpu one at a time, 3 s each"
timeout 150 "$G" match --engine gpu --device-batch 1 --search-stats --timeout-ms 3000 \
  --data "$YEAST/data_graph/yeast.graph" --expected "$YEAST/yeast_ans.txt" \
  --query "$w/yeast-heavy" > "$w/heavy_gpu.txt" 2> "$w/heavy_gpu.err"
echo "exit $?" >> "$w/heavy_gpu.err"
save
step "yeast's 241 heavy queries, dfs, 3 s each"
timeout 60 "$G" match --engine dfs --search-stats --timeout-ms 3000 \
  --data "$YEAST/data_graph/yeast.graph" --expected "$YEAST/yeast_ans.txt" \
  --query "$w/yeast-heavy" > "$w/heavy_dfs.txt" 2> "$w/heavy_dfs.err"
echo "exit $?" >> "$w/heavy_dfs.err"
step "done"
save

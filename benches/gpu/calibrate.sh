#!/bin/bash
# `--engine auto`'s constants refreshed on a GPU machine: yeast's queries one at a time on the
# device and on dfs (the 1,217 with a published count of at most 1e7, and the 241 heavy ones of
# yeast-heavy.list under a 3 s limit), then `xtask calibrate` on their times. Writes
# OUT/device-costs.txt (for GPSENSE_DEVICE_COSTS) and OUT/calibrate.txt (how the constants
# started from and the refitted ones pick); about 30 s on an H200. Needs no Rust there: the
# bundle of `cargo xtask gpu-check --bundle` holds gpsense, xtask and the datasets.
#
#   benches/gpu/calibrate.sh BUNDLE OUT
#   ENGINE=emulated HEAVY=0 benches/gpu/calibrate.sh BUNDLE OUT   # a dry run without a GPU
set -u
bundle=$(cd "$1" && pwd)
out=$2
here=$(cd "$(dirname "$0")" && pwd)
ENGINE=${ENGINE:-gpu}
HEAVY=${HEAVY:-1}
G=$bundle/gpsense
Y=$bundle/datasets/subgraph-matching/yeast
mkdir -p "$out"
light=(--data "$Y/data_graph/yeast.graph" --query "$Y/query_graph"
  --expected "$Y/yeast_ans.txt" --max-expected 10000000)
run() { # NAME ARGS...: one query at a time, on the device and on dfs
  local name=$1
  shift
  timeout 300 "$G" match --engine "$ENGINE" --device-batch 1 --search-stats "$@" \
    > "$out/${name}_device.txt" 2> "$out/${name}_device.err"
  timeout 300 "$G" match --engine dfs "$@" > "$out/${name}_dfs.txt" 2> "$out/${name}_dfs.err"
}
run light "${light[@]}"
sets=(--device "$out/light_device.txt" --dfs "$out/light_dfs.txt")
if [ "$HEAVY" = 1 ]; then
  mkdir -p "$out/heavy"
  while read -r q; do cp "$Y/query_graph/$q" "$out/heavy/"; done < "$here/yeast-heavy.list"
  run heavy --timeout-ms 3000 --data "$Y/data_graph/yeast.graph" --query "$out/heavy"
  rm -rf "$out/heavy"
  sets+=(--device "$out/heavy_device.txt" --dfs "$out/heavy_dfs.txt")
fi
device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2> /dev/null | head -1)
"$bundle/xtask" calibrate --data "$Y/data_graph/yeast.graph" --queries "$Y/query_graph" \
  "${sets[@]}" --threads "$(nproc)" --name "${device:-$ENGINE}, refitted on yeast $(date -u +%F)" \
  -o "$out/device-costs.txt" > "$out/calibrate.txt" 2>&1
echo "exit $?" >> "$out/calibrate.txt"
cat "$out/calibrate.txt"

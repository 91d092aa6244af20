#!/bin/bash
# One call of a short GPU loan (a few minutes of the machine, each step under its own time
# limit), most wanted first, so that a cut-off call still has them: the session's measurements
# (session.sh: gpu-check with EGSM and TruST's Figure 13, WordNet and ConceptNet in both
# placements and through a .gpsc, HPRD-200 batched and alone, ncu; the GPU's own heavy yeast run
# left out unless HEAVY_GPU=1), the suites side by side (batches.sh, two rounds, the heavy tail on
# dfs and auto), `auto`'s constants refitted to yeast's lone times (calibrate.sh), the pipeline's
# settings and TruST on ConceptNet-100K (knobs.sh), and the endpoint on the device: answers under
# concurrent requests against dfs's, light requests' latency beside a heavy client, then
# throughput. `one-call.sh` runs it within a device call's limits.
#
#   benches/gpu/loan.sh BUNDLE OUT
set -u
if [ $# -ne 2 ] || [ ! -x "$1/gpsense" ]; then
  echo "usage: $0 BUNDLE OUT" >&2
  echo "  BUNDLE: a folder holding the gpsense binary (cargo xtask gpu-check --bundle)" >&2
  exit 2
fi
bundle=$(cd "$1" && pwd)
out=$2
here=$(cd "$(dirname "$0")" && pwd)
G=$bundle/gpsense
mkdir -p "$out"
SECONDS=0
log() { echo "== ${SECONDS}s $*" | tee -a "$out/loan.txt"; }

log "session.sh"
GPSENSE_SESSION_HEAVY=${HEAVY_GPU:-0} "$here/session.sh" "$bundle" "$out/session" 60 > "$out/session.log" 2>&1
log "batches.sh"
GPSENSE=$G OUT=$out/batches ROUNDS=2 HEAVY="dfs auto" "$here/batches.sh" > "$out/batches.log" 2>&1
rm -rf "$out/batches/yeast-heavy"
log "calibrate.sh"
"$here/calibrate.sh" "$bundle" "$out/calibrate" > "$out/calibrate.log" 2>&1
# What the emulator cannot settle: LIMIT roots in parts against whole, the segments' sizes, serve
# under LIMIT queries, TruST on ConceptNet-100K (knobs.sh, about three minutes; cut at four).
log "knobs.sh"
timeout 240 "$here/knobs.sh" "$bundle" "$out/knobs" > "$out/knobs.log" 2>&1
echo "exit $?" >> "$out/knobs.log"
for e in gpu auto; do
  log "serve --engine $e against dfs, concurrent"
  timeout 120 python3 "$here/serve_compare.py" --gpsense "$G" -- --engine "$e" \
    > "$out/serve_compare_$e.txt" 2>&1
  echo "exit $?" >> "$out/serve_compare_$e.txt"
done
# Whether the device's users wait for each other on a GPU: one CUDA stream between them, or
# (GPSENSE_GPU_STREAMS=1) a stream per user, whose answers the quick gpu-check compares first.
log "gpu-check --quick with a stream per user"
GPSENSE_GPU_STREAMS=1 timeout 150 "$bundle/run.sh" --quick > "$out/streams_check.log" 2>&1
echo "exit $?" >> "$out/streams_check.log"
cp "$bundle/report.md" "$out/streams_report.md" 2>/dev/null
for run in "gpu 0" "gpu 1" "dfs 0"; do
  set -- $run
  log "serve --engine $1 (GPSENSE_GPU_STREAMS=$2), light requests beside a heavy client"
  GPSENSE_GPU_STREAMS=$2 timeout 90 python3 "$here/serve_fairness.py" --gpsense "$G" \
    -- --engine "$1" > "$out/serve_fairness_$1_streams$2.txt" 2>&1
  echo "exit $?" >> "$out/serve_fairness_$1_streams$2.txt"
done
loader=$here/../../crates/cli/tests/sparql_clients/load.py
for e in gpu dfs; do
  log "serve --engine $e, 32 clients, 10 s"
  timeout 60 python3 "$loader" --gpsense "$G" --clients 32 --duration 10 -- --engine "$e" \
    > "$out/load_$e.txt" 2>&1
  echo "exit $?" >> "$out/load_$e.txt"
done
log "done"

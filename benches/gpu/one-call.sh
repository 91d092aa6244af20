#!/bin/bash
# A whole GPU loan in one device call, within the device tool's limits (a call runs at most 600 s;
# a session has 15 minutes of device time, the machine's start included; at most 8 files come
# back): loan.sh, most wanted first, cut at LOAN_SECONDS (default 500), then everything it wrote
# packed into $OUT/loan.tar.gz, with its step times in $OUT/loan.txt beside it.
#
# Here, before the loan (the bundle lives in the ignored target/, so it must be carried):
#   cargo xtask gpu-check --bundle target/loan-bundle --egsm-source PATH_TO_EGSM
# The call (run's arguments: carry ["target/loan-bundle"], timeout_s 600):
#   bash benches/gpu/one-call.sh target/loan-bundle
set -u
bundle=${1:?usage: $0 BUNDLE}
out=${OUT:?OUT: the folder whose files come back}
work=/tmp/gpsense-loan
rm -rf "$work" && mkdir -p "$work"
# GNU timeout signals its whole process group: the step running then ends too.
timeout "${LOAN_SECONDS:-500}" "$(dirname "$0")/loan.sh" "$bundle" "$work"
echo "== loan.sh exit $? after $SECONDS s" | tee -a "$work/loan.txt"
cp "$work/loan.txt" "$out/"
tar -czf "$out/loan.tar.gz" -C "$work" .
ls -la "$out"

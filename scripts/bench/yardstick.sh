#!/usr/bin/env bash
# `npm run yardstick`: the figures the project is judged by, in one command: this project through the shared
# yardstick (../shared/bench/run-ours.sh, the same clients and figures as the peer's run-peer.sh), then the
# workflow engine's own ceiling on this machine (run-temporal-ceiling.sh), then our JSON executions/s as a
# fraction of the ceiling's two-local-activity workflows/s. Compare with the peer by running
# ../shared/bench/run-peer.sh right before, back to back, nothing else heavy running (docs/benchmarks.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH=${BENCH_DIR:-$ROOT/../shared/bench}
[ -x "$BENCH/run-ours.sh" ] || { echo "yardstick: no $BENCH/run-ours.sh (set BENCH_DIR to the shared bench)" >&2; exit 2; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
"$BENCH/run-ours.sh" "$ROOT" | tee "$OUT/ours.txt"
"$BENCH/run-temporal-ceiling.sh" "$ROOT" | tee "$OUT/ceiling.txt"
ours=$(sed -n 's/^ours_execute_json_rps: \([0-9.]*\).*/\1/p' "$OUT/ours.txt")
ceiling=$(grep '^pragmas=wal' "$OUT/ceiling.txt" | grep -i 'twoLocal' | grep -oE '[0-9.]+ wf/s' | head -1 | cut -d' ' -f1 || true)
if [ -n "$ours" ] && [ -n "$ceiling" ]; then
  echo "ours_execute_json_vs_ceiling_twoLocal: $(awk -v a="$ours" -v b="$ceiling" 'BEGIN { printf "%.2f", a / b }') ratio"
fi

#!/usr/bin/env bash
# failover_soak.sh — the replication suite's failover tests over and over,
# outside CI (docs/replication.md, "Tests"): kill -9 of a primary under
# load from 8 clients, then the whole history checked for linearizability;
# and the heal (a node killed, new backups caught up, another node
# killed). Stops at the first failure and keeps its output.
#
#   bash tests/soak/failover_soak.sh [ROUNDS]     (default 20)
#
# Environment: BUILD (default build, the tree tools/test.sh builds; the
# test binary kv_e2e_cluster_replication_test must be built in it).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
ROUNDS=${1:-20}
BIN=$BUILD/bin/kv_e2e_cluster_replication_test
[ -x "$BIN" ] || { echo "failover_soak: no $BIN (build it)" >&2; exit 1; }
LOG=$(mktemp /tmp/rpkv-failover-soak-XXXXXX.log)
start=$(date +%s)
if "$BIN" --gtest_filter='*UnderLoad*:*Heals*' --gtest_repeat="$ROUNDS" \
    --gtest_break_on_failure >"$LOG" 2>&1; then
  passed=$(grep -c '^\[       OK \]' "$LOG" || true)
  echo "failover_soak: $passed runs passed in $(( $(date +%s) - start )) s" \
    "($ROUNDS rounds of the failover-under-load and heal tests)"
  grep -E "with unknown outcome|healed" "$LOG" | tail -4
  rm -f "$LOG"
else
  echo "failover_soak: a run failed; its output is in $LOG" >&2
  grep -E "Failure|FAILED" "$LOG" | head -5 >&2
  exit 1
fi

#!/usr/bin/env bash
# ctest smoke test: an rpmaperf server and one short client run per op on
# 127.0.0.1; every run must complete operations and print valid figures.
#   smoke_test.sh <rpmaperf> <port>
set -uo pipefail
PERF=$1
PORT=$2
export RPMA_PROVIDER=tcp
OPS="read write flush send atomic"
timeout 60 "$PERF" --mode=server --port="$PORT" --max_clients=5 \
  --region_size=$((4 << 20)) 2>/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null' EXIT
sleep 0.3
for op in $OPS; do
  out=$(timeout 30 "$PERF" --mode=client --port="$PORT" --op="$op" --size=256 \
    --qd=4 --seconds=0.3 --warmup_seconds=0.1 --json) || {
    echo "FAIL: --op=$op exited non-zero"; exit 1; }
  echo "$out"
  ops=$(sed -E 's/.*"ops":([0-9]+).*/\1/' <<<"$out")
  [ "${ops:-0}" -gt 0 ] || { echo "FAIL: --op=$op completed no operations"; exit 1; }
done
wait $SERVER || { echo "FAIL: server exited with $?"; exit 1; }
# bad input is refused with a usage error (exit 2), never a crash
"$PERF" --mode=client --op=nope >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: bad --op"; exit 1; }
"$PERF" --mode=client --qd=0 >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL: bad --qd"; exit 1; }
# no server: an error and exit 1 at once, not a hang (it waited for a
# CLOSED that a rejected connection never gets)
out=$(timeout 20 "$PERF" --mode=client --port="$PORT" --seconds=0.1 2>&1)
rc=$?
[ $rc -eq 1 ] || { echo "FAIL: no server: exit $rc (124 = hung), $out"; exit 1; }
grep -q "cannot connect" <<<"$out" || { echo "FAIL: no server: '$out'"; exit 1; }
echo "PASS rpmaperf smoke"

#!/usr/bin/env bash
# Bulk load figure of tools/kvcli/README.md ("Speed"): kvcli --pipe of
# 200,000 put lines into a fresh kvserver, on a file pool (msync) and a
# cache-line pool (PMEM2_FORCE_GRANULARITY=CACHE_LINE), 3 runs each, then
# the device flush floor (kvbench_flush_floor) on the same disk.
#   BUILD=build-release bash tools/kvcli/bulk_load_bench.sh
# Needs kvserver, kvcli and kvbench_flush_floor built in $BUILD (Release).
# Nothing else should run meanwhile.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
B=${BUILD:-$ROOT/build-release}/bin
PORT=${PORT:-7483}
D=$(mktemp -d /tmp/rpkv-bulk.XXXXXX)
trap 'rm -rf "$D"' EXIT
for i in $(seq 1 200000); do
  echo "put user:$i value-$i-abcdefghijklmnopqrstuvwxyz0123456789abcdefghijkl"
done >"$D/puts.txt"
for mode in file cacheline; do
  for r in 1 2 3; do
    rm -f "$D/pool"
    gran=()
    [ "$mode" = cacheline ] && gran=(PMEM2_FORCE_GRANULARITY=CACHE_LINE)
    env "${gran[@]}" "$B/kvserver" --pool="$D/pool" --pool_size=2G \
      --listen=127.0.0.1:$PORT --index_capacity=400000 >"$D/server.log" 2>&1 &
    sp=$!
    sleep 3
    echo -n "$mode run $r: "
    "$B/kvcli" --server=127.0.0.1:$PORT --pipe <"$D/puts.txt" 2>&1 | tail -1
    kill -TERM $sp
    wait $sp
  done
done
"$B/kvbench_flush_floor" --dir="$D" --threads=1 --pages=2,17,32 --count=200 2>&1 | tail -8

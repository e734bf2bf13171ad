#!/usr/bin/env bash
# move_bench.sh — the cost of a live shard move (docs/cluster.md,
# "Figures"): two kvserver nodes and etcd on 127.0.0.1, keyspace "users"
# in ONE shard on node 1, KEYS keys loaded; then kvbench (YCSB-B through
# the cluster client) runs twice for DURATION seconds: once as the
# baseline, once while `kvadmin cluster move users 0 --to=2` moves the
# whole shard to node 2 (started MOVE_AT seconds into the run). Prints
# the time from the move's start to the switch (the record gone, the map
# naming node 2), the latency percentiles of both runs side by side, and
# the dip: the moving run's 100 ms intervals (kvbench --timeline) from
# the move's start to the switch's, against the baseline's median
# interval.
#
#   BUILD=build-release bash tools/kvbench/move_bench.sh
#
# Environment: BUILD (default build-release: kvserver, kvbench, kvadmin),
# KEYS (100000), DURATION (10), MOVE_AT (2), THREADS (2), OUT (a
# temporary directory). Everything shares this machine's cores.
set -euo pipefail
BENCH=move_bench
source "$(dirname "$0")/bench_lib.sh"
KEYS=${KEYS:-100000}
DURATION=${DURATION:-10}
MOVE_AT=${MOVE_AT:-2}
THREADS=${THREADS:-2}
bench_need kvserver kvbench kvadmin
now_ms() { date +%s%3N; }
bench_etcd
ctl() { ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$EPORT" "$@"; }
bench_peer_key
for n in 1 2; do
  "$BUILD/bin/kvserver" --pool="$OUT/n$n.pool" --pool_size=1G \
    --listen="127.0.0.1:$(free_port)" --cluster="$ETCD" --node_id=$n \
    --cluster_name=bench --peer_key_file="$OUT/peer.key" >"$OUT/n$n.log" 2>&1 &
  PIDS+=($!)
  wait_log "$OUT/n$n.log" "kvserver: ready on"
done
etcd_put /rpkv/bench/map '{"format": 1, "slots": 1024, "keyspaces": [{"name": "users", "id": 1, "shards": [{"id": 0, "epoch": 1, "replicas": [1], "slots": [[0, 1023]]}]}]}'
wait_log "$OUT/n1.log" "serving shard 'users.s0' at epoch 1"

kvb() {  # label extra-flags...
  local label=$1; shift
  "$BUILD/bin/kvbench" --cluster="$ETCD" --cluster_name=bench --keyspace=users \
    --keys="$KEYS" --threads="$THREADS" --progress=false --pings=0 \
    --json="$OUT/$label.json" --timeline="$OUT/$label.csv" --timeline_ms=100 \
    "$@" >"$OUT/$label.txt" 2>&1 ||
    { echo "move_bench: kvbench $label failed:" >&2; tail -5 "$OUT/$label.txt" >&2; exit 1; }
}
echo "move_bench: loading $KEYS keys into users.s0 on node 1" >&2
kvb load --workload=c --ops=1 --warmup=0
echo "move_bench: baseline, ${DURATION}s of YCSB-B" >&2
kvb baseline --workload=b --load=false --duration="$DURATION" --warmup=0

echo "move_bench: ${DURATION}s of YCSB-B with the move at ${MOVE_AT}s" >&2
bench_start=$(now_ms)
kvb moving --workload=b --load=false --duration="$DURATION" --warmup=0 &
BENCH=$!
sleep "$MOVE_AT"
t0=$(now_ms)
move_at=$((t0 - bench_start))
"$BUILD/bin/kvadmin" --cluster="$ETCD" --cluster_name=bench cluster move users 0 --to=2 >"$OUT/move.txt" 2>&1 ||
  { cat "$OUT/move.txt" >&2; exit 1; }
switched=""
for _ in $(seq 1200); do
  if [ -z "$(ctl get /rpkv/bench/moves/users/0 --print-value-only)" ] &&
    ctl get /rpkv/bench/map --print-value-only | grep -q '"replicas":\[2\]'; then
    switched=$(( $(now_ms) - t0 )); break
  fi
  sleep 0.05
done
wait "$BENCH"
[ -n "$switched" ] || { echo "move_bench: the move did not finish in 60 s" >&2; tail -20 "$OUT/n1.log" >&2; exit 1; }
copied=$(grep -o "copied [0-9]* keys ([0-9]* bytes)" "$OUT/n1.log" | tail -1)
python3 - "$OUT" "$switched" "$copied" "$move_at" <<'PY'
import csv, json, statistics, sys
out, switched, copied, move_at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def stats(label):
    return json.load(open(f"{out}/{label}.json"))["results"]["overall"]
b, m = stats("baseline"), stats("moving")
print(f"move of users.s0 ({copied}) under YCSB-B: {switched} ms from the move's start to the switch")
print(f"{'':18}{'baseline':>12}{'with move':>12}")
for k in ("ops_per_sec", "p50_us", "p99_us", "p999_us", "max_us", "errors"):
    if k in b or k in m:
        print(f"{k:18}{b.get(k, '-'):>12}{m.get(k, '-'):>12}")
def rows(label):
    return [dict((k, float(v)) for k, v in r.items())
            for r in csv.DictReader(open(f"{out}/{label}.csv"))]
base, moving = rows("baseline"), rows("moving")
med = statistics.median(r["ops_per_sec"] for r in base) if base else 0
# kvbench connects before it measures, so its interval starts a little
# after bench_start: the window below is widened by a second each side.
lo, hi = move_at - 1000, move_at + int(switched) + 1000
win = [r for r in moving if lo <= r["t_ms"] <= hi]
print(f"baseline: median 100 ms interval {med:.0f} ops/s")
if win:
    worst = min(win, key=lambda r: r["ops_per_sec"])
    print(f"during the move (+-1 s): lowest interval {worst['ops_per_sec']:.0f} ops/s "
          f"({worst['ops_per_sec'] / med:.2f}x the baseline median) at {worst['t_ms']:.0f} ms, "
          f"highest max latency {max(r['max_us'] for r in win):.0f} us, "
          f"errors {sum(r['errors'] for r in win):.0f}")
    print("t_ms      ops/s   mean_us    max_us  errors")
    for r in win:
        print(f"{r['t_ms']:>6.0f} {r['ops_per_sec']:>9.0f} {r['mean_us']:>9.1f} "
              f"{r['max_us']:>9.0f} {r['errors']:>7.0f}")
PY

#!/usr/bin/env bash
# replication_bench.sh — what replication costs (docs/replication.md,
# "Figures"): etcd and three kvserver nodes on 127.0.0.1, keyspaces r1,
# r2 and r3 each in one shard whose primary is node 1, with 1, 2 and 3
# replicas (backups on nodes 2 and 3). kvbench runs, through the cluster
# client and in one script run, durable puts (qd 1, then 16 in flight)
# and gets on each, and prints them side by side. Then the failover
# time: kill -9 of node 1 (the primary of r2 and r3) to the first
# acknowledged put on r2 (kvcli, waiting up to 30 s), with the lease TTL
# of TTL seconds (kvserver --lease_ttl_s, default here 5 as kvserver's)
# and etcd started with ETCD_FLAGS (bench_lib.sh).
#
#   BUILD=build-release bash tools/kvbench/replication_bench.sh
#
# Environment: BUILD (default build-release: kvserver, kvbench), KEYS
# (10000), DURATION (5 s per row), THREADS (1), OUT (a temporary
# directory). Everything shares this machine's cores: the backups' CPU is
# the primary's CPU here.
set -euo pipefail
BENCH=replication_bench
source "$(dirname "$0")/bench_lib.sh"
KEYS=${KEYS:-10000}
DURATION=${DURATION:-5}
THREADS=${THREADS:-1}
TTL=${TTL:-5}
bench_need kvserver kvbench kvcli
bench_etcd
bench_peer_key
for n in 1 2 3; do
  "$BUILD/bin/kvserver" --pool="$OUT/n$n.pool" --pool_size=1G \
    --listen="127.0.0.1:$(free_port)" --cluster="$ETCD" --node_id=$n \
    --cluster_name=bench --peer_key_file="$OUT/peer.key" --rebalance=false \
    --lease_ttl_s="$TTL" \
    >"$OUT/n$n.log" 2>&1 &
  PIDS+=($!)
  wait_log "$OUT/n$n.log" "kvserver: ready on"
done
shard() {  # name id replicas
  echo "{\"name\": \"$1\", \"id\": $2, \"shards\": [{\"id\": 0, \"epoch\": 1, \"replicas\": [$3], \"slots\": [[0, 1023]]}]}"
}
MAP="{\"format\": 1, \"slots\": 1024, \"keyspaces\": [$(shard r1 1 1), $(shard r2 2 1,2), $(shard r3 3 1,2,3)]}"
etcd_put /rpkv/bench/map "$MAP"
for r in 1 2 3; do wait_log "$OUT/n1.log" "serving shard 'r$r.s0' at epoch 1"; done
wait_log "$OUT/n3.log" "backup of shard 'r3.s0' at epoch 1"

kvb() {  # label keyspace extra-flags...
  local label=$1 ks=$2; shift 2
  "$BUILD/bin/kvbench" --cluster="$ETCD" --cluster_name=bench --keyspace="$ks" \
    --keys="$KEYS" --threads="$THREADS" --progress=false --pings=0 \
    --json="$OUT/$label.json" "$@" >"$OUT/$label.txt" 2>&1 ||
    { echo "replication_bench: kvbench $label failed:" >&2; tail -5 "$OUT/$label.txt" >&2; exit 1; }
}
for r in 1 2 3; do
  echo "replication_bench: r$r: load, durable puts (qd 1, qd 16), gets" >&2
  kvb "load$r" "r$r" --workload=c --ops=1 --warmup=0
  kvb "put$r" "r$r" --workload=custom --update_ratio=1 --load=false \
    --duration="$DURATION" --warmup=0.5
  kvb "put16_$r" "r$r" --workload=custom --update_ratio=1 --load=false \
    --qd=16 --duration="$DURATION" --warmup=0.5
  kvb "get$r" "r$r" --workload=c --load=false --duration="$DURATION" --warmup=0.5
done
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def o(label):
    return json.load(open(f"{out}/{label}.json"))["results"]["overall"]
print(f"{'replicas':>9} {'put p50 us':>11} {'put p99 us':>11} {'put ops/s':>10} "
      f"{'qd16 ops/s':>11} {'get p50 us':>11} {'get p99 us':>11}")
base = None
for r in (1, 2, 3):
    p, p16, g = o(f"put{r}"), o(f"put16_{r}"), o(f"get{r}")
    if base is None: base = p["p50_us"]
    print(f"{r:>9} {p['p50_us']:>11.1f} {p['p99_us']:>11.1f} {p['ops_per_sec']:>10.0f} "
          f"{p16['ops_per_sec']:>11.0f} {g['p50_us']:>11.1f} {g['p99_us']:>11.1f}"
          f"   (put p50 {p['p50_us'] / base:.2f}x of 1 replica)")
PY
echo "replication_bench: failover: kill -9 of node 1, lease TTL ${TTL} s" >&2
kill -9 "${PIDS[1]}"
t0=$(date +%s%3N)
"$BUILD/bin/kvcli" --cluster="$ETCD" --cluster_name=bench --keyspace=r2 \
  --timeout_ms=30000 put failover x >"$OUT/failover.txt" 2>&1 ||
  { echo "replication_bench: no put acknowledged after the kill:" >&2; cat "$OUT/failover.txt" >&2; exit 1; }
t1=$(date +%s%3N)
echo "failover (lease TTL ${TTL} s): kill -9 of the primary -> first acknowledged put on its backup: $((t1 - t0)) ms"
grep -h "promoted from backup" "$OUT"/n2.log | head -1 >&2 || true

#!/usr/bin/env bash
# cluster_bench.sh — kvbench through the cluster client on 1, 2 and 3
# nodes, beside a plain kvserver reached directly, all in one run on this
# machine (docs/cluster.md, "Figures"). Starts its own etcd and kvservers
# on 127.0.0.1, writes the map itself (keyspace "users" in 4 shards spread
# over the nodes), runs each workload once per setup, prints one table of
# ops/s and p50, and stops everything it started.
#
#   BUILD=build-rel bash tools/kvbench/cluster_bench.sh
#
# Environment: BUILD (default build-release, must hold kvserver and
# kvbench), WORKLOADS ("b a"), DURATION (4), KEYS (10000), THREADS (4),
# OUT (a temporary directory). Every process shares this machine's cores:
# on 2 vCPUs more nodes cannot add throughput; the figures show what
# routing and more processes cost, not how the cluster scales.
set -euo pipefail
BENCH=cluster_bench
source "$(dirname "$0")/bench_lib.sh"
WORKLOADS=${WORKLOADS:-b a}
DURATION=${DURATION:-4}
KEYS=${KEYS:-10000}
THREADS=${THREADS:-4}
bench_need kvserver kvbench
bench_etcd

# The map: users in 4 shards, shard i on node (i mod nodes) + 1.
put_map() {  # cluster-name nodes
  local shards="" i
  for i in 0 1 2 3; do
    [ -n "$shards" ] && shards+=","
    shards+="{\"id\": $i, \"epoch\": 1, \"replicas\": [$((i % $2 + 1))], \"slots\": [[$((i * 256)), $((i * 256 + 255))]]}"
  done
  etcd_put "/rpkv/$1/map" \
    "{\"format\": 1, \"slots\": 1024, \"keyspaces\": [{\"name\": \"users\", \"id\": 1, \"shards\": [$shards]}]}"
}

bench() {  # label workload kvbench-target-flags...
  local label=$1 w=$2; shift 2
  "$BUILD/bin/kvbench" "$@" --workload="$w" --keys="$KEYS" --threads="$THREADS" \
    --duration="$DURATION" --warmup=1 --progress=false \
    --json="$OUT/$label-$w.json" >"$OUT/$label-$w.txt" 2>&1 ||
    { echo "cluster_bench: kvbench $label $w failed:" >&2; tail -5 "$OUT/$label-$w.txt" >&2; exit 1; }
  python3 - "$OUT/$label-$w.json" "$label" "$w" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["results"]["overall"]
print(f"{sys.argv[2]:<22} {sys.argv[3]:<4} {t['ops_per_sec']:>10.0f} {t['p50_us']:>9.1f}")
PY
}

echo "cluster_bench: $THREADS threads, $KEYS keys, ${DURATION} s per run, $(nproc) cores" >&2
printf '%-22s %-4s %10s %9s\n' setup wl ops/s p50_us

# Direct: one plain kvserver, keyspace users.
DPORT=$(free_port)
"$BUILD/bin/kvserver" --pool="$OUT/direct.pool" --pool_size=512M \
  --listen="127.0.0.1:$DPORT" --allow_create >"$OUT/direct.log" 2>&1 &
DPID=$!
PIDS+=($DPID)
wait_log "$OUT/direct.log" "ready on"
for w in $WORKLOADS; do
  bench direct "$w" --server="127.0.0.1:$DPORT" --keyspace=users --create
done
kill -TERM "$DPID"; wait "$DPID" 2>/dev/null || true

for n in 1 2 3; do
  name=c$n
  NODE_PIDS=()
  for i in $(seq "$n"); do
    port=$(free_port)
    "$BUILD/bin/kvserver" --pool="$OUT/$name-node$i.pool" --pool_size=512M \
      --listen="127.0.0.1:$port" --cluster="$ETCD" --cluster_name="$name" \
      --node_id="$i" >"$OUT/$name-node$i.log" 2>&1 &
    NODE_PIDS+=($!)
    PIDS+=($!)
    wait_log "$OUT/$name-node$i.log" "ready on"
  done
  put_map "$name" "$n"
  for i in $(seq "$n"); do wait_log "$OUT/$name-node$i.log" "serving shard"; done
  for w in $WORKLOADS; do
    bench "cluster, $n node(s)" "$w" --cluster="$ETCD" --cluster_name="$name" \
      --keyspace=users
  done
  for p in "${NODE_PIDS[@]}"; do kill -TERM "$p"; done
  for p in "${NODE_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
done
echo "cluster_bench: figures and logs in $OUT" >&2

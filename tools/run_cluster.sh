#!/usr/bin/env bash
# `bash tools/run.sh --cluster`: a three-node rpkv cluster on this machine,
# from a fresh clone to a kvcli prompt (docs/cluster.md, "Try it").
#
#   bash tools/run.sh --cluster [--keep] [KVCLI ARGS...]
#
# 1. installs what is missing (tools/setup.sh: etcd-server among them)
# 2. builds kvserver, kvcli and kvadmin (Release, in build-release/)
# 3. starts an etcd of its own on 127.0.0.1:23790 (data in
#    ./data/cluster/etcd; not the system's etcd, if one runs)
# 4. starts kvserver nodes 1..3 on 127.0.0.1:7401..7403 (pools
#    ./data/cluster/nodeN.pool, 256 MiB each, logs beside them, one peer
#    key ./data/cluster/peer.key for shard moves); they join cluster
#    "rpkv" and one of them becomes the controller
# 5. asks for keyspace "default" in 4 shards of 2 replicas each (a
#    primary and a backup: kill any one node and nothing acknowledged is
#    lost; docs/replication.md) and waits until the controller placed it
# 6. prints the cluster (kvadmin cluster status) and opens kvcli on it
#    (arguments after the options go to kvcli)
# and stops the nodes and etcd it started when kvcli exits (--keep leaves
# them running; stop them later with: kill $(cat data/cluster/*.pid)).
#
# Environment: RPKV_DATA (default ./data), RPKV_BUILD_DIR (build-release),
# RPKV_ETCD_PORT (23790), RPKV_NODES (3), RPKV_REPLICAS (2),
# RPKV_NODE_PORT (7400: node N
# listens on RPKV_NODE_PORT + N), RPKV_SKIP_SETUP=1 skips step 1,
# RPKV_SKIP_BUILD=1 step 2 (the binaries must be built).
# Exit code: kvcli's, or 1 when a step failed (the message says which).
set -euo pipefail
cd "$(dirname "$0")/.."

DATA=${RPKV_DATA:-data}
DIR=$DATA/cluster
BUILD=${RPKV_BUILD_DIR:-build-release}
ETCD_PORT=${RPKV_ETCD_PORT:-23790}
NODES=${RPKV_NODES:-3}
REPLICAS=${RPKV_REPLICAS:-2}
NODE_PORT=${RPKV_NODE_PORT:-7400}
ETCD_URL=etcd://127.0.0.1:$ETCD_PORT
KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --cluster) shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; break ;;
    *) break ;;
  esac
done

say() { echo "run.sh --cluster: $*" >&2; }
fail() {
  say "step $1 failed: $2"
  exit 1
}

# 1. packages, 2. build
mkdir -p "$DIR" || fail "2/6 (build)" "cannot create directory $DIR"
[ -e "$DATA/.gitignore" ] || echo '*' >"$DATA/.gitignore"
# shellcheck source=tools/run_steps.sh
. tools/run_steps.sh
run_setup_and_build 6 "$DIR/build.log"
command -v etcd >/dev/null ||
  fail "1/6 (install packages)" "no etcd binary: sudo apt-get install etcd-server"
BIN=$BUILD/bin

PIDS=()
# shellcheck disable=SC2317  # called by the EXIT trap
stop_all() {
  if [ "$KEEP" = 1 ]; then
    say "the cluster keeps running (etcd $ETCD_URL); stop it with: kill \$(cat $DIR/*.pid)"
    return
  fi
  # Nodes first (each leaves the cluster), etcd last.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    kill -TERM "${PIDS[$i]}" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "${PIDS[$i]}" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "${PIDS[$i]}" 2>/dev/null || true
    wait "${PIDS[$i]}" 2>/dev/null || true
  done
  rm -f "$DIR"/*.pid
}
trap stop_all EXIT
trap 'exit 130' INT TERM HUP

# Waits up to 30 s for `text` in `log` past byte `offset` while `pid` lives.
wait_log() {
  local log=$1 offset=$2 text=$3 pid=$4
  for _ in $(seq 300); do
    tail -c +"$((offset + 1))" "$log" 2>/dev/null | grep -q "$text" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# 3. etcd
ETCD_LOG=$DIR/etcd.log
offset=$(stat -c %s "$ETCD_LOG" 2>/dev/null || echo 0)
etcd --name rpkv-demo --data-dir "$DIR/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 100))" \
  --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 100))" \
  --initial-cluster "rpkv-demo=http://127.0.0.1:$((ETCD_PORT + 100))" \
  >>"$ETCD_LOG" 2>&1 &
PIDS+=($!)
echo "$!" >"$DIR/etcd.pid"
wait_log "$ETCD_LOG" "$offset" "ready to serve client requests" "$!" || {
  tail -20 "$ETCD_LOG" >&2
  fail "3/6 (start etcd)" "its log is above and in $ETCD_LOG; is port $ETCD_PORT taken? try RPKV_ETCD_PORT=23890"
}
say "etcd ready on 127.0.0.1:$ETCD_PORT"

# 4. nodes, sharing one peer key (shard moves: docs/cluster.md)
PEER_KEY=$DIR/peer.key
if [ ! -s "$PEER_KEY" ]; then
  (umask 077 && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$PEER_KEY")
fi
chmod 600 "$PEER_KEY"
for n in $(seq "$NODES"); do
  log=$DIR/node$n.log
  offset=$(stat -c %s "$log" 2>/dev/null || echo 0)
  "$BIN/kvserver" --pool="$DIR/node$n.pool" --pool_size=256M \
    --listen="127.0.0.1:$((NODE_PORT + n))" --cluster="$ETCD_URL" --node_id="$n" \
    --peer_key_file="$PEER_KEY" \
    >>"$log" 2>&1 &
  PIDS+=($!)
  echo "$!" >"$DIR/node$n.pid"
  wait_log "$log" "$offset" "kvserver: ready on" "$!" || {
    tail -20 "$log" >&2
    fail "4/6 (start node $n)" "its log is above and in $log"
  }
  say "node $n ready on 127.0.0.1:$((NODE_PORT + n)) (log $log)"
done

# 5. keyspace "default" (already there after a restart with --keep's data)
out=$("$BIN/kvadmin" --cluster="$ETCD_URL" cluster create-keyspace default \
  --shards=4 --replicas="$REPLICAS" 2>&1) || {
  echo "$out" | grep -q "already" ||
    { echo "$out" >&2; fail "5/6 (create keyspace)" "kvadmin's message is above"; }
}

# 6. status and the shell
"$BIN/kvadmin" --cluster="$ETCD_URL" cluster status >&2 || true
set +e
trap : INT
"$BIN/kvcli" --cluster="$ETCD_URL" --keyspace=default "$@"
rc=$?
set -e
exit "$rc"

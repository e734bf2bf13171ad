# bench_lib.sh — what the cluster benchmark scripts share (sourced by
# cluster_bench.sh, move_bench.sh, replication_bench.sh): the binaries'
# check, a process list stopped on exit, free ports, waiting for a log
# line, an etcd of their own, a peer key.
#
#   BENCH=name; source "$(dirname "$0")/bench_lib.sh"; bench_need kvserver kvbench
#
# Sets ROOT, BUILD (absolute; default build-release), OUT (default a new
# /tmp/rpkv-NAME-XXXXXX), PIDS; after bench_etcd: EPORT and ETCD.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-release}
case "$BUILD" in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
OUT=${OUT:-$(mktemp -d "/tmp/rpkv-$BENCH-XXXXXX")}
mkdir -p "$OUT"

PIDS=()
bench_cleanup() {
  for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap bench_cleanup EXIT

bench_fail() { echo "$BENCH: $*" >&2; exit 1; }

# bench_need BINARY...: each built in $BUILD/bin, and etcd installed.
bench_need() {
  local b
  for b in "$@"; do
    [ -x "$BUILD/bin/$b" ] || bench_fail "no $BUILD/bin/$b (build it)"
  done
  command -v etcd >/dev/null || bench_fail "no etcd (bash tools/setup.sh)"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_log FILE TEXT: up to 30 s for TEXT in FILE.
wait_log() {
  for _ in $(seq 300); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "$BENCH: no '$2' in $1" >&2
  tail -5 "$1" >&2
  exit 1
}

# bench_etcd: an etcd of its own on free loopback ports, data in $OUT;
# ETCD_FLAGS (e.g. "--heartbeat-interval 10 --election-timeout 100") are
# passed to it.
bench_etcd() {
  local pport
  EPORT=$(free_port)
  pport=$(free_port)
  etcd --data-dir "$OUT/etcd" --listen-client-urls "http://127.0.0.1:$EPORT" \
    --advertise-client-urls "http://127.0.0.1:$EPORT" \
    --listen-peer-urls "http://127.0.0.1:$pport" ${ETCD_FLAGS:-} >"$OUT/etcd.log" 2>&1 &
  PIDS+=($!)
  wait_log "$OUT/etcd.log" "ready to serve client requests"
  ETCD=etcd://127.0.0.1:$EPORT
}

etcd_put() {  # KEY VALUE
  ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$EPORT" put "$1" "$2" >/dev/null
}

# bench_peer_key: $OUT/peer.key (mode 600), the nodes' shared peer key.
bench_peer_key() {
  (umask 077 && head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$OUT/peer.key")
}

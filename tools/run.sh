#!/usr/bin/env bash
# The README's first command: from a fresh clone to a kvcli prompt.
#
#   bash tools/run.sh [--keep] [KVCLI ARGS...]
#   bash tools/run.sh --cluster [--keep] [KVCLI ARGS...]   (three nodes and
#       etcd on this machine: tools/run_cluster.sh)
#
# 1. installs what is missing (tools/setup.sh)
# 2. builds kvserver, kvcli and kvadmin (Release, in build-release/)
# 3. the pool ./data/rpkv.pool (sparse, 1 GiB) with keyspace "default":
#    kvserver creates it when it is not there
# 4. starts kvserver on 127.0.0.1:7400 with --allow_create (a local demo:
#    kvcli --create makes keyspaces; log: ./data/kvserver.log) and waits
#    until it is ready — or, when a kvserver already answers there, uses it
# 5. opens kvcli on keyspace "default" (arguments after the options go to
#    kvcli: `bash tools/run.sh get k`; stdin not a terminal = script mode)
# and stops the server it started when kvcli exits (--keep leaves it
# running; stop it later with: kill $(cat data/kvserver.pid)).
#
# Environment: RPKV_DATA (default ./data), RPKV_LISTEN (127.0.0.1:7400),
# RPKV_BUILD_DIR (build-release), RPKV_POOL_SIZE (1G), RPKV_SKIP_SETUP=1 skips
# step 1, RPKV_SKIP_BUILD=1 step 2 (the binaries must be built). Exit code: kvcli's, or 1 when a step failed (the message says
# which and what to do).
set -euo pipefail
cd "$(dirname "$0")/.."

# A three-node cluster instead: tools/run_cluster.sh (its --help).
for arg in "$@"; do
  [ "$arg" = "--" ] && break
  [ "$arg" = "--cluster" ] && exec bash tools/run_cluster.sh "$@"
done

DATA=${RPKV_DATA:-data}
LISTEN=${RPKV_LISTEN:-127.0.0.1:7400}
BUILD=${RPKV_BUILD_DIR:-build-release}
POOL_SIZE=${RPKV_POOL_SIZE:-1G}
POOL=$DATA/rpkv.pool
LOG=$DATA/kvserver.log
PIDFILE=$DATA/kvserver.pid
KEEP=0

while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    --) shift; break ;;
    *) break ;;
  esac
done

say() { echo "run.sh: $*" >&2; }
fail() {
  say "step $1 failed: $2"
  exit 1
}

# 1. packages, 2. build (only what this needs; a configured build dir
# keeps its settings)
mkdir -p "$DATA" || fail "2/5 (build)" "cannot create directory $DATA"
# Pool, log and pid file are this machine's, never the repository's.
[ -e "$DATA/.gitignore" ] || echo '*' >"$DATA/.gitignore"
# shellcheck source=tools/run_steps.sh
. tools/run_steps.sh
run_setup_and_build 5 "$DATA/build.log"
BIN=$BUILD/bin

# Is a kvserver already answering on $LISTEN? (a second run.sh attaches)
answers() { "$BIN/kvcli" --server="$LISTEN" --connect_timeout_ms=2000 ping >/dev/null 2>&1; }

if answers; then
  say "a kvserver already answers on $LISTEN: using it"
else
  # 3. pool and keyspace "default": kvserver creates both when the pool
  # file is missing; an existing pool without "default" gets it here.
  if [ -e "$POOL" ] &&
    ! "$BIN/kvadmin" keyspace list --pool="$POOL" 2>/dev/null | grep -q '^default	'; then
    "$BIN/kvadmin" keyspace create --pool="$POOL" --keyspace=default >&2 ||
      fail "3/5 (keyspace default)" "kvadmin info --pool=$POOL shows what is wrong"
  fi

  # 4. kvserver in the background, ready line awaited
  offset=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
  # A local demo: clients may create keyspaces (kvcli --create).
  "$BIN/kvserver" --pool="$POOL" --pool_size="$POOL_SIZE" --listen="$LISTEN" \
    --allow_create >>"$LOG" 2>&1 &
  SERVER=$!
  echo "$SERVER" >"$PIDFILE"
  # shellcheck disable=SC2317  # called by the EXIT trap
  stop_server() {
    if [ "$KEEP" = 1 ]; then
      say "kvserver (pid $SERVER) keeps running on $LISTEN; stop it with: kill $SERVER"
      return
    fi
    if kill -0 "$SERVER" 2>/dev/null; then
      kill -TERM "$SERVER" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$SERVER" 2>/dev/null || true
    fi
    wait "$SERVER" 2>/dev/null || true
    rm -f "$PIDFILE"
  }
  trap stop_server EXIT
  trap 'exit 130' INT TERM HUP
  ready=0
  for _ in $(seq 300); do
    if tail -c +"$((offset + 1))" "$LOG" 2>/dev/null | grep -q 'kvserver: ready on'; then
      ready=1
      break
    fi
    kill -0 "$SERVER" 2>/dev/null || break
    sleep 0.1
  done
  if [ "$ready" != 1 ]; then
    tail -c +"$((offset + 1))" "$LOG" | tail -20 >&2
    if ! kill -0 "$SERVER" 2>/dev/null; then
      fail "4/5 (start kvserver)" "it exited (its log is above and in $LOG); is $LISTEN taken by another program? try RPKV_LISTEN=127.0.0.1:7401"
    fi
    fail "4/5 (start kvserver)" "no ready line within 30 s (log above and in $LOG)"
  fi
  say "kvserver ready on $LISTEN (pid $SERVER, log $LOG)"
fi

# 5. the shell
set +e
# Ctrl-C while kvcli runs is kvcli's to handle: an interactive kvcli
# stops the running command and shows its prompt again, a script-mode
# kvcli ends (exit 130, and the EXIT trap stops the server). The shell
# waits for kvcli either way instead of exiting under it.
trap : INT
"$BIN/kvcli" --server="$LISTEN" --keyspace=default "$@"
rc=$?
set -e
exit "$rc"

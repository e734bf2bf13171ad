#!/usr/bin/env bash
# Runs one example program as server + client(s) on 127.0.0.1 and checks
# their exit codes and what they print. Used by ctest (label integration).
#   run_example.sh <bindir> <example> <port>
set -uo pipefail
BIN=$1/$2
NAME=$2
PORT=$3
ADDR=127.0.0.1
WORK=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$WORK"' EXIT
export RPMA_PROVIDER=${RPMA_PROVIDER:-tcp}
T="timeout 30"

fail() { echo "FAIL $NAME: $*"; for f in "$WORK"/*.out; do echo "--- $f"; cat "$f"; done; exit 1; }
expect() { grep -q -- "$2" "$WORK/$1.out" || fail "$1 did not print '$2'"; }

start_server() { $T "$BIN" server $ADDR "$PORT" "$@" >"$WORK/server.out" 2>&1 & SERVER=$!; }
run_client() { local tag=$1; shift; $T "$BIN" client $ADDR "$PORT" "$@" >"$WORK/$tag.out" 2>&1; }
wait_server() { wait "$SERVER" || fail "server exited with $?"; }

case $NAME in
  01_connection)
    start_server
    run_client client || fail "client exited with $?"
    wait_server
    expect server "request private data: hello from client"
    expect server "connection private data: hello from client"
    expect server "Connection closed"
    expect client "server private data: hello from server"
    expect client "Connection closed" ;;
  02_read)
    start_server
    run_client client || fail "client exited with $?"
    wait_server
    expect client "read 1024-byte region: Hello from the server's memory!" ;;
  03_write_flush)
    # The client's flush completes; then the server is killed -9 before it
    # can do anything itself: the message must be in the file.
    FILE=$WORK/region.bin
    start_server "$FILE"
    run_client client || fail "client exited with $?"
    expect client "flushed"
    kill -9 "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null
    grep -qa "durable hello written by the client" "$FILE" ||
      fail "flushed data missing from $FILE" ;;
  04_atomic_write)
    start_server
    run_client client || fail "client exited with $?"
    wait_server
    expect server "flag=READY payload=payload published by an atomic flag" ;;
  05_ping_pong)
    start_server
    run_client client 1000 || fail "client exited with $?"
    wait_server
    expect server "1000 rounds"
    expect client "1000 rounds" ;;
  06_imm)
    start_server
    run_client client || fail "client exited with $?"
    wait_server
    expect server "send with imm 0x1234: message with immediate"
    expect server "write with imm 0x5678: written with immediate" ;;
  07_srq|09_epoll)
    N=3
    start_server $N
    pids=()
    for i in $(seq $N); do run_client "client$i" "$i" & pids+=($!); done
    for p in "${pids[@]}"; do wait "$p" || fail "a client exited with $?"; done
    wait_server
    if [ "$NAME" = 07_srq ]; then
      expect server "6 messages from 3 connections, every qp_num matched"
    else
      expect server "3 established, 3 closed"
    fi ;;
  08_rcq_channel)
    start_server
    run_client client || fail "client exited with $?"
    wait_server
    expect client "answer on the receive CQ: PING OVER A SHARED CHANNEL" ;;
  *) fail "unknown example" ;;
esac
echo "PASS $NAME"

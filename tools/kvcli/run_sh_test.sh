#!/usr/bin/env bash
# tools/run.sh as the README uses it, against a temporary data directory
# and a free port: first run creates the pool and keyspace, starts
# kvserver, runs kvcli (script mode) and stops the server; a second run
# finds the key; --keep leaves the server up and a further run attaches
# to it; a taken port fails at step 4 with a message.
#   run_sh_test.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/rpkv-run-sh.XXXXXX)
# perl-base is on every Debian system (python3 need not be).
PORT=$(perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:0")->sockport')
export RPKV_SKIP_SETUP=1 RPKV_SKIP_BUILD=1 RPKV_DATA=$TMP/data RPKV_LISTEN=127.0.0.1:$PORT \
  RPKV_BUILD_DIR=$BUILD RPKV_POOL_SIZE=256M HOME=$TMP
KEPT=""
cleanup() {
  [ -n "$KEPT" ] && kill "$KEPT" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; echo "--- kvserver.log"; cat "$TMP/data/kvserver.log" 2>/dev/null; exit 1; }
run() { (cd "$ROOT" && timeout 120 bash tools/run.sh "$@"); }
no_server_left() {
  ! "$BUILD/bin/kvcli" --server="$RPKV_LISTEN" --connect_timeout_ms=1000 ping >/dev/null 2>&1
}

out=$(printf 'put greeting "hello world"\nget greeting\n' | run 2>"$TMP/err")
rc=$?
[ $rc -eq 0 ] || fail "first run exited $rc: $(cat "$TMP/err")"
[ "$out" = $'OK\nhello world' ] || fail "first run printed '$out'"
[ -f "$TMP/data/rpkv.pool" ] || fail "no pool file"
grep -q 'kvserver ready on' "$TMP/err" || fail "no ready message: $(cat "$TMP/err")"
no_server_left || fail "the server is still running after kvcli exited"
[ ! -e "$TMP/data/kvserver.pid" ] || fail "pid file left behind"

out=$(run get greeting 2>"$TMP/err")
[ "$out" = "hello world" ] || fail "second run printed '$out': $(cat "$TMP/err")"
run get nothing-here >/dev/null 2>&1
[ $? -eq 1 ] || fail "kvcli's exit code (1, not found) is not run.sh's"

run --keep ping >/dev/null 2>"$TMP/err" || fail "--keep run: $(cat "$TMP/err")"
KEPT=$(cat "$TMP/data/kvserver.pid")
grep -q "keeps running" "$TMP/err" || fail "--keep did not say so: $(cat "$TMP/err")"
out=$(run get greeting 2>"$TMP/err")
[ "$out" = "hello world" ] || fail "attaching run printed '$out'"
grep -q "already answers" "$TMP/err" || fail "did not attach: $(cat "$TMP/err")"
kill -0 "$KEPT" || fail "the attaching run stopped a server it did not start"

# A port another program holds: step 4 says so.
kill "$KEPT"
for _ in $(seq 100); do kill -0 "$KEPT" 2>/dev/null || break; sleep 0.1; done
KEPT=""
perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:'"$PORT"'", ReuseAddr => 1) or die; sleep 30' &
HOLDER=$!
sleep 0.5
run ping >/dev/null 2>"$TMP/err"
rc=$?
kill $HOLDER 2>/dev/null
[ $rc -eq 1 ] || fail "taken port: exit $rc"
grep -q "step 4/5 (start kvserver) failed" "$TMP/err" || fail "taken port message: $(cat "$TMP/err")"
echo "PASS"

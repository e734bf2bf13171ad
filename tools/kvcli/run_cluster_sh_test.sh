#!/usr/bin/env bash
# tools/run.sh --cluster as docs/cluster.md ("Try it") uses it, against a
# temporary data directory and free ports: the first run starts etcd and
# three nodes, creates keyspace default, runs kvcli (script mode) through
# the cluster and stops everything; a second run (same data) finds the
# keys again and says the keyspace exists; no process is left behind.
#   run_cluster_sh_test.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
command -v etcd >/dev/null || { echo "SKIP: no etcd binary (bash tools/setup.sh)"; exit 0; }
TMP=$(mktemp -d /tmp/rpkv-run-cluster-sh.XXXXXX)
# run.sh uses fixed offsets (etcd peer = client port + 100, node N = base
# + N), so a port the kernel handed out (32768..60999) says nothing about
# its neighbours, which parallel tests take as theirs (a CI run lost node
# 3's port that way). Pick a block below the ephemeral range where every
# port run.sh will use binds now.
free_block() {
  perl -MIO::Socket::INET -e '
    for (1 .. 200) {
      my $b = 12000 + 10 * int(rand(1500));
      my $ok = 1;
      for my $p ($b, $b + 100, $b + 5 .. $b + 8) {
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "127.0.0.1:$p", ReuseAddr => 1);
        if (!$s) { $ok = 0; last }
        close $s;
      }
      if ($ok) { print $b; exit 0 }
    }
    exit 1'
}
base=$(free_block) || { echo "FAIL: no free block of ports"; exit 1; }
export RPKV_SKIP_SETUP=1 RPKV_SKIP_BUILD=1 RPKV_DATA=$TMP/data RPKV_BUILD_DIR=$BUILD HOME=$TMP
export RPKV_ETCD_PORT=$base RPKV_NODE_PORT=$((base + 4))
cleanup() { rm -rf "$TMP"; }
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$TMP"/data/cluster/*.log; do echo "--- $f"; tail -20 "$f"; done
  exit 1
}
run() { (cd "$ROOT" && timeout 240 bash tools/run.sh --cluster "$@"); }
left() { pgrep -f "$TMP/data/cluster" >/dev/null; }

out=$(printf 'put a 1\nput b 2\nput c 3\nget a\nget c\n' | run 2>"$TMP/err")
rc=$?
[ $rc -eq 0 ] || fail "first run exited $rc: $(cat "$TMP/err")"
[ "$out" = $'OK\nOK\nOK\n1\n3' ] || fail "first run printed '$out': $(cat "$TMP/err")"
grep -q 'node 3 ready on' "$TMP/err" || fail "no node 3: $(cat "$TMP/err")"
grep -q 'default: id 1, 4 shards' "$TMP/err" || fail "no status: $(cat "$TMP/err")"
sleep 0.5
left && fail "a node or etcd is still running after kvcli exited"

out=$(run get b 2>"$TMP/err")
[ "$out" = "2" ] || fail "second run printed '$out': $(cat "$TMP/err")"
run get nothing-here >/dev/null 2>&1
[ $? -eq 1 ] || fail "kvcli's exit code (1, not found) is not run.sh's"
sleep 0.5
left && fail "processes left after the second run"
echo PASS

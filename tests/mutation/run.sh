#!/usr/bin/env bash
# Mutation check: applies each patch of tests/mutation/patches/ (one small
# change that would lose data, skip a check or return a wrong answer),
# builds the tests of the patch's module, runs them, reverts the patch and
# reports whether the tests noticed (killed) or not (survived).
#
#   tests/mutation/run.sh                 # every patch
#   tests/mutation/run.sh grant close     # patches whose name contains a word
#
# Modules and their tests (MODULE_TESTS below): a patch's module is its
# "Module: <name>" line, else the first directory of the file it changes
# (store/..., client/..., server/...). A mutant of a shared header (e.g.
# store/include/kv/index_lookup.h, which the client's get path runs) says
# "Module: client" to be judged by the client's tests. A new module is a
# new MODULE_TESTS entry and patches under its directory; nothing else.
# Only full test binaries are run (no filters): a kill is never hidden.
# Server mutants (77-140, 149-157) run kv_server_unit_test, kv_server_options_test
# and kv_e2e_server_test (about 100 s):
#   RPKV_MUTATION_FAST=1 tests/mutation/run.sh $(cd tests/mutation/patches &&
#     ls | awk -F- '$1 >= 77 && ($1 <= 140 || $1 >= 149) {sub(/\.patch$/, ""); print}')
#
# The working tree is never modified: the sources are copied to
# $RPKV_MUTATION_DIR/src (default build-mutation/src; tracked and
# untracked files as they are now, only changed files copied), patches
# are applied and reverted there (patch -p1 / patch -R -p1, also on
# interruption), and built in $RPKV_MUTATION_DIR/build (clang, no
# sanitizers, incremental across mutants and runs). Prints a markdown table (also written to
# $RPKV_MUTATION_DIR/report.md); exit status 1 when a mutant survived.
#
# Each patch file starts with a "What: ..." line (and, for a mutant shown
# to be equivalent, an "Equivalent: <why>" line: its survival is expected
# and does not fail the run; optionally "Module: <name>"), then a unified
# diff with a/ b/ paths relative to the repository root. Too slow for
# tools/test.sh (a rebuild and the module's suites per mutant): run it
# after changing a module's code or tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
WORK=${RPKV_MUTATION_DIR:-$ROOT/build-mutation}
SRC=$WORK/src
BUILD=$WORK/build
PATCHES=$ROOT/tests/mutation/patches
TIMEOUT=${RPKV_MUTATION_TIMEOUT:-300}
JOBS=${RPKV_MUTATION_JOBS:-2}
# RPKV_MUTATION_FAST=1: a mutant's run stops at its first failing test
# (--gtest_fail_fast, later binaries skipped): the same verdicts, fewer
# failing tests named, much less time for killed mutants.
FAST=${RPKV_MUTATION_FAST:-0}
# The test binaries that judge a module's mutants.
declare -A MODULE_TESTS=(
  [store]="kv_store_test kv_store_crash_test kv_store_pipeline_test"
  [client]="kv_client_format_test kv_client_get_path_test kv_client_clock_test kv_client_c_api_test kv_e2e_client_test"
  [server]="kv_server_unit_test kv_server_options_test kv_e2e_server_test"
  # Replication (patches 189-): the peer link, the shard table and the
  # replication e2e suite (real etcd, kvservers; about 50 s).
  [replication]="kv_server_unit_test kv_server_peer_test kv_e2e_cluster_replication_test"
  # Live moves (patch 186): the move source against an in-process target,
  # and the move e2e suite.
  [cluster]="kv_server_peer_test kv_e2e_cluster_move_test"
  # The cluster client's router and shard clients (patch 192-): the
  # shards e2e suite (real etcd, kvservers; about 30 s).
  [shards]="kv_e2e_cluster_shards_test"
)

mkdir -p "$SRC" "$BUILD"
# One run at a time per copy.
exec 9>"$WORK/lock"
flock -n 9 || { echo "another run.sh is using $WORK" >&2; exit 2; }
applied=""
revert() {
  if [ -n "$applied" ]; then
    patch -s -R -p1 -d "$SRC" <"$applied" >/dev/null || true
    applied=""
  fi
}
trap revert EXIT
trap 'revert; echo "interrupted" >&2; exit 130' INT TERM

# Refresh the copy from the working tree: a file is copied only when its
# content differs, and gets a new mtime, so ninja rebuilds exactly what
# changed — also what an interrupted run built with a mutant and then
# reverted (the revert left a source newer than the mutant's object).
# Files deleted but not yet committed are skipped.
STAGE=$WORK/stage
rm -rf "$STAGE"
mkdir -p "$STAGE"
git ls-files -co --exclude-standard -z |
  tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$STAGE"
(cd "$STAGE" && find . -type f -print0) | while IFS= read -r -d '' f; do
  if ! cmp -s "$STAGE/$f" "$SRC/$f"; then
    mkdir -p "$(dirname "$SRC/$f")"
    cp "$STAGE/$f" "$SRC/$f"
  fi
done
rm -rf "$STAGE"

if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$SRC" -B "$BUILD" -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRPKV_SANITIZE= >/dev/null
fi

# The patches to run (by the words given) and each one's module.
selected=()
declare -A module_of
for p in "$PATCHES"/*.patch; do
  name=$(basename "$p" .patch)
  if [ $# -gt 0 ]; then
    match=0
    for w in "$@"; do [[ $name == *"$w"* ]] && match=1; done
    [ $match = 1 ] || continue
  fi
  mod=$(sed -n 's/^Module: //p' "$p" | head -1)
  if [ -z "$mod" ]; then
    mod=$(sed -n 's|^+++ b/\([^/]*\)/.*|\1|p' "$p" | head -1)
  fi
  if [ -z "${MODULE_TESTS[$mod]:-}" ]; then
    echo "$name: no tests for module '$mod' (MODULE_TESTS in $0)" >&2
    exit 2
  fi
  selected+=("$p")
  module_of[$p]=$mod
done
[ ${#selected[@]} -gt 0 ] || { echo "no patch matches: $*" >&2; exit 2; }

# Builds the tests of the modules given (all of them: the baseline).
build() {
  local targets=() m
  for m in "$@"; do
    # shellcheck disable=SC2206
    targets+=(${MODULE_TESTS[$m]})
  done
  nice cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}" \
    >"$WORK/build.log" 2>&1
}

# Runs a module's suites; prints the names of failing tests ("" if none).
run_tests() {
  local failed="" t out fast=()
  [ "$FAST" = 1 ] && fast=(--gtest_fail_fast)
  for t in ${MODULE_TESTS[$1]}; do
    [ "$FAST" = 1 ] && [ -n "$failed" ] && break
    out=$(timeout "$TIMEOUT" "$BUILD/bin/$t" "${fast[@]}" 2>&1) && continue
    local names
    names=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([A-Za-z0-9_/.]*\).*/\1/p' |
      grep -v '^[0-9]*$' | sort -u | tr '\n' ' ')
    if [ -z "$names" ]; then
      # No verdict printed: the binary died (abort, sanitizer) or hung in
      # the last test it started.
      names=$(printf '%s\n' "$out" | sed -n 's/^\[ RUN      \] \([A-Za-z0-9_/.]*\).*/\1/p' | tail -1)
      names="${names:-$t}(died) "
    fi
    failed+="$names"
  done
  printf '%s' "$failed"
}

mapfile -t modules < <(printf '%s\n' "${module_of[@]}" | sort -u)
echo "== baseline (no mutation): ${modules[*]}" >&2
build "${modules[@]}" || {
  tail -20 "$WORK/build.log"
  echo "baseline does not build" >&2
  exit 2
}
for m in "${modules[@]}"; do
  base=$(run_tests "$m")
  if [ -n "$base" ]; then
    echo "baseline fails ($m): $base" >&2
    exit 2
  fi
done

report=$WORK/report.md
{
  echo "| # | module | mutant | change | result | failing tests |"
  echo "|---|---|---|---|---|---|"
} >"$report"
killed=0
survived=0
equivalent=0
for p in "${selected[@]}"; do
  name=$(basename "$p" .patch)
  mod=${module_of[$p]}
  what=$(sed -n 's/^What: //p' "$p" | head -1)
  why_equivalent=$(sed -n 's/^Equivalent: //p' "$p" | head -1)
  echo "== $name ($mod): $what" >&2
  if ! patch -s -p1 --dry-run -d "$SRC" <"$p" >/dev/null; then
    echo "| ${name%%-*} | $mod | ${name#*-} | $what | **does not apply** | |" >>"$report"
    continue
  fi
  patch -s -p1 -d "$SRC" <"$p" >/dev/null
  applied=$p
  if ! build "$mod"; then
    result="did not build"
    failed=""
  else
    failed=$(run_tests "$mod")
    if [ -n "$failed" ]; then
      result="killed"
      killed=$((killed + 1))
    elif [ -n "$why_equivalent" ]; then
      result="survived (equivalent: $why_equivalent)"
      equivalent=$((equivalent + 1))
    else
      result="**survived**"
      survived=$((survived + 1))
    fi
  fi
  revert
  # The first three failing tests are enough to say what caught it.
  short=$(printf '%s' "$failed" | tr ' ' '\n' | sed '/^$/d' | head -3 | paste -sd ' ')
  more=$(printf '%s' "$failed" | tr ' ' '\n' | sed '/^$/d' | wc -l)
  [ "$more" -gt 3 ] && short+=" (+$((more - 3)) more)"
  echo "| ${name%%-*} | $mod | ${name#*-} | $what | $result | $short |" >>"$report"
  echo "   $result ${short}" >&2
done
# Leave the copy built as the tree is (the next run starts from there).
build "${modules[@]}" || true
echo "" >>"$report"
echo "killed $killed, survived $survived, equivalent (survived as expected) $equivalent" >>"$report"
cat "$report"
[ "$survived" -eq 0 ]

# Steps 1 and 2 shared by tools/run.sh and tools/run_cluster.sh (sourced;
# they define say() and fail()): install what is missing, then build
# kvserver, kvcli and kvadmin (Release) in $BUILD, logging to $1.
#   run_setup_and_build STEPS LOG   (STEPS: the total, for "step 2/STEPS")
run_setup_and_build() {
  local steps=$1 log=$2
  if [ "${RPKV_SKIP_SETUP:-0}" != 1 ]; then
    bash tools/setup.sh ||
      fail "1/$steps (install packages)" "run 'sudo bash tools/setup.sh' (Debian 12) and try again"
  fi
  # RPKV_SKIP_BUILD=1 (the tests of run.sh, which run inside a build that
  # is already complete): no build step, the binaries must be there — a
  # build started by one test could relink what another test is reading.
  if [ "${RPKV_SKIP_BUILD:-0}" = 1 ]; then
    local b
    for b in kvserver kvcli kvadmin; do
      [ -x "$BUILD/bin/$b" ] || fail "2/$steps (build)" "RPKV_SKIP_BUILD=1 but there is no $BUILD/bin/$b"
    done
    return 0
  fi
  if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    say "configuring $BUILD (Release)"
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$log" 2>&1 || {
      tail -20 "$log" >&2
      fail "2/$steps (configure)" "output above and in $log; missing packages? sudo bash tools/setup.sh"
    }
  fi
  say "building kvserver kvcli kvadmin in $BUILD (a few minutes the first time)"
  cmake --build "$BUILD" --target kvserver kvcli kvadmin >"$log" 2>&1 || {
    tail -30 "$log" >&2
    fail "2/$steps (build)" "the compiler output is above and in $log"
  }
}

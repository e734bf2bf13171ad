#!/usr/bin/env bash
# The consumer test (ctest rpkv_consumer_test, label integration):
#   1. cmake --install BUILD --prefix P (a fresh temporary prefix);
#   2. checks what was installed: headers, librpkv.so.0 (SONAME, only the
#      rpkv_* / kv::Client / kv::Batch symbols exported, no librpma.so
#      needed), rpkv.pc, the CMake package;
#   3. builds tests/consumer twice against P: with find_package(rpkv)
#      (CMake) and with `pkg-config --cflags --libs rpkv` (one compiler
#      line per program, no build system);
#   4. starts kvserver on a free port of 127.0.0.1 and runs the four
#      programs against it.
# Exit 0: passed; 77: skipped (no kvserver built); anything else: failed.
#
#   run_consumer_test.sh --build-dir BUILD --kvserver PATH [--cc CC]
#                        [--cxx CXX] [--sanitize address,undefined]
set -euo pipefail

BUILD= KVSERVER= CC_=cc CXX_=c++ SANITIZE=
while [ $# -gt 0 ]; do
  case $1 in
    --build-dir) BUILD=$2; shift 2 ;;
    --kvserver) KVSERVER=$2; shift 2 ;;
    --cc) CC_=$2; shift 2 ;;
    --cxx) CXX_=$2; shift 2 ;;
    --sanitize) SANITIZE=$2; shift 2 ;;
    *) echo "run_consumer_test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
[ -n "$BUILD" ] || { echo "run_consumer_test.sh: --build-dir is required" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$KVSERVER" ]; then
  echo "skipped: no kvserver at '$KVSERVER' (build it first)"
  exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/rpkv-consumer.XXXXXX")
PREFIX=$WORK/prefix
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { echo "== $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }

# Sanitized builds of the library need the sanitizer runtime in the
# executable: build the consumers the same way.
# The library is C++: a C program linked by clang needs the sanitizers'
# C++ runtime parts too (vptr checks, operator new/delete).
SANFLAGS= SANLDFLAGS=
if [ -n "$SANITIZE" ]; then
  SANFLAGS="-fsanitize=$SANITIZE -fno-omit-frame-pointer"
  SANLDFLAGS=$SANFLAGS
  if "$CC_" --version 2>/dev/null | grep -q clang; then
    SANLDFLAGS="$SANLDFLAGS -fsanitize-link-c++-runtime -lstdc++"
  fi
fi

step "install into $PREFIX"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" ||
  { cat "$WORK/install.log"; fail "cmake --install"; }

step "check the installed files"
for f in include/rpkv/rpkv.h include/kv/client/client.h include/kv/status.h \
         lib/librpkv.so lib/librpkv.so.0 lib/librpkv.so.0.1.0 \
         lib/pkgconfig/rpkv.pc lib/cmake/rpkv/rpkvConfig.cmake \
         lib/cmake/rpkv/rpkvConfigVersion.cmake lib/cmake/rpkv/rpkvTargets.cmake; do
  [ -e "$PREFIX/$f" ] || fail "not installed: $f"
done
LIB=$PREFIX/lib/librpkv.so.0.1.0
readelf -d "$LIB" | grep -q 'SONAME.*\[librpkv\.so\.0\]' || fail "SONAME is not librpkv.so.0"
if readelf -d "$LIB" | grep -q 'NEEDED.*librpma'; then
  fail "librpkv.so needs librpma.so (rpma should be linked in)"
fi
# Defined, exported symbols (sanitizer runtimes' own hooks aside).
# (Absolute symbols are version nodes; @@RPKV_0 is the version.)
# (Files and here-strings, not `echo | grep -q` pipes: under pipefail a
# grep that stops at its first match can fail the pipeline by SIGPIPE.)
nm -D --defined-only "$LIB" >"$WORK/nm.txt" 2>"$WORK/nm.err" ||
  fail "nm -D $LIB: $(head -3 "$WORK/nm.err")"
exported=$(awk '$2 != "A" {print $3}' "$WORK/nm.txt" | sed 's/@.*//' | c++filt |
           grep -v -E '^(__asan|__ubsan|__sanitizer|__lsan|_init$|_fini$)' || true)
grep -qx 'rpkv_connect' <<<"$exported" ||
  fail "rpkv_connect not exported (exported: $(head -c 300 <<<"$exported"))"
grep -q '^kv::Client::Connect(' <<<"$exported" || fail "kv::Client::Connect not exported"
stray=$(grep -v -E '^(rpkv_|kv::Client::|kv::Batch::)' <<<"$exported" || true)
[ -z "$stray" ] || fail "librpkv.so exports more than its API: $(echo "$stray" | head -5)"
# Every kv/ header the installed headers include was installed too.
for h in $(grep -ho '#include "kv/[^"]*"' "$PREFIX"/include/kv/client/*.h \
             "$PREFIX"/include/kv/*.h | sed 's/#include "\(.*\)"/\1/' | sort -u); do
  [ -e "$PREFIX/include/$h" ] || fail "installed headers include $h, not installed"
done

step "build tests/consumer with find_package(rpkv)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)
cmake -S "$SRC" -B "$WORK/cmake-build" "${GEN[@]}" \
  -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_C_COMPILER="$CC_" -DCMAKE_CXX_COMPILER="$CXX_" \
  -DCMAKE_C_FLAGS="-Wall -Wextra -pedantic -Werror $SANFLAGS" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -pedantic -Werror $SANFLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="$SANLDFLAGS" >"$WORK/configure.log" ||
  { cat "$WORK/configure.log"; fail "consumer configure (find_package)"; }
cmake --build "$WORK/cmake-build" ||
  fail "consumer build (find_package)"

step "build tests/consumer with pkg-config"
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
PC_CFLAGS=$(pkg-config --cflags rpkv)
PC_LIBS=$(pkg-config --libs rpkv)
PC_LIBDIR=$(pkg-config --variable=libdir rpkv)
mkdir -p "$WORK/pc-build"
# shellcheck disable=SC2086
"$CC_" -std=c11 -Wall -Wextra -pedantic -Werror $SANFLAGS $PC_CFLAGS \
  "$SRC/consumer.c" -o "$WORK/pc-build/consumer_c" $SANLDFLAGS $PC_LIBS \
  -Wl,-rpath,"$PC_LIBDIR" || fail "consumer_c (pkg-config)"
# shellcheck disable=SC2086
"$CXX_" -std=c++17 -Wall -Wextra -pedantic -Werror $SANFLAGS $PC_CFLAGS \
  "$SRC/consumer.cc" -o "$WORK/pc-build/consumer_cpp" $PC_LIBS \
  -Wl,-rpath,"$PC_LIBDIR" || fail "consumer_cpp (pkg-config)"

step "start kvserver"
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $(( 20000 + RANDOM % 30000 ))
}
ADDR=
for attempt in 1 2 3; do
  port=$(free_port)
  log=$WORK/kvserver.$attempt.log
  "$KVSERVER" --pool="$WORK/pool" --pool_size=67108864 \
    --listen="127.0.0.1:$port" >"$log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 200); do  # 20 s
    if grep -q 'kvserver: ready on' "$log"; then ADDR=127.0.0.1:$port; break; fi
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$ADDR" ] && break
  echo "kvserver did not become ready (attempt $attempt):"; tail -5 "$log"
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
done
[ -n "$ADDR" ] || fail "kvserver never became ready"
echo "kvserver ready on $ADDR (pid $SERVER_PID)"

for prog in cmake-build/consumer_c cmake-build/consumer_cpp \
            pc-build/consumer_c pc-build/consumer_cpp; do
  step "run $prog $ADDR"
  rc=0
  timeout 60 "$WORK/$prog" "$ADDR" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "kvserver log:"; tail -20 "$WORK"/kvserver.*.log
    fail "$prog exited with $rc"
  fi
done

step "stop kvserver"
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
[ "$rc" -eq 0 ] || echo "note: kvserver exited with $rc on SIGTERM"
echo "consumer test passed"

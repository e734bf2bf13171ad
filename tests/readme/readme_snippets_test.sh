#!/usr/bin/env bash
# The README's C and C++ programs, built and run as the README shows:
# installs BUILD into a fresh prefix (cmake --install), writes the first
# ```cpp block to app.cc, the first ```c block to app.c and the first
# ```cmake block to CMakeLists.txt, starts kvserver on a free port, then
# runs the README's ```bash block of build lines (pkg-config with an
# rpath, find_package with CMAKE_PREFIX_PATH, the programs themselves).
# Substitutions: `build` -> BUILD, $HOME/rpkv -> the prefix, port 7400 ->
# the free port. The compilers add -Werror (the README promises no
# warnings under -Wall -Wextra) and, for a sanitized build, the same
# -fsanitize flags as the library (as tests/consumer does).
# Exit 0: passed; 77: skipped (no kvserver built).
#
#   readme_snippets_test.sh README.md BUILD KVSERVER CC CXX [SANITIZE]
set -euo pipefail
readme=$1 build=$(cd "$2" && pwd) kvserver=$3 cc_=$4 cxx_=$5 sanitize=${6:-}
[ -x "$kvserver" ] || { echo "skipped: no kvserver at $kvserver"; exit 77; }
work=$(mktemp -d "${TMPDIR:-/tmp}/rpkv-snippets.XXXXXX")
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAILED: $*" >&2; exit 1; }

# The n-th (1-based) fenced block of a language.
block() {
  awk -v lang="$1" -v want="$2" '
    $0 == "```" lang { n++; if (n == want) { on = 1; next } }
    on && $0 == "```" { exit }
    on { print }' "$readme"
}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
block cpp 1 | sed "s/7400/$port/g" > "$work/app.cc"
block c 1 | sed "s/7400/$port/g" > "$work/app.c"
block cmake 1 > "$work/CMakeLists.txt"
block bash 1 > "$work/build_lines.sh"
for f in app.cc app.c CMakeLists.txt build_lines.sh; do
  [ -s "$work/$f" ] || fail "README.md has no block for $f"
done
grep -q 'pkg-config --cflags --libs rpkv' "$work/build_lines.sh" || fail "no pkg-config line"
grep -q 'rpath' "$work/build_lines.sh" || fail "the pkg-config line shows no rpath"
grep -q 'CMAKE_PREFIX_PATH' "$work/build_lines.sh" || fail "no CMAKE_PREFIX_PATH"

sanflags= sanldflags=
if [ -n "$sanitize" ]; then
  sanflags="-fsanitize=$sanitize -fno-omit-frame-pointer"
  sanldflags=$sanflags
  if "$cc_" --version 2>/dev/null | grep -q clang; then
    sanldflags="$sanldflags -fsanitize-link-c++-runtime -lstdc++"
  fi
fi

"$kvserver" --pool="$work/pool" --pool_size=64M --listen="127.0.0.1:$port" \
  > "$work/kvserver.log" 2>&1 &
server_pid=$!
for _ in $(seq 200); do
  grep -q 'kvserver: ready on' "$work/kvserver.log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/kvserver.log"; fail "kvserver exited"; }
  sleep 0.1
done
grep -q 'kvserver: ready on' "$work/kvserver.log" || fail "kvserver never became ready"

prefix=$work/prefix
{
  echo "set -euo pipefail"
  echo "cc() { \"$cc_\" -Werror $sanflags \"\$@\" $sanldflags; }"
  echo "c++() { \"$cxx_\" -Werror $sanflags \"\$@\" $sanldflags; }"
  echo "export CC=\"$cc_\" CXX=\"$cxx_\" CFLAGS=\"-Wall -Wextra -Werror $sanflags\""
  echo "export CXXFLAGS=\"-Wall -Wextra -Werror $sanflags\" LDFLAGS=\"$sanldflags\""
  sed -e "s|cmake --install build |cmake --install $build |" \
      -e "s|\$HOME/rpkv|$prefix|g" "$work/build_lines.sh"
} > "$work/build.sh"
echo "--- the README's build lines, as run:"; cat "$work/build.sh"
(cd "$work" && bash "$work/build.sh") || fail "the README's build lines"
# The programs were installed too and run from the prefix.
for p in kvserver kvcli kvadmin kvbench rpmaperf; do
  [ -x "$prefix/bin/$p" ] || fail "not installed: bin/$p"
done
"$prefix/bin/kvcli" --server="127.0.0.1:$port" get k | grep -qx v ||
  fail "the installed kvcli did not read the key the README's program wrote"
"$prefix/bin/kvadmin" --help > /dev/null || fail "the installed kvadmin does not run"
echo "README snippets: built with pkg-config and find_package, ran, installed programs run"

#!/usr/bin/env bash
# Runs the README's shell blocks (```sh fences) against a temporary
# directory and a free port, so every command the README shows stays true.
#
#   readme_test.sh README.md BIN_DIR
#
# Substitutions: build/bin/ -> BIN_DIR/, /tmp/ -> a fresh temp dir, port
# 7400/7401/7491 -> a free port. Lines that set up the machine or run other test
# suites (bash tools/..., cmake, ctest, redis-server) are skipped and listed:
# those are run by tools/test.sh itself or are the README's two commands.
# A line ending in '&' starts a background server; the next line waits for
# its port. Each block runs with `set -e`; background jobs are killed after.
set -euo pipefail
readme=$1
bin=$(cd "$2" && pwd)
tmp=$(mktemp -d /tmp/rpkv-readme.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
  jobs -p | xargs -r kill 2>/dev/null || true
  pkill -f "$tmp/" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

blocks=0
skipped=0
in_block=0
script=""
run_block() {
  blocks=$((blocks + 1))
  echo "--- README block $blocks"
  printf '%s\n' "$script" | sed 's/^/    /'
  # Background servers of a block end with it.
  (cd "$tmp" && bash -e -o pipefail -c \
    "trap 'kill \$(jobs -p) 2>/dev/null; wait' EXIT"$'\n'"$script") || {
    echo "README block $blocks failed" >&2
    exit 1
  }
}
wait_port='for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/'$port') 2>/dev/null && break; sleep 0.1; done'
while IFS= read -r line; do
  if [ $in_block -eq 0 ]; then
    if [[ "$line" == '```sh' ]]; then
      in_block=1
      script=""
    fi
    continue
  fi
  if [[ "$line" == '```' ]]; then
    in_block=0
    [ -n "$script" ] && run_block
    continue
  fi
  if [[ "$line" =~ ^(bash\ tools/|cmake\ |ctest\ |redis-server) ]]; then
    echo "skip (setup/suite): $line"
    skipped=$((skipped + 1))
    continue
  fi
  # /tmp/ first: the binaries' own path may lie under /tmp.
  line=${line//\/tmp\//$tmp/}
  line=${line//build\/bin\//$bin/}
  line=${line//7400/$port}
  line=${line//7401/$port}
  line=${line//7491/$port}
  if [[ "$line" =~ \&[[:space:]]*(#.*)?$ ]]; then
    if [[ "$line" == *"$port"* ]]; then
      script+="$line"$'\n'"$wait_port"$'\n'
    else
      script+="$line"$'\n'"sleep 1"$'\n'
    fi
  else
    script+="$line"$'\n'
  fi
done < "$readme"
echo "README: $blocks shell blocks ran, $skipped setup/suite lines skipped"
[ $blocks -gt 0 ]

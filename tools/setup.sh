#!/usr/bin/env bash
# Installs every Debian package rpkv needs to build, test and run.
# Idempotent and quiet: does nothing when all are present. Run as root (or
# with sudo available) on Debian 12.
set -euo pipefail

PACKAGES=(
  # toolchain
  g++ clang clang-format libclang-rt-14-dev cmake ninja-build pkg-config make
  # rdma-core (verbs provider; ibv_* types in the public header)
  libibverbs-dev librdmacm-dev ibverbs-providers
  # persistence
  libpmem2-dev
  # offline metadata snapshots
  librocksdb-dev rocksdb-tools
  # flags, tests, benchmarks
  libgflags-dev libgtest-dev libgmock-dev qperf libhiredis-dev redis-server gnuplot-nox
  # kvcli line editing
  libedit-dev
  # cluster: the etcd client (v3 JSON gateway over libcurl) and a real etcd
  # for its tests
  libcurl4-openssl-dev nlohmann-json3-dev etcd-server etcd-client
  # process tools used by the tests
  procps psmisc iproute2
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done" >&2

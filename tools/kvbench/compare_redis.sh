#!/usr/bin/env bash
# compare_redis.sh — rpkv and Redis side by side, on this machine, with the
# same workloads (tools/kvbench/README.md). Starts redis-server twice (no
# persistence; appendonly yes + appendfsync always) and kvserver twice (a
# page-granularity file pool, and one with PMEM2_FORCE_GRANULARITY=
# CACHE_LINE: what a PMem host costs, not durable on this disk), all on
# 127.0.0.1 on free ports; runs the matrix RUNS times; prints one table of
# medians with the ratios (fits 120 columns; every figure in bench.json);
# writes bench.txt, bench.json and bench.svg under OUT; stops everything
# it started.
#
#   bash tools/kvbench/compare_redis.sh      # builds build-release/ if needed
#   RUNS=5 DURATION=10 OUT=/tmp/cmp bash tools/kvbench/compare_redis.sh
#
# Environment: BUILD (build dir, default build-release: configured and
# built here, Release, when its programs are missing), OUT (default
# /tmp/rpkv-compare-DATE), RUNS (3), DURATION (seconds per run, 5),
# WARMUP (1), KEYS (10000), KVSERVER_FLAGS (more kvserver flags, e.g.
# --spin_us=50; printed in the table's header).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build-release}
OUT=${OUT:-/tmp/rpkv-compare-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
RUNS=${RUNS:-3}
DURATION=${DURATION:-5}
WARMUP=${WARMUP:-1}
KEYS=${KEYS:-10000}
KVSERVER_FLAGS=${KVSERVER_FLAGS:-}
KVBENCH=$BUILD/bin/kvbench
KVSERVER=$BUILD/bin/kvserver

die() { echo "compare_redis: $*" >&2; exit 1; }
if [ ! -x "$KVBENCH" ] || [ ! -x "$KVSERVER" ] ||
   [ ! -x "$BUILD/bin/kvbench_flush_floor" ] || [ ! -x "$BUILD/bin/kvbench_rtt_floor" ]; then
  echo "compare_redis: building kvbench, kvserver, kvbench_flush_floor, kvbench_rtt_floor in $BUILD (Release)" >&2
  bash "$ROOT/tools/setup.sh"
  [ -f "$BUILD/CMakeCache.txt" ] ||
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD" --target kvbench kvserver kvbench_flush_floor kvbench_rtt_floor >&2
fi
[ -x "$KVBENCH" ] || die "no $KVBENCH after the build"
REDIS=$(command -v redis-server || true)
[ -n "$REDIS" ] || die "redis-server not installed: bash tools/setup.sh"
command -v gnuplot >/dev/null || echo "compare_redis: gnuplot missing: no SVG (bash tools/setup.sh)" >&2
RUNDIR=$OUT/runs  # every run's table, JSON and CDF data, kept
mkdir -p "$RUNDIR"
TMP=$(mktemp -d /tmp/kvbench-compare.XXXXXX)
PIDS=()

cleanup() {
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

listening() { ss -Hltn "sport = :$1" 2>/dev/null | grep -q .; }
free_port() {
  local p
  while :; do
    p=$((20000 + RANDOM % 40000))
    listening "$p" || { echo "$p"; return; }
  done
}
# wait_port PORT PID LOG: until something listens, or the process died.
wait_port() {
  for _ in $(seq 300); do
    listening "$1" && return 0
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
  cat "$3" >&2
  die "server (pid $2) did not listen on port $1"
}

# start_redis NAME ARGS...: sets NAME_PORT and NAME_PID.
start_redis() {
  local name=$1; shift
  local port; port=$(free_port)
  mkdir -p "$TMP/$name"
  "$REDIS" --port "$port" --bind 127.0.0.1 --save '' --dir "$TMP/$name" \
    --daemonize no --logfile "" "$@" >"$TMP/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  wait_port "$port" "$pid" "$TMP/$name.log"
  printf -v "${name}_PORT" %s "$port"
  printf -v "${name}_PID" %s "$pid"
}

# start_kvserver NAME GRANULARITY(PAGE|CACHE_LINE): sets NAME_PORT, NAME_PID.
start_kvserver() {
  local name=$1 gran=$2
  local port; port=$(free_port)
  local -a envs=()
  [ "$gran" = CACHE_LINE ] && envs=(PMEM2_FORCE_GRANULARITY=CACHE_LINE)
  env "${envs[@]}" "$KVSERVER" --pool="$TMP/$name.pool" --pool_size=1G \
    --listen="127.0.0.1:$port" --allow_create --index_capacity=$((4 * KEYS)) \
    $KVSERVER_FLAGS >"$TMP/$name.log" 2>&1 &
  local pid=$!
  PIDS+=("$pid")
  wait_port "$port" "$pid" "$TMP/$name.log"
  printf -v "${name}_PORT" %s "$port"
  printf -v "${name}_PID" %s "$pid"
}

# jget FILE OBJECT KEY: a number from kvbench's JSON (result objects are
# flat, so a pattern finds them).
jget() {
  grep -o "\"$2\":{[^{}]*}" "$1" | tail -1 | grep -o "\"$3\":[^,}]*" |
    head -1 | cut -d: -f2
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "?" || b == "?" || b == 0) print "n/a"; else printf "%.2f", a / b }'; }
met() {  # met RATIO le|ge FACTOR
  awk -v r="$1" -v d="$2" -v f="$3" 'BEGIN { if (r == "n/a") print "?"; else if ((d == "le" && r <= f) || (d == "ge" && r >= f)) print "yes"; else print "no" }'
}
fmt() { awk -v v="$1" 'BEGIN { if (v == "") print "n/a"; else if (v >= 1000) printf "%.0f", v; else printf "%.1f", v }'; }


echo "compare_redis: rpkv and Redis on this machine ($(nproc) CPUs, $(uname -sr)), 127.0.0.1" >&2
start_redis R_NONE --appendonly no
start_redis R_ALWAYS --appendonly yes --appendfsync always
start_kvserver KV_FILE PAGE
start_kvserver KV_PMEM CACHE_LINE

COMMON=(--keys="$KEYS" --key_size=16 --value_size=64 --warmup="$WARMUP"
        --duration="$DURATION" --progress=false)
target() {  # target SERVER [WAIT]: kvbench flags for one of the servers
  case $1 in
    R_NONE) echo "--backend=redis --redis=127.0.0.1:$R_NONE_PORT --server_pid=$R_NONE_PID" ;;
    R_ALWAYS) echo "--backend=redis --redis=127.0.0.1:$R_ALWAYS_PORT --server_pid=$R_ALWAYS_PID" ;;
    KV_FILE) echo "--backend=rpkv --server=127.0.0.1:$KV_FILE_PORT --keyspace=bench --create --wait=$2 --server_pid=$KV_FILE_PID" ;;
    KV_PMEM) echo "--backend=rpkv --server=127.0.0.1:$KV_PMEM_PORT --keyspace=bench --create --wait=$2 --server_pid=$KV_PMEM_PID" ;;
  esac
}

# Load every server's keys once; the runs then reuse them (--load=false).
for s in R_NONE R_ALWAYS KV_FILE KV_PMEM; do
  # shellcheck disable=SC2046
  "$KVBENCH" $(target $s poll) "${COMMON[@]}" --workload=c --ops=1 --qd=16 \
    --warmup=0 >"$TMP/load.$s.txt" 2>&1 || { cat "$TMP/load.$s.txt" >&2; die "loading $s failed"; }
  echo "compare_redis: loaded $KEYS keys into $s" >&2
done

# case ID SERVER WAIT METRIC_OP METRIC_KEY KVBENCH-ARGS...: RUNS runs; sets
# VAL_ID (median) and FILE_ID (the median run's JSON, .dat beside it).
ERRORS=0
CASES_TOTAL=$((8 * 4 * RUNS))  # rows x (3 waits + Redis) x runs
CASES_DONE=0
T_START=$(date +%s)
run_case() {
  local id=$1 server=$2 wait=$3 op=$4 key=$5; shift 5
  local vals=() i f v
  for i in $(seq "$RUNS"); do
    f="$RUNDIR/$id.$i.json"
    local left=$(( (CASES_TOTAL - CASES_DONE) * (DURATION + WARMUP + 1) ))
    if [ "$CASES_DONE" -gt 0 ]; then
      left=$(( ($(date +%s) - T_START) * (CASES_TOTAL - CASES_DONE) / CASES_DONE ))
    fi
    echo "compare_redis: [$((CASES_DONE + 1))/$CASES_TOTAL] $id run $i (about $((left / 60)) min $((left % 60)) s left)" >&2
    CASES_DONE=$((CASES_DONE + 1))
    # shellcheck disable=SC2046
    if ! "$KVBENCH" $(target "$server" "$wait") "${COMMON[@]}" --load=false \
        --label="$id" --json="$f" --plot_data="$RUNDIR/$id.$i.dat" "$@" \
        >"$RUNDIR/$id.$i.txt" 2>&1; then
      echo "compare_redis: $id run $i failed:" >&2
      tail -5 "$RUNDIR/$id.$i.txt" >&2
      ERRORS=$((ERRORS + 1))
      continue
    fi
    v=$(jget "$f" "$op" "$key")
    local e; e=$(jget "$f" overall errors)
    ERRORS=$((ERRORS + ${e:-1}))
    vals+=("$v $i")
  done
  local med="" medfile=""
  if [ ${#vals[@]} -gt 0 ]; then
    local pick; pick=$(printf '%s\n' "${vals[@]}" | sort -g | sed -n "$(( (${#vals[@]} + 1) / 2 ))p")
    med=${pick% *}
    medfile="$RUNDIR/$id.${pick#* }.json"
  fi
  printf -v "VAL_$id" %s "$med"
  printf -v "FILE_$id" %s "$medfile"
  echo "compare_redis: $id: $(printf '%s ' "${vals[@]%% *}")-> median ${med:-n/a}" >&2
}

# The matrix: each row is rpkv with each way of waiting, then Redis.
WAITS=(poll block adaptive)
YCSB=(--distribution=zipfian)
PUT=(--workload=custom --update_ratio=1 --distribution=uniform)
GET=(--workload=c --distribution=zipfian)
ROWS=()
row() {  # row ID "TITLE" OP KEY AIM(le|ge) FACTOR "AIM TEXT" RPKV_SERVER REDIS_SERVER ARGS_RPKV -- ARGS_REDIS
  local id=$1 title=$2 op=$3 key=$4 dir=$5 factor=$6 aim=$7 kv=$8 rs=$9; shift 9
  local kvargs=() rsargs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do kvargs+=("$1"); shift; done
  shift
  rsargs=("$@")
  local w
  for w in "${WAITS[@]}"; do
    run_case "${id}_$w" "$kv" "$w" "$op" "$key" "${kvargs[@]}"
  done
  run_case "${id}_redis" "$rs" - "$op" "$key" "${rsargs[@]}"
  ROWS+=("$id|$title|$op|$key|$dir|$factor|$aim")
}

row get1 "get, qd 1, warm, p50 us" read p50_us le 0.3 \
  "<= 0.3x Redis GET" KV_FILE R_NONE \
  "${GET[@]}" --threads=1 --qd=1 -- "${GET[@]}" --threads=1 --qd=1
row put1 "durable put, qd 1, file, p50 us" update p50_us le 0.8 \
  "<= 0.8x Redis always" KV_FILE R_ALWAYS \
  "${PUT[@]}" --threads=1 --qd=1 -- "${PUT[@]}" --threads=1 --qd=1
row put16 "durable put, 16 flight, file, ops/s" overall ops_per_sec ge 2 \
  ">= 2x Redis always (16 conns)" KV_FILE R_ALWAYS \
  "${PUT[@]}" --threads=2 --qd=8 -- "${PUT[@]}" --threads=16 --qd=1
row putcl "put, qd 1, cache-line, p50 us" update p50_us le 0.5 \
  "<= 0.5x Redis SET, no persist" KV_PMEM R_NONE \
  "${PUT[@]}" --threads=1 --qd=1 -- "${PUT[@]}" --threads=1 --qd=1
row getq16 "get, 1 thread, qd 16, ops/s" overall ops_per_sec ge 1 \
  ">= 1x Redis GET, pipeline 16" KV_FILE R_NONE \
  "${GET[@]}" --threads=1 --qd=16 -- "${GET[@]}" --threads=1 --qd=16
row ycsbb "YCSB-B, 16 flight, file, ops/s" overall ops_per_sec ge 1 \
  ">= 1x Redis (16 conns)" KV_FILE R_NONE \
  --workload=b "${YCSB[@]}" --threads=2 --qd=8 -- --workload=b "${YCSB[@]}" --threads=16 --qd=1
row ycsbbcl "YCSB-B, 16 flight, cache-line, ops/s" overall ops_per_sec ge 1.5 \
  ">= 1.5x Redis (16 conns)" KV_PMEM R_NONE \
  --workload=b "${YCSB[@]}" --threads=2 --qd=8 -- --workload=b "${YCSB[@]}" --threads=16 --qd=1
row ycsba "YCSB-A, 16 flight, file, ops/s" overall ops_per_sec ge 2 \
  ">= 2x Redis always (16 conns)" KV_FILE R_ALWAYS \
  --workload=a "${YCSB[@]}" --threads=2 --qd=8 -- --workload=a "${YCSB[@]}" --threads=16 --qd=1

# Idle kvserver: no client for 1 s, then its CPU over 3 s.
idle_cpu() {  # idle_cpu PID: percent of one core
  local a b
  a=$(awk '{print $14 + $15}' "/proc/$1/stat")
  sleep 3
  b=$(awk '{print $14 + $15}' "/proc/$1/stat")
  awk -v d=$((b - a)) -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.1f", 100 * d / hz / 3 }'
}
sleep 1
IDLE_FILE=$(idle_cpu "$KV_FILE_PID")
# Measured limits: a loopback round trip through each server (ping on one
# idle connection, from the get row's median runs) and one device flush
# (a 4 KiB synchronous write on the pools' file system).
LIMITS=""
for w in "${WAITS[@]}" redis; do
  f_var="FILE_get1_$w"
  v=""; [ -n "${!f_var}" ] && v=$(jget "${!f_var}" round_trip p50_us)
  LIMITS+="$w $(fmt "$v") us, "
done
FLUSH_US=$(dd if=/dev/zero of="$TMP/flush.bin" bs=4k count=300 oflag=dsync 2>&1 |
  awk '/copied/ { for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) s = $(i - 1); printf "%.0f", s * 1e6 / 300 }')
IDLE_PMEM=$(idle_cpu "$KV_PMEM_PID")
# The flush under durable puts (kvbench_flush_floor, tools/kvbench):
# an msync after stores through a mapping (what the file pool pays) and
# Redis's append + fdatasync, on the pools' file system.
# Also a group commit of 16 puts both ways: one msync of 16 random index
# pages + their log page against Redis's 16 appends + one fdatasync — the
# bound of the 16-in-flight durable rows.
MSYNC_US="?"; APPEND_US="?"; BATCH_POOL_US="?"; BATCH_REDIS_US="?"
BATCH_LOG_US="?"; BATCH_CKPT_US="?"
p50_of() {  # p50_of PREFIX FILE: the "p50 N us" figure of the line starting PREFIX
  awk -v p="$1" 'index($0, p) == 1 { for (i = 1; i <= NF; i++) if ($i == "p50") print $(i + 1) }' "$2" | tr -d ,
}
if [ -x "$BUILD/bin/kvbench_flush_floor" ]; then
  "$BUILD/bin/kvbench_flush_floor" --dir="$TMP" --threads=1 --pages=2 \
    --count=200 --batch=16 >"$TMP/flush_floor.txt" 2>/dev/null || true
  MSYNC_US=$(awk '$1 == 1 && $2 == 2 { print $3 }' "$TMP/flush_floor.txt")
  APPEND_US=$(p50_of append "$TMP/flush_floor.txt")
  BATCH_POOL_US=$(p50_of "batch pool" "$TMP/flush_floor.txt")
  BATCH_REDIS_US=$(p50_of "batch redis" "$TMP/flush_floor.txt")
  BATCH_LOG_US=$(p50_of "batch commit log" "$TMP/flush_floor.txt")
  BATCH_CKPT_US=$(awk '/^batch commit log/ { for (i = 1; i <= NF; i++) if ($i == "add") print $(i + 1) }' "$TMP/flush_floor.txt")
fi
# One loopback TCP round trip, blocking and with both sides busy-polling
# (kvbench_rtt_floor): no get, rpkv's or Redis's, is faster than one.
RTT_BLOCK_US="?"; RTT_BUSY_US="?"
if [ -x "$BUILD/bin/kvbench_rtt_floor" ]; then
  "$BUILD/bin/kvbench_rtt_floor" --count=20000 >"$TMP/rtt_floor.txt" 2>/dev/null || true
  RTT_BLOCK_US=$(p50_of block "$TMP/rtt_floor.txt")
  RTT_BUSY_US=$(p50_of busy-poll "$TMP/rtt_floor.txt")
fi

# --- the table (120 columns; bench.json has every figure) ----------------
cpu_total() {  # cpu_total FILE: client + server us/op, or empty
  [ -n "$1" ] || return 0
  local c v; c=$(jget "$1" overall client_cpu_us_per_op); v=$(jget "$1" overall server_cpu_us_per_op)
  awk -v c="$c" -v s="$v" 'BEGIN { if (c == "" || s == "" || s == "null") print ""; else printf "%.1f", c + s }'
}
cpu_server() {  # cpu_server FILE: server us/op, or empty
  [ -n "$1" ] || return 0
  local v; v=$(jget "$1" overall server_cpu_us_per_op)
  [ "$v" = null ] || echo "$v"
}
# The durable put's floor in each wait mode: the msync plus that mode's
# round trip, both measured in this run.
FLOORS=""; FLOOR_MET=()
for w in "${WAITS[@]}"; do
  f_var="FILE_get1_$w"; rt=""
  [ -n "${!f_var}" ] && rt=$(jget "${!f_var}" round_trip p50_us)
  floor=$(awk -v m="$MSYNC_US" -v r="$rt" 'BEGIN { if (m == "" || m == "?" || r == "") print ""; else printf "%.1f", m + r }')
  v_var="VAL_put1_$w"
  FLOORS+="$w $(fmt "$floor") us (put $(fmt "${!v_var}"), $(ratio "${!v_var}" "$floor")x), "
  FLOOR_MET+=("$(met "$(ratio "${!v_var}" "$floor")" le 1.15)")
done
{
  echo "rpkv vs Redis, one machine: $(hostname), $(nproc) vCPUs, $(uname -sr), rpkv $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
  echo "$(date -u +%Y-%m-%dT%H:%MZ); 127.0.0.1; 16 B keys, 64 B values, $KEYS keys; medians of $RUNS runs of ${DURATION} s (+${WARMUP} s warm-up)"
  echo "rpkv client waits: poll (busy-polls), block (sleeps on the CQ fd), adapt (polls 50 us, then blocks: the default)."
  echo "Redis: hiredis; 'always' = appendfsync always. File pool: msync (durable). kvserver flags: ${KVSERVER_FLAGS:-(defaults)}."
  echo "Cache-line pool: what a PMem host costs (NOT durable here). 16 in flight = rpkv 2 threads x qd 8 vs Redis 16 conns."
  echo "best/r = the best rpkv mode / Redis; met = poll/block/adapt."
  echo "Limits: round trip p50 (ping): ${LIMITS%, }"
  echo "        msync of 2 mapped pages ${MSYNC_US:-?} us p50; append+fdatasync (Redis always) ${APPEND_US:-?} us p50; 4 KiB O_DSYNC ${FLUSH_US:-?} us"
  echo "        group commit of 16 puts: format 3 msync (16 random index pages + log) ${BATCH_POOL_US:-?} us p50, Redis 16 appends + fdatasync ${BATCH_REDIS_US:-?} us p50"
  echo "          -> a keyspace without a commit log: 16-in-flight durable rows bounded near Redis x $(ratio "${BATCH_REDIS_US}" "${BATCH_POOL_US}") (the same batch on each side)"
  log_total=$(awk -v a="$BATCH_LOG_US" -v b="$BATCH_CKPT_US" 'BEGIN { if (a == "" || b == "" || a == "?" || b == "?") print "?"; else print a + b }')
  echo "        with a commit log (format 4, the default keyspace's; docs/format.md): records + log entries ${BATCH_LOG_US:-?} us p50, + ${BATCH_CKPT_US:-?} us of index checkpoints per batch"
  echo "          -> bound near Redis x $(ratio "${BATCH_REDIS_US}" "$log_total") (x $(ratio "${BATCH_REDIS_US}" "${BATCH_LOG_US}") with no checkpoint)$(awk -v r="$(ratio "${BATCH_REDIS_US}" "${BATCH_LOG_US}")" 'BEGIN { if (r != "n/a" && r < 2) print ": one flush per batch on each side, so no format reaches 2x here" }')"
  echo "        loopback TCP round trip (kvbench_rtt_floor): block ${RTT_BLOCK_US:-?} us, both busy-polling ${RTT_BUSY_US:-?} us p50"
  r_get=${VAL_get1_redis:-}
  echo "          -> get qd 1 >= one busy-polled round trip = $(ratio "${RTT_BUSY_US}" "$r_get")x Redis GET (any design); rpkv's get is two one-sided READs: >= $(ratio "$(awk -v r="$RTT_BUSY_US" 'BEGIN { if (r == "" || r == "?") print ""; else print 2 * r }')" "$r_get")x"
  echo
  printf '%-34s %8s %8s %8s %8s %6s  %-28s %s\n' row poll block adapt redis best/r aim met
  for r in "${ROWS[@]}"; do
    IFS='|' read -r id title op key dir factor aim <<<"$r"
    r_var="VAL_${id}_redis"
    printf '%-34s' "${title:0:34}"
    best=""; mets=()
    for w in "${WAITS[@]}"; do
      v_var="VAL_${id}_$w"
      printf ' %8s' "$(fmt "${!v_var}")"
      ra=$(ratio "${!v_var}" "${!r_var}")
      mets+=("$(met "$ra" "$dir" "$factor")")
      best=$(awk -v b="$best" -v r="$ra" -v d="$dir" 'BEGIN { if (r == "n/a") print b; else if (b == "" || (d == "le" && r < b) || (d == "ge" && r > b)) print r; else print b }')
    done
    printf ' %8s %6s  %-28s %s\n' "$(fmt "${!r_var}")" "${best:-n/a}" "${aim:0:28}" "$(IFS=/; echo "${mets[*]}")"
  done
  echo
  echo "durable put qd 1 vs its floor (msync + the same mode's round trip), aim <= 1.15x: met $(IFS=/; echo "${FLOOR_MET[*]}")"
  echo "  ${FLOORS%, }"
  echo
  printf '%-34s %8s %8s %8s %8s %6s  %s\n' "CPU us/op (client+server)" poll block adapt redis best/r aim
  for r in "${ROWS[@]}"; do
    IFS='|' read -r id title op key dir factor aim <<<"$r"
    printf '%-34s' "${title:0:34}"
    rv=$(cpu_total "$(eval echo "\${FILE_${id}_redis}")")
    best=""
    for w in "${WAITS[@]}"; do
      f_var="FILE_${id}_$w"; v=$(cpu_total "${!f_var}")
      printf ' %8s' "${v:-n/a}"
      ra=$(ratio "$v" "$rv")
      best=$(awk -v b="$best" -v r="$ra" 'BEGIN { if (r == "n/a") print b; else if (b == "" || r < b) print r; else print b }')
    done
    note=""
    [ "$id" = put16 ] && note="<= 1.5x Redis (durable put)"
    printf ' %8s %6s  %s\n' "${rv:-n/a}" "${best:-n/a}" "$note"
  done
  sv=(); for w in "${WAITS[@]}" redis; do f_var="FILE_getq16_$w"; sv+=("$(fmt "$(cpu_server "${!f_var}")")"); done
  echo "server CPU us per get (qd 16 row) poll/block/adapt/redis: $(IFS=/; echo "${sv[*]}"); aim <= 0.5x Redis"
  printf 'idle kvserver CPU %%, 1 s after the last request: file pool %s, cache-line pool %s (aim ~0)\n' "$IDLE_FILE" "$IDLE_PMEM"
  echo "errors (wrong values, failed operations) over all runs: $ERRORS"
} | tee "$OUT/bench.txt"

# --- bench.json: every row's medians and the median runs' full reports ---
{
  printf '{"machine":{"hostname":"%s","cpus":%d,"kernel":"%s","note":"client and servers on the same machine, shared with other work"},' \
    "$(hostname)" "$(nproc)" "$(uname -sr)"
  printf '"runs":%d,"duration_s":%s,"warmup_s":%s,"keys":%d,"errors":%d,' "$RUNS" "$DURATION" "$WARMUP" "$KEYS" "$ERRORS"
  printf '"idle_kvserver_cpu_percent":{"file_pool":%s,"cache_line_pool":%s},' "$IDLE_FILE" "$IDLE_PMEM"
  printf '"limits":{"round_trip_p50_us":"%s","device_flush_us":%s,"mapped_msync_p50_us":"%s","append_fdatasync_p50_us":"%s","batch16_pool_msync_p50_us":"%s","batch16_redis_fdatasync_p50_us":"%s","batch16_commit_log_msync_p50_us":"%s","batch16_commit_log_checkpoint_us":"%s","tcp_rtt_block_p50_us":"%s","tcp_rtt_busy_poll_p50_us":"%s"},"rows":[' "${LIMITS%, }" "${FLUSH_US:-null}" "${MSYNC_US:-?}" "${APPEND_US:-?}" "${BATCH_POOL_US:-?}" "${BATCH_REDIS_US:-?}" "${BATCH_LOG_US:-?}" "${BATCH_CKPT_US:-?}" "${RTT_BLOCK_US:-?}" "${RTT_BUSY_US:-?}"
  first=1
  for r in "${ROWS[@]}"; do
    IFS='|' read -r id title op key dir factor aim <<<"$r"
    [ $first = 1 ] || printf ','
    first=0
    printf '{"id":"%s","row":"%s","metric":"%s.%s","aim":"%s"' "$id" "$title" "$op" "$key" "$aim"
    for w in "${WAITS[@]}" redis; do
      v_var="VAL_${id}_$w"; f_var="FILE_${id}_$w"
      printf ',"%s":%s' "$w" "${!v_var:-null}"
      if [ -n "${!f_var}" ]; then printf ',"%s_run":' "$w"; tr -d '\n' <"${!f_var}"; fi
    done
    printf '}'
  done
  printf ']}\n'
} >"$OUT/bench.json"

# --- bench.svg: latency CDFs of the qd-1 rows and YCSB-A ------------------
spec=$TMP/plot.spec
{
  panel() {  # panel ID OP "TITLE" REDIS_LABEL
    local id=$1 op=$2 title=$3 rl=$4 w f
    echo "panel $title"
    for w in "${WAITS[@]}" redis; do
      f_var="FILE_${id}_$w"; f=${!f_var}
      [ -n "$f" ] || continue
      l=rpkv_$w
      [ "$w" = redis ] && l=$rl
      echo "series ${l}_${op} ${f%.json}.dat $op"
    done
  }
  panel get1 read "get, 1 thread, qd 1" redis
  panel put1 update "durable put, 1 thread, qd 1 (file pool vs Redis appendfsync always)" redis_always
  panel putcl update "put, 1 thread, qd 1 (cache-line pool vs Redis no persistence)" redis
  panel ycsba read "YCSB-A reads, 16 in flight (file pool vs Redis always)" redis_always
  panel ycsba update "YCSB-A updates, 16 in flight (file pool vs Redis always)" redis_always
  panel put16 update "durable put, 16 in flight (file pool vs Redis always)" redis_always
} >"$spec"
if command -v gnuplot >/dev/null; then
  "$KVBENCH" --plot="$OUT/bench.svg" --plot_spec="$spec" || echo "compare_redis: plot failed" >&2
  rm -f "$OUT/bench.svg.gp"
fi
echo "compare_redis: wrote $OUT/bench.txt, $OUT/bench.json, $OUT/bench.svg" >&2

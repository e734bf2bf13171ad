#!/usr/bin/env bash
# Side-by-side: rpmaperf (tcp provider) against qperf and the busy-poll
# TCP ping-pong floor (tcp_floor) on 127.0.0.1, in one run. Prints medians
# of --runs repetitions and the ratios the rpma issues aim at:
#   64 B read p50            vs tcp_floor busy-poll round trip  aim <= 1.5x
#   64 B read p50            vs qperf tcp_lat round trip (2 x its one-way
#                               figure)                      aim <= 1.5x
#   64 KiB write bandwidth   vs qperf tcp_bw                 aim >= 0.7x
#   64 B reads/s at qd 32                                    aim >= 600k/s
# tcp_floor --block (both sides sleep in recv) is printed for reference.
# Usage: tools/rpmaperf/compare_qperf.sh [BUILD_DIR] [SECONDS] [RUNS]
set -euo pipefail
BUILD=${1:-build}
SECS=${2:-3}
RUNS=${3:-3}
PERF="$BUILD/bin/rpmaperf"
FLOOR="$BUILD/bin/tcp_floor"
[ -x "$PERF" ] || { echo "no $PERF; build first (cmake --build $BUILD)" >&2; exit 2; }
[ -x "$FLOOR" ] || { echo "no $FLOOR; build first (--target tcp_floor)" >&2; exit 2; }
command -v qperf >/dev/null || { echo "qperf missing: bash tools/setup.sh" >&2; exit 2; }
QPORT=19765
RPORT=${RPMAPERF_PORT:-7471}
export RPMA_PROVIDER=${RPMA_PROVIDER:-tcp}

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
qfield() { awk -v k="$1" '$1==k {print $3}'; }

qperf --listen_port $QPORT >/dev/null 2>&1 & pids+=($!)
"$PERF" --mode=server --port=$RPORT 2>/dev/null & pids+=($!)
sleep 1

q_lat=(); q_bw=(); r_lat=(); r_bw=(); r_iops=(); f_busy=(); f_block=()
p50() { sed -E 's/.*"p50_us":([0-9.]+).*/\1/'; }
for i in $(seq "$RUNS"); do
  f_busy+=("$("$FLOOR" --size=64 --seconds="$SECS" --json | p50)")
  f_block+=("$("$FLOOR" --size=64 --seconds="$SECS" --block --json | p50)")
  q_lat+=("$(qperf -uu --listen_port $QPORT 127.0.0.1 -t "$SECS" -m 64 tcp_lat | qfield latency)")
  q_bw+=("$(qperf -uu --listen_port $QPORT 127.0.0.1 -t "$SECS" -m 64K tcp_bw | qfield bw)")
  j=$("$PERF" --mode=client --port=$RPORT --op=read --size=64 --qd=1 --seconds="$SECS" --json)
  r_lat+=("$(sed -E 's/.*"p50_us":([0-9.]+).*/\1/' <<<"$j")")
  j=$("$PERF" --mode=client --port=$RPORT --op=write --size=65536 --qd=8 --seconds="$SECS" --json)
  r_bw+=("$(sed -E 's/.*"mb_per_sec":([0-9.]+).*/\1/' <<<"$j")")
  j=$("$PERF" --mode=client --port=$RPORT --op=read --size=64 --qd=32 --seconds="$SECS" --json)
  r_iops+=("$(sed -E 's/.*"ops_per_sec":([0-9.]+).*/\1/' <<<"$j")")
done

ql=$(printf '%s\n' "${q_lat[@]}" | median)      # ns, one-way
qb=$(printf '%s\n' "${q_bw[@]}" | median)       # bytes/s
rl=$(printf '%s\n' "${r_lat[@]}" | median)      # us
rb=$(printf '%s\n' "${r_bw[@]}" | median)       # MB/s
ri=$(printf '%s\n' "${r_iops[@]}" | median)     # ops/s
fb=$(printf '%s\n' "${f_busy[@]}" | median)     # us, round trip
fk=$(printf '%s\n' "${f_block[@]}" | median)    # us, round trip
awk -v ql="$ql" -v qb="$qb" -v rl="$rl" -v rb="$rb" -v ri="$ri" -v fb="$fb" -v fk="$fk" -v runs="$RUNS" -v secs="$SECS" 'BEGIN {
  rtt = 2 * ql / 1000; qmb = qb / 1e6;
  printf "medians of %d runs x %ss on 127.0.0.1 (RPMA_PROVIDER=%s)\n", runs, secs, ENVIRON["RPMA_PROVIDER"];
  printf "%-34s %12s %14s %8s %s\n", "metric", "rpmaperf", "qperf", "ratio", "aim";
  printf "%-34s %9.2f us %8.2f us RTT %7.2fx %s\n", "64 B read p50 / busy-poll floor", rl, fb, rl / fb, "<= 1.5x";
  printf "%-34s %9.2f us %8.2f us RTT %7.2fx %s\n", "64 B read p50 / tcp_lat", rl, rtt, rl / rtt, "<= 1.5x";
  printf "%-34s %9.0f MB/s %9.0f MB/s %6.2fx %s\n", "64 KiB write bw (qd 8) / tcp_bw", rb, qmb, rb / qmb, ">= 0.7x";
  printf "%-34s %9.0f /s %14s %8s %s\n", "64 B read ops/s at qd 32", ri, "-", "-", ">= 600000/s";
  printf "%-34s %9.2f us (busy-poll)  %.2f us (blocking)\n", "tcp_floor 64 B ping-pong p50", fb, fk;
  printf "(qperf tcp_lat reports one-way latency %.2f us; RTT = 2x)\n", ql / 1000;
}'

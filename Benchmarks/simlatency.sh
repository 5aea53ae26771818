#!/usr/bin/env bash
# The simulator's CPU per request under its latency fault (the regime of Benchmarks/scaleout.sh
# part 1), against the same without it: h2load sends N requests, one distinct device path each,
# over C connections of 1000 streams to `apns-sim --no-ledger --threads 2`, first with
# `--faults latency-ms=L`, then with no fault, each on a fresh simulator.
#
# Each half also prints the simulator's read and write system calls per request.
#
#   simulator_cpu_us_per_request_latency=   simulator_cpu_us_per_request_no_latency=
#   simulator_latency_vs_no_latency=
#
#   Benchmarks/simlatency.sh [N] [C] [L]    defaults 200000 1 40
#   STRACE=1 Benchmarks/simlatency.sh       also counts the simulator's system calls per request
source "$(dirname "$0")/lib.sh"
N=${1:-200000}; C=${2:-1}; L=${3:-40}
bench_setup
echo "load: $(uptime)"
printf '{"aps":{"content-state":{"away":0,"home":1,"minute":63,"status":"live"},"event":"update","timestamp":1767225600}}' > "$WORK/payload.json"
# Read and write system calls a process made so far ("reads writes", /proc/PID/io): they do
# not move with the machine's load, as CPU time does.
syscalls() { awk '/^syscr/ { r = $2 } /^syscw/ { w = $2 } END { print r, w }' "/proc/$1/io"; }
declare -A SIM_US
for mode in latency no_latency; do
  args=(--no-ledger --max-streams 1000 --streams-before-auth 1000 --threads 2)
  [ "$mode" = latency ] && args+=(--faults "latency-ms=$L")
  start_sim "${args[@]}"
  SIM_PID=${PIDS[-1]}
  make_tokens "$N" "$WORK/tokens.txt"
  make_uris "$WORK/tokens.txt" "$SIM_PORT" "$WORK/uris.txt"
  s0=$(cpu_seconds "$SIM_PID"); io0=$(syscalls "$SIM_PID")
  if [ -n "${STRACE:-}" ]; then strace -c -f -p "$SIM_PID" -o "$WORK/strace.$mode" & STRACE_PID=$!; sleep 1; fi
  h2load_uris "$N" "$C" 1000 "$WORK/payload.json" "$WORK/uris.txt" "$SIM_PORT"
  s1=$(cpu_seconds "$SIM_PID"); io1=$(syscalls "$SIM_PID")
  if [ -n "${STRACE:-}" ]; then
    kill -INT "$STRACE_PID"; wait "$STRACE_PID" 2>/dev/null || true
    echo "$mode: system calls per request (strace -c; CPU figures are not comparable with it attached)"
    awk -v n="$((N + C))" '$NF ~ /^[a-z_0-9]+$/ && $4 ~ /^[0-9]+$/ { printf "  %s %.4f\n", $NF, $4 / n }' "$WORK/strace.$mode" | sort -k2 -nr | head -8
  fi
  # h2load's start-up run (one request per connection) is in the window too: C requests more.
  SIM_US[$mode]=$(cpu_us_per "$s0" "$s1" "$((N + C))")
  echo "$mode: h2load requests_per_second=$H2_RATE h2load_cpu_us_per_request=$H2_CPU_US simulator_cpu_us_per_request=${SIM_US[$mode]}" \
    "simulator_reads_writes_per_request=$(python3 -c "a='$io0'.split(); b='$io1'.split(); n=$N + $C; print(f'{(int(b[0])-int(a[0]))/n:.3f}/{(int(b[1])-int(a[1]))/n:.3f}')")"
  kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true
done
echo "simulator_cpu_us_per_request_latency=${SIM_US[latency]}"
echo "simulator_cpu_us_per_request_no_latency=${SIM_US[no_latency]}"
echo "simulator_latency_vs_no_latency=$(ratio "${SIM_US[latency]}" "${SIM_US[no_latency]}")"
echo "load_after: $(uptime)"

#!/usr/bin/env bash
# Issue #2 / #12's benchmark: the same pushes, one distinct device path each, to the same
# simulator (--no-ledger --threads 2), (1) through Herald's APNs pool and (2) with h2load
# (nghttp2's own load generator, `-i`), over the same connections and streams, with the same
# payload and headers; then (3) h2load against nghttpd (Debian's nghttp2-server) in the same
# run, to show the simulator is not the limit. Prints CPU per request of every party:
#
#   herald_cpu_us_per_push=      the pool's process, requests made included
#   h2load_cpu_us_per_request=   h2load, its start-up (parsing the URI file) taken off
#   simulator_cpu_us_per_request_herald= / _h2load=   the simulator in each half
#   nghttpd_cpu_us_per_request=   nghttpd (nghttp2's own server, answering 404) in the same run
#   pool_vs_h2load_ratio=  herald_vs_h2load_cpu_ratio=  simulator_vs_nghttpd_ratio=
#
#   Benchmarks/pool.sh [REQUESTS] [CONNECTIONS] [STREAMS]     defaults 300000 2 1000
#   LATENCY_MS=40 Benchmarks/pool.sh ...    the simulator answers each request 40 ms late
#   HERALD_BENCH=/path/herald-bench         another build's driver (before/after comparisons)
source "$(dirname "$0")/lib.sh"
N=${1:-300000}; C=${2:-2}; S=${3:-1000}
bench_setup nghttp2-server
BENCH=${HERALD_BENCH:-$BENCH}
machine
echo "load: $(uptime)"
FAULTS=()
[ -z "${LATENCY_MS:-}" ] || FAULTS=(--faults "latency-ms=$LATENCY_MS")
start_sim --no-ledger --threads "${SIM_THREADS:-2}" --max-streams "$S" --streams-before-auth "$S" "${FAULTS[@]}"
SIM_PID=${PIDS[0]}
PAYLOAD="$WORK/payload.json"
printf '{"aps":{"content-state":{"away":0,"home":1},"event":"update","timestamp":1767225600}}' > "$PAYLOAD"
make_tokens "$N" "$WORK/tokens.txt"
make_uris "$WORK/tokens.txt" "$SIM_PORT" "$WORK/uris.txt"

echo "pushes: $N, connections: $C, streams per connection: $S, payload $(wc -c < "$PAYLOAD") bytes, latency ${LATENCY_MS:-0} ms"
S0=$(cpu_seconds "$SIM_PID")
"$BENCH" pool --target "127.0.0.1:$SIM_PORT" --ca "$SIM_DIR/sim-cert.pem" --key "$SIM_KEY" --key-id "$SIM_KEY_ID" \
  --team-id "$SIM_TEAM_ID" --requests "$N" --connections "$C" --streams "$S" --tokens "$WORK/tokens.txt" \
  --payload "$PAYLOAD" > "$WORK/pool.txt"
S1=$(cpu_seconds "$SIM_PID")
POOL=$(awk -F= '/^pool_rate=/ {print $2}' "$WORK/pool.txt")
HERALD_CPU=$(awk -F= '/^herald_cpu_us_per_push=/ {print $2}' "$WORK/pool.txt")
SIM_CPU_HERALD=$(cpu_us_per "$S0" "$S1" "$N")

S0=$(cpu_seconds "$SIM_PID")
h2load_uris "$N" "$C" "$S" "$PAYLOAD" "$WORK/uris.txt" "$SIM_PORT"
S1=$(cpu_seconds "$SIM_PID")
H2=$H2_RATE; H2_CPU=$H2_CPU_US
SIM_CPU_H2=$(cpu_us_per "$S0" "$S1" "$N")

echo "herald_pool_rate=$POOL"
echo "h2load_rate=$H2"
echo "herald_cpu_us_per_push=$HERALD_CPU"
echo "h2load_cpu_us_per_request=$H2_CPU"
echo "simulator_cpu_us_per_request_herald=$SIM_CPU_HERALD"
echo "simulator_cpu_us_per_request_h2load=$SIM_CPU_H2"
echo "pool_vs_h2load_ratio=$(ratio "$POOL" "$H2")"
echo "herald_vs_h2load_cpu_ratio=$(ratio "$HERALD_CPU" "$H2_CPU")"

if [ -z "${LATENCY_MS:-}" ]; then
  start_nghttpd 2
  G0=$(cpu_seconds "$NGHTTPD_PID")
  ANY_STATUS=1 h2load_uris "$N" "$C" "$S" "$PAYLOAD" "$WORK/uris.txt" "$NGHTTPD_PORT"
  G1=$(cpu_seconds "$NGHTTPD_PID")
  echo "h2load_nghttpd_rate=$H2_RATE"
  echo "nghttpd_cpu_us_per_request=$(cpu_us_per "$G0" "$G1" "$N")"
  echo "simulator_vs_nghttpd_ratio=$(ratio "$H2" "$H2_RATE")"
fi
echo "load_after: $(uptime)"

#!/usr/bin/env bash
# Issue #5, figures 1 and 4: one channel with N subscribers, one update published through
# the HTTP API; time from the 202 to the simulator holding all N. In the same run, h2load
# sends N requests of the same size to the same simulator over the same connections and
# streams: the limit. Prints both rates, the ratio, and the server's peak RSS during the
# fan-out (VmHWM after clear_refs: the registration before it is not counted) and how much
# of it the fan-out added to what the process held when it began. h2load gets one distinct
# device path per token (`-i`, the same tokens), as the fan-out sends. CPU per request of
# every party: herald_cpu_us_per_push=, h2load_cpu_us_per_request= (its start-up, parsing
# the URI file, taken off), the simulator's in each half, and their ratio.
#
#   Benchmarks/fanout.sh [N] [CONNECTIONS] [STREAMS]     defaults 1000000 2 1000
#   SIM_THREADS=1 Benchmarks/fanout.sh                   the simulator on 1 event loop (default 2)
#   LATENCY_MS=40 Benchmarks/fanout.sh                   the simulator answers 40 ms late
#   HERALD_SERVE=/path/herald Benchmarks/fanout.sh       another build as the server (before/after)
#   ROUNDS=4 Benchmarks/fanout.sh                        after the first pair, 3 more: another update
#       to the same subscribers, then h2load again, alternating, so that both halves see the
#       machine's slow and fast minutes alike; each pair's ratios (round_R_...=) and their
#       medians (fanout_vs_h2load_ratio_median=, herald_vs_h2load_cpu_ratio_median=)
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}; C=${2:-2}; S=${3:-1000}
bench_setup
machine
echo "load: $(uptime)"
FAULTS=()
[ -z "${LATENCY_MS:-}" ] || FAULTS=(--faults "latency-ms=$LATENCY_MS")
start_sim --no-ledger --max-streams "$S" --streams-before-auth "$S" --threads "${SIM_THREADS:-2}" "${FAULTS[@]}"
[ -z "${HERALD_SERVE:-}" ] || HERALD=$HERALD_SERVE
start_serve --apns-connections "$C"
echo "subscribers: $N, connections: $C, streams per connection: $S"

api POST /v1/channels '{"id":"bench","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
make_tokens "$N" "$WORK/tokens.txt"
T0=$(now)
HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import bench "$WORK/tokens.txt" --server "$API" --batch-size 50000 > "$WORK/import.txt" 2>&1
T1=$(now)
echo "registered $N tokens in $(python3 -c "print(f'{$T1-$T0:.1f}')") s"
RSS_BEFORE=$(peak_rss_mib "$API_PID")
# The fan-out's own peak: reset the kernel's high-water mark now (clear_refs 5).
echo 5 > "/proc/$API_PID/clear_refs" 2>/dev/null || true
RSS_START=$(awk '/VmRSS/ { printf "%.1f\n", $2/1024 }' "/proc/$API_PID/status")

SIM_PID=${PIDS[0]}
# One fan-out: an update (BODY) to the N subscribers, timed from the publish to the
# simulator holding them all; sets EVENT, SECONDS_FANOUT, FANOUT_RATE and the CPU per push
# of Herald (CPU_HERALD) and of the simulator (CPU_SIM). The caller waits for the event's end.
herald_half() { # BODY
  sim_reset
  local h0 s0 start end
  h0=$(cpu_seconds "$API_PID"); s0=$(cpu_seconds "$SIM_PID")
  start=$(now)
  EVENT=$(api POST /v1/channels/bench/events "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["event_id"])')
  end=$(wait_accepted "$N")
  CPU_HERALD=$(cpu_us_per "$h0" "$(cpu_seconds "$API_PID")" "$N")
  CPU_SIM=$(cpu_us_per "$s0" "$(cpu_seconds "$SIM_PID")" "$N")
  SECONDS_FANOUT=$(python3 -c "print(f'{$end-$start:.3f}')")
  FANOUT_RATE=$(python3 -c "print(f'{$N/($end-$start):.0f}')")
}
wait_done() { until api GET "/v1/channels/bench/events/$EVENT" | grep -q '"state":"done"'; do sleep 0.05; done; }
# The limit: h2load, same simulator, same connections and streams, a payload of the same
# size; sets H2_RATE, H2_CPU_US and the simulator's CPU per request (CPU_SIM_H2).
h2load_half() {
  sim_reset
  local s0; s0=$(cpu_seconds "$SIM_PID")
  h2load_uris "$N" "$C" "$S" "$WORK/payload.json" "$WORK/uris.txt" "$SIM_PORT"
  CPU_SIM_H2=$(cpu_us_per "$s0" "$(cpu_seconds "$SIM_PID")" "$N")
}
update() { echo "{\"aps\":{\"event\":\"update\",\"content-state\":{\"home\":$1,\"away\":0,\"minute\":63,\"status\":\"live\"}},\"priority\":5}"; }

PROC_HERALD0=$(proc_counters "$API_PID"); PROC_SIM0=$(proc_counters "$SIM_PID")
herald_half "$(update 1)"
PROC_HERALD1=$(proc_counters "$API_PID"); PROC_SIM1=$(proc_counters "$SIM_PID")
wait_done
PEAK=$(peak_rss_mib "$API_PID")

python3 -c "
import json
print(json.dumps({'aps':{'content-state':{'away':0,'home':1,'minute':63,'status':'live'},'event':'update','timestamp':1767225600}}, separators=(',',':')), end='')
" > "$WORK/payload.json"
make_uris "$WORK/tokens.txt" "$SIM_PORT" "$WORK/uris.txt"
h2load_half
H2=$H2_RATE

echo "herald_cpu_us_per_delivery=$CPU_HERALD"
echo "herald_cpu_us_per_push=$CPU_HERALD"
echo "h2load_cpu_us_per_request=$H2_CPU_US"
echo "simulator_cpu_us_per_request=$CPU_SIM"
echo "simulator_cpu_us_per_request_h2load=$CPU_SIM_H2"
echo "herald_vs_h2load_cpu_ratio=$(ratio "$CPU_HERALD" "$H2_CPU_US")"
proc_report herald "$PROC_HERALD0" "$PROC_HERALD1" "$N"
proc_report simulator "$PROC_SIM0" "$PROC_SIM1" "$N"
echo "herald_fanout_seconds=$SECONDS_FANOUT"
echo "herald_fanout_rate=$FANOUT_RATE"
echo "h2load_rate=$H2"
echo "ingest_peak_rss_mib=$RSS_BEFORE"
echo "rss_at_fanout_start_mib=$RSS_START"
echo "fanout_rss_growth_mib=$(python3 -c "print(f'{$PEAK-$RSS_START:.1f}')")"
echo "peak_rss_mib=$PEAK"
echo "fanout_vs_h2load_ratio=$(ratio "$FANOUT_RATE" "$H2")"

# More pairs (ROUNDS): the same fan-out again (another update, the same subscribers, the
# connections already warm, as in the first pair's h2load half), then h2load again.
RATES=("$(ratio "$FANOUT_RATE" "$H2")"); CPUS=("$(ratio "$CPU_HERALD" "$H2_CPU_US")")
for R in $(seq 2 "${ROUNDS:-1}"); do
  herald_half "$(update "$R")"
  wait_done
  h2load_half
  echo "round_${R}=herald $FANOUT_RATE/s ${CPU_HERALD} us, h2load $H2_RATE/s ${H2_CPU_US} us, simulator ${CPU_SIM} / ${CPU_SIM_H2} us"
  echo "round_${R}_fanout_vs_h2load_ratio=$(ratio "$FANOUT_RATE" "$H2_RATE")"
  echo "round_${R}_herald_vs_h2load_cpu_ratio=$(ratio "$CPU_HERALD" "$H2_CPU_US")"
  RATES+=("$(ratio "$FANOUT_RATE" "$H2_RATE")"); CPUS+=("$(ratio "$CPU_HERALD" "$H2_CPU_US")")
done
if [ "${ROUNDS:-1}" -gt 1 ]; then
  median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { printf "%.3f\n", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  echo "fanout_vs_h2load_ratio_median=$(median "${RATES[@]}")"
  echo "herald_vs_h2load_cpu_ratio_median=$(median "${CPUS[@]}")"
fi
echo "load_after: $(uptime)"

#!/usr/bin/env bash
# Issue #12: the simulator's cost per request counted in instructions, which (unlike CPU time)
# do not move with the machine's other work: the simulator (--no-ledger --threads 2, or with
# the ledger) and nghttpd (Debian's nghttp2-server, answering 404) each run under
# `valgrind --tool=callgrind`, instrumented only while `h2load -i` sends N requests over
# 2 × 1000 streams, after a warm-up of 2000 on other connections. User space only. The
# connections' own work (TLS handshakes, SETTINGS, the close) is taken off as poolinstr.sh
# takes it off Herald and h2load: a run of one request per connection is counted the same
# way first, and subtracted (`with_connections=` keeps the figure with it).
#
#   simulator_instructions_per_request=   nghttpd_instructions_per_request=
#   simulator_vs_nghttpd_instructions=
#   simulator_with_connections_per_request=   nghttpd_with_connections_per_request=
#
#   Benchmarks/siminstr.sh [N]          default 20000 (valgrind runs them ~50× slower)
#   LEDGER=1 Benchmarks/siminstr.sh     the simulator with its ledger
#   HERALD_SIM=/path/herald             another build's simulator (before/after comparisons)
#   KEEP=/some/dir Benchmarks/siminstr.sh   keeps the callgrind out files there (sim.cg.*,
#                                       nghttpd.cg.*) for `callgrind_annotate`
source "$(dirname "$0")/lib.sh"
N=${1:-20000}
bench_setup nghttp2-server valgrind
echo "load: $(uptime)"
LEDGER_ARGS=(--no-ledger)
[ -z "${LEDGER:-}" ] || LEDGER_ARGS=()
PAYLOAD="$WORK/payload.json"
printf '{"aps":{"content-state":{"away":0,"home":1},"event":"update","timestamp":1767225600}}' > "$PAYLOAD"
make_tokens "$((N + 2000))" "$WORK/tokens.txt"

# Counts the instructions of the callgrind-run process PID while h2load sends N requests to PORT.
count() { # PID PORT OUT_PREFIX
  local jwt; jwt=$(make_jwt)
  make_uris "$WORK/tokens.txt" "$2" "$WORK/uris.$2.txt"
  local h=(-H "authorization: bearer $jwt" -H "apns-push-type: liveactivity"
    -H "apns-topic: com.example.app.push-type.liveactivity" -H "apns-priority: 5")
  h2load -n 2000 -c 2 -m 1000 -t 1 -d "$PAYLOAD" -i "$WORK/uris.$2.txt" "${h[@]}" > /dev/null 2>&1
  # Dump 1: one request on each of 2 new connections (their handshakes, SETTINGS and close);
  # dump 2: the N requests on 2 new connections.
  cg_window "$1" h2load -n 2 -c 2 -m 1 -t 1 -d "$PAYLOAD" -i "$WORK/uris.$2.txt" "${h[@]}" > "$WORK/h2start.$2.txt" 2>&1
  cg_window "$1" h2load -n "$N" -c 2 -m 1000 -t 1 -d "$PAYLOAD" -i "$WORK/uris.$2.txt" "${h[@]}" > "$WORK/h2load.$2.txt" 2>&1
  sleep 1
  grep -q "requests: 2 total, 2 started, 2 done" "$WORK/h2start.$2.txt" || { cat "$WORK/h2start.$2.txt" >&2; exit 1; }
  grep -q "requests: $N total, $N started, $N done" "$WORK/h2load.$2.txt" || { cat "$WORK/h2load.$2.txt" >&2; exit 1; }
  local start all
  start=$(cg_total "$3"1)
  all=$(cg_total "$3"2)
  # "per request" (the connections' work off), then "with the connections".
  awk -v s="$start" -v a="$all" -v n="$N" 'BEGIN { printf "%.0f %.0f\n", (a - s) / (n - 2), a / n }'
}

SIM_WRAP="valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$WORK/sim.cg" \
  start_sim "${LEDGER_ARGS[@]}" --threads 2 --max-streams 1000 --streams-before-auth 1000
SIM_OUT=$(count "$SIM_PID" "$SIM_PORT" "$WORK/sim.cg.")
read -r SIM_IR SIM_ALL <<< "$SIM_OUT"

NGHTTPD_PORT=$(free_port)
mkdir -p "$WORK/htdocs"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/nghttpd.cg" nghttpd -n 2 -d "$WORK/htdocs" \
  "$NGHTTPD_PORT" "$SIM_DIR/sim-key.pem" "$SIM_DIR/sim-cert.pem" > "$WORK/nghttpd.log" 2>&1 &
NGHTTPD_PID=$!; PIDS+=($NGHTTPD_PID)
for _ in $(seq 1 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $NGHTTPD_PORT), 0.2)" 2>/dev/null && break; sleep 0.2; done
NG_OUT=$(count "$NGHTTPD_PID" "$NGHTTPD_PORT" "$WORK/nghttpd.cg.")
read -r NG_IR NG_ALL <<< "$NG_OUT"

if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$WORK"/sim.cg.* "$WORK"/nghttpd.cg.* "$KEEP"/; fi
echo "simulator_instructions_per_request=$SIM_IR"
echo "nghttpd_instructions_per_request=$NG_IR"
echo "simulator_vs_nghttpd_instructions=$(ratio "$SIM_IR" "$NG_IR")"
echo "simulator_with_connections_per_request=$SIM_ALL"
echo "nghttpd_with_connections_per_request=$NG_ALL"

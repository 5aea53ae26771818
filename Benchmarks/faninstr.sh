#!/usr/bin/env bash
# Issue #12: the fan-out's cost per push counted in instructions, which (unlike CPU time) do
# not move with the machine's other work. `herald serve` (SQLite) runs under
# `valgrind --tool=callgrind`, instrumented only from the publish of one update to a channel
# of N subscribers until that event is done (every thread: the scan, the scheduler, the
# sender's loop, the database writer, the API worker that took the publish). A warm-up event
# to another channel of 2000 subscribers runs first (connections open, request stock warm).
# The simulator runs natively (--no-ledger --threads 2). User space only.
#
#   herald_instructions_per_push=                every thread of `herald serve`
#   herald_instructions_per_push_sweep=          of it, the periodic sweep (every 60 s: in the
#                                                window or not, depending on when it began)
#   herald_instructions_per_push_without_sweep=  the difference
#   herald_instructions_per_push_engine_thread=  the fan-out engine's thread (FanoutEngine.run)
#
#   Benchmarks/faninstr.sh [N]            default 100000 (valgrind runs them ~50× slower)
#   HERALD_SERVE=/path/herald             another build as the server (before/after)
#   KEEP=dir                              copies callgrind's output there (callgrind_annotate)
source "$(dirname "$0")/lib.sh"
N=${1:-100000}
bench_setup valgrind
echo "load: $(uptime)"
start_sim --no-ledger --max-streams 1000 --streams-before-auth 1000 --threads 2
SERVE=${HERALD_SERVE:-$HERALD}

port=$(free_port)
HERALD_APNS_HOST="127.0.0.1:$SIM_PORT" HERALD_APNS_CA_FILE="$SIM_DIR/sim-cert.pem" HERALD_APNS_KEY_FILE="$SIM_KEY" \
HERALD_APNS_KEY_ID="$SIM_KEY_ID" HERALD_APNS_TEAM_ID="$SIM_TEAM_ID" \
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/serve.cg" "$SERVE" serve \
  --listen "127.0.0.1:$port" --db "$WORK/herald.db" --log-level warning --apns-connections 2 > "$WORK/serve.log" 2>&1 &
API_PID=$!
PIDS+=($API_PID)
API="http://127.0.0.1:$port"
for _ in $(seq 1 600); do curl -sf "$API/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "$API/readyz" >/dev/null || { cat "$WORK/serve.log" >&2; exit 1; }
ADMIN=$(cat "$WORK/herald.db.admin-token")

# Registers COUNT tokens on channel ID.
channel() { # ID COUNT
  api POST /v1/channels "{\"id\":\"$1\",\"bundle_id\":\"com.example.app\",\"environment\":\"sandbox\"}" >/dev/null
  make_tokens "$2" "$WORK/$1.txt"
  HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import "$1" "$WORK/$1.txt" --server "$API" --batch-size 50000 > "$WORK/import.$1.txt" 2>&1
}

# Publishes one update to channel ID and waits until it is done.
publish() { # ID COUNT
  local body='{"aps":{"event":"update","content-state":{"home":1,"away":0,"minute":63,"status":"live"}},"priority":5}'
  local event
  local before; before=$(sim_accepted)
  event=$(api POST "/v1/channels/$1/events" "$body" | python3 -c 'import json,sys; print(json.load(sys.stdin)["event_id"])')
  # The simulator is asked (it runs natively) until it holds them all; the server only then.
  wait_accepted "$((before + $2))" > /dev/null
  until api GET "/v1/channels/$1/events/$event" | grep -q '"state":"done"'; do sleep 0.2; done
  api GET "/v1/channels/$1/events/$event" > "$WORK/event.$1.json"
}

channel warm 2000
channel bench "$N"
publish warm 2000
A0=$(sim_accepted)
callgrind_control -i on "$API_PID" > /dev/null
publish bench "$N"
callgrind_control -i off "$API_PID" > /dev/null
A1=$(sim_accepted)
[ "$((A1 - A0))" -ge "$N" ] || { echo "the simulator accepted $((A1 - A0)) of $N" >&2; exit 1; }
callgrind_control -d "$API_PID" > /dev/null
sleep 1
[ -z "${KEEP:-}" ] || { mkdir -p "$KEEP"; cp "$WORK"/serve.cg* "$KEEP"/; }

echo "pushes: $N (simulator accepted $((A1 - A0)))"
TOTAL=$(cat "$WORK"/serve.cg.* | awk '/^totals:/ { s += $2 } END { printf "%.0f\n", s }')
# The sweep (every 60 s: counting the registry's subscriptions, sweeping old events) falls
# inside the window or not, depending on when it began: its instructions are shown apart.
SWEEP=$(for f in "$WORK"/serve.cg.*; do callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null; done |
  awk '/EngineC5sweep[^ ]*fU_/ { gsub(",", "", $1); v = $1 + 0; if (v > m) m = v } END { print m + 0 }')
echo "herald_instructions_per_push=$((TOTAL / N))"
echo "herald_instructions_per_push_sweep=$((SWEEP / N))"
echo "herald_instructions_per_push_without_sweep=$(((TOTAL - SWEEP) / N))"
# The engine thread's own part (scan, scheduler, requests, answers taken from the inbox).
ENGINE=$(for f in "$WORK"/serve.cg.*; do callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null; done |
  awk '/HeraldFanout0B6EngineC3run/ { gsub(",", "", $1); v = $1 + 0; if (v > m) m = v } END { print m + 0 }')
echo "herald_instructions_per_push_engine_thread=$((ENGINE / N))"
echo "load_after: $(uptime)"

#!/usr/bin/env bash
# Issue #5, figure 2: publish→first push at the simulator, p50/p99 over many events, on an
# idle server and while a large fan-out runs on another channel (fairness made visible).
# Ends with publish_p99_under_load_ms=<ms>. Targets: p99 < 50 ms idle, < 250 ms under load.
#
#   Benchmarks/latency.sh [EVENTS] [BIG_CHANNEL_SUBSCRIBERS]     defaults 200 1000000
source "$(dirname "$0")/lib.sh"
EVENTS=${1:-200}; BIG=${2:-1000000}
bench_setup
machine
start_sim --max-streams 1000
start_serve --apns-connections 4
DEVICE=$(python3 -c 'import os; print(os.urandom(32).hex())')
api POST /v1/channels '{"id":"live","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
api PUT "/v1/channels/live/subscriptions/$DEVICE" '{"kind":"activity"}' >/dev/null
api POST /v1/channels '{"id":"big","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
make_tokens "$BIG" "$WORK/tokens.txt"
HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import big "$WORK/tokens.txt" --server "$API" --batch-size 50000 > /dev/null 2>&1
echo "events: $EVENTS on a 1-subscriber channel; load: one update to $BIG subscribers on another channel"

L=( --api "$API" --token "$ADMIN" --sim-control "http://127.0.0.1:$SIM_CONTROL" --channel live --device "$DEVICE" --events "$EVENTS" )
"$BENCH" latency "${L[@]}" --label idle

EVENT=$(api POST /v1/channels/big/events '{"aps":{"event":"update","content-state":{"home":1}},"priority":5}' \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["event_id"])')
# Samples only while the big event is queued or sending (--while); it starts at once.
"$BENCH" latency "${L[@]}" --label under_load --while "$API/v1/channels/big/events/$EVENT" > "$WORK/load.txt"
STATE=$(api GET "/v1/channels/big/events/$EVENT" | python3 -c 'import json,sys; e=json.load(sys.stdin); print(e["state"], e["sent"], e["targets"])')
echo "the big fan-out when the measurement ended: $STATE (state sent targets)"
cat "$WORK/load.txt" | sed -n '/samples/p;/p50/p;/max/p'
grep "publish_p99_under_load_ms" "$WORK/load.txt"

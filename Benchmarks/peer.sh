#!/usr/bin/env bash
# Issue #5, figure 6: the same 100k-subscriber fan-out sent by aioapns (PyPI) — what users
# would otherwise run — and by Herald, to the same simulator. Ends with
# herald_vs_aioapns_ratio=<r>. Target: >= 30.
#
#   Benchmarks/peer.sh [N]     default 100000
source "$(dirname "$0")/lib.sh"
N=${1:-100000}
bench_setup
machine
VENV="$ROOT/.build/bench-venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q 'aioapns==4.0' >&2
echo "aioapns $("$VENV/bin/pip" show aioapns | awk '/^Version/ {print $2}')"
start_sim --no-ledger --max-streams 1000
start_serve --apns-connections 4
make_tokens "$N" "$WORK/tokens.txt"

"$VENV/bin/python" "$(dirname "$0")/peer.py" "$N" 127.0.0.1 "$SIM_PORT" "$SIM_DIR/sim-cert.pem" "$SIM_KEY" "$SIM_KEY_ID" \
  "$SIM_TEAM_ID" "$WORK/tokens.txt" 4 > "$WORK/peer.txt"
cat "$WORK/peer.txt"
PEER=$(awk -F= '/aioapns_rate=/ {print $2}' "$WORK/peer.txt")

sim_reset
api POST /v1/channels '{"id":"peer","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import peer "$WORK/tokens.txt" --server "$API" --batch-size 50000 > /dev/null 2>&1
START=$(now)
api POST /v1/channels/peer/events '{"aps":{"event":"update","content-state":{"home":1,"away":0,"minute":63,"status":"live"}},"priority":5}' >/dev/null
END=$(wait_accepted "$N")
HERALD_RATE=$(python3 -c "print(f'{$N/($END-$START):.0f}')")
echo "herald_fanout_rate=$HERALD_RATE"
echo "herald_vs_aioapns_ratio=$(ratio "$HERALD_RATE" "$PEER")"

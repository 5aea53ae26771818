#!/usr/bin/env bash
# Issue #2's benchmark: the same pushes to the same simulator, (1) through Herald's APNs
# pool and (2) with h2load (nghttp2's own load generator), over the same number of TLS
# connections and streams, with the same payload and headers. Ends with
# pool_vs_h2load_ratio=<ratio>. Target: at least 0.8.
#
#   Benchmarks/pool.sh [REQUESTS] [CONNECTIONS] [STREAMS]     defaults 200000 4 1000
source "$(dirname "$0")/lib.sh"
N=${1:-200000}; C=${2:-4}; S=${3:-1000}
bench_setup
machine
# h2load opens streams before reading SETTINGS, so the simulator admits them from the
# start; without a ledger, so the simulator stays fast (it still counts).
start_sim --no-ledger --max-streams "$S" --streams-before-auth "$S"
TOKEN=$(printf 'ab%.0s' $(seq 1 32))
PAYLOAD="$WORK/payload.json"
printf '{"aps":{"content-state":{"away":0,"home":1},"event":"update","timestamp":1767225600}}' > "$PAYLOAD"

echo "pushes: $N, connections: $C, streams per connection: $S, payload $(wc -c < "$PAYLOAD") bytes"
"$BENCH" pool --target "127.0.0.1:$SIM_PORT" --ca "$SIM_DIR/sim-cert.pem" --key "$SIM_KEY" --key-id "$SIM_KEY_ID" \
  --team-id "$SIM_TEAM_ID" --requests "$N" --connections "$C" --streams "$S" --token "$TOKEN" --payload "$PAYLOAD" > "$WORK/pool.txt"
POOL=$(awk -F= '/^pool_rate=/ {print $2}' "$WORK/pool.txt")
H2=$(h2load_rate "$N" "$C" "$S" "$PAYLOAD" "$TOKEN")
echo "herald_pool_rate=$POOL"
echo "h2load_rate=$H2"
echo "pool_vs_h2load_ratio=$(ratio "$POOL" "$H2")"

# Shared helpers for the benchmark scripts (sourced). Everything binds to 127.0.0.1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/Benchmarks/out"
mkdir -p "$OUT"

bench_setup() {
  "$ROOT/scripts/bootstrap" nghttp2-client curl python3 "$@"
  (cd "$ROOT" && swift build -c release --product herald >&2 && swift build -c release --product herald-bench >&2)
  HERALD="$ROOT/.build/release/herald"
  BENCH="$ROOT/.build/release/herald-bench"
  WORK="$(mktemp -d /tmp/herald-bench.XXXXXX)"
  PIDS=()
  trap 'for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
}

# A free TCP port on 127.0.0.1.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Starts the simulator; sets SIM_PORT, SIM_CONTROL, SIM_DIR, SIM_KEY, SIM_KEY_ID, SIM_TEAM_ID.
start_sim() {
  SIM_PORT=$(free_port); SIM_CONTROL=$(free_port); SIM_DIR="$WORK/sim"
  "$HERALD" apns-sim --listen "127.0.0.1:$SIM_PORT" --control "127.0.0.1:$SIM_CONTROL" --dir "$SIM_DIR" "$@" \
    > "$WORK/sim.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$SIM_CONTROL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  SIM_KEY=$(ls "$SIM_DIR"/AuthKey_*.p8)
  SIM_KEY_ID=$(basename "$SIM_KEY" .p8 | sed 's/AuthKey_//')
  SIM_TEAM_ID=$(python3 -c "import json;print(json.load(open('$SIM_DIR/identity.json'))['team_id'])")
}

sim_accepted() { curl -s "http://127.0.0.1:$SIM_CONTROL/stats" | python3 -c 'import json,sys;print(json.load(sys.stdin)["accepted"])'; }
sim_reset() { curl -s -X POST "http://127.0.0.1:$SIM_CONTROL/reset" >/dev/null; }

# A JWT for h2load, signed by herald's own code path is not needed: openssl does it.
make_jwt() {
  python3 - "$SIM_KEY" "$SIM_KEY_ID" "$SIM_TEAM_ID" <<'PY'
import base64, json, subprocess, sys, time
key, kid, team = sys.argv[1:4]
b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
head = b64(json.dumps({"alg": "ES256", "kid": kid}, separators=(",", ":")).encode())
claims = b64(json.dumps({"iss": team, "iat": int(time.time())}, separators=(",", ":")).encode())
der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=f"{head}.{claims}".encode(), capture_output=True, check=True).stdout
# DER ECDSA-Sig-Value -> raw r||s (JWS, RFC 7518 §3.4)
def read_int(b, i):
    assert b[i] == 2; n = b[i + 1]; v = b[i + 2:i + 2 + n]; return v.lstrip(b"\0").rjust(32, b"\0"), i + 2 + n
assert der[0] == 0x30
i = 2 if der[1] < 0x80 else 3
r, i = read_int(der, i); s, _ = read_int(der, i)
print(f"{head}.{claims}.{b64(r + s)}")
PY
}

# Runs h2load with the same headers Herald sends; prints its requests/s.
h2load_rate() { # N CONNECTIONS STREAMS PAYLOAD_FILE TOKEN
  local jwt; jwt=$(make_jwt)
  h2load -n "$1" -c "$2" -m "$3" -t 1 -d "$4" \
    -H "authorization: bearer $jwt" -H "apns-push-type: liveactivity" \
    -H "apns-topic: com.example.app.push-type.liveactivity" -H "apns-priority: 5" \
    "https://127.0.0.1:$SIM_PORT/3/device/$5" > "$WORK/h2load.txt" 2>&1 || true
  grep -q "$1 succeeded" "$WORK/h2load.txt" || { cat "$WORK/h2load.txt" >&2; echo "h2load did not complete" >&2; exit 1; }
  awk '/^finished in/ { gsub(",", "", $4); print $4 }' "$WORK/h2load.txt"
}

ratio() { python3 -c "print(f'{$1/$2:.3f}')"; }

# Peak resident memory (MiB) of a process.
peak_rss_mib() { awk '/VmHWM/ { printf "%.1f\n", $2/1024 }' "/proc/$1/status"; }

machine() {
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr), $(swift --version 2>&1 | head -1)"
}

# Starts `herald serve` against the simulator; sets API, API_PID, ADMIN.
start_serve() {
  local port; port=$(free_port)
  HERALD_APNS_HOST="127.0.0.1:$SIM_PORT" HERALD_APNS_CA_FILE="$SIM_DIR/sim-cert.pem" HERALD_APNS_KEY_FILE="$SIM_KEY" \
  HERALD_APNS_KEY_ID="$SIM_KEY_ID" HERALD_APNS_TEAM_ID="$SIM_TEAM_ID" \
    "$HERALD" serve --listen "127.0.0.1:$port" --db "$WORK/herald.db" --log-level warning "$@" > "$WORK/serve.log" 2>&1 &
  API_PID=$!
  PIDS+=($API_PID)
  API="http://127.0.0.1:$port"
  for _ in $(seq 1 100); do curl -sf "$API/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  ADMIN=$(cat "$WORK/herald.db.admin-token")
}

api() { # METHOD PATH [BODY]
  curl -sf -X "$1" -H "Authorization: Bearer $ADMIN" -H "Content-Type: application/json" ${3:+--data-binary "$3"} "$API$2"
}

# Writes N random 32-byte hex tokens, one per line.
make_tokens() { # N FILE
  python3 -c "
import os, sys
n = int(sys.argv[1])
with open(sys.argv[2], 'w') as f:
    for _ in range(n): f.write(os.urandom(32).hex() + '\n')
" "$1" "$2"
}

now() { python3 -c 'import time; print(time.time())'; }

# CPU seconds a process's live threads have run so far, in nanoseconds summed from
# /proc/PID/task/*/schedstat (/proc/PID/stat counts 10 ms ticks: a 10k fan-out uses ~50 ms
# and came out ±20%). Threads that exit between two readings are not counted; Herald's and
# the simulator's threads (event loops, writer, scheduler, HTTP pool) live as long as they do.
cpu_seconds() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ ns += $1 } END { printf "%.4f\n", ns / 1e9 }'; }

# Waits until the simulator has accepted N requests; prints the time it saw them (polling
# every 2 ms from one process, so the wait adds no more than that).
wait_accepted() { # N
  python3 - "$1" "$SIM_CONTROL" <<'PY'
import http.client, json, sys, time
n, port = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port)
while True:
    c.request("GET", "/stats"); r = c.getresponse(); a = json.loads(r.read())["accepted"]
    if a >= n: print(time.time()); break
    time.sleep(0.002)
PY
}

# Shared helpers for the benchmark scripts (sourced). Everything binds to 127.0.0.1.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/Benchmarks/out"
mkdir -p "$OUT"

bench_setup() {
  "$ROOT/scripts/bootstrap" nghttp2-client curl python3 "$@"
  # NO_BUILD=1: use the release products as they are (while a test build holds .build's lock)
  # CLEAN_BUILD=1: build the release products from nothing first. An incremental release
  # build was seen to keep a module's old copy of another module's @inlinable code (the
  # simulator still ran HeraldCore's previous isLowercaseUUID): before/after figures want it.
  if [ -n "${CLEAN_BUILD:-}" ] && [ -z "${NO_BUILD:-}" ]; then
    rm -rf "$ROOT/.build/release" "$ROOT/.build/$(uname -m)-unknown-linux-gnu/release"
  fi
  [ -n "${NO_BUILD:-}" ] || (cd "$ROOT" && swift build -c release --product herald >&2 && swift build -c release --product herald-bench >&2)
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

# Starts the simulator (HERALD_SIM: another build's binary, for before/after); sets SIM_PORT, SIM_CONTROL, SIM_DIR, SIM_KEY, SIM_KEY_ID, SIM_TEAM_ID.
# SIM_WRAP: a command the simulator runs under (words; e.g. valgrind's), SIM_PID its process.
start_sim() {
  SIM_PORT=$(free_port); SIM_CONTROL=$(free_port); SIM_DIR="$WORK/sim"
  # shellcheck disable=SC2086
  ${SIM_WRAP:-} "${HERALD_SIM:-$HERALD}" apns-sim --listen "127.0.0.1:$SIM_PORT" --control "127.0.0.1:$SIM_CONTROL" --dir "$SIM_DIR" "$@" \
    > "$WORK/sim.log" 2>&1 &
  SIM_PID=$!; PIDS+=($SIM_PID)
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$SIM_CONTROL/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
  SIM_KEY=$(ls "$SIM_DIR"/AuthKey_*.p8)
  SIM_KEY_ID=$(basename "$SIM_KEY" .p8 | sed 's/AuthKey_//')
  SIM_TEAM_ID=$(python3 -c "import json;print(json.load(open('$SIM_DIR/identity.json'))['team_id'])")
}

# callgrind: counts PID's instructions while COMMAND runs (instrumentation on, the command,
# off), then dumps them: the next PREFIX.N file of the process's --callgrind-out-file.
cg_window() { # PID COMMAND...
  local pid=$1; shift
  callgrind_control -i on "$pid" > /dev/null
  "$@"
  callgrind_control -i off "$pid" > /dev/null
  callgrind_control -d "$pid" > /dev/null
}
# The instruction total of one callgrind output file.
cg_total() { awk '/^totals:/ { print $2 }' "$1"; }

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

# One URI per token (h2load -i): every request goes to its own device path, as a fan-out's do.
make_uris() { # TOKENS_FILE PORT OUT_FILE
  awk -v port="$2" '{ print "https://127.0.0.1:" port "/3/device/" $1 }' "$1" > "$3"
}

# Runs h2load over a URI file (one distinct path per request) with the same headers Herald
# sends, against PORT. Sets H2_RATE (requests/s) and H2_CPU_US (h2load's CPU per request,
# its start-up taken off: a run of one request per connection over the same file, with the
# same connections, measures the parsing and the handshakes).
# ANY_STATUS=1: count every answered request (nghttpd answers these paths 404).
h2load_uris() { # N CONNECTIONS STREAMS PAYLOAD_FILE URI_FILE PORT
  local jwt uris="$WORK/uris.$6.txt"
  jwt=$(make_jwt)
  sed "s#https://127.0.0.1:[0-9]*/#https://127.0.0.1:$6/#" "$5" > "$uris"
  local out
  out=$(python3 - "$1" "$2" "$3" "$4" "$uris" "$jwt" "$WORK/h2load.txt" "${ANY_STATUS:-0}" <<'PY'
import os, re, resource, subprocess, sys, time
n, c, m, payload, uris, jwt, log, any_status = sys.argv[1:9]
tick = os.sysconf("SC_CLK_TCK")
def cpu_of(pid):  # utime + stime of a live process, in seconds
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / tick
def has_socket(pid):
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:") for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False
# h2load's start-up (reading and parsing the URI file, 1M lines at 1M tokens) is taken off
# its CPU: read from /proc when it opens its first socket (it connects once every URI is
# parsed). A separate run of one request per connection measured it before, but at 1M
# URIs that start-up varied by more than the requests cost (0.65-3.90 µs per request).
def run(n, c, m):
    cmd = ["h2load", "-n", n, "-c", c, "-m", m, "-t", "1", "-d", payload, "-i", uris,
           "-H", f"authorization: bearer {jwt}", "-H", "apns-push-type: liveactivity",
           "-H", "apns-topic: com.example.app.push-type.liveactivity", "-H", "apns-priority: 5"]
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    startup = None
    while startup is None and p.poll() is None:
        if has_socket(p.pid):
            try:
                startup = cpu_of(p.pid)
            except OSError:
                break
        else:
            time.sleep(0.002)
    out, _ = p.communicate()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), startup
text, cpu, startup = run(n, c, m)
if startup is None:  # ended before it was seen connecting: a run of one request per connection
    _, startup, _ = run(c, c, "1")
open(log, "w").write(text)
want = rf"{n} done, (\d+) succeeded, \d+ failed, 0 errored, 0 timeout"
ok = re.search(rf"requests: {n} total, {n} started, " + want, text)
if not ok or (any_status != "1" and ok.group(1) != n):
    sys.stderr.write(text); print("FAIL"); sys.exit(0)
rate = next(l.split()[3].replace(",", "") for l in text.splitlines() if l.startswith("finished in"))
print(rate, f"{(cpu - startup) * 1e6 / int(n):.2f}")
PY
)
  [ "${out%% *}" != "FAIL" ] || { echo "h2load did not complete" >&2; exit 1; }
  H2_RATE=${out%% *}; H2_CPU_US=${out##* }
}

# nghttpd (Debian's nghttp2-server) on a free port with the simulator's certificate: the
# independent sink the simulator is held against. Sets NGHTTPD_PORT.
start_nghttpd() { # WORKERS
  NGHTTPD_PORT=$(free_port)
  mkdir -p "$WORK/htdocs"
  nghttpd -n "${1:-2}" -d "$WORK/htdocs" "$NGHTTPD_PORT" "$SIM_DIR/sim-key.pem" "$SIM_DIR/sim-cert.pem" > "$WORK/nghttpd.log" 2>&1 &
  PIDS+=($!)
  NGHTTPD_PID=$!
  for _ in $(seq 1 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $NGHTTPD_PORT), 0.2)" 2>/dev/null && break; sleep 0.1; done
}

# CPU per request (µs) of PID between two cpu_seconds readings.
cpu_us_per() { python3 -c "print(f'{($2-$1)*1e6/$3:.2f}')"; }

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

# What a process's CPU went to, beside its total: "USER_TICKS SYS_TICKS MINOR_FAULTS
# VOLUNTARY_SWITCHES INVOLUNTARY_SWITCHES" (ticks of 10 ms from /proc/PID/stat, which counts
# exited threads too; context switches summed over the live threads' status).
proc_counters() {
  local stat; stat=$(sed 's/.*) //' "/proc/$1/stat")
  set -- "$1" $stat
  local minflt=${9} utime=${13} stime=${14}
  local pid=$1
  cat /proc/"$pid"/task/*/status 2>/dev/null | awk -v u="$utime" -v s="$stime" -v f="$minflt" \
    '/^voluntary_ctxt_switches/ { v += $2 } /^nonvoluntary_ctxt_switches/ { n += $2 } END { print u, s, f, v, n }'
}

# Prints PREFIX_sys_share=, PREFIX_minor_faults_per_push=, PREFIX_context_switches_per_push=
# (voluntary + involuntary) between two proc_counters readings, over N requests.
proc_report() { # PREFIX "BEFORE" "AFTER" N
  python3 - "$@" <<'PY'
import sys
prefix, before, after, n = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
d = [int(a) - int(b) for a, b in zip(after, before)]
ticks = d[0] + d[1]
print(f"{prefix}_sys_share={d[1] / ticks:.3f}" if ticks else f"{prefix}_sys_share=0")
print(f"{prefix}_minor_faults_per_push={d[2] / n:.4f}")
print(f"{prefix}_context_switches_per_push={(d[3] + d[4]) / n:.4f} (voluntary {d[3]}, involuntary {d[4]})")
PY
}

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

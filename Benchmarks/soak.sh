#!/usr/bin/env bash
# Issue #6, "Load": the mix of the CI load test (Tests/HeraldFaultTests/PublishLoadTests.swift)
# for MINUTES instead of seconds. 200 publishers at once, each on one of 100 channels of 20
# subscribers, while a 10 000-subscriber channel gets a new update every 300 ms. The APNs
# simulator and `herald serve` (release build) run as processes; the publishers are threads
# of one Python process, each with a keep-alive connection.
#
# A publisher counts as an error anything but 202, except 429/503 with Retry-After and a
# JSON error (it then waits that long and tries again). Every 10 s a line: publishes, rate,
# publish→202 latency, errors, the server's RSS. At the end: every channel's last event must
# end and sampled subscribers must hold it; then name=value lines. Exit 1 on any error.
# Memory: `anon` (RssAnon) is the heap, which levels off once SQLite's page caches are full
# (the writer's 32 MiB, 8 MiB per reader; /metrics herald_db_memory_bytes); VmRSS also
# counts the mapped libraries and the WAL index.
#
#   Benchmarks/soak.sh [MINUTES]          default 10
#   SOAK_FAULTS=500=0.01,goaway-after=5000 Benchmarks/soak.sh 30     APNs faults too (apns-sim --faults)
source "$(dirname "$0")/lib.sh"
MINUTES=${1:-10}
bench_setup
machine
start_sim --max-streams 200 --faults "latency-ms=1${SOAK_FAULTS:+,$SOAK_FAULTS}"
# 201 keep-alive connections from one loopback address: above the default per-address cap
# of 128 (--http-max-connections-per-ip), which refuses the rest (counted as errors).
start_serve --http-max-connections-per-ip 512
echo "soak: $MINUTES min, 200 publishers, 100 channels x 20 subscribers + 1 x 10000, faults: latency-ms=1${SOAK_FAULTS:+,$SOAK_FAULTS}"

python3 - "$API" "$ADMIN" "$API_PID" "$SIM_CONTROL" "$MINUTES" "$WORK/herald.db" <<'PY'
import http.client, json, os, random, sys, threading, time
from urllib.parse import urlparse

api, admin, pid, sim_control, minutes, db = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
host, port = urlparse(api).hostname, urlparse(api).port
CLIENTS, CHANNELS, PER_CHANNEL, BIG = 200, 100, 20, 10_000
HEADERS = {"Authorization": "Bearer " + admin, "Content-Type": "application/json"}

def call(method, path, body=None, conn=None):
    c = conn or http.client.HTTPConnection(host, port, timeout=60)
    c.request(method, path, body=None if body is None else json.dumps(body), headers=HEADERS)
    r = c.getresponse()
    data = r.read()
    if conn is None: c.close()
    return r.status, dict((k.lower(), v) for k, v in r.getheaders()), (json.loads(data) if data else None)

def memory():
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "RssAnon"): out[k] = int(v.split()[0]) / 1024
    return out

def sqlite_mib():
    """SQLite's own heap now (page caches, statements): herald_db_memory_bytes, summed over databases."""
    try:
        c = http.client.HTTPConnection(host, port, timeout=10)
        c.request("GET", "/metrics")
        text = c.getresponse().read().decode()
        c.close()
        return sum(float(l.split()[-1]) for l in text.splitlines() if l.startswith("herald_db_memory_bytes")) / 1048576
    except Exception:
        return float("nan")

def db_mib():
    return sum(os.path.getsize(f) for f in (db, db + "-wal") if os.path.exists(f)) / 1048576

# Channels and subscribers.
tokens = {}
for i in range(CHANNELS):
    tokens[f"load-{i}"] = [os.urandom(32).hex() for _ in range(PER_CHANNEL)]
tokens["big"] = [os.urandom(32).hex() for _ in range(BIG)]
for ch, toks in tokens.items():
    s, _, b = call("POST", "/v1/channels", {"id": ch, "bundle_id": "com.example.app", "environment": "sandbox"})
    assert s == 201, (s, b)
    s, _, b = call("POST", f"/v1/channels/{ch}/subscriptions:batch", {"subscribe": toks})
    assert s == 200, (s, b)

lock = threading.Lock()
latencies, errors, error_samples = [], 0, []
stats = {"publishes": 0, "pushed_back": 0}
stop = threading.Event()

def publish(conn, channel, home, away):
    """One publish as a well-behaved client: returns the (possibly new) connection."""
    global errors
    body = {"aps": {"event": "update", "content-state": {"home": home, "away": away}}}
    for _ in range(50):
        t0 = time.perf_counter()
        try:
            if conn is None: conn = http.client.HTTPConnection(host, port, timeout=60)
            s, h, b = call("POST", f"/v1/channels/{channel}/events", body, conn)
        except Exception as e:
            with lock:
                errors += 1
                if len(error_samples) < 10: error_samples.append(f"{channel}: {e!r}")
            if conn is not None: conn.close()
            return None
        took = time.perf_counter() - t0
        if s == 202:
            with lock:
                latencies.append(took); stats["publishes"] += 1
            return conn
        if s in (429, 503) and "retry-after" in h and isinstance(b, dict) and "error" in b:
            with lock: stats["pushed_back"] += 1
            time.sleep(float(h["retry-after"]))
            continue
        with lock:
            errors += 1
            if len(error_samples) < 10: error_samples.append(f"{channel}: {s} {b}")
        return conn
    with lock: errors += 1
    return conn

def worker(n):
    conn, k = None, 0
    while not stop.is_set():
        k += 1
        conn = publish(conn, f"load-{n % CHANNELS}", n, k)

def big():
    conn, k = None, 0
    while not stop.wait(0.3):
        k += 1
        conn = publish(conn, "big", k, 0)

threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(CLIENTS)]
threads.append(threading.Thread(target=big, daemon=True))
start = time.time()
for t in threads: t.start()

warmup = min(60.0, max(10.0, minutes * 60 * 0.1))
end = start + minutes * 60
baseline, samples, all_latencies = None, [], []
next_report = start + 10
while time.time() < end:
    time.sleep(max(0, min(next_report, end) - time.time()))
    next_report += 10
    with lock:
        chunk, latencies[:] = latencies[:], []
        published, pushed_back, errs = stats["publishes"], stats["pushed_back"], errors
    all_latencies += chunk
    chunk.sort()
    m = memory()
    t = time.time() - start
    sq = sqlite_mib()
    if baseline is None and t >= warmup: baseline = (published, m, db_mib(), sq)
    if baseline is not None: samples.append((published, m["RssAnon"], m["RssAnon"] - sq))
    p = lambda q: chunk[min(len(chunk) - 1, int(q * len(chunk)))] * 1000 if chunk else 0
    print(f"soak: t={t:5.0f}s publishes={published} rate={len(chunk) / 10:.0f}/s p50={p(0.5):.1f}ms p99={p(0.99):.1f}ms "
          f"errors={errs} pushed_back={pushed_back} rss={m['VmRSS']:.1f}MiB anon={m['RssAnon']:.1f}MiB sqlite={sq:.1f}MiB db={db_mib():.1f}MiB", flush=True)
stop.set()
for t in threads: t.join(timeout=120)
elapsed = time.time() - start

# Every channel's last event ends; sampled subscribers hold it.
unfinished = stale = 0
deadline = time.time() + 300
for ch, toks in tokens.items():
    _, _, c = call("GET", f"/v1/channels/{ch}")
    last = c["last_event"]
    state = last["state"]
    while state not in ("done", "superseded", "failed") and time.time() < deadline:
        time.sleep(0.1)
        state = call("GET", f"/v1/channels/{ch}/events/{last['event_id']}")[2]["state"]
    if state != "done": unfinished += 1; continue
    for tok in random.sample(toks, 3):
        sc = http.client.HTTPConnection("127.0.0.1", sim_control, timeout=60)
        sc.request("GET", f"/tokens/{tok}")
        pushes = json.loads(sc.getresponse().read())["pushes"]
        sc.close()
        if not pushes or pushes[-1].get("timestamp") != last["aps_timestamp"]: stale += 1

sc = http.client.HTTPConnection("127.0.0.1", sim_control, timeout=60)
sc.request("GET", "/stats"); delivered = json.loads(sc.getresponse().read())["accepted"]
m = memory()
all_latencies.sort()
q = lambda x: all_latencies[min(len(all_latencies) - 1, int(x * len(all_latencies)))] * 1000 if all_latencies else 0
# Growth of the heap per 10 000 publishes after warm-up (least squares over the samples).
# The heap less SQLite's own (its page caches fill as the database grows, up to their caps)
# is what a leak in Herald would make grow.
def slope_of(k):
    if len(samples) < 2: return 0.0
    xs, ys = [s[0] for s in samples], [s[k] for s in samples]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return (sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den * 10_000) if den else 0.0
slope, slope_less_sqlite = slope_of(1), slope_of(2)
if error_samples: print("soak: errors, e.g.:", *error_samples, sep="\n  ")
b = baseline or (0, m, db_mib(), sqlite_mib())
for k, v in [
    ("soak_minutes", f"{elapsed / 60:.1f}"), ("publishes", stats["publishes"]), ("publishes_per_second", f"{stats['publishes'] / elapsed:.0f}"),
    ("errors", errors), ("pushed_back", stats["pushed_back"]), ("pushes_delivered", delivered),
    ("latency_p50_ms", f"{q(0.5):.1f}"), ("latency_p99_ms", f"{q(0.99):.1f}"), ("latency_max_ms", f"{q(1.0):.1f}"),
    ("rss_after_warmup_mib", f"{b[1]['VmRSS']:.1f}"), ("rss_end_mib", f"{m['VmRSS']:.1f}"),
    ("rss_anon_after_warmup_mib", f"{b[1]['RssAnon']:.1f}"), ("rss_anon_end_mib", f"{m['RssAnon']:.1f}"),
    ("rss_anon_mib_per_10k_publishes", f"{slope:.2f}"), ("rss_anon_less_sqlite_mib_per_10k_publishes", f"{slope_less_sqlite:.2f}"),
    ("sqlite_heap_after_warmup_mib", f"{b[3]:.1f}"), ("sqlite_heap_end_mib", f"{sqlite_mib():.1f}"), ("db_after_warmup_mib", f"{b[2]:.1f}"), ("db_end_mib", f"{db_mib():.1f}"),
    ("unfinished_channels", unfinished), ("stale_subscribers_sampled", stale),
]:
    print(f"{k}={v}")
sys.exit(1 if errors or unfinished or stale else 0)
PY

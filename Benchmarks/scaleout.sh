#!/usr/bin/env bash
# Issue #14: several `herald serve` workers on one PostgreSQL database.
#
# Part 1 (scale-out): 1, 2 and 3 workers on one database, each with ONE APNs connection to
# a simulator that answers 40 ms late (the regime of production: a worker's connections,
# not its CPU, bound its rate), N tokens on one channel, one update published on worker 1:
# aggregate pushes/s from the 202 to the simulator holding all N, and how many pushes each
# worker sent (its /metrics). Target: 3 workers ≥ 2.6 × one. Then h2load with 1 and 3
# connections against the same simulator and tokens: what the machine allows any client.
#
# Part 2 (CPU-bound): one worker, no added latency, two connections, M tokens: the fan-out
# rate on PostgreSQL and on SQLite, and the worker's peak RSS during the fan-out. Target:
# PostgreSQL ≥ 0.8 × SQLite.
#
#   Benchmarks/scaleout.sh [N] [M]     defaults 300000 1000000
#   PERF=dir Benchmarks/scaleout.sh    also samples the whole machine's CPU (perf record -a,
#                                      cpu-clock, call graphs) during each part-1 fan-out:
#                                      dir/scaleout.W.data for W workers (`perf report -i`)
#   PART=2 Benchmarks/scaleout.sh      part 2 only (PART=1: part 1 only; default both)
#   BACKENDS="postgresql" ...          part 2's backends, in order (default "postgresql sqlite")
#   HERALD_SERVE_BEFORE=/path/herald   part 2 also runs PostgreSQL with that build first
#                                      (backend=postgresql-before, a database it migrates):
#                                      before/after in the same run
#   PG_PERF=dir ...                    samples PostgreSQL's processes (perf record -p, cpu-clock,
#                                      call graphs) during part 2's PostgreSQL fan-outs:
#                                      dir/part2.BACKEND.data
#   PG_STATS=1 ...                     loads pg_stat_statements and prints, per push, each
#                                      statement's calls, rows, shared buffers and time during
#                                      part 2's PostgreSQL fan-outs
#   VACUUM=1 ...                       VACUUM ANALYZE subscriptions after part 2's PostgreSQL
#                                      import, before the fan-out (NOT what Herald does: the
#                                      default run fans out with an empty visibility map)
source "$(dirname "$0")/lib.sh"
N=${1:-300000}; M=${2:-1000000}
bench_setup
machine
echo "load: $(uptime)"
PG="$WORK/pg"
chmod 0755 "$WORK" # as root the cluster runs as postgres, which must reach its directory
[ -z "${PG_STATS:-}" ] || export PG_CLUSTER_OPTS="${PG_CLUSTER_OPTS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"
"$ROOT/scripts/pg-cluster" start "$PG" $$ >/dev/null
trap 'for p in "${PIDS[@]:-}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; "$ROOT/scripts/pg-cluster" stop "$PG"; rm -rf "$WORK"' EXIT
ADMIN="hk_admin_$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')"
BODY='{"aps":{"event":"update","content-state":{"home":1,"away":0,"minute":63,"status":"live"}},"priority":5}'

# Starts worker number $2 on database URL $1 with more serve flags; sets W_API[$2], W_PID[$2].
W_API=(); W_PID=()
SERVE=$HERALD # the build start_worker runs
start_worker() { # URL INDEX FLAGS...
  local url=$1 i=$2 port; shift 2
  port=$(free_port)
  HERALD_APNS_HOST="127.0.0.1:$SIM_PORT" HERALD_APNS_CA_FILE="$SIM_DIR/sim-cert.pem" HERALD_APNS_KEY_FILE="$SIM_KEY" \
  HERALD_APNS_KEY_ID="$SIM_KEY_ID" HERALD_APNS_TEAM_ID="$SIM_TEAM_ID" HERALD_ADMIN_TOKEN="$ADMIN" \
    "$SERVE" serve --listen "127.0.0.1:$port" --db "$url" --log-level warning "$@" > "$WORK/worker$i.log" 2>&1 &
  W_PID[$i]=$!
  PIDS+=($!)
  W_API[$i]="http://127.0.0.1:$port"
  for _ in $(seq 1 300); do curl -sf "${W_API[$i]}/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  curl -sf "${W_API[$i]}/readyz" >/dev/null || { cat "$WORK/worker$i.log" >&2; exit 1; }
}
stop_workers() { for p in "${W_PID[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; W_API=(); W_PID=(); }
call() { curl -sf -X "$1" -H "Authorization: Bearer $ADMIN" -H "Content-Type: application/json" ${4:+--data-binary "$4"} "$2$3"; }
pushes_of() { curl -sf "$1/metrics" | awk '/^herald_fanout_pushes_total\{/ { n += $2 } END { printf "%d\n", n }'; }
new_database() { # NAME [HERALD] → URL
  "$ROOT/scripts/pg-cluster" createdb "$PG" "$1"
  local url="postgresql://herald@/$1?host=$PG"
  "${2:-$HERALD}" migrate --db "$url" >/dev/null
  echo "$url"
}
# CPU seconds so far of the PIDs given (their live threads), summed.
cpu_of() { local t=0 p; for p in "$@"; do t=$(python3 -c "print($t + $(cpu_seconds "$p"))"); done; echo "$t"; }
# The cluster's processes: the postmaster and its children (the workers' backends).
pg_pids() { local pm; pm=$(head -n 1 "$PG/data/postmaster.pid"); echo "$pm" $(pgrep -P "$pm"); }

# Publishes on $1, waits for the simulator to hold $2 pushes; prints seconds.
fanout_seconds() { # API N
  local start end
  sim_reset
  start=$(now)
  call POST "$1" /v1/channels/bench/events "$BODY" >/dev/null
  end=$(wait_accepted "$2")
  python3 -c "print(f'{$end-$start:.3f}')"
}

if [ "${PART:-1}" = 1 ] || [ -z "${PART:-}" ]; then
echo "== part 1: scale-out, $N tokens, 1 APNs connection per worker, latency 40 ms"
start_sim --no-ledger --max-streams 1000 --streams-before-auth 1000 --threads 2 --faults latency-ms=40
make_tokens "$N" "$WORK/tokens.txt"
declare -A RATE
for workers in 1 2 3; do
  url=$(new_database "scaleout_$workers")
  for i in $(seq 1 "$workers"); do start_worker "$url" "$i" --apns-connections 1; done
  call POST "${W_API[1]}" /v1/channels '{"id":"bench","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
  HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import bench "$WORK/tokens.txt" --server "${W_API[1]}" --batch-size 50000 > "$WORK/import.txt" 2>&1
  pgp=$(pg_pids); w0=$(cpu_of "${W_PID[@]}"); p0=$(cpu_of $pgp); s0=$(cpu_of "${PIDS[0]}")
  [ -z "${PERF:-}" ] || { mkdir -p "$PERF"; perf record -a -e cpu-clock -F 499 -g -o "$PERF/scaleout.$workers.data" > /dev/null 2>&1 & PERF_PID=$!; }
  s=$(fanout_seconds "${W_API[1]}" "$N")
  [ -z "${PERF:-}" ] || { kill -INT "$PERF_PID"; wait "$PERF_PID" 2>/dev/null || true; }
  w1=$(cpu_of "${W_PID[@]}"); p1=$(cpu_of $pgp); s1=$(cpu_of "${PIDS[0]}")
  RATE[$workers]=$(python3 -c "print(f'{$N/$s:.0f}')")
  per=""
  for i in $(seq 1 "$workers"); do per+=" worker$i=$(pushes_of "${W_API[$i]}")"; done
  echo "workers=$workers seconds=$s pushes_per_second=${RATE[$workers]} sent_by:$per load: $(cut -d' ' -f1-3 /proc/loadavg)"
  # Where the machine's CPU went during the fan-out, per push: every worker, PostgreSQL
  # (every backend), the simulator; and the share of the two cores they used together.
  echo "  cpu_us_per_push: workers=$(cpu_us_per "$w0" "$w1" "$N") postgresql=$(cpu_us_per "$p0" "$p1" "$N")" \
    "simulator=$(cpu_us_per "$s0" "$s1" "$N") cores_busy=$(python3 -c "print(f'{(($w1-$w0)+($p1-$p0)+($s1-$s0))/$s:.2f}')")"
  stop_workers
done
echo "scaleout_2_vs_1=$(ratio "${RATE[2]}" "${RATE[1]}")"
echo "scaleout_3_vs_1=$(ratio "${RATE[3]}" "${RATE[1]}")"
# The reference in the same run: h2load against the same simulator with 1 and 3 connections
# of 1,000 streams, one distinct device path per token (h2load -i), the same body. What any
# client can get from this simulator on this machine: if h2load's 3 ÷ 1 is short of 2.6 too,
# the machine (its cores), not the workers, bounds the scale-out.
printf '{"aps":{"content-state":{"away":0,"home":1,"minute":63,"status":"live"},"event":"update","timestamp":1767225600}}' > "$WORK/payload.json"
make_uris "$WORK/tokens.txt" "$SIM_PORT" "$WORK/uris.txt"
declare -A H2
for c in 1 3; do
  h2load_uris "$N" "$c" 1000 "$WORK/payload.json" "$WORK/uris.txt" "$SIM_PORT"
  H2[$c]=$H2_RATE
  echo "h2load connections=$c requests_per_second=$H2_RATE h2load_cpu_us_per_request=$H2_CPU_US load: $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo "h2load_3_vs_1=$(ratio "${H2[3]}" "${H2[1]}")"
echo "herald_3_workers_vs_h2load_3_connections=$(ratio "${RATE[3]}" "${H2[3]}")"
kill "${PIDS[0]}" 2>/dev/null || true; wait "${PIDS[0]}" 2>/dev/null || true; PIDS=("${PIDS[@]:1}")
fi
[ "${PART:-2}" = 2 ] || { echo "load_after: $(uptime)"; exit 0; }

echo "== part 2: one worker, CPU-bound (no added latency, 2 connections), $M tokens"
start_sim --no-ledger --max-streams 1000 --streams-before-auth 1000 --threads 2
SIM2_PID=${PIDS[${#PIDS[@]}-1]} # part 2's simulator (start_sim appends it; PIDS[0] is no longer a simulator)
make_tokens "$M" "$WORK/tokens-m.txt"
declare -A CPU_RATE
BACKENDS=${BACKENDS:-postgresql sqlite}
[ -z "${HERALD_SERVE_BEFORE:-}" ] || BACKENDS="postgresql-before $BACKENDS"
# PostgreSQL's statements during the fan-out, per push (pg_stat_statements, reset before it).
pg_stats() { # DB N
  "$PSQL" -h "$PG" -U herald -d "$1" -qAt -F ' ' -c "
    SELECT to_char(calls::float8 / $2, 'FM0.00000') AS calls_per_push, to_char(rows::float8 / $2, 'FM0.000') AS rows_per_push,
      to_char((shared_blks_hit + shared_blks_read)::float8 / $2, 'FM0.000') AS buffers_per_push,
      to_char(total_exec_time * 1000 / $2, 'FM0.000') AS exec_us_per_push, left(regexp_replace(query, '\\s+', ' ', 'g'), 90)
    FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '$1') ORDER BY total_exec_time DESC LIMIT 12" |
    sed 's/^/  pg_stat: /'
}
PSQL="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/psql"
for backend in $BACKENDS; do
  SERVE=$HERALD
  [ "$backend" != postgresql-before ] || SERVE=$HERALD_SERVE_BEFORE
  db="cpu_bound_${backend//-/_}"
  if [ "$backend" != sqlite ]; then url=$(new_database "$db" "$SERVE"); else url="$WORK/herald.db"; fi
  start_worker "$url" 1 --apns-connections 2
  call POST "${W_API[1]}" /v1/channels '{"id":"bench","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
  t0=$(now)
  HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import bench "$WORK/tokens-m.txt" --server "${W_API[1]}" --batch-size 50000 > "$WORK/import.txt" 2>&1
  t1=$(now)
  if [ "$backend" != sqlite ] && [ -n "${VACUUM:-}" ]; then "$PSQL" -h "$PG" -U herald -d "$db" -qc "VACUUM ANALYZE subscriptions"; echo "  (VACUUM ANALYZE subscriptions after the import)"; fi
  if [ "$backend" != sqlite ] && [ -n "${PG_STATS:-}" ]; then
    "$PSQL" -h "$PG" -U herald -d "$db" -qAtc "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT pg_stat_statements_reset()" >/dev/null
  fi
  sleep 0.5 # the backends of the commands above have exited (pg_pids must not list them)
  echo 5 > "/proc/${W_PID[1]}/clear_refs" 2>/dev/null || true
  rss0=$(awk '/VmRSS/ { printf "%.1f\n", $2/1024 }' "/proc/${W_PID[1]}/status")
  pgp=$(pg_pids); w0=$(cpu_of "${W_PID[1]}"); p0=$(cpu_of $pgp); s0=$(cpu_of "$SIM2_PID")
  if [ "$backend" != sqlite ] && [ -n "${PG_PERF:-}" ]; then
    mkdir -p "$PG_PERF"; perf record -e cpu-clock -F 999 -g -p "$(echo $pgp | tr ' ' ',')" -o "$PG_PERF/part2.$backend.data" > "$PG_PERF/part2.$backend.log" 2>&1 & PERF_PID=$!
  fi
  s=$(fanout_seconds "${W_API[1]}" "$M")
  if [ "$backend" != sqlite ] && [ -n "${PG_PERF:-}" ]; then kill -INT "$PERF_PID" 2>/dev/null || cat "$PG_PERF/part2.$backend.log" >&2; wait "$PERF_PID" 2>/dev/null || true; fi
  # A backend started during the fan-out (a connection opened then) counts from its start.
  w1=$(cpu_of "${W_PID[1]}"); p1=$(cpu_of $(pg_pids)); s1=$(cpu_of "$SIM2_PID")
  CPU_RATE[$backend]=$(python3 -c "print(f'{$M/$s:.0f}')")
  echo "backend=$backend import_tokens_per_second=$(python3 -c "print(f'{$M/($t1-$t0):.0f}')") fanout_seconds=$s" \
    "fanout_per_second=${CPU_RATE[$backend]} rss_at_start_mib=$rss0 peak_rss_mib=$(peak_rss_mib "${W_PID[1]}")" \
    "load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "  cpu_us_per_push: worker=$(cpu_us_per "$w0" "$w1" "$M") postgresql=$(cpu_us_per "$p0" "$p1" "$M")" \
    "simulator=$(cpu_us_per "$s0" "$s1" "$M")"
  if [ "$backend" != sqlite ] && [ -n "${PG_STATS:-}" ]; then pg_stats "$db" "$M"; fi
  stop_workers
done
[ -z "${CPU_RATE[postgresql]:-}" ] || [ -z "${CPU_RATE[sqlite]:-}" ] || echo "postgresql_vs_sqlite_fanout=$(ratio "${CPU_RATE[postgresql]}" "${CPU_RATE[sqlite]}")"
[ -z "${CPU_RATE[postgresql-before]:-}" ] || [ -z "${CPU_RATE[sqlite]:-}" ] || echo "postgresql_before_vs_sqlite_fanout=$(ratio "${CPU_RATE[postgresql-before]}" "${CPU_RATE[sqlite]}")"
echo "load_after: $(uptime)"

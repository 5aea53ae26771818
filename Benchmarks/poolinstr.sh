#!/usr/bin/env bash
# Issue #12: the sender pool's cost per push counted in instructions, which (unlike CPU time)
# do not move with the machine's other work. The same pushes as Benchmarks/pool.sh (one
# distinct device path each, 2 × 1000 streams, the same payload and headers) to the simulator
# (--no-ledger --threads 2, run natively): (1) `herald-bench pool` under
# `valgrind --tool=callgrind`, instrumented only from its first submit to its last answer
# (`--gate`: the warm-up and the connections' set-up are not counted); (2) h2load under
# callgrind, its start-up (parsing the URI file, the handshakes: a run of one request per
# connection over the same file) taken off. User space only (the kernel is not counted).
#
#   herald_instructions_per_push=   h2load_instructions_per_request=
#   herald_vs_h2load_instructions=
#
#   Benchmarks/poolinstr.sh [N] [CONNECTIONS] [STREAMS]   defaults 20000 2 1000 (valgrind is ~50× slower)
#   HERALD_BENCH=/path/herald-bench                       another build's driver (before/after)
#   NO_APNS_ID=1 Benchmarks/poolinstr.sh                  Herald sends no apns-id either (as h2load)
#   SIM_INSTR=1 Benchmarks/poolinstr.sh                   counts the simulator instead, in both halves:
#       it runs under callgrind, Herald and h2load natively; Herald's half over the same gated
#       window (connections up), h2load's with its one-request-per-connection run taken off.
#       simulator_instructions_herald_half=  simulator_instructions_h2load_half=
#       (compare with herald_instructions_per_push= of a run without SIM_INSTR)
#   CALLGRIND_OPTS="--cache-sim=yes --branch-sim=yes"     callgrind's cache and branch models too
#       (with KEEP_PROFILE=dir: `callgrind_annotate --show=Ir,I1mr,Bcm,Bim`)
source "$(dirname "$0")/lib.sh"
N=${1:-20000}; C=${2:-2}; S=${3:-1000}
bench_setup valgrind
BENCH=${HERALD_BENCH:-$BENCH}
echo "load: $(uptime)"
if [ -n "${SIM_INSTR:-}" ]; then
  SIM_WRAP="valgrind --tool=callgrind ${CALLGRIND_OPTS:-} --instr-atstart=no --callgrind-out-file=$WORK/sim.cg"
  CG_BENCH=()
else
  CG_BENCH=(valgrind --tool=callgrind ${CALLGRIND_OPTS:-} --instr-atstart=no --callgrind-out-file="$WORK/pool.cg")
fi
start_sim --no-ledger --threads 2 --max-streams "$S" --streams-before-auth "$S"
# The process whose instructions are counted: Herald's driver, or the simulator.
counted() { if [ -n "${SIM_INSTR:-}" ]; then echo "$SIM_PID"; else echo "$BENCH_PID"; fi; }
PAYLOAD="$WORK/payload.json"
printf '{"aps":{"content-state":{"away":0,"home":1},"event":"update","timestamp":1767225600}}' > "$PAYLOAD"
make_tokens "$N" "$WORK/tokens.txt"
make_uris "$WORK/tokens.txt" "$SIM_PORT" "$WORK/uris.txt"

# Sums the instructions of callgrind's output files PREFIX*.
instructions() { cat "$1"* | awk '/^totals:/ { s += $2 } END { printf "%.0f\n", s }'; }
wait_file() { for _ in $(seq 1 6000); do [ -e "$1" ] && return 0; sleep 0.05; done; echo "timed out waiting for $1" >&2; exit 1; }

GATE="$WORK/gate"; mkdir -p "$GATE"
"${CG_BENCH[@]}" "$BENCH" pool \
  --target "127.0.0.1:$SIM_PORT" --ca "$SIM_DIR/sim-cert.pem" --key "$SIM_KEY" --key-id "$SIM_KEY_ID" \
  --team-id "$SIM_TEAM_ID" --requests "$N" --connections "$C" --streams "$S" --tokens "$WORK/tokens.txt" \
  --payload "$PAYLOAD" --gate "$GATE" ${NO_APNS_ID:+--apns-id 0} > "$WORK/pool.txt" 2> "$WORK/pool.err" &
BENCH_PID=$!; PIDS+=($BENCH_PID)
wait_file "$GATE/ready"
callgrind_control -i on "$(counted)" > /dev/null
touch "$GATE/go"
wait_file "$GATE/done"
callgrind_control -i off "$(counted)" > /dev/null
touch "$GATE/stop"
wait "$BENCH_PID" || { cat "$WORK/pool.txt" "$WORK/pool.err" >&2; exit 1; }
grep -q "^pool_delivered=$N$" "$WORK/pool.txt" || { cat "$WORK/pool.txt" >&2; exit 1; }
JWT=$(make_jwt)
h2() { # N STREAMS OUT: h2load under callgrind (OUT), or natively with the simulator counted
  local run=(h2load -n "$1" -c "$C" -m "$2" -t 1 -d "$PAYLOAD" -i "$WORK/uris.txt"
    -H "authorization: bearer $JWT" -H "apns-push-type: liveactivity"
    -H "apns-topic: com.example.app.push-type.liveactivity" -H "apns-priority: 5")
  if [ -n "${SIM_INSTR:-}" ]; then
    cg_window "$SIM_PID" "${run[@]}" > "$3.txt" 2>&1
  else
    valgrind --tool=callgrind ${CALLGRIND_OPTS:-} --callgrind-out-file="$3" "${run[@]}" > "$3.txt" 2>&1
  fi
  grep -q "requests: $1 total, $1 started, $1 done, $1 succeeded" "$3.txt" || { cat "$3.txt" >&2; exit 1; }
}
if [ -n "${SIM_INSTR:-}" ]; then
  # Dump 1: Herald's window; 2: h2load's start-up run; 3: h2load's N requests.
  callgrind_control -d "$SIM_PID" > /dev/null
  h2 "$C" 1 "$WORK/h2start"
  h2 "$N" "$S" "$WORK/h2load"
  sleep 1
  echo "simulator_instructions_herald_half=$(( $(cg_total "$WORK/sim.cg.1") / N ))"
  echo "simulator_instructions_h2load_half=$(( ($(cg_total "$WORK/sim.cg.3") - $(cg_total "$WORK/sim.cg.2")) / (N - C) ))"
  [ -z "${KEEP_PROFILE:-}" ] || { cp "$WORK"/sim.cg.* "$KEEP_PROFILE"/; echo "profiles kept in $KEEP_PROFILE"; }
  echo "load_after: $(uptime)"
  exit 0
fi
HERALD_IR=$(( $(instructions "$WORK/pool.cg") / N ))
h2 "$C" 1 "$WORK/h2start.cg"
h2 "$N" "$S" "$WORK/h2load.cg"
H2_IR=$(( ($(instructions "$WORK/h2load.cg") - $(instructions "$WORK/h2start.cg")) / (N - C) ))

echo "herald_instructions_per_push=$HERALD_IR"
echo "h2load_instructions_per_request=$H2_IR"
echo "herald_vs_h2load_instructions=$(ratio "$HERALD_IR" "$H2_IR")"
[ -z "${KEEP_PROFILE:-}" ] || { cp "$WORK"/pool.cg* "$WORK"/h2load.cg* "$WORK"/h2start.cg* "$KEEP_PROFILE"/; echo "profiles kept in $KEEP_PROFILE"; }
echo "load_after: $(uptime)"

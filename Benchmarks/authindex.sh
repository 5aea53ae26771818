#!/usr/bin/env bash
# Issue #12: what the `authorization` field's HPACK form costs both ends of a push.
#
# libnghttp2's deflater never indexes `authorization` (`deflate_nv` in lib/nghttp2_hd.c, in
# 1.52 and upstream alike; there is no option or field flag to change it), so every request
# carries the ~190-byte JWT as a Huffman-coded literal: the client encodes it, and the server
# Huffman-decodes it, per push. Apple's newer page asks for it to be indexed, the older one
# for a literal (the reference's §1.4: either is accepted).
#
# This builds libnghttp2 twice from a source tree of the installed version: as it is, and with
# only that condition taken out (the field then goes into the HPACK table once per connection
# and JWT, and costs one byte per request after). It runs Herald's half of pool.sh
# (`herald-bench pool` → the simulator, --no-ledger --threads 2, N pushes over 2 × 1000
# streams, one distinct path each) with each build in alternating pairs, a fresh simulator per
# run. Only Herald's driver loads the built library (LD_LIBRARY_PATH); the simulator runs on
# Debian's, whose inflater decodes either form.
#
#   NGHTTP2_SRC=dir Benchmarks/authindex.sh [ROUNDS] [N]   defaults 4 300000
#       dir: nghttp2's source tree at the installed version (`apt-get source nghttp2` with a
#       deb-src line, or a checkout of the tag v<version>)
#   INSTR=1 ...   also each build's instructions (Benchmarks/poolinstr.sh: Herald's per push,
#                 then the simulator's per request), 20,000 pushes under callgrind
#
# Per run:  literal|indexed sim_cpu_us_per_request= herald_cpu_us_per_push= sim_vs_herald= pool_rate=
# Then the medians: sim_vs_herald_literal= sim_vs_herald_indexed=, and the CPU ratios
# indexed ÷ literal: herald_cpu_indexed_vs_literal= sim_cpu_indexed_vs_literal=
source "$(dirname "$0")/lib.sh"
ROUNDS=${1:-4}; N=${2:-300000}; C=2; S=1000
[ -n "${NGHTTP2_SRC:-}" ] && [ -f "$NGHTTP2_SRC/lib/nghttp2_hd.c" ] || {
  echo "NGHTTP2_SRC must name nghttp2's source tree (lib/nghttp2_hd.c)" >&2; exit 2; }
bench_setup gcc valgrind
echo "load: $(uptime)"

# The tree must be the installed library's version: the driver loads it in Debian's place.
INSTALLED=$(dpkg-query -W -f '${Version}' libnghttp2-14 | sed 's/-.*//')
SOURCE=$(sed -n 's/^AC_INIT(\[nghttp2\], \[\([^]]*\)\].*/\1/p' "$NGHTTP2_SRC/configure.ac")
[ "$INSTALLED" = "$SOURCE" ] || { echo "source tree is nghttp2 $SOURCE, installed is $INSTALLED" >&2; exit 2; }

# Builds lib/*.c into DIR/libnghttp2.so.14; PATCH=1 first drops `authorization` from the
# never-indexed fields (the one line of deflate_nv that names it, checked to exist once).
build_lib() { # DIR PATCH
  local src="$1/src"
  mkdir -p "$src" && cp -r "$NGHTTP2_SRC/lib" "$src/"
  sed -e "s/@PACKAGE_VERSION@/$SOURCE/" -e 's/@PACKAGE_VERSION_NUM@/0/' \
    "$src/lib/includes/nghttp2/nghttp2ver.h.in" > "$src/lib/includes/nghttp2/nghttp2ver.h"
  if [ "$2" = 1 ]; then
    local hits; hits=$(grep -c '^ *token == NGHTTP2_TOKEN_AUTHORIZATION ||$' "$src/lib/nghttp2_hd.c" || true)
    [ "$hits" = 1 ] || { echo "nghttp2_hd.c: the never-indexed authorization line found $hits times, not once" >&2; exit 1; }
    sed -i 's/^\( *\)token == NGHTTP2_TOKEN_AUTHORIZATION ||$/\10 ||/' "$src/lib/nghttp2_hd.c"
  fi
  (cd "$src/lib" && gcc -O2 -fPIC -shared -DHAVE_ARPA_INET_H -DHAVE_NETINET_IN_H -DBUILDING_NGHTTP2 -Iincludes -I. \
    -Wl,-soname,libnghttp2.so.14 -o "$1/libnghttp2.so.14" ./*.c)
  # The driver must load this library, not Debian's (or both halves would measure the same).
  LD_LIBRARY_PATH="$1" ldd "$BENCH" | grep -q "libnghttp2.so.14 => $1/libnghttp2.so.14" || {
    echo "herald-bench does not load $1/libnghttp2.so.14" >&2; exit 1; }
  # The driver, on this library (a file, so poolinstr.sh can take it as HERALD_BENCH).
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$1" "$BENCH" > "$1/herald-bench" && chmod +x "$1/herald-bench"
}
build_lib "$WORK/literal" 0
build_lib "$WORK/indexed" 1

PAYLOAD="$WORK/payload.json"
printf '{"aps":{"content-state":{"away":0,"home":1},"event":"update","timestamp":1767225600}}' > "$PAYLOAD"
make_tokens "$N" "$WORK/tokens.txt"
RESULTS="$WORK/results.txt"
for _ in $(seq 1 "$ROUNDS"); do
  for v in literal indexed; do
    start_sim --no-ledger --threads 2 --max-streams "$S" --streams-before-auth "$S"
    S0=$(cpu_seconds "$SIM_PID")
    "$WORK/$v/herald-bench" pool --target "127.0.0.1:$SIM_PORT" --ca "$SIM_DIR/sim-cert.pem" --key "$SIM_KEY" \
      --key-id "$SIM_KEY_ID" --team-id "$SIM_TEAM_ID" --requests "$N" --connections "$C" --streams "$S" \
      --tokens "$WORK/tokens.txt" --payload "$PAYLOAD" > "$WORK/pool.txt"
    S1=$(cpu_seconds "$SIM_PID")
    grep -q "^pool_delivered=$N$" "$WORK/pool.txt" || { cat "$WORK/pool.txt" >&2; exit 1; }
    H=$(awk -F= '/^herald_cpu_us_per_push=/ { print $2 }' "$WORK/pool.txt")
    R=$(awk -F= '/^pool_rate=/ { print $2 }' "$WORK/pool.txt")
    SC=$(cpu_us_per "$S0" "$S1" "$N")
    echo "$v sim_cpu_us_per_request=$SC herald_cpu_us_per_push=$H sim_vs_herald=$(ratio "$SC" "$H") pool_rate=$R" | tee -a "$RESULTS"
    kill "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true
    rm -rf "$SIM_DIR"
  done
done
python3 - "$RESULTS" <<'PY'
import statistics, sys
runs = {"literal": [], "indexed": []}
for line in open(sys.argv[1]):
    v, *fields = line.split()
    runs[v].append({k: float(x) for k, x in (f.split("=") for f in fields)})
med = lambda v, k: statistics.median(r[k] for r in runs[v])
for v in runs:
    print(f"sim_vs_herald_{v}={med(v, 'sim_vs_herald'):.3f}")
print(f"herald_cpu_indexed_vs_literal={med('indexed', 'herald_cpu_us_per_push') / med('literal', 'herald_cpu_us_per_push'):.3f}")
print(f"sim_cpu_indexed_vs_literal={med('indexed', 'sim_cpu_us_per_request') / med('literal', 'sim_cpu_us_per_request'):.3f}")
print(f"pool_rate_indexed_vs_literal={med('indexed', 'pool_rate') / med('literal', 'pool_rate'):.3f}")
PY

if [ -n "${INSTR:-}" ]; then
  # instr: the two counts of one build. --trace-children: callgrind follows the wrapper's
  # exec into the driver.
  instr() { # VARIANT
    NO_BUILD=1 CALLGRIND_OPTS=--trace-children=yes HERALD_BENCH="$WORK/$1/herald-bench" "$ROOT/Benchmarks/poolinstr.sh" \
      > "$WORK/instr.txt" 2> "$WORK/instr.err" || { cat "$WORK/instr.txt" "$WORK/instr.err" >&2; exit 1; }
    sed -n "s/^herald_instructions_per_push=/${1}_herald_instructions_per_push=/p" "$WORK/instr.txt"
    NO_BUILD=1 SIM_INSTR=1 HERALD_BENCH="$WORK/$1/herald-bench" "$ROOT/Benchmarks/poolinstr.sh" \
      > "$WORK/instr.txt" 2> "$WORK/instr.err" || { cat "$WORK/instr.txt" "$WORK/instr.err" >&2; exit 1; }
    sed -n "s/^simulator_instructions_herald_half=/${1}_simulator_instructions_per_request=/p" "$WORK/instr.txt"
  }
  instr literal
  instr indexed
fi
echo "load_after: $(uptime)"

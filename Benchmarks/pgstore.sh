#!/usr/bin/env bash
# Registration and scan through the storage protocols, PostgreSQL vs SQLite
# (Benchmarks/Sources/herald-pgstore-bench): N tokens in API-sized batches of 10,000, the
# same again as updates, then one pass reading them back. A throwaway cluster on a Unix
# socket (scripts/pg-cluster, fsync off), the SQLite file in /tmp.
#
#   Benchmarks/pgstore.sh [TOKENS]     default 100000
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/bootstrap"
(cd "$ROOT" && swift build -c release --product herald-pgstore-bench >&2)
DIR="$(mktemp -u /tmp/herald-pgstore-bench.XXXXXX)"
URL=$("$ROOT/scripts/pg-cluster" start "$DIR" $$)
trap '"$ROOT/scripts/pg-cluster" stop "$DIR"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/.build/release/herald-pgstore-bench" "$URL" "$@"

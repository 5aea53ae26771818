#!/usr/bin/env bash
# PostgreSQL bulk load and pipeline figures (docs/postgres.md): binary COPY vs COPY into a
# staging table + upsert vs INSERT … SELECT unnest(…), at 100k and 1M 32-byte tokens, and
# single-row statements one round trip each vs pipelined. A throwaway cluster on a Unix
# socket (scripts/pg-cluster, fsync off: the figures are CPU and protocol, not disk).
#
#   Benchmarks/postgres.sh [TOKENS...]     default 100000 1000000
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/scripts/bootstrap"
(cd "$ROOT" && swift build -c release --product herald-pg-bench >&2)
DIR="$(mktemp -u /tmp/herald-pg-bench.XXXXXX)"
# PG_CLUSTER_OPTS: server settings, e.g. "-c shared_buffers=512MB" (the default 64 MB is
# smaller than 1M subscriptions with their index).
URL=$("$ROOT/scripts/pg-cluster" start "$DIR" $$)
echo "server settings: ${PG_CLUSTER_OPTS:-defaults of scripts/pg-cluster (shared_buffers=64MB)}"
trap '"$ROOT/scripts/pg-cluster" stop "$DIR"' EXIT
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$ROOT/.build/release/herald-pg-bench" "$URL" "$@"

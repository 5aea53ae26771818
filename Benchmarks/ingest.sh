#!/usr/bin/env bash
# Issue #5, figure 3: registry ingest, tokens/s, through the batch route (2 concurrent
# clients, 10,000 tokens per request) and through `herald subs import` (one client).
# Also prints the database size per subscription. Ends with ingest_tokens_per_s=<n> (the
# batch route). Target: >= 100k tokens/s.
#
#   Benchmarks/ingest.sh [TOKENS]     default 1000000
source "$(dirname "$0")/lib.sh"
N=${1:-1000000}
bench_setup sqlite3
machine
start_sim --no-ledger
start_serve
api POST /v1/channels '{"id":"ingest-route","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
api POST /v1/channels '{"id":"ingest-cli","bundle_id":"com.example.app","environment":"sandbox"}' >/dev/null
make_tokens "$N" "$WORK/tokens.txt"
echo "tokens: $N (32-byte, hex)"
"$BENCH" ingest --api "$API" --token "$ADMIN" --channel ingest-route --file "$WORK/tokens.txt" --batch 10000 --clients 2 > "$WORK/route.txt"
T0=$(now)
HERALD_ADMIN_TOKEN="$ADMIN" "$HERALD" subs import ingest-cli "$WORK/tokens.txt" --server "$API" --batch-size 10000 > /dev/null 2>&1
T1=$(now)
# Size on disk: checkpoint the WAL into the file (a second connection may), then the file
# over the 2*N subscriptions it holds.
sqlite3 "$WORK/herald.db" 'PRAGMA wal_checkpoint(TRUNCATE);' > /dev/null
DB_BYTES=$(stat -c %s "$WORK/herald.db")
echo "db_bytes=$DB_BYTES"
echo "db_bytes_per_subscription=$(( DB_BYTES / (2 * N) ))"
ROUTE=$(awk -F= '/ingest_batch_route_tokens_per_s/ {print $2}' "$WORK/route.txt")
echo "ingest_subs_import_tokens_per_s=$(python3 -c "print(f'{$N/($T1-$T0):.0f}')")"
echo "ingest_tokens_per_s=$ROUTE"

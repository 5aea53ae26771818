#!/usr/bin/env bash
# Long fuzzing run of every herald-fuzz target (CI runs them 20 s each through scripts/test):
# SECONDS per target (default 600). New inputs libFuzzer finds go to .build/fuzz-work/<target>/
# (not committed); a crash fails the run and leaves its input in .build/fuzz-findings/<target>/,
# which becomes a regression input in Fuzz/corpus/<target>/ once fixed.
#
#   Benchmarks/fuzz-long.sh [SECONDS] [TARGET...]
#
# To fold what a long run found into the committed corpus (keeping only inputs that add
# coverage), after a clean run:
#   HERALD_FUZZ_TARGET=T .build/fuzz/debug/herald-fuzz -merge=1 Fuzz/corpus/T .build/fuzz-work/T
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"
shift || true
exec ./scripts/fuzz "$seconds" "$@"

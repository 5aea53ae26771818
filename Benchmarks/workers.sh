#!/usr/bin/env bash
# Three `herald serve` workers on one throwaway PostgreSQL share a channel of 100,000 tokens
# (five back-to-back updates), then the SIGKILL and SIGSTOP runs, at the sizes the issue asks
# for. The same test bodies as Tests/HeraldTests/PostgresWorkersServeTests.swift, which runs
# 30,000 / 20,000 tokens by default so that each test stays well under a minute on two
# shared cores (100,000 took 57 s there at load average 7-10: 22 s registering through a
# debug build, 31 s of fan-out). Prints each test's timing line.
#   TOKENS=100000 KILL_TOKENS=100000 Benchmarks/workers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --build-tests >/dev/null
export HERALD_TEST_WORKERS_TOKENS="${TOKENS:-100000}"
export HERALD_TEST_WORKERS_KILL_TOKENS="${KILL_TOKENS:-100000}"
export HERALD_TEST_WORKERS_STOP_TOKENS="${STOP_TOKENS:-100000}"
uptime
swift test --skip-build --filter PostgresWorkersServeTests 2>&1 | grep -E '^workers:|✔|✘'

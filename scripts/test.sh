#!/usr/bin/env bash
# Set up (idempotent; seconds when nothing changed) and run the whole test suite: unit tests,
# the conformance suite, then integration tests against the real Kafka-protocol broker and real
# Prometheus. The broker is the one at $CLAIMWATCH_TEST_BOOTSTRAP when set (.ci/run starts one),
# else the tests start their own.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CLAIMWATCH_SETUP_DONE:-0}" = 1 ] || bash scripts/setup.sh
. scripts/_env.sh
exec "$CLAIMWATCH_PY" -m pytest -q -p no:cacheprovider "$@"

#!/usr/bin/env bash
# Set up (idempotent; seconds when nothing changed) and run the whole test suite: unit tests,
# the conformance suite, then integration tests against the real Kafka-protocol broker and real
# Prometheus. `--fast` runs the fast loop instead: unit behaviour without the slow tier (model quality
# floors, simulations, benchmark smoke, promtool, fuzzing), no broker, no third-party instrumentations;
# other arguments go to pytest. The broker is the one at $CLAIMWATCH_TEST_BOOTSTRAP when set (.ci/run starts one),
# else the tests start their own. Test files go to a directory of this run's own, removed at exit
# (nothing left in /tmp, and two runs at once never share one).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${CLAIMWATCH_SETUP_DONE:-0}" = 1 ] || bash scripts/setup.sh
. scripts/_env.sh
BASETEMP=$(mktemp -d -t claimwatch-pytest.XXXXXX)
trap 'rm -rf "$BASETEMP"' EXIT
FAST=()
if [ "${1:-}" = "--fast" ]; then
  shift
  FAST=(-m "not integration and not conformance and not slow" tests/unit)
fi
"$CLAIMWATCH_PY" -m pytest -q -p no:cacheprovider --basetemp="$BASETEMP" "${FAST[@]}" "$@"

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
# Tests run on $CLAIMWATCH_TEST_PROCESSES processes (pytest-xdist; default 3 for the full suite, 2 for the fast loop):
# most integration tests wait on the broker, Prometheus or a deadline, so a third process fills a 2-core machine
# (measured on 2 cores: the full suite 831 s on one process, 354 s on three). 1 runs them in this process.
SELECT=()
PROCS=${CLAIMWATCH_TEST_PROCESSES:-3}
if [ "${1:-}" = "--fast" ]; then
  shift
  SELECT=(-m "not integration and not conformance and not slow" tests/unit)
  PROCS=${CLAIMWATCH_TEST_PROCESSES:-2}
fi
PARALLEL=()
if [ "$PROCS" != 1 ]; then PARALLEL=(-n "$PROCS"); fi
"$CLAIMWATCH_PY" -m pytest -q -p no:cacheprovider --basetemp="$BASETEMP" "${PARALLEL[@]}" "${SELECT[@]}" "$@"

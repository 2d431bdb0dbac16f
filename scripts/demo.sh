#!/usr/bin/env bash
# Set up (idempotent) and run the embedded demo: broker, worker, Prometheus, two releases.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec claimwatch demo "$@"

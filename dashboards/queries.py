"""Every PromQL query of the generated dashboards, ready to send to a real Prometheus.

``iter_queries()`` yields ``(dashboard uid, panel title, expr)`` for each panel
target with Grafana's variables replaced by concrete values: template
variables (``$release``, ``${model}``...) by the regex ``.*`` and the built-in
intervals by fixed durations (see :data:`BUILTINS`). Template-variable queries
(``label_values(...)``) are Grafana syntax, not PromQL, and are not yielded.
"""

from __future__ import annotations

import re
from typing import Any, Iterator, Mapping

BUILTINS: dict[str, str] = {
    "__rate_interval": "5m",
    "__interval": "1m",
    "__range": "1h",
}
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def substitute(expr: str, values: Mapping[str, str] | None = None) -> str:
    """Replace ``$name`` / ``${name}`` by ``values[name]``, a built-in interval, or ``.*``."""
    values = dict(values or {})

    def repl(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in values:
            return values[name]
        return BUILTINS.get(name, ".*")

    return _VAR.sub(repl, expr)


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def iter_dashboard_queries(dash: Mapping[str, Any]) -> Iterator[tuple[str, str, str]]:
    """Queries of one dashboard dict."""
    for panel in _panels(list(dash.get("panels", []))):
        for tgt in panel.get("targets", []):
            if tgt.get("expr"):
                yield dash["uid"], panel["title"], substitute(tgt["expr"])


def iter_queries() -> Iterator[tuple[str, str, str]]:
    """``(dashboard uid, panel title, PromQL)`` for every panel target of every generated dashboard."""
    from dashboards.generate import DASHBOARDS

    for build in DASHBOARDS.values():
        yield from iter_dashboard_queries(build())

"""Small builders for Grafana dashboard JSON (target: Grafana 10.4 / 11, schemaVersion 39).

Plain dicts, no dependency: a panel is ``{"type", "title", "gridPos",
"datasource", "targets", "fieldConfig", "options"}``; a :class:`Layout`
places panels left to right on a 24-column grid and hands out unique ids.
"""

from __future__ import annotations

from typing import Any, Iterable

GRAFANA_VERSION = "10.4.0"
SCHEMA_VERSION = 39
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def target(
    expr: str, legend: str = "", ref: str = "A", *, instant: bool = False, table: bool = False, exemplar: bool = False
) -> dict[str, Any]:
    """One PromQL query of a panel (``exemplar``: also fetch the raw series' exemplars, shown as points)."""
    t: dict[str, Any] = {
        "datasource": DATASOURCE,
        "expr": expr,
        "legendFormat": legend or "__auto",
        "refId": ref,
        "range": not instant,
        "instant": instant,
    }
    if table:
        t["format"] = "table"
    if exemplar:
        t["exemplar"] = True
    return t


def targets(*specs: tuple[str, str]) -> list[dict[str, Any]]:
    """Several range queries, refIds A, B, C... from ``(expr, legend)`` pairs."""
    return [target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(specs)]


def _field_config(
    unit: str,
    *,
    stacked: bool = False,
    thresholds: list[tuple[float | None, str]] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
) -> dict[str, Any]:
    steps = [{"color": color, "value": value} for value, color in (thresholds or [(None, "green")])]
    defaults: dict[str, Any] = {
        "unit": unit,
        "thresholds": {"mode": "absolute", "steps": steps},
        "color": {"mode": "palette-classic"},
    }
    if minimum is not None:
        defaults["min"] = minimum
    if maximum is not None:
        defaults["max"] = maximum
    if stacked:
        defaults["custom"] = {"stacking": {"mode": "normal", "group": "A"}, "fillOpacity": 60, "lineWidth": 1}
    return {"defaults": defaults, "overrides": []}


def timeseries(
    title: str,
    tgts: list[dict[str, Any]],
    *,
    unit: str = "short",
    stacked: bool = False,
    description: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    links: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A time-series panel; ``links``: data links on its points (``{"title", "url"}``, Grafana variables allowed)."""
    panel: dict[str, Any] = {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": tgts,
        "fieldConfig": _field_config(unit, stacked=stacked, minimum=minimum, maximum=maximum),
        "options": {
            "legend": {"displayMode": "table", "placement": "bottom", "calcs": ["mean", "lastNotNull"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }
    if links:
        panel["fieldConfig"]["defaults"]["links"] = links
    return panel


def text(title: str, markdown: str) -> dict[str, Any]:
    """A markdown text panel (dashboard variables such as ``$release`` are interpolated by Grafana)."""
    return {"type": "text", "title": title, "options": {"mode": "markdown", "content": markdown}}


def stat(
    title: str,
    expr: str,
    *,
    unit: str = "short",
    thresholds: list[tuple[float | None, str]] | None = None,
    description: str = "",
    decimals: int | None = None,
) -> dict[str, Any]:
    panel: dict[str, Any] = {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": [target(expr, title, instant=True)],
        "fieldConfig": _field_config(unit, thresholds=thresholds),
        "options": {
            "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
            "colorMode": "background",
            "graphMode": "none",
            "textMode": "value",
        },
    }
    if decimals is not None:
        panel["fieldConfig"]["defaults"]["decimals"] = decimals
    return panel


def table(
    title: str, columns: Iterable[tuple[str, str, str]], *, description: str = "", sort_by: str | None = None
) -> dict[str, Any]:
    """Instant queries merged on their labels; ``columns`` = ``(expr, column name, unit)``."""
    cols = list(columns)
    tgts = [target(expr, name, chr(ord("A") + i), instant=True, table=True) for i, (expr, name, _) in enumerate(cols)]
    rename = {f"Value #{chr(ord('A') + i)}": name for i, (_, name, _) in enumerate(cols)}
    overrides = [
        {"matcher": {"id": "byName", "options": name}, "properties": [{"id": "unit", "value": unit}]}
        for _, name, unit in cols
    ]
    options: dict[str, Any] = {"showHeader": True, "cellHeight": "sm"}
    if sort_by:
        options["sortBy"] = [{"displayName": sort_by, "desc": True}]
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": tgts,
        "fieldConfig": {"defaults": {"custom": {"align": "auto"}}, "overrides": overrides},
        "options": options,
        "transformations": [
            {"id": "merge", "options": {}},
            {"id": "organize", "options": {"excludeByName": {"Time": True}, "renameByName": rename}},
        ],
    }


def row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


class Layout:
    """Places panels on the 24-column grid in reading order and numbers them."""

    def __init__(self) -> None:
        self.panels: list[dict[str, Any]] = []
        self._x = 0
        self._y = 0
        self._row_h = 0
        self._id = 0

    def _next_line(self) -> None:
        if self._x:
            self._y += self._row_h
            self._x = 0
            self._row_h = 0

    def add(self, panel: dict[str, Any], w: int = 12, h: int = 8) -> None:
        if self._x + w > 24:
            self._next_line()
        self._id += 1
        panel = {"id": self._id, "gridPos": {"h": h, "w": w, "x": self._x, "y": self._y}, **panel}
        self.panels.append(panel)
        self._x += w
        self._row_h = max(self._row_h, h)

    def row(self, title: str) -> None:
        self._next_line()
        self._id += 1
        self.panels.append({"id": self._id, "gridPos": {"h": 1, "w": 24, "x": 0, "y": self._y}, **row(title)})
        self._y += 1


def datasource_variable() -> dict[str, Any]:
    return {
        "name": "datasource",
        "label": "Prometheus",
        "type": "datasource",
        "query": "prometheus",
        "current": {},
        "hide": 0,
        "refresh": 1,
        "regex": "",
        "includeAll": False,
        "multi": False,
        "options": [],
    }


def query_variable(name: str, query: str, label: str | None = None) -> dict[str, Any]:
    """A multi-value label_values variable with "All" mapped to ``.*``."""
    return {
        "name": name,
        "label": label or name.capitalize(),
        "type": "query",
        "datasource": DATASOURCE,
        "definition": query,
        "query": {"query": query, "refId": f"{name}-query", "qryType": 1},
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "includeAll": True,
        "allValue": ".*",
        "multi": True,
        "refresh": 2,
        "sort": 1,
        "hide": 0,
        "regex": "",
        "options": [],
    }


def dashboard(
    uid: str,
    title: str,
    description: str,
    panels: list[dict[str, Any]],
    variables: list[dict[str, Any]],
    tags: list[str],
) -> dict[str, Any]:
    return {
        "__inputs": [],
        "__requires": [
            {"type": "grafana", "id": "grafana", "name": "Grafana", "version": GRAFANA_VERSION},
            {"type": "datasource", "id": "prometheus", "name": "Prometheus", "version": "1.0.0"},
        ],
        "uid": uid,
        "title": title,
        "description": description,
        "tags": tags,
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": SCHEMA_VERSION,
        "version": 1,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "timezone": "browser",
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": variables},
        "panels": panels,
    }

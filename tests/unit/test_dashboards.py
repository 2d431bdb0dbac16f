"""Generated Grafana dashboards: structure, metric names, queries that parse, and no drift."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dashboards import catalog
from dashboards.generate import DASHBOARDS, GRAFANA_DIR, RULES_DIR, render_all, stale_files
from dashboards.queries import iter_queries, substitute

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str) -> dict:
    return json.loads((GRAFANA_DIR / name).read_text())


def _panels(dash: dict) -> list[dict]:
    """Panels that query Prometheus (rows and markdown text panels have no targets)."""
    return [p for p in dash["panels"] if p["type"] not in ("row", "text")]


def _recorded_names() -> set[str]:
    doc = yaml.safe_load((RULES_DIR / "claimwatch-recording.yml").read_text())
    return {rule["record"] for group in doc["groups"] for rule in group["rules"]}


def _metric_names(expr: str) -> set[str]:
    """Series names referenced by an expression: claimwatch_* and level:metric:op names."""
    cleaned = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # drop string literals (label values)
    cleaned = re.sub(r"\{[^}]*\}", "", cleaned)  # drop matchers
    return set(re.findall(r"\b[a-z_]*:?claimwatch_[a-z_]+(?::[a-z0-9_]+)?\b", cleaned))


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_structure(name):
    """Unique ids, datasource and expr on every target, sane gridPos, pinned schema version."""
    dash = _load(name)
    assert dash["schemaVersion"] == 39
    assert any(r["id"] == "grafana" and r["version"].startswith("10.4") for r in dash["__requires"])
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    occupied: set[tuple[int, int]] = set()
    for panel in dash["panels"]:
        g = panel["gridPos"]
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0 and g["x"] + g["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & occupied, f"{panel['title']} overlaps another panel"
        occupied |= cells
    for panel in _panels(dash):
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for t in panel["targets"]:
            assert t["expr"].strip() and t["datasource"]["uid"] == "${datasource}", panel["title"]


def test_overview_has_slice_variables_and_the_required_panels():
    """Overview: datasource + multi/include-all release, model, route, environment variables and key panels."""
    dash = _load("claimwatch-overview.json")
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("release", "model", "route", "environment"):
        v = variables[name]
        assert v["multi"] and v["includeAll"] and v["allValue"] == ".*"
        assert v["query"]["query"].startswith("label_values(") and v["query"]["query"].endswith(f", {name})")
    titles = {p["title"] for p in _panels(dash)}
    for wanted in (
        "Faithfulness rate",
        "Verdict breakdown",
        "Share of answers with unsupported / contradicted claims",
        "Average per-answer faithfulness score",
        "Per-slice quality",
        "Per-release comparison",
        "Top slices by contradicted rate",
        "Abstentions and failed answers",
    ):
        assert wanted in titles
    exprs = "\n".join(t["expr"] for p in _panels(dash) for t in p["targets"])
    for name in ("release", "model", "route", "environment"):
        assert f'{name}=~"${name}"' in exprs


def test_pipeline_dashboard_covers_the_pipeline():
    """Pipeline: collector, lag, throughput, duration, judge latency/errors/tokens/cost, dead letters."""
    dash = _load("claimwatch-pipeline.json")
    exprs = "\n".join(t["expr"] for p in _panels(dash) for t in p["targets"])
    for metric in (
        "claimwatch_collector_dropped_total",
        "claimwatch_collector_queue_depth",
        "claimwatch_collector_buffered_traces",
        "claimwatch_consumer_lag_records",
        "claimwatch_records_total",
        "claimwatch_evaluation_duration_seconds_bucket",
        "claimwatch_judge_latency_seconds_bucket",
        "claimwatch_judge_errors_total",
        "claimwatch_judge_tokens_total",
        "claimwatch_judge_cost_dollars_total",
        "claimwatch_dead_letters_total",
    ):
        assert metric in exprs, metric
    assert "histogram_quantile(0.95" in exprs and "histogram_quantile(0.5" in exprs


def test_catalog_matches_the_worker_registry():
    """Every worker metric in the catalog is exported by WorkerMetrics with the same type."""
    from evaluator_worker.metrics import WorkerMetrics

    exported = {}
    for family in WorkerMetrics().registry.collect():
        name = family.name + ("_total" if family.type == "counter" else "")
        exported[name] = family.type
    assert {n: exported.get(n) for n in catalog.WORKER_METRICS} == catalog.WORKER_METRICS


def test_every_referenced_metric_exists():
    """Each name in a panel query or rule is a known exported series or a recording rule."""
    known = catalog.known_series() | _recorded_names()
    sources = [(f"{d}/{t}", e) for d, t, e in iter_queries()]
    for path in RULES_DIR.glob("claimwatch-*.yml"):
        for group in yaml.safe_load(path.read_text())["groups"]:
            sources += [(rule.get("record") or rule["alert"], rule["expr"]) for rule in group["rules"]]
    unknown = {(where, n) for where, expr in sources for n in _metric_names(expr) if n not in known}
    assert not unknown


def test_dashboards_use_the_recording_rules_the_alerts_use():
    """Panels read the recorded 5m claim rates and the alerted judge / collector ratios."""
    exprs = "\n".join(e for _, _, e in iter_queries())
    used = _metric_names(exprs) & _recorded_names()
    assert "judge_id_release_model_route_environment:claimwatch_claims:rate5m" in used
    assert {"judge:claimwatch_judge_errors:ratio_rate10m", "reason:claimwatch_collector_dropped:ratio_rate10m"} <= used


def test_iter_queries_substitutes_every_variable():
    """No $variable survives substitution; intervals become concrete durations."""
    queries = list(iter_queries())
    assert len(queries) >= 30
    for _, _, expr in queries:
        assert "$" not in expr
    assert substitute('x{a=~"$release"}[$__rate_interval] ${model}') == 'x{a=~".*"}[5m] .*'


def test_every_query_parses_as_promql(tmp_path):
    """promtool accepts every substituted panel query (as recording-rule expressions)."""
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool not on PATH: apt-get install -y prometheus")
        pytest.skip("promtool not on PATH")
    rules = [{"record": f"panel_query_{i}", "expr": expr} for i, (_, _, expr) in enumerate(iter_queries())]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    out = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def test_regenerating_changes_nothing():
    """`python -m dashboards.generate --check` exits 0 on the committed files."""
    out = subprocess.run(
        [sys.executable, "-m", "dashboards.generate", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr


def test_stale_files_detects_edits_and_missing_files(tmp_path):
    """stale_files flags a generated file edited by hand and one that does not exist."""
    edited = tmp_path / "claimwatch-overview.json"
    edited.write_text("{}\n")
    same = tmp_path / "same.json"
    same.write_text("x\n")
    files = {edited: render_all()[GRAFANA_DIR / "claimwatch-overview.json"], same: "x\n", tmp_path / "missing.yml": "y"}
    assert stale_files(files) == [edited, tmp_path / "missing.yml"]


def test_exemplar_panel_links_to_the_claims_howto_and_the_trace_template_is_configurable():
    """The exemplar panel has exemplars on and a data link to a panel that shows the claims command for the selection."""
    from dashboards.generate import datasources, grafana_trace_url

    dash = _load("claimwatch-overview.json")
    panels = {p["id"]: p for p in dash["panels"]}
    (ex,) = [p for p in panels.values() if any(t.get("exemplar") for t in p.get("targets", []))]
    (link,) = ex["fieldConfig"]["defaults"]["links"]
    assert link["url"].startswith("/d/${__dashboard.uid}?viewPanel=")
    assert "${__url_time_range}" in link["url"] and "${__all_variables}" in link["url"]
    target = panels[int(link["url"].split("viewPanel=")[1].split("&")[0])]
    assert target["type"] == "text"
    assert 'claimwatch claims --release "$release"' in target["options"]["content"]
    assert grafana_trace_url("http://phoenix:6006/projects/p1/traces/{trace_id}") == (
        "http://phoenix:6006/projects/p1/traces/$${__value.raw}"
    )
    assert "https://cloud.langfuse.com/project/x/traces/$${__value.raw}" in datasources(
        "https://cloud.langfuse.com/project/x/traces/{trace_id}"
    )
    with pytest.raises(ValueError):
        grafana_trace_url("http://jaeger:16686/search")

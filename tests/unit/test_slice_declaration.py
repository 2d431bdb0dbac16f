"""Adding a slice label is one declaration plus regeneration: a copy of the tree gets ``tenant`` in
``contract.slices`` alone, the generators run, and every side (collector, worker, rules, dashboards, Argo, k8s,
CLI filters, metrics reference) carries it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_rules import _promtool

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "collector", "evaluator_worker", "claimwatch", "dashboards", "deploy", "docs")
TENANT = '    SliceLabel("tenant", "tenant.id"),\n'


def _copy_tree(dest: Path) -> None:
    """The files (tracked or new, not ignored) of the packages the generators read and write (no model weights, no data)."""
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", *PACKAGES],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for name in files:
        src = ROOT / name
        if "/judges/models/" in name or not src.is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(src.read_bytes())


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("tenant-tree")
    _copy_tree(dest)
    slices = dest / "contract" / "slices.py"
    text = slices.read_text()
    declared = text.index('    SliceLabel("environment"')
    end = text.index("\n", declared) + 1
    slices.write_text(text[:end] + TENANT + text[end:])  # the one change a user makes
    env = {**os.environ, "PYTHONPATH": str(dest)}
    for cmd in (["-m", "dashboards.generate"], ["-m", "claimwatch.docgen.metrics", "--write"]):
        subprocess.run([sys.executable, *cmd], cwd=dest, env=env, check=True, capture_output=True, timeout=120)
    return dest


def _run(tree: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tree, env=env, check=True, capture_output=True, text=True, timeout=120
    ).stdout


def test_the_collector_and_the_worker_take_the_new_label_by_default(tree):
    """CollectorSettings reads tenant from tenant.id; the worker's slice labels and its metrics carry tenant."""
    out = _run(
        tree,
        "from collector.config import CollectorSettings\n"
        "from evaluator_worker.config import WorkerSettings\n"
        "from evaluator_worker.metrics import WorkerMetrics\n"
        "print(CollectorSettings().slice_attributes['tenant'])\n"
        "print(','.join(WorkerSettings().slice_labels))\n"
        "print('tenant' in WorkerMetrics().claims._labelnames)\n",
    ).split()
    assert out == ["tenant.id", "release,model,route,environment,tenant", "True"]


def test_every_generated_slice_grouping_and_filter_names_the_new_label(tree):
    """Each rule's ``by (...)`` over slices, each dashboard filter and the config map name tenant; the release
    comparison keeps its scope (environment) and the new label is a dashboard variable."""
    rules = "".join(p.read_text() for p in (tree / "dashboards" / "rules").glob("*.yml"))
    groupings = re.findall(r"by \(([^)]*)\)", rules)
    slice_groupings = [g for g in groupings if "route" in g]
    assert slice_groupings and all("tenant" in g for g in slice_groupings), slice_groupings
    assert "judge_id_release_model_route_environment_tenant:claimwatch_claims:rate5m" in rules
    assert "release_environment_judge_id:claimwatch_answers_evaluated:count1h" in rules  # the scope is unchanged
    assert 'slice_labels!=\\"release,model,route,environment,tenant\\"' in rules
    overview = json.loads((tree / "dashboards" / "grafana" / "claimwatch-overview.json").read_text())
    assert "tenant" in [v["name"] for v in overview["templating"]["list"]]
    exprs = [
        target["expr"]
        for path in (tree / "dashboards" / "grafana").glob("*.json")
        for panel in json.loads(path.read_text())["panels"]
        for target in panel.get("targets", ())
        if 'route=~"$route"' in target.get("expr", "")
    ]
    assert exprs and all('tenant=~"$tenant"' in e for e in exprs), [e for e in exprs if "tenant" not in e]
    configmap = (tree / "deploy" / "k8s" / "configmap.yaml").read_text()
    assert """CLAIMWATCH_SLICE_LABELS: '["release","model","route","environment","tenant"]'""" in configmap
    assert "tenant" in (tree / "docs" / "metrics.md").read_text()


def test_the_cli_filters_by_the_new_label(tree):
    """``claimwatch claims`` and ``claimwatch label`` take --tenant."""
    for command in ("claims", "label"):
        code = f"import sys; sys.argv = ['claimwatch', '{command}', '--help']\nfrom claimwatch.cli import main\nmain()"
        assert "--tenant" in _run(tree, code), command


def test_the_regenerated_rules_are_valid(tree):
    """promtool accepts the rules generated for the new label."""
    files = sorted(str(p) for p in (tree / "dashboards" / "rules").glob("*.yml"))
    subprocess.run([_promtool(), "check", "rules", *files], check=True, capture_output=True, timeout=120)


def test_a_scope_label_becomes_an_argo_argument():
    """The Argo analysis has one argument per release-scope label, with its declared default."""
    from contract.slices import SLICES
    from dashboards import argo_gen

    for s in SLICES:
        assert (s.name in argo_gen.ARGS) is s.release_scope
        if s.release_scope:
            assert argo_gen.ARGS[s.name] == s.scope_default and f'{s.name}=~"{{{{args.{s.name}}}}}"' in argo_gen.query(
                "point"
            )

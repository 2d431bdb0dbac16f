"""The package boundaries follow the data flow: contract <- collector, contract <- evaluator_worker <- claimwatch.

Flags are parsed only in the command package (``claimwatch/``): no ``argparse`` below it.
Every import statement is read from the source (module level and inside functions), so a
lazy import cannot slip past the rule.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: package (or sub-package) -> top-level or dotted modules it must never import
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "contract": ("collector", "evaluator_worker", "claimwatch", "dashboards", "argparse"),
    "collector": ("evaluator_worker", "claimwatch", "dashboards", "argparse"),
    "evaluator_worker": ("collector", "claimwatch", "dashboards", "argparse"),
    "evaluator_worker/judges": (
        "evaluator_worker.consumer",
        "evaluator_worker.jobs",
        "evaluator_worker.partitions",
        "evaluator_worker.records",
        "evaluator_worker.seams",
        "evaluator_worker.writer",
        "evaluator_worker.pipeline",
        "evaluator_worker.metrics",
        "evaluator_worker.config",
        "evaluator_worker.flow",
        "evaluator_worker.results",
        "evaluator_worker.scoring",
        "evaluator_worker.trace_export",
        "prometheus_client",
        "kafka",
    ),
}


def imported_modules(path: Path) -> set[str]:
    """Every module an ``import``/``from ... import`` in ``path`` names (``from a import b`` gives a and a.b)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{alias.name}" for alias in node.names)
    return out


def violations(package: str, forbidden: tuple[str, ...]) -> list[str]:
    """``file: module`` for every import under ``package`` that names a forbidden module."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for module in sorted(imported_modules(path)):
            if any(module == f or module.startswith(f + ".") for f in forbidden):
                found.append(f"{path.relative_to(ROOT)}: {module}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_respect_the_data_flow(package):
    """No module of a package imports what sits downstream of it (or, for judges, the worker loop/metrics/config)."""
    assert (ROOT / package).is_dir()
    assert violations(package, FORBIDDEN[package]) == []


def test_the_checker_sees_lazy_imports(tmp_path):
    """An import inside a function counts: the checker is not fooled by deferring it."""
    (tmp_path / "m.py").write_text("def f():\n    from evaluator_worker.metrics import WorkerMetrics\n")
    assert "evaluator_worker.metrics" in imported_modules(tmp_path / "m.py")


def test_evaluator_worker_top_level_holds_only_the_product_path():
    """evaluator_worker/ holds the consume -> judge -> score -> metrics/results path and nothing around it."""
    product = {
        "__init__",
        "assembly",
        "config",
        "consumer",
        "jobs",
        "records",
        "writer",
        "partitions",
        "seams",
        "errors",
        "flow",
        "metrics",
        "offsets",
        "pipeline",
        "results",
        "scoring",
        "shape",  # the derived slices of every answer (labels of the per-class counters)
        "consistency",
        "parity",
        "trace_export",
        "shadow",  # a candidate judge on live answers beside the main one, counted apart (a judge rollout)
    }
    modules = {p.stem for p in (ROOT / "evaluator_worker").glob("*.py")}
    assert modules <= product, f"not product path: {sorted(modules - product)}"
    subpackages = {p.name for p in (ROOT / "evaluator_worker").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages == {"judges"}

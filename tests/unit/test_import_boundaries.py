"""The package boundaries follow the data flow: contract <- collector, contract <- evaluator_worker <- claimwatch
<- dashboards, and no module takes part in an import circle.

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
    # the tools read the product; the generators of dashboards and rules read the tools' metric catalogue
    "claimwatch": ("dashboards",),
    "evaluator_worker/judges": (
        "evaluator_worker.worker",
        "evaluator_worker.inflight",
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


#: the project's packages whose modules may not import each other in a circle
PACKAGES = ("contract", "collector", "evaluator_worker", "claimwatch", "dashboards")


def module_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the project modules it imports (any import statement, lazy or under TYPE_CHECKING). ``from a import
    b`` names the module ``a.b`` when there is one, else ``a``; a module's own enclosing packages are left out (Python
    runs them before it in any case, so they are no circle)."""
    paths = {}
    for package in packages:
        for path in (root / package).rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    sub = f"{node.module}.{alias.name}"
                    found.add(sub if sub in paths else node.module)
        parts = name.split(".")
        enclosing = {".".join(parts[:i]) for i in range(1, len(parts))}
        graph[name] = {m for m in found if m in paths} - enclosing - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_takes_part_in_an_import_circle():
    """No two project modules import each other, directly or through others (lazy imports and TYPE_CHECKING count)."""
    assert circles(module_graph(ROOT)) == []


def test_the_circle_check_sees_a_lazy_circle_and_not_a_package_init(tmp_path):
    """A circle through a lazy import is found; a submodule importing its own package's other submodule is not one."""
    pkg = tmp_path / "contract"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from contract.a import A\n")
    (pkg / "a.py").write_text("A = 1\ndef f():\n    from contract.b import B\n")
    (pkg / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from contract.a import A\nB = 2\n"
    )
    (pkg / "sub" / "__init__.py").write_text("from contract.sub import c\n")
    (pkg / "sub" / "c.py").write_text("from contract.sub import d\n")
    (pkg / "sub" / "d.py").write_text("D = 1\n")
    assert circles(module_graph(tmp_path, ("contract",))) == [["contract.a", "contract.b"]]


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
        "worker",
        "inflight",
        "writer",
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


def test_every_product_module_logs_under_its_own_name():
    """One logger per module: ``get_logger(__name__)``, never a name typed by hand (``RateLimitedLog`` passes on its
    caller's)."""
    wrong = []
    for pkg in ("collector", "contract", "evaluator_worker", "claimwatch"):
        for path in (ROOT / pkg).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "get_logger" and node.args:
                    arg = node.args[0]
                    if isinstance(arg, ast.Constant):
                        wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not wrong, wrong


def test_the_record_flow_parts_take_keywords_only():
    """The worker's parts (Worker, InFlight, ResultWriter) are built with keywords: no 11 positional arguments."""
    import inspect

    from evaluator_worker.inflight import InFlight
    from evaluator_worker.worker import Worker
    from evaluator_worker.writer import ResultWriter

    for cls in (Worker, InFlight, ResultWriter):
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        positional = [p.name for p in params if p.kind is not inspect.Parameter.KEYWORD_ONLY]
        assert not positional, (cls.__name__, positional)


def test_the_record_flow_never_calls_back_into_its_caller():
    """InFlight and ResultWriter take no callback from the loop: they return events (no ``hooks``, no ``on_durable``)."""
    import inspect

    from evaluator_worker.inflight import InFlight
    from evaluator_worker.writer import ResultWriter

    for cls in (InFlight, ResultWriter):
        for name, fn in inspect.getmembers(cls, inspect.isfunction):
            sig = inspect.signature(fn)
            hooks = [p for p in sig.parameters if p in ("hooks", "on_durable", "on_result", "collect")]
            assert not hooks, (cls.__name__, name, hooks)

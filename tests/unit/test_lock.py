"""requirements/lock.txt stays in step with pyproject.toml, and scripts/lockcheck.py catches drift."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib")  # Python 3.11+, the version the lock is compiled for
ROOT = Path(__file__).resolve().parents[2]
LOCKED_EXTRAS = ("dev", "report", "nli", "conformance", "pii")  # what scripts/setup.sh installs at its full level


def _lockcheck():
    spec = importlib.util.spec_from_file_location("lockcheck", ROOT / "scripts" / "lockcheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in LOCKED_EXTRAS:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"python_version": "3.11"})]


def test_every_pyproject_requirement_is_pinned_within_its_range():
    """Each dependency of the locked extras has a pin that satisfies pyproject's range (else: bash scripts/lock.sh)."""
    lc = _lockcheck()
    pins = lc.locked()
    stale = []
    for req in _requirements():
        version = pins.get(lc.canonical(req.name))
        if version is None or not req.specifier.contains(version, prereleases=True):
            stale.append(f"{req} (lock: {version})")
    assert not stale, f"requirements/lock.txt is stale for {stale}: run bash scripts/lock.sh"


def test_torch_is_locked_to_the_cpu_build():
    """The lock pins torch's CPU build: an unpinned torch pulls a multi-GB CUDA build and its nvidia packages."""
    pins = _lockcheck().locked()
    assert pins["torch"].endswith("+cpu")
    assert not [name for name in pins if name.startswith(("nvidia-", "triton"))]


def test_lockcheck_fails_on_a_version_that_differs_from_the_lock(monkeypatch, capsys):
    """An installed package at another version than the lock fails the check and names the package."""
    lc = _lockcheck()
    pins = lc.locked()
    monkeypatch.setattr(lc, "installed", lambda: {**pins, "langchain-core": "0.0.1"})
    assert lc.main([]) == 1
    assert "langchain-core 0.0.1 (lock: " in capsys.readouterr().err
    monkeypatch.setattr(lc, "installed", lambda: dict(pins))
    assert lc.main(["--all"]) == 0


def test_lockcheck_all_fails_when_a_locked_package_is_missing(monkeypatch, capsys):
    """At the full install level every locked package must be there; a missing one is named."""
    lc = _lockcheck()
    pins = lc.locked()
    monkeypatch.setattr(lc, "installed", lambda: {k: v for k, v in pins.items() if k != "scipy"})
    assert lc.main([]) == 0  # the demo level installs a subset
    assert lc.main(["--all"]) == 1
    assert "locked but not installed: scipy" in capsys.readouterr().err


@pytest.mark.parametrize("path", ["requirements/lock.txt", "requirements/no-deps.txt"])
def test_lock_files_pin_exact_versions(path):
    """Every requirement line in the lock files is an exact '==' pin (no ranges, no URLs)."""
    pin = _lockcheck().PIN
    for line in (ROOT / path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            assert pin.match(line), line

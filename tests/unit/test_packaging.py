"""The wheel a user's app installs: the collector without the judges' clients, model weights or research code."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("contract", "collector", "evaluator_worker", "claimwatch")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (built,) = out.glob("claimwatch-*.whl")
    return zipfile.ZipFile(built)


def test_the_wheel_leaves_out_the_model_weights_and_the_training_code(wheel):
    """No verifier weights (23 MB) and no claimwatch/training in the wheel; the packages and small data files are there."""
    names = wheel.namelist()
    assert not [n for n in names if "/judges/models/" in n]
    assert not [n for n in names if n.startswith("claimwatch/training/")]
    for needed in ("collector/processor.py", "contract/record.py", "evaluator_worker/worker.py", "claimwatch/cli.py"):
        assert needed in names
    assert [n for n in names if n.startswith("evaluator_worker/judges/calibration/") and n.endswith(".json")]
    assert sum(i.file_size for i in wheel.infolist()) < 8_000_000


def test_anthropic_is_only_an_extra(wheel):
    """The wheel's metadata requires anthropic only with an extra (anthropic, bedrock, vertex, dev), never for the collector."""
    meta_name = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
    meta = email.message_from_bytes(wheel.read(meta_name))
    requires = meta.get_all("Requires-Dist") or []
    anthropic = [r for r in requires if r.split(";")[0].strip().startswith("anthropic")]
    assert anthropic and all("extra ==" in r for r in anthropic), anthropic
    core = [r.split(";")[0].strip() for r in requires if "extra ==" not in r]
    assert not [r for r in core if r.startswith(("torch", "transformers", "anthropic"))], core


def test_the_collector_and_an_offline_worker_import_without_anthropic():
    """With anthropic unimportable, the in-app collector, the receiver and a heuristic worker still load."""
    code = (
        "import sys; sys.modules['anthropic'] = None; sys.modules['torch'] = None\n"
        "from collector import RagTraceProcessor\n"
        "import collector.receiver, collector.otlp_bridge\n"
        "from evaluator_worker.worker import Worker\n"
        "from evaluator_worker.judges.registry import get_judge\n"
        "from evaluator_worker.config import WorkerSettings\n"
        "assert get_judge('heuristic', WorkerSettings()).name == 'heuristic'\n"
        "import claimwatch.cli\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)

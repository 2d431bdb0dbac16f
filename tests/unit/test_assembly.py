"""One composition root: ``claimwatch worker``, the demo and the soak build their worker with ``evaluator_worker.assembly``."""

from __future__ import annotations

import argparse
import contextlib

import pytest

from evaluator_worker import assembly
from evaluator_worker.config import WorkerSettings


class _Built(Exception):
    """Raised by the recording build_worker once the worker exists: the entry point stops there, no broker needed."""


class _NoBroker:
    bootstrap = "127.0.0.1:1"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _NoAdmin:
    def __init__(self, **kwargs):
        pass

    def create_topics(self, topics):
        pass

    def close(self):
        pass


def _run_cli() -> None:
    from claimwatch import cli

    args = cli.build_parser().parse_args(
        ["worker", "--metrics-port", "-1", "--bootstrap", "127.0.0.1:1", "--judge", "heuristic"]
    )
    args.func(args)


def _run_demo() -> None:
    from claimwatch.cli import build_parser
    from claimwatch.demo import runner

    runner.run_demo(build_parser().parse_args(["demo", "--no-prometheus", "--requests", "1"]))


def _run_soak() -> None:
    from claimwatch.soak import cmd_soak

    cmd_soak(argparse.Namespace(seconds=1.0, rate=1.0, workers=1, judge=None, json=None))


@pytest.mark.parametrize("entry", [_run_cli, _run_demo, _run_soak], ids=["cli", "demo", "soak"])
def test_cli_demo_and_soak_build_the_production_worker_through_assembly(entry, monkeypatch):
    """Each entry point calls assembly.build_worker, and its evaluator has the settings' retry, parity and consistency."""
    import kafka.admin

    from claimwatch import embedded
    from claimwatch.demo import runner

    monkeypatch.setenv("CLAIMWATCH_FLOW__RETRY_DEADLINE_S", "123")
    monkeypatch.setenv("CLAIMWATCH_FLOW__RETRY_BASE_S", "0.25")
    monkeypatch.setenv("CLAIMWATCH_PARITY__CONSISTENCY", "true")  # opt-in
    monkeypatch.setenv("CLAIMWATCH_PARITY__CONSISTENCY_SAMPLE", "0.5")
    monkeypatch.setenv("CLAIMWATCH_RESULTS_INCLUDE_TEXT", "false")
    monkeypatch.setattr(runner, "EmbeddedBroker", _NoBroker)
    monkeypatch.setattr(runner, "_create_topic", lambda *a, **kw: None)
    monkeypatch.setattr(embedded, "EmbeddedBroker", _NoBroker)
    monkeypatch.setattr(kafka.admin, "KafkaAdminClient", _NoAdmin)
    evaluators, built = [], []
    real_evaluator, real_worker = assembly.build_evaluator, assembly.build_worker

    def recording_evaluator(*args, **kwargs):
        evaluators.append(real_evaluator(*args, **kwargs))
        return evaluators[-1]

    def recording_worker(settings, **kwargs):
        built.append((settings, real_worker(settings, **kwargs)))
        raise _Built

    monkeypatch.setattr(assembly, "build_evaluator", recording_evaluator)
    monkeypatch.setattr(assembly, "build_worker", recording_worker)
    with contextlib.suppress(_Built):
        entry()
    assert len(built) == 1 and len(evaluators) == 1
    settings, evaluator = built[0][0], evaluators[0]
    assert isinstance(settings, WorkerSettings)
    retry = evaluator.caller.retry
    assert (retry.deadline_s, retry.base_s, retry.max_s) == (123.0, 0.25, settings.flow.retry_max_s)
    assert evaluator.parity is settings.parity and evaluator.parity.consistency_sample == 0.5
    assert evaluator.consistency is not None and evaluator.include_text is False
    assert evaluator.judge.name == settings.judge == "heuristic"

"""WorkerMetrics owns the bookkeeping: observe(), scrape-time queue gauges, NullMetrics, judges' observer calls."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from contract.record import RagTrace
from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Judge, JudgeBase
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.metrics import NullMetrics, WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.judges import TagJudge


def _value(m: WorkerMetrics, name: str, **labels: str) -> float | None:
    return m.registry.get_sample_value(name, labels)


def _trace(answer: str, release: str = "r1") -> RagTrace:
    return RagTrace(
        trace_id="t" * 32,
        question="q?",
        answer=answer,
        contexts=[{"content": "ctx"}],
        slices={"release": release, "route": "faq"},
    )


def test_queue_depths_are_read_at_scrape_time():
    """watch_queues makes the gauges read the worker's counters when scraped; unwatch puts them back to 0."""
    m = WorkerMetrics()
    depth = {"judging": 3, "unacked": 7}
    m.watch_queues(lambda: depth["judging"], lambda: depth["unacked"], lambda: 12)
    assert _value(m, "claimwatch_in_flight_answers") == 3
    depth["judging"] = 5
    assert _value(m, "claimwatch_in_flight_answers") == 5
    assert _value(m, "claimwatch_unacked_writes") == 7
    assert _value(m, "claimwatch_judge_concurrency_limit") == 12
    m.unwatch_queues()
    assert _value(m, "claimwatch_in_flight_answers") == 0


def test_observe_counts_verdicts_and_zeroes_a_new_slice_once():
    """A new slice's verdict series start at 0 (so increase() sees the first one), and observe adds the verdicts."""
    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    m.observe(ev.evaluate(_trace("Fine. Wrong [C].")))
    labels = {"judge_id": ev.identity.judge_id, "release": "r1", "model": "unknown", "route": "faq"}
    labels["environment"] = "unknown"
    assert _value(m, "claimwatch_claims_total", verdict="contradicted", **labels) == 1
    assert _value(m, "claimwatch_claims_total", verdict="supported", **labels) == 1
    assert _value(m, "claimwatch_claims_total", verdict="unsupported", **labels) == 0
    assert _value(m, "claimwatch_answers_total", outcome="failed", **labels) == 0


def test_evaluator_without_metrics_uses_null_metrics_that_nobody_serves():
    """An Evaluator built without metrics still runs the same code path, into a registry of its own."""
    ev = Evaluator(TagJudge())
    assert isinstance(ev.metrics, NullMetrics)
    ev.metrics.observe(ev.evaluate(_trace("Wrong [C].")))
    assert b"claimwatch_claims_total" in generate_latest(ev.metrics.registry)
    assert NullMetrics().registry is not ev.metrics.registry


def test_cascade_reports_through_the_observer_it_is_bound_to():
    """The Evaluator binds its metrics to the judge: cascade decisions become claimwatch_cascade_claims_total."""
    from evaluator_worker.judges.cascade import CascadeJudge
    from evaluator_worker.judges.settings import CascadeSettings

    m = WorkerMetrics()
    cascade = CascadeJudge(TagJudge(), TagJudge(), CascadeSettings(escalate_below=0.0, agreement_sample=0.0))
    ev = Evaluator(cascade, m)
    ev.evaluate(_trace("One. Two."))
    assert _value(m, "claimwatch_cascade_claims_total", decided_by="first") == 2


class _Bare:
    """A judge that implements only extract_claims/verify (no capabilities)."""

    name = "bare"

    def extract_claims(self, answer, question=None, *, contexts=None):
        raise AssertionError("not called")

    def verify(self, claims, contexts, question=None):
        raise AssertionError("not called")


def bare_factory(settings):
    return _Bare()


class _Complete(JudgeBase):
    name = "complete"

    def extract_claims(self, answer, question=None, *, contexts=None):
        raise AssertionError("not called")

    def verify(self, claims, contexts, question=None):
        raise AssertionError("not called")


def complete_factory(settings):
    return _Complete()


def test_custom_judge_missing_capabilities_is_a_config_error_naming_them():
    """A module:factory judge without the protocol's capabilities fails at start-up, naming what is missing."""
    with pytest.raises(ConfigError, match="io_bound, extract_sees_contexts, bind_metrics.*JudgeBase"):
        get_judge(f"{__name__}:bare_factory")
    judge = get_judge(f"{__name__}:complete_factory")
    assert isinstance(judge, Judge) and not judge.io_bound and not judge.extract_sees_contexts


def test_the_worker_exports_its_slice_labels_for_the_rules_to_compare():
    """claimwatch_worker_slice_labels_info names the slice labels this worker uses (ClaimwatchSliceLabelsDiffer reads it)."""
    from contract.slices import DEFAULT_SLICE_LABELS
    from evaluator_worker.metrics import SliceGuard

    default = WorkerMetrics()
    assert _value(default, "claimwatch_worker_slice_labels_info", slice_labels=",".join(DEFAULT_SLICE_LABELS)) == 1
    tenant = WorkerMetrics(guard=SliceGuard(("release", "tenant")))
    assert _value(tenant, "claimwatch_worker_slice_labels_info", slice_labels="release,tenant") == 1

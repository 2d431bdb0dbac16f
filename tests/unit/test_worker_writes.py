"""The worker's write path without a broker: failed sends are re-sent, never counted before they are durable."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from kafka.errors import NotEnoughReplicasError, TopicAuthorizationFailedError

from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.config import WorkerSettings
from evaluator_worker.errors import WorkerFatal
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.worker import Worker
from tests.fakes.judges import TagJudge
from tests.fakes.kafka import MemoryProducer
from tests.fakes.worker_drive import handle_now


@dataclass
class Msg:
    value: bytes
    key: bytes = b"k"
    topic: str = "claimwatch.traces"
    partition: int = 0
    offset: int = 0


def _worker(**flow) -> tuple[Worker, MemoryProducer, WorkerMetrics]:
    s = WorkerSettings()
    for k, v in flow.items():
        setattr(s.flow, k, v)
    m = WorkerMetrics()
    p = MemoryProducer()
    w = build_worker(
        s,
        evaluator=Evaluator(TagJudge(), m, consistency=None),
        consumer=object(),
        producer=p,
        seed_dedupe=lambda _: [],
        exporter=None,
        shadow=None,
    )
    return w, p, m


def _msg(i: int = 1) -> Msg:
    return Msg(RagTrace(trace_id=f"{i:032x}", answer="Fine. Wrong [C].", contexts=[{"content": "c"}]).to_json_bytes())


def test_a_retriable_write_failure_is_resent_and_counted_once():
    """NOT_ENOUGH_REPLICAS twice, then success: one result on the topic, processed counted once, errors counted."""
    w, p, m = _worker()
    p.fail_with(NotEnoughReplicasError(), times=2)
    handle_now(w, _msg())
    assert len(p.sent) == 1 and w.processed == 1
    assert m.registry.get_sample_value("claimwatch_result_write_errors_total", {"reason": "retriable"}) == 2
    assert m.registry.get_sample_value("claimwatch_records_total", {"outcome": "processed"}) == 1


def test_a_write_refused_for_good_stops_the_worker_uncounted():
    """TOPIC_AUTHORIZATION_FAILED on every attempt: WorkerFatal after write_max_attempts, nothing counted."""
    w, p, m = _worker(write_max_attempts=2)
    p.fail_with(TopicAuthorizationFailedError(), times=10)
    with pytest.raises(WorkerFatal, match="TopicAuthorizationFailed"):
        handle_now(w, _msg())
    assert p.sent == [] and w.processed == 0
    assert (
        m.registry.get_sample_value(
            "claimwatch_claims_total",
            {
                "verdict": "contradicted",
                "release": "unknown",
                "model": "unknown",
                "route": "unknown",
                "environment": "unknown",
            },
        )
        or 0
    ) == 0

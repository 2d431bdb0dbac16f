"""Passive consistency through the real broker: a planted Paris/Lyon contradiction is found."""

import pytest

from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.metrics import WorkerMetrics
from tests.integration.kafka_helpers import create_topic, drain, produce, worker_settings

pytestmark = pytest.mark.integration

CONTEXT = ["Paris is the capital and largest city of France. Lyon is the third-largest city of France."]
TRAFFIC = [
    (
        "How long should I bake cookies?",
        "Bake the cookies for 10 minutes.",
        ["Bake the cookies at 350 F for 10 minutes."],
    ),
    ("What is the capital of France?", "The capital of France is Paris.", CONTEXT),
    (
        "What is the boiling point of water?",
        "Water boils at 100 C at sea level.",
        ["At sea level water boils at 100 C."],
    ),
    ("Which city is the capital of France?", "The capital of France is Lyon.", CONTEXT),
    ("How long do I bake cookies?", "Bake the cookies for 10 minutes.", ["Bake the cookies at 350 F for 10 minutes."]),
]


def test_planted_paris_lyon_contradiction_is_found(kafka_bootstrap, topic_name):
    """Equivalent questions answered Paris then Lyon -> the Lyon answer is inconsistent, the rest are not."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    records = []
    for i, (q, a, ctx) in enumerate(TRAFFIC):
        t = RagTrace(
            trace_id=f"{i + 1:032x}", question=q, answer=a, contexts=ctx, slices={"release": "v1", "route": "faq"}
        )
        records.append((t.key, t.to_json_bytes()))
    produce(kafka_bootstrap, topic_name, records)
    settings = worker_settings(kafka_bootstrap, topic_name)
    settings.parity.consistency = True  # opt-in
    settings.parity.consistency_sample = 1.0  # check every answer (production default samples 20%)
    metrics = WorkerMetrics()
    results = {}
    worker = build_worker(settings, metrics=metrics, exporter=None)
    worker.on_result = lambda r: results.__setitem__(r.trace_id, r)
    worker.run(max_records=len(TRAFFIC), idle_timeout_s=20)
    lyon = results[f"{4:032x}"]
    assert lyon.consistency.status == "inconsistent"
    conflict = lyon.consistency.conflicts[0]
    assert "Lyon" in conflict.claim and "Paris" in conflict.conflicting_with
    assert conflict.other_trace_id == f"{2:032x}"
    assert results[f"{5:032x}"].consistency.status == "consistent"
    assert results[f"{2:032x}"].consistency.status == "no_group"
    labels = dict(
        judge_id=worker.evaluator.identity.judge_id, release="v1", model="unknown", route="faq", environment="unknown"
    )
    assert (
        metrics.registry.get_sample_value("claimwatch_consistency_checks_total", {"outcome": "inconsistent", **labels})
        == 1
    )
    # the verdict travels with the result on the results topic
    out = drain(kafka_bootstrap, settings.results_topic, len(TRAFFIC))
    assert any(b'"inconsistent"' in m.value for m in out)

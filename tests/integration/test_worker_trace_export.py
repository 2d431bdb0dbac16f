"""`claimwatch worker` with CLAIMWATCH_TRACE_EXPORT_ENDPOINT set sends evaluation spans into the original traces."""

import signal
import time

import pytest

from claimwatch.embedded import free_port
from contract.record import RagTrace
from tests.integration.kafka_helpers import create_topic, produce, spawn_worker, worker_settings
from tests.unit.test_trace_export import OtlpSink

pytestmark = pytest.mark.integration


def test_worker_exports_one_evaluation_span_per_answer(kafka_bootstrap, topic_name):
    """Two judged answers -> two claimwatch.evaluation spans with the records' trace ids and root parents."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    traces = [
        RagTrace(
            trace_id=f"{i + 1:032x}",
            root_span_id=f"{i + 1:016x}",
            question="Oven?",
            answer="Bake the cookies at 400 F.",
            contexts=["Bake the cookies at 350 F for 8 to 10 minutes."],
        )
        for i in range(2)
    ]
    produce(kafka_bootstrap, topic_name, [(t.key, t.to_json_bytes()) for t in traces])
    s = worker_settings(kafka_bootstrap, topic_name)
    sink = OtlpSink()
    proc = spawn_worker(s, free_port(), CLAIMWATCH_TRACE_EXPORT_ENDPOINT=sink.url)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(sink.spans()) < 2:
            time.sleep(0.2)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(30)
        sink.close()
    spans = sink.spans()
    assert code == 0
    assert sorted(sp.trace_id.hex() for sp in spans) == [t.trace_id for t in traces]
    assert sorted(sp.parent_span_id.hex() for sp in spans) == [t.root_span_id for t in traces]
    labels = {
        a.value.string_value
        for sp in spans
        for e in sp.events
        for a in e.attributes
        if a.key == "gen_ai.evaluation.score.label"
    }
    assert "CONTRADICTED" in labels

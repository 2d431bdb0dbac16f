"""`claimwatch worker` with CLAIMWATCH_TRACE_EXPORT_ENDPOINT set sends evaluation spans into the original traces."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from collector.record import RagTrace
from evaluator_worker.embedded import free_port
from tests.integration.kafka_helpers import create_topic, produce, worker_settings
from tests.unit.test_trace_export import OtlpSink

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_worker_exports_one_evaluation_span_per_answer(kafka_bootstrap, topic_name):
    """Two judged answers -> two claimwatch.evaluation spans with the records' trace ids and root parents."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    traces = [
        RagTrace(trace_id=f"{i + 1:032x}", root_span_id=f"{i + 1:016x}", question="Oven?",
                 answer="Bake the cookies at 400 F.", contexts=["Bake the cookies at 350 F for 8 to 10 minutes."])
        for i in range(2)
    ]
    produce(kafka_bootstrap, topic_name, [(t.key, t.to_json_bytes()) for t in traces])
    s = worker_settings(kafka_bootstrap, topic_name)
    sink = OtlpSink()
    env = dict(os.environ, PYTHONPATH=str(ROOT),
               CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS=kafka_bootstrap, CLAIMWATCH_TOPIC=topic_name,
               CLAIMWATCH_RESULTS_TOPIC=s.results_topic, CLAIMWATCH_DEAD_LETTER_TOPIC=s.dead_letter_topic,
               CLAIMWATCH_CONSUMER__GROUP_ID=s.consumer.group_id, CLAIMWATCH_CONSUMER__SESSION_TIMEOUT_MS="6000",
               CLAIMWATCH_CONSUMER__HEARTBEAT_INTERVAL_MS="1000", CLAIMWATCH_METRICS_PORT=str(free_port()),
               CLAIMWATCH_METRICS_HOST="127.0.0.1", CLAIMWATCH_TRACE_EXPORT_ENDPOINT=sink.url)
    proc = subprocess.Popen([sys.executable, "-m", "evaluator_worker.cli", "--log-level", "WARNING", "worker"],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
    labels = {a.value.string_value for sp in spans for e in sp.events for a in e.attributes
              if a.key == "gen_ai.evaluation.score.label"}
    assert "CONTRADICTED" in labels

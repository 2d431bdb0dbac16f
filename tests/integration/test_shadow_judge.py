"""A shadow judge on live traffic (real broker, the real ``anthropic`` client against a local Messages API): the
candidate judges a sampled share beside the main judge, counted apart, and ``claimwatch judge-compare`` reads both
topics and says what a switch would do.

The main judge is ``claude-lenient`` (a faithful paraphrase is SUPPORTED), the candidate ``claude-strict`` (only a
verbatim claim is): 8 answers in 20 paraphrase the context, so the candidate flags far more answers, and the
comparison must say so with an interval that excludes 0, while the decision counters hold the main judge's verdicts
only and every sampled answer is either judged by the shadow or skipped with a reason.
"""

from __future__ import annotations

import json

import pytest

from claimwatch.cli import main as cli
from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.config import ShadowSettings
from evaluator_worker.judges.settings import AnthropicSettings
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.shadow import sampled
from tests.fakes.messages_server import MessagesServer
from tests.integration.kafka_helpers import create_topic, drain, metric_sum, produce, worker_settings
from tests.integration.test_judge_switch import ANSWERS, CONTEXT, _kind, judges_by_model

pytestmark = pytest.mark.integration

N = 80
SAMPLE = 0.5


_family_total = metric_sum


def test_a_shadow_judge_beside_the_main_one_and_judge_compare(kafka_bootstrap, topic_name, tmp_path, capsys):
    """Sampled answers judged by both, counted apart, written to the shadow topic; judge-compare reports the strict shift."""
    shadow_topic = topic_name + ".shadow"
    for t in (topic_name, topic_name + ".results", shadow_topic):
        create_topic(kafka_bootstrap, t, partitions=1)
    traces = [
        RagTrace(
            trace_id=f"{i + 1:032x}",
            question="How tall is the Eiffel Tower and when was it built?",
            answer=ANSWERS[_kind(i)],
            contexts=[CONTEXT],
            slices={"release": "v1", "model": "gpt-4o", "route": "qa" if i % 2 else "faq"},
        )
        for i in range(N)
    ]
    produce(kafka_bootstrap, topic_name, [(t.key, t.to_json_bytes()) for t in traces])
    with MessagesServer(judges_by_model) as srv:
        settings = worker_settings(kafka_bootstrap, topic_name)
        settings.judge = "anthropic"
        settings.anthropic = AnthropicSettings(
            api_key="test", base_url=srv.base_url, model="claude-lenient", extract_model="claude-lenient"
        )
        settings.shadow = ShadowSettings(
            judge="anthropic",
            settings={"anthropic": {"model": "claude-strict", "extract_model": "claude-strict"}},
            sample=SAMPLE,
            results_topic=shadow_topic,
            max_in_flight=2,
            max_queued=64,
            budget_usd_per_hour=100.0,
        )
        metrics = WorkerMetrics()
        worker = build_worker(settings, metrics=metrics, exporter=None)
        shadow = worker.shadow
        assert shadow is not None
        main_id, shadow_id = worker.evaluator.identity.judge_id, shadow.identity.judge_id
        assert main_id.startswith("anthropic:claude-lenient@") and shadow_id.startswith("anthropic:claude-strict@")
        worker.run(max_records=N, idle_timeout_s=30)

    want = sum(sampled(t.record_key, SAMPLE) for t in traces)
    judged = _family_total(metrics, "claimwatch_shadow_answers_total")
    skipped = _family_total(metrics, "claimwatch_shadow_skipped_total")
    assert judged + skipped == want and judged == want, (judged, skipped, want)  # no sampled answer lost silently
    # the decision counters: the main judge's verdicts only
    assert {
        s.labels["judge_id"]
        for fam in metrics.registry.collect()
        for s in fam.samples
        if s.name == "claimwatch_claims_total"
    } == {main_id}
    assert _family_total(metrics, "claimwatch_answers_total", outcome="evaluated") == N
    assert _family_total(metrics, "claimwatch_shadow_answers_total", main="ok", shadow="flagged") > 0
    assert _family_total(metrics, "claimwatch_shadow_answers_total", main="flagged", shadow="ok") == 0
    assert (
        metrics.registry.get_sample_value(
            "claimwatch_judge_info",
            {"judge": "anthropic", "judge_id": shadow_id, "model": "claude-strict", "role": "shadow"},
        )
        == 1
    )

    written = drain(kafka_bootstrap, shadow_topic, int(judged), timeout_s=20)
    assert len(written) == judged
    assert {json.loads(m.value)["judge_id"] for m in written} == {shadow_id}

    out_json = tmp_path / "compare.json"
    code = cli(
        [
            "judge-compare",
            "--bootstrap",
            kafka_bootstrap,
            "--main-topic",
            topic_name + ".results",
            "--shadow-topic",
            shadow_topic,
            "--since",
            "1h",
            "--min-slice-answers",
            "5",
            "--json",
            str(out_json),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads(out_json.read_text())
    assert report["paired"] == judged
    assert report["main_judges"] == [main_id] and report["shadow_judges"] == [shadow_id]
    overall = report["overall"]
    assert overall["shift"] > 0.2 and overall["lower"] > 0  # the strict candidate flags the paraphrases
    assert {row["value"] for row in report["slices"]["route"]} == {"qa", "faq"}
    assert "shift +" in out and "moves it" in out and "on your labels: none given" in out

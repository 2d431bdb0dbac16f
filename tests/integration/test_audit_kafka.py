"""`claimwatch audit` on a real broker: a window of the traces topic in, results to a file and the results topic,
which `claimwatch report` then reads to decide."""

from __future__ import annotations

import json

import pytest

from claimwatch.cli import main
from contract.record import RagTrace
from tests.fakes import MessagesServer
from tests.integration.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.integration

CONTEXT = "The refund window is 30 days. Refunds go back to the original card."


def test_audit_reads_a_topic_window_and_publishes_results_the_report_reads(
    kafka_bootstrap, topic_name, tmp_path, monkeypatch, capsys
):
    """Traces from Kafka -> Message Batches (fake) -> results file + results topic -> report: ROLLBACK of v2."""
    results_topic = f"{topic_name}.results"
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    create_topic(kafka_bootstrap, results_topic, partitions=2)
    items = []
    for i in range(12):
        release = "v1" if i < 6 else "v2"
        answer = "The refund window is 30 days." if release == "v1" else "The refund window is 90 days."
        t = RagTrace(
            trace_id=f"{i:032x}",
            question="How long is the refund window?",
            answer=answer,
            contexts=[{"content": CONTEXT}],
            slices={"release": release, "route": "billing"},
        )
        items.append((t.key, t.to_json_bytes()))
    produce(kafka_bootstrap, topic_name, items + items[:2])  # at-least-once input: two traces twice
    with MessagesServer() as srv:
        monkeypatch.setenv("CLAIMWATCH_ANTHROPIC__BASE_URL", srv.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        out = tmp_path / "audited.jsonl"
        code = main(
            [
                "audit",
                "--from-topic",
                topic_name,
                "--bootstrap",
                kafka_bootstrap,
                "--since",
                "10m",
                "--out",
                str(out),
                "--to-topic",
                results_topic,
                "--poll-s",
                "0.01",
            ]
        )
        assert code == 0
        assert srv.batch_creates == 2 and srv.batch_items == 24  # 12 distinct traces: extract + verify each
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and len({r["trace_id"] for r in rows}) == 12
    verdicts = {r["slices"]["release"]: set() for r in rows}
    for r in rows:
        verdicts[r["slices"]["release"]].update(c["verdict"] for c in r["claims"])
    assert verdicts == {"v1": {"SUPPORTED"}, "v2": {"UNSUPPORTED"}}
    page = tmp_path / "report.html"
    capsys.readouterr()
    # 6 answers per release: one planned look (fixed test); the sequential default would hold on so few
    code = main(
        [
            "report",
            "--bootstrap",
            kafka_bootstrap,
            "--topic",
            results_topic,
            "--baseline",
            "v1",
            "--candidate",
            "v2",
            "--since",
            "10m",
            "--min-answers",
            "5",
            "--test",
            "fixed",
            "--out",
            str(page),
            "--trust-judge",
        ]
    )
    out = capsys.readouterr().out
    assert code == 1 and "ROLLBACK" in out
    assert "judge anthropic: not fit for a rollback decision (trusted: --trust-judge)" in out  # the online judge's id
    assert 'class="decision rollback"' in page.read_text()

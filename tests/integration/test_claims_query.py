"""`claimwatch claims` on a real broker: the flagged claims a worker wrote to the results topic, worst first."""

from __future__ import annotations

import json
import uuid

import pytest

from claimwatch.cli import main
from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.judges import TagJudge
from tests.integration.kafka_helpers import create_topic, produce, worker_settings

pytestmark = pytest.mark.integration


def _trace(i: int, release: str, answer: str) -> tuple[bytes, bytes]:
    t = RagTrace(
        trace_id=f"{i:032x}",
        question=f"q{i}",
        answer=answer,
        contexts=[{"content": "Refunds within 30 days.", "id": f"doc-{i}", "source": "kb/refunds.md"}],
        slices={"release": release, "route": "billing"},
    )
    return t.key, t.to_json_bytes()


@pytest.fixture
def results_topic(kafka_bootstrap, topic_name):
    """A worker judged 12 answers: v2's even answers have a contradicted claim, v1's have an unsupported one."""
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    items = []
    for i in range(12):
        release = "v2" if i % 2 == 0 else "v1"
        items.append(_trace(i, release, "Fine. Wrong [C]." if release == "v2" else "Fine. Made up [U]."))
    produce(kafka_bootstrap, topic_name, items)
    settings = worker_settings(kafka_bootstrap, topic_name, group=f"g-{uuid.uuid4().hex[:6]}")
    build_worker(
        settings, evaluator=Evaluator(TagJudge(), WorkerMetrics(), consistency=None), exporter=None, shadow=None
    ).run(max_records=12, idle_timeout_s=20)
    return settings.results_topic


def test_claims_lists_contradicted_claims_of_a_release_with_evidence_and_chunk(kafka_bootstrap, results_topic, capsys):
    """--release v2 --verdict CONTRADICTED --json: exactly v2's six contradicted claims, with evidence, chunk and trace id."""
    code = main(
        [
            "claims",
            "--bootstrap",
            kafka_bootstrap,
            "--topic",
            results_topic,
            "--release",
            "v2",
            "--verdict",
            "CONTRADICTED",
            "--since",
            "10m",
            "--json",
        ]
    )
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert code == 0
    assert sorted(r["trace_id"] for r in rows) == sorted(f"{i:032x}" for i in range(0, 12, 2))
    assert all(
        r["verdict"] == "CONTRADICTED" and r["evidence"] and r["context_source"] == "kb/refunds.md" for r in rows
    )


def test_claims_default_shows_contradicted_before_unsupported(kafka_bootstrap, results_topic, capsys):
    """Without filters: 12 flagged claims, every CONTRADICTED one listed before any UNSUPPORTED one."""
    assert main(["claims", "--bootstrap", kafka_bootstrap, "--topic", results_topic, "--from-offset", "0"]) == 0
    captured = capsys.readouterr()
    verdicts = [line.split()[0].lstrip("[") for line in captured.out.splitlines() if line.startswith("[")]
    assert verdicts == ["CONTRADICTED"] * 6 + ["UNSUPPORTED"] * 6
    assert "12 of 12 flagged claims" in captured.err


def test_claims_since_a_window_with_nothing_lists_nothing(kafka_bootstrap, results_topic, capsys):
    """A release with no results gives an empty list, exit 0."""
    assert main(["claims", "--bootstrap", kafka_bootstrap, "--topic", results_topic, "--release", "v9", "--json"]) == 0
    assert capsys.readouterr().out == ""


def _result(i: int, release: str, **extra) -> bytes:
    rec = {
        "trace_id": f"{release}{i:031x}",
        "judge": "heuristic",
        "outcome": "evaluated",
        "slices": {"release": release, "route": "billing"},
        "claims": [{"id": "c1", "text": f"claim {i}", "verdict": "UNSUPPORTED", "confidence": 0.5}],
        "counts": {"SUPPORTED": 0, "UNSUPPORTED": 1, "CONTRADICTED": 0, "ERROR": 0},
        "evaluated_at": 1_700_000_000 + i,
    }
    rec.update(extra)
    return json.dumps(rec).encode()


def test_claims_and_report_skip_foreign_records_on_the_topic(kafka_bootstrap, topic_name, tmp_path, capsys):
    """Deep, list-sliced, int-claims, word-confidence and string-timestamp records: skipped and counted, no crash."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    good = [(None, _result(i, release)) for i in range(5) for release in ("a", "b")]
    hostile = [
        b"[" * 100_000 + b"]" * 100_000,
        _result(90, "b", slices=["b"]),
        _result(91, "b", claims=3),
        _result(92, "b", claims=[{"verdict": "CONTRADICTED", "confidence": "high"}]),
        _result(93, "b", evaluated_at="2024-05-01T00:00:00Z"),
        _result(0, "a"),  # a re-sent copy
    ]
    produce(kafka_bootstrap, topic_name, good + [(None, v) for v in hostile])
    common = ["--bootstrap", kafka_bootstrap, "--topic", topic_name]
    assert main(["claims", *common, "--from-offset", "0"]) == 0
    err = capsys.readouterr().err
    assert "10 of 10 flagged claims" in err
    assert "skipped 5 malformed result record(s)" in err and "1 not JSON (nested too deeply)" in err
    assert "dropped 1 duplicate result record(s)" in err
    out = tmp_path / "report.html"
    code = main(["report", *common, "--baseline", "a", "--candidate", "b", "--out", str(out), "--min-answers", "3"])
    printed = capsys.readouterr().out
    assert code in (0, 2) and "claimwatch report:" in printed  # a decision (not enough answers to roll back)
    assert "skipped 5 malformed result record(s)" in printed and "dropped 1 duplicate" in printed
    assert "skipped 5 malformed result record(s)" in out.read_text(encoding="utf-8")

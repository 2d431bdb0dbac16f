"""`claimwatch label` on a real broker: the plan is drawn from the results topic with `claimwatch claims`' reader,
and labelling then resumes from the plan without the broker."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from claimwatch.labeling import main
from claimwatch.labeling.sample import plan_path
from tests.integration.kafka_helpers import create_topic, produce

pytestmark = pytest.mark.integration


def _result(i: int) -> tuple[bytes, bytes]:
    verdicts = ["SUPPORTED", "UNSUPPORTED" if i % 3 == 0 else "SUPPORTED"]
    rec: dict[str, Any] = {
        "trace_id": f"{i:032x}",
        "judge": "heuristic",
        "outcome": "evaluated",
        "slices": {"release": "v2" if i % 2 else "v1", "route": "billing"},
        "question": f"q{i}?",
        "claims": [
            {
                "id": f"c{j}",
                "text": f"claim {i}.{j}",
                "verdict": v,
                "confidence": 0.9,
                "evidence": "Refunds within 30 days.",
                "context_excerpt": "Refunds within 30 days.",
            }
            for j, v in enumerate(verdicts)
        ],
    }
    return rec["trace_id"].encode(), json.dumps(rec).encode()


def test_label_plan_from_the_results_topic_then_label_offline(kafka_bootstrap, topic_name, tmp_path, monkeypatch):
    """30 result records on a 2-partition topic: a 20-claim plan of v2's claims, labelled later from the plan alone."""
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    produce(kafka_bootstrap, topic_name, [_result(i) for i in range(30)])
    out = tmp_path / "labels.jsonl"
    assert (
        main(
            [
                "--bootstrap",
                kafka_bootstrap,
                "--topic",
                topic_name,
                "--from-offset",
                "0",
                "--release",
                "v2",
                "--n",
                "20",
                "--out",
                str(out),
                "--plan-only",
            ]
        )
        == 0
    )
    plan = json.loads(plan_path(out).read_text())
    assert plan["population_total"] == 30 and plan["n"] == 20  # v2: 15 answers x 2 claims
    assert {it["slices"]["release"] for it in plan["items"]} == {"v2"}
    monkeypatch.setattr(sys, "stdin", io.StringIO("s\n" * 20))
    assert main(["--out", str(out), "--bootstrap", "127.0.0.1:1"]) == 0  # resumes: the broker is not read again
    assert len(out.read_text().splitlines()) == 20

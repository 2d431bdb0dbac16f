"""Same-family warning: where the judge shares the answering model's family, the metric, the gate and the report say so."""

from __future__ import annotations

import json

import pytest

from claimwatch.gate import decide
from claimwatch.gate.counts import ReleaseCounts
from claimwatch.gate.prometheus import Source, fetch_counts, queries
from claimwatch.gate.same_family import same_family, same_family_notes
from contract.families import family, shared_family
from contract.record import RagTrace
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.judges import TagJudge
from tests.unit.test_gate import fake_prometheus  # noqa: F401  (the fixture)

CLAUDE_JUDGE = "anthropic:claude-sonnet-4-5+claude-haiku-4-5@0b7e41aa"
GPT_JUDGE = "openai:gpt-4.1-mini@12345678"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-3-5-haiku-20241022", "claude"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude"),
        ("gpt-4o-mini", "gpt"),
        ("o3-mini", "gpt"),
        ("azure/gpt-35-turbo", "gpt"),
        ("gemini-2.5-flash", "gemini"),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistral"),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen"),
        ("microsoft/Phi-3-mini-4k-instruct", "phi"),
        ("command-r-plus", "command"),
        ("my-inhouse-model", None),
        ("photo-2", None),
        ("", None),
    ],
)
def test_model_names_map_to_their_family(model, expected):
    """Declared name patterns give a model its family; a name matching none has no family (never flagged)."""
    assert family(model) == expected


def test_shared_family_needs_a_judge_model_of_the_same_family():
    """A Claude generator shares a family with a Claude judge, not with a GPT judge or a judge without a model."""
    assert shared_family("claude-3-haiku", ("claude-sonnet-4-5",)) == "claude"
    assert shared_family("claude-3-haiku", ("gpt-4.1",)) is None
    assert shared_family("claude-3-haiku", ()) is None
    assert shared_family(None, ("claude-sonnet-4-5",)) is None


def test_worker_counts_answers_a_same_family_judge_judged():
    """claimwatch_answers_same_family_judge_total counts evaluated answers whose model slice shares the judge's family."""
    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    for i, model in enumerate(("claude-3-5-haiku", "claude-3-5-haiku", "gpt-4o", "")):
        trace = RagTrace(
            trace_id=f"{i + 1:032x}",
            question="q?",
            answer="Fine.",
            contexts=[{"content": "ctx"}],
            slices={"release": "r1", "model": model} if model else {"release": "r1"},
        )
        m.observe(ev.evaluate(trace).model_copy(update={"judge_id": CLAUDE_JUDGE}))
    labels = {"judge_id": CLAUDE_JUDGE, "release": "r1", "route": "unknown", "environment": "unknown"}
    get = m.registry.get_sample_value
    assert (
        get("claimwatch_answers_same_family_judge_total", {"family": "claude", "model": "claude-3-5-haiku", **labels})
        == 2
    )
    assert get("claimwatch_answers_same_family_judge_total", {"family": "gpt", "model": "gpt-4o", **labels}) is None
    assert get("claimwatch_answers_total", {"outcome": "evaluated", "model": "gpt-4o", **labels}) == 1


def _record(model: str, judge_id: str, flagged: bool = False) -> dict:
    return {
        "trace_id": "x",
        "judge": "anthropic",
        "judge_id": judge_id,
        "outcome": "evaluated",
        "slices": {"release": "v", "model": model},
        "counts": {"SUPPORTED": 1, "UNSUPPORTED": int(flagged)},
        "at_risk": flagged,
    }


def _counts(*records: dict) -> ReleaseCounts:
    c = ReleaseCounts()
    for r in records:
        c = c.add_result(r)
    return c


def test_results_are_counted_per_model_and_named_per_slice():
    """Result records count evaluated answers per model slice; the same-family parts name model, family and judge."""
    c = _counts(*[_record("claude-3-5-haiku", CLAUDE_JUDGE)] * 3, *[_record("gpt-4o", CLAUDE_JUDGE)] * 2)
    assert c.models == (("claude-3-5-haiku", 3), ("gpt-4o", 2))
    (part,) = same_family(c)
    assert (part.model, part.family, part.judge, part.answers) == ("claude-3-5-haiku", "claude", CLAUDE_JUDGE, 3)
    assert same_family(_counts(_record("claude-3-5-haiku", GPT_JUDGE))) == []


def test_the_gate_says_when_the_candidate_moves_into_the_judges_family():
    """Baseline on GPT, candidate on Claude, judge Claude: the reasons name the slice and the lean; the action is unchanged."""
    baseline = _counts(*[_record("gpt-4o", CLAUDE_JUDGE, flagged=i < 10) for i in range(100)])
    candidate = _counts(*[_record("claude-3-5-haiku", CLAUDE_JUDGE, flagged=i < 10) for i in range(100)])
    d = decide(baseline, candidate)
    text = d.render()
    assert d.action == "promote"
    assert "same family: the candidate's answers" in text and "model claude-3-5-haiku: 100 of 100 answers" in text
    assert "leans the candidate's way: 100% of its answers share the judge's family, 0% of the baseline's" in text
    assert "the baseline's answers of the judge's own model family" not in text
    assert not any("same family" in r for r in decide(baseline, baseline).reasons)
    same = decide(candidate, candidate).reasons  # both sides in the judge's family: named, but no lean
    assert sum("same family" in r for r in same) == 2 and not any("leans" in r for r in same)


def test_no_note_without_a_model_slice_or_a_judge_model():
    """Counts without model slices, or from a judge that names no model, carry no same-family note."""
    assert same_family_notes(ReleaseCounts(100, 5), ReleaseCounts(100, 5)) == []
    heuristic = "heuristic@abcdef12"
    c = _counts(*[_record("claude-3-5-haiku", heuristic)] * 5)
    assert same_family_notes(c, c) == []


def test_prometheus_counts_are_split_by_model_for_the_note(fake_prometheus):  # noqa: F811
    """The gate's answers query is split by judge_id and model; the per-judge counts carry the models."""
    url, handler = fake_prometheus
    q = queries("v2", "1h")
    handler.answers[q["answers"]] = [
        {"metric": {"judge_id": CLAUDE_JUDGE, "model": "claude-3-haiku"}, "value": [0, "60"]},
        {"metric": {"judge_id": CLAUDE_JUDGE, "model": "gpt-4o"}, "value": [0, "40"]},
    ]
    handler.answers[q["flagged"]] = [{"metric": {"judge_id": CLAUDE_JUDGE}, "value": [0, "7"]}]
    got = fetch_counts(Source(url), "v2", "1h")
    assert got.answers == 100 and got.models == (("claude-3-haiku", 60), ("gpt-4o", 40))
    assert got.by_judge[CLAUDE_JUDGE].models == got.models
    assert "by (judge_id, model)" in q["answers"]
    assert json.dumps([p.model for p in same_family(got)]) == '["claude-3-haiku"]'

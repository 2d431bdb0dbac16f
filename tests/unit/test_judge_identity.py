"""Judge identity: judge_id names the judge as deployed, and changes exactly when something that changes verdicts does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from contract.record import RagTrace
from evaluator_worker.judges import prompts
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Verdict, Verification
from evaluator_worker.judges.calibrated import CalibratedJudge, ConfidenceMap
from evaluator_worker.judges.cascade import CascadeJudge
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.heuristic.thresholds import DEFAULT_THRESHOLDS
from evaluator_worker.judges.identity import JudgeIdentity, identify, judge_kind
from evaluator_worker.judges.risk import RiskMap
from evaluator_worker.judges.settings import AnthropicSettings, CascadeSettings
from evaluator_worker.judges.verifier import VerifierJudge
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator


def _claude(**changes) -> object:
    settings = AnthropicSettings(api_key="test-key", base_url="http://127.0.0.1:9", **changes)
    return AnthropicJudge(settings)


def test_the_id_names_kind_models_and_digest():
    """judge_id is kind:model(s)@digest, and judge_kind reads the kind back (a bare name is its own kind)."""
    ident = identify(_claude(model="claude-a", extract_model="claude-b"))
    assert ident.kind == "anthropic" and ident.models == ("claude-a", "claude-b")
    assert ident.judge_id.startswith("anthropic:claude-a+claude-b@") and len(ident.digest) == 8
    assert judge_kind(ident.judge_id) == "anthropic"
    heuristic = identify(HeuristicJudge())
    assert heuristic.judge_id == f"heuristic@{heuristic.digest}" and judge_kind(heuristic.judge_id) == "heuristic"
    assert judge_kind("hybrid") == "hybrid" and judge_kind("") == ""


def test_the_same_judge_built_twice_has_the_same_id():
    """Two workers built from the same settings count under one id (no process state in the digest)."""
    assert identify(_claude()).judge_id == identify(_claude()).judge_id
    assert identify(HeuristicJudge()).judge_id == identify(HeuristicJudge()).judge_id


def test_secrets_and_endpoints_do_not_change_the_id():
    """A rotated key or another endpoint of the same model is the same judge."""
    a = AnthropicJudge(AnthropicSettings(api_key="key-1", base_url="http://127.0.0.1:9"))
    b = AnthropicJudge(AnthropicSettings(api_key="key-2", base_url="http://127.0.0.1:10"))
    assert identify(a).judge_id == identify(b).judge_id


@pytest.mark.parametrize(
    "change",
    [{"model": "claude-other"}, {"extract_model": "claude-other"}, {"max_tokens": 1234}, {"single_call": True}],
)
def test_a_change_of_model_or_request_is_a_new_judge(change):
    """Another model, max_tokens or call mode: another judge_id."""
    assert identify(_claude(**change)).judge_id != identify(_claude()).judge_id


def test_a_prompt_fix_is_a_new_judge(monkeypatch):
    """Changing the verifier's system prompt changes the id, and differs() names the judge part."""
    before = identify(_claude())
    monkeypatch.setattr(prompts, "VERIFY_SYSTEM", prompts.VERIFY_SYSTEM + " Be stricter.")
    after = identify(_claude())
    assert after.judge_id != before.judge_id
    assert after.differs(before) == ["judge"]


def test_hedge_policy_risk_map_and_confidence_map_are_part_of_the_judge():
    """What the worker applies after the judge (hedge policy, answer-risk map) and a calibration map change the id."""
    judge = HeuristicJudge()
    base = identify(judge, hedge_policy="lenient")
    assert identify(judge, hedge_policy="strict").differs(base) == ["hedge_policy"]
    risk = RiskMap(judge="heuristic", aggregator="noisy_or", threshold=0.3)
    assert identify(judge, hedge_policy="lenient", risk=risk).differs(base) == ["risk_map"]
    cmap = ConfidenceMap(x=(0.0, 1.0), y=(0.2, 0.9))
    wrapped = identify(CalibratedJudge(judge, cmap), hedge_policy="lenient")
    other = identify(CalibratedJudge(judge, ConfidenceMap(x=(0.0, 1.0), y=(0.1, 0.9))), hedge_policy="lenient")
    assert wrapped.judge_id != base.judge_id and other.judge_id != wrapped.judge_id
    # the map's metadata (what it was fitted on) is not the judge
    noted = ConfidenceMap(x=(0.0, 1.0), y=(0.2, 0.9), meta={"fitted": "yesterday"})
    assert identify(CalibratedJudge(judge, noted), hedge_policy="lenient").judge_id == wrapped.judge_id


def test_heuristic_thresholds_and_rules_are_part_of_the_judge():
    """Another threshold or another rule order is another heuristic judge."""
    base = identify(HeuristicJudge()).judge_id
    stricter = replace(DEFAULT_THRESHOLDS, alignment=replace(DEFAULT_THRESHOLDS.alignment, support=0.99))
    assert identify(HeuristicJudge(thresholds=stricter)).judge_id != base
    rules = HeuristicJudge().rules
    assert identify(HeuristicJudge(rules=rules[::-1])).judge_id != base


def test_cascade_names_both_stages_and_its_escalation():
    """A cascade's id carries both stages' models and changes with the share it escalates."""
    first, second = HeuristicJudge(), _claude(model="claude-a", extract_model="claude-a")
    a = identify(CascadeJudge(first, second, CascadeSettings(escalate_share=0.3)))
    b = identify(CascadeJudge(first, second, CascadeSettings(escalate_share=0.5)))
    assert a.judge_id.startswith("cascade:claude-a@") and a.judge_id != b.judge_id


def test_verifier_weights_are_part_of_the_judge(tmp_path: Path):
    """Another byte in the model directory (new weights) is another verifier judge."""
    model = tmp_path / "my-verifier"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\x00" * 64)
    judge = VerifierJudge(model, loader=lambda d: pytest.fail("identity must not load the model"))
    before = identify(judge)
    assert before.models == ("my-verifier",)
    (model / "model.safetensors").write_bytes(b"\x00" * 63 + b"\x01")
    assert identify(judge).judge_id != before.judge_id


class _OwnJudge(JudgeBase):
    name = "mine"

    def extract_claims(self, answer, question=None, *, contexts=None):
        return Extraction(claims=[Claim(id="c1", text=answer)])

    def verify(self, claims, contexts, question=None):
        return Verification(verdicts=[ClaimVerdict(claim_id=c.id, verdict=Verdict.SUPPORTED) for c in claims])


def test_a_judge_without_fingerprint_is_identified_by_its_class_and_source():
    """A module:factory judge with no fingerprint() gets an id from its class and module source."""
    ident = identify(_OwnJudge())
    assert ident.judge_id.startswith("mine@")
    assert ident == identify(_OwnJudge())


def test_every_result_and_count_carries_the_judge_id():
    """The evaluator writes its judge_id on each result and the worker's counters carry it as a label."""
    metrics = WorkerMetrics(CollectorRegistry())
    evaluator = Evaluator(HeuristicJudge(), metrics)
    result = evaluator.evaluate(
        RagTrace(
            trace_id="t1", answer="Paris is in France.", contexts=["Paris is in France."], slices={"release": "v1"}
        )
    )
    assert result.judge == "heuristic" and result.judge_id == evaluator.identity.judge_id
    metrics.observe(result)
    labels = {"judge_id": result.judge_id, "release": "v1", "model": "unknown", "route": "unknown"}
    value = metrics.registry.get_sample_value
    assert value("claimwatch_answers_total", {**labels, "environment": "unknown", "outcome": "evaluated"}) == 1


def test_judge_id_label_values_are_bounded():
    """More distinct judge ids than a process can have become 'other' (a label never grows without bound)."""
    metrics = WorkerMetrics(CollectorRegistry())
    evaluator = Evaluator(HeuristicJudge(), metrics)
    trace = RagTrace(trace_id="t", answer="Paris is in France.", contexts=["Paris is in France."])
    result = evaluator.evaluate(trace)
    seen = {metrics.label_values(result.model_copy(update={"judge_id": f"j{i}@0000000{i % 10}"}))[0] for i in range(40)}
    assert "other" in seen and len(seen) <= 9


def test_identity_str_and_model():
    """An identity prints as its id; its model label is the first model, 'none' without one."""
    assert str(JudgeIdentity("heuristic", (), "abcdef12")) == "heuristic@abcdef12"
    assert JudgeIdentity("heuristic", (), "abcdef12").model == "none"

"""The cascade judge: escalation, budget, fallback and agreement sampling."""

import random
from typing import Sequence

from evaluator_worker.config import CascadeSettings
from evaluator_worker.errors import JudgeUnavailable
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.cascade import CascadeJudge
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator


class Scripted(JudgeBase):
    """Returns the verdict/confidence given per claim text: {'text': (Verdict, confidence)}."""

    def __init__(self, name, script, cost=0.0, fail=False):
        self.name, self.script, self.cost, self.fail = name, script, cost, fail
        self.seen: list[str] = []

    def extract_claims(self, answer, question=None):
        return Extraction([Claim(id=f"c{i}", text=t) for i, t in enumerate(answer.split("|"))])

    def verify(self, claims: Sequence[Claim], contexts, question=None):
        if self.fail:
            raise JudgeUnavailable("down")
        self.seen += [c.text for c in claims]
        out = [
            ClaimVerdict(claim_id=c.id, verdict=self.script[c.text][0], confidence=self.script[c.text][1])
            for c in claims
        ]
        return Verification(out, Usage(calls=1, cost_usd=self.cost, model=self.name))


CLAIMS = [Claim(id="c0", text="sure"), Claim(id="c1", text="unsure")]


def test_only_uncertain_claims_are_escalated():
    """A confident first verdict stands; an unsure one is replaced by the second judge's."""
    first = Scripted("h", {"sure": (Verdict.SUPPORTED, 0.95), "unsure": (Verdict.SUPPORTED, 0.4)})
    second = Scripted("c", {"unsure": (Verdict.CONTRADICTED, 0.9), "sure": (Verdict.SUPPORTED, 0.9)})
    j = CascadeJudge(first, second, CascadeSettings(escalate_below=0.8, agreement_sample=0.0))
    out = j.verify(CLAIMS, ["ctx"])
    assert [v.verdict for v in out.verdicts] == [Verdict.SUPPORTED, Verdict.CONTRADICTED]
    assert second.seen == ["unsure"]
    assert j.stats["second"] == 1 and j.stats["first"] == 1


def test_over_budget_keeps_first_verdicts():
    """Once the hour's budget is spent, uncertain claims keep the cheap verdict and are counted."""
    now = [0.0]
    first = Scripted("h", {"sure": (Verdict.SUPPORTED, 0.95), "unsure": (Verdict.UNSUPPORTED, 0.3)})
    second = Scripted("c", {"unsure": (Verdict.SUPPORTED, 0.9)}, cost=1.0)
    j = CascadeJudge(
        first, second, CascadeSettings(budget_usd_per_hour=1.0, agreement_sample=0.0), clock=lambda: now[0]
    )
    j.verify(CLAIMS, ["ctx"])  # spends 1.0
    out = j.verify(CLAIMS, ["ctx"])
    assert out.verdicts[1].verdict == Verdict.UNSUPPORTED
    assert j.stats["first_over_budget"] == 1
    now[0] = 3601.0  # an hour later the budget is back
    assert j.verify(CLAIMS, ["ctx"]).verdicts[1].verdict == Verdict.SUPPORTED


def test_second_judge_failure_falls_back_to_first():
    """A failing second judge leaves the first verdicts and counts the fallback."""
    first = Scripted("h", {"sure": (Verdict.SUPPORTED, 0.95), "unsure": (Verdict.UNSUPPORTED, 0.3)})
    j = CascadeJudge(first, Scripted("c", {}, fail=True), CascadeSettings(agreement_sample=0.0))
    out = j.verify(CLAIMS, ["ctx"])
    assert [v.verdict for v in out.verdicts] == [Verdict.SUPPORTED, Verdict.UNSUPPORTED]
    assert j.stats["first_fallback"] == 1


def test_agreement_is_sampled_and_exported():
    """With sample rate 1.0, confident claims are double-judged and agreement reaches the metrics."""
    first = Scripted("h", {"sure": (Verdict.SUPPORTED, 0.95), "unsure": (Verdict.SUPPORTED, 0.95)})
    second = Scripted("c", {"sure": (Verdict.SUPPORTED, 0.9), "unsure": (Verdict.CONTRADICTED, 0.9)})
    m = WorkerMetrics()
    j = CascadeJudge(first, second, CascadeSettings(agreement_sample=1.0, escalate_below=0.8))
    Evaluator(j, m)
    out = j.verify(CLAIMS, ["ctx"])
    assert [v.verdict for v in out.verdicts] == [
        Verdict.SUPPORTED,
        Verdict.SUPPORTED,
    ]  # sampled claims keep the first verdict
    assert m.registry.get_sample_value("claimwatch_cascade_agreement_total", {"agree": "true"}) == 1
    assert m.registry.get_sample_value("claimwatch_cascade_agreement_total", {"agree": "false"}) == 1
    assert m.registry.get_sample_value("claimwatch_cascade_claims_total", {"decided_by": "first"}) == 2


def test_escalate_share_sends_that_share_of_the_least_confident_claims():
    """With escalate_share=0.3 over a stream of confidences (in random order), about 30% of claims go to the second
    judge from the first answers on, and late in the stream only the least confident ones."""
    texts = [f"t{i}" for i in range(400)]
    first = Scripted("h", {t: (Verdict.SUPPORTED, (i % 100) / 100) for i, t in enumerate(texts)})
    second = Scripted("c", {t: (Verdict.SUPPORTED, 0.9) for t in texts})
    j = CascadeJudge(first, second, CascadeSettings(escalate_share=0.3, agreement_sample=0.0, budget_usd_per_hour=1e9))
    order = texts[:]
    random.Random(7).shuffle(order)
    for k in range(0, 400, 4):
        j.verify([Claim(id=f"c{i}", text=t) for i, t in enumerate(order[k : k + 4])], ["ctx"])
    late = [t for t in second.seen if order.index(t) >= 300]  # escalations among the last 100 claims
    assert 0.25 <= len(second.seen) / 400 <= 0.35
    assert 20 <= len(late) <= 40 and all(int(t[1:]) % 100 < 40 for t in late)


def test_escalate_share_holds_when_confidences_tie():
    """A first judge with three confidence levels (a rule-based judge's ties): escalate_share=0.3 still sends
    about 30% of claims, filling the share from the tied level instead of escalating only those below it."""
    texts = [f"claim number {i}" for i in range(600)]
    levels = [0.6] * 2 + [0.8] * 5 + [0.95] * 3  # 20% at 0.6, 50% at 0.8, 30% at 0.95
    first = Scripted("h", {t: (Verdict.SUPPORTED, levels[i % 10]) for i, t in enumerate(texts)})
    second = Scripted("c", {t: (Verdict.SUPPORTED, 0.9) for t in texts})
    j = CascadeJudge(first, second, CascadeSettings(escalate_share=0.3, agreement_sample=0.0, budget_usd_per_hour=1e9))
    for k in range(0, 600, 3):
        j.verify([Claim(id=f"c{i}", text=t) for i, t in enumerate(texts[k : k + 3])], ["ctx"])
    late = [t for t in second.seen if int(t.split()[-1]) >= 300]
    assert 0.25 <= len(late) / 300 <= 0.35
    assert all(levels[int(t.split()[-1]) % 10] < 0.95 for t in late)  # never a claim above the quantile


def test_escalate_share_follows_the_window_as_it_slides():
    """The share is taken over the last share_window confidences only: after the first judge's scale moves (all
    claims now at 0.9), the old low confidences leave the window and about the share is escalated again."""
    texts = [f"claim {i}" for i in range(300)]
    conf = {t: (0.2 if i % 2 else 0.8) if i < 100 else 0.9 for i, t in enumerate(texts)}
    first = Scripted("h", {t: (Verdict.SUPPORTED, c) for t, c in conf.items()})
    second = Scripted("c", {t: (Verdict.SUPPORTED, 0.9) for t in texts})
    j = CascadeJudge(
        first,
        second,
        CascadeSettings(escalate_share=0.5, share_window=50, agreement_sample=0.0, budget_usd_per_hour=1e9),
    )
    for k in range(0, 300, 2):
        j.verify([Claim(id=f"c{i}", text=t) for i, t in enumerate(texts[k : k + 2])], ["ctx"])
    late = [t for t in second.seen if int(t.split()[-1]) >= 200]
    assert 0.35 <= len(late) / 100 <= 0.65


def test_always_escalate_routes_a_verdict_kind_whatever_its_confidence():
    """always_escalate=['SUPPORTED'] sends a confident SUPPORTED to the second judge; a confident UNSUPPORTED stays."""
    first = Scripted("h", {"sure": (Verdict.SUPPORTED, 0.99), "unsure": (Verdict.UNSUPPORTED, 0.99)})
    second = Scripted("c", {"sure": (Verdict.CONTRADICTED, 0.9), "unsure": (Verdict.SUPPORTED, 0.9)})
    j = CascadeJudge(
        first, second, CascadeSettings(always_escalate=["supported"], escalate_below=0.8, agreement_sample=0.0)
    )
    out = j.verify(CLAIMS, ["ctx"])
    assert second.seen == ["sure"]
    assert [v.verdict for v in out.verdicts] == [Verdict.CONTRADICTED, Verdict.UNSUPPORTED]


def test_a_second_judge_error_verdict_is_a_fallback_not_a_decision():
    """A claim the second judge returns as ERROR keeps the first verdict and is counted first_fallback."""
    first = Scripted("h", {"sure": (Verdict.SUPPORTED, 0.95), "unsure": (Verdict.UNSUPPORTED, 0.3)})
    second = Scripted("c", {"unsure": (Verdict.ERROR, 0.0)})
    j = CascadeJudge(first, second, CascadeSettings(escalate_below=0.8, agreement_sample=0.0))
    out = j.verify(CLAIMS, ["ctx"])
    assert [v.verdict for v in out.verdicts] == [Verdict.SUPPORTED, Verdict.UNSUPPORTED]
    assert j.stats["first_fallback"] == 1 and j.stats.get("second", 0) == 0

"""PAS2-style consistency: paraphrase grouping, conflicts, and failure as a first-class outcome."""

from typing import Sequence

from evaluator_worker.consistency import ActiveProbe, ConsistencyTracker, question_tokens, similarity
from evaluator_worker.errors import JudgeUnavailable
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Verdict, Verification


class CityJudge(JudgeBase):
    """Contradicted when the claim names a different city than the context."""

    name = "city"
    cities = ("Paris", "Lyon", "Berlin")

    def extract_claims(self, answer, question=None):
        return Extraction([Claim(id="c1", text=answer)])

    def verify(self, claims: Sequence[Claim], contexts, question=None):
        out = []
        for c in claims:
            mine = {x for x in self.cities if x in c.text}
            theirs = {x for x in self.cities if any(x in ctx for ctx in contexts)}
            v = Verdict.CONTRADICTED if mine and theirs and mine != theirs else Verdict.SUPPORTED
            out.append(ClaimVerdict(claim_id=c.id, verdict=v, evidence=contexts[0], confidence=0.9))
        return Verification(out)


class DownJudge(CityJudge):
    def verify(self, claims, contexts, question=None):
        raise JudgeUnavailable("down")


def _claims(text):
    return [Claim(id="c1", text=text)]


def test_paraphrased_questions_are_grouped():
    """'What is the capital of France?' and "Which city is France's capital?" are paraphrases; unrelated ones aren't."""
    a = question_tokens("What is the capital of France?")
    b = question_tokens("Which city is France's capital?")
    c = question_tokens("How long do I bake cookies?")
    assert similarity(a, b) >= 0.7 and similarity(a, c) == 0.0


def test_planted_contradiction_is_found():
    """Paris then Lyon for equivalent questions -> inconsistent, with topic, claim and the conflicting answer."""
    t = ConsistencyTracker(CityJudge())
    first = t.check(
        "t1",
        "What is the capital of France?",
        "The capital of France is Paris.",
        _claims("The capital of France is Paris."),
    )
    assert first.status == "no_group"
    second = t.check(
        "t2", "Which city is France's capital?", "France's capital is Lyon.", _claims("France's capital is Lyon.")
    )
    assert second.status == "inconsistent" and second.group_size == 2
    assert second.conflicts[0].claim == "France's capital is Lyon."
    assert "Paris" in second.conflicts[0].conflicting_with and second.conflicts[0].other_trace_id == "t1"
    assert "capital" in second.conflicts[0].topic and "france" in second.conflicts[0].topic


def test_agreeing_answers_are_consistent():
    """Two Paris answers to paraphrased questions are consistent."""
    t = ConsistencyTracker(CityJudge())
    t.check("t1", "What is the capital of France?", "Paris.", _claims("Paris is the capital."))
    r = t.check("t2", "Tell me the capital of France", "Paris.", _claims("It is Paris."))
    assert r.status == "consistent" and not r.conflicts


def test_judge_failure_is_not_detected_with_zero_confidence():
    """A failing judge yields 'not_detected', confidence 0 — never a silent pass."""
    t = ConsistencyTracker(DownJudge())
    t.check("t1", "What is the capital of France?", "Paris.", _claims("Paris."))
    r = t.check("t2", "What's the capital of France?", "Lyon.", _claims("Lyon."))
    assert r.status == "not_detected" and r.confidence == 0.0 and r.error


def test_window_is_bounded():
    """Old answers fall out of the window."""
    t = ConsistencyTracker(CityJudge(), window=2)
    t.check("t1", "What is the capital of France?", "Paris.", _claims("Paris."))
    t.check("t2", "How long do I bake cookies?", "10 minutes.", _claims("10 minutes."))
    t.check("t3", "How long do cookies bake?", "12 minutes.", _claims("12 minutes."))
    r = t.check("t4", "What is the capital of France?", "Lyon.", _claims("Lyon."))
    assert r.status == "no_group"


def test_active_probe_asks_paraphrases_and_finds_conflict():
    """The probe sends paraphrases to the app; an app that changes its answer is inconsistent."""
    asked = []

    def app(question):
        asked.append(question)
        return "The capital is Lyon." if len(asked) > 1 else "The capital is Paris."

    r = ActiveProbe(app, CityJudge()).probe("What is the capital of France?", "The capital is Paris.")
    assert len(asked) == 3 and r.status == "inconsistent"


def test_active_probe_app_failure_is_not_detected():
    """An app endpoint that errors gives 'not_detected', confidence 0."""

    def broken(question):
        raise OSError("connection refused")

    r = ActiveProbe(broken, CityJudge()).probe("What is the capital of France?", "Paris.")
    assert r.status == "not_detected" and r.confidence == 0.0 and "connection refused" in r.error


def test_identical_earlier_answers_need_no_judge_call():
    """A repeat of the same answer text is consistent without calling the judge."""

    class Counting(CityJudge):
        calls = 0

        def verify(self, claims, contexts, question=None):
            type(self).calls += 1
            return super().verify(claims, contexts, question)

    t = ConsistencyTracker(Counting())
    t.check("t1", "What is the capital of France?", "Paris is the capital.", _claims("Paris is the capital."))
    r = t.check("t2", "What is the capital of France?", "Paris is the capital!", _claims("Paris is the capital."))
    assert r.status == "consistent" and Counting.calls == 0


def test_sampling_is_deterministic_per_trace():
    """With sample 0 nothing is checked; every answer still enters the window for later checks."""
    t = ConsistencyTracker(CityJudge(), sample=0.0)
    t.check("t1", "What is the capital of France?", "Paris.", _claims("Paris."))
    assert t.check("t2", "What is the capital of France?", "Lyon.", _claims("Lyon.")).status == "no_group"
    t.sample = 1.0
    assert (
        t.check("t3", "What is the capital of France?", "Lyon is it.", _claims("Lyon is it.")).status == "inconsistent"
    )

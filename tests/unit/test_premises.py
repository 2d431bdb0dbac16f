"""Premises of the cross-encoder judges: ranked windows and the question prefix (evaluator_worker/judges/premises.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evaluator_worker.judges.base import Claim, Verdict
from evaluator_worker.judges.premises import (
    QUESTION_WORDS,
    PremiseFormat,
    best_windows,
    premise_text,
    question_prefix,
    rank_windows,
)
from evaluator_worker.judges.verifier import LoadedVerifier, VerifierJudge

LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}


def test_windows_rank_by_the_claims_content_words():
    """The window holding more of the claim's content words ranks first; stopwords do not count."""
    windows = ["the of and a the of and a", "The tower is red.", "The tower was built in 1889 in Paris."]
    assert rank_windows("The tower was built in 1889.", windows)[0] == 2
    assert rank_windows("The tower was built in 1889.", windows)[-1] == 0


@given(st.lists(st.text(max_size=40), max_size=8), st.text(max_size=40))
def test_ranking_is_a_permutation(windows, claim):
    """Ranking never drops or repeats a window, whatever the text."""
    assert sorted(rank_windows(claim, windows)) == list(range(len(windows)))


def test_top_k_zero_keeps_every_window_in_order():
    """top_k 0 (the v1 format) scores every window, in context order."""
    windows = [(0, "bridge tower"), (1, "river"), (1, "tower clock")]
    assert best_windows("tower clock", windows, 0) == windows
    assert best_windows("tower clock", windows, 1) == [(1, "tower clock")]


def test_question_prefix_is_cut_and_absent_without_a_question():
    """A long question is cut to QUESTION_WORDS words; no question gives the bare window."""
    long_q = " ".join(f"w{i}" for i in range(QUESTION_WORDS + 10))
    assert len(question_prefix(long_q).split()) == QUESTION_WORDS + 1  # the words and the "|" separator
    assert premise_text(None, "ctx") == "ctx" and premise_text("  ", "ctx") == "ctx"
    assert premise_text("Why?", "ctx") == "Why? | ctx"


def test_format_is_read_from_the_models_calibration():
    """A v1 calibration.json (no format keys) gives the v1 format; v2 keys are read."""
    assert PremiseFormat.from_calibration({"temperature": 1.2}) == PremiseFormat(False, 0)
    assert PremiseFormat.from_calibration({"with_question": 1.0, "top_k": 3.0}) == PremiseFormat(True, 3)


def _v2_loaded(seen: list[str], top_k: int) -> LoadedVerifier:
    """A stand-in model declaring the v2 format: entails when every claim word is in the premise; records premises."""

    def score(premises: list[str], hypotheses: list[str]) -> list[list[float]]:
        seen.extend(premises)
        return [
            [5.0, 0.0, 0.0]
            if set(h.lower().rstrip(".").split()) <= set(p.lower().replace(".", " ").split())
            else [0.0, 5.0, 0.0]
            for p, h in zip(premises, hypotheses)
        ]

    return LoadedVerifier(
        score=score,
        count_tokens=lambda ts: [len(t.split()) for t in ts],
        labels=LABELS,
        max_length=24,
        calibration={"temperature": 1.0, "with_question": 1.0, "top_k": float(top_k)},
    )


def test_v2_model_scores_top_k_windows_with_the_question():
    """A v2 model sees the question before each window and only its top-k windows per claim; evidence maps back."""
    seen: list[str] = []
    judge = VerifierJudge(loader=lambda d: _v2_loaded(seen, 1), join_chunks=True)
    contexts = ["the cat sat on the mat. the sky was grey.", "the dog ran in the park. the dog barked loudly."]
    result = judge.verify([Claim(id="c1", text="the dog ran.")], contexts, question="What did the dog do?")
    verdict = result.verdicts[0]
    assert verdict.verdict is Verdict.SUPPORTED and verdict.context_index == 1
    assert len(seen) == 1 and seen[0].startswith("What did the dog do? | ") and "dog ran" in seen[0]


def test_v2_model_without_a_question_scores_the_bare_window():
    """No question: the premise is the window alone (as trained on sets without questions)."""
    seen: list[str] = []
    judge = VerifierJudge(loader=lambda d: _v2_loaded(seen, 2))
    judge.verify([Claim(id="c1", text="a bird sang.")], ["the cat sat.", "the dog ran.", "a bird sang."])
    assert len(seen) == 2 and "a bird sang." in seen and not any("|" in p for p in seen)

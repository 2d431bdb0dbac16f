"""Like with like: two releases are compared on counts one judge made.

A judge change (a new model, a prompt fix, new rules, a recalibration: a new ``judge_id``,
:mod:`evaluator_worker.judges.identity`) moves every release's flagged share at once. A candidate judged by a
stricter judge than its baseline looks worse without being worse: pooled counts of two judges would roll back a
good release (or promote a bad one after a switch to a more lenient judge).

So when the releases' counts come from more than one judge (``ReleaseCounts.per_judge``):

- **a judge in common**: the decision is taken on that judge's counts only (of the judges both releases have,
  the one with the most answers on the thinner side), and says which answers it left out. During a switch both
  releases keep getting answers, so the new judge soon has enough of both;
- **no judge in common** (the candidate started after the switch, the baseline's window ended before it): HOLD,
  naming both releases' judges and what to do: re-judge a sample of the baseline's answers with the candidate's
  judge (``claimwatch audit`` for Claude, ``claimwatch score`` for the others, then ``claimwatch gate --results``),
  or wait until the baseline has answers judged by the candidate's judge.

Counts not split by judge (built by hand, or by a source that cannot split them) are compared as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from claimwatch.gate.counts import ReleaseCounts

__all__ = ["JudgeMatch", "match_judges"]


@dataclass(frozen=True)
class JudgeMatch:
    """The counts to compare, the judge they are of, and what the report says about it."""

    baseline: ReleaseCounts
    candidate: ReleaseCounts
    #: the judge id the counts were restricted to (None: unchanged, one judge or not split)
    judge: str | None = None
    #: a reason the gate must hold (no judge in common); None otherwise
    hold: str | None = None
    notes: tuple[str, ...] = ()


def _judges(counts: ReleaseCounts) -> str:
    return ", ".join(f"{j} ({c.answers} answers)" for j, c in sorted(counts.by_judge.items()))


def match_judges(baseline: ReleaseCounts, candidate: ReleaseCounts) -> JudgeMatch:
    """The counts of ``baseline`` and ``candidate`` one judge made (module docstring)."""
    b, c = baseline.by_judge, candidate.by_judge
    if not b or not c or (len(b) == 1 and b.keys() == c.keys()):
        return JudgeMatch(baseline, candidate)
    common = set(b) & set(c)
    if not common:
        judge = max(c, key=lambda j: (c[j].answers, j))
        return JudgeMatch(
            baseline,
            candidate,
            hold=(
                f"different judges, not compared: the baseline was judged by {_judges(baseline)}, the candidate by "
                f"{_judges(candidate)} (a judge change moves every release's rates at once). Re-judge a sample of "
                f"the baseline's answers with judge {judge} (claimwatch audit for Claude, claimwatch score with the "
                "same judge settings for the others; then claimwatch gate --results), or wait until the baseline "
                f"has answers judged by {judge}"
            ),
        )
    judge = max(common, key=lambda j: (min(b[j].answers, c[j].answers), c[j].answers, j))
    left_b, left_c = baseline.answers - b[judge].answers, candidate.answers - c[judge].answers
    note = (
        f"judges differ in the window (baseline: {_judges(baseline)}; candidate: {_judges(candidate)}): decided on "
        f"judge {judge}'s counts only ({b[judge].answers} baseline and {c[judge].answers} candidate answers); "
        f"{left_b} baseline and {left_c} candidate answers of other judges left out, not comparable"
    )
    return JudgeMatch(b[judge], c[judge], judge=judge, notes=(note,))

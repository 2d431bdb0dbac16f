"""Same family: where the judge shares the answering model's family, the gate and the report say so.

A judge rates answers of its own model family higher than equally good answers of other families (self-preference
bias, :mod:`contract.families`). So a release's flagged share is flattered where its ``model`` slice and the judge
share a family, and a comparison in which the candidate moves into the judge's family (a switch from one vendor's
generator to the judge's vendor) looks better than it is.

The note does not change the decision: it names, per release and per ``model`` slice value, the answers a
same-family judge judged, and, when the candidate has a larger same-family share than the baseline, that the
comparison leans the candidate's way. What to do about it: judge a sample with a judge of another family (a shadow
judge, or ``claimwatch audit`` / ``claimwatch score`` with another model) and compare.
"""

from __future__ import annotations

from dataclasses import dataclass

from claimwatch.gate.counts import ReleaseCounts
from contract.families import shared_family
from contract.judge_ids import judge_models

__all__ = ["SameFamily", "same_family", "same_family_notes"]


@dataclass(frozen=True)
class SameFamily:
    """Answers of one ``model`` slice value judged by a judge of the same family."""

    model: str
    family: str
    judge: str
    answers: int


def same_family(counts: ReleaseCounts) -> list[SameFamily]:
    """The same-family parts of one release's counts (per judge when the counts are split by judge, else every
    judge named beside every model: counts that do not say which judge judged which model are read as each)."""
    by_judge = counts.by_judge or {j: counts for j in counts.judges}
    found = []
    for judge, part in sorted(by_judge.items()):
        models = judge_models(judge)
        for model, n in part.models:
            fam = shared_family(model, models)
            if fam and n:
                found.append(SameFamily(model, fam, judge, n))
    return found


def _share(parts: list[SameFamily], counts: ReleaseCounts) -> float:
    return min(1.0, sum(p.answers for p in parts) / counts.answers) if counts.answers else 0.0


def same_family_notes(baseline: ReleaseCounts, candidate: ReleaseCounts) -> list[str]:
    """The lines the gate and the report add (none when no judge shares a family with an answering model)."""
    notes = []
    found = {"baseline": same_family(baseline), "candidate": same_family(candidate)}
    for role, counts in (("baseline", baseline), ("candidate", candidate)):
        parts = found[role]
        if not parts:
            continue
        each = "; ".join(
            f"model {p.model}: {p.answers} of {counts.answers} answers, judge {p.judge} ({p.family} family)"
            for p in parts
        )
        notes.append(
            f"same family: the {role}'s answers of the judge's own model family are judged by it ({each}); a judge "
            "rates its own family's answers more faithful than they are (self-preference bias): check a sample with "
            "a judge of another family (a shadow judge, or claimwatch audit/score with another model)"
        )
    b, c = _share(found["baseline"], baseline), _share(found["candidate"], candidate)
    if c > b:
        notes.append(
            f"the comparison leans the candidate's way: {c * 100:.0f}% of its answers share the judge's family, "
            f"{b * 100:.0f}% of the baseline's, so a rise in flagged answers may be understated"
        )
    return notes

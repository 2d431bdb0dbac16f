"""Which judge's counts may drive a rollback: a declared table, and the check the gate and the report apply.

The rule. A judge is **fit for a rollback decision** only where it has been measured on real,
human-labelled answers (``docs/judge-quality.md``, eval splits run once per version) and tells
hallucinated answers from faithful ones clearly better than answer length does. No shipped judge is
marked fit today:

- ``unfit``: measured here on real answers and not fit (the offline judges: heuristic, hybrid,
  verifier, offline). The reason quotes the measured eval numbers beside answer length's.
- ``unmeasured``: not measured here (the LLM judges, a cascade, ``nli`` on your own weights: no
  network and no such model on the build machines). Not known to be unfit either, but a rollback
  needs a measurement: a judge profile from your own labels (``claimwatch label`` then ``claimwatch
  calibrate LABELS --profile-out PATH``) given to ``claimwatch gate --profile PATH``.
- ``unknown``: a name not in the table (your own ``module:factory`` judge, workers too old to export
  ``claimwatch_judge_info``, records without a ``judge`` field): treated as not fit.

With ``--profile`` the profile decides (:mod:`claimwatch.gate.correction`) and this table is not
consulted: your labels outrank our measurements. Without it, a judge that is not fit turns ROLLBACK
into HOLD (exit 2, the reason added), the way a profile's veto does, unless ``--trust-judge`` says the
caller accepts the judge's counts as they are. Every judge behind either release's counts is checked
(a rise measured by two judges is no better than the worse of them). One line names the judge and the
reason whatever the decision, so a PROMOTE on an unfit judge's counts says so too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from claimwatch.gate.correction import Correction
from claimwatch.gate.decision import GateDecision
from contract.judge_ids import judge_kind
from evaluator_worker.judges.table import TABLE, JudgeEntry
from evaluator_worker.judges.table import UNFIT as TABLE_UNFIT

FIT, UNFIT, UNMEASURED, UNKNOWN = "fit", "unfit", "unmeasured", "unknown"

_WHERE = "docs/judge-quality.md"
_PROFILE = "fit only with a judge profile from your own labels (claimwatch gate --profile)"


@dataclass(frozen=True)
class Fitness:
    """One judge's fitness for a rollback decision and why (measured numbers where there are any)."""

    judge: str
    status: str  # FIT | UNFIT | UNMEASURED | UNKNOWN
    reason: str

    @property
    def fit_for_rollback(self) -> bool:
        return self.status == FIT


def _unfit(judge: str, numbers: str) -> Fitness:
    return Fitness(judge, UNFIT, f"measured on real human-labelled answers (eval split, {_WHERE}): {numbers}")


def _unmeasured(judge: str, what: str) -> Fitness:
    return Fitness(judge, UNMEASURED, f"{what}; not measured on real answers here: {_PROFILE}")


def _declared(entry: JudgeEntry) -> Fitness:
    """A judge table entry's fitness (:mod:`evaluator_worker.judges.table`)."""
    if entry.fitness == TABLE_UNFIT:
        return _unfit(entry.name, entry.fitness_reason)
    return _unmeasured(entry.name, entry.fitness_reason)


def judge_fitness() -> dict[str, Fitness]:
    """Every shipped judge's fitness, as the judge table declares it (numbers from docs/judge-quality.md, eval
    split), and ``claimwatch audit``'s ``anthropic-batch``."""
    out = {name: _declared(entry) for name, entry in TABLE.items()}
    out["anthropic-batch"] = _unmeasured(
        "anthropic-batch", "an LLM judge (Claude, through claimwatch audit's Message Batches)"
    )
    return out


#: the table as read at import, and where a deployment (or a test) declares a judge's fitness of its own; :func:`fitness`
#: reads the judge table again too, so a judge added to it at run time counts
JUDGE_FITNESS: dict[str, Fitness] = judge_fitness()


def fitness(judge: str | None) -> Fitness:
    """The table's entry for ``judge`` (a judge id, by its kind: ``evaluator_worker.judges.identity.judge_kind``, or
    a judge name); an unknown (or missing) name is :data:`UNKNOWN`, not fit."""
    kind = judge_kind(judge or "")
    table = judge_fitness() | JUDGE_FITNESS  # the table now (a judge added at run time), the declared overrides
    if kind in table:
        return replace(table[kind], judge=str(judge))
    if not judge:
        return Fitness(
            "?",
            UNKNOWN,
            "no judge name behind these counts (workers older than claimwatch_judge_info, or records without "
            "a judge field): nothing says the judge is fit",
        )
    return Fitness(judge, UNKNOWN, f"not a shipped judge: nothing measured here says it is fit; {_PROFILE}")


def judges_of(d: GateDecision) -> tuple[str, ...]:
    """The judge names behind both releases' counts (sorted; empty when none is known)."""
    return tuple(sorted(set(d.baseline.judges) | set(d.candidate.judges)))


def not_fit(judges: Iterable[str]) -> list[Fitness]:
    """The judges among ``judges`` that are not fit for a rollback decision (no name at all: one ``unknown``)."""
    found = [fitness(j) for j in sorted(set(judges))] or [fitness(None)]
    return [f for f in found if not f.fit_for_rollback]


def line(f: Fitness, note: str = "") -> str:
    """The one line the gate and the report print for a judge (``note`` right after "rollback decision"): named by
    its kind, its judge id at the end."""
    kind = judge_kind(f.judge)
    which = f" (judge_id {f.judge})" if kind != f.judge else ""
    fit = "fit" if f.fit_for_rollback else "not fit"
    return f"judge {kind}: {fit} for a rollback decision{note}: {f.reason}{which}"


def check(judges: Iterable[str], *, trust_judge: bool = False) -> Correction:
    """The line to print per judge not fit for a rollback decision and, unless ``trust_judge``, the veto of a
    ROLLBACK on its counts (no lines and no veto when every judge is fit)."""
    unfit = not_fit(judges)
    if not unfit:
        return Correction(())
    lines = tuple(line(f, " (trusted: --trust-judge)" if trust_judge else "") for f in unfit)
    if trust_judge:
        return Correction(lines)
    names = ", ".join(sorted({judge_kind(f.judge) for f in unfit}))
    veto = (
        f"the rollback is held: judge {names} is not fit for a rollback decision (the judge line below); "
        "decide on its counts anyway with --trust-judge, or give a judge profile from your labels (--profile)"
    )
    return Correction(lines, veto)


def check_decision(d: GateDecision, *, trust_judge: bool = False) -> Correction:
    """:func:`check` on the judges behind ``d``'s counts."""
    return check(judges_of(d), trust_judge=trust_judge)

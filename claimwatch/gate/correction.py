"""The gate's raw rates beside rates corrected for the judge's measured error rates, and a veto.

A judge profile (``claimwatch label`` on your own traffic, then ``claimwatch calibrate LABELS
--profile-out PATH``) holds the judge's sensitivity and specificity with the labelled sample's
uncertainty (:mod:`claimwatch.judge_profile`). ``claimwatch gate --profile PATH`` then prints,
for each release, the raw flagged share beside the share corrected for those error rates
(Rogan-Gladen, posterior interval).

The decision itself stays on the raw counts: with one judge on both releases the corrected
difference is the raw difference divided by Se + Sp - 1, so it has the raw one's sign, and the
raw test's false-rollback rate holds for it. What the profile adds is a **veto**: a ROLLBACK
becomes HOLD when the judge's measured error rates are too uncertain for a decision (Se + Sp - 1
not clearly above 0, or the corrected interval too wide: ``judge_profile.MIN_YOUDEN``,
``MAX_WIDTH``). Only a profile of answers (``claimwatch label --unit answer``), the gate's unit,
can veto; a claim profile's corrected claim rates are printed for reference, with the reason when its error rates
are too uncertain for a decision.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from claimwatch.gate.decision import HOLD, ROLLBACK, GateDecision
from claimwatch.gate.promql import GateError


@dataclass(frozen=True)
class Correction:
    """What a judge profile adds to one decision: report lines, and why a rollback is held (if it is)."""

    lines: tuple[str, ...]
    veto: str | None = None

    def apply(self, d: GateDecision) -> GateDecision:
        """``d`` with a vetoed ROLLBACK turned into HOLD (its reason added)."""
        if self.veto is None or d.action != ROLLBACK:
            return d
        return replace(d, action=HOLD, reasons=d.reasons + (self.veto,))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.2f}%"


def correct(d: GateDecision, profile_path: str | Path) -> Correction:
    """Corrected shares of both releases of ``d`` from the judge profile at ``profile_path``."""
    try:
        from claimwatch.judge_profile import corrected_rate, counts_for, load_profile, positive_for
    except ImportError as exc:  # numpy: the calibration extra
        raise GateError(f"--profile needs numpy ({exc}): pip install 'claimwatch[calibration]'") from exc
    try:
        profile, strata = load_profile(profile_path)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise GateError(f"cannot read the judge profile {str(profile_path)!r}: {exc}") from exc
    answers = profile.get("unit") == "answer"
    unit = "answers" if answers else "claims"
    rates = profile.get("flagged") or {}
    se, sp = (rates.get("sensitivity") or {}).get("estimate"), (rates.get("specificity") or {}).get("estimate")
    lines = [
        f"judge profile {Path(profile_path).name} ({unit}, {profile.get('labelled', '?')} labels; "
        f"Se {se if se is None else round(se, 3)}, Sp {sp if sp is None else round(sp, 3)}): "
        f"flagged {unit}, raw -> corrected for the judge's errors ({round(100 * profile.get('level', 0.95))}% interval)"
    ]
    uncertain: list[str] = []
    for role in ("baseline", "candidate"):
        flagged, n = counts_for(profile, getattr(d, role))
        r = corrected_rate(strata, flagged, n, positive=positive_for(profile))
        c = r.corrected
        lines.append(
            f"  {role:9} {d.labels.get(role, role)}  raw {_pct(r.raw)} -> corrected {_pct(c.estimate)} "
            f"[{_pct(c.low)}, {_pct(c.high)}] of {n} {unit}"
        )
        if not r.decidable and r.why not in uncertain:
            uncertain.append(str(r.why))
    if not answers:
        if uncertain:  # said, though a claim profile holds nothing: its corrected claim rates are not to be trusted
            lines.append("  too uncertain for a decision: " + "; ".join(uncertain))
        lines.append(
            "  (a claim profile: for reference; label answers with `claimwatch label --unit answer` to let "
            "the judge's measured error rates hold a rollback)"
        )
        return Correction(tuple(lines))
    veto = None
    if uncertain:
        veto = (
            "the judge's measured error rates are too uncertain for a rollback decision ("
            + "; ".join(uncertain)
            + "): label more answers, or use a judge that separates them better"
        )
    return Correction(tuple(lines), veto)

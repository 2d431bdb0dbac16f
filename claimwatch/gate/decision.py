"""The decision: promote, hold or roll back a candidate given both releases' answer counts.

- **hold** (exit 2) when a release's counts are inconsistent: more flagged (or contradicted) answers than
  evaluated answers, which no worker counts; the counts are not decided on (a counter reset or a scrape the
  exact counts could not resolve, :mod:`claimwatch.gate.promql`);
- **hold** (exit 2) while either release has fewer than ``min_answers`` evaluated answers;
- **rollback** (exit 1) when the lower bound of the rise of the flagged-answer share
  (candidate - baseline) exceeds ``max_increase``: worse by more than the tolerance, and
  not by chance (:mod:`claimwatch.stats.answer_share`; at most ``alpha`` false rollbacks);
- **hold** (exit 2) when the share rose by more than the tolerance without significance;
- **promote** (exit 0) otherwise.

Both releases are compared on the counts of one judge (:mod:`claimwatch.gate.same_judge`): when the counts
come from several judges, on the judge both releases have (the others' answers left out, said in the report), and
**hold** (exit 2) when they have no judge in common. Where the judge shares a model family with a release's
answering model (the ``model`` slice), the reasons say so per model (:mod:`claimwatch.gate.same_family`).

"Flagged" is "at risk" (the calibrated answer risk, :mod:`evaluator_worker.judges.risk`) when both releases
were counted so, else the any-claim rule for both (:func:`claimwatch.gate.counts.common_rule`); the report
names the rule.

Every decision states its power: the smallest rise it would have caught with probability
``power`` at the current counts (not computable while a release has no evaluated answers), and on
a HOLD roughly how many more answers would settle it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from claimwatch.gate.by_type import changes, headline
from claimwatch.gate.counts import ReleaseCounts, common_rule
from claimwatch.gate.same_family import same_family_notes
from claimwatch.gate.same_judge import match_judges
from claimwatch.stats import power
from claimwatch.stats.answer_share import FIXED, ShareComparison, TestConfig, compare_shares

PROMOTE, HOLD, ROLLBACK = "promote", "hold", "rollback"
EXIT_CODES = {PROMOTE: 0, ROLLBACK: 1, HOLD: 2}
DEFAULT_MIN_ANSWERS = 50


@dataclass(frozen=True)
class GateConfig:
    """The test and the evidence it needs."""

    test: TestConfig = field(default_factory=TestConfig)
    min_answers: int = DEFAULT_MIN_ANSWERS

    def __post_init__(self) -> None:
        if self.min_answers < 1:
            raise ValueError("min_answers must be >= 1")


@dataclass(frozen=True)
class Power:
    """What the decision could see: detectable rise now, and answers that would settle a HOLD."""

    min_detectable: float  # smallest rise caught with probability cfg.power at these counts (inf: not computable)
    more_candidate: int | None = None  # more evaluated answers needed (None: nothing to settle / out of reach)
    more_baseline: int | None = None


@dataclass(frozen=True)
class GateDecision:
    """The gate's verdict, its numbers and the reasoning in plain words."""

    action: str
    baseline: ReleaseCounts
    candidate: ReleaseCounts
    comparison: ShareComparison
    reasons: tuple[str, ...]
    config: GateConfig
    power: Power
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.action]

    def render(self) -> str:
        """Human-readable report (what ``claimwatch gate`` prints)."""
        t = self.config.test
        b_name = self.labels.get("baseline", "baseline")
        c_name = self.labels.get("candidate", "candidate")
        width = max(len(b_name), len(c_name))
        lines = [f"claimwatch gate: {self.action.upper()} (exit {self.exit_code})"]
        for role, name, c in (("baseline ", b_name, self.baseline), ("candidate", c_name, self.candidate)):
            lines.append(
                f"  {role} {name:<{width}}  {c.answers:>6} answers  flagged {_pct(c.flagged_share)}"
                f"  contradicted {_pct(c.contradicted_share)}  ({c.claims.judged} judged claims, {c.claims.error} errors)"
            )
        rules = sorted({self.baseline.flag_rule, self.candidate.flag_rule} - {"none"})
        if rules:
            lines.append("  flagged = " + _FLAG_RULE_TEXT.get(rules[0] if len(rules) == 1 else "mixed", rules[0]))
        cmp = self.comparison
        test = "one look (fixed horizon)" if t.method == FIXED else "any number of looks (sequential)"
        lines.append(
            f"  flagged answers  change {_pts(cmp.difference)}, bounds [{_pts(cmp.lower)}, {_pts(cmp.upper)}]"
            f"  tolerance {_pts(t.max_increase)}; at most {t.alpha:g} false rollbacks over {test}"
        )
        lines.append("  power: " + _power_text(self.power.min_detectable, t.power))
        lines += [f"  - {reason}" for reason in self.reasons]
        return "\n".join(lines)


#: what "flagged" meant for these counts (ReleaseCounts.flag_rule)
_FLAG_RULE_TEXT = {
    "at_risk": "at risk (calibrated answer risk >= the judge's threshold; claimwatch_answers_at_risk_total)",
    "any_claim": "any UNSUPPORTED or CONTRADICTED claim (counts without the answer risk: older worker or records)",
    "mixed": "at risk where counted, any flagged claim for older workers or records (the two rules are mixed)",
}


def _pct(x: float) -> str:
    return f"{x * 100:6.2f}%"


def _pts(x: float) -> str:
    return "n/a" if math.isinf(x) else f"{x * 100:+.2f} pts"


def _power_text(min_detectable: float, power: float) -> str:
    """The power line: the smallest rise caught, or why none can be named."""
    if not math.isfinite(min_detectable):
        return "not computable: a release has no evaluated answers"
    if min_detectable >= 1:
        return f"no rise, even to every answer flagged, is caught with probability {power:g} at these counts"
    return f"a rise of {_pts(min_detectable)} or more is caught with probability {power:g} at these counts"


def _power(
    baseline: ReleaseCounts, candidate: ReleaseCounts, cmp: ShareComparison, cfg: GateConfig, action: str
) -> Power:
    nc, nb = candidate.answers, baseline.answers
    p = min(1.0, (candidate.flagged + baseline.flagged) / (nc + nb)) if nc + nb else 0.0
    mde = power.min_detectable_increase(p, nc, nb, cfg.test)  # inf while a release has no answers
    if action != HOLD or _inconsistent(baseline, candidate):
        return Power(mde)
    if nc < cfg.min_answers or nb < cfg.min_answers:
        return Power(mde, max(0, cfg.min_answers - nc), max(0, cfg.min_answers - nb))
    k = power.scale_to_settle(candidate.flagged, nc, baseline.flagged, nb, cfg.test)
    if k is None:
        return Power(mde)
    # a HOLD is not settled at these counts: at least one more answer on each side, never "0 more"
    return Power(mde, max(1, math.ceil(nc * (k - 1))), max(1, math.ceil(nb * (k - 1))))


def _driving_class(baseline: ReleaseCounts, candidate: ReleaseCounts) -> list[str]:
    """The failure class whose share of answers rose most (what the rollback is about), when the counts have them."""
    line = headline(changes(baseline.types, candidate.types))
    return [f"the kind of failure that rose most: {line}"] if line else []


def decide(
    baseline: ReleaseCounts,
    candidate: ReleaseCounts,
    config: GateConfig | None = None,
    labels: dict[str, str] | None = None,
) -> GateDecision:
    """Promote, hold or roll back ``candidate`` given ``baseline`` (see the module docstring)."""
    cfg = config or GateConfig()
    t = cfg.test
    match = match_judges(baseline, candidate)  # like with like: the counts of one judge
    baseline, candidate = match.baseline, match.candidate
    partly = [role for role, c in (("baseline", baseline), ("candidate", candidate)) if c.flag_rule == "mixed"]
    baseline, candidate = common_rule(baseline, candidate)
    notes = (
        [
            f"flagged by the any-claim rule for both releases: part of the {' and the '.join(partly)}'s answers were "
            "counted without the answer risk (workers without claimwatch_answers_at_risk_total in the window, e.g. a "
            "rolling upgrade of the workers, or older records), so an at-risk share would leave them out"
        ]
        if partly
        else []
    ) + list(match.notes)
    notes += same_family_notes(baseline, candidate)  # a judge of the generator's family flatters it
    cmp = compare_shares(candidate.flagged, candidate.answers, baseline.flagged, baseline.answers, t)
    if match.hold:  # no judge in common: nothing comparable, and no number of answers of these judges settles it
        nc, nb = candidate.answers, baseline.answers
        p = min(1.0, (candidate.flagged + baseline.flagged) / (nc + nb)) if nc + nb else 0.0
        mde = power.min_detectable_increase(p, nc, nb, t)
        return GateDecision(HOLD, baseline, candidate, cmp, (match.hold, *notes), cfg, Power(mde), dict(labels or {}))

    def done(action: str, reasons: list[str]) -> GateDecision:
        return GateDecision(
            action,
            baseline,
            candidate,
            cmp,
            tuple(reasons + notes),
            cfg,
            _power(baseline, candidate, cmp, cfg, action),
            dict(labels or {}),
        )

    inconsistent = _inconsistent(baseline, candidate)
    if inconsistent:
        return done(
            HOLD,
            [
                "inconsistent counts, not decided on: "
                + "; ".join(inconsistent)
                + " (a worker restart or a scrape gap the exact counts could not resolve, or counts that are not "
                "the worker's; check the workers' counters over the window, or narrow it to after the restart)"
            ],
        )
    thin = [
        f"{role} has {c.answers} evaluated answers, fewer than the {cfg.min_answers} needed"
        for role, c in (("baseline", baseline), ("candidate", candidate))
        if c.answers < cfg.min_answers
    ]
    if thin:
        return _with_more(done(HOLD, ["not enough evidence: " + "; ".join(thin) + " (widen the window or wait)"]))
    if cmp.rolls_back:
        return done(
            ROLLBACK,
            [
                f"flagged answers rose from {_pct(cmp.baseline_rate).strip()} to {_pct(cmp.candidate_rate).strip()}: "
                f"even the lower bound of the rise ({_pts(cmp.lower)}) exceeds the tolerance ({_pts(t.max_increase)})",
                *_driving_class(baseline, candidate),
            ],
        )
    if cmp.difference > t.max_increase:
        return _with_more(
            done(
                HOLD,
                [
                    f"flagged answers look worse ({_pts(cmp.difference)}, above the tolerance) but not significantly "
                    f"(lower bound {_pts(cmp.lower)}): collect more answers"
                ],
            )
        )
    return done(
        PROMOTE,
        [
            f"the flagged-answer share did not rise by more than the tolerance ({_pts(t.max_increase)}): "
            f"{_pts(cmp.difference)}"
        ],
    )


def _inconsistent(baseline: ReleaseCounts, candidate: ReleaseCounts) -> list[str]:
    """What no worker counts: more flagged or contradicted answers than evaluated answers (empty: consistent)."""
    return [
        f"the {role} has {n} {what} answers of {c.answers} evaluated answers"
        for role, c in (("baseline", baseline), ("candidate", candidate))
        for what, n in (("flagged", c.flagged), ("contradicted", c.contradicted))
        if n > c.answers
    ]


def _with_more(d: GateDecision) -> GateDecision:
    """Add the "how many more answers" sentence to a HOLD."""
    more_c, more_b = d.power.more_candidate, d.power.more_baseline
    if d.candidate.answers < d.config.min_answers or d.baseline.answers < d.config.min_answers:
        sentence = f"about {more_c} more evaluated candidate answers (and {more_b} baseline) reach the minimum"
    elif more_c is None:
        sentence = "no feasible number of answers settles a difference this close to the tolerance"
    else:
        sentence = (
            f"about {more_c} more evaluated candidate answers (and {more_b} baseline) would settle it"
            " if the difference is real and stays"
        )
    return GateDecision(
        d.action, d.baseline, d.candidate, d.comparison, d.reasons + (sentence,), d.config, d.power, d.labels
    )

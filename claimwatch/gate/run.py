"""``claimwatch gate``: one look, or ``--follow`` looks every few minutes over a rollout.

One look reads both releases over ``window`` and decides. Following, the window's start
stays where it was at the first look and its end moves with the clock, so each look sees
every answer of the previous ones plus the new ones: the data the sequential test is valid
for (its false-rollback rate holds over all looks). It stops at the first rollback (exit 1),
or after ``duration`` with the last look's decision. If Prometheus cannot be read the gate
holds (exit 2): no promotion without evidence.

Without a judge ``profile``, every look also reads which judges made the counts
(``claimwatch_judge_info``) and says when one is not fit for a rollback decision; a ROLLBACK on such a
judge's counts is held (exit 2) unless ``trust_judge`` (:mod:`claimwatch.gate.judge_fitness`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

from claimwatch.gate.correction import correct
from claimwatch.gate.counts import ReleaseCounts
from claimwatch.gate.decision import EXIT_CODES, HOLD, ROLLBACK, GateConfig, GateDecision, decide
from claimwatch.gate.judge_fitness import check_decision
from claimwatch.gate.prometheus import Source, fetch_counts
from claimwatch.gate.promql import GateError, duration_seconds
from claimwatch.stats.answer_share import SEQUENTIAL

Fetch = Callable[[Source, str, str], ReleaseCounts]


@dataclass(frozen=True)
class Advice:
    """What the sampling recommendation needs: a target time and the candidate's current sampling ratio."""

    target_s: float = 3600.0
    sampling_ratio: float | None = None  # the collector's ratio for the candidate now, if known

    def __post_init__(self) -> None:
        if not (math.isfinite(self.target_s) and self.target_s > 0):
            raise ValueError(f"the target time must be longer than 0 s, not {self.target_s!r}")
        ratio = self.sampling_ratio
        if ratio is not None and not (math.isfinite(ratio) and 0 < ratio <= 1):
            raise ValueError(f"the sampling ratio must be in (0, 1], not {ratio!r}")


def sampling_advice(d: GateDecision, window_s: float, advice: Advice) -> list[str]:
    """How to get the answers a HOLD needs within ``advice.target_s`` (empty when none are needed).

    The candidate's pace is its answers over the whole window; a candidate born inside the window
    is faster than that, so the advice errs towards more sampling, not less.
    """
    more = d.power.more_candidate
    if d.action != HOLD or not more:
        return []
    candidate = d.labels.get("candidate", "<candidate>")
    pace = d.candidate.answers / window_s if window_s > 0 else 0.0  # evaluated answers per second
    target_min = advice.target_s / 60
    if pace > 0 and more / pace <= advice.target_s:
        return [
            f"at the current pace ({pace * 60:.1f} answers/min) the candidate gets there in about "
            f"{more / pace / 60:.0f} min, within the {target_min:g} min target"
        ]
    factor = math.inf if pace == 0 else more / advice.target_s / pace
    line = (
        f"to get there within {target_min:g} min the candidate needs {more / advice.target_s * 60:.1f} "
        f"judged answers/min" + ("" if pace == 0 else f", {factor:.1f}x its current {pace * 60:.1f}")
    )
    ratio = advice.sampling_ratio
    if ratio is not None and factor * ratio <= 1:
        line += (
            f": raise its sampling ratio from {ratio:g} to {min(1.0, factor * ratio):.2g} "
            f"(CLAIMWATCH_SLICE_RATIOS='{{\"release={candidate}\": {min(1.0, factor * ratio):.2g}}}')"
        )
    else:
        line += (
            f": keep every candidate answer (CLAIMWATCH_KEEP_RELEASES='[\"{candidate}\"]')"
            + ("" if ratio is None else " and send the candidate more traffic")
            + ", or wait longer"
        )
    return [line]


def look(
    source: Source, baseline: str, candidate: str, window: str, config: GateConfig, fetch: Fetch = fetch_counts
) -> GateDecision:
    """One read of both releases and the decision (raises :class:`GateError`)."""
    base = fetch(source, baseline, window)
    cand = fetch(source, candidate, window)
    return decide(base, cand, config, labels={"baseline": baseline, "candidate": candidate})


def _report(d: GateDecision, source: Source, window: str, advice: Advice) -> str:
    b, c = d.labels["baseline"], d.labels["candidate"]
    header = f"window {window}, {source.label} {b!r} (baseline) vs {c!r} (candidate)"
    if source.extra_selector:
        header += f", where {source.extra_selector}"
    first, _, rest = d.render().partition("\n")
    lines = [first, f"  {header}", rest]
    lines += [f"  - {line}" for line in sampling_advice(d, duration_seconds(window), advice)]
    return "\n".join(lines)


def run_gate(
    source: Source,
    baseline: str,
    candidate: str,
    *,
    window: str = "1h",
    config: GateConfig | None = None,
    advice: Advice | None = None,
    fetch: Fetch = fetch_counts,
    profile: str | None = None,
    trust_judge: bool = False,
) -> tuple[int, str]:
    """One look: ``(exit code, report)``; 0 promote, 1 rollback, 2 hold. With a judge ``profile``, the corrected
    shares are printed and a rollback the judge's measured error rates cannot support is held
    (:mod:`claimwatch.gate.correction`). Without one, a judge behind the counts that is not fit for a rollback
    decision is named, and its rollback held unless ``trust_judge`` (:mod:`claimwatch.gate.judge_fitness`)."""
    try:
        d = look(source, baseline, candidate, window, config or GateConfig(), fetch)
        correction = correct(d, profile) if profile else check_decision(d, trust_judge=trust_judge)
    except GateError as exc:
        return EXIT_CODES[HOLD], f"claimwatch gate: HOLD (exit 2)\n  - could not read counts: {exc}"
    d = correction.apply(d)
    text = _report(d, source, window, advice or Advice())
    if correction.lines:
        text += "\n  " + "\n  ".join(correction.lines)
    return d.exit_code, text


@dataclass(frozen=True)
class Follow:
    """``--follow``: look every ``every_s`` seconds for ``duration_s`` seconds."""

    every_s: float = 300.0
    duration_s: float = 3600.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.every_s) and self.every_s > 0):
            raise ValueError(f"the time between looks must be longer than 0 s, not {self.every_s!r}")
        if not (math.isfinite(self.duration_s) and self.duration_s >= 0):
            raise ValueError(f"the duration must be 0 s or more, not {self.duration_s!r}")


def follow(
    source: Source,
    baseline: str,
    candidate: str,
    *,
    window: str = "1h",
    config: GateConfig | None = None,
    plan: Follow | None = None,
    advice: Advice | None = None,
    fetch: Fetch = fetch_counts,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    emit: Callable[[str], None] = print,
    profile: str | None = None,
    trust_judge: bool = False,
) -> int:
    """Repeated looks on growing data; the exit code of the first rollback or of the last look."""
    cfg = config or GateConfig()
    if cfg.test.method != SEQUENTIAL:
        raise ValueError("--follow needs the sequential test: the fixed-horizon test is valid for one look only")
    plan = plan or Follow()
    start = clock()
    base_s = duration_seconds(window)
    code = EXIT_CODES[HOLD]
    n = 0
    while True:
        n += 1
        elapsed = clock() - start
        grown = f"{int(round(base_s + elapsed))}s"
        code, text = run_gate(
            source,
            baseline,
            candidate,
            window=grown,
            config=cfg,
            advice=advice,
            fetch=fetch,
            profile=profile,
            trust_judge=trust_judge,
        )
        emit(f"look {n} at +{elapsed:.0f}s\n{text}")
        if code == EXIT_CODES[ROLLBACK] or elapsed + plan.every_s > plan.duration_s:
            return code
        sleep(plan.every_s)

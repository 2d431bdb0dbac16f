"""The judge's error rates on your own traffic, and hallucination rates corrected for them.

A labelled sample from ``claimwatch label`` is stratified by the judge's verdict (and confidence
band, and optionally a slice such as the route): every stratum ``h`` has a population count
``N_h`` (claims of the labelled population in it) and ``n_h`` labelled claims, ``x_h`` of them
labelled flagged (UNSUPPORTED or CONTRADICTED) by a human. Because each stratum holds one judge
verdict, ``x_h / n_h`` estimates P(truly flagged | stratum) directly, and the strata are
reweighted by their population shares ``W_h = N_h / N``:

- sensitivity  Se = P(judge flags | truly flagged)     = sum_{h flagged} W_h p_h / sum_h W_h p_h
- specificity  Sp = P(judge passes | truly supported)  = sum_{h passed} W_h (1-p_h) / sum_h W_h (1-p_h)

(the same per verdict, one verdict against the rest). A deployment whose judge flags a share
``q`` of its claims has a true flagged rate ``pi = (q + Sp - 1) / (Se + Sp - 1)`` (Rogan-Gladen),
valid when the judge's error rates carry over from the labelled population to the one being
measured (same judge, same kind of traffic).

**Interval** (what the simulation in ``tests/unit/test_judge_profile.py`` measures): a posterior
by Monte Carlo with Jeffreys priors, ``p_h ~ Beta(x_h + 1/2, n_h - x_h + 1/2)``, stratum shares
``~ Dirichlet(N_h + 1/2)``, the observed share ``q ~ Beta(k + 1/2, m - k + 1/2)``, and the
central ``level`` interval of ``pi`` clipped to [0, 1]. It carries the uncertainty of the labels
and of the observed counts. Coverage at nominal 95% over 100-1,000 labels, Se/Sp 0.6-0.95 and
true rates 2-40% is in ``docs/labeling.md`` (every cell >= 93%).

**Too uncertain for a decision** when the lower bound of Se + Sp - 1 is below ``min_youden``
(0.1 by default: the judge barely separates the classes, the correction divides by a number
near 0) or the corrected interval is wider than ``max_width`` (0.2 by default).

The same holds for whole answers (``claimwatch label --unit answer``: the judge calls an answer hallucinated
when one of its claims is flagged, a human labels it faithful/hallucinated): the profile then has
``"unit": "answer"`` and corrects the share of flagged answers, the release gate's unit.

Assumptions it cannot check: labels are right (one labeller, no adjudication), claims are
independent (claims of one answer are not: intervals on claims are somewhat optimistic), and
the judge's error rates are the same in the labelled and the measured traffic.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from claimwatch.calibration import ANSWER_LABELS, LABELS, DataError, read_jsonl
from claimwatch.gate.counts import ReleaseCounts, latest_per_trace

__all__ = [
    "FLAGGED_VERDICTS",
    "Stratum",
    "Interval",
    "ErrorRates",
    "CorrectedRate",
    "strata_from_labels",
    "error_rates",
    "corrected_rate",
    "corrected_difference",
    "fit_profile",
    "load_profile",
    "simulate_coverage",
    "SimResult",
    "claim_counts",
    "answer_counts",
    "release_counts",
    "counts_for",
    "positive_for",
    "next_stratum",
    "label_next",
    "main",
]

FLAGGED_VERDICTS = ("UNSUPPORTED", "CONTRADICTED")
#: ``--unit answer``: the judge's call and the human label of a whole answer
HALLUCINATED = ("hallucinated",)
PROFILE_KIND = "claimwatch.judge_profile"
DRAWS = 4000
#: the Beta/Dirichlet prior count added to every cell
PRIOR = 0.5
#: a decision needs the lower bound of Se + Sp - 1 above this ...
MIN_YOUDEN = 0.1
#: ... and a corrected interval no wider than this
MAX_WIDTH = 0.2
#: a slice gets its own profile when it has at least this many labels on each side (judge flagged / passed)
MIN_SLICE_LABELS = 30


@dataclass(frozen=True)
class Stratum:
    """One sampling stratum: a judge verdict (and band, slice), its population count and its human labels."""

    key: str
    judge_verdict: str
    population: int
    labels: Mapping[str, int] = field(default_factory=dict)  # human label -> count
    slice: str | None = None

    @property
    def labelled(self) -> int:
        return sum(self.labels.values())

    def truly(self, positive: Sequence[str]) -> int:
        return sum(self.labels.get(v, 0) for v in positive)


@dataclass(frozen=True)
class Interval:
    estimate: float | None
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low

    def to_json(self) -> dict[str, float | None]:
        return {
            "estimate": None if self.estimate is None else round(float(self.estimate), 4),
            "low": round(float(self.low), 4),
            "high": round(float(self.high), 4),
        }


@dataclass(frozen=True)
class ErrorRates:
    """Se, Sp (and Se + Sp - 1) of the judge for one positive class, with posterior intervals."""

    positive: tuple[str, ...]
    sensitivity: Interval
    specificity: Interval
    youden: Interval
    rate: Interval  # the true positive rate of the labelled population (stratified estimate)
    labelled: int
    level: float

    def to_json(self) -> dict[str, Any]:
        return {
            "positive": list(self.positive),
            "labelled": self.labelled,
            "level": self.level,
            "sensitivity": self.sensitivity.to_json(),
            "specificity": self.specificity.to_json(),
            "youden": self.youden.to_json(),
            "population_rate": self.rate.to_json(),
        }


@dataclass(frozen=True)
class CorrectedRate:
    """A raw judge rate beside the rate corrected for the judge's measured error rates."""

    raw: float | None
    judged: int
    corrected: Interval
    youden_low: float
    decidable: bool
    why: str | None
    level: float

    def to_json(self) -> dict[str, Any]:
        return {
            "raw": None if self.raw is None else round(self.raw, 4),
            "judged": self.judged,
            "corrected": self.corrected.to_json(),
            "youden_low": round(self.youden_low, 4),
            "decidable": self.decidable,
            "too_uncertain": self.why,
            "level": self.level,
        }

    def to_text(self) -> str:
        def pct(x: float | None) -> str:
            return "n/a" if x is None else f"{100 * x:.1f}%"

        c = self.corrected
        line = (
            f"raw {pct(self.raw)} of {self.judged} judged claims -> corrected {pct(c.estimate)} "
            f"[{pct(c.low)}, {pct(c.high)}] ({self.level:.0%})"
        )
        return line + ("" if self.decidable else f"  TOO UNCERTAIN FOR A DECISION: {self.why}")


# --------------------------------------------------------------------------- posterior draws


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _draws(
    strata: Sequence[Stratum], positive: Sequence[str], rng: np.random.Generator, draws: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posterior draws of (Se, Sp, true rate of the labelled population), each of shape (draws,)."""
    pops = np.array([max(s.population, 0) for s in strata], dtype=float)
    weights = rng.dirichlet(pops + PRIOR, size=draws)  # (draws, H)
    x = np.array([s.truly(positive) for s in strata], dtype=float)
    n = np.array([s.labelled for s in strata], dtype=float)
    p = rng.beta(x + PRIOR, n - x + PRIOR, size=(draws, len(strata)))
    judged_pos = np.array([s.judge_verdict in positive for s in strata])
    pos_mass = weights * p
    neg_mass = weights * (1.0 - p)
    se = pos_mass[:, judged_pos].sum(axis=1) / pos_mass.sum(axis=1)
    sp = neg_mass[:, ~judged_pos].sum(axis=1) / neg_mass.sum(axis=1)
    return se, sp, pos_mass.sum(axis=1)


def _plugin(strata: Sequence[Stratum], positive: Sequence[str]) -> tuple[float | None, float | None, float | None]:
    """Point estimates (Se, Sp, rate) from x/n and N/N (strata without labels get p = 1/2)."""
    total = sum(s.population for s in strata)
    if total <= 0:
        return None, None, None
    pos = neg = pos_j = neg_p = 0.0
    for s in strata:
        w = s.population / total
        p = s.truly(positive) / s.labelled if s.labelled else 0.5
        pos += w * p
        neg += w * (1 - p)
        if s.judge_verdict in positive:
            pos_j += w * p
        else:
            neg_p += w * (1 - p)
    return (pos_j / pos if pos else None), (neg_p / neg if neg else None), pos


def _interval(est: float | None, sample: np.ndarray, level: float) -> Interval:
    a = (1 - level) / 2
    lo, hi = np.quantile(sample, [a, 1 - a])
    return Interval(est, float(lo), float(hi))


def error_rates(
    strata: Sequence[Stratum],
    positive: Sequence[str] = FLAGGED_VERDICTS,
    *,
    level: float = 0.95,
    draws: int = DRAWS,
    seed: int | np.random.Generator | None = 0,
) -> ErrorRates:
    """Se, Sp, Se + Sp - 1 and the labelled population's true rate for ``positive``, with intervals."""
    se, sp, rate = _draws(strata, positive, _rng(seed), draws)
    se_hat, sp_hat, rate_hat = _plugin(strata, positive)
    j_hat = None if se_hat is None or sp_hat is None else se_hat + sp_hat - 1
    return ErrorRates(
        tuple(positive),
        _interval(se_hat, se, level),
        _interval(sp_hat, sp, level),
        _interval(j_hat, se + sp - 1, level),
        _interval(rate_hat, rate, level),
        sum(s.labelled for s in strata),
        level,
    )


def _rogan_gladen(q: np.ndarray, se: np.ndarray, sp: np.ndarray) -> np.ndarray:
    j = se + sp - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        pi = np.where(j > 0, (q + sp - 1) / j, np.nan)
    return np.clip(pi, 0.0, 1.0)


def _summarise(
    pi: np.ndarray, point: float | None, youden: np.ndarray, level: float, min_youden: float, max_width: float
) -> tuple[Interval, float, bool, str | None]:
    a = (1 - level) / 2
    undefined = np.isnan(pi).mean()
    j_low = float(np.quantile(youden, a))
    if undefined > a:  # the judge may be no better than chance: nothing can be said
        interval = Interval(point, 0.0, 1.0)
    else:
        interval = _interval(point, pi[~np.isnan(pi)], level)
    why = None
    if j_low <= min_youden:
        why = f"the judge's Se + Sp - 1 may be as low as {j_low:.2f} (needs > {min_youden:g}): label more"
    elif interval.width > max_width:
        why = f"the corrected interval is {interval.width:.2f} wide (at most {max_width:g}): label more"
    return interval, j_low, why is None, why


def corrected_rate(
    strata: Sequence[Stratum],
    flagged: int,
    judged: int,
    *,
    positive: Sequence[str] = FLAGGED_VERDICTS,
    level: float = 0.95,
    draws: int = DRAWS,
    seed: int | np.random.Generator | None = 0,
    min_youden: float = MIN_YOUDEN,
    max_width: float = MAX_WIDTH,
) -> CorrectedRate:
    """The true share of ``positive`` claims in a deployment where the judge said ``positive`` on ``flagged`` of
    ``judged`` claims, corrected for the judge's error rates measured on ``strata`` (Rogan-Gladen, posterior interval)."""
    rng = _rng(seed)
    se, sp, _ = _draws(strata, positive, rng, draws)
    q = rng.beta(flagged + PRIOR, judged - flagged + PRIOR, size=draws)
    se_hat, sp_hat, _ = _plugin(strata, positive)
    raw = flagged / judged if judged else None
    point = None
    if raw is not None and se_hat is not None and sp_hat is not None and se_hat + sp_hat - 1 > 0:
        point = min(1.0, max(0.0, (raw + sp_hat - 1) / (se_hat + sp_hat - 1)))
    interval, j_low, ok, why = _summarise(_rogan_gladen(q, se, sp), point, se + sp - 1, level, min_youden, max_width)
    return CorrectedRate(raw, judged, interval, j_low, ok, why, level)


def corrected_difference(
    strata: Sequence[Stratum],
    candidate: tuple[int, int],
    baseline: tuple[int, int],
    *,
    positive: Sequence[str] = FLAGGED_VERDICTS,
    level: float = 0.95,
    draws: int = DRAWS,
    seed: int | np.random.Generator | None = 0,
) -> Interval:
    """Candidate minus baseline true flagged rate, ``(flagged, judged)`` each, with one judge's error rates.

    With the same judge on both releases the difference is ``(q_c - q_b) / (Se + Sp - 1)``: its sign is the raw
    difference's (the gate's test on raw counts stays valid); the correction only rescales it, so a tolerance in
    true-rate units is ``raw tolerance / (Se + Sp - 1)``.
    """
    rng = _rng(seed)
    se, sp, _ = _draws(strata, positive, rng, draws)
    qc = rng.beta(candidate[0] + PRIOR, candidate[1] - candidate[0] + PRIOR, size=draws)
    qb = rng.beta(baseline[0] + PRIOR, baseline[1] - baseline[0] + PRIOR, size=draws)
    d = _rogan_gladen(qc, se, sp) - _rogan_gladen(qb, se, sp)
    d = d[~np.isnan(d)]
    se_hat, sp_hat, _ = _plugin(strata, positive)
    point = None
    if se_hat is not None and sp_hat is not None and se_hat + sp_hat - 1 > 0 and candidate[1] and baseline[1]:
        point = (candidate[0] / candidate[1] - baseline[0] / baseline[1]) / (se_hat + sp_hat - 1)
    if len(d) < draws * (1 - level) / 2:
        return Interval(point, -1.0, 1.0)
    return _interval(point, d, level)


# --------------------------------------------------------------------------- labels file -> strata -> profile


def _read_labels(path: str | Path) -> list[dict[str, Any]]:
    p = Path(path)
    out = []
    for lineno, obj in read_jsonl(p):
        labels = ANSWER_LABELS if obj.get("unit") == "answer" else LABELS
        if obj.get("label") not in labels:
            raise DataError(p, lineno, f"expected a labelled item with label one of {', '.join(labels)}")
        for key in ("stratum", "judge_verdict"):
            if not isinstance(obj.get(key), str):
                raise DataError(p, lineno, f"field {key!r} missing: is this a file written by `claimwatch label`?")
        if not isinstance(obj.get("stratum_population"), int):
            raise DataError(p, lineno, "field 'stratum_population' must be an integer")
        out.append(obj)
    if len({r.get("unit", "claim") for r in out}) > 1:
        raise DataError(p, 0, "claims and answers mixed in one labels file")
    return out


def strata_from_labels(
    records: Iterable[Mapping[str, Any]],
    *,
    slice_value: str | None = None,
    plan_strata: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[Stratum]:
    """Strata (population counts and label counts) from label records; ``slice_value`` keeps one slice's strata.

    ``plan_strata`` (the ``strata`` of the labelling plan) adds the strata nobody labelled yet: they still weigh
    in with their population share, and an unlabelled stratum contributes only its prior (wide intervals).
    """
    acc: dict[str, dict[str, Any]] = {}
    for key, st in (plan_strata or {}).items():
        if slice_value is None or st.get("slice") == slice_value:
            acc[key] = {
                "verdict": st["judge_verdict"],
                "population": int(st["population"]),
                "labels": {},
                "slice": st.get("slice"),
            }
    for r in records:
        if slice_value is not None and r.get("stratum_slice") != slice_value:
            continue
        s = acc.setdefault(
            r["stratum"],
            {
                "verdict": r["judge_verdict"],
                "population": r["stratum_population"],
                "labels": {},
                "slice": r.get("stratum_slice"),
            },
        )
        s["population"] = max(s["population"], int(r["stratum_population"]))
        s["labels"][r["label"]] = s["labels"].get(r["label"], 0) + 1
    return [Stratum(k, v["verdict"], v["population"], v["labels"], v["slice"]) for k, v in sorted(acc.items())]


def _profile_block(strata: Sequence[Stratum], level: float, seed: int, unit: str = "claim") -> dict[str, Any]:
    if unit == "answer":
        flagged = error_rates(strata, HALLUCINATED, level=level, seed=seed)
        return {"labelled": sum(s.labelled for s in strata), "flagged": flagged.to_json(), "per_verdict": {}}
    flagged = error_rates(strata, FLAGGED_VERDICTS, level=level, seed=seed)
    per_verdict = {v: error_rates(strata, (v,), level=level, seed=seed).to_json() for v in LABELS}
    return {"labelled": sum(s.labelled for s in strata), "flagged": flagged.to_json(), "per_verdict": per_verdict}


def positive_for(profile: Mapping[str, Any]) -> tuple[str, ...]:
    """The positive class of a profile: flagged claims, or hallucinated answers (``unit`` answer)."""
    return HALLUCINATED if profile.get("unit") == "answer" else FLAGGED_VERDICTS


def fit_profile(
    records: Sequence[Mapping[str, Any]],
    *,
    level: float = 0.95,
    fitted_on: str = "",
    seed: int = 0,
    min_slice_labels: int = MIN_SLICE_LABELS,
    plan_strata: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The judge profile (JSON-ready) from ``claimwatch label`` records (and the plan's strata, so that strata with
    no label yet keep their population share): Se/Sp overall, per verdict, per slice with enough labels."""
    strata = strata_from_labels(records, plan_strata=plan_strata)
    if not strata:
        raise ValueError("no labelled claims")
    unit = "answer" if any(r.get("unit") == "answer" for r in records) else "claim"
    judges = sorted({str(r.get("judge") or "?") for r in records})
    profile: dict[str, Any] = {
        "kind": PROFILE_KIND,
        "version": 1,
        "unit": unit,
        "judge": judges[0] if len(judges) == 1 else judges,
        "fitted_on": fitted_on,
        "created_at": round(time.time(), 3),
        "level": level,
        "positive": (
            "hallucinated answer = at least one claim not supported (human label vs judge call)"
            if unit == "answer"
            else "flagged = UNSUPPORTED or CONTRADICTED (human label vs judge verdict)"
        ),
        "method": "stratified posterior (Jeffreys Beta per stratum, Dirichlet stratum shares), Rogan-Gladen",
        "decision": {"min_youden": MIN_YOUDEN, "max_width": MAX_WIDTH},
        "strata": [
            {
                "stratum": s.key,
                "judge_verdict": s.judge_verdict,
                "slice": s.slice,
                "population": s.population,
                "labelled": s.labelled,
                "labels": dict(s.labels),
            }
            for s in strata
        ],
        **_profile_block(strata, level, seed, unit),
        "slices": {},
    }
    for value in sorted({s.slice for s in strata if s.slice is not None}):
        sub = [s for s in strata if s.slice == value]
        flagged_side = sum(s.labelled for s in sub if s.judge_verdict in positive_for(profile))
        if flagged_side >= min_slice_labels and sum(s.labelled for s in sub) - flagged_side >= min_slice_labels:
            profile["slices"][value] = _profile_block(sub, level, seed, unit)
    return profile


def load_profile(path: str | Path) -> tuple[dict[str, Any], list[Stratum]]:
    """A judge profile file and its strata (what :func:`corrected_rate` needs)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("kind") != PROFILE_KIND:
        raise ValueError(f"{path}: not a judge profile (kind {data.get('kind')!r})")
    strata = [
        Stratum(s["stratum"], s["judge_verdict"], int(s["population"]), dict(s["labels"]), s.get("slice"))
        for s in data["strata"]
    ]
    return data, strata


def profile_text(profile: Mapping[str, Any]) -> str:
    """A readable summary of a profile: Se/Sp with intervals, overall, per verdict and per slice."""

    def rng(d: Mapping[str, Any]) -> str:
        e = d["estimate"]
        return f"{'n/a' if e is None else f'{e:.3f}'} [{d['low']:.3f}, {d['high']:.3f}]"

    answers = profile.get("unit") == "answer"
    positive = "hallucinated answers" if answers else "flagged (UNSUPPORTED|CONTRADICTED)"
    classes = ANSWER_LABELS if answers else LABELS

    def block(b: Mapping[str, Any], indent: str = "") -> list[str]:
        f = b["flagged"]
        out = [
            f"{indent}{positive}: sensitivity {rng(f['sensitivity'])}  specificity "
            f"{rng(f['specificity'])}  Se+Sp-1 {rng(f['youden'])}  true rate {rng(f['population_rate'])}"
        ]
        for v, r in b["per_verdict"].items():
            out.append(f"{indent}  {v:<13} sensitivity {rng(r['sensitivity'])}  specificity {rng(r['specificity'])}")
        return out

    lines = [f"judge profile: judge={profile['judge']}  labelled={profile['labelled']}  level={profile['level']:.0%}"]
    lines += block(profile)
    lines.append(f"{'stratum':<40}{'population':>11}{'labelled':>9}  labels ({'/'.join(c[:4] for c in classes)})")
    for s in profile["strata"]:
        lab = s["labels"]
        lines.append(
            f"{s['stratum']:<40}{s['population']:>11}{s['labelled']:>9}  "
            + "/".join(str(lab.get(c, 0)) for c in classes)
        )
    for value, b in profile.get("slices", {}).items():
        lines += [f"slice {value} ({b['labelled']} labels):"] + block(b, "  ")
    advice = label_next(profile)
    if advice:
        lines.append(advice)
    return "\n".join(lines)


def next_stratum(profile: Mapping[str, Any]) -> tuple[Mapping[str, Any], float] | None:
    """The profile's stratum where one more label narrows the corrected rate most, and that gain (inf for a stratum
    nobody labelled); None when every stratum is labelled in full.

    At the labelled population's own flagged share the corrected rate is the stratified estimate ``sum_h W_h p_h``,
    whose variance is ``sum_h W_h^2 p_h (1 - p_h) / n_h``: one more label in ``h`` removes
    ``W_h^2 p_h (1 - p_h) / (n_h (n_h + 1))`` (``p_h`` with the Jeffreys prior, so a stratum whose labels all agree
    still counts). Judge-passed strata hold the misses (they pin the sensitivity), judge-flagged ones the false
    alarms (the specificity): the rule puts labels where docs/labeling.md's "Which strata first" says.
    """
    strata = [s for s in profile.get("strata") or [] if int(s.get("population") or 0) > 0]
    total = sum(int(s["population"]) for s in strata)
    positive = positive_for(profile)
    best: tuple[Mapping[str, Any], float] | None = None
    for s in strata:
        n, pop = int(s.get("labelled") or 0), int(s["population"])
        if n >= pop:
            continue
        x = sum(int((s.get("labels") or {}).get(v, 0)) for v in positive)
        p = (x + PRIOR) / (n + 2 * PRIOR)
        gain = float("inf") if n == 0 else (pop / total) ** 2 * p * (1 - p) / (n * (n + 1))
        if best is None or gain > best[1] or (gain == best[1] == float("inf") and pop > int(best[0]["population"])):
            best = (s, gain)
    return best


def label_next(profile: Mapping[str, Any]) -> str | None:
    """One line: which stratum to label next (:func:`next_stratum`), and which error rate its labels pin."""
    pick = next_stratum(profile)
    if pick is None:
        return None
    s, gain = pick
    flagged_side = s["judge_verdict"] in positive_for(profile)
    rate = "specificity" if flagged_side else "sensitivity"
    r = (profile.get("flagged") or {}).get(rate) or {}
    now = f", now [{r['low']:.3f}, {r['high']:.3f}]" if "low" in r and "high" in r else ""
    side = "flagged" if flagged_side else "passed"
    why = (
        "nobody labelled it yet: its error rate is only a prior"
        if gain == float("inf")
        else "one more label there narrows the corrected rate's interval most"
    )
    return (
        f"label next: stratum {s['stratum']} (judge {side}, {s.get('labelled', 0)} of {s['population']} labelled): "
        f"{why}; it pins the {rate}{now} (a new sample: --flagged-share {0.75 if flagged_side else 0.25})"
    )


# --------------------------------------------------------------------------- simulation


@dataclass(frozen=True)
class SimResult:
    coverage: float
    median_width: float
    decidable: float  # share of runs where the estimate was not "too uncertain"
    coverage_decidable: float | None  # coverage among those
    reps: int


def simulate_coverage(
    *,
    labels: int,
    se: float,
    sp: float,
    true_rate: float,
    target_rate: float | None = None,
    population: int = 20_000,
    target_claims: int = 5_000,
    reps: int = 200,
    draws: int = 2000,
    level: float = 0.95,
    flagged_share: float = 0.5,
    seed: int = 0,
    min_youden: float = MIN_YOUDEN,
    max_width: float = MAX_WIDTH,
) -> SimResult:
    """Repeat: a labelled deployment (``population`` claims, true flagged rate ``true_rate``, a judge with ``se``/``sp``),
    ``labels`` claims labelled (``flagged_share`` of them from the judge-flagged stratum, drawn without replacement),
    and a measured deployment (``target_claims`` claims, true rate ``target_rate``, default ``true_rate``); the share
    of runs whose corrected interval covers ``target_rate``. Vectorised over the runs (2 strata)."""
    rng = np.random.default_rng(seed)
    target = true_rate if target_rate is None else target_rate
    # the labelled population: truly flagged T, judge-flagged among them / among the truly supported
    t = rng.binomial(population, true_rate, size=reps)
    tp = rng.binomial(t, se)
    fp = rng.binomial(population - t, 1 - sp)
    n_flag = tp + fp  # population of the judge-flagged stratum
    n_pass = population - n_flag
    want_f = np.minimum(np.round(labels * flagged_share).astype(int), n_flag)
    want_p = np.minimum(labels - want_f, n_pass)
    # truly flagged among the labelled claims of each stratum (sampling without replacement)
    x_f = rng.hypergeometric(tp, fp, np.maximum(want_f, 0))
    x_p = rng.hypergeometric(np.maximum(t - tp, 0), np.maximum(n_pass - (t - tp), 0), np.maximum(want_p, 0))
    q_true = target * se + (1 - target) * (1 - sp)
    k = rng.binomial(target_claims, q_true, size=reps)
    # posterior draws, (reps, draws)
    shape = (reps, draws)
    w_f = rng.beta(n_flag[:, None] + PRIOR, n_pass[:, None] + PRIOR, size=shape)
    p_f = rng.beta(x_f[:, None] + PRIOR, (want_f - x_f)[:, None] + PRIOR, size=shape)
    p_p = rng.beta(x_p[:, None] + PRIOR, (want_p - x_p)[:, None] + PRIOR, size=shape)
    q = rng.beta(k[:, None] + PRIOR, (target_claims - k)[:, None] + PRIOR, size=shape)
    pos = w_f * p_f + (1 - w_f) * p_p
    neg = 1 - pos
    se_d = w_f * p_f / pos
    sp_d = (1 - w_f) * (1 - p_p) / neg
    pi = _rogan_gladen(q, se_d, sp_d)
    a = (1 - level) / 2
    undefined = np.isnan(pi).mean(axis=1)
    lo = np.nanquantile(pi, a, axis=1)
    hi = np.nanquantile(pi, 1 - a, axis=1)
    lo = np.where(undefined > a, 0.0, lo)
    hi = np.where(undefined > a, 1.0, hi)
    covered = (lo <= target) & (target <= hi)
    j_low = np.quantile(se_d + sp_d - 1, a, axis=1)
    decidable = (j_low > min_youden) & (hi - lo <= max_width)
    return SimResult(
        float(covered.mean()),
        float(np.median(hi - lo)),
        float(decidable.mean()),
        float(covered[decidable].mean()) if decidable.any() else None,
        reps,
    )


# --------------------------------------------------------------------------- command


def cmd_profile(args: argparse.Namespace) -> int:
    """``claimwatch calibrate LABELS --profile-out PATH``: fit the judge profile from ``claimwatch label`` records."""
    records = _read_labels(args.input)
    if not records:
        raise DataError(args.input, 0, "no labelled claims in the file")
    plan = Path(f"{args.input}.plan.json")
    plan_strata = json.loads(plan.read_text(encoding="utf-8")).get("strata") if plan.exists() else None
    if plan_strata is None:
        print(
            f"no labelling plan next to {args.input}: strata nobody labelled are left out of the weights",
            file=sys.stderr,
        )
    profile = fit_profile(
        records, level=getattr(args, "level", 0.95) or 0.95, fitted_on=Path(args.input).name, plan_strata=plan_strata
    )
    Path(args.profile_out).write_text(json.dumps(profile, indent=1) + "\n", encoding="utf-8")
    if getattr(args, "json", False):
        print(json.dumps(profile, ensure_ascii=False))
        advice = label_next(profile)
        if advice:
            print(advice, file=sys.stderr)
    else:
        print(profile_text(profile))
    print(f"judge profile written to {args.profile_out}", file=sys.stderr)
    return 0


def release_counts(results: Iterable[Mapping[str, Any]], label: str = "release") -> dict[str, ReleaseCounts]:
    """The gate's counts per value of the slice ``label`` from result records (one per record, the last), counted
    as the worker counts them, so corrected rates sit beside the gate's raw ones."""
    out: dict[str, ReleaseCounts] = {}
    for r in latest_per_trace(results):
        key = str((r.get("slices") or {}).get(label, "?"))
        out[key] = out.get(key, ReleaseCounts()).add_result(r)
    return out


def claim_counts(results: Iterable[Mapping[str, Any]], label: str = "release") -> dict[str, tuple[int, int]]:
    """``(flagged, judged)`` claims per value of the slice ``label``."""
    return {
        k: (c.claims.unsupported + c.claims.contradicted, c.claims.judged)
        for k, c in release_counts(results, label).items()
    }


def answer_counts(results: Iterable[Mapping[str, Any]], label: str = "release") -> dict[str, tuple[int, int]]:
    """``(answers with a flagged claim, evaluated answers)`` per value of ``label`` (the gate's counts)."""
    return {k: (c.flagged, c.answers) for k, c in release_counts(results, label).items() if c.answers}


def counts_for(profile: Mapping[str, Any], counts: ReleaseCounts) -> tuple[int, int]:
    """``(flagged, judged)`` in the profile's unit: answers (the gate's) or claims. An answer profile's strata are
    the judge's any-claim flag, so its count is the any-claim one (not the answer risk's at-risk count)."""
    if profile.get("unit") == "answer":
        return (counts.flagged_any_claim if counts.flag_rules else counts.flagged), counts.answers
    return counts.claims.unsupported + counts.claims.contradicted, counts.claims.judged


def cmd_correct(args: argparse.Namespace) -> int:
    """``python -m claimwatch.judge_profile correct --profile P (--flagged K --judged M | --results FILE)``."""
    profile, strata = load_profile(args.profile)
    answers = profile.get("unit") == "answer"
    if args.results:
        from claimwatch.claims_query import read_results_file

        counts = (answer_counts if answers else claim_counts)(read_results_file(args.results), args.label)
    elif args.flagged is not None and args.judged is not None:
        counts = {"": (args.flagged, args.judged)}
    else:
        raise SystemExit("correct needs --results FILE, or --flagged K and --judged M")
    for key, (f, n) in sorted(counts.items()):
        r = corrected_rate(strata, f, n, positive=positive_for(profile), level=args.level)
        if args.json:
            print(json.dumps({args.label: key, **r.to_json()} if key else r.to_json()))
        else:
            what = "answers with a hallucination " if answers else "unsupported+contradicted claims "
            print(
                (f"{args.label} {key}: " if key else "")
                + what
                + r.to_text().replace("judged claims", "judged answers" if answers else "judged claims")
            )
    return 0


def cmd_simulate(args: argparse.Namespace) -> int:
    """Print the coverage grid and the labels-vs-precision table (what docs/labeling.md shows; its precision table is
    the ``+- points`` column, the median half-width in points, at rate 0.10)."""
    print(
        f"{'labels':>6} {'Se':>5} {'Sp':>5} {'rate':>5} {'coverage':>9} {'median width':>13} {'+- points':>10} "
        f"{'decidable':>10}"
    )
    for n in args.labels:
        for se in args.se:
            for sp in args.se:
                for rate in args.rate:
                    r = simulate_coverage(labels=n, se=se, sp=sp, true_rate=rate, reps=args.reps, seed=args.seed)
                    print(
                        f"{n:>6} {se:>5.2f} {sp:>5.2f} {rate:>5.2f} {r.coverage:>9.3f} {r.median_width:>13.3f} "
                        f"{50 * r.median_width:>10.2f} {r.decidable:>10.2f}",
                        flush=True,
                    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m claimwatch.judge_profile")
    sub = p.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fit", help="fit a judge profile from a `claimwatch label` file")
    f.add_argument("input")
    f.add_argument("--profile-out", required=True)
    f.add_argument("--json", action="store_true")
    f.add_argument("--level", type=float, default=0.95)
    f.set_defaults(func=cmd_profile)
    c = sub.add_parser("correct", help="a raw flagged count corrected with a judge profile")
    c.add_argument("--profile", required=True)
    c.add_argument("--flagged", type=int, help="claims the judge flagged (UNSUPPORTED or CONTRADICTED)")
    c.add_argument("--judged", type=int, help="claims the judge gave a verdict")
    c.add_argument("--results", help="or count them per release in a results JSONL file")
    c.add_argument("--label", default="release", help="the slice to count per (default release)")
    c.add_argument("--level", type=float, default=0.95)
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_correct)
    s = sub.add_parser("simulate", help="coverage and precision of the corrected rate, by simulation")
    s.add_argument("--labels", type=int, nargs="+", default=[100, 200, 500, 1000])
    s.add_argument("--se", type=float, nargs="+", default=[0.6, 0.8, 0.95])
    s.add_argument("--rate", type=float, nargs="+", default=[0.02, 0.1, 0.4])
    s.add_argument("--reps", type=int, default=400)
    s.add_argument("--seed", type=int, default=1)
    s.set_defaults(func=cmd_simulate)
    args = p.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())

"""Fit a judge's answer-risk map on the real labelled sets (``claimwatch calibrate --fit-risk --judge NAME``).

What it does (:mod:`evaluator_worker.judges.risk` says what the map is):

1. **Claim map** on the ``train`` claims of the claim-labelled sets (Factcheck-GPT, ExpertQA, WiCE): the judge
   verifies each gold claim against its context; its not-grounded score ``s`` is mapped to P(not grounded) by
   isotonic regression (:func:`claimwatch.confidence.fit_isotonic`, scipy), shrunk towards the base rate.
   Train only, so the dev comparison below is out of sample (ExpertQA's dev answers are made of dev claims).
2. **Aggregator** on the ``dev`` answers of the answer-labelled sets (SummEdits, ExpertQA; FaithBench is
   evaluation only and never tuned on): every aggregator's answer AUC and FP rate at 70% recall per set,
   beside answer length, flag-everything and the shipped any-claim rule, and the share of faithful answers
   each flags by claim count. The choice is among the aggregators that do not grow with the number of claims
   (``LENGTH_INVARIANT``: ``mean``, ``noisy_or_norm``), the point of the answer risk: ``noisy_or`` and
   ``max`` grow with it (the max of more claims is higher), and on dev they flag 0.88-1.00 of the faithful
   3-4-claim answers at 70% recall where ``mean`` flags 0.63-0.71. Among those, the best mean AUC over the
   sets (within 0.005: the lower mean FP rate at 70% recall).
3. **Threshold**: the chosen risk that catches 70% of the hallucinated dev answers (all sets pooled).

The map is written with the sets, splits, counts, date, the judge's confidence calibration and every dev
number, to ``evaluator_worker/judges/calibration/<judge>.risk.json`` unless ``--risk-out`` says otherwise.
Re-run it whenever the judge (its weights, rules or confidence map) changes. Never on ``eval``.
"""

from __future__ import annotations

import datetime as dt
import math
import sys
from dataclasses import dataclass
from typing import Any, Sequence, TextIO

from claimwatch.calibration import calibrate_answers, calibrate_claims, roc_auc
from claimwatch.confidence import Scored, ece, fit_isotonic
from claimwatch.realdata import load_real
from claimwatch.realreport import fpr_at_recall
from evaluator_worker.judges.base import Judge
from evaluator_worker.judges.calibrated import ConfidenceMap
from evaluator_worker.judges.risk import AGGREGATORS, FLAG_VERDICTS, RiskMap, not_grounded_score

CLAIM_SETS: tuple[str, ...] = ("factcheck-gpt", "expertqa", "wice")
ANSWER_SETS: tuple[str, ...] = ("summedits", "expertqa")
TARGET_RECALL = 0.7
#: aggregators whose mean dev AUC is within this of the best are compared by FP rate at 70% recall
AUC_TIE = 0.005
#: the aggregators the choice is made among: for claims drawn from one distribution, their value does not grow
#: with the number of claims (noisy_or and max do: the any-claim rule's compounding, softened)
LENGTH_INVARIANT: tuple[str, ...] = ("mean", "noisy_or_norm")
#: claim-count bins of the "faithful answers flagged by length" check
CLAIM_BINS: tuple[tuple[int, int], ...] = ((1, 1), (2, 2), (3, 4), (5, 10_000))


@dataclass
class AnswerRow:
    """One dev answer as the judge saw it: its claims' (verdict, confidence), length and gold label."""

    set: str
    verdicts: list[tuple[str, float]]
    length: int
    hallucinated: bool

    @property
    def any_claim(self) -> bool:
        """The shipped rule: flagged when any claim is UNSUPPORTED or CONTRADICTED."""
        return any(v in FLAG_VERDICTS for v, _ in self.verdicts)

    @property
    def rate(self) -> float:
        """1 - supported / judged (the project's earlier answer score)."""
        judged = [v for v, _ in self.verdicts if v != "ERROR"]
        return sum(1 for v in judged if v in FLAG_VERDICTS) / len(judged) if judged else 0.0


def claim_scored(judge: Judge, splits: Sequence[str], limit: int | None, out: TextIO) -> tuple[list[Scored], dict]:
    """(not-grounded score, gold not grounded) of the judge on the claim sets' ``splits`` claims, and their counts."""
    items: list[Scored] = []
    counts: dict[str, Any] = {}
    for name in CLAIM_SETS:
        for split in splits:
            claims = load_real(name, split, limit=limit).claims
            rep = calibrate_claims(judge, claims)
            got = [
                Scored(not_grounded_score(o.got, o.confidence), o.item.label != "SUPPORTED")
                for o in rep.outcomes
                if o.got != "ERROR"
            ]
            items += got
            counts[f"{name}/{split}"] = {"claims": len(got), "not_grounded": sum(s.correct for s in got)}
            print(f"  claims {name}/{split}: {len(got)} ({sum(s.correct for s in got)} not grounded)", file=out)
    return items, counts


def answer_rows(judge: Judge, split: str, limit: int | None, out: TextIO) -> list[AnswerRow]:
    """The judge's claims of every answer of the answer sets' ``split`` (answers it failed on are left out)."""
    rows: list[AnswerRow] = []
    for name in ANSWER_SETS:
        rep = calibrate_answers(judge, load_real(name, split, limit=limit).answers)
        got = [AnswerRow(name, o.verdicts, len(o.item.answer), o.hallucinated) for o in rep.scored]
        rows += got
        print(f"  answers {name}/{split}: {len(got)} ({sum(r.hallucinated for r in got)} hallucinated)", file=out)
    return rows


def _rates(flags: Sequence[bool], ys: Sequence[bool]) -> dict[str, float | None]:
    pos = sum(ys)
    neg = len(ys) - pos
    return {
        "tpr": sum(1 for f, y in zip(flags, ys) if f and y) / pos if pos else None,
        "fpr": sum(1 for f, y in zip(flags, ys) if f and not y) / neg if neg else None,
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def risks(rows: Sequence[AnswerRow], cmap: ConfidenceMap | None, aggregator: str) -> list[float]:
    rm = RiskMap(judge="", claim_map=cmap, aggregator=aggregator)
    return [rm.answer_risk(r.verdicts) or 0.0 for r in rows]


def compare(rows: Sequence[AnswerRow], cmap: ConfidenceMap | None) -> dict[str, Any]:
    """Per answer set (and pooled): n, AUC and FP rate at 70% recall of every aggregator, of answer length and of the
    any-claim rate, and the any-claim rule's TPR / FP rate (flag-everything: AUC 0.5, FP rate 1)."""
    out: dict[str, Any] = {}
    for name in (*ANSWER_SETS, "pooled"):
        sub = [r for r in rows if name == "pooled" or r.set == name]
        ys = [r.hallucinated for r in sub]
        if not sub or all(ys) or not any(ys):
            continue
        m: dict[str, Any] = {"n": len(sub), "n_hallucinated": sum(ys)}
        scores = {a: risks(sub, cmap, a) for a in AGGREGATORS}
        scores["length"] = [float(r.length) for r in sub]
        scores["any_claim_rate"] = [r.rate for r in sub]
        for key, s in scores.items():
            m[key] = {"auc": _r(roc_auc(s, ys)), "fpr_at_70_recall": _r(fpr_at_recall(s, ys, TARGET_RECALL))}
        m["any_claim_rule"] = {k: _r(v) for k, v in _rates([r.any_claim for r in sub], ys).items()}
        m["flag_everything"] = {"auc": 0.5, "fpr_at_70_recall": 1.0}
        out[name] = m
    return out


def by_claims(rows: Sequence[AnswerRow], cmap: ConfidenceMap | None) -> dict[str, Any]:
    """Share of faithful dev answers flagged, per claim-count bin: each aggregator at its own 70%-recall threshold
    (all sets pooled) and the any-claim rule. A score that does not compound claim errors stays flat across bins."""
    ys = [r.hallucinated for r in rows]
    bins = {f"{lo}-{hi}" if hi < 10_000 else f"{lo}+": (lo, hi) for lo, hi in CLAIM_BINS}
    out: dict[str, Any] = {"faithful": {}}
    for name, (lo, hi) in bins.items():
        out["faithful"][name] = sum(1 for r in rows if not r.hallucinated and lo <= len(r.verdicts) <= hi)

    def shares(flags: Sequence[bool]) -> dict[str, float | None]:
        res: dict[str, float | None] = {}
        for name, (lo, hi) in bins.items():
            f = [x for r, x in zip(rows, flags) if not r.hallucinated and lo <= len(r.verdicts) <= hi]
            res[name] = _r(sum(f) / len(f)) if f else None
        return res

    for agg in AGGREGATORS:
        rs = risks(rows, cmap, agg)
        t = threshold_at_recall(rs, ys)
        out[agg] = shares([x >= t for x in rs])
    out["any_claim_rule"] = shares([r.any_claim for r in rows])
    return out


def choose(table: dict[str, Any]) -> str:
    """Among ``LENGTH_INVARIANT``, the best mean AUC over the answer sets (near-ties: the lower mean FP rate at
    70% recall)."""
    sets = [s for s in ANSWER_SETS if s in table]

    def mean(agg: str, key: str) -> float:
        vals = [table[s][agg][key] for s in sets if table[s][agg][key] is not None]
        return sum(vals) / len(vals) if vals else 0.0

    best_auc = max(mean(a, "auc") for a in LENGTH_INVARIANT)
    near = [a for a in LENGTH_INVARIANT if mean(a, "auc") >= best_auc - AUC_TIE]
    return min(near, key=lambda a: (mean(a, "fpr_at_70_recall"), -mean(a, "auc")))


def threshold_at_recall(scores: Sequence[float], ys: Sequence[bool], recall: float = TARGET_RECALL) -> float:
    """The highest score whose "flag at or above it" catches at least ``recall`` of the positives (the threshold
    :func:`claimwatch.realreport.fpr_at_recall` measures at)."""
    pos = sorted((s for s, y in zip(scores, ys) if y), reverse=True)
    if not pos:
        raise ValueError("no hallucinated answers to fit a threshold on")
    return pos[max(math.ceil(recall * len(pos)) - 1, 0)]


def fit_risk(
    judge: Judge,
    *,
    claim_splits: Sequence[str] = ("train",),
    claim_limit: int | None = None,
    answer_limit: int | None = None,
    confidence_calibration: str = "shipped",
    out: TextIO = sys.stderr,
) -> RiskMap:
    """Fit ``judge``'s risk map (module docstring); prints the dev table to ``out``."""
    print(f"fitting the answer-risk map of {judge.name}", file=out)
    items, claim_counts = claim_scored(judge, claim_splits, claim_limit, out)
    xs, ys = fit_isotonic(items)
    cmap = ConfidenceMap(tuple(xs), tuple(ys), judge.name)
    mapped = [Scored(cmap(s.confidence or 0.0), s.correct) for s in items]
    rows = answer_rows(judge, "dev", answer_limit, out)
    table = compare(rows, cmap)
    chosen = choose(table)
    pooled = [r.hallucinated for r in rows]
    chosen_risks = risks(rows, cmap, chosen)
    threshold = round(threshold_at_recall(chosen_risks, pooled), 4)
    at = _rates([r >= threshold for r in chosen_risks], pooled)
    meta = {
        "method": "isotonic (scipy) of not-grounded on the judge's not-grounded score; aggregator and threshold on dev",
        "fitted_at": dt.date.today().isoformat(),
        "confidence_calibration": confidence_calibration,
        "claims_fitted_on": {"sets": list(CLAIM_SETS), "splits": list(claim_splits), "counts": claim_counts},
        "claim_ece_of_score": _r(ece([Scored(s.confidence, s.correct) for s in items])),
        "claim_ece_fitted": _r(ece(mapped)),
        "answers_chosen_on": {
            "sets": list(ANSWER_SETS),
            "split": "dev",
            "limit": answer_limit,
            "rule": f"among {', '.join(LENGTH_INVARIANT)} (do not grow with the number of claims): best mean AUC "
            f"over the sets (within {AUC_TIE}: lower mean FP rate at 70% recall)",
        },
        "threshold_rule": f"the risk catching {TARGET_RECALL:.0%} of the pooled dev hallucinated answers",
        "dev_at_threshold": {k: _r(v) for k, v in at.items()},
        "dev": table,
        "dev_faithful_flagged_by_claims": by_claims(rows, cmap),
    }
    rm = RiskMap(judge=judge.name, claim_map=cmap, aggregator=chosen, threshold=threshold, fitted=True, meta=meta)
    print(render(rm), file=out)
    return rm


def _f(x: Any) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def render(rm: RiskMap) -> str:
    """The dev table of a fitted map (markdown): AUC / FP rate at 70% recall per set, baselines beside."""
    table = rm.meta.get("dev", {})
    cols = [c for c in (*ANSWER_SETS, "pooled") if c in table]
    head = "| score (dev) | " + " | ".join(f"{c} ({table[c]['n']}, {table[c]['n_hallucinated']} halluc.)" for c in cols)
    lines = [head + " |", "|---|" + "---|" * len(cols)]
    for key, label in [
        *((a, a + (" (chosen)" if a == rm.aggregator else "")) for a in AGGREGATORS),
        ("any_claim_rate", "any-claim rate (1 - supported/judged)"),
        ("length", "answer length"),
        ("flag_everything", "flag everything"),
    ]:
        cells = [f"{_f(table[c][key]['auc'])} / {_f(table[c][key]['fpr_at_70_recall'])}" for c in cols]
        lines.append(f"| {label}: AUC / FP rate @70% recall | " + " | ".join(cells) + " |")
    rule = [f"{_f(table[c]['any_claim_rule']['tpr'])} / {_f(table[c]['any_claim_rule']['fpr'])}" for c in cols]
    lines.append("| shipped any-claim rule: TPR / FP rate | " + " | ".join(rule) + " |")
    flat = rm.meta.get("dev_faithful_flagged_by_claims")
    if flat:
        bins = list(flat["faithful"])
        lines.append(
            "\n| faithful dev answers flagged (70% recall) | "
            + " | ".join(f"{b} claims ({flat['faithful'][b]})" for b in bins)
            + " |\n|---|"
            + "---|" * len(bins)
        )
        for key in (*AGGREGATORS, "any_claim_rule"):
            lines.append(f"| {key} | " + " | ".join(_f(flat[key][b]) for b in bins) + " |")
    at = rm.meta.get("dev_at_threshold", {})
    lines.append(
        f"\nchosen: {rm.aggregator}, threshold {rm.threshold:g} (pooled dev: TPR {_f(at.get('tpr'))}, "
        f"FP rate {_f(at.get('fpr'))}); claim ECE of the raw score {_f(rm.meta.get('claim_ece_of_score'))} -> "
        f"{_f(rm.meta.get('claim_ece_fitted'))} mapped (in sample)"
    )
    return "\n".join(lines)

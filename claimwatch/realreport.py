"""What a judge scores on the real labelled sets (``claimwatch.realdata``), next to trivial baselines.

Positive = a hallucination throughout (a claim not SUPPORTED by its context, an answer labelled
hallucinated), so **TPR is the share of hallucinations flagged** and **TNR the share of grounded
claims / faithful answers let through** (the older tables of docs/judge-quality.md name TPR after
SUPPORTED: there it is this TNR).

Claim level (one ``verify`` per gold claim, its own context): binary accuracy (flagged or not, right),
TPR, TNR, contradiction recall (gold CONTRADICTED called CONTRADICTED), ECE of the verdict's
confidence against "the flag decision was right", and the AUC of a not-supported score (the
confidence of a flag, 1 - the confidence of a pass). Beside them, on the same rows: flag-everything
(TPR 1, TNR 0) and claim length (AUC).

Answer level (the judge extracts and verifies claims): AUC of the answer's hallucination rate
(1 - supported/judged), the false-positive rate at 70% recall, TPR/TNR of "flagged if any claim is
flagged", ECE of the answer call; beside them the AUC and FP rate at 70% recall of answer length.

Answer risk (:mod:`evaluator_worker.judges.risk`): the judge's calibrated answer risk from its claims' verdicts
and confidences (its fitted map, or the verdict-based default, ``risk_fitted`` says which): AUC, FP rate at 70%
recall, and TPR/TNR of "at risk" at the map's fitted threshold, beside the any-claim rule on the same rows.

Style invariance: on human-faithful answers (or human-SUPPORTED claims) only, per source model, the
judge's unsupported-claim rate and flagged share, and their spread (max - min over models with at
least ``MIN_PER_MODEL`` items). A judge that measures hallucination, not style, has a small spread.

``measure`` runs judges over one ``RealSet`` and prints the tables (``claimwatch calibrate --real`` and
``benchmarks/real_judges.py`` both use it).
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, TextIO

from claimwatch.calibration import AnswerReport, ClaimReport, calibrate_answers, calibrate_claims, roc_auc
from claimwatch.confidence import Scored, ece
from claimwatch.realdata import RealSet
from evaluator_worker.judges.base import Judge
from evaluator_worker.judges.risk import risk_map

__all__ = [
    "MIN_PER_MODEL",
    "fpr_at_recall",
    "claim_metrics",
    "answer_metrics",
    "style_answers",
    "style_claims",
    "ModelStyle",
    "measure",
]

MIN_PER_MODEL = 5
_FLAGS = ("UNSUPPORTED", "CONTRADICTED")


def fpr_at_recall(scores: Sequence[float], positives: Sequence[bool], recall: float = 0.7) -> float | None:
    """False-positive rate at the highest threshold whose recall is >= ``recall`` (ties at it all count as flagged)."""
    pos = sorted((s for s, p in zip(scores, positives) if p), reverse=True)
    neg = [s for s, p in zip(scores, positives) if not p]
    if not pos or not neg:
        return None
    threshold = pos[max(math.ceil(recall * len(pos)) - 1, 0)]
    return sum(1 for s in neg if s >= threshold) / len(neg)


def _r(num: int, den: int) -> float | None:
    return num / den if den else None


def claim_metrics(report: ClaimReport) -> dict[str, Any]:
    """Headline claim-level numbers of ``report`` and the flag-everything and length baselines on its rows."""
    outs = report.outcomes
    gold_neg = [o.item.label != "SUPPORTED" for o in outs]
    flagged = [o.got in _FLAGS for o in outs]
    right = [f == g and o.got != "ERROR" for o, f, g in zip(outs, flagged, gold_neg)]
    n_neg = sum(gold_neg)
    contra = [o for o in outs if o.item.label == "CONTRADICTED"]
    score = []
    for o, f in zip(outs, flagged):
        c = o.confidence if o.confidence is not None and o.got != "ERROR" else 0.5
        score.append(c if f else 1.0 - c)
    return {
        "n": len(outs),
        "n_not_supported": n_neg,
        "n_contradicted": len(contra),
        "errors": report.errors,
        "accuracy": _r(sum(right), len(outs)),
        "tpr": _r(sum(1 for f, g in zip(flagged, gold_neg) if f and g), n_neg),
        "tnr": _r(sum(1 for f, g in zip(flagged, gold_neg) if not f and not g), len(outs) - n_neg),
        "contradiction_recall": _r(sum(1 for o in contra if o.got == "CONTRADICTED"), len(contra)),
        "ece": ece([Scored(o.confidence if o.got != "ERROR" else None, r) for o, r in zip(outs, right)]),
        "auc": roc_auc(score, gold_neg),
        "baseline_flag_all": {
            "accuracy": _r(n_neg, len(outs)),
            "tpr": 1.0 if n_neg else None,
            "tnr": 0.0 if len(outs) > n_neg else None,
        },
        "baseline_length_auc": roc_auc([float(len(o.item.claim)) for o in outs], gold_neg),
    }


def answer_metrics(report: AnswerReport) -> dict[str, Any]:
    """Headline answer-level numbers of ``report`` and the length baseline on the same (scored) rows."""
    scored = report.scored
    ys = [o.hallucinated for o in scored]
    rate = [1.0 - (o.score if o.score is not None else 1.0) for o in scored]
    length = [float(len(o.item.answer)) for o in scored]
    tpr, tnr = report.rates
    rm = risk_map(report.judge)
    risk = [rm.answer_risk(o.verdicts) or 0.0 for o in scored]
    at = [rm.at_risk(r) for r in risk]
    n_pos = sum(ys)
    return {
        "n": report.n,
        "n_hallucinated": sum(ys),
        "failed": report.failed,
        "auc": roc_auc(rate, ys),
        "fpr_at_70_recall": fpr_at_recall(rate, ys),
        "any_claim_tpr": tpr,
        "any_claim_tnr": tnr,
        "risk_fitted": rm.fitted,
        "risk_aggregator": rm.aggregator,
        "risk_threshold": rm.threshold,
        "risk_auc": roc_auc(risk, ys),
        "risk_fpr_at_70_recall": fpr_at_recall(risk, ys),
        "at_risk_tpr": _r(sum(1 for a, y in zip(at, ys) if a and y), n_pos),
        "at_risk_tnr": _r(sum(1 for a, y in zip(at, ys) if not a and not y), len(ys) - n_pos),
        "ece": ece(report.confidence_scored),
        "baseline_length_auc": roc_auc(length, ys),
        "baseline_length_fpr_at_70_recall": fpr_at_recall(length, ys),
        "baseline_flag_all": {
            "tpr": 1.0 if any(ys) else None,
            "tnr": 0.0 if not all(ys) else None,
            "fpr_at_70_recall": 1.0 if any(ys) and not all(ys) else None,
        },
    }


@dataclass
class ModelStyle:
    """One source model's numbers on its human-faithful items."""

    model: str
    n: int
    unsupported_claim_rate: float | None
    flagged_share: float | None


def _spread(rows: list[ModelStyle], key: str) -> float | None:
    vals = [getattr(r, key) for r in rows if r.n >= MIN_PER_MODEL and getattr(r, key) is not None]
    return max(vals) - min(vals) if len(vals) >= 2 else None


def style_answers(report: AnswerReport) -> dict[str, Any]:
    """Per source model, on human-faithful answers: flagged claims / judged claims, share of answers flagged."""
    groups: dict[str, list[Any]] = {}
    for o in report.scored:
        if not o.hallucinated:
            groups.setdefault(o.item.extra.get("model", "?"), []).append(o)
    rows = []
    for model, outs in sorted(groups.items()):
        flagged = sum(o.counts.get("UNSUPPORTED", 0) + o.counts.get("CONTRADICTED", 0) for o in outs)
        judged = sum(o.counts.get("SUPPORTED", 0) for o in outs) + flagged
        rows.append(
            ModelStyle(
                model,
                len(outs),
                _r(flagged, judged),
                _r(sum(1 for o in outs if o.score is not None and o.score < 1.0), len(outs)),
            )
        )
    return _style(rows)


def style_claims(report: ClaimReport) -> dict[str, Any]:
    """Per source model, on human-SUPPORTED claims: the share the judge flags (both rates are that share)."""
    groups: dict[str, list[Any]] = {}
    for o in report.outcomes:
        if o.item.label == "SUPPORTED":
            groups.setdefault(o.item.extra.get("model", "?"), []).append(o)
    rows = []
    for model, outs in sorted(groups.items()):
        share = _r(sum(1 for o in outs if o.got in _FLAGS), len(outs))
        rows.append(ModelStyle(model, len(outs), share, share))
    return _style(rows)


def _style(rows: list[ModelStyle]) -> dict[str, Any]:
    return {
        "per_model": [r.__dict__ for r in rows],
        "spread_unsupported_claim_rate": _spread(rows, "unsupported_claim_rate"),
        "spread_flagged_share": _spread(rows, "flagged_share"),
        "models_counted": sum(1 for r in rows if r.n >= MIN_PER_MODEL),
    }


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def claim_row(name: str, m: dict[str, Any]) -> str:
    """One markdown row: judge, n, acc, TPR, TNR, contradiction recall, ECE, AUC."""
    return (
        f"| {name} | {m['n']} | {_f(m['accuracy'])} | {_f(m['tpr'])} | {_f(m['tnr'])} | "
        f"{_f(m['contradiction_recall'])} | {_f(m['ece'])} | {_f(m['auc'])} |"
    )


CLAIM_HEADER = (
    "| judge | n | accuracy | TPR (hallucinations flagged) | TNR (grounded passed) | contradiction recall "
    "| ECE | AUC |\n|---|---|---|---|---|---|---|---|"
)
ANSWER_HEADER = (
    "| judge | n (halluc.) | AUC | FP rate @70% recall | any-claim TPR | any-claim TNR | ECE "
    "| risk AUC | risk FP rate @70% recall | at-risk TPR | at-risk TNR |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|"
)


def claim_baseline_rows(m: dict[str, Any]) -> list[str]:
    b = m["baseline_flag_all"]
    return [
        f"| flag everything | {m['n']} | {_f(b['accuracy'])} | {_f(b['tpr'])} | {_f(b['tnr'])} | "
        f"{'1.000' if m['n_contradicted'] else 'n/a'} | n/a | 0.500 |",
        f"| claim length | {m['n']} | n/a | n/a | n/a | n/a | n/a | {_f(m['baseline_length_auc'])} |",
    ]


def answer_row(name: str, m: dict[str, Any]) -> str:
    return (
        f"| {name} | {m['n']} ({m['n_hallucinated']}) | {_f(m['auc'])} | {_f(m['fpr_at_70_recall'])} | "
        f"{_f(m['any_claim_tpr'])} | {_f(m['any_claim_tnr'])} | {_f(m['ece'])} | {_f(m['risk_auc'])} | "
        f"{_f(m['risk_fpr_at_70_recall'])} | {_f(m['at_risk_tpr'])} | {_f(m['at_risk_tnr'])} |"
        + ("" if m["risk_fitted"] else " (risk: not fitted, the any-claim rule)")
    )


def answer_baseline_rows(m: dict[str, Any]) -> list[str]:
    b = m["baseline_flag_all"]
    return [
        f"| flag everything | {m['n']} ({m['n_hallucinated']}) | 0.500 | {_f(b['fpr_at_70_recall'])} | "
        f"{_f(b['tpr'])} | {_f(b['tnr'])} | n/a | 0.500 | {_f(b['fpr_at_70_recall'])} | {_f(b['tpr'])} | "
        f"{_f(b['tnr'])} |",
        f"| answer length | {m['n']} ({m['n_hallucinated']}) | {_f(m['baseline_length_auc'])} | "
        f"{_f(m['baseline_length_fpr_at_70_recall'])} | n/a | n/a | n/a | {_f(m['baseline_length_auc'])} | "
        f"{_f(m['baseline_length_fpr_at_70_recall'])} | n/a | n/a |",
    ]


def style_line(name: str, s: dict[str, Any]) -> str:
    per = ", ".join(
        f"{r['model']} {_f(r['unsupported_claim_rate'])}/{_f(r['flagged_share'])} (n={r['n']})" for r in s["per_model"]
    )
    return (
        f"{name}: spread unsupported-claim rate {_f(s['spread_unsupported_claim_rate'])}, flagged share "
        f"{_f(s['spread_flagged_share'])} over {s['models_counted']} models; per model rate/flagged: {per}"
    )


def measure(data: RealSet, judges: Mapping[str, Judge], out: TextIO = sys.stdout) -> dict[str, Any]:
    """Every judge on one row set; print the claim/answer tables (baselines on the same rows) and style lines."""
    result: dict[str, Any] = {"claims": len(data.claims), "answers": len(data.answers), "judges": {}}
    claim_rows: list[str] = []
    answer_rows: list[str] = []
    styles: list[str] = []
    claim_m: dict[str, Any] | None = None
    answer_m: dict[str, Any] | None = None
    for jname, judge in judges.items():
        entry: dict[str, Any] = {}
        started = time.monotonic()
        if data.claims:
            rep = calibrate_claims(judge, data.claims)
            claim_m = claim_metrics(rep)
            entry["claims"] = claim_m
            claim_rows.append(claim_row(jname, claim_m))
            if len({c.extra.get("model") for c in data.claims}) > 1:
                entry["claims_style"] = s = style_claims(rep)
                styles.append(style_line(f"{jname} (claims)", s))
        if data.answers:
            arep = calibrate_answers(judge, data.answers)
            answer_m = answer_metrics(arep)
            entry["answers"] = answer_m
            answer_rows.append(answer_row(jname, answer_m))
            if len({a.extra.get("model") for a in data.answers}) > 1:
                entry["answers_style"] = s = style_answers(arep)
                styles.append(style_line(f"{jname} (answers)", s))
        entry["seconds"] = round(time.monotonic() - started, 1)
        result["judges"][jname] = entry
    if claim_m is not None:
        print(CLAIM_HEADER, file=out)
        for row in claim_rows + claim_baseline_rows(claim_m):
            print(row, file=out)
        print("", file=out)
    if answer_m is not None:
        print(ANSWER_HEADER, file=out)
        for row in answer_rows + answer_baseline_rows(answer_m):
            print(row, file=out)
        print("", file=out)
    for line in styles:
        print(f"- {line}", file=out)
    print("seconds: " + ", ".join(f"{j} {e['seconds']}" for j, e in result["judges"].items()), file=out)
    return result

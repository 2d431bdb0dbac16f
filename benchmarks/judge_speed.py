"""Offline judges' speed on real answers (issue 28: ">= 20 real answers/s per worker on 2 cores").

    nice -n 10 python -m benchmarks.judge_speed [--answers 60] [--threads 2] [--model v1=DIR ...]

Workload: real answers with their retrieved contexts, the dev split of ExpertQA (GPT-4 answers, cited
passages) and SummEdits (summaries vs their document), a fixed sample, one ``extract_claims`` + ``verify``
per answer as the worker's judge pool calls them. Variants: ``heuristic``, ``hybrid``, and the ``verifier``
from each ``--model NAME=DIR`` (default: the shipped model) with float32 kernels and with torch's dynamic
int8 kernels (``int8_kernels``). Prints answers/s and claims/s per variant, ratios to the first verifier
variant, the load average, and, for the int8 kernels, verdict agreement with float32 on the same claims.

``--pooled 32 64``: what batching *across* answers would buy. The same answers' (premise, claim) pairs,
built exactly as ``verify`` builds them, are scored once per answer (the worker today) and pooled over
every answer, sorted by length, in batches of each size: model seconds and the ratio, same pairs.
"""

from __future__ import annotations

import argparse
import dataclasses
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


def answer_pairs(judge: VerifierJudge, answers: list[Any]) -> list[tuple[list[str], list[str]]]:
    """Per answer, the (premises, claims) ``verify`` scores, recorded instead of scored."""
    loaded = judge._get()
    recorded: list[tuple[list[str], list[str]]] = []

    def record(premises: list[str], hypotheses: list[str]) -> list[list[float]]:
        recorded[-1][0].extend(premises)
        recorded[-1][1].extend(hypotheses)
        return [[0.0] * len(loaded.labels) for _ in premises]

    recorder = VerifierJudge(judge.model_dir, loader=lambda _d: dataclasses.replace(loaded, score=record))
    for a in answers:
        recorded.append(([], []))
        recorder.verify(recorder.extract_claims(a.answer, a.question).claims, list(a.context), a.question)
    return recorded


def pooled_speed(judge: VerifierJudge, answers: list[Any], sizes: Sequence[int]) -> dict[str, Any]:
    """Model seconds for the same pairs scored per answer (batches of ``judge.batch_size``) and pooled."""
    loaded = judge._get()
    per_answer = answer_pairs(judge, answers)

    def scored(premises: list[str], hypotheses: list[str], batch: int) -> float:
        order = sorted(range(len(premises)), key=lambda k: len(premises[k]) + len(hypotheses[k]))
        t0 = time.perf_counter()
        for s in range(0, len(order), batch):
            idx = order[s : s + batch]
            loaded.score([premises[k] for k in idx], [hypotheses[k] for k in idx])
        return time.perf_counter() - t0

    scored(*per_answer[0], judge.batch_size)  # warm-up
    base = sum(scored(p, h, judge.batch_size) for p, h in per_answer if p)
    out: dict[str, Any] = {"pairs": sum(len(p) for p, _ in per_answer), "per_answer_s": round(base, 2)}
    every_p = [x for p, _ in per_answer for x in p]
    every_h = [x for _, h in per_answer for x in h]
    for b in sizes:
        t = scored(every_p, every_h, b)
        out[f"pooled_{b}_s"] = round(t, 2)
        out[f"pooled_{b}_speedup"] = round(base / t, 2)
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.judge_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", action="append", default=None, metavar="NAME=DIR")
    ap.add_argument("--skip-light", action="store_true", help="verifier variants only")
    ap.add_argument("--pooled", type=int, nargs="+", default=None, metavar="BATCH", help="batching across answers")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    answers = workload(args.answers)
    if args.pooled:
        r = pooled_speed(VerifierJudge(), answers, args.pooled)
        print(
            f"{len(answers)} answers, {r['pairs']} pairs: per answer {r['per_answer_s']} s of model time; "
            + ", ".join(
                f"pooled in batches of {b}: {r[f'pooled_{b}_s']} s ({r[f'pooled_{b}_speedup']}x)" for b in args.pooled
            )
        )
        print(json.dumps(r))
        return 0
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

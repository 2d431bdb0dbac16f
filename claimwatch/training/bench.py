"""Throughput of the ``verifier`` judge: claims/s on this machine.

    python3 -m claimwatch.training.bench [--judge verifier] [--threads 2]

Two workloads: the dev claims (one ``verify`` call per claim, two short chunks each, as
``claimwatch calibrate`` runs them) and HaluEval summarization answers (all claims of an answer in
one call against a long news document, windowed by sentences; 50 matched pairs, seed 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m claimwatch.training.bench")
    p.add_argument("--judge", default="verifier")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--pairs", type=int, default=50)
    args = p.parse_args(argv)
    import torch

    from claimwatch import calibration as cal
    from claimwatch import halueval
    from evaluator_worker.judges.base import Claim
    from evaluator_worker.judges.registry import get_judge

    torch.set_num_threads(args.threads)
    judge = get_judge(args.judge)
    dev = cal.load_labeled_claims(cal.data_path("dev"))
    judge.verify([Claim(id="w", text=dev[0].claim)], list(dev[0].context))  # warm-up
    t0 = time.perf_counter()
    for it in dev:
        judge.verify([Claim(id="c", text=it.claim)], list(it.context))
    dev_s = time.perf_counter() - t0
    items = halueval.load_pairs("summarization", limit=args.pairs, seed=0)
    n_claims = 0
    t0 = time.perf_counter()
    for a in items:
        claims = judge.extract_claims(a.answer, a.question).claims
        n_claims += len(claims)
        judge.verify(claims, list(a.context), a.question)
    summ_s = time.perf_counter() - t0
    out = {
        "judge": args.judge,
        "torch_threads": torch.get_num_threads(),
        "load_average": os.getloadavg()[0],
        "dev_claims": len(dev),
        "dev_claims_per_s": round(len(dev) / dev_s, 1),
        "summarization_answers": len(items),
        "summarization_claims": n_claims,
        "summarization_claims_per_s": round(n_claims / summ_s, 1),
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

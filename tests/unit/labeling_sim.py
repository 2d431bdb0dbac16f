"""A simulated deployment for the labelling tests: result records whose claims have a known truth and a judge
with known sensitivity and specificity."""

from __future__ import annotations

import json
import random
from pathlib import Path


def deployment(
    path: Path,
    *,
    answers: int,
    true_rate: float,
    se: float,
    sp: float,
    seed: int = 0,
    release: str = "v1",
    claims_per_answer: int = 2,
) -> dict[str, bool]:
    """Write result records to ``path``; return claim id (trace/claim) -> truly flagged."""
    rng = random.Random(seed)
    truth: dict[str, bool] = {}
    with path.open("w", encoding="utf-8") as fh:
        for a in range(answers):
            trace = f"{release}-{a:06d}"
            claims = []
            for c in range(claims_per_answer):
                bad = rng.random() < true_rate
                flagged = rng.random() < (se if bad else 1 - sp)
                verdict = rng.choice(["UNSUPPORTED", "CONTRADICTED"]) if flagged else "SUPPORTED"
                truth[f"{trace}/c{c}"] = bad
                claims.append(
                    {
                        "id": f"c{c}",
                        "text": f"Claim {c} of answer {a} ({release}).",
                        "verdict": verdict,
                        "evidence": f"evidence {a}.{c}",
                        "context_excerpt": f"chunk text {a}.{c}",
                        "context_index": 0,
                        "confidence": round(rng.uniform(0.5, 1.0), 3),
                    }
                )
            rec = {
                "trace_id": trace,
                "judge": "simjudge",
                "outcome": "evaluated",
                "slices": {"release": release, "route": "billing" if a % 2 else "shipping"},
                "question": f"Question {a}?",
                "answer": "...",
                "claims": claims,
            }
            fh.write(json.dumps(rec) + "\n")
    return truth

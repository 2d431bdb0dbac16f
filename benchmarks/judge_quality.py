"""Every published judge-quality number in one command.

    python -m benchmarks.judge_quality [--judge heuristic] [--halueval-limit 200]

Runs the calibration harness on the labeled claim sets (dev and held-out), the
labeled answers, and length-matched HaluEval dialogue and summarization pairs,
and prints the markdown tables docs/judge-quality.md publishes. The last line
is the held-out TPR/TNR.
"""

from __future__ import annotations

import argparse
import time

from claimwatch import calibration as cal
from claimwatch import halueval
from evaluator_worker.judges.registry import get_judge


def _f(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--judge", default="heuristic")
    ap.add_argument("--halueval-limit", type=int, default=200)
    args = ap.parse_args(argv)
    judge = get_judge(args.judge)
    started = time.monotonic()

    print(f"judge: {args.judge}\n")
    print("| set | n | accuracy | TPR (SUPPORTED) | TNR (not supported) |")
    print("|---|---|---|---|---|")
    claim_reports = {}
    for split in ("dev", "heldout"):
        rep = cal.calibrate_claims(judge, cal.load_labeled_claims(cal.data_path(split)))
        claim_reports[split] = rep.to_json()
        j = claim_reports[split]
        print(
            f"| claims {split} | {j['n']} | {_f(j['accuracy'])} | {_f(j['tpr_supported'])} | {_f(j['tnr_not_supported'])} |"
        )

    dev = claim_reports["dev"]
    kinds = dev.get("breakdown", {}).get("kind", {})
    if kinds:
        print(
            "\nPer kind on dev (accuracy, n):",
            ", ".join(f"{k} {_f(v.get('accuracy'))} ({v.get('n')})" for k, v in sorted(kinds.items())),
        )

    print("\n| set | n | balanced acc @1.0 | best (thr) | AUC judge | AUC length only |")
    print("|---|---|---|---|---|---|")
    answers = cal.load_labeled_answers(cal.data_path("answers"))
    sets = [
        ("answers_labeled, dev split", [a for a in answers if a.extra.get("split") == "dev"]),
        ("answers_labeled, held-out split", [a for a in answers if a.extra.get("split") != "dev"]),
    ]
    for name in ("dialogue", "summarization"):
        try:
            sets.append(
                (
                    f"HaluEval {name}, {args.halueval_limit} matched pairs",
                    halueval.load_pairs(name, limit=args.halueval_limit),
                )
            )
        except halueval.HaluEvalNotInstalled as exc:
            print(f"(HaluEval {name} skipped: {exc})")
    for name, items in sets:
        j = cal.calibrate_answers(judge, items).to_json()
        print(
            f"| {name} | {j['n']} | {_f(j['balanced_accuracy'])} | {_f(j['best_balanced_accuracy'])} "
            f"({_f(j['best_threshold'])}) | {_f(j['auc'])} | {_f(j['length_baseline_auc'])} |"
        )

    held = claim_reports["heldout"]
    print(f"\n({time.monotonic() - started:.0f} s)")
    print(
        f"held-out claims: TPR(SUPPORTED)={_f(held['tpr_supported'])} TNR(not supported)={_f(held['tnr_not_supported'])}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

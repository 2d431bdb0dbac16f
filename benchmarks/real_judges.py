"""Every judge on the public human-labelled sets of real LLM answers, baselines beside (issue 28).

    nice -n 10 python -m benchmarks.real_judges --split dev [--limit 150] [--heavy-limit 30] [--judges heuristic,hybrid,verifier,offline]
    nice -n 10 python -m benchmarks.real_judges --split eval        # once per judge version; never read its errors

Per set and split: the claim table (accuracy, TPR = hallucinations flagged, TNR = grounded claims passed,
contradiction recall, ECE, AUC) with flag-everything and claim length on the same rows; the answer table
(AUC of the answer's hallucination rate, FP rate at 70% recall, any-claim TPR/TNR, ECE) with flag-everything
and answer length; and style invariance (per source model, on human-faithful items). Sets and splits:
``claimwatch/realdata.py``; metric definitions: ``claimwatch/realreport.py``. FaithBench (not committed,
CC BY-NC-SA) is included when ``data/real/faithbench/FaithBench.csv`` is there.

``--limit`` caps claims and answers per set with a fixed sample (default 150; 0 = all); the model judges
(verifier, offline, nli, LLMs) run on the first ``--heavy-limit`` rows of that sample (default 30: the
verifier spends 0.5-4 s per claim or answer on 2 cores), where every judge and baseline is printed again.
About 10 minutes with the default judges on 2 cores. ``--json PATH`` writes every number.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from claimwatch import realdata, realreport
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.judges.table import offline_judges

#: the judges that run here with the package alone (the judge table's offline ones)
DEFAULT_JUDGES = ",".join(offline_judges())


HEAVY = ("verifier", "offline", "nli", "anthropic", "openai", "cascade")


def run_set(
    name: str,
    split: str | None,
    limit: int | None,
    judges: dict[str, Any],
    heavy_limit: int | None = None,
    out=sys.stdout,
) -> dict[str, Any]:
    """Measure every judge on one set/split; print its tables to ``out``; return the numbers.

    Model judges (``HEAVY``) run on the first ``heavy_limit`` rows of the same fixed sample (a subset of the
    ``limit`` rows), where every judge and baseline is printed again, so all of them can be compared on one
    row set."""
    data = realdata.load_real(name, split, limit=limit)
    result: dict[str, Any] = {
        "set": name,
        "split": split,
        "limit": limit,
        "heavy_limit": heavy_limit,
        "data": data.summary(),
    }
    tag = " (evaluation only, not committed)" if data.evaluation_only else ""
    light = {j: v for j, v in judges.items() if j not in HEAVY}
    small = heavy_limit is not None and (limit is None or heavy_limit < limit) and len(light) < len(judges)
    print(f"\n### {name}, split {split or 'all'}{tag}\n", file=out)
    if not small:
        result["rows"] = realreport.measure(data, judges, out)
        return result
    if light:
        print(f"All rows ({len(data.claims)} claims, {len(data.answers)} answers), rule/embedding judges:\n", file=out)
        result["rows"] = realreport.measure(data, light, out)
    sub = realdata.load_real(name, split, limit=heavy_limit)
    print(
        f"\nThe first {heavy_limit} of the same sample ({len(sub.claims)} claims, {len(sub.answers)} answers), "
        "every judge:\n",
        file=out,
    )
    result["heavy_rows"] = realreport.measure(sub, judges, out)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--split", choices=realdata.SPLITS, default="dev")
    ap.add_argument("--sets", default=None, help="comma-separated (default: every set whose data is present)")
    ap.add_argument("--judges", default=DEFAULT_JUDGES)
    ap.add_argument("--limit", type=int, default=150, help="claims and answers per set (0 = all)")
    ap.add_argument(
        "--heavy-limit",
        type=int,
        default=30,
        help="rows per set for the model judges (verifier, offline, ...): the first of the same sample",
    )
    ap.add_argument("--json", default=None, metavar="PATH")
    args = ap.parse_args(argv)
    names = (
        args.sets.split(",")
        if args.sets
        else [s for s in realdata.SETS if s != "faithbench" or realdata.faithbench_path().is_file()]
    )
    judges = {j: get_judge(j) for j in args.judges.split(",")}
    started = time.monotonic()
    print(
        f"real labelled sets, split {args.split}, limit {args.limit or 'none'} (model judges "
        f"{args.heavy_limit or 'none'}), judges {', '.join(judges)}"
    )
    results = [run_set(n, args.split, args.limit or None, judges, args.heavy_limit or None) for n in names]
    print(f"\n({time.monotonic() - started:.0f} s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``claimwatch label``: draw (once) a stratified sample of judged claims (or answers), then label it in the terminal."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any, Sequence

from claimwatch.claims_query import read_results_file
from claimwatch.labeling.sample import (
    UNITS,
    draw_plan,
    load_plan,
    plan_path,
    population,
    population_answers,
    read_results_topic,
    save_plan,
)
from claimwatch.labeling.session import run_session, skipped_path
from contract.errors import ClaimwatchError, ConfigError
from contract.slices import DEFAULT_SLICE_LABELS

#: median 95% interval half-width of the corrected flagged rate (judge Se = Sp = 0.8, true rate 10%, 5,000 judged
#: claims measured): the 0.80 / 0.80 row of docs/labeling.md's precision table, from
#: ``python -m claimwatch.judge_profile simulate --rate 0.1 --reps 1000 --seed 11`` (tests/unit/test_labeling.py)
PRECISION_HINT = (
    "about +-5.6 points with 100 labels, +-4.2 with 200, +-3.1 with 500, +-2.7 with 1,000 for a judge with "
    "Se = Sp = 0.8, true rate 0.1 (docs/labeling.md)"
)


def configure(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    p.add_argument("--out", "-o", required=True, help="labels JSONL (appended to; its plan is OUT.plan.json)")
    src = p.add_argument_group("where the claims come from (first session only: later ones resume the plan)")
    src.add_argument("--results", help="a results JSONL file (claimwatch score output, or the topic dumped)")
    src.add_argument("--bootstrap", help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    src.add_argument("--topic", help="results topic (CLAIMWATCH_RESULTS_TOPIC, default claimwatch.results)")
    src.add_argument("--since", default="7d", help="results newer than this, e.g. 24h, 7d (default 7d)")
    src.add_argument("--from-offset", type=int, default=None, help="read every partition from this offset instead")
    src.add_argument("--max-records", type=int, default=200_000, help="results read at most")
    for name in DEFAULT_SLICE_LABELS:  # contract.slices
        src.add_argument(f"--{name}", help=f"only answers of this {name}")
    s = p.add_argument_group("the sample")
    s.add_argument(
        "--unit",
        choices=UNITS,
        default="claim",
        help="label claims (default; claimwatch calibrate reads them) or whole answers, the release "
        "gate's unit (faithful/hallucinated; calibrate --answers reads them)",
    )
    s.add_argument("--n", type=int, default=200, help="items to label (default 200; " + PRECISION_HINT + ")")
    s.add_argument("--by", default=None, help="also stratify by this slice, e.g. route or release")
    s.add_argument("--confidence-cuts", default="0.8", help="confidence band edges, comma-separated (default 0.8)")
    s.add_argument(
        "--flagged-share",
        type=float,
        default=0.5,
        help="share of the sample from claims the judge flagged (default 0.5)",
    )
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--plan-only", action="store_true", help="write the plan and stop")
    p.add_argument("--blind", action="store_true", help="hide the judge's verdict (no anchoring on it)")
    p.add_argument(
        "--html",
        metavar="PAGE",
        default=None,
        help="instead of the terminal: write the unlabelled items as a self-contained HTML page",
    )
    p.add_argument(
        "--import",
        dest="import_file",
        metavar="FILE",
        default=None,
        help="append the labels downloaded from the HTML page to --out (ids already there are kept)",
    )
    p.add_argument("--labeller", default=None, help="your name in the label records (default: the login name)")
    p.set_defaults(func=cmd_label)
    return p


def add_cli(sub: Any) -> argparse.ArgumentParser:
    """Register ``claimwatch label`` on an argparse subparsers object."""
    return configure(
        sub.add_parser(
            "label",
            help="label a stratified sample of judged claims in the terminal (for claimwatch calibrate --profile-out)",
        )
    )


def cmd_label(args: argparse.Namespace) -> int:
    path = plan_path(args.out)
    if path.exists():
        plan = load_plan(path)
        print(
            f"resuming the plan in {path} ({plan['n']} {plan.get('unit', 'claim')}s from {plan['source'] or '?'})",
            file=sys.stderr,
        )
        if args.results or args.bootstrap or args.topic or args.unit != plan.get("unit", "claim"):
            print(
                f"  (the source and sample options are the plan's; delete {path} to draw a new sample)", file=sys.stderr
            )
    else:
        cuts = tuple(float(x) for x in str(args.confidence_cuts).split(",") if x.strip())
        if not cuts:
            raise ConfigError("--confidence-cuts needs at least one number")
        filters = {k: getattr(args, k) for k in DEFAULT_SLICE_LABELS}
        if args.results:
            results = list(read_results_file(args.results))
            source = args.results
        else:
            results = read_results_topic(
                args.bootstrap, args.topic, since=args.since, from_offset=args.from_offset, max_records=args.max_records
            )
            source = f"topic {args.topic or 'claimwatch.results'}"
        pick = population_answers if args.unit == "answer" else population
        cands = pick(results, cuts=cuts, by=args.by, filters=filters)
        plan = draw_plan(
            cands,
            args.n,
            seed=args.seed,
            flagged_share=args.flagged_share,
            source=source,
            cuts=cuts,
            by=args.by,
            unit=args.unit,
        )
        save_plan(plan, path)
        print(
            f"plan: {plan['n']} of {plan['population_total']} judged {args.unit}s in {len(plan['strata'])} strata "
            f"-> {path}",
            file=sys.stderr,
        )
        for key, st in plan["strata"].items():
            print(f"  {key:<40} population {st['population']:>7}  sampled {st['sampled']:>5}", file=sys.stderr)
    if args.plan_only:
        return 0
    labeller = args.labeller or _login()
    if args.import_file:
        from claimwatch.labeling.html import import_labels

        added, kept = import_labels(args.out, args.import_file)
        print(f"imported {added} lines into {args.out} ({kept} already there)", file=sys.stderr)
        return 0
    if args.html:
        from claimwatch.labeling.html import render_page

        Path(args.html).write_text(render_page(plan, args.out, blind=args.blind, labeller=labeller), encoding="utf-8")
        print(
            f"labelling page written to {args.html}: open it in a browser, label, download, then "
            f"claimwatch label --out {args.out} --import labels-new.jsonl",
            file=sys.stderr,
        )
        return 0
    summary = run_session(plan, args.out, sys.stdin, sys.stdout, blind=args.blind, labeller=labeller)
    print(
        f"\n{summary.labelled} labelled, {summary.skipped} skipped of {summary.total} "
        f"({summary.this_session} this session) -> {args.out}"
        + ("" if summary.finished else "; run the same command again to go on"),
        file=sys.stderr,
    )
    if summary.labelled:
        print(
            f"next: claimwatch calibrate {args.out} --profile-out judge-profile.json "
            f"(corrected-rate precision: {PRECISION_HINT}; skips in {skipped_path(args.out)})",
            file=sys.stderr,
        )
    return 0


def _login() -> str | None:
    try:
        return getpass.getuser()
    except Exception:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m claimwatch.labeling ARGS`` (the same arguments as ``claimwatch label``)."""
    p = configure(argparse.ArgumentParser(prog="claimwatch label", description=__doc__))
    args = p.parse_args(argv)
    try:
        return int(args.func(args))
    except (ClaimwatchError, OSError, ValueError) as exc:
        print(f"claimwatch label: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

"""``claimwatch selfcheck``: does the ``nli`` judge read *your* copy of a model the way its authors do?

A verifier's published accuracy holds only when it is fed exactly as its authors feed it
(input template, order, label mapping, truncation). This command runs the authors' own
published examples through the judge's adapter on the user's machine and compares the raw
support probabilities with the published ones, before anyone trusts its verdicts:

    claimwatch selfcheck --model /models/MiniCheck-Flan-T5-Large            # kind read from the config
    claimwatch selfcheck --model ./minicheck-roberta --kind binary
    claimwatch selfcheck --judge bespoke-minicheck   # the server in CLAIMWATCH_BESPOKE__BASE_URL

Examples are data (:data:`EXAMPLES`), each with the family it applies to, the source it
was published in, the published label and, where the source gives one, the published
probability. A row passes when the label agrees and, with a published probability, the
judge's probability is within ``tolerance`` (0.02 by default: fp32 on another device or
library version moves the third decimal, a wrong template or an inverted label moves the first).
Exit 0 when every row passes, 1 otherwise, 2 on a configuration error (no model, bad kind).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Sequence

MINICHECK_DOC = "A group of students gather in the school library to study for their upcoming final exams."
MINICHECK_SOURCE = "Liyan06/MiniCheck README, 'Model Usage Demo'"


@dataclass(frozen=True)
class Example:
    """One published (document, claim) pair and what its authors report for it."""

    kinds: tuple[str, ...]
    document: str
    claim: str
    #: 1 = supported (entailed), 0 = not
    label: int
    #: the published support probability, where the source prints one for this model family
    probability: float | None
    source: str


#: The authors' published examples. The MiniCheck README prints raw probabilities for Flan-T5-Large
#: (the seq2seq kind); for the RoBERTa/DeBERTa binaries and NLI models it gives the labels only.
EXAMPLES: tuple[Example, ...] = (
    Example(
        ("seq2seq",),
        MINICHECK_DOC,
        "The students are preparing for an examination.",
        1,
        0.9805923700332642,
        MINICHECK_SOURCE,
    ),
    Example(("seq2seq",), MINICHECK_DOC, "The students are on vacation.", 0, 0.007121307775378227, MINICHECK_SOURCE),
    Example(
        ("binary", "nli", "nli2", "bespoke-minicheck"),
        MINICHECK_DOC,
        "The students are preparing for an examination.",
        1,
        None,
        MINICHECK_SOURCE,
    ),
    Example(
        ("binary", "nli", "nli2", "bespoke-minicheck"),
        MINICHECK_DOC,
        "The students are on vacation.",
        0,
        None,
        MINICHECK_SOURCE,
    ),
)


@dataclass(frozen=True)
class Row:
    example: Example
    probability: float
    threshold: float

    @property
    def label(self) -> int:
        return int(self.probability >= self.threshold)

    def passed(self, tolerance: float) -> bool:
        if self.label != self.example.label:
            return False
        return self.example.probability is None or abs(self.probability - self.example.probability) <= tolerance


def examples_for(kind: str) -> list[Example]:
    """The published examples that apply to a model family (none for hhem yet: no published pair with scores here)."""
    return [e for e in EXAMPLES if kind in e.kinds]


def run(judge: Any, *, kind: str) -> list[Row]:
    """Score every example of the judge's family with ``judge.support_probabilities``."""
    chosen = examples_for(kind)
    probabilities = judge.support_probabilities([(e.document, e.claim) for e in chosen]) if chosen else []
    return [Row(e, p, judge.entail_threshold) for e, p in zip(chosen, probabilities)]


def render(rows: Sequence[Row], kind: str, model: str, tolerance: float) -> str:
    lines = [f"selfcheck: {model} read as kind {kind!r}, {len(rows)} published example(s)"]
    for r in rows:
        published = "-" if r.example.probability is None else f"{r.example.probability:.4f}"
        verdict = "ok" if r.passed(tolerance) else "FAIL"
        lines.append(
            f"  [{verdict:4}] label {r.label} (published {r.example.label})  p={r.probability:.4f} "
            f"(published {published})  {r.example.claim!r}"
        )
    if not rows:
        lines.append("  no published example for this family: nothing compared (not a pass)")
    failed = sum(not r.passed(tolerance) for r in rows)
    sources = "; ".join(sorted({r.example.source for r in rows})) or "-"
    lines.append(f"selfcheck: {len(rows) - failed} passed, {failed} failed (tolerance {tolerance}); source: {sources}")
    return "\n".join(lines)


def cmd_selfcheck(args: argparse.Namespace) -> int:
    judge: Any
    if args.judge == "bespoke-minicheck":
        from evaluator_worker.judges.bespoke import BespokeMiniCheckJudge
        from evaluator_worker.judges.settings import JudgeSettings

        judge, kind = BespokeMiniCheckJudge(JudgeSettings().bespoke), "bespoke-minicheck"
        model = judge.settings.model
    else:
        from evaluator_worker.judges.nli import NLIJudge

        if not args.model:
            raise SystemExit("claimwatch selfcheck: --model is required for the nli judge")
        judge = NLIJudge(args.model, kind=args.kind, device=args.device, support_label=args.support_label).load()
        kind, model = judge._get().kind, args.model
    rows = run(judge, kind=kind)
    print(render(rows, kind, model, args.tolerance))
    return 0 if rows and all(r.passed(args.tolerance) for r in rows) else 1


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``claimwatch selfcheck`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "selfcheck", help="run the model authors' published examples through the nli judge's adapter"
    )
    p.add_argument(
        "--judge",
        default="nli",
        choices=["nli", "bespoke-minicheck"],
        help="nli: a local model (--model); bespoke-minicheck: the server in CLAIMWATCH_BESPOKE__*",
    )
    p.add_argument("--model", default=None, help="nli: the model directory (or an id already in the local HF cache)")
    p.add_argument("--kind", default="auto", choices=["auto", "nli", "nli2", "binary", "seq2seq", "hhem"])
    p.add_argument("--device", default="cpu")
    p.add_argument("--support-label", type=int, default=None, help="binary models: the supported class index")
    p.add_argument("--tolerance", type=float, default=0.02, help="allowed |p - published p|")
    p.set_defaults(func=cmd_selfcheck)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="claimwatch selfcheck")
    sub = parser.add_subparsers(dest="cmd", required=True)
    add_cli(sub)
    args = parser.parse_args(["selfcheck", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())

"""The heuristic judge's rules on real human-labelled claims: what each rule flags, and candidate rules (issue 28).

(``benchmarks.heuristic_rules`` ablates the rules on the project's dev claims and generated pairs instead.)

    python -m benchmarks.heuristic_real_rules [--split train|dev]

Per rule (the first rule that fires decides, as in the judge): how many claims it decides and how many of them
humans marked not grounded, per set (Factcheck-GPT, ExpertQA, WiCE claims). A rule is worth its place when the
share of hallucinated claims among its flags is well above the share among the claims no rule flags
(``supported``); a rule at or below that share flags style, not hallucination.

Then the failure types the issue names that have no rule, each tried as a candidate on the claims the judge
passes: a list with a member the context never names ("A, B and C"), and two names in the opposite order in the
best-aligned context sentences (roles swapped). A candidate is worth adding when the claims it would newly flag
are mostly hallucinated; the table prints that share. And the coverage threshold (paraphrase below the word
overlap threshold): claim accuracy, balanced accuracy and AUC for several ``alignment.support`` values.

Train and dev only: the eval split is never read to choose or fix rules.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
from collections import Counter
from typing import Iterable

from claimwatch import realdata
from claimwatch.calibration import roc_auc
from contract.failures import FailureType
from evaluator_worker.judges.base import Claim, Verdict
from evaluator_worker.judges.claims import claim_content
from evaluator_worker.judges.heuristic.analysis import ClaimCase, analyse, context_vocab, has_key, index_contexts
from evaluator_worker.judges.heuristic.judge import HeuristicJudge
from evaluator_worker.judges.heuristic.thresholds import DEFAULT_THRESHOLDS

SETS = ("factcheck-gpt", "expertqa", "wice")
#: a list of three or more short items ("A, B and C", "A, B, or C")
_LIST = re.compile(r"((?:[^,;:.()]{1,40},\s+)+[^,;:.()]{1,40},?\s+(?:and|or)\s+[^,;:.()]{1,40})")
_LIST_SPLIT = re.compile(r",\s+(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def _case(judge: HeuristicJudge, c: realdata.LabeledClaim) -> ClaimCase:
    q = c.extra.get("question")
    qterms = frozenset(analyse(q).terms) if q else frozenset()
    return ClaimCase.build(
        claim_content(c.claim), index_contexts(c.context), context_vocab(c.context), qterms, judge.thresholds
    )


def _first_rule(judge: HeuristicJudge, case: ClaimCase) -> str:
    for rule in judge.rules:
        hit = rule.apply(case)
        if hit is not None:
            return rule.name
    return "supported"


def list_member_missing(case: ClaimCase) -> bool:
    """Candidate: the claim lists three or more items and one of them has no content word in the context."""
    m = _LIST.search(case.text)
    if not m:
        return False
    items = [p.strip() for p in _LIST_SPLIT.split(m.group(1)) if p.strip()]
    if len(items) < 3:
        return False
    keys: dict[str, float] = {}
    fuzzy: frozenset[str] = frozenset()
    for s in case.sents:
        keys.update(s.a.terms)
        fuzzy |= s.a.fuzzy
    for i, item in enumerate(items):
        words = item.split()[-4:] if i == 0 else item.split()[:4]  # the first item may carry the verb phrase
        terms = list(analyse(" ".join(words)).terms)
        if terms and not any(has_key(k, keys, fuzzy) for k in terms):
            return True
    return False


def names_reversed(case: ClaimCase) -> bool:
    """Candidate: the claim's first and last names appear in the reverse order in one of the best three sentences."""
    names = [k for k in case.ca.terms if k in case.ca.entities]
    if len(names) < 2:
        return False
    a, b = names[0], names[-1]
    for s in case.ranked[:3]:
        ks = [k for k in s.a.terms if k in s.a.entities]
        if a in ks and b in ks and ks.index(a) > ks.index(b):
            return True
    return False


def _share(grounded: int, not_grounded: int) -> str:
    n = grounded + not_grounded
    return f"{not_grounded / n:.2f}" if n else "n/a"


def rule_table(data: dict[str, list[realdata.LabeledClaim]], judge: HeuristicJudge) -> Iterable[str]:
    counts: Counter[tuple[str, str, bool]] = Counter()
    candidates: Counter[tuple[str, bool]] = Counter()
    for name, claims in data.items():
        for c in claims:
            case = _case(judge, c)
            rule = _first_rule(judge, case)
            bad = c.label != "SUPPORTED"
            counts[(name, rule, bad)] += 1
            if rule == "supported":
                candidates[("passed", bad)] += 1
                if list_member_missing(case):
                    candidates[("list_member_missing", bad)] += 1
                if names_reversed(case):
                    candidates[("names_reversed", bad)] += 1
    yield "| rule | " + " | ".join(data) + " | all: grounded / not | share not grounded |"
    yield "|---|" + "---|" * (len(data) + 2)
    for rule in sorted({k[1] for k in counts}, key=lambda r: (r == "supported", r)):
        cells = [f"{counts[(n, rule, False)]} / {counts[(n, rule, True)]}" for n in data]
        g = sum(counts[(n, rule, False)] for n in data)
        b = sum(counts[(n, rule, True)] for n in data)
        yield f"| {rule} | " + " | ".join(cells) + f" | {g} / {b} | {_share(g, b)} |"
    yield ""
    yield "| candidate rule, on the claims no rule flags | would newly flag: grounded / not | share not grounded |"
    yield "|---|---|---|"
    for cand in ("passed", "list_member_missing", "names_reversed"):
        g, b = candidates[(cand, False)], candidates[(cand, True)]
        label = "(all passed claims)" if cand == "passed" else cand
        yield f"| {label} | {g} / {b} | {_share(g, b)} |"


def _accuracies(flags: list[bool], labels: list[bool]) -> tuple[float, float]:
    """Accuracy and balanced accuracy of ``flags`` against the not-grounded ``labels``."""
    acc = sum(f == y for f, y in zip(flags, labels)) / len(labels)
    tpr = sum(f and y for f, y in zip(flags, labels)) / max(1, sum(labels))
    tnr = sum(not f and not y for f, y in zip(flags, labels)) / max(1, len(labels) - sum(labels))
    return acc, (tpr + tnr) / 2


def hedge_policy_table(data: dict[str, list[realdata.LabeledClaim]], judge: HeuristicJudge) -> Iterable[str]:
    """The hedge policy's default, measured: among the claims the judge supports, those that hedge what their
    evidence asserts (typed hedge_inflation) vs the rest, and what counting them UNSUPPORTED (strict) would do to
    claim accuracy and balanced accuracy."""
    yield "| set | supported, hedge_inflation: grounded / not (share not) | supported, other: grounded / not (share not) | acc lenient / strict | balanced acc lenient / strict |"
    yield "|---|---|---|---|---|"
    for name, claims in data.items():
        hedged = Counter()
        other = Counter()
        lenient: list[bool] = []
        strict: list[bool] = []
        labels: list[bool] = []
        for c in claims:
            v = judge.verify([Claim(id="c", text=c.claim)], c.context, c.extra.get("question")).verdicts[0]
            bad = c.label != "SUPPORTED"
            flagged = v.verdict is not Verdict.SUPPORTED
            typed = v.verdict is Verdict.SUPPORTED and v.failure_type is FailureType.HEDGE_INFLATION
            if v.verdict is Verdict.SUPPORTED:
                (hedged if typed else other)[bad] += 1
            labels.append(bad)
            lenient.append(flagged)
            strict.append(flagged or typed)

        (al, bl), (as_, bs) = _accuracies(lenient, labels), _accuracies(strict, labels)
        yield (
            f"| {name} | {hedged[False]} / {hedged[True]} ({_share(hedged[False], hedged[True])}) | "
            f"{other[False]} / {other[True]} ({_share(other[False], other[True])}) | {al:.3f} / {as_:.3f} | "
            f"{bl:.3f} / {bs:.3f} |"
        )


def coverage_sweep(data: dict[str, list[realdata.LabeledClaim]], supports: list[float]) -> Iterable[str]:
    yield "| alignment.support | " + " | ".join(f"{n}: acc / balanced acc / AUC" for n in data) + " |"
    yield "|---|" + "---|" * len(data)
    for support in supports:
        t = dataclasses.replace(
            DEFAULT_THRESHOLDS, alignment=dataclasses.replace(DEFAULT_THRESHOLDS.alignment, support=support)
        )
        judge = HeuristicJudge(thresholds=t)
        cells = []
        for claims in data.values():
            flags, scores, labels = [], [], []
            for c in claims:
                v = judge.verify([Claim(id="c", text=c.claim)], c.context, c.extra.get("question")).verdicts[0]
                flagged = v.verdict is not Verdict.SUPPORTED
                flags.append(flagged)
                labels.append(c.label != "SUPPORTED")
                scores.append(v.confidence if flagged else 1 - v.confidence)
            acc = sum(f == y for f, y in zip(flags, labels)) / len(labels)
            tpr = sum(f and y for f, y in zip(flags, labels)) / max(1, sum(labels))
            tnr = sum(not f and not y for f, y in zip(flags, labels)) / max(1, len(labels) - sum(labels))
            auc = roc_auc(scores, labels)
            cells.append(f"{acc:.3f} / {(tpr + tnr) / 2:.3f} / " + ("n/a" if auc is None else f"{auc:.3f}"))
        mark = " (shipped)" if support == DEFAULT_THRESHOLDS.alignment.support else ""
        yield f"| {support}{mark} | " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("train", "dev"), default="train")
    ap.add_argument("--supports", default="0.75,0.65,0.55,0.45", help="alignment.support values to sweep")
    args = ap.parse_args(argv)
    data = {n: realdata.load_real(n, args.split).claims for n in SETS}
    print(f"real claims, split {args.split}: " + ", ".join(f"{n} {len(c)}" for n, c in data.items()) + "\n")
    for line in rule_table(data, HeuristicJudge()):
        print(line)
    print()
    for line in hedge_policy_table(data, HeuristicJudge()):
        print(line)
    print()
    for line in coverage_sweep(data, [float(x) for x in args.supports.split(",")]):
        print(line)


if __name__ == "__main__":
    main()

"""Failure types on real, human-typed errors: does the heuristic judge give the class people gave (issue 43 item 6)?

    python -m benchmarks.failure_type_accuracy [--set bump|faithbench] [--split train|dev|eval] [--faithbench DIR]

Every flagged claim carries one failure class (``contract/failures.py``). This measures that class against public
data where annotators labelled the *type* of each error, beside trivial baselines:

1. **BUMP** (dataminr-ai/BUMP, MIT; ``claimwatch.realdata.load_bump``, committed extract under ``data/real/bump/``):
   human-written minimal edits of CNN/DM reference summaries, each with ONE human error type (Entity / Predicate /
   Circumstance x Intrinsic / Extrinsic, Coreference, Other). The edited claim is found by the word diff between
   reference and edited summary (the claim of the edited summary, from ``extract_claims``, that holds the changed
   words) and judged alone against the article. Reported per BUMP type: **recall** (the judge flags it at all),
   the same for the reference-side claim (the faithful twin: a judge that flags everything has recall 1 and flags
   every twin too) and, among flagged, **type accuracy** under ``BUMP_MAPPING`` (declared below, with a reason
   each, before any judge output was read): the judge's class equals the *primary* class, or is one of the
   *accepted* classes. Baselines: flag-everything (recall 1, twin 1) and majority-class (always the most frequent
   mapped class of the train and dev rows, chosen from the human labels only; scored on the same rows).
2. **FaithBench** typed spans (vectara/FaithBench, CC BY-NC-SA 4.0: evaluation only, **never committed**; read at
   run time with ``git show`` from a snapshot, ``--faithbench DIR`` or ``$CLAIMWATCH_FAITHBENCH_REPO``, default
   ``/work/.mirror/vectara+FaithBench/repo``; skipped with a message when absent): LLM summaries with spans marked
   ``Unwanted.Intrinsic`` / ``Unwanted.Extrinsic``. The summary's claims (``extract_claims``) are judged against
   the source; a typed span is flagged when a flagged claim overlaps it (characters), and the flagged claim that
   overlaps it most gives the judge's class: ``unsupported_addition`` reads as Extrinsic, any other class as
   Intrinsic. Reported: span recall, agreement (2x2) beside the majority label (of the train and dev spans).
   Eval split only (the source's split, as ``realdata.load_real("faithbench")``); run once, nothing fixed on it.

Tune nothing on the eval split of either set.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from claimwatch import realdata
from contract.failures import FailureType
from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict
from evaluator_worker.judges.claims import extract_claims, sentence_spans
from evaluator_worker.judges.heuristic.judge import HeuristicJudge

FT = FailureType


@dataclass(frozen=True)
class TypeMapping:
    """What claimwatch class a BUMP type means: the one class it names best, the classes its definition allows."""

    primary: FailureType
    accepted: frozenset[FailureType]
    reason: str


#: BUMP type -> claimwatch classes, at the level the labels allow (declared before any judge output was read)
BUMP_MAPPING: dict[str, TypeMapping] = {
    "Extrinsic Entity": TypeMapping(
        FT.UNSUPPORTED_ADDITION,
        frozenset({FT.UNSUPPORTED_ADDITION, FT.ATTRIBUTION, FT.NUMERIC}),
        "a subject/object the article never mentions is a name or detail added; a wrong actor (attribution) or "
        "a new number (numeric) fits the label too",
    ),
    "Intrinsic Entity": TypeMapping(
        FT.ATTRIBUTION,
        frozenset({FT.ATTRIBUTION, FT.NUMERIC}),
        "an entity of the article in the wrong slot: an action or property given to the wrong one; a number of "
        "the article in the wrong place is numeric",
    ),
    "Extrinsic Predicate": TypeMapping(
        FT.UNSUPPORTED_ADDITION,
        frozenset({FT.UNSUPPORTED_ADDITION, FT.POLARITY, FT.OTHER}),
        "an action or state the article never states is added; an opposite verb is polarity, another verb other",
    ),
    "Intrinsic Predicate": TypeMapping(
        FT.OTHER,
        frozenset({FT.OTHER, FT.POLARITY}),
        "a predicate of the article misapplied: no class of ours for a wrong verb (other) unless it says the "
        "opposite (polarity)",
    ),
    "Extrinsic Circumstance": TypeMapping(
        FT.TEMPORAL,
        frozenset({FT.TEMPORAL, FT.NUMERIC, FT.OTHER, FT.UNSUPPORTED_ADDITION}),
        "a time, duration or place not in the article: temporal for time and duration, numeric where a number "
        "carries it, other for a place (no location class), and as new information an addition",
    ),
    "Intrinsic Circumstance": TypeMapping(
        FT.TEMPORAL,
        frozenset({FT.TEMPORAL, FT.NUMERIC, FT.OTHER}),
        "a time, duration or place taken from elsewhere in the article: temporal, numeric where a number carries "
        "it, other for a place",
    ),
    "Coreference": TypeMapping(
        FT.ATTRIBUTION,
        frozenset({FT.ATTRIBUTION, FT.UNSUPPORTED_ADDITION}),
        "a pronoun with the wrong antecedent gives the statement to the wrong entity; a nonexistent antecedent "
        "refers to something the article does not contain",
    ),
    "Other": TypeMapping(
        FT.OTHER,
        frozenset({FT.OTHER}),
        "BUMP's catch-all (task 2 only): ours likewise",
    ),
}
#: the classes a constant baseline may predict (a judge never should say ``unknown``)
CANDIDATES: tuple[FailureType, ...] = tuple(t for t in FailureType if t is not FT.UNKNOWN)

# ----------------------------------------------------------------------------------------------- diff -> claim

_TOKEN = re.compile(r"\S+")


def claim_spans(text: str) -> list[tuple[Claim, int, int]]:
    """The claims of ``text`` (``extract_claims``) with the character span each came from (its sentence when the
    claim's words cannot be found verbatim in it, e.g. after a citation marker was removed)."""
    sents = sentence_spans(text)
    cursor: dict[int, int] = {}
    out: list[tuple[Claim, int, int]] = []
    for c in extract_claims(text):
        if c.sentence is None or c.sentence >= len(sents):
            continue
        a, b = sents[c.sentence]
        start = cursor.get(c.sentence, a)
        span = None
        for core in (c.text, c.text[:-1] if c.text.endswith(".") else None):
            if core:
                m = re.compile(re.escape(core), re.IGNORECASE).search(text, start, b)
                if m:
                    span = (m.start(), m.end())
                    break
        if span is None:
            span = (a, b)
        else:
            cursor[c.sentence] = span[1]
        out.append((c, span[0], span[1]))
    return out


def changed_ranges(before: str, after: str) -> list[tuple[int, int]]:
    """Character ranges of ``after`` holding the words that differ from ``before`` (word-level diff); a pure
    deletion is located at the word after it (the last word when nothing follows it)."""
    bt = [m.group(0) for m in _TOKEN.finditer(before)]
    at = list(_TOKEN.finditer(after))
    out = []
    sm = difflib.SequenceMatcher(None, bt, [m.group(0) for m in at], autojunk=False)
    for tag, _i1, _i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" or not at:
            continue
        if j2 > j1:
            out.append((at[j1].start(), at[j2 - 1].end()))
        else:
            k = j1 if j1 < len(at) else len(at) - 1
            out.append((at[k].start(), at[k].end()))
    return out


def _overlap(a: int, b: int, c: int, d: int) -> int:
    return max(0, min(b, d) - max(a, c))


def changed_claim(before: str, after: str) -> Claim | None:
    """The claim of ``after`` that holds most of the words changed from ``before``; when none holds any (a change
    in the sentence's final punctuation, outside the claim's words), the nearest claim of the same sentence;
    ``None`` when the change is in no claim's sentence (a question, say).

    ``changed_claim(reference, edited)`` is the edited claim; ``changed_claim(edited, reference)`` its faithful
    twin on the reference side."""
    ranges = changed_ranges(before, after)
    spans = claim_spans(after)
    best, best_n = None, 0
    for c, a, b in spans:
        n = sum(_overlap(a, b, s, e) for s, e in ranges)
        if n > best_n:
            best, best_n = c, n
    if best is not None or not ranges:
        return best
    sents = sentence_spans(after)
    s0, e0 = ranges[0]
    near = [
        (max(a - e0, s0 - b, 0), c)
        for c, a, b in spans
        if c.sentence is not None and sents[c.sentence][0] <= s0 < sents[c.sentence][1]
    ]
    return min(near, key=lambda x: x[0])[1] if near else None


# ----------------------------------------------------------------------------------------------- helpers


def _flagged(v: ClaimVerdict) -> bool:
    return v.verdict in (Verdict.UNSUPPORTED, Verdict.CONTRADICTED)


def _cell(k: int, n: int) -> str:
    return f"{k / n:.2f} ({k}/{n})" if n else "n/a (0)"


def _verify_one(judge: HeuristicJudge, claim: Claim, context: str) -> ClaimVerdict:
    return judge.verify([claim], [context]).verdicts[0]


# ----------------------------------------------------------------------------------------------- BUMP


@dataclass
class BumpResult:
    edit: realdata.BumpEdit
    located: bool
    flagged: bool
    judge_type: FailureType | None
    twin_located: bool
    twin_flagged: bool


def run_bump(edits: Sequence[realdata.BumpEdit], judge: HeuristicJudge) -> list[BumpResult]:
    out = []
    for e in edits:
        claim = changed_claim(e.reference, e.edited)
        twin = changed_claim(e.edited, e.reference)
        v = _verify_one(judge, claim, e.article) if claim is not None else None
        tv = _verify_one(judge, twin, e.article) if twin is not None else None
        flagged = v is not None and _flagged(v)
        out.append(
            BumpResult(
                edit=e,
                located=claim is not None,
                flagged=flagged,
                judge_type=v.failure_type if flagged and v is not None else None,
                twin_located=twin is not None,
                twin_flagged=tv is not None and _flagged(tv),
            )
        )
    return out


def majority_classes(edits: Iterable[realdata.BumpEdit]) -> tuple[FailureType, FailureType]:
    """The constant baselines, from the human labels only: the most frequent primary class, and the class the most
    rows accept (ties: taxonomy order)."""
    rows = list(edits)
    prim = Counter(BUMP_MAPPING[e.error_type].primary for e in rows)
    acc = Counter(t for e in rows for t in BUMP_MAPPING[e.error_type].accepted)
    order = {t: i for i, t in enumerate(CANDIDATES)}

    def pick(c: Counter[FailureType]) -> FailureType:
        return min(CANDIDATES, key=lambda t: (-c[t], order[t]))

    return pick(prim), pick(acc)


def bump_tables(results: Sequence[BumpResult], maj_primary: FailureType, maj_accepted: FailureType) -> list[str]:
    lines = [
        "| BUMP type | edits | claim located | judge flags it (recall) | twin flagged | type = primary | "
        f"majority `{maj_primary.value}` | type accepted | majority `{maj_accepted.value}` |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def row(label: str, rs: Sequence[BumpResult]) -> str:
        n = len(rs)
        fl = [r for r in rs if r.flagged]
        twins = [r for r in rs if r.twin_located]
        m = [BUMP_MAPPING[r.edit.error_type] for r in fl]
        return (
            f"| {label} | {n} | {_cell(sum(r.located for r in rs), n)} | {_cell(len(fl), n)} | "
            f"{_cell(sum(r.twin_flagged for r in twins), len(twins))} | "
            f"{_cell(sum(r.judge_type is mm.primary for r, mm in zip(fl, m)), len(fl))} | "
            f"{_cell(sum(mm.primary is maj_primary for mm in m), len(fl))} | "
            f"{_cell(sum(r.judge_type in mm.accepted for r, mm in zip(fl, m)), len(fl))} | "
            f"{_cell(sum(maj_accepted in mm.accepted for mm in m), len(fl))} |"
        )

    for t in realdata.BUMP_TYPES:
        rs = [r for r in results if r.edit.error_type == t]
        if rs:
            lines.append(row(t, rs))
    lines.append(row("**all**", results))
    n = len(results)
    ms = [BUMP_MAPPING[r.edit.error_type] for r in results]
    lines.append(
        f"| flag everything + majority class | {n} | - | {_cell(n, n)} | {_cell(n, n)} | - | "
        f"{_cell(sum(m.primary is maj_primary for m in ms), n)} | - | "
        f"{_cell(sum(maj_accepted in m.accepted for m in ms), n)} |"
    )
    return lines


def bump_confusion(results: Sequence[BumpResult]) -> list[str]:
    """BUMP type x the judge's class, among flagged edited claims (counts)."""
    fl = [r for r in results if r.flagged]
    classes = [t for t in FailureType if any(r.judge_type is t for r in fl)]
    lines = [
        "| BUMP type (flagged) | " + " | ".join(f"`{t.value}`" for t in classes) + " |",
        "|---|" + "---|" * len(classes),
    ]
    for bt in realdata.BUMP_TYPES:
        rs = [r for r in fl if r.edit.error_type == bt]
        if rs:
            c = Counter(r.judge_type for r in rs)
            lines.append(f"| {bt} ({len(rs)}) | " + " | ".join(str(c[t]) for t in classes) + " |")
    return lines


def coarse_table(pairs: Sequence[tuple[str, FailureType | None]], majority: str) -> list[str]:
    """Extrinsic vs Intrinsic (human) against ``unsupported_addition`` vs any other class (judge), flagged only."""
    conf: Counter[tuple[str, str]] = Counter()
    for human, t in pairs:
        judge = "unknown" if t is None or t is FT.UNKNOWN else "addition" if t is FT.UNSUPPORTED_ADDITION else "other"
        conf[(human, judge)] += 1
    n = len(pairs)
    ok = conf[("Extrinsic", "addition")] + conf[("Intrinsic", "other")]
    n_ext = sum(conf[("Extrinsic", j)] for j in ("addition", "other", "unknown"))
    n_int = n - n_ext
    bal = (
        (conf[("Extrinsic", "addition")] / n_ext + conf[("Intrinsic", "other")] / n_int) / 2
        if n_ext and n_int
        else float("nan")
    )
    maj = n_ext if majority == "Extrinsic" else n_int
    return [
        "| human label (flagged) | judge `unsupported_addition` | judge other class | judge `unknown` | n |",
        "|---|---|---|---|---|",
        *(
            f"| {h} | {conf[(h, 'addition')]} | {conf[(h, 'other')]} | {conf[(h, 'unknown')]} | "
            f"{sum(conf[(h, j)] for j in ('addition', 'other', 'unknown'))} |"
            for h in ("Extrinsic", "Intrinsic")
        ),
        "",
        "| measure | judge | majority label (always " + majority + ") |",
        "|---|---|---|",
        f"| agreement | {_cell(ok, n)} | {_cell(maj, n)} |",
        f"| balanced agreement (mean per-label recall) | {bal:.2f} (n={n}) | 0.50 (n={n}) |",
    ]


def bump_coarse(results: Sequence[BumpResult], train_dev: Sequence[realdata.BumpEdit]) -> list[str]:
    def side(t: str) -> str | None:
        return "Extrinsic" if t.startswith("Extrinsic") else "Intrinsic" if t.startswith("Intrinsic") else None

    c = Counter(s for s in (side(e.error_type) for e in train_dev) if s)
    majority = "Extrinsic" if c["Extrinsic"] > c["Intrinsic"] else "Intrinsic"
    pairs = [(s, r.judge_type) for r in results if r.flagged and (s := side(r.edit.error_type))]
    return coarse_table(pairs, majority)


def main_bump(split: str) -> None:
    judge = HeuristicJudge()
    edits = realdata.load_bump(split)
    train_dev = [e for e in realdata.load_bump() if e.split in ("train", "dev")]
    maj_p, maj_a = majority_classes(train_dev)
    print(
        "## BUMP (dataminr-ai/BUMP @ 86327f14, MIT), split "
        f"{split}: {len(edits)} edits, {len({e.article_id for e in edits})} articles\n"
    )
    print("Mapping (declared before the judge was run):\n")
    print("| BUMP type | primary | accepted | reason |")
    print("|---|---|---|---|")
    for t, m in BUMP_MAPPING.items():
        acc = ", ".join(f"`{a.value}`" for a in CANDIDATES if a in m.accepted)
        print(f"| {t} | `{m.primary.value}` | {acc} | {m.reason} |")
    print(
        f"\nMajority baselines (train + dev labels, {len(train_dev)} edits): primary `{maj_p.value}`, "
        f"accepted `{maj_a.value}`\n"
    )
    results = run_bump(edits, judge)
    print(f"### Heuristic judge, BUMP {split}: recall and type accuracy (type columns: among flagged)\n")
    print("\n".join(bump_tables(results, maj_p, maj_a)))
    print(f"\n### BUMP {split}: the judge's class per BUMP type (flagged edited claims)\n")
    print("\n".join(bump_confusion(results)))
    print(f"\n### BUMP {split}: addition vs distortion (Extrinsic vs Intrinsic types; Coreference, Other left out)\n")
    print("\n".join(bump_coarse(results, train_dev)))
    print()


# ----------------------------------------------------------------------------------------------- FaithBench

FAITHBENCH_COMMIT = "cf89797d82812c23b5d5e5c121f1d9b8983bbbce"
FAITHBENCH_DEFAULT = "/work/.mirror/vectara+FaithBench/repo"
#: sha256 of the upstream span files (vectara/FaithBench cf89797d, ``data_for_release/``; batch 13 does not exist)
FAITHBENCH_SHA256: dict[str, str] = {
    "batch_1.json": "a4e7858702e741b0fb024a022a906f61fb8eb65011b7f7b138e56e080a4c8c59",
    "batch_2.json": "18f1b2b9eae6fbf2020f295dc5ca512ef1a7e389e763b707bc51831f58df6a70",
    "batch_3.json": "84b709a9d88998f478f429ee2330ea18666ae9e5340ea398ece03cec6ab54308",
    "batch_4.json": "c0f68bc222dd8b6e332cb6668840de8da150687ddf6f9b5bd243f389033fda42",
    "batch_5.json": "6be08bb37ccdf68e41e117b0174cc3c8b41ed7bf85134d00e0e89c023e96b436",
    "batch_6.json": "a5fd42aa64fbe15f535192ddfd3cfc72b53535cde7834cb6685ebe0a229f8587",
    "batch_7.json": "28e83e1487381ce317103505dab4d5679ad74f53541374a98e24e3673734343b",
    "batch_8.json": "5cf2b8ab42fe1d4b0018cf736448dd8a88318267b0efc2f45ea200e713932975",
    "batch_9.json": "4924fe2d0975890712032a128544c0619c2ebf81d5d472e99e7883f1a9720bd5",
    "batch_10.json": "8e5cec822516abbf74cd6796104bbe537da98628c671b64c10afa3b15bebe08c",
    "batch_11.json": "cf999c8fa9696f4b24d8f4b08f9fdd6603a942cfee63ad851ff6d1f265c116cc",
    "batch_12.json": "fda9f0e0eae69c13b79a8fc1f81d1f8a02e9f28ad8c3274619c4369bb15c818e",
    "batch_14.json": "72f07b9f4b91f8a49d96e7adc79a8308edb92a2e6b34babcd9ef68dc6b7b2f34",
    "batch_15.json": "c6608ce2edd17134674c7f8a0fdfc871e22458b432b35506889886c737eb4663",
    "batch_16.json": "e35ace1069bb79844b122415d3c4192f7147737a2b9ad509185fb2c1ba7090db",
}


class FaithBenchMissing(FileNotFoundError):
    """No FaithBench snapshot (or its span files differ from the pinned ones)."""


def faithbench_samples(where: str) -> tuple[list[dict[str, Any]], str]:
    """Every sample of the span files, read from a git directory (``git show HEAD:...``) or a checkout folder
    holding ``data_for_release/``; sha256-checked. Returns the samples and where they came from."""
    root = Path(where)
    folder = root / "data_for_release"
    samples: list[dict[str, Any]] = []
    for name, digest in FAITHBENCH_SHA256.items():
        if folder.is_dir():
            path = folder / name
            if not path.is_file():
                raise FaithBenchMissing(f"{path} not found")
            raw = path.read_bytes()
        else:
            proc = subprocess.run(
                ["git", "-C", str(root), "show", f"HEAD:data_for_release/{name}"], capture_output=True, check=False
            )
            if proc.returncode != 0:
                raise FaithBenchMissing(f"{root}: no git snapshot with data_for_release/{name}")
            raw = proc.stdout
        if hashlib.sha256(raw).hexdigest() != digest:
            raise FaithBenchMissing(f"{name}: sha256 differs from the pinned upstream file (FaithBench cf89797d)")
        samples += json.loads(raw)["samples"]
    if folder.is_dir():
        origin = f"{folder} (files sha256-checked)"
    else:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        origin = f"git snapshot {root} @ {head[:8]}"
    return samples, origin


@dataclass(frozen=True)
class TypedSpan:
    start: int
    end: int
    label: str  # Extrinsic | Intrinsic


def typed_spans(annotations: Sequence[dict[str, Any]], dropped: Counter[str]) -> list[TypedSpan]:
    """Annotations grouped by identical offsets; Extrinsic when an annotator said Unwanted.Extrinsic and none said
    Unwanted.Intrinsic, and the reverse; mixed, untyped Unwanted, Benign and Questionable spans dropped."""
    groups: dict[tuple[int, int], list[set[str]]] = {}
    for a in annotations:
        groups.setdefault((a["summary_start"], a["summary_end"]), []).append(set(a["label"] or []))
    out = []
    for (s, e), sets in sorted(groups.items()):
        ext = any("Unwanted.Extrinsic" in x for x in sets)
        intr = any("Unwanted.Intrinsic" in x for x in sets)
        if ext and intr:
            dropped["both subtypes"] += 1
        elif ext or intr:
            out.append(TypedSpan(s, e, "Extrinsic" if ext else "Intrinsic"))
        elif any("Unwanted" in x for x in sets):
            dropped["Unwanted without subtype"] += 1
        else:
            dropped["Benign / Questionable / none"] += 1
    return out


def main_faithbench(split: str, where: str) -> None:
    if split != "eval":
        raise SystemExit("FaithBench is evaluation only: --split eval")
    try:
        samples, origin = faithbench_samples(where)
    except FaithBenchMissing as exc:
        print(f"## FaithBench typed spans: skipped ({exc}); set --faithbench DIR or $CLAIMWATCH_FAITHBENCH_REPO\n")
        return
    judge = HeuristicJudge()
    dropped: Counter[str] = Counter()
    train_dev_labels: Counter[str] = Counter()
    pairs: list[tuple[str, FailureType | None]] = []
    spans_n: Counter[str] = Counter()
    spans_flagged: Counter[str] = Counter()
    no_claim = 0
    claims_outside = claims_outside_flagged = claims_all = claims_flagged = 0
    n_samples = 0
    for s in samples:
        sp = realdata.split_of(f"faithbench|{s['source']}")
        anns = s.get("annotations") or []
        spans = typed_spans(anns, Counter() if sp != split else dropped)
        if sp != split:
            train_dev_labels.update(t.label for t in spans)
            continue
        n_samples += 1
        summary = s["summary"]
        located = claim_spans(summary)
        verdicts = judge.verify([c for c, _, _ in located], [s["source"].strip()]).verdicts if located else []
        unwanted = [(a["summary_start"], a["summary_end"]) for a in anns if "Unwanted" in " ".join(a["label"] or [])]
        for (_c, a, b), v in zip(located, verdicts):
            claims_all += 1
            claims_flagged += _flagged(v)
            if not any(_overlap(a, b, us, ue) for us, ue in unwanted):
                claims_outside += 1
                claims_outside_flagged += _flagged(v)
        for t in spans:
            spans_n[t.label] += 1
            hits = [(_overlap(a, b, t.start, t.end), v) for (_c, a, b), v in zip(located, verdicts)]
            if not any(n for n, _ in hits):
                no_claim += 1
            flagged = [(n, v) for n, v in hits if n and _flagged(v)]
            if flagged:
                spans_flagged[t.label] += 1
                best = max(flagged, key=lambda x: x[0])[1]
                pairs.append((t.label, best.failure_type))
    majority = "Extrinsic" if train_dev_labels["Extrinsic"] > train_dev_labels["Intrinsic"] else "Intrinsic"
    total = sum(spans_n.values())
    print(f"## FaithBench typed spans ({origin}; CC BY-NC-SA 4.0, evaluation only), split {split}\n")
    print(
        f"{n_samples} summaries, {total} typed spans (Extrinsic {spans_n['Extrinsic']}, Intrinsic "
        f"{spans_n['Intrinsic']}); dropped: "
        + ", ".join(f"{k} {v}" for k, v in sorted(dropped.items()))
        + f"; spans no claim overlaps: {no_claim}. Majority label of the train + dev spans: {majority} "
        f"({train_dev_labels['Extrinsic']} Extrinsic / {train_dev_labels['Intrinsic']} Intrinsic).\n"
    )
    print("| human label | spans | a flagged claim overlaps it (recall) | flag everything |")
    print("|---|---|---|---|")
    for h in ("Extrinsic", "Intrinsic"):
        print(f"| {h} | {spans_n[h]} | {_cell(spans_flagged[h], spans_n[h])} | {_cell(spans_n[h], spans_n[h])} |")
    print(f"| all | {total} | {_cell(sum(spans_flagged.values()), total)} | {_cell(total, total)} |")
    print(
        f"\nClaims flagged: {_cell(claims_flagged, claims_all)} of all claims; "
        f"{_cell(claims_outside_flagged, claims_outside)} of the claims no Unwanted span overlaps "
        "(not a false-alarm rate: annotators marked spans, not every faithful claim).\n"
    )
    print("\n".join(coarse_table(pairs, majority)))
    print()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", choices=("bump", "faithbench"), default="bump")
    ap.add_argument("--split", choices=realdata.SPLITS, default="dev")
    ap.add_argument(
        "--faithbench",
        default=os.environ.get("CLAIMWATCH_FAITHBENCH_REPO", FAITHBENCH_DEFAULT),
        help="git directory (or checkout) of vectara/FaithBench; default $CLAIMWATCH_FAITHBENCH_REPO or the mirror",
    )
    args = ap.parse_args(argv)
    if args.set == "bump":
        main_bump(args.split)
    else:
        main_faithbench(args.split, args.faithbench)


if __name__ == "__main__":
    main()

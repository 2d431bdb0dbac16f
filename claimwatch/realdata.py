"""Public human-labelled answers of real LLMs, with their contexts, as calibration data.

The data are compact JSONL extracts committed under ``data/real/<set>/`` at the top of the repository
(outside the Python packages, so never in the wheel); each folder has a SOURCE.md (repository, commit,
upstream path and sha256, licence, how it was extracted) and the upstream licence. ``data/real/extract.py``
rebuilds them from the upstream repositories. ``CLAIMWATCH_REAL_DATA`` points elsewhere (an installed
wheel has no ``data/``: clone the repository, or set it).

Sets (``SETS``) and the views they give:

- ``factcheck-gpt`` (Apache-2.0): ChatGPT answer claims, each with its 5 retrieved web passages and a
  human stance per passage. Claims only.
- ``summedits`` (Apache-2.0): one- or two-sentence summaries (GPT-3.5 seeds, LLM edits) of a document,
  human-labelled consistent / inconsistent. Answers only.
- ``expertqa`` (MIT): GPT-4 retrieve-and-read / post-hoc-cited answers to expert questions; every claim
  with the passages it cites and a human support label. Claims, and answers (every claim labelled and
  with passages). Source system recorded.
- ``wice`` (annotations ODC-BY, text CC-BY-SA / Common Crawl terms): Wikipedia sentences (written by
  people, not an LLM) against the web page they cite. Claims only.
- ``faithbench`` (CC BY-NC-SA 4.0, **evaluation only, not committed**): summaries by 10 LLMs;
  ``data/real/faithbench/fetch.py`` downloads and checks it. Answers only, source model recorded.

BUMP (MIT; ``load_bump``, not one of ``SETS``): human-written minimal edits of CNN/DailyMail reference
summaries, each with ONE human error type (``BUMP_TYPES``). It is read by the failure-type benchmark
(``benchmarks.failure_type_accuracy``), not by the faithfulness benchmarks that iterate ``SETS``; split by
article id like the other sets by their source group.

Label mapping (one decision per upstream label, asked as "is the claim fully grounded in this context?"):

- support / completely-support / Complete / supported -> ``SUPPORTED``
- refute -> ``CONTRADICTED`` (only Factcheck-GPT labels contradictions)
- partial / partially-support / Partial / Incomplete / partially_supported -> ``UNSUPPORTED`` (part of the
  claim is not grounded, which is what a monitor should flag)
- irrelevant / not_supported -> ``UNSUPPORTED``
- dropped: Factcheck-GPT claims with no passage, or with one passage supporting and another refuting
  (conflicting web evidence); ExpertQA claims labelled N/A or without a passage; FaithBench "Questionable"
- answers: hallucinated when any claim is not SUPPORTED (ExpertQA), "inconsistent" (SummEdits),
  worst label "Unwanted" (FaithBench; "Consistent" and "Benign" are faithful)

Splits are fixed by a hash of the source group (Factcheck-GPT: the prompt; SummEdits: the document;
ExpertQA: the question; WiCE: the Wikipedia article; FaithBench: the source text), so one group never
spans two splits: ``train`` 50% (may be tuned on), ``dev`` 20% (read freely), ``eval`` 30% (run once
per judge version, never read to fix errors).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from claimwatch.calibration import LabeledAnswer, LabeledClaim

__all__ = [
    "SETS",
    "SPLITS",
    "SHA256",
    "RealDataMissing",
    "RealSet",
    "data_root",
    "split_of",
    "load_real",
    "claim_label",
    "factcheck_stance_label",
    "read_rows",
    "BUMP_TYPES",
    "BumpEdit",
    "bump_type",
    "load_bump",
]

SETS: tuple[str, ...] = ("factcheck-gpt", "summedits", "expertqa", "wice", "faithbench")
SPLITS: tuple[str, ...] = ("train", "dev", "eval")
#: salt of the split hash: changing it reshuffles every split (never do it within a version)
SPLIT_SALT = "claimwatch-real-v1"
#: sha256 of each committed file's decompressed bytes (as printed by data/real/extract.py)
SHA256: dict[str, str] = {
    "factcheck-gpt/claims.jsonl.gz": "2dfc0f337d8432490c55aa45a30dd8aab0a38c5a2618579257d325307dd9f8a5",
    "summedits/docs.jsonl.gz": "9103481ecd6335d920a41c9a514f752e60905e1b8e4459625cb85434feefeba5",
    "summedits/summaries.jsonl.gz": "8fc1f32c9478fc86536c6bc567b9169cd7e6b5f12b4d77516b64e16b248276ed",
    "expertqa/answers.jsonl.gz": "7b637c6d822972e0fea2ffa66ec3b8867f704d53eada36727aaf742f9bf10d1e",
    "wice/claims.jsonl.gz": "cc6241687f2c09990e3b1d2a8bb24d3fd1cb2a0cb28b71c53775dc449ab6e4c6",
    "bump/articles.jsonl.gz": "2dfb9d4055f571662c1ffb63b523b354ff3e073efd18c58fb9bc51ebec01f1ff",
    "bump/edits.jsonl.gz": "d43defb549de5db3f769b1dac2ac55cb327b43b4df92dffbd5e1d6a2a5277e96",
}
#: sha256 of the upstream FaithBench.csv (vectara/FaithBench cf89797d), checked by fetch.py and the loader
FAITHBENCH_SHA256 = "b64595319c5a0673c7af00a12c9340a79aeb3437c021b097745413da42d80a09"

#: upstream claim label -> gold label (None: dropped)
CLAIM_LABELS: dict[str, str | None] = {
    # ExpertQA
    "Complete": "SUPPORTED",
    "Partial": "UNSUPPORTED",
    "Incomplete": "UNSUPPORTED",
    "N/A": None,
    # WiCE
    "supported": "SUPPORTED",
    "partially_supported": "UNSUPPORTED",
    "not_supported": "UNSUPPORTED",
}


class RealDataMissing(FileNotFoundError):
    """The real-data folder (or a set's file) is not there: a wheel install, or FaithBench not fetched."""


def data_root() -> Path:
    """``$CLAIMWATCH_REAL_DATA`` or ``data/real`` at the top of this source checkout."""
    env = os.environ.get("CLAIMWATCH_REAL_DATA")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "data" / "real"


def split_of(group: str) -> str:
    """The fixed split of a source group: 50% train, 20% dev, 30% eval by a salted sha256 of the group."""
    bucket = int(hashlib.sha256(f"{SPLIT_SALT}|{group}".encode("utf-8")).hexdigest()[:8], 16) % 100
    return "train" if bucket < 50 else "dev" if bucket < 70 else "eval"


def claim_label(upstream: str | None) -> str | None:
    """The gold label of an ExpertQA / WiCE claim label (``None``: the claim is dropped)."""
    return CLAIM_LABELS.get(upstream) if upstream is not None else None


#: one Factcheck-GPT passage's human stance -> the label of the claim against that passage alone
FACTCHECK_STANCE_LABELS: dict[str, str] = {
    "completely-support": "SUPPORTED",
    "refute": "CONTRADICTED",
    "partially-support": "UNSUPPORTED",
    "irrelevant": "UNSUPPORTED",
}


def factcheck_stance_label(stance: str) -> str | None:
    """The label of a Factcheck-GPT claim against one passage, from that passage's stance (``None``: unknown)."""
    return FACTCHECK_STANCE_LABELS.get(stance)


def factcheck_label(stances: list[str]) -> str | None:
    """Factcheck-GPT: one claim, one human stance per retrieved passage -> the claim's label against them all."""
    s = set(stances)
    if not s:
        return None
    support, refute = "completely-support" in s, "refute" in s
    if support and refute:
        return None  # conflicting web evidence: no single answer to "grounded in this context?"
    if support:
        return "SUPPORTED"
    if refute:
        return "CONTRADICTED"
    return "UNSUPPORTED"  # partially-support / irrelevant only


@dataclass
class RealSet:
    """One set's items in one split (or all): claims and/or answers, with what was dropped and why."""

    name: str
    split: str | None
    claims: list[LabeledClaim] = field(default_factory=list)
    answers: list[LabeledAnswer] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    evaluation_only: bool = False

    def summary(self) -> dict[str, Any]:
        def count(xs: list[Any]) -> dict[str, int]:
            out: dict[str, int] = {}
            for x in xs:
                out[x.label] = out.get(x.label, 0) + 1
            return dict(sorted(out.items()))

        return {
            "set": self.name,
            "split": self.split,
            "claims": len(self.claims),
            "claim_labels": count(self.claims),
            "answers": len(self.answers),
            "answer_labels": count(self.answers),
            "dropped": self.dropped,
            "evaluation_only": self.evaluation_only,
        }


def read_rows(rel: str, root: Path | None = None) -> Iterator[dict[str, Any]]:
    """The upstream-shaped rows of one committed file (``factcheck-gpt/claims.jsonl.gz``, ...)."""
    return _read(rel, root or data_root())


def _read(rel: str, root: Path) -> Iterator[dict[str, Any]]:
    path = root / rel
    if not path.is_file():
        raise RealDataMissing(f"{path} not found (a source checkout has data/real/; or set CLAIMWATCH_REAL_DATA)")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def _chunks(texts: list[str]) -> tuple[str, ...]:
    """Non-empty, stripped, de-duplicated (first kept) context chunks."""
    seen: dict[str, None] = {}
    for t in texts:
        t = (t or "").strip()
        if t:
            seen.setdefault(t, None)
    return tuple(seen)


def _drop(d: dict[str, int], why: str) -> None:
    d[why] = d.get(why, 0) + 1


def _factcheck(root: Path, out: RealSet) -> None:
    for r in _read("factcheck-gpt/claims.jsonl.gz", root):
        ctx = _chunks(r["evidence"])
        label = factcheck_label(r["stances"]) if ctx else None
        if label is None:
            why = "no passage" if not ctx else "no stance" if not r["stances"] else "passages support and refute"
            _drop(out.dropped, why)
            continue
        group = f"fcgpt|{r['prompt']}"
        out.claims.append(
            LabeledClaim(
                id=r["id"],
                claim=r["claim"],
                context=ctx,
                label=label,
                extra={
                    "split": split_of(group),
                    "group": group,
                    "model": "ChatGPT",
                    "upstream_label": ",".join(sorted(set(r["stances"]))),
                    "question": r["prompt"],
                },
            )
        )


def _summedits(root: Path, out: RealSet) -> None:
    docs = {d["doc_id"]: d["doc"] for d in _read("summedits/docs.jsonl.gz", root)}
    for r in _read("summedits/summaries.jsonl.gz", root):
        group = f"summedits|{r['doc_id']}"
        out.answers.append(
            LabeledAnswer(
                id=f"summedits-{r['id']}",
                question=None,
                context=(docs[r["doc_id"]],),
                answer=r["summary"],
                label="faithful" if r["label"] == 1 else "hallucinated",
                extra={
                    "split": split_of(group),
                    "group": group,
                    "domain": r["domain"],
                    "model": "gpt-3.5+edits",
                    "upstream_label": str(r["label"]),
                },
            )
        )


def _expertqa(root: Path, out: RealSet) -> None:
    for r in _read("expertqa/answers.jsonl.gz", root):
        group = f"expertqa|{r['question']}"
        split = split_of(group)
        labels: list[str | None] = []
        passages: list[str] = []
        for i, c in enumerate(r["claims"]):
            ctx = _chunks(c["evidence"])
            label = claim_label(c["support"]) if ctx else None
            labels.append(label)
            if label is None:
                _drop(out.dropped, "claim: no passage" if not ctx else f"claim: label {c['support']}")
                continue
            passages += list(ctx)
            out.claims.append(
                LabeledClaim(
                    id=f"{r['id']}-c{i}",
                    claim=c["claim"],
                    context=ctx,
                    label=label,
                    extra={
                        "split": split,
                        "group": group,
                        "model": r["system"],
                        "domain": r["field"],
                        "upstream_label": str(c["support"]),
                        "question": r["question"],
                    },
                )
            )
        if not labels or any(lab is None for lab in labels):
            _drop(out.dropped, "answer: a claim unlabelled or without passage")
            continue
        out.answers.append(
            LabeledAnswer(
                id=r["id"],
                question=r["question"],
                context=_chunks(passages),
                answer=r["answer"],
                label="faithful" if all(lab == "SUPPORTED" for lab in labels) else "hallucinated",
                extra={"split": split, "group": group, "model": r["system"], "domain": r["field"]},
            )
        )


def _wice(root: Path, out: RealSet) -> None:
    for r in _read("wice/claims.jsonl.gz", root):
        label = claim_label(r["label"])
        text = "\n".join(s.strip() for s in r["evidence"] if s and s.strip())
        if label is None or not text:
            _drop(out.dropped, f"label {r['label']}" if label is None else "no evidence")
            continue
        group = f"wice|{r['title']}"
        out.claims.append(
            LabeledClaim(
                id=r["id"],
                claim=r["claim"],
                context=(text,),
                label=label,
                extra={
                    "split": split_of(group),
                    "group": group,
                    "model": "human (Wikipedia)",
                    "upstream_label": r["label"],
                },
            )
        )


def faithbench_path(root: Path | None = None) -> Path:
    return (root or data_root()) / "faithbench" / "FaithBench.csv"


def _faithbench(root: Path, out: RealSet) -> None:
    path = faithbench_path(root)
    if not path.is_file():
        raise RealDataMissing(
            f"{path} not found: FaithBench (CC BY-NC-SA 4.0) is not committed; "
            "run python3 data/real/faithbench/fetch.py (needs network)"
        )
    raw = path.read_bytes()
    if hashlib.sha256(raw).hexdigest() != FAITHBENCH_SHA256:
        raise RealDataMissing(f"{path}: sha256 differs from the pinned upstream file (vectara/FaithBench cf89797d)")
    out.evaluation_only = True
    for i, r in enumerate(csv.DictReader(raw.decode("utf-8").splitlines())):
        worst = r["worst-label"]
        if worst == "Questionable":
            _drop(out.dropped, "label Questionable")
            continue
        group = f"faithbench|{r['source']}"
        out.answers.append(
            LabeledAnswer(
                id=f"faithbench-{i}",
                question=None,
                context=(r["source"].strip(),),
                answer=r["summary"].strip(),
                label="hallucinated" if worst == "Unwanted" else "faithful",
                extra={"split": split_of(group), "group": group, "model": r["LLM"], "upstream_label": worst},
            )
        )


_LOADERS = {
    "factcheck-gpt": _factcheck,
    "summedits": _summedits,
    "expertqa": _expertqa,
    "wice": _wice,
    "faithbench": _faithbench,
}


def _sample_key(ident: str) -> str:
    return hashlib.sha256(f"{SPLIT_SALT}|sample|{ident}".encode("utf-8")).hexdigest()


def load_real(name: str, split: str | None = None, limit: int | None = None, root: Path | None = None) -> RealSet:
    """Claims and answers of set ``name`` in ``split`` (``None``: all splits), in file order.

    ``limit`` caps claims and answers separately with a fixed pseudo-random sample (by a hash of the
    item id, so a larger limit keeps every item of a smaller one).
    """
    if name not in _LOADERS:
        raise ValueError(f"unknown real data set {name!r}; expected one of {', '.join(SETS)}")
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    out = RealSet(name=name, split=split)
    _LOADERS[name](root or data_root(), out)
    if split is not None:
        out.claims = [c for c in out.claims if c.extra["split"] == split]
        out.answers = [a for a in out.answers if a.extra["split"] == split]
    if limit is not None:
        keep_c = {c.id for c in sorted(out.claims, key=lambda c: _sample_key(c.id))[:limit]}
        keep_a = {a.id for a in sorted(out.answers, key=lambda a: _sample_key(a.id))[:limit]}
        out.claims = [c for c in out.claims if c.id in keep_c]
        out.answers = [a for a in out.answers if a.id in keep_a]
    return out


#: BUMP's human error types (task 1 ``corrected_error_type``, task 2 ``error_type``, " Error" suffix removed)
BUMP_TYPES: tuple[str, ...] = (
    "Intrinsic Entity",
    "Extrinsic Entity",
    "Intrinsic Predicate",
    "Extrinsic Predicate",
    "Intrinsic Circumstance",
    "Extrinsic Circumstance",
    "Coreference",
    "Other",
)


@dataclass(frozen=True)
class BumpEdit:
    """One BUMP row: a reference summary of ``article``, its minimally edited unfaithful twin, the human type."""

    id: str
    task: int
    article_id: str
    article: str
    reference: str
    edited: str
    #: one of ``BUMP_TYPES``
    error_type: str
    #: the upstream label as written (task 1: ``corrected_error_type``; task 2: ``error_type``)
    upstream_type: str
    split: str
    group: str


def bump_type(upstream: str) -> str:
    """The BUMP type of an upstream label ("Intrinsic Entity Error" and "Intrinsic Entity" alike)."""
    t = upstream.strip().removesuffix(" Error").strip()
    if t not in BUMP_TYPES:
        raise ValueError(f"unknown BUMP error type {upstream!r}")
    return t


def load_bump(split: str | None = None, root: Path | None = None) -> list[BumpEdit]:
    """BUMP's 889 edited summaries (693 task 1, 196 task 2) in ``split`` (``None``: all), in file order.

    The type is task 1's ``corrected_error_type`` (upstream's statistics table counts it; it differs from
    ``error_type``, the type the annotator was asked to make, in 96 rows) and task 2's ``error_type``. Split by
    article id (the same id is the same article in both tasks), so an article's edits never span two splits.
    """
    if split is not None and split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    base = root or data_root()
    articles = {str(a["article_id"]): a["article"] for a in _read("bump/articles.jsonl.gz", base)}
    out = []
    for r in _read("bump/edits.jsonl.gz", base):
        upstream = r.get("corrected_error_type") or r["error_type"]
        aid = str(r["article_id"])
        group = f"bump|{aid}"
        edit = BumpEdit(
            id=r["id"],
            task=int(r["task"]),
            article_id=aid,
            article=articles[aid],
            reference=r["reference_summary"],
            edited=r["edited_summary"],
            error_type=bump_type(upstream),
            upstream_type=upstream,
            split=split_of(group),
            group=group,
        )
        if split is None or edit.split == split:
            out.append(edit)
    return out


def file_sha256(rel: str, root: Path | None = None) -> str:
    """sha256 of a committed file's decompressed bytes (compare with ``SHA256[rel]``)."""
    with gzip.open((root or data_root()) / rel, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()

"""Which claims to label: the population of judged claims, its strata, and a seeded stratified sample (the plan).

The population is every judged claim (SUPPORTED, UNSUPPORTED, CONTRADICTED; never ERROR, and never a claim
whose text the record does not keep) of the last result record per trace that matches the filters. A stratum is
``[slice=value|]VERDICT|confidence band``. The sample puts ``flagged_share`` of the labels on the judge-flagged
strata (UNSUPPORTED, CONTRADICTED) and the rest on the judge-passed (SUPPORTED) ones, proportionally to the
strata's sizes within each side, each stratum at most its size, then shuffles the whole sample: labelling any
prefix of it is still a random sample within every stratum, so stopping early is fine (the profile weighs each
stratum by its population share, not by how many of its claims were labelled).

The plan (population counts per stratum and the sampled claims with what the labeller is shown) is written next
to the labels file once, and a later session resumes from it without reading the results again.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from claimwatch.calibration import LABELS
from claimwatch.claims_query import matches
from contract.errors import ConfigError

FLAGGED = ("UNSUPPORTED", "CONTRADICTED")
#: the judge's call on a whole answer (``--unit answer``): hallucinated = at least one flagged claim
HALLUCINATED, FAITHFUL = "hallucinated", "faithful"
#: judge calls that put an item on the flagged side of the sample
FLAGGED_CALLS = (*FLAGGED, HALLUCINATED)
UNITS = ("claim", "answer")
PLAN_VERSION = 1
NO_CONTEXT = "(the result record kept no evidence chunk for this claim)"


def read_results_topic(
    bootstrap: str | None, topic: str | None, *, since: str | None, from_offset: int | None, max_records: int
) -> list[dict[str, Any]]:
    """Result records from the results topic, with ``claimwatch claims``' reader."""
    from claimwatch.claims_query import open_results, parse_since, read_results

    consumer, name = open_results(bootstrap, topic)
    try:
        since_s = None if from_offset is not None or not since else parse_since(since)
        return [
            v
            for v, _ in read_results(consumer, name, since_s=since_s, from_offset=from_offset, max_records=max_records)
        ]
    finally:
        consumer.close()


def band(confidence: float | None, cuts: Sequence[float]) -> str:
    """``conf<0.80`` / ``conf>=0.80`` (for cuts (0.8,)); a missing confidence counts as 0.5."""
    c = 0.5 if confidence is None else float(confidence)
    lower = [x for x in cuts if c >= x]
    upper = [x for x in cuts if c < x]
    if not lower:
        return f"conf<{min(cuts):.2f}"
    if not upper:
        return f"conf>={max(cuts):.2f}"
    return f"conf{max(lower):.2f}-{min(upper):.2f}"


@dataclass(frozen=True)
class Candidate:
    """One judged claim of the population, with what a labeller sees and what the label record keeps."""

    id: str
    stratum: str
    stratum_slice: str | None
    item: dict[str, Any]


def population(
    results: Iterable[Mapping[str, Any]],
    *,
    cuts: Sequence[float] = (0.8,),
    by: str | None = None,
    filters: Mapping[str, str | None] | None = None,
) -> list[Candidate]:
    """Every judged claim with text in the last record per trace matching ``filters``, with its stratum."""
    latest: dict[str, Mapping[str, Any]] = {}
    for r in results:  # the results topic is at-least-once: one record per trace, the last
        latest[str(r.get("trace_id"))] = r
    out = []
    for trace_id, r in latest.items():
        if filters and not matches(dict(r), dict(filters)):
            continue
        slices = {k: str(v) for k, v in (r.get("slices") or {}).items()}
        for claim in r.get("claims") or []:
            if not isinstance(claim, dict) or claim.get("verdict") not in LABELS or not claim.get("text"):
                continue
            verdict = claim["verdict"]
            sl = f"{by}={slices.get(by, '?')}" if by else None
            stratum = "|".join(x for x in (sl, verdict, band(claim.get("confidence"), cuts)) if x)
            cid = f"{trace_id}/{claim.get('id')}"
            item = {
                "id": cid,
                "trace_id": trace_id,
                "claim_id": str(claim.get("id")),
                "claim": claim["text"],
                "judge": str(r.get("judge") or "?"),
                "judge_verdict": verdict,
                "judge_confidence": claim.get("confidence"),
                "reason": claim.get("reason"),
                "question": r.get("question"),
                "evidence": claim.get("evidence"),
                "context_excerpt": claim.get("context_excerpt"),
                "context_id": claim.get("context_id"),
                "context_source": claim.get("context_source"),
                "slices": slices,
            }
            out.append(Candidate(cid, stratum, sl, item))
    return out


#: labels every stratum gets first (when the sample is big enough), so that no stratum is known only by its prior
FLOOR = 2


def population_answers(
    results: Iterable[Mapping[str, Any]],
    *,
    cuts: Sequence[float] = (0.8,),
    by: str | None = None,
    filters: Mapping[str, str | None] | None = None,
) -> list[Candidate]:
    """Every evaluated answer with text (last record per trace, matching ``filters``): the gate's unit. The judge
    calls it hallucinated when one of its claims is UNSUPPORTED or CONTRADICTED; its band is that of its least
    confident judged claim."""
    latest: dict[str, Mapping[str, Any]] = {}
    for r in results:
        latest[str(r.get("trace_id"))] = r
    out = []
    for trace_id, r in latest.items():
        if filters and not matches(dict(r), dict(filters)):
            continue
        judged = [c for c in r.get("claims") or [] if isinstance(c, dict) and c.get("verdict") in LABELS]
        if not judged or not r.get("answer"):
            continue
        slices = {k: str(v) for k, v in (r.get("slices") or {}).items()}
        call = HALLUCINATED if any(c["verdict"] in FLAGGED for c in judged) else FAITHFUL
        low = min(float(c["confidence"]) if c.get("confidence") is not None else 0.5 for c in judged)
        sl = f"{by}={slices.get(by, '?')}" if by else None
        stratum = "|".join(x for x in (sl, f"answer:{call}", band(low, cuts)) if x)
        claims = [
            {
                k: c.get(k)
                for k in (
                    "id",
                    "text",
                    "verdict",
                    "confidence",
                    "evidence",
                    "context_excerpt",
                    "context_id",
                    "context_source",
                    "reason",
                )
            }
            for c in judged
        ]
        item = {
            "id": trace_id,
            "unit": "answer",
            "trace_id": trace_id,
            "judge": str(r.get("judge") or "?"),
            "judge_verdict": call,
            "judge_confidence": low,
            "question": r.get("question"),
            "answer": r["answer"],
            "claims": claims,
            "slices": slices,
        }
        out.append(Candidate(trace_id, stratum, sl, item))
    return out


def _allocate(sizes: Mapping[str, int], n: int) -> dict[str, int]:
    """``n`` split over strata: ``FLOOR`` each first (when ``n`` allows), the rest proportionally to ``sizes``
    (largest remainders), none above its size."""
    alloc = dict.fromkeys(sizes, 0)
    left = min(n, sum(sizes.values()))
    if left >= FLOOR * len(sizes):
        for k in sizes:
            alloc[k] = min(FLOOR, sizes[k])
            left -= alloc[k]
    while left > 0:
        room = {k: sizes[k] - alloc[k] for k in sizes if sizes[k] > alloc[k]}
        total = sum(room.values())
        shares = {k: left * room[k] / total for k in room}
        give = {k: min(room[k], int(shares[k])) for k in room}
        if not any(give.values()):  # hand out the remainder one by one, largest share first
            for k in sorted(room, key=lambda k: (-shares[k], k))[:left]:
                give[k] = 1
        for k, g in give.items():
            alloc[k] += g
            left -= g
    return alloc


def draw_plan(
    candidates: Sequence[Candidate],
    n: int,
    *,
    seed: int = 1,
    flagged_share: float = 0.5,
    source: str = "",
    cuts: Sequence[float] = (0.8,),
    by: str | None = None,
    unit: str = "claim",
) -> dict[str, Any]:
    """The labelling plan: strata populations and a shuffled stratified sample of ``n`` claims."""
    if not candidates:
        raise ConfigError(f"no judged {unit}s with text to label (wrong source or filters, or the results omit text)")
    strata: dict[str, list[Candidate]] = {}
    for c in candidates:
        strata.setdefault(c.stratum, []).append(c)
    sizes = {k: len(v) for k, v in strata.items()}
    flagged = {k: v for k, v in sizes.items() if strata[k][0].item["judge_verdict"] in FLAGGED_CALLS}
    passed = {k: v for k, v in sizes.items() if k not in flagged}
    want_f = min(round(n * flagged_share), sum(flagged.values()))
    want_p = min(n - want_f, sum(passed.values()))
    want_f = min(n - want_p, sum(flagged.values()))  # the other side takes what one side cannot fill
    alloc = {**_allocate(flagged, want_f), **_allocate(passed, want_p)}
    rng = random.Random(seed)
    items = []
    total = len(candidates)
    for key in sorted(strata):
        members = sorted(strata[key], key=lambda c: c.id)
        for c in rng.sample(members, alloc[key]):
            items.append(
                {
                    **c.item,
                    "stratum": key,
                    "stratum_slice": c.stratum_slice,
                    "stratum_population": sizes[key],
                    "stratum_share": round(sizes[key] / total, 6),
                    "population_total": total,
                }
            )
    rng.shuffle(items)
    return {
        "version": PLAN_VERSION,
        "unit": unit,
        "source": source,
        "seed": seed,
        "n": len(items),
        "flagged_share": flagged_share,
        "confidence_cuts": list(cuts),
        "by": by,
        "population_total": total,
        "strata": {
            k: {
                "judge_verdict": strata[k][0].item["judge_verdict"],
                "slice": strata[k][0].stratum_slice,
                "population": sizes[k],
                "sampled": alloc[k],
            }
            for k in sorted(strata)
        },
        "items": items,
    }


def plan_path(labels_path: str | Path) -> Path:
    return Path(f"{labels_path}.plan.json")


def save_plan(plan: Mapping[str, Any], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(plan, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def load_plan(path: Path) -> dict[str, Any]:
    plan = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(plan, dict) or plan.get("version") != PLAN_VERSION or not isinstance(plan.get("items"), list):
        raise ConfigError(f"{path}: not a labelling plan this version can read")
    return plan


def _stratum_fields(item: Mapping[str, Any]) -> dict[str, Any]:
    """What every label line says of where it was sampled from: the judge's call, the stratum and its population, and
    the release and route (short top-level strings: calibrate breaks results down by them)."""
    out: dict[str, Any] = {
        "judge": item.get("judge"),
        "judge_verdict": item["judge_verdict"],
        "stratum": item["stratum"],
        "stratum_population": item["stratum_population"],
        "stratum_share": item["stratum_share"],
        "population_total": item["population_total"],
        "judge_confidence": item.get("judge_confidence"),
    }
    if item.get("stratum_slice"):
        out["stratum_slice"] = item["stratum_slice"]
    slices = item.get("slices") or {}
    out.update({key: slices[key] for key in ("release", "route") if slices.get(key)})
    return out


def answer_label_record(item: Mapping[str, Any], label: str, *, labeller: str | None, at: float) -> dict[str, Any]:
    """An answer's label line: ``claimwatch calibrate --answers``' fields (id, question, context, answer, label
    faithful/hallucinated) and the stratum, its population and the judge's call, as for claims."""
    chunks = [c.get("context_excerpt") or c.get("evidence") for c in item.get("claims") or []]
    context = list(dict.fromkeys(x for x in chunks if x)) or [NO_CONTEXT]
    slices = item.get("slices") or {}
    rec: dict[str, Any] = {
        "id": item["id"],
        "question": item.get("question"),
        "context": context,
        "answer": item["answer"],
        "label": label,
        "unit": "answer",
        **_stratum_fields(item),
    }
    rec["source"] = {
        "trace_id": item.get("trace_id"),
        "claims": item.get("claims"),
        "slices": slices,
        "labelled_at": round(at, 3),
        "labeller": labeller,
    }
    return rec


def label_record(item: Mapping[str, Any], label: str, *, labeller: str | None, at: float) -> dict[str, Any]:
    """What a label line holds: ``claimwatch calibrate``'s fields (id, claim, context, label), the stratum and its
    population, the judge's verdict; short string fields only at the top level (calibrate breaks results down by
    every top-level string), the rest under ``source``."""
    context = item.get("context_excerpt") or item.get("evidence") or NO_CONTEXT
    slices = item.get("slices") or {}
    rec: dict[str, Any] = {"id": item["id"], "claim": item["claim"], "context": [context], "label": label}
    rec.update(_stratum_fields(item))
    rec["source"] = {
        k: item.get(k)
        for k in ("trace_id", "claim_id", "question", "evidence", "context_id", "context_source", "reason")
    }
    rec["source"].update({"slices": slices, "labelled_at": round(at, 3), "labeller": labeller})
    return rec

"""Reading a release's :class:`~claimwatch.gate.counts.ReleaseCounts` from the Prometheus HTTP API."""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, replace
from typing import Any, Callable

from claimwatch.gate.counts import UNKNOWN_JUDGE, VERDICTS, Counts, ReleaseCounts
from claimwatch.gate.promql import (
    ANSWERS,
    AT_RISK,
    CLAIMS,
    CONTRADICTED,
    FLAGGED,
    JUDGE_ID,
    WITH_FAILURE,
    GateError,
    count_query,
    gaps_query,
    judge_query,
)

Opener = Callable[..., Any]


@dataclass(frozen=True)
class Source:
    """Where and what to read: the Prometheus URL, the release label and extra matchers."""

    url: str
    label: str = "release"
    extra_selector: str = ""
    timeout: float = 10.0


def queries(release: str, window: str, label: str = "release", extra: str = "") -> dict[str, str]:
    """The queries the gate sends for one release (field -> PromQL), each split by ``judge_id`` (evaluated answers
    also by ``model``, for the same-family note: :mod:`claimwatch.gate.same_family`): five counts
    (answers with a claim of each failure class among them), how many of the release's evaluated-answer series
    the at-risk counter does not cover (``at_risk_gaps``), and the judges of workers from before judge ids
    (``flagged`` is the any-claim count, read when the at-risk counter does not cover the release's answers)."""
    return {
        "answers": count_query(ANSWERS, release, window, label, extra, by=f"{JUDGE_ID}, model"),
        "at_risk": count_query(AT_RISK, release, window, label, extra, by=JUDGE_ID),
        "at_risk_gaps": gaps_query(release, window, label, extra, by=JUDGE_ID),
        "flagged": count_query(FLAGGED, release, window, label, extra, by=JUDGE_ID),
        "contradicted": count_query(CONTRADICTED, release, window, label, extra, by=JUDGE_ID),
        "claims": count_query(CLAIMS, release, window, label, extra, by=f"{JUDGE_ID}, verdict"),
        "types": count_query(WITH_FAILURE, release, window, label, extra, by=f"{JUDGE_ID}, failure_type"),
        "judges": judge_query(release, window, label, extra),
    }


def instant_query(
    url: str, query: str, *, timeout: float = 10.0, at: float | None = None, opener: Opener = urllib.request.urlopen
) -> list[dict[str, Any]]:
    """The result vector of ``query`` (``/api/v1/query``, evaluated at ``at`` if given); :class:`GateError` on failure."""
    params = {"query": query, **({"time": f"{at:.3f}"} if at is not None else {})}
    full = url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode(params)
    try:
        with opener(full, timeout=timeout) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        raise GateError(f"Prometheus answered HTTP {exc.code} to {query}: {detail}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise GateError(f"cannot reach Prometheus at {url}: {exc}") from exc
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise GateError(f"Prometheus returned non-JSON: {body[:200]!r}") from exc
    if not isinstance(payload, dict):
        raise GateError(f"Prometheus returned no JSON object: {body[:200]!r}")
    if payload.get("status") != "success":
        raise GateError(f"Prometheus query failed: {payload.get('errorType')}: {payload.get('error')}")
    data = payload.get("data") or {}
    if not isinstance(data, dict) or data.get("resultType") != "vector":
        raise GateError(
            f"expected an instant vector, got {data.get('resultType') if isinstance(data, dict) else data!r}"
        )
    result = data.get("result") or []
    if not isinstance(result, list) or not all(
        isinstance(s, dict) and isinstance(s.get("metric", {}), dict) and isinstance(s.get("value"), list)
        for s in result
    ):
        raise GateError(f"Prometheus returned a malformed vector for {query}: {str(result)[:200]}")
    return list(result)


def _count(sample: dict[str, Any]) -> int:
    """A sample's value as a count; :class:`GateError` (the gate holds) for anything that is not a finite count
    >= 0 (``NaN``, ``+Inf``, a missing or non-numeric value): read as 0 it could promote, read as a huge number
    roll back."""
    value = sample.get("value")
    raw = value[1] if isinstance(value, list) and len(value) == 2 else None
    try:
        x = float(raw) if isinstance(raw, (str, int, float)) and not isinstance(raw, bool) else math.nan
    except ValueError:
        x = math.nan
    if not math.isfinite(x) or x < 0:
        labels = sample.get("metric") or {}
        raise GateError(
            f"Prometheus returned {raw!r} for a count{f' {labels}' if labels else ''}: not a finite count >= 0 "
            "(a counter exported as NaN or Inf, or a malformed answer); the gate does not decide on it"
        )
    # exact counts are integers; round() only absorbs float formatting
    return int(round(x))


def fetch_counts(
    source: Source, release: str, window: str = "1h", *, opener: Opener = urllib.request.urlopen
) -> ReleaseCounts:
    """Evaluated answers, flagged answers and claims by verdict of ``release`` over ``window``, in all and per judge
    (``ReleaseCounts.per_judge``, from the counters' ``judge_id`` label; workers from before judge ids are named by
    their ``claimwatch_judge_info``).

    Flagged = answers at risk (``claimwatch_answers_at_risk_total``) where that counter covers the release's
    evaluated answers in the window: every worker that counted them exports it, for the whole window
    (:func:`claimwatch.gate.promql.at_risk_gaps`). A release whose workers do not export it (from before the
    answer risk: no series at all, where a new worker has one at 0 per slice) is counted by the any-claim rule
    (``claimwatch_answers_with_unsupported_total``), and ``flag_rule`` says so; so is a release whose answers
    were counted partly by such workers (a rolling upgrade of the workers inside the window: ``flag_rule``
    "mixed"), since an at-risk count of some workers over the answers of all of them would understate the
    share. The rule is decided for the release and for each judge. Every value must be a finite count
    (:class:`GateError` otherwise: the gate holds).

    The queries are evaluated at one instant, so a scrape between them cannot make the
    flagged count include an answer the answer count does not.
    """
    q = queries(release, window, source.label, source.extra_selector)
    at = time.time()
    read = lambda name: instant_query(source.url, q[name], timeout=source.timeout, at=at, opener=opener)  # noqa: E731
    vectors = {name: read(name) for name in q}
    legacy = sorted({str(s["metric"]["judge"]) for s in vectors["judges"] if (s.get("metric") or {}).get("judge")})
    old_judge = legacy[0] if len(legacy) == 1 else UNKNOWN_JUDGE
    parts: dict[str, _Part] = {}
    for name in ("answers", "flagged", "contradicted", "at_risk", "at_risk_gaps", "claims", "types"):
        for sample in vectors[name]:
            labels = sample.get("metric") or {}
            judge = str(labels.get(JUDGE_ID) or old_judge)
            parts.setdefault(judge, _Part()).add(name, labels, _count(sample))
    per_judge = {judge: part.counts(judge) for judge, part in parts.items()}
    pooled = _Part()
    for part in parts.values():
        pooled.merge(part)
    whole = pooled.counts(None)
    judges = {j for j, c in per_judge.items() if j != UNKNOWN_JUDGE and (c.answers or len(per_judge) == 1)}
    if UNKNOWN_JUDGE in per_judge:  # counted by several workers from before judge ids: every name they export
        judges.update(legacy)
    return replace(whole, judges=tuple(sorted(judges)), per_judge=tuple(sorted(per_judge.items())))


class _Part:
    """The samples of one judge (or of all), summed by field."""

    def __init__(self) -> None:
        self.scalars = {"answers": 0, "flagged": 0, "contradicted": 0, "at_risk": 0, "at_risk_gaps": 0}
        self.has_at_risk = False
        self.verdicts = dict.fromkeys(VERDICTS, 0)
        self.types: dict[str, int] = {}
        self.models: dict[str, int] = {}

    def add(self, name: str, labels: dict[str, Any], n: int) -> None:
        if name == "claims":
            verdict = labels.get("verdict")
            if verdict in self.verdicts:
                self.verdicts[verdict] += n
        elif name == "types":
            if labels.get("failure_type"):
                self.types[str(labels["failure_type"])] = self.types.get(str(labels["failure_type"]), 0) + n
        else:
            self.scalars[name] += n
            self.has_at_risk |= name == "at_risk"
            model = labels.get("model") if name == "answers" else None
            if model and model != "unknown":
                self.models[str(model)] = self.models.get(str(model), 0) + n

    def merge(self, other: "_Part") -> None:
        for k, v in other.scalars.items():
            self.scalars[k] += v
        for k, v in other.verdicts.items():
            self.verdicts[k] += v
        for k, v in other.types.items():
            self.types[k] = self.types.get(k, 0) + v
        for k, v in other.models.items():
            self.models[k] = self.models.get(k, 0) + v
        self.has_at_risk |= other.has_at_risk

    def counts(self, judge: str | None) -> ReleaseCounts:
        s = self.scalars
        flagged = s["flagged"]
        rule: tuple[str, ...] = ()
        if self.has_at_risk and not s["at_risk_gaps"]:
            flagged, rule = s["at_risk"], ("at_risk",)
        elif self.has_at_risk:  # some answers counted by workers without the answer risk: the any-claim rule
            rule = ("any_claim", "at_risk")
        elif s["answers"]:
            rule = ("any_claim",)
        return ReleaseCounts(
            answers=s["answers"],
            flagged=flagged,
            contradicted=s["contradicted"],
            claims=Counts(**self.verdicts),
            judges=(judge,) if judge and judge != UNKNOWN_JUDGE else (),
            flagged_any_claim=s["flagged"],
            flag_rules=rule,
            failure_types=tuple(sorted((t, n) for t, n in self.types.items() if n)),
            models=tuple(sorted((m, n) for m, n in self.models.items() if n)),
        )

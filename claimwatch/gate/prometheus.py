"""Reading a release's :class:`~claimwatch.gate.counts.ReleaseCounts` from the Prometheus HTTP API."""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable

from claimwatch.gate.counts import VERDICTS, Counts, ReleaseCounts
from claimwatch.gate.promql import (
    ANSWERS,
    AT_RISK,
    CLAIMS,
    CONTRADICTED,
    FLAGGED,
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
    """The queries the gate sends for one release (field -> PromQL): five counts (answers with a claim of each failure
    class among them), how many of the release's
    evaluated-answer series the at-risk counter does not cover (``at_risk_gaps``), and the judges behind them
    (``flagged`` is the any-claim count, read when the at-risk counter does not cover the release's answers)."""
    return {
        "answers": count_query(ANSWERS, release, window, label, extra),
        "at_risk": count_query(AT_RISK, release, window, label, extra),
        "at_risk_gaps": gaps_query(release, window, label, extra),
        "flagged": count_query(FLAGGED, release, window, label, extra),
        "contradicted": count_query(CONTRADICTED, release, window, label, extra),
        "claims": count_query(CLAIMS, release, window, label, extra, by="verdict"),
        "types": count_query(WITH_FAILURE, release, window, label, extra, by="failure_type"),
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
    """Evaluated answers, flagged answers and claims by verdict of ``release`` over ``window``, and the judges
    behind them (``claimwatch_judge_info``; empty for workers that do not export it).

    Flagged = answers at risk (``claimwatch_answers_at_risk_total``) where that counter covers the release's
    evaluated answers in the window: every worker that counted them exports it, for the whole window
    (:func:`claimwatch.gate.promql.at_risk_gaps`). A release whose workers do not export it (from before the
    answer risk: no series at all, where a new worker has one at 0 per slice) is counted by the any-claim rule
    (``claimwatch_answers_with_unsupported_total``), and ``flag_rule`` says so; so is a release whose answers
    were counted partly by such workers (a rolling upgrade of the workers inside the window: ``flag_rule``
    "mixed"), since an at-risk count of some workers over the answers of all of them would understate the
    share. Every value must be a finite count (:class:`GateError` otherwise: the gate holds).

    The queries are evaluated at one instant, so a scrape between them cannot make the
    flagged count include an answer the answer count does not.
    """
    q = queries(release, window, source.label, source.extra_selector)
    at = time.time()
    read = lambda name: instant_query(source.url, q[name], timeout=source.timeout, at=at, opener=opener)  # noqa: E731
    scalars = {name: sum(_count(s) for s in read(name)) for name in ("answers", "flagged", "contradicted")}
    scalars["flagged_any_claim"] = scalars["flagged"]
    at_risk = read("at_risk")
    at_risk_count = sum(_count(s) for s in at_risk)
    gaps = sum(_count(s) for s in read("at_risk_gaps"))
    verdicts = {v: 0 for v in VERDICTS}
    for sample in read("claims"):
        verdict = sample.get("metric", {}).get("verdict")
        if verdict in verdicts:
            verdicts[verdict] = _count(sample)
    judges = sorted({str(s.get("metric", {}).get("judge")) for s in read("judges") if s.get("metric", {}).get("judge")})
    types = {
        str(s["metric"]["failure_type"]): _count(s) for s in read("types") if s.get("metric", {}).get("failure_type")
    }
    rule: tuple[str, ...] = ()
    if at_risk and not gaps:
        scalars["flagged"] = at_risk_count
        rule = ("at_risk",)
    elif at_risk:  # some answers counted by workers without the answer risk: decided by the any-claim rule
        rule = ("any_claim", "at_risk")
    elif scalars["answers"]:
        rule = ("any_claim",)
    return ReleaseCounts(
        claims=Counts(**verdicts),
        judges=tuple(judges),
        flag_rules=rule,
        failure_types=tuple(sorted((t, n) for t, n in types.items() if n)),
        **scalars,
    )

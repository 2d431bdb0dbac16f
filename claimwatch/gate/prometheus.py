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
    GateError,
    count_query,
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
    """The queries the gate sends for one release (field -> PromQL): five counts and the judges behind them
    (``flagged`` is the any-claim count, read when the release has no ``at_risk`` series)."""
    return {
        "answers": count_query(ANSWERS, release, window, label, extra),
        "at_risk": count_query(AT_RISK, release, window, label, extra),
        "flagged": count_query(FLAGGED, release, window, label, extra),
        "contradicted": count_query(CONTRADICTED, release, window, label, extra),
        "claims": count_query(CLAIMS, release, window, label, extra, by="verdict"),
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
    if payload.get("status") != "success":
        raise GateError(f"Prometheus query failed: {payload.get('errorType')}: {payload.get('error')}")
    data = payload.get("data") or {}
    if data.get("resultType") != "vector":
        raise GateError(f"expected an instant vector, got {data.get('resultType')!r}")
    return list(data.get("result", []))


def _count(sample: dict[str, Any]) -> int:
    value = float(sample["value"][1])
    # exact counts are integers; round() only absorbs float formatting
    return 0 if math.isnan(value) or value < 0 else int(round(value))


def fetch_counts(
    source: Source, release: str, window: str = "1h", *, opener: Opener = urllib.request.urlopen
) -> ReleaseCounts:
    """Evaluated answers, flagged answers and claims by verdict of ``release`` over ``window``, and the judges
    behind them (``claimwatch_judge_info``; empty for workers that do not export it).

    Flagged = answers at risk (``claimwatch_answers_at_risk_total``); a release whose workers do not export it
    (from before the answer risk: no series at all, where a new worker has one at 0 per slice) is counted by
    the any-claim rule (``claimwatch_answers_with_unsupported_total``), and ``flag_rule`` says so.

    The queries are evaluated at one instant, so a scrape between them cannot make the
    flagged count include an answer the answer count does not.
    """
    q = queries(release, window, source.label, source.extra_selector)
    at = time.time()
    read = lambda name: instant_query(source.url, q[name], timeout=source.timeout, at=at, opener=opener)  # noqa: E731
    scalars = {name: sum(_count(s) for s in read(name)) for name in ("answers", "flagged", "contradicted")}
    scalars["flagged_any_claim"] = scalars["flagged"]
    at_risk = read("at_risk")
    if at_risk:
        scalars["flagged"] = sum(_count(s) for s in at_risk)
    verdicts = {v: 0 for v in VERDICTS}
    for sample in read("claims"):
        verdict = sample.get("metric", {}).get("verdict")
        if verdict in verdicts:
            verdicts[verdict] = _count(sample)
    judges = sorted({str(s.get("metric", {}).get("judge")) for s in read("judges") if s.get("metric", {}).get("judge")})
    rule = ("at_risk",) if at_risk else ("any_claim",) if scalars["answers"] else ()
    return ReleaseCounts(claims=Counts(**verdicts), judges=tuple(judges), flag_rules=rule, **scalars)

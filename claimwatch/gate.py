"""Release gate: is the candidate release's claim quality significantly worse than the baseline's?

``claimwatch gate --prometheus URL --baseline R1 --candidate R2 [--window 1h]``
reads the verdict counts of both releases from Prometheus
(:func:`fetch_counts`) and :func:`decide` compares, for the CONTRADICTED rate
and the UNSUPPORTED rate (each over judged claims, ERROR excluded), the
candidate with the baseline:

- **hold** (exit 2) when either release has fewer than ``min_claims`` judged
  claims: not enough evidence either way;
- **rollback** (exit 1) when, for either rate, the one-sided ``1 - alpha`` lower
  bound of ``candidate - baseline`` exceeds ``max_increase``: the candidate is
  worse by more than the tolerance, and that is not chance;
- **hold** (exit 2) when a rate's point difference exceeds ``max_increase``
  but not significantly: it looks worse, collect more claims;
- **promote** (exit 0) otherwise.

The interval on the difference of two proportions is Newcombe's hybrid score
interval (Newcombe 1998, method 10: Wilson score limits of each proportion
combined), which keeps its coverage for small rates and small samples where
the Wald interval does not. The pooled two-proportion z-test p-value (H0:
candidate rate <= baseline rate) is reported alongside for reference.

If Prometheus cannot be read the gate holds (exit 2): no promotion without
evidence. The Argo Rollouts template in ``deploy/argo/analysis-template.yaml``
expresses the same decision in PromQL.
"""

from __future__ import annotations

import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any, Callable

from contract.errors import ClaimwatchError

PROMOTE, HOLD, ROLLBACK = "promote", "hold", "rollback"
EXIT_CODES = {PROMOTE: 0, ROLLBACK: 1, HOLD: 2}
COMPARED_VERDICTS = ("contradicted", "unsupported")

DEFAULT_MIN_CLAIMS = 200
DEFAULT_ALPHA = 0.05
DEFAULT_MAX_INCREASE = 0.02

_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


class GateError(ClaimwatchError):
    """The gate could not obtain the counts it needs (bad arguments, Prometheus unreachable or erroring)."""


@dataclass(frozen=True)
class Counts:
    """Claims of one release in the window, by verdict."""

    supported: int = 0
    unsupported: int = 0
    contradicted: int = 0
    error: int = 0

    @property
    def judged(self) -> int:
        """Claims with a verdict (ERROR excluded): the denominator of every rate."""
        return self.supported + self.unsupported + self.contradicted

    def rate(self, verdict: str) -> float:
        """Share of judged claims with ``verdict`` (0.0 when nothing was judged)."""
        return getattr(self, verdict) / self.judged if self.judged else 0.0


@dataclass(frozen=True)
class Comparison:
    """Candidate vs baseline for one verdict's rate."""

    verdict: str
    baseline_rate: float
    candidate_rate: float
    lower: float  # one-sided (1 - alpha) lower bound of candidate - baseline
    upper: float  # one-sided (1 - alpha) upper bound
    p_value: float  # pooled z-test, H0: candidate <= baseline

    @property
    def difference(self) -> float:
        return self.candidate_rate - self.baseline_rate


@dataclass(frozen=True)
class GateDecision:
    """The gate's verdict, its numbers and the reasoning in plain words."""

    action: str  # promote | hold | rollback
    baseline: Counts
    candidate: Counts
    comparisons: tuple[Comparison, ...]
    reasons: tuple[str, ...]
    min_claims: int
    alpha: float
    max_increase: float
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.action]

    def render(self) -> str:
        """Human-readable report (what ``claimwatch gate`` prints)."""
        b_name = self.labels.get("baseline", "baseline")
        c_name = self.labels.get("candidate", "candidate")
        width = max(len(b_name), len(c_name))
        lines = [f"claimwatch gate: {self.action.upper()} (exit {self.exit_code})"]
        for role, name, counts in (("baseline ", b_name, self.baseline), ("candidate", c_name, self.candidate)):
            lines.append(
                f"  {role} {name:<{width}}  {counts.judged:>7} judged claims"
                f"  contradicted {_pct(counts.rate('contradicted'))}  unsupported {_pct(counts.rate('unsupported'))}"
                f"  (+{counts.error} errors)"
            )
        conf = f"{(1 - self.alpha) * 100:g}%"
        for c in self.comparisons:
            p = f"p={c.p_value:.2g}" if c.p_value >= 1e-4 else "p<1e-4"
            lines.append(
                f"  {c.verdict:<12} change {_pts(c.difference)}, one-sided {conf} bounds"
                f" [{_pts(c.lower)}, {_pts(c.upper)}]  {p}  tolerance {_pts(self.max_increase)}"
            )
        lines += [f"  - {reason}" for reason in self.reasons]
        return "\n".join(lines)


def _pct(x: float) -> str:
    return f"{x * 100:6.2f}%"


def _pts(x: float) -> str:
    return f"{x * 100:+.2f} pts"


def wilson_interval(successes: int, n: int, z: float) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (``(0, 1)`` when ``n == 0``)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def newcombe_interval(x1: int, n1: int, x2: int, n2: int, z: float) -> tuple[float, float]:
    """Newcombe's hybrid score interval for ``x1/n1 - x2/n2`` (method 10)."""
    p1, p2 = (x1 / n1 if n1 else 0.0), (x2 / n2 if n2 else 0.0)
    l1, u1 = wilson_interval(x1, n1, z)
    l2, u2 = wilson_interval(x2, n2, z)
    d = p1 - p2
    lower = d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2)
    upper = d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)
    return lower, upper


def z_test_p_value(x1: int, n1: int, x2: int, n2: int) -> float:
    """One-sided pooled two-proportion z-test p-value for H1: p1 > p2."""
    if n1 == 0 or n2 == 0:
        return 1.0
    pooled = (x1 + x2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    diff = x1 / n1 - x2 / n2
    if se == 0:
        return 0.0 if diff > 0 else 1.0
    return 1 - NormalDist().cdf(diff / se)


def compare(verdict: str, baseline: Counts, candidate: Counts, alpha: float) -> Comparison:
    """Candidate vs baseline on one verdict's rate, with one-sided ``1 - alpha`` bounds."""
    z = NormalDist().inv_cdf(1 - alpha)
    x1, n1 = getattr(candidate, verdict), candidate.judged
    x2, n2 = getattr(baseline, verdict), baseline.judged
    lower, upper = newcombe_interval(x1, n1, x2, n2, z)
    return Comparison(
        verdict=verdict,
        baseline_rate=baseline.rate(verdict),
        candidate_rate=candidate.rate(verdict),
        lower=lower,
        upper=upper,
        p_value=z_test_p_value(x1, n1, x2, n2),
    )


def decide(
    baseline: Counts,
    candidate: Counts,
    *,
    min_claims: int = DEFAULT_MIN_CLAIMS,
    alpha: float = DEFAULT_ALPHA,
    max_increase: float = DEFAULT_MAX_INCREASE,
    labels: dict[str, str] | None = None,
) -> GateDecision:
    """Promote, hold or roll back ``candidate`` given ``baseline`` (see the module docstring)."""
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be in (0, 0.5)")
    if min_claims < 1 or max_increase < 0:
        raise ValueError("min_claims must be >= 1 and max_increase >= 0")
    comparisons = tuple(compare(v, baseline, candidate, alpha) for v in COMPARED_VERDICTS)
    conf = f"{(1 - alpha) * 100:g}%"

    def done(action: str, reasons: list[str]) -> GateDecision:
        return GateDecision(
            action, baseline, candidate, comparisons, tuple(reasons), min_claims, alpha, max_increase, dict(labels or {})
        )

    thin = [
        f"{role} has {counts.judged} judged claims, fewer than the {min_claims} needed"
        for role, counts in (("baseline", baseline), ("candidate", candidate))
        if counts.judged < min_claims
    ]
    if thin:
        return done(HOLD, ["not enough evidence: " + "; ".join(thin) + " (widen --window or wait)"])

    worse = [c for c in comparisons if c.lower > max_increase]
    if worse:
        return done(
            ROLLBACK,
            [
                f"{c.verdict} rate rose from {_pct(c.baseline_rate).strip()} to {_pct(c.candidate_rate).strip()}: "
                f"even the {conf} lower bound of the increase ({_pts(c.lower)}) exceeds the tolerance "
                f"({_pts(max_increase)})"
                for c in worse
            ],
        )
    suspicious = [c for c in comparisons if c.difference > max_increase]
    if suspicious:
        return done(
            HOLD,
            [
                f"{c.verdict} rate looks worse ({_pts(c.difference)}, above the tolerance) but not significantly "
                f"so at {conf} (lower bound {_pts(c.lower)}): collect more claims"
                for c in suspicious
            ],
        )
    return done(
        PROMOTE,
        [
            f"no rate rose by more than the tolerance ({_pts(max_increase)}): "
            + ", ".join(f"{c.verdict} {_pts(c.difference)}" for c in comparisons)
        ],
    )


# --- Prometheus -------------------------------------------------------------------------------

Opener = Callable[..., Any]


def _promql_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def counts_query(release: str, window: str = "1h", label: str = "release", extra_selector: str = "") -> str:
    """The PromQL the gate runs for one release."""
    if not _LABEL.match(label):
        raise GateError(f"invalid label name {label!r}")
    if not _DURATION.match(window):
        raise GateError(f"invalid window {window!r} (PromQL duration such as 30m, 1h, 1d)")
    matchers = [f"{label}={_promql_string(release)}"]
    extra = extra_selector.strip().strip("{}").strip()
    if extra:
        matchers.append(extra)
    series = f"claimwatch_claims_total{{{', '.join(matchers)}}}"
    # increase() can't see what a series counted before its first scrape; for series born inside
    # the window (a new release, a new route) add that first sample back: a counter's minimum over
    # the window is its first value.
    return (
        f"sum by (verdict) ((increase({series}[{window}]) + (min_over_time({series}[{window}]) unless {series} offset {window}))"
        f" or increase({series}[{window}]))"
    )


def fetch_counts(
    prometheus_url: str,
    release: str,
    window: str = "1h",
    label: str = "release",
    extra_selector: str = "",
    *,
    timeout: float = 10.0,
    opener: Opener = urllib.request.urlopen,
) -> Counts:
    """Verdict counts of ``release`` over ``window`` from the Prometheus HTTP API (``/api/v1/query``).

    ``increase()`` extrapolates, so counts are rounded to the nearest integer.
    ``extra_selector`` adds matchers, e.g. ``environment="prod"``.
    """
    query = counts_query(release, window, label, extra_selector)
    url = prometheus_url.rstrip("/") + "/api/v1/query?" + urllib.parse.urlencode({"query": query})
    try:
        with opener(url, timeout=timeout) as resp:
            body = resp.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode("utf-8", "replace")[:300]
        raise GateError(f"Prometheus answered HTTP {exc.code} to {query}: {detail}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise GateError(f"cannot reach Prometheus at {prometheus_url}: {exc}") from exc
    try:
        payload = json.loads(body)
    except ValueError as exc:
        raise GateError(f"Prometheus returned non-JSON: {body[:200]!r}") from exc
    if payload.get("status") != "success":
        raise GateError(f"Prometheus query failed: {payload.get('errorType')}: {payload.get('error')}")
    data = payload.get("data") or {}
    if data.get("resultType") != "vector":
        raise GateError(f"expected an instant vector, got {data.get('resultType')!r}")
    values: dict[str, int] = {}
    for sample in data.get("result", []):
        verdict = sample.get("metric", {}).get("verdict")
        if verdict not in ("supported", "unsupported", "contradicted", "error"):
            continue
        value = float(sample["value"][1])
        values[verdict] = 0 if math.isnan(value) or value < 0 else int(round(value))
    return Counts(**values)


def run_gate(
    prometheus_url: str,
    baseline: str,
    candidate: str,
    *,
    window: str = "1h",
    label: str = "release",
    extra_selector: str = "",
    min_claims: int = DEFAULT_MIN_CLAIMS,
    alpha: float = DEFAULT_ALPHA,
    max_increase: float = DEFAULT_MAX_INCREASE,
    fetch: Callable[..., Counts] = fetch_counts,
) -> tuple[int, str]:
    """Fetch both releases' counts and decide: ``(exit code, report)``; 0 promote, 1 rollback, 2 hold."""
    try:
        base_counts = fetch(prometheus_url, baseline, window, label, extra_selector)
        cand_counts = fetch(prometheus_url, candidate, window, label, extra_selector)
    except GateError as exc:
        return EXIT_CODES[HOLD], f"claimwatch gate: HOLD (exit 2)\n  - could not read counts: {exc}"
    decision = decide(
        base_counts,
        cand_counts,
        min_claims=min_claims,
        alpha=alpha,
        max_increase=max_increase,
        labels={"baseline": baseline, "candidate": candidate},
    )
    header = f"window {window}, {label} {baseline!r} (baseline) vs {candidate!r} (candidate)"
    if extra_selector:
        header += f", where {extra_selector}"
    text = decision.render()
    first, _, rest = text.partition("\n")
    return decision.exit_code, f"{first}\n  {header}\n{rest}"

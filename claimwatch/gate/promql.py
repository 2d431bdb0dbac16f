"""The gate's PromQL: exact counts over a window and the answer-share test, as expressions.

``claimwatch gate`` sends :func:`count_query`; ``dashboards/argo_gen.py`` writes the Argo
analysis from :func:`sequential_lower_bound` and :func:`point_difference`, so both read the
same numbers and apply the same formula.

Exact counts. ``increase()`` extrapolates to the window's edges (a release scraped for 10 of
the window's 60 minutes gets up to a scrape interval more at each edge) and misses what a
series counted before its first scrape; adding the first sample back on top of it (what the
gate did before) counted the born-in-window series about 1.5 times. Instead, per series:

- alive before the window: ``last_over_time(c[w]) - c offset w``: the counter's last value in
  the window minus its value at the window's start (the last scrape at or before it);
- born inside the window (no sample at the start): ``last_over_time(c[w])``: every count,
  because the worker's counters start at 0 when its process does;
- a counter reset inside the window (the worker restarted under the same labels) makes the
  first form negative or too small: the series then counts from its reset on only, which
  undercounts, never overcounts (an interval from fewer answers is wider, not narrower).

This is what the worker counted between those two scrapes, to the answer.
"""

from __future__ import annotations

import math
import re

from contract.errors import ClaimwatchError

_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")

ANSWERS = "claimwatch_answers_total"
#: the any-claim rule: what ``flagged`` falls back to for workers that do not export ``AT_RISK``
FLAGGED = "claimwatch_answers_with_unsupported_total"
#: answers at risk (calibrated answer risk >= the judge's threshold): what the gate counts as flagged
AT_RISK = "claimwatch_answers_at_risk_total"
CONTRADICTED = "claimwatch_answers_with_contradicted_total"
CLAIMS = "claimwatch_claims_total"
JUDGE_INFO = "claimwatch_judge_info"
LN2 = math.log(2)
SQRT_2PI = math.sqrt(2 * math.pi)


class GateError(ClaimwatchError):
    """The gate could not obtain the counts it needs (bad arguments, Prometheus unreachable or erroring)."""


def promql_string(value: str) -> str:
    """A PromQL double-quoted string literal."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def check_window(window: str) -> str:
    if not _DURATION.match(window):
        raise GateError(f"invalid window {window!r} (PromQL duration such as 30m, 1h, 1d)")
    return window


def selector(metric: str, release: str, label: str = "release", extra: str = "", *, quote: bool = True) -> str:
    """``metric{label="release", extra}``; ``quote=False`` leaves ``release`` as is (an Argo placeholder)."""
    if not _LABEL.match(label):
        raise GateError(f"invalid label name {label!r}")
    value = promql_string(release) if quote else f'"{release}"'
    matchers = [f"{label}={value}"]
    extra = extra.strip().strip("{}").strip()
    if extra:
        matchers.append(extra)
    return f"{metric}{{{', '.join(matchers)}}}"


def exact_increase(series: str, window: str) -> str:
    """Per-series count over ``window`` (module docstring), not summed."""
    last = f"last_over_time({series}[{window}])"
    # last_over_time() keeps the metric name and the difference drops it: match ignoring it
    return f"((({last} - {series} offset {window}) >= 0) or ignoring(__name__) {last})"


def count_query(
    metric: str, release: str, window: str = "1h", label: str = "release", extra: str = "", by: str = ""
) -> str:
    """The gate's count of ``metric`` for one release, summed (``by`` a label, e.g. ``verdict``)."""
    check_window(window)
    series = selector(metric, release, label, extra)
    if metric == ANSWERS:
        series = series[:-1] + ', outcome="evaluated"}'
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping} ({exact_increase(series, window)})"


def judge_query(release: str, window: str = "1h", label: str = "release", extra: str = "") -> str:
    """The judges behind a release's counts: ``claimwatch_judge_info`` of the workers (``instance``, ``job``)
    that exported the release's evaluated-answer series in ``window``, one sample per ``judge``."""
    check_window(window)
    answers = selector(ANSWERS, release, label, extra)[:-1] + ', outcome="evaluated"}'
    return (
        f"group by (judge) (last_over_time({JUDGE_INFO}[{window}]) "
        f"and on (instance, job) last_over_time({answers}[{window}]))"
    )


# -- the answer-share test in PromQL (used by the Argo analysis) --------------------------------


def share_counts(
    candidate: str, baseline: str, window: str, extra: str, *, quote: bool = True
) -> tuple[str, str, str, str]:
    """``(xc, nc, xb, nb)``: exact flagged and evaluated-answer counts of both releases, each a one-element
    vector without labels.

    Both releases are flagged by one rule, as :func:`claimwatch.gate.counts.common_rule` does with the counts
    :func:`claimwatch.gate.prometheus.fetch_counts` reads: answers at risk when both releases have at-risk
    series in the window, else (workers from before the answer risk) answers with an unsupported claim for
    both. Label-less vectors match each other in arithmetic, and ``ln``/``sqrt`` take vectors (not scalars).
    """

    def counts(release: str) -> tuple[str, str, str]:
        answers = selector(ANSWERS, release, "release", extra, quote=quote)[:-1] + ', outcome="evaluated"}'
        at_risk = selector(AT_RISK, release, "release", extra, quote=quote)
        flagged = selector(FLAGGED, release, "release", extra, quote=quote)
        return (
            f"sum({exact_increase(at_risk, window)})",
            f"sum({exact_increase(flagged, window)})",
            f"sum({exact_increase(answers, window)})",
        )

    risk_c, any_c, nc = counts(candidate)
    risk_b, any_b, nb = counts(baseline)
    return (
        f"({risk_c} and on () {risk_b} or {any_c} or vector(0))",
        nc,
        f"({risk_b} and on () {risk_c} or {any_b} or vector(0))",
        nb,
    )


def point_difference(xc: str, nc: str, xb: str, nb: str) -> str:
    """``xc/nc - xb/nb``."""
    return f"({xc} / {nc} - {xb} / {nb})"


def sequential_log_evidence(xc: str, nc: str, xb: str, nb: str, theta: str, alpha: str, tau: str) -> str:
    """:func:`claimwatch.stats.sequential.log_evidence` of ``xc/nc - xb/nb > theta``, in PromQL (> 0 rejects).

    No sample when the difference does not exceed ``theta`` (no evidence).
    """
    excess = f"({point_difference(xc, nc, xb, nb)} - {theta})"
    sc, sb = f"(({xc} + 1) / ({nc} + 2))", f"(({xb} + 1) / ({nb} + 2))"
    v = f"({sc} * (1 - {sc}) / {nc} + {sb} * (1 - {sb}) / {nb})"
    t2 = f"({tau} ^ 2)"
    c = f"({excess} * {tau} / sqrt({v} * ({v} + {t2})))"
    mills = f"clamp_min(1 - exp(-({c} ^ 2) / 2) / {SQRT_2PI!r} / {c}, 0.5)"
    evidence = f"{LN2!r} + 0.5 * ln({v} / ({v} + {t2})) + {c} ^ 2 / 2 + ln({mills}) + ln(vector({alpha}))"
    return f"({evidence})\nand on ()\n{excess} > 0"


_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(window: str) -> float:
    """Seconds in a PromQL duration (``1h30m`` -> 5400)."""
    check_window(window)
    return sum(float(n) * _UNIT_S[u] for n, u in re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", window))

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
- restarted inside the window (the worker's process restarted under the same labels): also
  ``last_over_time(c[w])``, the count since the restart, for **every** counter of that worker and
  slice (:func:`restarts`), not only for the series whose own value dropped. A worker creates a
  slice's counters together at 0 (``evaluator_worker.metrics``), so after a restart they all count
  from the same moment; deciding per series ("is last - start >= 0?") let an answers counter that
  had climbed back past its old value count ``last - start`` beside an at-risk counter counting
  everything since the restart, a flagged count above its answers. Counting from the restart
  drops the restarted worker's answers before it: fewer answers, a wider interval, never a
  narrower one, and numerator and denominator cover the same answers.

This is what the worker counted between those two scrapes (or since its restart), to the answer.
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
#: evaluated answers with at least one claim of each failure class (contract.failures)
WITH_FAILURE = "claimwatch_answers_with_failure_total"
JUDGE_INFO = "claimwatch_judge_info"
#: the label naming the judge that made a count (evaluator_worker.metrics.JUDGE_ID)
JUDGE_ID = "judge_id"
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


def matchers(release: str, label: str = "release", extra: str = "", *, quote: bool = True) -> str:
    """``label="release", extra``: the matchers inside a selector's braces; ``quote=False`` leaves ``release`` as is
    (an Argo placeholder)."""
    if not _LABEL.match(label):
        raise GateError(f"invalid label name {label!r}")
    value = promql_string(release) if quote else f'"{release}"'
    parts = [f"{label}={value}"]
    extra = extra.strip().strip("{}").strip()
    if extra:
        parts.append(extra)
    return ", ".join(parts)


def with_matchers(metric: str, inner: str = "") -> str:
    """``metric{inner}`` (``metric`` alone when ``inner`` is empty)."""
    return f"{metric}{{{inner}}}" if inner else metric


def selector(metric: str, release: str, label: str = "release", extra: str = "", *, quote: bool = True) -> str:
    """``metric{label="release", extra}``; ``quote=False`` leaves ``release`` as is (an Argo placeholder)."""
    return with_matchers(metric, matchers(release, label, extra, quote=quote))


def reset_in(series: str, window: str) -> str:
    """The series of ``series`` (without their name) reset inside ``window``: a drop between two samples in it, or a
    sample below the value at the window's start (a reset between that scrape and the window's first one)."""
    return f"(resets({series}[{window}]) > 0 or min_over_time({series}[{window}]) < {series} offset {window})"


#: the counters the decision reads; a worker creates them together per slice (at 0), so after a restart of its
#: process they all count from the same moment, and a reset seen in any of them is a restart for all of them
RESTART_COUNTERS = (ANSWERS, AT_RISK, FLAGGED)


def restarts(window: str, inner: str = "") -> str:
    """One series per worker (``instance``, ``job``) and slice (labels but ``outcome``) whose process restarted inside
    ``window``: a reset in any of its :data:`RESTART_COUNTERS` (of every outcome), selected by the matchers ``inner``."""
    signals = " or ".join(reset_in(with_matchers(metric, inner), window) for metric in RESTART_COUNTERS)
    return f"group without (outcome) ({signals})"


def exact_increase(series: str, window: str, restarted: str | None = None) -> str:
    """Per-series count over ``window`` (module docstring), not summed.

    ``restarted`` marks the workers and slices that restarted inside the window (:func:`restarts` over matchers
    that select at least ``series``; by default over every worker): their series count from the restart on
    (``last_over_time``), and so does a series whose own value was reset; every other series counts its last value
    minus its value at the window's start, and a series born inside the window (no value at its start) its last
    value.
    """
    last = f"last_over_time({series}[{window}])"
    marked = restarts(window) if restarted is None else restarted
    since_start = f"({last} - {series} offset {window})"
    if series.split("{")[0].strip() not in RESTART_COUNTERS:  # a restart counter's own reset is in ``marked``
        since_start += f" unless {reset_in(series, window)}"
    # last_over_time() keeps the metric name and the difference drops it: match ignoring it
    return f"(({since_start} unless ignoring(outcome, verdict, failure_type) {marked}) or ignoring(__name__) {last})"


def at_risk_gaps(window: str, inner: str = "") -> str:
    """The evaluated-answer series (one per worker and slice) whose answers the at-risk counter does not cover in
    ``window``: no at-risk series beside it (a worker from before the answer risk, e.g. during a rolling upgrade of
    the workers), or one with fewer samples (the worker got the answer risk inside the window). The worker creates
    both series of a slice together and both are scraped together, so a covered pair has as many samples."""
    answers = with_matchers(ANSWERS, f'{inner}, outcome="evaluated"' if inner else 'outcome="evaluated"')
    at_risk = with_matchers(AT_RISK, inner)
    missing = f"last_over_time({answers}[{window}]) unless ignoring(outcome) last_over_time({at_risk}[{window}])"
    younger = f"count_over_time({answers}[{window}]) > ignoring(outcome) count_over_time({at_risk}[{window}])"
    return f"(({missing}) or ignoring(__name__) ({younger}))"


def count_query(
    metric: str, release: str, window: str = "1h", label: str = "release", extra: str = "", by: str = ""
) -> str:
    """The gate's count of ``metric`` for one release, summed (``by`` labels, e.g. ``verdict`` or
    ``judge_id, verdict``)."""
    check_window(window)
    inner = matchers(release, label, extra)
    series = with_matchers(metric, inner + (', outcome="evaluated"' if metric == ANSWERS else ""))
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping} ({exact_increase(series, window, restarts(window, inner))})"


def gaps_query(release: str, window: str = "1h", label: str = "release", extra: str = "", by: str = "") -> str:
    """How many of the release's evaluated-answer series the at-risk counter does not cover (:func:`at_risk_gaps`),
    per ``by`` labels; no sample when it covers them all."""
    check_window(window)
    grouping = f" by ({by})" if by else ""
    return f"count{grouping} ({at_risk_gaps(window, matchers(release, label, extra))})"


def judge_query(release: str, window: str = "1h", label: str = "release", extra: str = "") -> str:
    """The judges behind a release's counts from workers that do not label their counters with ``judge_id`` (from
    before judge ids): ``claimwatch_judge_info`` of the workers (``instance``, ``job``) that exported the release's
    evaluated-answer series in ``window``, one sample per ``judge``."""
    check_window(window)
    answers = selector(ANSWERS, release, label, extra)[:-1] + f', outcome="evaluated", {JUDGE_ID}=""}}'
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
    :func:`claimwatch.gate.prometheus.fetch_counts` reads: answers at risk when the at-risk counter covers both
    releases' evaluated answers in the window (:func:`at_risk_gaps`: every worker that counted them exports it,
    for the whole window), else (workers from before the answer risk) answers with an unsupported claim for
    both. Label-less vectors match each other in arithmetic, and ``ln``/``sqrt`` take vectors (not scalars).
    """

    def counts(release: str) -> tuple[str, str, str, str]:
        inner = matchers(release, "release", extra, quote=quote)
        marked = restarts(window, inner)
        answers = with_matchers(ANSWERS, inner + ', outcome="evaluated"')
        at_risk, flagged = with_matchers(AT_RISK, inner), with_matchers(FLAGGED, inner)
        gaps = at_risk_gaps(window, inner)
        return (
            f"(sum({exact_increase(at_risk, window, marked)}) unless on () {gaps})",
            f"(group(last_over_time({at_risk}[{window}])) unless on () {gaps})",
            f"sum({exact_increase(flagged, window, marked)})",
            f"sum({exact_increase(answers, window, marked)})",
        )

    risk_c, covered_c, any_c, nc = counts(candidate)
    risk_b, covered_b, any_b, nb = counts(baseline)
    return (
        f"({risk_c} and on () {covered_b} or {any_c} or vector(0))",
        nc,
        f"({risk_b} and on () {covered_c} or {any_b} or vector(0))",
        nb,
    )


def one_judge(candidate: str, baseline: str, window: str, extra: str, *, quote: bool = True) -> str:
    """A one-element vector (1) when every evaluated answer of both releases in ``window`` was counted under one
    ``judge_id``, no sample otherwise: like with like (:mod:`claimwatch.gate.same_judge`) for an expression that
    cannot pick a judge itself. Counters without the label (workers from before judge ids) are one judge."""
    evaluated = ', outcome="evaluated"'
    series = " or ".join(
        f"last_over_time({with_matchers(ANSWERS, matchers(r, 'release', extra, quote=quote) + evaluated)}[{window}])"
        for r in (candidate, baseline)
    )
    return f"(count(count by ({JUDGE_ID}) ({series})) == 1)"


def point_difference(xc: str, nc: str, xb: str, nb: str) -> str:
    """``xc/nc - xb/nb``."""
    return f"({xc} / {nc} - {xb} / {nb})"


def sequential_log_evidence(xc: str, nc: str, xb: str, nb: str, theta: str, alpha: str, tau: str) -> str:
    """:func:`claimwatch.stats.sequential.log_evidence` of ``xc/nc - xb/nb > theta``, in PromQL (> 0 rejects).

    No sample when the difference does not exceed ``theta`` (no evidence). PromQL cannot name a subexpression, so
    every use of a count repeats its whole query: the formula is written so each count appears as few times as it
    can, with identities that leave the value unchanged: ``s (1 - s) = 1/4 - (s - 1/2)^2``,
    ``V (V + tau^2) = (V + tau^2/2)^2 - tau^4/4`` and ``0.5 ln(V / (V + tau^2)) = -0.5 ln(1 + tau^2 / V)``.
    """
    excess = f"({point_difference(xc, nc, xb, nb)} - {theta})"
    sc, sb = f"(({xc} + 1) / ({nc} + 2))", f"(({xb} + 1) / ({nb} + 2))"
    v = f"((0.25 - ({sc} - 0.5) ^ 2) / {nc} + (0.25 - ({sb} - 0.5) ^ 2) / {nb})"
    t2 = f"({tau} ^ 2)"
    c = f"({excess} * {tau} / sqrt(({v} + {t2} / 2) ^ 2 - {t2} ^ 2 / 4))"
    mills = f"clamp_min(1 - exp(-({c} ^ 2) / 2) / {SQRT_2PI!r} / {c}, 0.5)"
    evidence = f"{LN2!r} - 0.5 * ln(1 + {t2} / {v}) + {c} ^ 2 / 2 + ln({mills}) + ln(vector({alpha}))"
    return f"({evidence})\nand on ()\n{excess} > 0"


_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}


def duration_seconds(window: str) -> float:
    """Seconds in a PromQL duration (``1h30m`` -> 5400)."""
    check_window(window)
    return sum(float(n) * _UNIT_S[u] for n, u in re.findall(r"([0-9]+)(ms|s|m|h|d|w|y)", window))

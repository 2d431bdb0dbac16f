"""Prometheus recording and alerting rules, rendered from a thresholds dict.

``python -m dashboards.generate --thresholds my.json`` re-renders
``dashboards/rules/*.yml`` with your numbers: the JSON object overrides any key
of :data:`DEFAULT_THRESHOLDS` (unknown keys are an error). The generated files
are plain Prometheus rule files; nothing at run time reads this module.

Naming follows the Prometheus convention ``level:metric:operations``: the
level lists the labels kept, e.g.
``judge_id_release_model_route_environment:claimwatch_claims:rate5m`` (kept: the
judge, the four slice labels plus ``verdict``).

Like with like: every rule over the verdict and answer counters keeps ``judge_id``
(:mod:`evaluator_worker.judges.identity`), so every comparison is between counts of
one judge. A judge change (a new model, prompt, rules or calibration) shifts every
release's rates at once; compared per judge it is a new series with no history: the
release comparison compares releases judged by the same judge, the level alert waits
for the new judge's own 24h baseline, and the spike alert compares a slice with its own
24h share under the same judge (a slice new under every judge still pages on the floor).

How "release worse than the previous release" works in plain PromQL
--------------------------------------------------------------------
PromQL has no notion of release order, so each release is compared with
*every other release seen in the same environment in the last hour* (pooled).
During a canary or a rolling deploy the other traffic in that window is the
previous release, which is exactly the comparison wanted; with one release in
the window the "others" side has no volume and the alert stays quiet.

The statistics are the release gate's (``claimwatch/gate``): the unit is the
answer, not the claim (claims of one answer share its question, context and
style, so claim counts are not independent trials), and counts are exact
(:func:`claimwatch.gate.promql.exact_increase`, no ``increase()`` edge
extrapolation). Per release and environment the rules record the share p1 of
flagged evaluated answers (n1 answers), the others' share p2 (n2) and the pooled
two-proportion z statistic
``z = (p1 - p2) / sqrt(p (1 - p) (1/n1 + 1/n2))``. The alert needs ``z`` above
``release_z`` (one-sided; 2.326 is alpha = 0.01 per evaluation), ``p1 - p2``
above ``release_max_increase`` and ``release_min_answers`` on both sides.

``ClaimwatchFaithfulnessDrop`` is a level alert relative to the release's own
baseline, never an absolute floor (a judge's style alone puts real releases'
supported-claim ratio anywhere from 0.4 to 0.8): the release's flagged-answer
share over the last hour against its share over the 24 hours before, with the
same z test, ``faithfulness_max_rise`` and ``faithfulness_min_answers``.
``ClaimwatchContradictedClaimsSpike`` pages on the share of *answers* with a
CONTRADICTED claim over 5 minutes (one answer with many contradicted claims is
one answer, not a spike): above ``spike_min_ratio`` and
``spike_baseline_factor`` times the slice's own 24h share, with
``spike_min_answers`` answers in the window.

What "flagged" counts (the gate's rule, :mod:`claimwatch.gate.prometheus`)
--------------------------------------------------------------------------
A flagged answer is an answer *at risk* (``claimwatch_answers_at_risk_total``:
the judge's calibrated answer risk at or above its threshold). Where the workers
do not export that counter (workers from before the answer risk), the any-claim
rule counts instead (``claimwatch_answers_with_unsupported_total``: any
UNSUPPORTED or CONTRADICTED claim), and two shares that are compared are counted
by one rule, as the gate does (an at-risk share beside an any-claim share reads
as an improvement that is none):

- 5m per slice (``*:claimwatch_answers_flagged:rate5m``, dashboards): the slice's
  at-risk rate where the slice has an at-risk series, else its any-claim rate;
- release comparison (1h): at risk for every release of an environment when the
  at-risk counter covers every release's evaluated answers of the hour, else the
  any-claim rule for all of them;
- level alert: at risk for both the hour and the 24h baseline when it covers
  both, else the any-claim rule for both.

"Covers" (:func:`_at_risk_count`): every evaluated-answer series of the window
has its at-risk series (no worker without the answer risk counted there) for as
long as it (as many samples: the workers were not upgraded inside the window; an
at-risk counter born mid-window counts only part of the answers, and a 24h
baseline counted so would make the next day's hours look worse).
The any-claim counts stay recorded beside (``*:claimwatch_answers_with_unsupported:*``)
and the at-risk counts where they cover the window (``*:claimwatch_answers_at_risk:*``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from claimwatch.gate.promql import AT_RISK, exact_increase
from contract.slices import RELEASE_SCOPE_LABELS
from dashboards.catalog import SLICE_LABELS

DEFAULT_THRESHOLDS: dict[str, Any] = {
    # ClaimwatchContradictedClaimsSpike (per slice, 5m window)
    "spike_min_ratio": 0.10,  # floor on the share of evaluated answers with a CONTRADICTED claim
    "spike_baseline_factor": 3.0,  # ... and this many times the slice's own 24h share (ending 1h ago)
    "spike_min_answers": 20,  # evaluated answers in the 5m window
    "spike_for": "5m",
    # ClaimwatchFaithfulnessDrop (per release: last hour vs its own previous 24h, flagged-answer share)
    "faithfulness_max_rise": 0.10,  # absolute rise of the flagged-answer share tolerated
    "faithfulness_z": 2.326,  # one-sided z threshold (alpha = 0.01)
    "faithfulness_min_answers": 100,  # evaluated answers in the hour and in the baseline
    "faithfulness_for": "15m",
    # ClaimwatchReleaseWorseThanPrevious (per release and environment, 1h window, flagged-answer share)
    "release_max_increase": 0.02,  # absolute rise of the flagged-answer share tolerated
    "release_z": 2.326,  # one-sided z threshold (alpha = 0.01)
    "release_min_answers": 50,  # evaluated answers on each side
    "release_for": "10m",
    # ClaimwatchFailureTypeRise (per release, environment and failure type, 1h window): the release comparison's
    # statistic per class; its z is Bonferroni-corrected over the classes, so that a release alerts on some class
    # at most at the release comparison's rate (alpha 0.01 / 11 classes, one-sided)
    "failure_type_max_increase": 0.02,  # absolute rise of the share of answers with a claim of the class
    "failure_type_z": 3.121,
    "failure_type_min_answers": 50,
    "failure_type_for": "10m",
    # ClaimwatchPipelineStalled
    "stalled_min_lag": 100,  # records
    "stalled_for": "10m",
    # ClaimwatchResultWritesStalled: the oldest unacknowledged write's age, seconds (a one-minute stall
    # reaches it whatever the scrape interval up to 15 s)
    "writes_stalled_seconds": 45,
    # ClaimwatchNoEvaluations
    "no_evaluations_seconds": 1800,
    "no_evaluations_for": "5m",
    # ClaimwatchWorkerDown
    "worker_down_for": "5m",
    # ClaimwatchJudgeFailing (per judge, 10m window)
    "judge_error_ratio": 0.10,
    "judge_min_calls": 20,
    "judge_for": "10m",
    # ClaimwatchCollectorDropping (per reason, 10m window)
    "collector_drop_ratio": 0.01,
    "collector_min_drops": 10,
    # reasons of claimwatch_collector_dropped_total never alerted on (none by default: sampling is not a
    # drop, it is claimwatch_collector_traces_total{outcome="sampled_out"}); see collector/metrics.py
    "collector_ignored_drop_reasons": [],
    "collector_for": "10m",
    # ClaimwatchDeadLetters (per reason, 15m window)
    "dead_letters_min": 5,
    "dead_letters_for": "0m",
    # ClaimwatchJudgeDrift / ClaimwatchDriftCheckStale (claimwatch drift-check, a daily CronJob)
    "drift_for": "0m",
    # ClaimwatchSliceLabelsDiffer (a worker's CLAIMWATCH_SLICE_LABELS against the labels these rules group by)
    "slice_labels_for": "10m",
    "drift_stale_after": "2d",
    "drift_stale_for": "10m",
    # presentation
    "runbook_url": "docs/runbook.md",  # set to an absolute URL of the rendered runbook
    "severity_page": "page",
    "severity_warning": "warning",
    "severity_ticket": "ticket",
}

#: every rule over the verdict and answer counters keeps the judge (like with like: a judge change is not a release
#: getting worse), so its level names it first
J = "judge_id"
S = ", ".join((J, *SLICE_LABELS))
SL = "_".join((J, *SLICE_LABELS))
SLICE_TEMPLATE = ", ".join(f"{name}={{{{ $labels.{name} }}}}" for name in SLICE_LABELS)
SLICES_ONLY = ", ".join(SLICE_LABELS)


def merge_thresholds(overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults updated with ``overrides``; unknown keys raise ``KeyError``."""
    merged = dict(DEFAULT_THRESHOLDS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_THRESHOLDS:
            raise KeyError(f"unknown threshold {key!r}; known: {', '.join(sorted(DEFAULT_THRESHOLDS))}")
        merged[key] = value
    return merged


def _seconds(duration: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    return int(duration[:-1]) * units[duration[-1]]


def _ratio(by: str, num: str, den: str) -> str:
    """``num / den`` where a missing numerator series counts as 0 (never-seen verdict)."""
    return f"(\n  sum by ({by}) ({num})\n  or\n  sum by ({by}) ({den}) * 0\n)\n/\nsum by ({by}) ({den})"


EVALUATED = 'claimwatch_answers_total{outcome="evaluated"}'
#: the any-claim rule: what "flagged" falls back to where the workers do not export ``AT_RISK``
ANY_CLAIM = "claimwatch_answers_with_unsupported_total"
#: a release is compared with the other releases of its scope (contract.slices: the same environment) and judge
SCOPE_LABELS = (*RELEASE_SCOPE_LABELS, J)
SCOPE = ", ".join(SCOPE_LABELS)
RE = "_".join(("release", *RELEASE_SCOPE_LABELS, J))
#: the labels of RE's level
REL = ", ".join(("release", *RELEASE_SCOPE_LABELS, J))
#: where a release's comparison happened, for alert texts ("in prod")
IN_SCOPE = "".join(f" in {{{{ $labels.{name} }}}}" for name in RELEASE_SCOPE_LABELS)
#: "the environment", "the environment and tenant" (or "" without scope labels), for alert texts
SCOPE_NAMED = f" of the {' and '.join(RELEASE_SCOPE_LABELS)}" if RELEASE_SCOPE_LABELS else ""
#: the labels of the level alert's level
RJ = "release, judge_id"


def _at_risk_count(by: str, window: str) -> str:
    """At-risk answers per ``by`` over ``window``, only for the groups whose evaluated answers it covers.

    Left out: a group with an evaluated-answer series that has no at-risk series in the window (a
    worker without the answer risk counted there), or whose at-risk series has fewer samples in the
    window than it (the workers got the answer risk inside the window: the at-risk count misses the
    answers before). The worker creates both series of a slice together, at 0, and both are scraped
    together, so a covered pair has as many samples as each other.
    """
    in_window = f"last_over_time({EVALUATED}[{window}]) unless ignoring (outcome) last_over_time({AT_RISK}[{window}])"
    younger = f"count_over_time({EVALUATED}[{window}]) > ignoring (outcome) count_over_time({AT_RISK}[{window}])"
    return (
        f"sum by ({by}) ({exact_increase(AT_RISK, window)})\n"
        f"unless on ({by})\n({in_window})\n"
        f"unless on ({by})\n({younger})"
    )


def _z(p1: str, n1: str, p2: str, n2: str, pooled: str) -> str:
    """Pooled two-proportion z statistic."""
    return f"({p1} - {p2})\n/\nsqrt({pooled} * (1 - {pooled}) * (1 / {n1} + 1 / {n2}))"


def _release_rules() -> list[dict[str, str]]:
    """Per release and environment: evaluated and flagged answers in the last hour, vs every other release.

    Flagged = at risk in an environment where every release's at-risk count covers the hour, else the
    any-claim rule for every release of the environment (one rule for the release and the others).
    """
    n, x = f"{RE}:claimwatch_answers_evaluated:count1h", f"{RE}:claimwatch_answers_flagged:count1h"
    any_claim, at_risk = f"{RE}:claimwatch_answers_with_unsupported:count1h", f"{RE}:claimwatch_answers_at_risk:count1h"
    no, xo = f"{RE}:claimwatch_answers_evaluated_others:count1h", f"{RE}:claimwatch_answers_flagged_others:count1h"
    p, po = f"{RE}:claimwatch_answers_flagged:ratio_count1h", f"{RE}:claimwatch_answers_flagged_others:ratio_count1h"
    pooled = f"{RE}:claimwatch_answers_flagged_pooled:ratio_count1h"

    def others(rec: str) -> str:
        return f"sum by ({SCOPE}) ({rec})\n- ignoring (release) group_right ()\n{rec}"

    return [
        {"record": n, "expr": f"sum by ({REL}) ({exact_increase(EVALUATED, '1h')})"},
        {
            "record": any_claim,
            "expr": f"sum by ({REL}) ({exact_increase(ANY_CLAIM, '1h')})\nor\n{n} * 0",
        },
        {"record": at_risk, "expr": _at_risk_count(REL, "1h")},
        {
            "record": x,
            "expr": (f"{at_risk}\nunless on ({SCOPE})\n({n} unless on ({REL}) {at_risk})\nor\n{any_claim}"),
        },
        {"record": no, "expr": others(n)},
        {"record": xo, "expr": others(x)},
        {"record": p, "expr": f"{x} / {n}"},
        {"record": po, "expr": f"{xo} / {no}"},
        {"record": pooled, "expr": f"({x} + {xo}) / ({n} + {no})"},
        {"record": f"{RE}:claimwatch_answers_flagged_vs_others:zscore1h", "expr": _z(p, n, po, no, pooled)},
    ]


#: evaluated answers with at least one claim of each failure class (evaluator_worker.metrics)
WITH_FAILURE = "claimwatch_answers_with_failure_total"
RET = f"{RE}_failure_type"


def _failure_type_rules() -> list[dict[str, str]]:
    """Per release, environment and failure class: answers with a claim of the class in the last hour, as a share
    of the release's evaluated answers, vs every other release of the environment (the release comparison, per
    class); the denominators are the release comparison's own recording rules."""
    n, no = f"{RE}:claimwatch_answers_evaluated:count1h", f"{RE}:claimwatch_answers_evaluated_others:count1h"
    x, xo = f"{RET}:claimwatch_answers_with_failure:count1h", f"{RET}:claimwatch_answers_with_failure_others:count1h"
    p, po = (
        f"{RET}:claimwatch_answers_with_failure:ratio_count1h",
        f"{RET}:claimwatch_answers_with_failure_others:ratio_count1h",
    )
    pooled = f"{RET}:claimwatch_answers_with_failure_pooled:ratio_count1h"
    per = "ignoring (failure_type) group_left ()"  # a class's count over its release's answers
    return [
        {"record": x, "expr": f"sum by ({REL}, failure_type) ({exact_increase(WITH_FAILURE, '1h')})"},
        {
            "record": xo,
            "expr": f"sum by ({SCOPE}, failure_type) ({x})\n- ignoring (release) group_right ()\n{x}",
        },
        {"record": p, "expr": f"{x}\n/ {per}\n{n}"},
        {"record": po, "expr": f"{xo}\n/ {per}\n{no}"},
        {"record": pooled, "expr": f"({x} + {xo})\n/ {per}\n({n} + {no})"},
        {
            "record": f"{RET}:claimwatch_answers_with_failure_vs_others:zscore1h",
            "expr": f"({p} - {po})\n/\nsqrt(\n  {pooled} * (1 - {pooled})\n  * {per} (1 / {n} + 1 / {no})\n)",
        },
    ]


def _baseline_rules() -> list[dict[str, str]]:
    """Per release: evaluated and flagged answers over the last hour and over the 24h ending an hour ago
    (the level alert's own baseline), flagged by one rule for both: at risk where its count covers both
    windows (the 24h one as recorded an hour ago), else the any-claim rule."""
    rec = lambda kind, w: f"release_judge_id:claimwatch_answers_{kind}:count{w}"  # noqa: E731
    rules = []
    for w in ("1h", "24h"):
        n = rec("evaluated", w)
        rules += [
            {"record": n, "expr": f"sum by ({RJ}) ({exact_increase(EVALUATED, w)})"},
            {
                "record": rec("with_unsupported", w),
                "expr": f"sum by ({RJ}) ({exact_increase(ANY_CLAIM, w)})\nor\n{n} * 0",
            },
            {"record": rec("at_risk", w), "expr": _at_risk_count(RJ, w)},
        ]
    n1, risk1, any1 = rec("evaluated", "1h"), rec("at_risk", "1h"), rec("with_unsupported", "1h")
    n24, risk24, any24 = (f"{rec(kind, '24h')} offset 1h" for kind in ("evaluated", "at_risk", "with_unsupported"))
    x1, x24 = rec("flagged", "1h"), rec("flagged", "24h_offset1h")
    rules += [
        # a release without a baseline (younger than an hour and a bit) is flagged at risk where it can be
        {
            "record": x1,
            "expr": f"{risk1} and on ({RJ}) {risk24}\nor\n{risk1} unless on ({RJ}) {n24}\nor\n{any1}",
        },
        {
            "record": x24,
            "expr": f"{risk24} and on ({RJ}) {risk1}\nor\n{risk24} unless on ({RJ}) {n1}\nor\n{any24}",
        },
        {"record": "release_judge_id:claimwatch_answers_flagged:ratio_count1h", "expr": f"{x1} / {n1}"},
        {"record": "release_judge_id:claimwatch_answers_flagged:ratio_count24h_offset1h", "expr": f"{x24} / {n24}"},
    ]
    return rules


def recording_rules(t: Mapping[str, Any]) -> dict[str, Any]:
    """The recording rule groups (thresholds only matter for the alert file)."""
    claims5 = f"{SL}:claimwatch_claims:rate5m"
    fast = [
        {"record": claims5, "expr": f"sum by ({S}, verdict) (rate(claimwatch_claims_total[5m]))"},
        {
            "record": f"{SL}:claimwatch_claims_judged:rate5m",
            "expr": f'sum by ({S}) ({claims5}{{verdict!="error"}})',
        },
    ]
    for verdict in ("supported", "unsupported", "contradicted"):
        fast.append(
            {
                "record": f"{SL}:claimwatch_claims_{verdict}:ratio_rate5m",
                "expr": _ratio(S, f'{claims5}{{verdict="{verdict}"}}', f'{claims5}{{verdict!="error"}}'),
            }
        )
    fast += [
        {
            "record": "release_judge_id:claimwatch_claims_supported:ratio_rate5m",
            "expr": _ratio(RJ, f'{claims5}{{verdict="supported"}}', f'{claims5}{{verdict!="error"}}'),
        },
        {
            "record": f"{SL}:claimwatch_answers:rate5m",
            "expr": f"sum by ({S}, outcome) (rate(claimwatch_answers_total[5m]))",
        },
        {
            "record": f"{SL}:claimwatch_answers_with_unsupported:rate5m",
            "expr": f"sum by ({S}) (rate({ANY_CLAIM}[5m]))",
        },
        {
            "record": f"{SL}:claimwatch_answers_at_risk:rate5m",
            "expr": f"sum by ({S}) (rate({AT_RISK}[5m]))",
        },
        {
            # flagged: at risk where the slice has an at-risk series, else the any-claim rule
            "record": f"{SL}:claimwatch_answers_flagged:rate5m",
            "expr": f"sum by ({S}) (rate({AT_RISK}[5m]))\nor\nsum by ({S}) (rate({ANY_CLAIM}[5m]))",
        },
        {
            "record": f"{SL}:claimwatch_answers_with_contradicted:rate5m",
            "expr": f"sum by ({S}) (rate(claimwatch_answers_with_contradicted_total[5m]))",
        },
        {
            "record": f"{SL}:claimwatch_answers_contradicted:ratio_rate5m",
            "expr": _ratio(S, "rate(claimwatch_answers_with_contradicted_total[5m])", f"rate({EVALUATED}[5m])"),
        },
        {
            "record": f"{SL}:claimwatch_answer_faithfulness_ratio:mean5m",
            "expr": (
                f"sum by ({S}) (rate(claimwatch_answer_faithfulness_ratio_sum[5m]))\n/\n"
                f"sum by ({S}) (rate(claimwatch_answer_faithfulness_ratio_count[5m]))"
            ),
        },
    ]

    trailing = []
    for window in ("1h", "24h"):
        raw_all = 'claimwatch_claims_total{verdict!="error"}'
        trailing.append(
            {
                "record": f"{SL}:claimwatch_claims_contradicted:ratio_rate{window}",
                "expr": _ratio(
                    S,
                    f'rate(claimwatch_claims_total{{verdict="contradicted"}}[{window}])',
                    f"rate({raw_all}[{window}])",
                ),
            }
        )
    trailing.append(
        {
            "record": f"{SL}:claimwatch_answers_contradicted:ratio_rate24h",
            "expr": _ratio(S, "rate(claimwatch_answers_with_contradicted_total[24h])", f"rate({EVALUATED}[24h])"),
        }
    )
    trailing += _baseline_rules()

    release = _release_rules() + _failure_type_rules()

    ignored = "|".join(t["collector_ignored_drop_reasons"]) or "^$"
    pipeline = [
        {
            "record": "judge:claimwatch_judge_calls:rate10m",
            "expr": "sum by (judge) (rate(claimwatch_judge_calls_total[10m]))",
        },
        {
            "record": "judge:claimwatch_judge_errors:rate10m",
            "expr": "sum by (judge) (rate(claimwatch_judge_errors_total[10m]))",
        },
        {
            "record": "judge:claimwatch_judge_errors:ratio_rate10m",
            "expr": (
                "clamp_max(\n  judge:claimwatch_judge_errors:rate10m\n  /\n"
                "  (judge:claimwatch_judge_calls:rate10m or judge:claimwatch_judge_errors:rate10m * 0),\n  1\n)"
            ),
        },
        {
            "record": "reason:claimwatch_collector_dropped:rate10m",
            "expr": f'sum by (reason) (rate(claimwatch_collector_dropped_total{{reason!~"{ignored}"}}[10m]))',
        },
        {
            # drops of one reason / (traces assembled + everything dropped): a share bounded by 1. Each
            # trace is counted once per outcome it passes (assembled, sampled_in, queued...), so only
            # outcome="assembled" is a trace count; units of the reasons are in collector/metrics.py.
            "record": "reason:claimwatch_collector_dropped:ratio_rate10m",
            "expr": (
                "reason:claimwatch_collector_dropped:rate10m\n/ ignoring (reason) group_left ()\n(\n"
                '  (sum(rate(claimwatch_collector_traces_total{outcome="assembled"}[10m])) or vector(0))\n'
                "  + sum(rate(claimwatch_collector_dropped_total[10m]))\n)"
            ),
        },
    ]
    return {
        "groups": [
            {"name": "claimwatch.recording.5m", "rules": fast},
            {"name": "claimwatch.recording.trailing", "interval": "1m", "rules": trailing},
            {"name": "claimwatch.recording.release", "interval": "1m", "rules": release},
            {"name": "claimwatch.recording.pipeline", "rules": pipeline},
        ]
    }


def _alert(name: str, expr: str, for_: str, severity: str, summary: str, description: str, t: Mapping[str, Any]):
    rule: dict[str, Any] = {"alert": name, "expr": expr}
    if for_ not in ("0m", "0s", ""):
        rule["for"] = for_
    rule["labels"] = {"severity": severity}
    rule["annotations"] = {
        "summary": summary,
        "description": description,
        "runbook_url": f"{t['runbook_url']}#{name.lower()}",
    }
    return rule


_AT_RISK_SAID = "at risk (answer risk at or above the judge's threshold)"
_ANY_CLAIM_SAID = "by the any-claim rule (an UNSUPPORTED or CONTRADICTED claim; the at-risk count does not cover {})"
#: which rule counted the level alert's pair (Prometheus template: ``query`` of the at-risk counts of both windows)
_FLAGGED_BASELINE = (
    '{{ if printf "release_judge_id:claimwatch_answers_at_risk:count1h{release=%q, judge_id=%q} and on (release, '
    'judge_id) release_judge_id:claimwatch_answers_at_risk:count24h{release=%q, judge_id=%q} offset 1h" '
    "$labels.release $labels.judge_id $labels.release $labels.judge_id | query }}"
    + _AT_RISK_SAID
    + "{{ else }}"
    + _ANY_CLAIM_SAID.format("both windows")
    + "{{ end }}"
)
#: which rule counted the environment's releases (any-claim when a release of the environment lacks the at-risk count)
_FLAGGED_RELEASES = (
    f'{{{{ if printf "{RE}:claimwatch_answers_evaluated:count1h{{{", ".join(f"{x}=%q" for x in SCOPE_LABELS)}}}'
    f' unless on ({REL}) {RE}:claimwatch_answers_at_risk:count1h" '
    f"{' '.join(f'$labels.{x}' for x in SCOPE_LABELS)} | query }}}}"
    + _ANY_CLAIM_SAID.format(f"every release{SCOPE_NAMED}")
    + "{{ else }}"
    + _AT_RISK_SAID
    + "{{ end }}"
)


def alerting_rules(t: Mapping[str, Any]) -> dict[str, Any]:
    """The alert groups for thresholds ``t`` (see :data:`DEFAULT_THRESHOLDS`)."""
    ratio5 = f"{SL}:claimwatch_answers_contradicted:ratio_rate5m"
    base24 = f"{SL}:claimwatch_answers_contradicted:ratio_rate24h"
    spike_window = _seconds("5m")
    p1, n1, x1 = (
        "release_judge_id:claimwatch_answers_flagged:ratio_count1h",
        "release_judge_id:claimwatch_answers_evaluated:count1h",
        "release_judge_id:claimwatch_answers_flagged:count1h",
    )
    p24, n24, x24 = (
        "release_judge_id:claimwatch_answers_flagged:ratio_count24h_offset1h",
        "release_judge_id:claimwatch_answers_evaluated:count24h offset 1h",
        "release_judge_id:claimwatch_answers_flagged:count24h_offset1h",
    )
    quality = [
        _alert(
            "ClaimwatchContradictedClaimsSpike",
            (
                f"{ratio5} > {t['spike_min_ratio']}\n"
                # the slice's own 24h share under the same judge; a new slice (no 24h share under any judge) pages
                # on the floor alone; a slice that only changed judge waits for the new judge's own baseline
                f"and\n{ratio5} > {t['spike_baseline_factor']} * (\n  {base24} offset 1h\n"
                f"  or\n  {ratio5} * 0 unless on ({SLICES_ONLY}) {base24} offset 1h\n)\n"
                f"and ignoring (outcome)\n"
                f'{SL}:claimwatch_answers:rate5m{{outcome="evaluated"}} * {spike_window} >= {t["spike_min_answers"]}'
            ),
            t["spike_for"],
            t["severity_page"],
            "Contradicted claims spiking for release {{ $labels.release }} on route {{ $labels.route }}",
            (
                "{{ $value | humanizePercentage }} of evaluated answers had a claim CONTRADICTED by the retrieved "
                f"context over the last 5m ({SLICE_TEMPLATE}); floor {t['spike_min_ratio']}, "
                f"and more than {t['spike_baseline_factor']}x this slice's 24h share."
            ),
            t,
        ),
        _alert(
            "ClaimwatchFaithfulnessDrop",
            (
                f"{p1} > {p24} + {t['faithfulness_max_rise']}\n"
                f"and\n{_z(p1, n1, p24, n24, f'(({x1} + {x24}) / ({n1} + {n24}))')} > {t['faithfulness_z']}\n"
                f"and\n{n1} >= {t['faithfulness_min_answers']}\n"
                f"and\n{n24} >= {t['faithfulness_min_answers']}"
            ),
            t["faithfulness_for"],
            t["severity_warning"],
            "Faithfulness of release {{ $labels.release }} dropped",
            (
                "Release {{ $labels.release }}: {{ $value | humanizePercentage }} of evaluated answers were flagged "
                f"{_FLAGGED_BASELINE} over the last hour, significantly more than over its previous 24h "
                f"(tolerance {t['faithfulness_max_rise']}, z > {t['faithfulness_z']})."
            ),
            t,
        ),
        _alert(
            "ClaimwatchReleaseWorseThanPrevious",
            (
                f"{RE}:claimwatch_answers_flagged:ratio_count1h\n"
                f"  > {RE}:claimwatch_answers_flagged_others:ratio_count1h + {t['release_max_increase']}\n"
                f"and\n{RE}:claimwatch_answers_flagged_vs_others:zscore1h > {t['release_z']}\n"
                f"and\n{RE}:claimwatch_answers_evaluated:count1h >= {t['release_min_answers']}\n"
                f"and\n{RE}:claimwatch_answers_evaluated_others:count1h >= {t['release_min_answers']}"
            ),
            t["release_for"],
            t["severity_warning"],
            "Release {{ $labels.release }} has more flagged answers than the other releases",
            (
                "Release {{ $labels.release }}" + IN_SCOPE + ": {{ $value | humanizePercentage }} of "
                f"evaluated answers were flagged {_FLAGGED_RELEASES} over the last hour, significantly above "
                "the other releases in the same window "
                f"(tolerance {t['release_max_increase']}, z > {t['release_z']}). Run claimwatch gate before promoting."
            ),
            t,
        ),
        _alert(
            "ClaimwatchFailureTypeRise",
            (
                f"{RET}:claimwatch_answers_with_failure:ratio_count1h\n"
                f"  > {RET}:claimwatch_answers_with_failure_others:ratio_count1h + {t['failure_type_max_increase']}\n"
                f"and\n{RET}:claimwatch_answers_with_failure_vs_others:zscore1h > {t['failure_type_z']}\n"
                f"and on ({REL})\n{RE}:claimwatch_answers_evaluated:count1h >= {t['failure_type_min_answers']}\n"
                f"and on ({REL})\n{RE}:claimwatch_answers_evaluated_others:count1h >= "
                f"{t['failure_type_min_answers']}"
            ),
            t["failure_type_for"],
            t["severity_warning"],
            "Release {{ $labels.release }} has more {{ $labels.failure_type }} failures than the other releases",
            (
                "Release {{ $labels.release }}" + IN_SCOPE + ": {{ $value | humanizePercentage }} of "
                "evaluated answers had a claim of class {{ $labels.failure_type }} (docs/failure-types.md) over the "
                "last hour, significantly above the other releases in the same window "
                f"(tolerance {t['failure_type_max_increase']}, z > {t['failure_type_z']}, Bonferroni over the "
                "classes). claimwatch claims --release {{ $labels.release }} --type {{ $labels.failure_type }} "
                "lists them."
            ),
            t,
        ),
    ]
    pipeline = [
        _alert(
            "ClaimwatchPipelineStalled",
            (
                f"sum by (topic) (claimwatch_consumer_lag_records) > {t['stalled_min_lag']}\n"
                "and\nsum by (topic) (delta(claimwatch_consumer_lag_records[10m])) > 0\n"
                "and on ()\n(sum(rate(claimwatch_records_total[10m])) or vector(0)) == 0"
            ),
            t["stalled_for"],
            t["severity_page"],
            "claimwatch workers are not consuming topic {{ $labels.topic }}",
            (
                "Consumer lag on {{ $labels.topic }} is {{ $value }} records and growing while the workers "
                "handled no record in the last 10m."
            ),
            t,
        ),
        _alert(
            "ClaimwatchResultWritesStalled",
            # max_over_time: a stall's peak age falls between two rule evaluations (1m) otherwise
            "max by (instance) (max_over_time(claimwatch_oldest_unacked_write_age_seconds[2m]))"
            f" >= {t['writes_stalled_seconds']}",
            "0m",
            t["severity_page"],
            "Worker {{ $labels.instance }} cannot get its result writes acknowledged",
            (
                "The oldest result or dead-letter write of worker {{ $labels.instance }} has waited "
                "{{ $value | humanizeDuration }} for the broker's acknowledgement; nothing past it is committed "
                "and results stop reaching dashboards and the gate."
            ),
            t,
        ),
        _alert(
            "ClaimwatchNoEvaluations",
            (
                f"time() - max(claimwatch_last_evaluation_timestamp_seconds) > {t['no_evaluations_seconds']}\n"
                "and on ()\n(\n  sum(claimwatch_consumer_lag_records) > 0\n"
                "  or\n  sum(increase(claimwatch_records_total[30m])) > 0\n"
                '  or\n  sum(increase(claimwatch_collector_traces_total{outcome="queued"}[30m])) > 0\n)'
            ),
            t["no_evaluations_for"],
            t["severity_page"],
            "No answer evaluated for {{ $value | humanizeDuration }} although traces are flowing",
            (
                "The newest evaluation is {{ $value | humanizeDuration }} old while records are waiting, arriving "
                "or being produced: every answer is failing, dead-lettering or not being judged."
            ),
            t,
        ),
        _alert(
            "ClaimwatchWorkerDown",
            "absent(max(claimwatch_worker_up) == 1)",
            t["worker_down_for"],
            t["severity_page"],
            "No claimwatch worker is consuming",
            "No scraped claimwatch worker reports claimwatch_worker_up == 1: nothing is being evaluated.",
            t,
        ),
        _alert(
            "ClaimwatchJudgeFailing",
            (
                f"judge:claimwatch_judge_errors:ratio_rate10m > {t['judge_error_ratio']}\n"
                "and\n(\n  (judge:claimwatch_judge_calls:rate10m or judge:claimwatch_judge_errors:rate10m * 0)\n"
                f"  + judge:claimwatch_judge_errors:rate10m\n) * 600 >= {t['judge_min_calls']}"
            ),
            t["judge_for"],
            t["severity_warning"],
            "Judge {{ $labels.judge }} is failing",
            (
                "{{ $value | humanizePercentage }} of calls of judge {{ $labels.judge }} failed over the last 10m "
                f"(threshold {t['judge_error_ratio']}); their claims are counted as ERROR, not scored."
            ),
            t,
        ),
        _alert(
            "ClaimwatchCollectorDropping",
            (
                f"reason:claimwatch_collector_dropped:ratio_rate10m > {t['collector_drop_ratio']}\n"
                f"and\nreason:claimwatch_collector_dropped:rate10m * 600 >= {t['collector_min_drops']}"
            ),
            t["collector_for"],
            t["severity_warning"],
            "The claimwatch collector is dropping data ({{ $labels.reason }})",
            (
                "Drops with reason {{ $labels.reason }} were {{ $value | humanizePercentage }} of what the "
                "collector handled over the last 10m (drops / (assembled traces + drops); "
                f"threshold {t['collector_drop_ratio']}"
                + (
                    f"; reasons {', '.join(t['collector_ignored_drop_reasons'])} not alerted"
                    if t["collector_ignored_drop_reasons"]
                    else ""
                )
                + ")."
            ),
            t,
        ),
        _alert(
            "ClaimwatchDeadLetters",
            f"sum by (reason) (increase(claimwatch_dead_letters_total[15m])) >= {t['dead_letters_min']}",
            t["dead_letters_for"],
            t["severity_ticket"],
            "Records dead-lettered ({{ $labels.reason }})",
            (
                "{{ $value | humanize }} records went to the dead-letter topic over the last 15m with reason "
                "{{ $labels.reason }}."
            ),
            t,
        ),
        _alert(
            "ClaimwatchSliceLabelsDiffer",
            f'max by (slice_labels) (claimwatch_worker_slice_labels_info{{slice_labels!="{",".join(SLICE_LABELS)}"}}) == 1',
            t["slice_labels_for"],
            t["severity_ticket"],
            "A worker's slice labels differ from those the rules and dashboards group by",
            (
                "Workers put the slice labels {{ $labels.slice_labels }} on their quality metrics, and these rules "
                f"and dashboards were generated for {', '.join(SLICE_LABELS)} (contract/slices.py): "
                "series that lack a label the rules group by, or carry one they drop, are pooled or left out. Set "
                "CLAIMWATCH_SLICE_LABELS to the same labels, or change the declaration and regenerate "
                "(python -m dashboards.generate)."
            ),
            t,
        ),
        _alert(
            "ClaimwatchJudgeDrift",
            "max by (judge_id) (claimwatch_drift_alarm) == 1",
            t["drift_for"],
            t["severity_warning"],
            "Judge {{ $labels.judge_id }} answers its labelled canary set worse than before",
            (
                "The drift canary (claimwatch drift-check) found an error rate of judge {{ $labels.judge_id }} on its "
                "fixed labelled set risen beyond chance against the judge's reference runs (exact sign-flip test per "
                "rate; at most 1% false alarms per run for a stable judge). The judge id did not change: the provider "
                "or a dependency changed the judge's behaviour, and every release's rates may have moved with it."
            ),
            t,
        ),
        _alert(
            "ClaimwatchDriftCheckStale",
            (
                "time() - max by (judge_id) (claimwatch_drift_last_run_timestamp_seconds) > "
                f"{_seconds(t['drift_stale_after'])}"
            ),
            t["drift_stale_for"],
            t["severity_ticket"],
            "The judge drift canary has not run for {{ $labels.judge_id }}",
            (
                "No claimwatch drift-check run of judge {{ $labels.judge_id }} was recorded for more than "
                f"{t['drift_stale_after']}: nothing watches the judge for provider-side changes until it runs again."
            ),
            t,
        ),
    ]
    return {
        "groups": [
            {"name": "claimwatch.alerts.quality", "rules": quality},
            {"name": "claimwatch.alerts.pipeline", "rules": pipeline},
        ]
    }


# --- a tiny YAML emitter (no dependency): dicts, lists, str, int, float, bool ---------------


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(str(value), ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _emit(value: Any, indent: int, lines: list[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, str) and "\n" in item:
                lines.append(f"{pad}{key}: |-")
                lines.extend(f"{pad}  {line}" if line else "" for line in item.split("\n"))
            elif isinstance(item, (dict, list)) and item:
                lines.append(f"{pad}{key}:")
                _emit(item, indent + 2, lines)
            else:
                lines.append(f"{pad}{key}: {_scalar(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, (dict, list)) and item:
                sub: list[str] = []
                _emit(item, indent + 2, sub)
                lines.append(pad + "- " + sub[0][indent + 2 :])
                lines.extend(sub[1:])
            else:
                lines.append(f"{pad}- {_scalar(item)}")
    else:  # pragma: no cover - top level is always a mapping
        lines.append(pad + _scalar(value))


def to_yaml(doc: Mapping[str, Any], header: str = "") -> str:
    """Render ``doc`` as YAML; ``header`` lines become ``#`` comments."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    _emit(dict(doc), 0, lines)
    return "\n".join(lines) + "\n"


HEADER = (
    "GENERATED by `python -m dashboards.generate` from dashboards/rules_gen.py -- do not edit by hand.\n"
    "Change thresholds with `python -m dashboards.generate --thresholds my.json` (see docs/runbook.md)."
)


def render(thresholds: Mapping[str, Any] | None = None) -> dict[str, str]:
    """File name (under dashboards/rules/) -> YAML text."""
    t = merge_thresholds(thresholds)
    return {
        "claimwatch-recording.yml": to_yaml(recording_rules(t), HEADER),
        "claimwatch-alerts.yml": to_yaml(alerting_rules(t), HEADER),
    }

"""Write the Grafana dashboards, the Prometheus rule files and the Argo AnalysisTemplate.

Usage::

    python -m dashboards.generate                      # rewrite dashboards/grafana/*.json, dashboards/rules/*.yml
                                                       # and deploy/argo/analysis-template.yaml
    python -m dashboards.generate --check              # exit 1 if any committed file differs
    python -m dashboards.generate --thresholds my.json # rules with your alert thresholds
    python -m dashboards.generate --trace-url-template 'http://jaeger:16686/trace/{trace_id}'
                                                       # where exemplars open (datasource provisioning)

Dashboards target Grafana 10.4+ (schemaVersion 39). Panels read the recording
rules where the alerts use the same rate (``*:rate5m``, ``*:ratio_rate10m``) and
the raw counters where a ratio must be re-aggregated over the selected range.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

from contract.slices import RELEASE_SCOPE_LABELS
from dashboards import argo_gen, rules_gen
from dashboards.catalog import SLICE_LABELS
from dashboards.panels import (
    Layout,
    dashboard,
    datasource_variable,
    query_variable,
    stat,
    table,
    target,
    targets,
    text,
    timeseries,
)

ROOT = Path(__file__).resolve().parent
GRAFANA_DIR = ROOT / "grafana"
RULES_DIR = ROOT / "rules"
ARGO_TEMPLATE = ROOT.parent / "deploy" / "argo" / "analysis-template.yaml"
DATASOURCES = ROOT.parent / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
#: hand-written but for its CLAIMWATCH_SLICE_LABELS line, which is rendered from contract.slices
CONFIGMAP = ROOT.parent / "deploy" / "k8s" / "configmap.yaml"
_SLICE_LABELS_LINE = re.compile(r"^(\s*CLAIMWATCH_SLICE_LABELS: ).*$", re.MULTILINE)
#: where an exemplar's trace id opens (CLAIMWATCH_TRACE_URL_TEMPLATE; the compose stack's Jaeger UI by default)
DEFAULT_TRACE_URL_TEMPLATE = "http://localhost:16686/trace/{trace_id}"
#: the text panel an exemplar panel's data link opens (its title; the id is found after layout)
CLAIMS_PANEL_TITLE = "From a spike to the claims"
CLAIMS_HOWTO = """The points on **Contradicted and unsupported claims** are exemplars: hover one for the
`trace_id` of an answer judged that way; the link opens the trace in your trace backend.

To list every flagged claim behind the spike, worst first, with the evidence and its chunk:

```
claimwatch claims --release "$release" --route "$route" --since 1h --verdict CONTRADICTED
claimwatch claims --release "$release" --since 1h --json      # for scripts
```

Then compare releases: `claimwatch report --baseline <stable release> --candidate "$release"` writes
the HTML release report (gate decision, rates per slice, worst claims).
"""

#: the recording rules' level: the judge and the slice labels (dashboards.rules_gen)
SL = "_".join(("judge_id", *SLICE_LABELS))
S = ", ".join(SLICE_LABELS)
#: slice and judge filter from the template variables (a judge change shows as its own series: pick one judge to
#: compare like with like)
F = ", ".join(f'{name}=~"${name}"' for name in (*SLICE_LABELS, "judge_id"))
R5 = f"{SL}:claimwatch_claims:rate5m"
ANS5 = f"{SL}:claimwatch_answers:rate5m"
RANGE = "$__range"
JUDGED = 'verdict!="error"'
RI = "$__rate_interval"

PCT_GOOD_HIGH = [(None, "red"), (0.8, "yellow"), (0.9, "green")]
PCT_GOOD_LOW = [(None, "green"), (0.02, "yellow"), (0.05, "red")]


def _claims(sel: str, window: str = RANGE, by: str = "") -> str:
    grouping = f" by ({by})" if by else ""
    return f"sum{grouping} (increase(claimwatch_claims_total{{{sel}{', ' if sel else ''}{F}}}[{window}]))"


def _claim_ratio(verdict: str, window: str = RANGE, by: str = "") -> str:
    """Share of judged claims with ``verdict`` over ``window`` (errors excluded)."""
    selected = 'verdict="' + verdict + '"'
    return f"{_claims(selected, window, by)}\n/\n{_claims(JUDGED, window, by)}"


def _rec_ratio(verdict: str, by: str = "") -> str:
    grouping = f" by ({by})" if by else ""
    return f'sum{grouping} ({R5}{{verdict="{verdict}", {F}}})\n/\nsum{grouping} ({R5}{{verdict!="error", {F}}})'


AT_RISK = "claimwatch_answers_at_risk_total"
ANY_CLAIM = "claimwatch_answers_with_unsupported_total"
SAME_FAMILY = "claimwatch_answers_same_family_judge_total"
EVALUATED_BY_MODEL = f'sum by (judge_id, model) (increase(claimwatch_answers_total{{outcome="evaluated", {F}}}[{RI}]))'
SHADOW = "claimwatch_shadow_answers_total"
#: the shadow's answers both judges made a call on (flagged or ok)
SHADOW_CALLED = 'main=~"flagged|ok", shadow=~"flagged|ok"'


def _flagged(by: str) -> str:
    """Flagged answers over the range per ``by``: at risk where the group has at-risk series, else the any-claim
    rule (workers without the answer risk), as the gate and the recording rules count them."""
    return (
        f"sum by ({by}) (increase({AT_RISK}{{{F}}}[{RANGE}]))\n"
        f"or\nsum by ({by}) (increase({ANY_CLAIM}{{{F}}}[{RANGE}]))"
    )


def _evaluated(by: str = "") -> str:
    grouping = f" by ({by})" if by else ""
    return f'sum{grouping} (increase(claimwatch_answers_total{{outcome="evaluated", {F}}}[{RANGE}]))'


def overview() -> dict[str, Any]:
    """Answer quality: faithfulness, verdicts, slices, releases."""
    lay = Layout()
    lay.row("Headline (selected time range)")
    lay.add(
        stat(
            "Faithfulness rate",
            _claim_ratio("supported"),
            unit="percentunit",
            thresholds=PCT_GOOD_HIGH,
            description="SUPPORTED / judged claims (ERROR excluded) over the selected range.",
        ),
        w=5,
        h=5,
    )
    lay.add(
        stat(
            "Contradicted claims",
            _claim_ratio("contradicted"),
            unit="percentunit",
            thresholds=PCT_GOOD_LOW,
            description="CONTRADICTED / judged claims over the selected range.",
        ),
        w=5,
        h=5,
    )
    lay.add(
        stat(
            "Flagged answers (at risk)",
            f"sum (\n{_flagged(S)}\n)\n/\n{_evaluated()}",
            unit="percentunit",
            thresholds=[(None, "green"), (0.1, "yellow"), (0.25, "red")],
            description=(
                "Evaluated answers at risk (the judge's calibrated answer risk at or above its threshold): what "
                "`claimwatch gate` and the release alerts count as flagged. Slices whose workers do not export the "
                "answer risk count by the any-claim rule instead (the next panel)."
            ),
        ),
        w=5,
        h=5,
    )
    lay.add(
        stat(
            "Answers with any unsupported claim",
            f"sum (increase({ANY_CLAIM}{{{F}}}[{RANGE}]))\n/\n{_evaluated()}",
            unit="percentunit",
            thresholds=[(None, "green"), (0.1, "yellow"), (0.25, "red")],
            description=(
                "Evaluated answers with at least one UNSUPPORTED or CONTRADICTED claim (the any-claim rule: what "
                "flagged meant before the answer risk; grows with the number of claims per answer)."
            ),
        ),
        w=5,
        h=5,
    )
    lay.add(
        stat(
            "Answers evaluated",
            _evaluated(),
            unit="short",
            decimals=0,
        ),
        w=4,
        h=5,
    )

    lay.row("Over time")
    lay.add(
        timeseries(
            "Faithfulness rate",
            targets((_rec_ratio("supported"), "all selected"), (_rec_ratio("supported", "release"), "{{release}}")),
            unit="percentunit",
            maximum=1,
            description="SUPPORTED / judged claims, 5m rate (recording rule), overall and per release.",
        )
    )
    lay.add(
        timeseries(
            "Contradicted and unsupported claims (exemplars: the answers behind them)",
            [
                target(
                    f'sum by (verdict) (rate(claimwatch_claims_total{{verdict=~"contradicted|unsupported", {F}}}[{RI}]))',
                    "{{verdict}}",
                    exemplar=True,
                )
            ],
            unit="cps",
            description="Raw counters, so Grafana shows their exemplars: each point carries the trace_id (and root span_id) "
            "of an answer judged that way; the exemplar link opens the trace (trace_url_template, see "
            "deploy/grafana/provisioning/datasources). The data link shows how to list the claims.",
            links=[{"title": "List these claims (claimwatch claims)", "url": "CLAIMS_PANEL_URL"}],
        )
    )
    lay.add(text(CLAIMS_PANEL_TITLE, CLAIMS_HOWTO), w=12, h=8)
    howto_id = lay.panels[-1]["id"]
    for p in lay.panels:
        for link in p.get("fieldConfig", {}).get("defaults", {}).get("links", []):
            if link["url"] == "CLAIMS_PANEL_URL":
                link["url"] = f"/d/${{__dashboard.uid}}?viewPanel={howto_id}&${{__url_time_range}}&${{__all_variables}}"
    lay.add(
        timeseries(
            "Verdict breakdown",
            targets((f"sum by (verdict) ({R5}{{{F}}})", "{{verdict}}")),
            unit="cps",
            stacked=True,
            description="Claims per second by verdict (ERROR = the judge failed).",
        )
    )
    lay.add(
        timeseries(
            "Share of answers with unsupported / contradicted claims",
            targets(
                (
                    f'sum ({SL}:claimwatch_answers_flagged:rate5m{{{F}}})\n/\nsum ({ANS5}{{outcome="evaluated", {F}}})',
                    "flagged (at risk)",
                ),
                (
                    f"sum ({SL}:claimwatch_answers_with_unsupported:rate5m{{{F}}})\n/\n"
                    f'sum ({ANS5}{{outcome="evaluated", {F}}})',
                    "any unsupported or contradicted",
                ),
                (
                    f"sum ({SL}:claimwatch_answers_with_contradicted:rate5m{{{F}}})\n/\n"
                    f'sum ({ANS5}{{outcome="evaluated", {F}}})',
                    "any contradicted",
                ),
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "Shares of evaluated answers, 5m rates (recording rules). Flagged = at risk (what the gate and the "
                "release alerts count), the any-claim rate for slices whose workers do not export the answer risk; "
                "beside it the any-claim rule (any UNSUPPORTED or CONTRADICTED claim) and any CONTRADICTED claim."
            ),
        )
    )
    lay.add(
        timeseries(
            "What kind of failure: answers with a claim of each class, by release",
            targets(
                (
                    f"sum by (release, failure_type) (rate(claimwatch_answers_with_failure_total{{{F}}}[{RI}]))\n"
                    "/ ignoring (failure_type) group_left ()\n"
                    f'sum by (release) (rate(claimwatch_answers_total{{outcome="evaluated", {F}}}[{RI}]))',
                    "{{release}} {{failure_type}}",
                )
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "Share of evaluated answers with at least one claim of each failure class (docs/failure-types.md: "
                "numeric, temporal, attribution, list_membership, polarity, quantifier, hedge_inflation, "
                "certainty_inflation, unsupported_addition, other, unknown), per release: when the flagged share "
                "moves, the class that moved. ClaimwatchFailureTypeRise compares each class between releases; "
                "claimwatch claims --type <class> lists the claims."
            ),
        )
    )
    lay.add(
        timeseries(
            "What kind of failure, by answer shape (sources, reasoning)",
            targets(
                *(
                    (
                        f"sum by ({d}, failure_type) (rate(claimwatch_answers_with_failure_total{{{F}}}[{RI}]))\n"
                        "/ ignoring (failure_type) group_left ()\n"
                        f"sum by ({d}) (rate(claimwatch_answers_by_shape_total{{{F}}}[{RI}]))",
                        f"{d}={{{{{d}}}}} {{{{failure_type}}}}",
                    )
                    for d in ("sources", "reasoning")
                )
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "Share of evaluated answers with a claim of each failure class, per derived slice: sources (how many "
                "documents the claims' evidence came from: single, multi) and reasoning (claims that combine numbers: "
                "arithmetic; that place events in time: temporal). 'numeric +3 pts on multi-source answers' reads "
                "here. CLAIMWATCH_DERIVED_SLICES switches a label off (it reads off)."
            ),
        )
    )
    lay.add(
        timeseries(
            "Average per-answer faithfulness score",
            targets(
                (
                    f"sum by (release) (rate(claimwatch_answer_faithfulness_ratio_sum{{{F}}}[{RI}]))\n/\n"
                    f"sum by (release) (rate(claimwatch_answer_faithfulness_ratio_count{{{F}}}[{RI}]))",
                    "{{release}}",
                )
            ),
            unit="percentunit",
            maximum=1,
            description="Mean of per-answer supported/judged (histogram sum / count); each answer weighs the same.",
        )
    )
    lay.add(
        timeseries(
            "Abstentions and failed answers",
            targets(
                (f'sum ({ANS5}{{outcome="abstained", {F}}})\n/\nsum ({ANS5}{{{F}}})', "abstained"),
                (f'sum ({ANS5}{{outcome="failed", {F}}})\n/\nsum ({ANS5}{{{F}}})', "failed (judge error)"),
            ),
            unit="percentunit",
            minimum=0,
            description='Answers with no claims ("I don\'t know") and answers whose every claim is ERROR.',
        )
    )
    lay.add(
        timeseries(
            "Contradicted rate per release",
            targets((_rec_ratio("contradicted", "release"), "{{release}}")),
            unit="percentunit",
            minimum=0,
            description="CONTRADICTED / judged claims, 5m rate, per release.",
        )
    )
    lay.add(
        timeseries(
            "Flagged share per judge",
            targets(
                (
                    f"sum by (judge_id) ({SL}:claimwatch_answers_flagged:rate5m{{{F}}})\n/\n"
                    f'sum by (judge_id) ({ANS5}{{outcome="evaluated", {F}}})',
                    "{{judge_id}}",
                )
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "Flagged answers / evaluated answers per judge_id (kind:model@digest of everything that changes "
                "verdicts). A new line is a judge change: every release's rates move with it, so the alerts and "
                "the gate compare counts of one judge; pick a judge above to see its releases alone."
            ),
        )
    )
    lay.add(
        timeseries(
            "Answers judged by their own model family",
            targets(
                (
                    f"(\n  sum by (judge_id, model) (increase({SAME_FAMILY}{{{F}}}[{RI}]))\n  or\n  0 * {EVALUATED_BY_MODEL}\n)\n"
                    f"/\n{EVALUATED_BY_MODEL}",
                    "{{model}} by {{judge_id}}",
                )
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "Share of each answering model's evaluated answers (the model slice) judged by a judge of the same "
                "model family (contract.families). A judge rates its own family's answers more faithful than they "
                "are (self-preference bias): a release that moves its generator into the judge's family looks "
                "better than it is. 0: the judge shares no family with that model. The gate and the report name "
                "these slices too."
            ),
        )
    )

    lay.row("Slices and releases (selected time range)")
    lay.add(
        table(
            "Per-slice quality",
            [
                (_claims(JUDGED, by=S), "judged claims", "short"),
                (_claim_ratio("supported", by=S), "faithfulness", "percentunit"),
                (_claim_ratio("unsupported", by=S), "unsupported", "percentunit"),
                (_claim_ratio("contradicted", by=S), "contradicted", "percentunit"),
                (f"(\n{_flagged(S)}\n)\n/\n{_evaluated(S)}", "flagged answers", "percentunit"),
                (
                    f"sum by ({S}) (increase({ANY_CLAIM}{{{F}}}[{RANGE}]))\n/\n{_evaluated(S)}",
                    "answers w/ unsupported",
                    "percentunit",
                ),
            ],
            sort_by="contradicted",
        ),
        w=24,
        h=9,
    )
    lay.add(
        table(
            "Per-release comparison",
            [
                (
                    f'sum by (release) (increase(claimwatch_answers_total{{outcome="evaluated", {F}}}[{RANGE}]))',
                    "evaluated answers",
                    "short",
                ),
                (f"(\n{_flagged('release')}\n)\n/\n{_evaluated('release')}", "flagged answers", "percentunit"),
                (
                    f"sum by (release) (increase({ANY_CLAIM}{{{F}}}[{RANGE}]))\n/\n{_evaluated('release')}",
                    "answers w/ unsupported",
                    "percentunit",
                ),
                (_claims(JUDGED, by="release"), "judged claims", "short"),
                (_claim_ratio("supported", by="release"), "faithfulness", "percentunit"),
                (_claim_ratio("unsupported", by="release"), "unsupported", "percentunit"),
                (_claim_ratio("contradicted", by="release"), "contradicted", "percentunit"),
                (
                    f'sum by (release) (increase(claimwatch_answers_total{{outcome="abstained", {F}}}[{RANGE}]))\n/\n'
                    f"sum by (release) (increase(claimwatch_answers_total{{{F}}}[{RANGE}]))",
                    "abstained",
                    "percentunit",
                ),
            ],
            description=(
                "Compare a candidate with the previous release. `claimwatch gate` decides on the share of "
                "flagged answers: at risk (the judge's calibrated answer risk at or above its threshold); a release "
                "whose workers do not export the answer risk shows its any-claim share (any UNSUPPORTED or "
                "CONTRADICTED claim, the next column), and the gate then compares both releases by that rule. "
                "Answers are independent trials, claims of one answer are not, so differences of the claim rates "
                "are descriptive only."
            ),
            sort_by="flagged answers",
        ),
        w=12,
        h=9,
    )
    lay.add(
        table(
            "Top slices by contradicted rate",
            [
                (
                    f"topk(10,\n  ({_claim_ratio('contradicted', by=S)})\n  and\n  {_claims(JUDGED, by=S)} >= 50\n)",
                    "contradicted",
                    "percentunit",
                )
            ],
            description="Slices with at least 50 judged claims in the range.",
            sort_by="contradicted",
        ),
        w=12,
        h=9,
    )
    lay.row("Parity with other tools (same verdicts: RagaliQ, DeepEval, FActScore, PAS2)")
    lay.add(
        timeseries(
            "Answers failing RagaliQ-style evaluators",
            targets(
                (
                    f"sum by (evaluator) (rate(claimwatch_answers_failing_total{{{F}}}[{RI}]))\n/ on() group_left\n"
                    f'sum (rate(claimwatch_answers_total{{outcome="evaluated", {F}}}[{RI}]))',
                    "{{evaluator}}",
                )
            ),
            unit="percentunit",
            minimum=0,
            description="Share of evaluated answers below the faithfulness (0.7) / hallucination (0.8) pass thresholds.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Context hallucination (DeepEval-style) and FActScore",
            targets(
                (
                    f"sum (rate(claimwatch_answer_context_hallucination_ratio_sum{{{F}}}[{RI}]))\n/\n"
                    f"sum (rate(claimwatch_answer_context_hallucination_ratio_count{{{F}}}[{RI}]))",
                    "contradicted chunks / chunks",
                ),
                (
                    f"sum (rate(claimwatch_answer_factscore_ratio_sum{{{F}}}[{RI}]))\n/\n"
                    f"sum (rate(claimwatch_answer_factscore_ratio_count{{{F}}}[{RI}]))",
                    "FActScore (length-penalised)",
                ),
            ),
            unit="percentunit",
            minimum=0,
            maximum=1,
            description="Mean per answer. FActScore appears only for routes with a minimum expected claim count.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Consistency across paraphrased questions",
            targets(
                (
                    f'sum by (route) (rate(claimwatch_consistency_checks_total{{outcome="inconsistent", {F}}}[{RI}]))\n/\n'
                    f"sum by (route) (rate(claimwatch_consistency_checks_total{{{F}}}[{RI}]))",
                    "inconsistent {{route}}",
                ),
                (
                    f"sum (rate(claimwatch_suspect_claims_total{{{F}}}[{RI}]))\n/\n"
                    f'sum (rate(claimwatch_claims_total{{verdict="supported", {F}}}[{RI}]))',
                    "low-confidence supported claims",
                ),
            ),
            unit="percentunit",
            minimum=0,
            description="PAS2-style: share of checks where an answer conflicts with an earlier answer to an equivalent "
            "question; and SUPPORTED claims below the confidence floor.",
        ),
        w=8,
    )
    return dashboard(
        "claimwatch-overview",
        "claimwatch / answer quality",
        f"Claim-level faithfulness of RAG answers by {', '.join(SLICE_LABELS[:-1])} and {SLICE_LABELS[-1]}.",
        lay.panels,
        [datasource_variable()] + _slice_variables(),
        ["claimwatch", "rag", "llm"],
    )


def _slice_variables() -> list[dict[str, Any]]:
    out = []
    chained: list[str] = []
    # the release comparison's scope first (a release is compared within it), then the other slice labels, the judge
    scope = [name for name in RELEASE_SCOPE_LABELS if name in SLICE_LABELS]
    for name in (*scope, *(n for n in SLICE_LABELS if n not in scope), "judge_id"):
        sel = ", ".join(f'{c}=~"${c}"' for c in chained)
        label = "Judge" if name == "judge_id" else None
        out.append(query_variable(name, f"label_values(claimwatch_answers_total{{{sel}}}, {name})", label))
        chained.append(name)
    return out


def pipeline() -> dict[str, Any]:
    """Pipeline health: collector, Kafka lag, workers, judges, cost."""
    J = 'judge=~"$judge"'
    lay = Layout()
    lay.row("Collector (in the application)")
    lay.add(
        timeseries(
            "Collector drops by reason",
            targets(("sum by (reason) (rate(claimwatch_collector_dropped_total[$__rate_interval]))", "{{reason}}")),
            unit="cps",
            stacked=True,
            description="Data lost before Kafka. Units depend on the reason: spans (span_queue_full, "
            "late_span, too_many_spans, shutdown), traces (ttl_evicted, buffer_full, "
            "incomplete_at_shutdown), records (queue_full, produce_error, sink_shutdown), "
            "retrieved chunks (missing_content). Sampling is not a drop: see traces by outcome.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector queue depth and buffered traces",
            targets(
                ("sum by (queue) (claimwatch_collector_queue_depth)", "{{queue}} queue"),
                ("sum (claimwatch_collector_buffered_traces)", "buffered traces"),
            ),
            unit="short",
            description="span = finished spans waiting for the collector thread; sink = records waiting "
            "for Kafka; buffered = traces waiting for their root span.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector produce latency p95 and errors",
            targets(
                (
                    "histogram_quantile(0.95, sum by (le) (rate(claimwatch_collector_produce_latency_seconds_bucket[$__rate_interval])))",
                    "p95 latency",
                ),
                (
                    "sum by (reason) (rate(claimwatch_collector_produce_errors_total[$__rate_interval]))",
                    "errors {{reason}}",
                ),
            ),
            unit="s",
            description="send -> broker ack; errors by Kafka error class (each also a produce_error drop).",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector traces by outcome",
            targets(("sum by (outcome) (rate(claimwatch_collector_traces_total[$__rate_interval]))", "{{outcome}}")),
            unit="cps",
            description="A trace passes several outcomes: assembled, then not_rag or sampled_in / "
            "sampled_out, then queued (handed to the Kafka sink). Not additive.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector records by unit and grounding",
            targets(
                (
                    "sum by (unit, context_source) (rate(claimwatch_collector_records_total[$__rate_interval]))",
                    "{{unit}} from {{context_source}}",
                )
            ),
            unit="cps",
            stacked=True,
            description="Records built, before sampling: unit call = a RAG call, turn = an agent turn (tool "
            "calls, model steps, one final answer); context_source = what the answering model was given: "
            "retriever documents, tool results, both, or the system prompt (opt-in).",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector traces without a record, by reason",
            targets(
                (
                    "sum by (reason) (rate(claimwatch_collector_not_recorded_total[$__rate_interval]))",
                    "{{reason}}",
                )
            ),
            unit="cps",
            stacked=True,
            description="ungrounded_turn = an answer with no retrieval or tool result to ground it; no_answer = "
            "documents or tool results but no final answer; no_content = documents/tool results without text; "
            "not_llm = no span of a known convention. Each is logged (once a minute per reason) with a trace id "
            "and the setting that would change it.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector sampling decisions",
            targets(
                (
                    "sum by (decision, reason) (rate(claimwatch_collector_sampling_decisions_total[$__rate_interval]))",
                    "{{decision}} {{reason}}",
                )
            ),
            unit="cps",
            stacked=True,
            description="keep_error / keep_feedback / keep_release = kept by rule; ratio_in / ratio_out = "
            "the sampling ratio; rate_limited = the token bucket.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Collector drop ratio (alerted) and truncated records",
            targets(
                ("reason:claimwatch_collector_dropped:ratio_rate10m", "dropped: {{reason}}"),
                (
                    "sum (rate(claimwatch_collector_truncated_total[$__rate_interval]))\n/\n"
                    'sum (rate(claimwatch_collector_traces_total{outcome="sampled_in"}[$__rate_interval]))',
                    "truncated to fit the size limits",
                ),
            ),
            unit="percentunit",
            minimum=0,
            description="Recording rule used by ClaimwatchCollectorDropping: drops / (assembled traces + "
            "drops), per reason; and the share of records cut to fit the record size limits.",
        ),
        w=8,
    )

    lay.row("Kafka and workers")
    lay.add(
        timeseries(
            "Consumer lag", targets(("sum by (topic) (claimwatch_consumer_lag_records)", "{{topic}}")), unit="short"
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Worker throughput",
            targets(("sum by (outcome) (rate(claimwatch_records_total[$__rate_interval]))", "{{outcome}}")),
            unit="rps",
            stacked=True,
            description="Records handled per second by outcome.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Evaluation duration",
            targets(
                (
                    "histogram_quantile(0.5, sum by (le) (rate(claimwatch_evaluation_duration_seconds_bucket[$__rate_interval])))",
                    "p50",
                ),
                (
                    "histogram_quantile(0.95, sum by (le) (rate(claimwatch_evaluation_duration_seconds_bucket[$__rate_interval])))",
                    "p95",
                ),
            ),
            unit="s",
        ),
        w=8,
    )
    lay.add(
        stat(
            "Workers up",
            "sum (claimwatch_worker_up)",
            unit="short",
            thresholds=[(None, "red"), (1, "green")],
            decimals=0,
        ),
        w=6,
        h=5,
    )
    lay.add(
        stat(
            "Last evaluation age",
            "time() - max (claimwatch_last_evaluation_timestamp_seconds)",
            unit="s",
            thresholds=[(None, "green"), (600, "yellow"), (1800, "red")],
        ),
        w=6,
        h=5,
    )
    lay.add(
        timeseries(
            "Dead letters by reason",
            targets(("sum by (reason) (increase(claimwatch_dead_letters_total[$__rate_interval]))", "{{reason}}")),
            unit="short",
            stacked=True,
        ),
        w=12,
        h=5,
    )

    lay.row("Flow control (slow, rate-limited judges)")
    lay.add(
        timeseries(
            "Answers in flight and judge concurrency limit",
            targets(
                ("sum (claimwatch_in_flight_answers)", "answers in flight"),
                ("sum (claimwatch_judge_concurrency_limit)", "adaptive concurrency limit"),
                ("sum (claimwatch_unacked_writes)", "writes awaiting ack"),
            ),
            unit="short",
            description="In flight = handed to judging, not finished (partitions pause at "
            "CLAIMWATCH_FLOW__MAX_IN_FLIGHT). The limit halves on 429/529 and grows back by "
            "about one per round of successful calls (AIMD).",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Throttled judge calls",
            targets(
                (
                    f"sum by (judge) (rate(claimwatch_judge_throttled_total{{{J}}}[$__rate_interval]))",
                    "{{judge}} 429/529",
                )
            ),
            unit="cps",
            stacked=True,
            description="Calls the provider answered with 429 or 529. They are retried after retry-after: "
            "a burst shows here and as lag, not as failed answers.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Rebalance drains, write and commit failures",
            targets(
                (
                    "sum (increase(claimwatch_rebalance_drain_seconds_count[$__rate_interval]))",
                    "rebalances with answers in flight",
                ),
                (
                    "histogram_quantile(0.95, sum by (le) (rate(claimwatch_rebalance_drain_seconds_bucket[$__rate_interval])))",
                    "drain p95 (s)",
                ),
                (
                    "sum by (reason) (increase(claimwatch_result_write_errors_total[$__rate_interval]))",
                    "write errors {{reason}}",
                ),
                ("sum (increase(claimwatch_commit_failures_total[$__rate_interval]))", "commit failures"),
                ("sum (increase(claimwatch_results_shrunk_total[$__rate_interval]))", "results shrunk to fit"),
            ),
            unit="short",
            description="Drain = time to finish revoked partitions' answers before handing them over. Write "
            "errors are retried; a worker stops only when the broker keeps refusing.",
        ),
        w=8,
    )

    lay.row("Judges")
    lay.add(
        timeseries(
            "Judge latency p50 / p95",
            targets(
                (
                    f"histogram_quantile(0.5, sum by (le, judge, operation) (rate(claimwatch_judge_latency_seconds_bucket{{{J}}}[$__rate_interval])))",
                    "p50 {{judge}} {{operation}}",
                ),
                (
                    f"histogram_quantile(0.95, sum by (le, judge, operation) (rate(claimwatch_judge_latency_seconds_bucket{{{J}}}[$__rate_interval])))",
                    "p95 {{judge}} {{operation}}",
                ),
            ),
            unit="s",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Judge errors by reason",
            targets(
                (
                    f"sum by (judge, reason) (rate(claimwatch_judge_errors_total{{{J}}}[$__rate_interval]))",
                    "{{judge}} {{reason}}",
                )
            ),
            unit="cps",
            stacked=True,
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Judge error ratio (alerted)",
            targets((f"judge:claimwatch_judge_errors:ratio_rate10m{{{J}}}", "{{judge}}")),
            unit="percentunit",
            minimum=0,
            description="Recording rule used by ClaimwatchJudgeFailing: errors / calls over 10m.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Judge tokens",
            targets(
                (
                    f"sum by (judge, kind) (rate(claimwatch_judge_tokens_total{{{J}}}[$__rate_interval]))",
                    "{{judge}} {{kind}}",
                )
            ),
            unit="short",
            stacked=True,
            description="Tokens per second by kind (cache reads are cheaper).",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Judge cost",
            targets(
                (
                    f"sum by (judge, model) (rate(claimwatch_judge_cost_dollars_total{{{J}}}[$__rate_interval])) * 3600",
                    "{{judge}} {{model}}",
                )
            ),
            unit="currencyUSD",
            stacked=True,
            description="Estimated US dollars per hour.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Judge calls",
            targets(
                (
                    f"sum by (judge, model) (rate(claimwatch_judge_calls_total{{{J}}}[$__rate_interval]))",
                    "{{judge}} {{model}}",
                )
            ),
            unit="cps",
        ),
        w=8,
    )

    lay.add(
        timeseries(
            "Judge drift canary: error rates on the labelled set",
            targets(
                ("max by (judge_id, rate) (claimwatch_drift_error_rate)", "{{judge_id}} {{rate}} now"),
                ("max by (judge_id, rate) (claimwatch_drift_reference_error_rate)", "{{judge_id}} {{rate}} reference"),
                ("max by (judge_id) (claimwatch_drift_alarm)", "{{judge_id}} alarm"),
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "claimwatch drift-check re-judges a fixed labelled set daily: each error rate (overall, false_alarm, "
                "miss) now and in the judge's reference runs, and the alarm (1: a rate rose beyond chance; "
                "ClaimwatchJudgeDrift). Empty without the canary."
            ),
        ),
        w=24,
    )

    lay.row("Judge cascade (optional: empty unless the cascade judge runs)")
    lay.add(
        timeseries(
            "Cascade: which judge decided",
            targets(
                ("sum by (decided_by) (rate(claimwatch_cascade_claims_total[$__rate_interval]))", "{{decided_by}}")
            ),
            unit="cps",
            stacked=True,
            description="second = escalated to the stronger judge; first_over_budget / first_fallback = "
            "escalation skipped (budget) or failed.",
        ),
        w=12,
    )
    lay.add(
        timeseries(
            "Cascade: first/second judge agreement",
            targets(
                (
                    'sum (rate(claimwatch_cascade_agreement_total{agree="true"}[$__rate_interval]))\n/\n'
                    "sum (rate(claimwatch_cascade_agreement_total[$__rate_interval]))",
                    "agreement",
                )
            ),
            unit="percentunit",
            maximum=1,
            description="On sampled confident claims judged by both judges.",
        ),
        w=12,
    )
    lay.row("Judge rollout: the shadow judge (optional: empty unless CLAIMWATCH_SHADOW__JUDGE is set)")
    lay.add(
        timeseries(
            "Shadow vs main: flagged share on the same answers",
            targets(
                (
                    f'sum by (main_judge_id) (increase({SHADOW}{{main="flagged", {SHADOW_CALLED}}}[{RI}]))\n/\n'
                    f"sum by (main_judge_id) (increase({SHADOW}{{{SHADOW_CALLED}}}[{RI}]))",
                    "main {{main_judge_id}}",
                ),
                (
                    f'sum by (judge_id) (increase({SHADOW}{{shadow="flagged", {SHADOW_CALLED}}}[{RI}]))\n/\n'
                    f"sum by (judge_id) (increase({SHADOW}{{{SHADOW_CALLED}}}[{RI}]))",
                    "shadow {{judge_id}}",
                ),
            ),
            unit="percentunit",
            minimum=0,
            description=(
                "Flagged share of the sampled answers under the main judge and under the shadow (candidate) "
                "judge: the gap is the shift a switch would cause to every release's rates. claimwatch "
                "judge-compare gives it with an interval, per slice, and each judge's error rates on your labels."
            ),
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Shadow agreement (same call on an answer)",
            targets(
                (
                    f'(\n  sum by (judge_id) (increase({SHADOW}{{main="flagged", shadow="flagged"}}[{RI}]))\n  +\n'
                    f'  sum by (judge_id) (increase({SHADOW}{{main="ok", shadow="ok"}}[{RI}]))\n)\n/\n'
                    f"sum by (judge_id) (increase({SHADOW}{{{SHADOW_CALLED}}}[{RI}]))",
                    "{{judge_id}}",
                )
            ),
            unit="percentunit",
            maximum=1,
            description="Answers both judges called the same way (flagged or not) / answers both called.",
        ),
        w=8,
    )
    lay.add(
        timeseries(
            "Shadow: skipped answers and spend",
            targets(
                ("sum by (reason) (rate(claimwatch_shadow_skipped_total[$__rate_interval]))", "skipped {{reason}}"),
                ("sum (claimwatch_shadow_spend_dollars_last_hour)", "spend, last hour ($)"),
                ("max (claimwatch_shadow_budget_dollars_per_hour)", "budget per hour ($)"),
            ),
            unit="short",
            description=(
                "Sampled answers the shadow did not judge, by reason (busy: its queue full; budget: the hour's "
                "spend reached; error, write_error, stopped), and its spend against its budget."
            ),
        ),
        w=8,
    )
    return dashboard(
        "claimwatch-pipeline",
        "claimwatch / pipeline",
        "Health of the claimwatch pipeline: collector, Kafka lag, workers, judges and their cost.",
        lay.panels,
        [datasource_variable(), query_variable("judge", "label_values(claimwatch_judge_calls_total, judge)")],
        ["claimwatch", "pipeline"],
    )


DASHBOARDS: dict[str, Callable[[], dict[str, Any]]] = {
    "claimwatch-overview.json": overview,
    "claimwatch-pipeline.json": pipeline,
}


def grafana_trace_url(template: str) -> str:
    """``trace_url_template`` (``{trace_id}``) in Grafana's exemplar-link syntax, escaped for provisioning files."""
    if "{trace_id}" not in template:
        raise ValueError(f"trace URL template {template!r} has no {{trace_id}}")
    return template.replace("$", "$$").replace("{trace_id}", "$${__value.raw}")


def datasources(trace_url_template: str = DEFAULT_TRACE_URL_TEMPLATE) -> str:
    """deploy/grafana/provisioning/datasources/prometheus.yml: Prometheus, its exemplars linked to the traces."""
    return f"""# Generated by python -m dashboards.generate (--trace-url-template / CLAIMWATCH_TRACE_URL_TEMPLATE): do not edit.
# Grafana datasource provisioning (mounted at /etc/grafana/provisioning by deploy/compose).
# The claimwatch dashboards select their datasource through a `datasource` template
# variable of type prometheus, which defaults to the default Prometheus datasource:
# keep this one isDefault. The fixed uid lets other provisioning (alerting, links) refer to it.
apiVersion: 1

datasources:
  - name: Prometheus
    uid: claimwatch-prometheus
    type: prometheus
    access: proxy
    url: http://prometheus:9090
    isDefault: true
    editable: false
    jsonData:
      httpMethod: POST
      timeInterval: 15s
      # exemplars on the verdict counters carry the answer's trace_id; this link opens it in the trace backend
      # ({{trace_id}} of the template -> ${{__value.raw}}; $$ escapes Grafana's env-var interpolation). Examples:
      #   Jaeger UI  http://jaeger:16686/trace/{{trace_id}}
      #   Phoenix    http://phoenix:6006/projects/<project id>/traces/{{trace_id}}
      #   Langfuse   https://cloud.langfuse.com/project/<project id>/traces/{{trace_id}}
      #   Tempo as a Grafana data source: replace url with datasourceUid: <tempo uid>
      exemplarTraceIdDestinations:
        - name: trace_id
          url: {grafana_trace_url(trace_url_template)}
"""


def render_all(
    thresholds: dict[str, Any] | None = None, trace_url_template: str = DEFAULT_TRACE_URL_TEMPLATE
) -> dict[Path, str]:
    """Every generated file (absolute path) -> its text."""
    out = {GRAFANA_DIR / name: json.dumps(build(), indent=2) + "\n" for name, build in DASHBOARDS.items()}
    out[DATASOURCES] = datasources(trace_url_template)
    out.update({RULES_DIR / name: text for name, text in rules_gen.render(thresholds).items()})
    out[ARGO_TEMPLATE] = argo_gen.render()
    out[CONFIGMAP] = configmap(CONFIGMAP.read_text())
    return out


def configmap(text: str) -> str:
    """The k8s ConfigMap with its ``CLAIMWATCH_SLICE_LABELS`` set to the declared labels (the rest as written)."""
    labels = "'" + json.dumps(list(SLICE_LABELS), separators=(",", ":")) + "'"
    out, n = _SLICE_LABELS_LINE.subn(lambda m: m.group(1) + labels, text)
    if n != 1:
        raise ValueError(f"{CONFIGMAP}: expected one CLAIMWATCH_SLICE_LABELS line, found {n}")
    return out


def stale_files(files: dict[Path, str]) -> list[Path]:
    """Generated files whose on-disk text differs from ``files`` (or that are missing)."""
    return [p for p, text in files.items() if not p.exists() or p.read_text() != text]


def _display(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT.parent))
    except ValueError:
        return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboards.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a generated file differs from the one on disk")
    parser.add_argument("--thresholds", type=Path, help="JSON object overriding rules_gen.DEFAULT_THRESHOLDS")
    parser.add_argument(
        "--trace-url-template",
        default=os.environ.get("CLAIMWATCH_TRACE_URL_TEMPLATE", DEFAULT_TRACE_URL_TEMPLATE),
        help="where an exemplar's trace opens, with {trace_id} (default: the compose Jaeger UI)",
    )
    args = parser.parse_args(argv)
    thresholds = json.loads(args.thresholds.read_text()) if args.thresholds else None
    files = render_all(thresholds, args.trace_url_template)
    if args.check:
        stale = stale_files(files)
        for p in stale:
            print(f"stale: {_display(p)} (run python -m dashboards.generate)", file=sys.stderr)
        return 1 if stale else 0
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
        print(f"wrote {_display(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

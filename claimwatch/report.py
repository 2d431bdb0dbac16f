"""``claimwatch report``: one self-contained HTML page for a release decision.

Built from result records (the ``claimwatch.results`` topic, what ``claimwatch claims``
reads): the release gate's decision and its reasons (:func:`claimwatch.gate.decide`, on the same
answer counts Prometheus gives: :class:`claimwatch.gate.ReleaseCounts`), baseline vs candidate
contradicted and unsupported claim rates per slice with 95% Wilson intervals (descriptive: claims of
one answer are correlated, so these intervals are too narrow to decide on),
flagged claims over time, and the worst claims with their evidence highlighted inside
the chunk. Like ``claimwatch gate``, it names the judge behind the counts (the records' ``judge``)
when it is not fit for a rollback decision and holds such a rollback unless ``--trust-judge``
(:mod:`claimwatch.gate.judge_fitness`). The page needs no network: charts are Vega-Lite specifications rendered to
inline SVG by ``vl-convert`` (the ``report`` extra), no JavaScript, no CDN. Every text that comes from
the records or the flags (slice names and values, release and judge names, claims, evidence, reasons,
trace ids) is HTML-escaped, and a trace link is made only for an ``http(s)`` URL. Records that are no
result record (:func:`claimwatch.gate.counts.result_problem`) and duplicates are left out, counted, and
said on the page and on the command's output.

Why Vega-Lite to SVG: a grammar made for statistical charts (intervals are one
``errorbar`` layer); measured on the demo's data the page is ~60 KB and renders in
Chromium without running a script, where an inline plotly.js page starts at 4.8 MB.
"""

from __future__ import annotations

import argparse
import html
import math
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import quote, urlsplit

from claimwatch import other_tools
from claimwatch.claims_query import FLAGGED, FlaggedClaim, confidence, flagged_claims, trace_url
from claimwatch.gate import DEFAULT_MIN_ANSWERS, Counts, GateConfig, GateDecision, ReleaseCounts, TestConfig, decide
from claimwatch.gate.by_type import MIN_SLICE_ANSWERS, TypeChange, TypeCounts, changes, headline
from claimwatch.gate.correction import correct
from claimwatch.gate.counts import ResultSkips, latest_per_trace, record_verdicts, valid_results
from claimwatch.gate.judge_fitness import check_decision
from claimwatch.other_tools import OtherToolScores
from claimwatch.stats.proportions import wilson_interval
from contract.errors import ConfigError
from evaluator_worker.shape import DERIVED

#: the two rates the gate compares, in display order
RATES = ("contradicted", "unsupported")
#: z of the 95% two-sided Wilson interval drawn around each rate
Z95 = 1.959963984540054
#: worst claims listed (CONTRADICTED first, then by confidence)
WORST_CLAIMS = 12
#: time buckets of the "over time" chart
TIME_BUCKETS = 24
#: rows of the per-slice failure-class table (largest rises)
TOP_SLICE_ROWS = 10


@dataclass
class ReleaseReport:
    """Everything the page shows, computed from result records (no I/O)."""

    baseline: str
    candidate: str
    label: str
    decision: GateDecision
    #: (release, slice value) -> counts of that slice
    by_slice: dict[tuple[str, str], Counts]
    slice_label: str
    #: (bucket start unix s, release, verdict) -> claims
    over_time: dict[tuple[float, str, str], int]
    worst: list[FlaggedClaim]
    answers: dict[str, int] = field(default_factory=dict)
    generated_at: float = field(default_factory=time.time)
    #: with a judge profile: raw vs corrected shares per release (``claimwatch.gate.correction``)
    corrected: tuple[str, ...] = ()
    #: without one: the judges behind the counts that are not fit for a rollback (``claimwatch.gate.judge_fitness``)
    judge_lines: tuple[str, ...] = ()
    #: the records left out (malformed, duplicates), in words (:meth:`claimwatch.gate.counts.ResultSkips.lines`)
    left_out: tuple[str, ...] = ()
    #: answers with a claim of each failure type, per release (``None``) and per (release, "label=value") for the
    #: report's slice label and the derived slices (sources, reasoning)
    by_type: dict[tuple[str, str | None], TypeCounts] = field(default_factory=dict)
    #: the RagaliQ / DeepEval / FActScore / PAS2-style numbers of the records, per release (``claimwatch.other_tools``)
    other_tools: dict[str, OtherToolScores] = field(default_factory=dict)

    def type_changes(self) -> list[TypeChange]:
        """Every failure class's flagged-answer share, baseline vs candidate, largest rise first."""
        return changes(
            self.by_type.get((self.baseline, None), TypeCounts()),
            self.by_type.get((self.candidate, None), TypeCounts()),
        )

    def type_changes_by_slice(self) -> list[TypeChange]:
        """Every (slice, class) change with enough answers in both releases, largest rise first."""
        values = sorted({v for (_, v) in self.by_type if v is not None})
        out = [
            c
            for v in values
            for c in changes(
                self.by_type.get((self.baseline, v), TypeCounts()),
                self.by_type.get((self.candidate, v), TypeCounts()),
                where=v,
            )
            if min(c.baseline[1], c.candidate[1]) >= MIN_SLICE_ANSWERS
        ]
        return sorted(out, key=lambda c: (-c.difference, c.where or "", c.failure_type))

    def type_headline(self) -> str | None:
        """The largest per-class rise in one line, with the slice where it rose most."""
        values = {v for (_, v) in self.by_type if v is not None}
        per_slice = [
            c
            for v in sorted(values)
            for c in changes(
                self.by_type.get((self.baseline, v), TypeCounts()),
                self.by_type.get((self.candidate, v), TypeCounts()),
                where=v,
            )
        ]
        return headline(self.type_changes(), per_slice)


def build_report(
    results: Iterable[Mapping[str, Any]],
    baseline: str,
    candidate: str,
    *,
    label: str = "release",
    slice_label: str = "route",
    gate: GateConfig | None = None,
    profile: str | None = None,
    trust_judge: bool = False,
    skips: ResultSkips | None = None,
) -> ReleaseReport:
    """Counts per release and slice, the gate's decision, verdicts over time, the worst claims; with a judge
    ``profile``, the shares corrected for its measured error rates (and a rollback they cannot support held);
    without one, the records' ``judge`` checked as ``claimwatch gate`` checks it (a rollback on the counts of a
    judge not fit for one held unless ``trust_judge``). Records without a result record's shape and duplicates
    are left out, counted in ``skips`` (with what the reader left out before) and listed in ``left_out``."""
    skips = skips if skips is not None else ResultSkips()
    releases = {baseline: ReleaseCounts(), candidate: ReleaseCounts()}
    by_slice: dict[tuple[str, str], Counts] = defaultdict(Counts)
    answers: dict[str, int] = defaultdict(int)
    stamped: list[tuple[float, str, str]] = []
    worst: list[FlaggedClaim] = []
    by_type: dict[tuple[str, str | None], TypeCounts] = defaultdict(TypeCounts)
    other_tools = {baseline: OtherToolScores(), candidate: OtherToolScores()}
    # the results topic is at-least-once (the worker counted each record once), and anyone can write to it
    for r in latest_per_trace(valid_results(results, skips), skips):
        slices = r.get("slices") or {}
        release = slices.get(label)
        if release not in releases:
            continue
        claims = [c for c in r.get("claims") or [] if isinstance(c, dict)]
        answers[release] += 1
        releases[release] = releases[release].add_result(r)
        key = (release, str(slices.get(slice_label) or "unknown"))
        by_slice[key] = by_slice[key] + record_verdicts(r)
        by_type[(release, None)].add_result(r)
        other_tools[release].add(r)
        by_type[(release, f"{slice_label}={key[1]}")].add_result(r)
        raw_shape = r.get("shape")
        shape: Mapping[str, Any] = raw_shape if isinstance(raw_shape, dict) else {}
        for name, values in DERIVED.items():
            value = shape.get(name)
            if value in values:  # "off", absent (older records) or foreign: not a slice
                by_type[(release, f"{name}={value}")].add_result(r)
        at = float(r.get("evaluated_at") or 0.0)
        stamped += [(at, release, str(c.get("verdict", "")).lower()) for c in claims if c.get("verdict") in FLAGGED]
        if release == candidate:
            worst += flagged_claims(dict(r), FLAGGED, int(at * 1000))
    decision = decide(
        releases[baseline], releases[candidate], gate, labels={"baseline": baseline, "candidate": candidate}
    )
    corrected: tuple[str, ...] = ()
    judge_lines: tuple[str, ...] = ()
    if profile:
        correction = correct(decision, profile)
        decision, corrected = correction.apply(decision), correction.lines
    else:
        fitness = check_decision(decision, trust_judge=trust_judge)
        decision, judge_lines = fitness.apply(decision), fitness.lines
    worst.sort(key=lambda f: f.rank)
    return ReleaseReport(
        baseline,
        candidate,
        label,
        decision,
        dict(by_slice),
        slice_label,
        _bucket(stamped),
        worst[:WORST_CLAIMS],
        dict(answers),
        corrected=corrected,
        judge_lines=judge_lines,
        left_out=tuple(skips.lines()),
        by_type=dict(by_type),
        other_tools=other_tools,
    )


def _bucket(stamped: list[tuple[float, str, str]]) -> dict[tuple[float, str, str], int]:
    """Flagged claims per time bucket, release and verdict (``TIME_BUCKETS`` equal buckets over the span)."""
    if not stamped:
        return {}
    lo = min(t for t, _, _ in stamped)
    hi = max(t for t, _, _ in stamped)
    width = max((hi - lo) / TIME_BUCKETS, 1.0)
    out: dict[tuple[float, str, str], int] = defaultdict(int)
    for t, release, verdict in stamped:
        out[(lo + int((t - lo) / width) * width, release, verdict)] += 1
    return dict(out)


# -- charts: Vega-Lite specifications (data), rendered to SVG ----------------------------------


def rate_rows(report: ReleaseReport) -> list[dict[str, Any]]:
    """One row per (slice, release, verdict): the rate and its 95% Wilson interval."""
    rows = []
    for (release, value), counts in sorted(report.by_slice.items()):
        for verdict in RATES:
            x = getattr(counts, verdict)
            lo, hi = wilson_interval(x, counts.judged, Z95) if counts.judged else (0.0, 0.0)
            role = "candidate" if release == report.candidate else "baseline"
            rows.append(
                {
                    "slice": value,
                    "release": f"{role}: {release}",
                    "verdict": verdict,
                    "rate": counts.rate(verdict),
                    "lo": lo,
                    "hi": hi,
                    "claims": counts.judged,
                }
            )
    return rows


def rates_spec(report: ReleaseReport, verdict: str) -> dict[str, Any]:
    """Points with 95% interval bars: baseline vs candidate ``verdict`` rate per slice."""
    rows = [r for r in rate_rows(report) if r["verdict"] == verdict]
    color = {
        "field": "release",
        "type": "nominal",
        "title": None,
        "scale": {"range": ["#4c78a8", "#e45756"]},
        "legend": {"orient": "bottom"},
    }
    y = {"field": "slice", "type": "nominal", "title": report.slice_label}
    offset = {"field": "release"}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": f"{verdict.capitalize()} claims / judged claims, by {report.slice_label} (95% Wilson interval)",
        "width": 520,
        "height": {"step": 34},
        "data": {"values": rows},
        "encoding": {"y": y, "yOffset": offset, "color": color},
        "layer": [
            {
                "mark": {"type": "rule", "strokeWidth": 2},
                "encoding": {
                    "x": {"field": "lo", "type": "quantitative", "axis": {"format": "%"}, "title": None},
                    "x2": {"field": "hi"},
                },
            },
            {
                "mark": {"type": "point", "filled": True, "size": 60},
                "encoding": {"x": {"field": "rate", "type": "quantitative"}},
            },
        ],
    }


def over_time_spec(report: ReleaseReport) -> dict[str, Any]:
    """Flagged claims per time bucket, one line per release and verdict."""
    rows = [
        {"t": t * 1000, "series": f"{release} {verdict}", "claims": n}
        for (t, release, verdict), n in sorted(report.over_time.items())
    ]
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "title": "Flagged claims over time (contradicted and unsupported)",
        "width": 520,
        "height": 180,
        "data": {"values": rows},
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {"field": "t", "type": "temporal", "title": None},
            "y": {"field": "claims", "type": "quantitative", "title": "claims"},
            "color": {"field": "series", "type": "nominal", "title": None, "legend": {"orient": "bottom"}},
        },
    }


def render_svg(spec: Mapping[str, Any]) -> str:
    """A Vega-Lite specification as an SVG document (``vl-convert``, offline)."""
    try:
        import vl_convert
    except ImportError as exc:
        raise ConfigError("claimwatch report needs vl-convert: pip install 'claimwatch[report]'") from exc
    return str(vl_convert.vegalite_to_svg(dict(spec)))


# -- HTML ---------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#1d232a}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
.decision{padding:14px 18px;border-radius:6px;color:#fff;margin:16px 0}.decision b{font-size:20px;letter-spacing:.04em}
.rollback{background:#c0392b}.hold{background:#b9770e}.promote{background:#1e8449}
.decision ul{margin:6px 0 0 18px;padding:0}table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #dde1e6;padding:4px 8px;text-align:right}th{background:#f3f5f7}td.l,th.l{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:18px}.chart{border:1px solid #eef0f2;border-radius:6px;padding:6px}
.claim{border-left:4px solid #c0392b;padding:6px 12px;margin:12px 0;background:#fbfbfc}.claim.unsupported{border-color:#b9770e}
.claim .meta{color:#5d6d7e;font-size:12px}.chunk{white-space:pre-wrap;background:#fff;border:1px solid #eef0f2;padding:6px;margin-top:4px}
mark{background:#ffe08a;padding:0 1px}.muted{color:#5d6d7e}
.judge{border-left:4px solid #b9770e;background:#fdf6e9;padding:6px 12px;margin:8px 0}
"""


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def highlight(chunk: str, evidence: str | None) -> str:
    """The chunk, HTML-escaped, with the evidence span marked (when it occurs verbatim)."""
    if not evidence or not isinstance(evidence, str) or evidence not in chunk:
        return html.escape(chunk)
    at = chunk.index(evidence)
    return (
        html.escape(chunk[:at])
        + "<mark>"
        + html.escape(evidence)
        + "</mark>"
        + html.escape(chunk[at + len(evidence) :])
    )


def _text(value: Any) -> str:
    """Any value from a record or a flag as HTML text (quotes escaped too: safe inside an attribute)."""
    return html.escape(str(value), quote=True)


def _link(trace_url_template: str | None, trace_id: str) -> str | None:
    """The trace's URL (the id URL-quoted) when it is an http(s) URL; None otherwise (no ``javascript:`` link)."""
    url = trace_url(trace_url_template, quote(trace_id, safe=""))
    return url if url and urlsplit(url).scheme.lower() in ("http", "https") else None


def _claim_html(f: FlaggedClaim, trace_url_template: str | None) -> str:
    c = f.claim
    verdict = str(c.get("verdict", ""))
    where = " · ".join(f"{_text(k)}={_text(v)}" for k, v in sorted(f.slices.items(), key=lambda kv: str(kv[0])))
    url = _link(trace_url_template, f.trace_id)
    trace = f'<a href="{_text(url)}">trace {_text(f.trace_id)}</a>' if url else f"trace {_text(f.trace_id)}"
    chunk = c.get("context_excerpt") or c.get("evidence") or ""
    tool = f"tool {c['context_tool']}" if c.get("context_tool") else None
    source = " ".join(str(x) for x in (tool, c.get("context_source"), c.get("context_id")) if x)
    css = "".join(ch for ch in verdict.lower() if ch.isalnum() or ch in "-_")
    risk = (
        ""
        if f.answer_risk is None
        else f" · answer risk {f.answer_risk:.2f}" + (" <b>at risk</b>" if f.at_risk else " (below the threshold)")
    )
    parts = [
        f'<div class="claim {css}"><div><b>{_text(verdict)}</b> '
        + (f'<span class="type">{_text(c["failure_type"])}</span> ' if c.get("failure_type") else "")
        + f"{confidence(c):.2f} — {_text(c.get('text') or '(claim text not kept)')}</div>",
        f'<div class="meta">{where} · {trace}{risk}</div>',
    ]
    if c.get("reason"):
        parts.append(f'<div class="meta">why: {_text(c["reason"])}</div>')
    if chunk:
        label = f" ({_text(source)})" if source else ""
        parts.append(
            f'<div class="chunk"><span class="muted">evidence{label}:</span> '
            f"{highlight(str(chunk), c.get('evidence'))}</div>"
        )
    return "".join(parts) + "</div>"


def _min_detectable(share: float) -> str:
    """The smallest rise the gate catches, or why none can be named (no answers yet: infinite)."""
    return f"{share * 100:+.1f} pts" if math.isfinite(share) else "not computable (no evaluated answers)"


def render_html(report: ReleaseReport, *, trace_url_template: str | None = None) -> str:
    """The whole page: decision, counts table, charts (inline SVG), worst claims."""
    d = report.decision
    reasons = "".join(f"<li>{_text(r)}</li>" for r in d.reasons)
    rows = []
    for name, rc in ((report.baseline, d.baseline), (report.candidate, d.candidate)):
        counts = rc.claims
        rows.append(
            f'<tr><td class="l">{_text(name)}</td><td>{rc.answers}</td><td>{_pct(rc.flagged_share)}</td>'
            f"<td>{counts.judged}</td>"
            f"<td>{_pct(counts.rate('contradicted'))}</td><td>{_pct(counts.rate('unsupported'))}</td>"
            f"<td>{counts.error}</td></tr>"
        )
    rules = {d.baseline.flag_rule, d.candidate.flag_rule} - {"none"}
    flag_rule = (
        "at risk: calibrated answer risk &ge; the judge's threshold"
        if rules == {"at_risk"}
        else "any unsupported or contradicted claim: records without the answer risk"
        if rules
        else "none evaluated"
    )
    c = d.comparison
    t = d.config.test
    comparisons = (
        f'<tr><td class="l">flagged answers</td><td>{c.difference * 100:+.1f} pts</td>'
        f"<td>[{c.lower * 100:+.1f}, {c.upper * 100:+.1f}]</td><td>{_min_detectable(d.power.min_detectable)}</td></tr>"
    )
    corrected = (
        (
            '<h2>Corrected for the judge\'s measured error rates</h2><pre id="corrected">'
            + html.escape("\n".join(line.strip() for line in report.corrected))
            + "</pre>"
        )
        if report.corrected
        else ""
    )
    judge = "".join(f'<p class="judge" id="judge">{_text(line)}</p>' for line in report.judge_lines[:1])
    judge += "".join(f'<p class="judge">{_text(line)}</p>' for line in report.judge_lines[1:])
    judge += "".join(f'<p class="judge left-out">{_text(line)}</p>' for line in report.left_out)
    charts = [rates_spec(report, v) for v in RATES]
    if report.over_time:
        charts.append(over_time_spec(report))
    svgs = "".join(f'<div class="chart">{render_svg(s)}</div>' for s in charts)
    worst = "".join(_claim_html(f, trace_url_template) for f in report.worst) or '<p class="muted">none</p>'
    top = report.type_headline()
    top_html = f'<p class="types" id="top-type">Largest rise by kind of failure: {_text(top)}</p>' if top else ""
    type_rows = "".join(
        f'<tr><td class="l">{_text(c.failure_type)}</td><td class="l">{_text(c.name)}</td>'
        f"<td>{_pct(c.baseline_share)} ({c.baseline[0]})</td><td>{_pct(c.candidate_share)} ({c.candidate[0]})</td>"
        f"<td>{c.difference * 100:+.1f} pts</td></tr>"
        for c in report.type_changes()
    )
    slice_rows = "".join(
        f'<tr><td class="l">{_text(c.where)}</td><td class="l">{_text(c.failure_type)}</td>'
        f"<td>{_pct(c.baseline_share)} ({c.baseline[0]} of {c.baseline[1]})</td>"
        f"<td>{_pct(c.candidate_share)} ({c.candidate[0]} of {c.candidate[1]})</td>"
        f"<td>{c.difference * 100:+.1f} pts</td></tr>"
        for c in report.type_changes_by_slice()[:TOP_SLICE_ROWS]
        if c.difference > 0
    )
    by_slice_table = (
        f'<table id="types-by-slice"><tr><th class="l">slice</th><th class="l">failure type</th>'
        f"<th>baseline</th><th>candidate</th><th>change</th></tr>{slice_rows}</table>"
        if slice_rows
        else ""
    )
    types = (
        f'<table id="types"><tr><th class="l">failure type</th><th class="l">class</th>'
        f"<th>baseline: answers with one (n)</th><th>candidate: answers with one (n)</th><th>change</th></tr>"
        f"{type_rows}</table>"
        if type_rows
        else '<p class="muted">no flagged claim in either release</p>'
    )
    other = _other_tools_html(report)
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(report.generated_at))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>claimwatch release report: {_text(report.candidate)} vs {_text(report.baseline)}</title>
<style>{_CSS}</style></head><body>
<h1>Release report: {_text(report.candidate)} vs {_text(report.baseline)}</h1>
<div class="muted">claimwatch · {when} · {_text(report.label)} label · gate: {_text(t.method)} test, alpha {t.alpha:g},
tolerance {t.max_increase * 100:g} pts of flagged answers, at least {d.config.min_answers} evaluated answers per release</div>
<div class="decision {_text(d.action)}" id="decision"><b>{_text(d.action.upper())}</b><ul>{reasons}</ul></div>
{top_html}{judge}<h2>Answers and claims per release</h2>
<table><tr><th class="l">{_text(report.label)}</th><th>evaluated answers</th><th>flagged answers ({flag_rule})</th>
<th>judged claims</th><th>contradicted</th><th>unsupported</th><th>errors</th></tr>{"".join(rows)}</table>
<table><tr><th class="l">decided on</th><th>candidate − baseline</th><th>bounds ({_text(t.method)})</th>
<th>smallest rise detectable (power {t.power:g})</th></tr>{comparisons}</table>
<h2>What kind of failure</h2>
<p class="muted">Evaluated answers with at least one unsupported or contradicted claim of each class
(contract.failures; one class per flagged claim), baseline vs candidate; then the largest rises per slice
({_text(report.slice_label)} and the derived slices: sources single/multi, reasoning arithmetic/temporal).</p>{types}{by_slice_table}
{corrected}{other}<h2>Rates per {_text(report.slice_label)} and over time</h2><div class="charts">{svgs}</div>
<h2>Worst claims of {_text(report.candidate)}</h2>{worst}
</body></html>
"""


def _other_tools_html(report: ReleaseReport) -> str:
    """The other tools' numbers, baseline vs candidate (empty when no record carried them)."""
    base, cand = (report.other_tools.get(r, OtherToolScores()) for r in (report.baseline, report.candidate))
    if not base.scored and not cand.scored and not base.consistency_checks and not cand.consistency_checks:
        return ""
    rows = "".join(
        f'<tr><td class="l">{_text(name)}</td><td>{_text(b)}</td><td>{_text(c)}</td></tr>'
        for name, b, c in zip(other_tools.ROWS, other_tools.cells(base), other_tools.cells(cand))
    )
    return (
        '<h2>Other tools\' numbers, from the same verdicts</h2><p class="muted">What RagaliQ, DeepEval, FActScore and a '
        "PAS2-style consistency check would report on these answers, computed by the worker from the one judging "
        f"pass (docs/parity.md). They inform; the decision above is on flagged answers. Answers scored: "
        f"{base.scored} and {cand.scored}.</p>"
        f'<table id="other-tools"><tr><th class="l">score</th><th>{_text(report.baseline)}</th>'
        f"<th>{_text(report.candidate)}</th></tr>{rows}</table>"
    )


# -- command ------------------------------------------------------------------------------------


def cmd_report(args: argparse.Namespace) -> int:
    from claimwatch.claims_query import open_results, parse_since, read_results, read_results_file

    results: list[dict[str, Any]]
    skips = ResultSkips()  # what the reader and the report leave out, said on the page and here
    if args.results:  # a results file (claimwatch score output, the demo's --results-out)
        results = list(read_results_file(args.results, skips))
    else:
        since_s = parse_since(args.since) if args.since else None
        consumer, topic = open_results(args.bootstrap, args.topic)
        try:
            results = [
                value
                for value, _ in read_results(
                    consumer, topic, since_s=since_s, from_offset=None, max_records=args.max_records, skips=skips
                )
            ]
        finally:
            consumer.close()
    report = build_report(
        results,
        args.baseline,
        args.candidate,
        label=args.label,
        slice_label=args.slice,
        gate=GateConfig(
            TestConfig(method=args.test, alpha=args.alpha, max_increase=args.max_increase), min_answers=args.min_answers
        ),
        profile=args.profile,
        trust_judge=args.trust_judge,
        skips=skips,
    )
    Path(args.out).write_text(render_html(report, trace_url_template=args.trace_url_template), encoding="utf-8")
    print(f"claimwatch report: {report.decision.action.upper()} -> {args.out}")
    for line in (*report.judge_lines, *report.left_out):
        print(f"  {line}")
    return report.decision.exit_code


def add_cli(sub: Any) -> None:
    import os

    p = sub.add_parser("report", help="write a self-contained HTML release report from the results topic")
    p.add_argument("--baseline", required=True, help="baseline release (value of --label)")
    p.add_argument("--candidate", required=True, help="candidate release")
    p.add_argument("--out", default="claimwatch-release-report.html", help="HTML file to write")
    p.add_argument("--since", default="24h", help="results newer than this (e.g. 30m, 2h, 1d)")
    p.add_argument("--label", default="release", help="slice label that names releases")
    p.add_argument("--slice", default="route", help="slice label the charts break rates down by")
    p.add_argument(
        "--results",
        default=None,
        metavar="FILE",
        help="read result records from this JSONL file instead of the results topic",
    )
    p.add_argument("--bootstrap", help="Kafka bootstrap servers (default: CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    p.add_argument("--topic", help="results topic (default: CLAIMWATCH_RESULTS_TOPIC)")
    p.add_argument("--max-records", type=int, default=200_000, help="read at most this many results")
    p.add_argument(
        "--min-answers", type=int, default=DEFAULT_MIN_ANSWERS, help="evaluated answers per release the gate needs"
    )
    p.add_argument("--test", choices=["sequential", "fixed"], default="sequential", help="the gate's test")
    p.add_argument(
        "--profile",
        default=None,
        metavar="PATH",
        help="a judge profile (claimwatch calibrate LABELS --profile-out): show corrected shares",
    )
    p.add_argument(
        "--trust-judge",
        action="store_true",
        help="without --profile, a rollback on the counts of a judge not fit for one (the records' judge; "
        "docs/gate.md) is held (exit 2); this flag keeps it a rollback",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="false-rollback rate of the gate")
    p.add_argument(
        "--max-increase",
        type=float,
        default=0.02,
        help="tolerated rise of the share of flagged answers (0.02 = 2 points)",
    )
    p.add_argument(
        "--trace-url-template",
        default=os.environ.get("CLAIMWATCH_TRACE_URL_TEMPLATE"),
        help="link each claim to its trace, e.g. http://jaeger:16686/trace/{trace_id}",
    )
    p.set_defaults(func=cmd_report)

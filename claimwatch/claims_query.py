"""``claimwatch claims``: the flagged claims behind a spike, read from the results topic.

Reads ``claimwatch.results`` (every partition, from ``--since`` ago or ``--from-offset``,
at most ``--max-records`` records, up to the end offsets at start), keeps the claims
whose verdict is asked for (CONTRADICTED and UNSUPPORTED by default) in the answers
whose slices match the filters (and, with ``--type``, whose failure type is one asked for), and prints them worst
first: CONTRADICTED before
UNSUPPORTED, then by the judge's confidence. Each line names the answer's trace id,
so it leads to the trace in your trace backend and to the exemplars in Grafana; with
``--trace-url-template`` (or ``CLAIMWATCH_TRACE_URL_TEMPLATE``) each claim also gets the
trace's URL. Examples (``{trace_id}`` and ``{span_id}`` are substituted):

- Jaeger UI:  ``http://jaeger:16686/trace/{trace_id}``
- Grafana Tempo (Explore):  ``http://grafana:3000/explore?left={"queries":[{"datasource":"tempo","query":"{trace_id}"}]}``
- Arize Phoenix:  ``http://phoenix:6006/projects/<project id>/traces/{trace_id}``
- Langfuse:  ``https://cloud.langfuse.com/project/<project id>/traces/{trace_id}``

Each claim also shows its answer's calibrated risk (``answer_risk``, and "AT RISK" when it is at or above
the judge's alert threshold: what the gate counts); ``--at-risk`` keeps only the claims of answers at risk
(records from before the answer risk have none and are left out by it).

``--json`` prints one object per claim; ``--follow`` keeps reading new results.

Records that are no result record (not JSON, nested too deeply, a list for ``slices``, a string
``confidence`` ...: :func:`claimwatch.gate.counts.result_problem`) and duplicates are left out by the
readers here, counted and logged at most once a minute (:class:`claimwatch.gate.counts.ResultSkips`);
the command prints how many on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from kafka import KafkaConsumer, TopicPartition

from claimwatch.gate.counts import ResultSkips, result_problem
from contract.errors import ConfigError
from contract.failures import LABELS as FAILURE_LABELS
from contract.failures import parse_failure_type
from contract.record import record_key
from contract.slices import DEFAULT_SLICE_LABELS
from evaluator_worker.config import WorkerSettings

#: verdicts shown unless --verdict says otherwise, in "worst" order
FLAGGED = ("CONTRADICTED", "UNSUPPORTED")
_SINCE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: empty polls in a row that end a (non --follow) read
IDLE_POLLS = 3


def parse_since(value: str) -> float:
    """``10m``, ``2h``, ``1d`` -> seconds."""
    m = _SINCE.match(value.strip())
    if not m:
        raise ConfigError(f"--since {value!r}: use a number and a unit, e.g. 30s, 10m, 2h, 1d")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


@dataclass
class FlaggedClaim:
    trace_id: str
    slices: dict[str, str]
    claim: dict[str, Any]
    timestamp_ms: int
    #: the answer's calibrated risk and whether it is at risk (None in records from before the answer risk)
    answer_risk: float | None = None
    at_risk: bool | None = None

    @property
    def rank(self) -> tuple[int, float]:
        verdict = self.claim.get("verdict", "")
        order = FLAGGED.index(verdict) if verdict in FLAGGED else len(FLAGGED)
        return order, -confidence(self.claim)

    def to_json(self, trace_url_template: str | None = None) -> dict[str, Any]:
        out = {
            "trace_id": self.trace_id,
            "slices": self.slices,
            "timestamp_ms": self.timestamp_ms,
            "answer_risk": self.answer_risk,
            "at_risk": self.at_risk,
            **self.claim,
        }
        url = trace_url(trace_url_template, self.trace_id)
        if url:
            out["trace_url"] = url
        return out

    def to_text(self, trace_url_template: str | None = None) -> str:
        c = self.claim
        where = "/".join(str(self.slices.get(k) or "?") for k in ("release", "route"))
        kind = f" {c['failure_type']}" if c.get("failure_type") else ""
        lines = [f"[{c.get('verdict')} {confidence(c):.2f}{kind}] [{where}] {c.get('text') or '(claim text not kept)'}"]
        if c.get("evidence"):
            chunk = (
                " ".join(x for x in (_tool(c), c.get("context_source"), c.get("context_id")) if x)
                or f"chunk {c.get('context_index')}"
            )
            lines.append(f"    evidence ({chunk}): {c['evidence']!r}")
        if c.get("reason"):
            lines.append(f"    why: {c['reason']}")
        if self.answer_risk is not None:
            lines.append(
                f"    answer risk {self.answer_risk:.2f}"
                + (" AT RISK" if self.at_risk else " (below the alert threshold)")
            )
        url = trace_url(trace_url_template, self.trace_id)
        lines.append(f"    trace {self.trace_id}" + (f"  {url}" if url else ""))
        return "\n".join(lines)


def _tool(claim: dict[str, Any]) -> str | None:
    """``tool NAME`` when the evidence came from a tool call of an agent turn."""
    tool = claim.get("context_tool")
    return f"tool {tool}" if tool else None


def confidence(claim: dict[str, Any]) -> float:
    """A claim's confidence; 0.0 when it has none (or, in a record no reader checked, not a number)."""
    value = claim.get("confidence")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def trace_url(template: str | None, trace_id: str, span_id: str | None = None) -> str | None:
    """``template`` with ``{trace_id}`` (and ``{span_id}``) filled in; None without a template."""
    if not template:
        return None
    return template.replace("{trace_id}", trace_id).replace("{span_id}", span_id or "")


def matches(result: dict[str, Any], filters: dict[str, str | None]) -> bool:
    slices = result.get("slices") or {}
    return all(value is None or slices.get(key) == value for key, value in filters.items())


def flagged_claims(
    result: dict[str, Any], verdicts: Iterable[str], timestamp_ms: int = 0, types: Iterable[str] | None = None
) -> list[FlaggedClaim]:
    """The claims of ``result`` with one of ``verdicts`` (and, when ``types`` is given, one of those failure types)."""
    wanted = set(verdicts)
    kinds = None if types is None else set(types)
    risk = result.get("answer_risk")
    at_risk = result.get("at_risk")
    return [
        FlaggedClaim(
            str(result.get("trace_id")),
            dict(result.get("slices") or {}),
            claim,
            timestamp_ms,
            float(risk) if isinstance(risk, (int, float)) else None,
            at_risk if isinstance(at_risk, bool) else None,
        )
        for claim in result.get("claims") or []
        if isinstance(claim, dict)
        and claim.get("verdict") in wanted
        and (kinds is None or claim.get("failure_type") in kinds)
    ]


def read_results(
    consumer: Any,
    topic: str,
    *,
    since_s: float | None,
    from_offset: int | None,
    max_records: int,
    follow: bool = False,
    poll_ms: int = 500,
    skips: ResultSkips | None = None,
) -> Iterator[tuple[dict[str, Any], int]]:
    """Decoded result records (and their timestamps) from every partition of ``topic``, each record once.

    Records that are no result record and duplicates are counted in ``skips``; without ``skips``, what was
    left out is printed on stderr when the read ends."""
    parts = consumer.partitions_for_topic(topic)
    if not parts:
        raise ConfigError(f"topic {topic!r} has no partitions (no results yet, or the wrong --topic / bootstrap)")
    tps = [TopicPartition(topic, p) for p in sorted(parts)]
    consumer.assign(tps)
    ends = consumer.end_offsets(tps)
    begins = consumer.beginning_offsets(tps)
    at = 0
    if from_offset is not None:
        for tp in tps:
            consumer.seek(tp, max(begins[tp], from_offset))
    elif since_s is not None:
        at = int((time.time() - since_s) * 1000)
        found = consumer.offsets_for_times({tp: at for tp in tps})
        for tp in tps:
            hit = found.get(tp)
            consumer.seek(tp, hit.offset if hit is not None else ends[tp])
    else:
        consumer.seek_to_beginning(*tps)
    # read until the topic has been quiet for a moment: some Kafka-protocol brokers report end offsets
    # per record batch, so "position >= end offset" is not a reliable stop everywhere
    own = skips is None
    skips = ResultSkips() if skips is None else skips
    first = FirstPerRecord(skips=skips)
    seen, quiet = 0, 0
    try:
        while seen < max_records and (follow or quiet < IDLE_POLLS):
            batch = consumer.poll(timeout_ms=poll_ms)
            if not batch:
                quiet += 1
                continue
            quiet = 0
            for msgs in batch.values():
                for m in msgs:
                    seen += 1
                    ts = int(m.timestamp or 0)
                    if ts < at:
                        continue
                    where = f"{topic}[{m.partition}]@{m.offset}"
                    value, problem = decode_result(m.value)
                    if problem is not None:
                        skips.malformed_record(problem, where)
                    elif first(value, where):
                        yield value, ts
    finally:
        if own:
            report_skips(skips, f"results topic {topic}")


def decode_result(raw: bytes | str | None) -> tuple[Any, str | None]:
    """One result record from its JSON, and None; or None and why it is no result record."""
    if not raw:
        return None, "empty record"
    try:
        value = json.loads(raw)
    except RecursionError:  # absurdly deep nesting: a RecursionError, not a ValueError
        return None, "not JSON (nested too deeply)"
    except ValueError:  # UnicodeDecodeError included
        return None, "not JSON"
    problem = result_problem(value)
    return (None, problem) if problem else (value, None)


def report_skips(skips: ResultSkips, source: str) -> None:
    """What a reader left out, on stderr (nothing when nothing was)."""
    for line in skips.lines():
        print(f"claimwatch: {source}: {line}", file=sys.stderr)


class FirstPerRecord:
    """True for the first result of each record (trace id and call id), False for later copies.

    After a long broker stall the worker's producer can re-send a batch the broker had already
    written, so the results topic may hold byte-identical copies of one result; a replay past the
    worker's dedupe window may hold a second judgement. Readers count each record once.
    """

    def __init__(self, window: int = 1_000_000, skips: ResultSkips | None = None) -> None:
        self.window = window
        #: record key -> a hash of its slices, the last ``window`` keys
        self._seen: OrderedDict[str, int] = OrderedDict()
        self.skips = skips
        self.duplicates = 0

    def __call__(self, result: dict[str, Any], where: str = "") -> bool:
        trace_id = result.get("trace_id")
        if not trace_id:
            return True
        key = record_key(str(trace_id), result.get("call_id"))
        slices = hash(json.dumps(result.get("slices"), sort_keys=True, default=str))
        if key in self._seen:
            self.duplicates += 1
            if self.skips is not None:
                self.skips.duplicate(key, where, conflicting=self._seen[key] != slices)
            return False
        self._seen[key] = slices
        if len(self._seen) > self.window:
            self._seen.popitem(last=False)
        return True


def read_results_file(path: str | Path, skips: ResultSkips | None = None) -> Iterator[dict[str, Any]]:
    """Result records from a JSONL file (``claimwatch score`` output, or the results topic dumped one per line),
    each record once.

    Lines that are no result record and duplicates are counted in ``skips`` (without ``skips``, printed on stderr
    at the end); a file of which no line is a result record is a ``ConfigError``."""
    own = skips is None
    skips = ResultSkips() if skips is None else skips
    first = FirstPerRecord(skips=skips)
    p = Path(path)
    before, kept, empty = skips.skipped, 0, False
    try:
        with p.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                if not raw.strip():
                    continue
                value, problem = decode_result(raw)
                if problem is not None:
                    skips.malformed_record(problem, f"{p}:{lineno}")
                elif first(value, f"{p}:{lineno}"):
                    kept += 1
                    yield value
        empty = not kept and skips.skipped > before
    finally:
        if own and not empty:
            report_skips(skips, f"results file {p}")
    if empty:
        raise ConfigError(f"{p}: no line is a JSON result record ({'; '.join(skips.lines())})")


def open_results(bootstrap: str | None = None, topic: str | None = None) -> tuple[KafkaConsumer, str]:
    """A group-less consumer for the results topic (``CLAIMWATCH_*`` settings unless given) and the topic."""
    settings = WorkerSettings()
    if bootstrap:
        settings.kafka.bootstrap_servers = bootstrap
    topic = topic or settings.results_topic
    if not topic:
        raise ConfigError("no results topic: pass --topic or set CLAIMWATCH_RESULTS_TOPIC")
    return KafkaConsumer(enable_auto_commit=False, group_id=None, **settings.kafka.client_kwargs()), topic


def cmd_claims(args: argparse.Namespace) -> int:
    types = sorted({parse_failure_type(t).value for t in args.type}) if args.type else None
    # a class asked for by name is shown whatever the verdict (a hedge under the lenient policy is SUPPORTED)
    verdicts = [v.upper() for v in (args.verdict or (FLAGGED if types is None else (*FLAGGED, "SUPPORTED")))]
    filters = {name: getattr(args, name) for name in DEFAULT_SLICE_LABELS}
    since_s = None if args.from_offset is not None else parse_since(args.since)
    consumer, topic = open_results(args.bootstrap, args.topic)
    out: list[FlaggedClaim] = []
    skips = ResultSkips()
    try:
        for result, ts in read_results(
            consumer,
            topic,
            since_s=since_s,
            from_offset=args.from_offset,
            max_records=args.max_records,
            follow=args.follow,
            skips=skips,
        ):
            if not matches(result, filters) or (args.at_risk and result.get("at_risk") is not True):
                continue
            found = flagged_claims(result, verdicts, ts, types)
            if args.follow:  # streaming: print as they come
                for f in found:
                    print(_line(f, args), flush=True)
            else:
                out.extend(found)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
        report_skips(skips, f"results topic {topic}")
    if args.follow:
        return 0
    out.sort(key=lambda f: f.rank)
    shown = out[: args.limit] if args.limit else out
    for f in shown:
        print(_line(f, args))
    if not args.json:
        kinds = f"; {', '.join(types)}" if types else ""
        print(f"{len(shown)} of {len(out)} flagged claims ({', '.join(verdicts)}{kinds})", file=sys.stderr)
    return 0


def _line(f: FlaggedClaim, args: argparse.Namespace) -> str:
    t = args.trace_url_template
    return json.dumps(f.to_json(t), ensure_ascii=False) if args.json else f.to_text(t)


def add_cli(sub: Any) -> None:
    c = sub.add_parser("claims", help="the flagged claims behind a spike, from the results topic (worst first)")
    c.add_argument("--bootstrap", help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    c.add_argument("--topic", help="results topic (CLAIMWATCH_RESULTS_TOPIC, default claimwatch.results)")
    c.add_argument("--since", default="1h", help="how far back to read, e.g. 10m, 2h, 1d (default 1h)")
    c.add_argument("--from-offset", type=int, default=None, help="read every partition from this offset instead")
    c.add_argument("--verdict", action="append", help="CONTRADICTED, UNSUPPORTED (repeatable; default both)")
    c.add_argument(
        "--type",
        action="append",
        help="failure type (repeatable): " + ", ".join(FAILURE_LABELS) + "; with --type and no --verdict, SUPPORTED "
        "claims of the type are shown too (hedge_inflation under the lenient hedge policy)",
    )
    for name in DEFAULT_SLICE_LABELS:  # contract.slices
        c.add_argument(f"--{name}", help=f"only answers of this {name}")
    c.add_argument(
        "--at-risk", action="store_true", help="only claims of answers at risk (answer risk >= the judge's threshold)"
    )
    c.add_argument("--limit", type=int, default=50, help="claims shown (0 = all)")
    c.add_argument("--max-records", type=int, default=200_000, help="results read at most")
    c.add_argument("--json", action="store_true", help="one JSON object per claim")
    c.add_argument("--follow", action="store_true", help="keep reading new results (Ctrl-C to stop)")
    c.add_argument(
        "--trace-url-template",
        default=os.environ.get("CLAIMWATCH_TRACE_URL_TEMPLATE"),
        help="print each claim's trace URL, e.g. http://jaeger:16686/trace/{trace_id}",
    )
    c.set_defaults(func=cmd_claims)

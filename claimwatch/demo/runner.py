"""``claimwatch demo``: the whole pipeline on loopback, two releases, an honest accuracy check.

Starts an embedded Kafka-protocol broker, worker(s) with the chosen judge and a
metrics endpoint (assembled by :mod:`evaluator_worker.assembly`, as ``claimwatch worker``
assembles them: the same retry policy, parity, consistency and trace exporter settings), and (when the binary is installed) a real Prometheus loaded
with the project's rules; runs the instrumented demo app as a baseline release
and as a candidate that injects known failures; waits for every answer to be
judged; prints the per-release/per-slice verdict table, the worst contradicted
claims, the release gate's decision and the judge's recall / false-positive
rate against the injected ground truth. Everything it started is stopped on
exit, Ctrl-C included.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from prometheus_client import CollectorRegistry

from claimwatch.claims_query import FlaggedClaim, flagged_claims, matches, open_results, read_results
from claimwatch.demo.app import DemoRagApp, Sent, make_provider
from claimwatch.demo.corpus import ABSTAIN_QUESTION
from claimwatch.demo.faults import EXPECTED_TYPE
from claimwatch.embedded import EmbeddedBroker, EmbeddedPrometheus, free_port
from claimwatch.gate import Counts, GateConfig, ReleaseCounts, decide
from claimwatch.gate.by_type import TypeCounts, changes, headline
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from contract.errors import ConfigError
from contract.logs import configure_logging
from evaluator_worker import assembly
from evaluator_worker.config import WorkerSettings
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.scoring import AnswerResult

BASELINE = "v1.4.0"
CANDIDATE = "v1.5.0-rc1"
MODEL = "demo-llm-2024-06"
RULES_DIR = Path(__file__).resolve().parents[2] / "dashboards" / "rules"


class _Collected:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.results: dict[str, AnswerResult] = {}

    def add(self, result: AnswerResult) -> None:
        with self.lock:
            self.results[result.trace_id] = result

    def __len__(self) -> int:
        return len(self.results)


def _status(line: str, tty: bool) -> None:
    if tty:
        sys.stderr.write("\r" + line.ljust(78))
        sys.stderr.flush()


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def _worker_settings(bootstrap: str) -> WorkerSettings:
    s = WorkerSettings()
    s.kafka.bootstrap_servers = bootstrap
    s.consumer.session_timeout_ms = 6000
    s.consumer.heartbeat_interval_ms = 1000
    s.consumer.max_poll_interval_ms = 30000
    s.consumer.group_id = "claimwatch-demo"
    return s


def _serve_release(
    release: str, bootstrap: str, topic: str, n: int, fault_rate: float, seed: int, progress, warmup=None
) -> list[Sent]:
    provider = make_provider(release)
    settings = CollectorSettings()
    settings.kafka.bootstrap_servers = bootstrap
    settings.topic = topic
    settings.late_span_wait_s = 0.05
    processor = RagTraceProcessor(settings, registry=CollectorRegistry())
    provider.add_span_processor(processor)
    app = DemoRagApp(provider.get_tracer("demo-rag-app"), release, MODEL, fault_rate=fault_rate, seed=seed)
    sent = []
    for i, q in enumerate(app.questions(n)):
        if i % 25 == 24:
            q = ABSTAIN_QUESTION
        sent.append(app.ask(q))
        progress(len(sent))
        if i == 0 and warmup is not None:
            # let Prometheus see the release's series before the bulk arrives (increase() can't count
            # what happened before a series' first scrape)
            processor.force_flush(5_000)
            warmup(sent[0].trace_id)
    processor.force_flush(10_000)
    provider.shutdown()
    return sent


def summarise(sent: list[Sent], results: dict[str, AnswerResult]) -> dict[str, Any]:
    """Per-release/per-route counts, recall and false positives (the worst claims come from the results topic)."""
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    totals: dict[str, dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    caught: defaultdict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # kind -> [caught, injected, typed]
    by_type: dict[str, TypeCounts] = defaultdict(TypeCounts)
    models: dict[str, Counter[str]] = defaultdict(Counter)
    clean_flagged = clean_total = 0
    for s in sent:
        r = results.get(s.trace_id)
        if r is None:
            totals[s.release]["missing"] += 1
            continue
        row = table[s.release][s.route]
        row["answers"] += 1
        totals[s.release]["answers"] += 1
        for verdict, n in r.counts.items():
            row[verdict] += n
            totals[s.release][verdict] += n
        if r.outcome == "abstained":
            row["abstained"] += 1
            totals[s.release]["abstained"] += 1
        if r.outcome == "evaluated":  # what the gate counts (claimwatch_answers_total{outcome="evaluated"})
            totals[s.release]["evaluated"] += 1
            totals[s.release]["contradicted_answers"] += int(r.has_contradicted)
            totals[s.release]["at_risk_answers"] += int(bool(r.at_risk))  # what the gate counts as flagged
            models[s.release][r.slices.get("model") or "unknown"] += 1  # evaluated answers per model slice
        flagged = r.has_unsupported
        if flagged:
            row["flagged_answers"] += 1
            totals[s.release]["flagged_answers"] += 1
        by_type[s.release].add_result(r.model_dump(mode="json"))
        if s.fault:
            expected = EXPECTED_TYPE[s.fault].value
            typed = any(c.failure_type == expected for c in r.claims)
            caught[s.fault][1] += 1
            # a hedge kept SUPPORTED by the lenient hedge policy is caught when it is typed: counted, not flagged
            caught[s.fault][0] += int(flagged or (typed and expected == "hedge_inflation"))
            caught[s.fault][2] += int(typed)
        elif r.outcome != "abstained":
            clean_total += 1
            clean_flagged += int(flagged)
    injected = sum(v[1] for v in caught.values())
    for rel in totals.values():
        judged = rel["SUPPORTED"] + rel["UNSUPPORTED"] + rel["CONTRADICTED"]
        rel["faithfulness"] = round(rel["SUPPORTED"] / judged, 4) if judged else None
    return {
        "releases": {
            rel: {"totals": dict(totals[rel]), "routes": {k: dict(v) for k, v in routes.items()}}
            for rel, routes in table.items()
        },
        "worst_contradicted": [],
        "accuracy": {
            "injected_failures": injected,
            "caught": sum(v[0] for v in caught.values()),
            "recall": round(sum(v[0] for v in caught.values()) / injected, 4) if injected else None,
            "recall_by_kind": {
                k: {
                    "caught": v[0],
                    "injected": v[1],
                    "recall": round(v[0] / v[1], 4) if v[1] else None,
                    "type": EXPECTED_TYPE[k].value,
                    "typed": v[2],
                    "type_recall": round(v[2] / v[1], 4) if v[1] else None,
                }
                for k, v in sorted(caught.items())
            },
            "clean_answers": clean_total,
            "clean_flagged": clean_flagged,
            "false_positive_rate": round(clean_flagged / clean_total, 4) if clean_total else None,
        },
        "types": [
            {
                "failure_type": c.failure_type,
                "baseline": c.baseline[0],
                "candidate": c.candidate[0],
                "baseline_share": round(c.baseline_share, 4),
                "candidate_share": round(c.candidate_share, 4),
            }
            for c in changes(by_type[BASELINE], by_type[CANDIDATE])
        ],
        "top_type": headline(changes(by_type[BASELINE], by_type[CANDIDATE])),
        "types_by_release": {rel: sorted(counts.flagged.items()) for rel, counts in by_type.items()},
        "models_by_release": {rel: sorted((m, n) for m, n in c.items() if m != "unknown") for rel, c in models.items()},
    }


def _counts(summary: dict[str, Any], release: str, judge: str = "") -> ReleaseCounts:
    """What the worker counted for ``release`` (the numbers the gate must read back from Prometheus)."""
    t = summary["releases"].get(release, {}).get("totals", {})
    claims = Counts(
        supported=t.get("SUPPORTED", 0),
        unsupported=t.get("UNSUPPORTED", 0),
        contradicted=t.get("CONTRADICTED", 0),
        error=t.get("ERROR", 0),
    )
    return ReleaseCounts(
        answers=t.get("evaluated", 0),
        flagged=t.get("at_risk_answers", 0),
        contradicted=t.get("contradicted_answers", 0),
        claims=claims,
        judges=(judge,) if judge else (),
        flagged_any_claim=t.get("flagged_answers", 0),
        flag_rules=("at_risk",) if t.get("evaluated", 0) else (),
        failure_types=tuple(tuple(x) for x in summary.get("types_by_release", {}).get(release, [])),
        models=tuple(tuple(x) for x in summary.get("models_by_release", {}).get(release, [])),
    )


def render(summary: dict[str, Any]) -> str:
    out = []
    out.append("Claim verdicts per release and route")
    out.append(
        f"  {'release':12} {'route':10} {'answers':>7} {'SUPP':>5} {'UNSUP':>5} {'CONTR':>5} {'ERR':>4} {'faithful':>8} {'flagged':>7}"
    )
    for rel, data in summary["releases"].items():
        for route, row in sorted(data["routes"].items()):
            judged = row.get("SUPPORTED", 0) + row.get("UNSUPPORTED", 0) + row.get("CONTRADICTED", 0)
            f = f"{row.get('SUPPORTED', 0) / judged:.2f}" if judged else "n/a"
            out.append(
                f"  {rel:12} {route:10} {row.get('answers', 0):7} {row.get('SUPPORTED', 0):5} {row.get('UNSUPPORTED', 0):5} "
                f"{row.get('CONTRADICTED', 0):5} {row.get('ERROR', 0):4} {f:>8} {row.get('flagged_answers', 0):7}"
            )
        t = data["totals"]
        f = "n/a" if t.get("faithfulness") is None else f"{t['faithfulness']:.2f}"
        out.append(
            f"  {rel:12} {'ALL':10} {t.get('answers', 0):7} {t.get('SUPPORTED', 0):5} {t.get('UNSUPPORTED', 0):5} "
            f"{t.get('CONTRADICTED', 0):5} {t.get('ERROR', 0):4} {f:>8} {t.get('flagged_answers', 0):7}"
        )
    out.append("")
    out.append(f"Worst contradicted claims (claimwatch claims --release {CANDIDATE} --verdict CONTRADICTED)")
    for w in summary["worst_contradicted"][:5]:
        out.extend("  " + line for line in w["text"].splitlines())
    if not summary["worst_contradicted"]:
        out.append("  none")
    out.append("")
    out.append(f"What kind of failure: answers with a claim of each class ({BASELINE} -> {CANDIDATE})")
    for t in summary["types"]:
        out.append(
            f"  {t['failure_type']:22} {t['baseline_share']:6.1%} -> {t['candidate_share']:6.1%}"
            f"  ({t['baseline']} -> {t['candidate']} answers)"
        )
    out.append(f"  largest rise: {summary['top_type'] or 'none'}")
    a = summary["accuracy"]
    out.append("")
    out.append("Judge vs injected ground truth")
    out.append(
        f"  recall: caught {a['caught']}/{a['injected_failures']} injected failures ({(a['recall'] or 0):.0%}; a hedge "
        "inflation counts as caught when typed: the lenient hedge policy keeps it SUPPORTED)"
    )
    out.append(f"    {'injected kind':20} {'flagged':>12}  {'typed as':22} {'typed':>12}")
    for kind, v in a["recall_by_kind"].items():
        out.append(
            f"    {kind:20} {v['caught']:3}/{v['injected']:<3} {(v['recall'] or 0):4.0%}  {v['type']:22} "
            f"{v['typed']:3}/{v['injected']:<3} {(v['type_recall'] or 0):.0%}"
        )
    out.append(
        f"  false positives: {a['clean_flagged']}/{a['clean_answers']} clean answers flagged ({(a['false_positive_rate'] or 0):.0%})"
    )
    out.append(
        "  (the demo's answers are synthetic: templates with injected failures. On real LLM answers with human "
        "labels the offline judges barely beat answer length: docs/judge-quality.md)"
    )
    g = summary["gate"]
    out.append("")
    out.append(f"Release gate ({g['source']}): {g['decision'].upper()}  {g['baseline']} -> {g['candidate']}")
    for role in ("baseline", "candidate"):
        c, w = g[f"{role}_counts"], g[f"worker_{role}_counts"]
        same = "equal to the worker's" if c == w else f"worker counted {w['answers']} answers / {w['flagged']} flagged"
        out.append(
            f"  gate counts {role}: {c['answers']} answers, {c['flagged']} flagged, "
            f"{c['claims']['supported'] + c['claims']['unsupported'] + c['claims']['contradicted']} judged claims"
            f" ({same})"
        )
    for line in g["reasoning"]:
        out.append(f"  {line}")
    for line in g.get("judge_lines", []):
        out.append(f"  {line}")
    return "\n".join(out)


@dataclass
class DemoEnv:
    """What is still running when the demo has judged everything (for ``on_finished`` checks)."""

    bootstrap: str
    results_topic: str
    prometheus_url: str | None
    summary: dict[str, Any]
    sent: list[Sent]


def read_topic_results(bootstrap: str, topic: str, max_records: int) -> list[dict[str, Any]]:
    """Every result record on the results topic: what ``claimwatch claims`` and ``claimwatch report`` read."""
    consumer, _ = open_results(bootstrap, topic)
    try:
        return [
            value for value, _ in read_results(consumer, topic, since_s=None, from_offset=None, max_records=max_records)
        ]
    finally:
        consumer.close()


def worst_from_topic(results: list[dict[str, Any]], release: str, n: int = 5) -> list[FlaggedClaim]:
    """The candidate's worst CONTRADICTED claims, as ``claimwatch claims --release R --verdict CONTRADICTED`` ranks them."""
    flagged = [
        f
        for r in results
        if matches(r, {"release": release})
        for f in flagged_claims(r, ["CONTRADICTED"], int(float(r.get("evaluated_at") or 0) * 1000))
    ]
    flagged.sort(key=lambda f: f.rank)
    out: list[FlaggedClaim] = []
    seen: set[str] = set()
    for f in flagged:
        text = str(f.claim.get("text"))
        if text not in seen:
            seen.add(text)
            out.append(f)
    return out[:n]


def write_report(results: list[dict[str, Any]], path: str, min_answers: int) -> str | None:
    """The HTML release report of the demo's two releases; None (and a note) when vl-convert is missing."""
    from claimwatch.report import build_report, render_html

    try:
        # the demo's answers are synthetic: its judge is trusted on them (the page still says it is not fit on real ones)
        report = build_report(results, BASELINE, CANDIDATE, gate=GateConfig(min_answers=min_answers), trust_judge=True)
        page = render_html(report)
    except ConfigError as exc:
        print(f"claimwatch demo: no HTML report ({exc})", file=sys.stderr)
        return None
    Path(path).write_text(page, encoding="utf-8")
    return path


def run_demo(args: argparse.Namespace, on_finished: Callable[[DemoEnv], None] | None = None) -> int:
    """The demo; ``on_finished`` runs while broker and Prometheus are still up (tests cross-check them)."""
    configure_logging("WARNING")
    tty = sys.stderr.isatty()
    started = time.monotonic()
    judge_name = args.judge or "heuristic"
    collected = _Collected()
    with contextlib.ExitStack() as stack:
        broker = stack.enter_context(EmbeddedBroker())
        topic = "claimwatch.traces"
        _create_topic(broker.bootstrap, topic, partitions=max(2, args.workers))
        settings = _worker_settings(broker.bootstrap)
        settings.judge = judge_name
        settings.metrics_host, settings.metrics_port = "127.0.0.1", free_port()
        port = settings.metrics_port
        metrics = assembly.build_metrics(settings)
        server = assembly.serve_metrics(settings, metrics)
        stack.callback(server.shutdown)
        prom = None
        if not args.no_prometheus and EmbeddedPrometheus.available():
            rules = sorted(str(p) for p in RULES_DIR.glob("*.yml")) if RULES_DIR.is_dir() else []
            prom = stack.enter_context(EmbeddedPrometheus([f"127.0.0.1:{port}"], rule_files=rules))
        judge = get_judge(judge_name, settings)  # one instance shared by the workers
        exporter = assembly.build_exporter()
        if exporter is not None:
            stack.callback(exporter.shutdown)
        workers = []
        for _ in range(max(1, args.workers)):
            w = assembly.build_worker(settings, judge=judge, metrics=metrics, exporter=exporter)
            w.on_result = collected.add
            th = threading.Thread(target=w.run, name="claimwatch-worker", daemon=True)
            th.start()
            workers.append((w, th))

        def _stop_workers() -> None:
            for w, _ in workers:
                w.stop()
            for _, th in workers:
                th.join(15)

        stack.callback(_stop_workers)
        print(
            f"claimwatch demo: broker {broker.bootstrap}, metrics http://127.0.0.1:{port}/metrics"
            + (f", prometheus {prom.url}" if prom else ", prometheus not started"),
            file=sys.stderr,
        )
        sent: list[Sent] = []
        for release, rate in ((BASELINE, 0.0), (CANDIDATE, args.fault_rate)):
            base = len(sent)
            sent += _serve_release(
                release,
                broker.bootstrap,
                topic,
                args.requests,
                rate,
                args.seed,
                lambda k, release=release, base=base: _status(
                    f"serving {release}: {k}/{args.requests} requests, judged {len(collected)}/{base + k}", tty
                ),
                warmup=(lambda tid: _await_scrape(collected, tid)) if prom else None,
            )
        deadline = time.monotonic() + max(60.0, len(sent) * 0.2)
        while len(collected) < len(sent) and time.monotonic() < deadline:
            if not any(th.is_alive() for _, th in workers):
                print("claimwatch demo: every worker stopped (see the error above)", file=sys.stderr)
                return 1
            _status(f"judging: {len(collected)}/{len(sent)} answers", tty)
            time.sleep(0.2)
        _status(f"judged {len(collected)}/{len(sent)} answers", tty)
        if tty:
            sys.stderr.write("\n")
        summary = summarise(sent, dict(collected.results))
        summary["gate"] = _gate(summary, prom, args.gate_min_answers, judge.name)
        summary["judge"] = judge_name
        summary["requests_per_release"] = args.requests
        summary["fault_rate"] = args.fault_rate
        summary["answers_sent"] = len(sent)
        summary["answers_judged"] = len(collected)
        summary["prometheus"] = prom.url if prom else None
        results_topic = settings.results_topic or "claimwatch.results"
        topic_results = read_topic_results(broker.bootstrap, results_topic, max_records=4 * len(sent) + 100)
        summary["results_read"] = len(topic_results)
        summary["worst_contradicted"] = [
            {
                **f.to_json(),
                "injected": next((x.fault for x in sent if x.trace_id == f.trace_id), None),
                "text": f.to_text(),
            }
            for f in worst_from_topic(topic_results, CANDIDATE, 8)
        ]
        report = getattr(args, "report", None)
        summary["report"] = write_report(topic_results, report, args.gate_min_answers) if report else None
        results_out = getattr(args, "results_out", None)
        if results_out:  # the broker lives in memory and ends with the demo: keep its results for label/report
            Path(results_out).write_text(
                "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in topic_results), encoding="utf-8"
            )
        summary["results_file"] = results_out or None
        summary["elapsed_s"] = round(time.monotonic() - started, 1)
        print(render(summary))
        if summary["report"]:
            print(f"\nRelease report (HTML, offline): {summary['report']}")
        if summary["results_file"]:
            print(
                f"Results ({len(topic_results)} records; label your judge on them: claimwatch label --results "
                f"{summary['results_file']} --out labels.jsonl): {summary['results_file']}"
            )
        print(f"\n{len(collected)}/{len(sent)} answers judged in {summary['elapsed_s']} s", file=sys.stderr)
        if args.summary_json:
            Path(args.summary_json).write_text(json.dumps(summary, indent=2, ensure_ascii=False))
        complete = len(collected) == len(sent)
        if on_finished is not None:
            on_finished(DemoEnv(broker.bootstrap, results_topic, prom.url if prom else None, summary, sent))
    return 0 if complete else 1


def _await_scrape(collected: _Collected, trace_id: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while trace_id not in collected.results and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.5)  # > one scrape interval


def _gate(
    summary: dict[str, Any], prom: EmbeddedPrometheus | None, min_answers: int = 50, judge: str = ""
) -> dict[str, Any]:
    from claimwatch.gate.judge_fitness import judges_of, line, not_fit

    source = "worker counts"
    worker_base, worker_cand = _counts(summary, BASELINE, judge), _counts(summary, CANDIDATE, judge)
    base, cand = worker_base, worker_cand
    if prom is not None:
        from claimwatch.gate import Source, fetch_counts

        time.sleep(2.5)  # let Prometheus scrape the final counters
        try:
            base = fetch_counts(Source(prom.url), BASELINE, window="1h")
            cand = fetch_counts(Source(prom.url), CANDIDATE, window="1h")
            source = "Prometheus"
        except Exception as exc:  # fall back to the worker's own counts, and say so
            source = f"worker counts (Prometheus query failed: {exc})"
    d = decide(base, cand, GateConfig(min_answers=min_answers), labels={"baseline": BASELINE, "candidate": CANDIDATE})
    # what `claimwatch gate` says of the judge behind the counts (claimwatch_judge_info); the demo decides on its
    # counts anyway (`--trust-judge`): its answers are synthetic, where the judge is checked against the injected faults
    judge_lines = [line(f, " on real traffic") for f in not_fit(judges_of(d))]
    if judge_lines:
        judge_lines.append(
            "the demo decides on these counts anyway (claimwatch gate --trust-judge): its answers are synthetic, "
            "and the judge was checked on them above"
        )

    def _counted(c: ReleaseCounts) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(c).items() if k not in ("judges", "per_judge")}

    return {
        "source": source,
        "baseline": BASELINE,
        "candidate": CANDIDATE,
        "decision": d.action,
        "exit_code": d.exit_code,
        "reasoning": d.render().splitlines()[1:],
        "judges": list(judges_of(d)),
        "judge_lines": judge_lines,
        "baseline_counts": _counted(base),
        "candidate_counts": _counted(cand),
        "worker_baseline_counts": _counted(worker_base),
        "worker_candidate_counts": _counted(worker_cand),
    }

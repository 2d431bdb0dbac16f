"""``claimwatch`` command line: worker, score, verify, calibrate, gate, demo.

Settings come from ``CLAIMWATCH_*`` environment variables (see
``evaluator_worker.config``); flags override the most common ones.

Exit codes: 0 ok; 1 failure (gate: rollback; an unexpected error); 2 usage, input or
configuration error (gate: hold); 130 interrupted. Every error is one line on stderr
(``claimwatch: error: ...`` naming the file, line and field, or the setting to fix);
``--debug`` (or ``CLAIMWATCH_LOG_LEVEL=DEBUG``) shows the traceback instead.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Sequence

from contract.errors import ClaimwatchError, ConfigError
from contract.logs import configure_logging, get_logger
from evaluator_worker.config import WorkerSettings

log = get_logger("claimwatch")


def _settings(args: argparse.Namespace) -> WorkerSettings:
    s = WorkerSettings()
    if getattr(args, "bootstrap", None):
        s.kafka.bootstrap_servers = args.bootstrap
    if getattr(args, "topic", None):
        s.topic = args.topic
    if getattr(args, "group", None):
        s.consumer.group_id = args.group
    if getattr(args, "judge", None):
        s.judge = args.judge
    if getattr(args, "metrics_port", None) is not None:
        s.metrics_port = args.metrics_port
    return s


def _metrics(settings: WorkerSettings):
    from evaluator_worker.metrics import SliceGuard, WorkerMetrics

    guard = SliceGuard(settings.slice_labels, settings.slice_values or None, settings.max_values_per_label)
    return WorkerMetrics(guard=guard)


def build_evaluator(settings: WorkerSettings, metrics=None):
    """The Evaluator every command uses: judge, parity settings, consistency tracker."""
    from evaluator_worker.consistency import ConsistencyTracker
    from evaluator_worker.judges.registry import get_judge
    from evaluator_worker.pipeline import Evaluator

    judge = get_judge(settings.judge, settings)
    tracker = None
    p = settings.parity
    if p.consistency:
        cjudge = judge if p.consistency_judge == settings.judge else get_judge(p.consistency_judge, settings)
        tracker = ConsistencyTracker(
            cjudge, threshold=p.consistency_threshold, window=p.consistency_window, sample=p.consistency_sample
        )
    from evaluator_worker.flow import RetryPolicy

    f = settings.flow
    retry = RetryPolicy(base_s=f.retry_base_s, max_s=f.retry_max_s, deadline_s=f.retry_deadline_s)
    return Evaluator(judge, metrics, retry=retry, include_text=settings.results_include_text, parity=p,
                     consistency=tracker)


def cmd_worker(args: argparse.Namespace) -> int:
    from prometheus_client import start_http_server

    from evaluator_worker.consumer import Worker

    settings = _settings(args)
    metrics = _metrics(settings)
    evaluator = build_evaluator(settings, metrics)
    judge = evaluator.judge
    server = None
    if settings.metrics_port >= 0:
        server, _thread = start_http_server(settings.metrics_port, addr=settings.metrics_host, registry=metrics.registry)
    from evaluator_worker.trace_export import EvaluationExporter

    exporter = EvaluationExporter.from_settings()
    worker = Worker(settings, evaluator, exporter=exporter if exporter.enabled else None)

    def _stop(signum, _frame):
        log.info("worker_signal", signal=signum)
        worker.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info("worker_starting", topic=settings.topic, group=settings.consumer.group_id, judge=judge.name,
             bootstrap=settings.kafka.bootstrap_servers, metrics_port=settings.metrics_port,
             max_in_flight=settings.flow.max_in_flight, io_bound=evaluator.io_bound)
    try:
        n = worker.run(max_records=args.max_records, idle_timeout_s=args.idle_timeout)
    finally:
        if server is not None:
            server.shutdown()
        exporter.shutdown()
    log.info("worker_stopped", processed=n)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from claimwatch.batch import score_file

    settings = _settings(args)
    evaluator = build_evaluator(settings, _metrics(settings))
    out = sys.stdout if args.output in (None, "-") else args.output
    stats = score_file(evaluator, args.input, out)
    print(f"scored {stats.written} answers, skipped {stats.skipped} bad lines", file=sys.stderr)
    if not stats.read:
        raise ConfigError(f"{args.input}: no records in the file (one RagTrace JSON object per line)")
    return 1 if not stats.written else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from claimwatch.batch import verify_file
    from evaluator_worker.judges.registry import get_judge

    settings = _settings(args)
    judge = get_judge(settings.judge, settings)
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")
    try:
        stats = verify_file(judge, args.input, out)
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"verified {stats.written} claims, skipped {stats.skipped} bad lines", file=sys.stderr)
    if not stats.read:
        raise ConfigError(f"{args.input}: no records in the file (one {{\"claim\", \"context\"}} JSON object per line)")
    return 1 if not stats.written else 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from claimwatch import calibration
    from claimwatch.progress import Progress
    from evaluator_worker.judges.registry import get_judge

    settings = _settings(args)
    if args.fit_confidence:
        if args.halueval or args.answers or not args.input:
            raise ConfigError("calibrate --fit-confidence fits on labeled claims: give a claims file, not --answers/--halueval")
        settings = settings.model_copy(update={"confidence_calibration": "none"})  # fit on the raw confidences
    judge = get_judge(settings.judge, settings)
    report: calibration.AnswerReport | calibration.ClaimReport
    if args.halueval or args.answers:
        if args.halueval:
            from claimwatch import halueval

            answers = halueval.load_pairs(args.halueval, limit=args.limit)
        elif not args.input:
            raise ConfigError("calibrate --answers needs a labeled answers file")
        else:
            answers = calibration.load_labeled_answers(args.input)
        with Progress(len(answers), "calibrating") as bar:
            report = calibration.calibrate_answers(judge, answers, progress=lambda *_: bar.advance())
    else:
        if not args.input:
            raise ConfigError("calibrate needs a labeled claims file (or --answers FILE, or --halueval SPLIT)")
        claims = calibration.load_labeled_claims(args.input)
        if not claims:
            raise ConfigError(f"{args.input}: no labeled claims in the file")
        if args.limit:
            claims = claims[: args.limit]
        with Progress(len(claims), "calibrating") as bar:
            report = calibration.calibrate_claims(judge, claims, progress=lambda *_: bar.advance())
        if args.plot:
            from claimwatch.confidence import write_reliability_png

            write_reliability_png(report.scored, args.plot, f"{judge.name}: {Path(args.input).name}")
        if args.fit_confidence:
            from claimwatch.confidence import fit_map

            cmap = fit_map(report.scored, judge.name, fitted_on=Path(args.input).name)
            Path(args.fit_confidence).write_text(json.dumps(cmap) + "\n", encoding="utf-8")
            print(f"confidence map for {judge.name} written to {args.fit_confidence}: ECE {cmap['ece_raw']:.3f} raw -> "
                  f"{cmap['ece_fitted']:.3f} fitted (in sample), {cmap['ece_cross_validated']} cross-validated",
                  file=sys.stderr)
    if args.json:
        print(json.dumps(report.to_json(), indent=None if args.compact else 2, ensure_ascii=False))
    else:
        print(report.to_text())
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from claimwatch.gate import run_gate

    code, text = run_gate(
        args.prometheus,
        baseline=args.baseline,
        candidate=args.candidate,
        window=args.window,
        label=args.label,
        extra_selector=args.selector,
        min_claims=args.min_claims,
        alpha=args.alpha,
        max_increase=args.max_increase,
    )
    print(text)
    return code


def cmd_probe(args: argparse.Namespace) -> int:
    from evaluator_worker.consistency import ActiveProbe, http_asker
    from evaluator_worker.judges.registry import get_judge

    settings = _settings(args)
    judge = get_judge(settings.judge, settings)
    probe = ActiveProbe(http_asker(args.endpoint, timeout=args.timeout), judge)
    questions = [args.question] if args.question else [
        json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()
    ]
    worst = 0
    for q in questions:
        r = probe.probe(q)
        print(json.dumps({"question": q, **r.model_dump()}, ensure_ascii=False))
        worst = max(worst, {"inconsistent": 1, "not_detected": 2}.get(r.status, 0))
    return worst


def cmd_demo(args: argparse.Namespace) -> int:
    from claimwatch.demo import run_demo

    return run_demo(args)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="claimwatch", description="Claim-level faithfulness monitoring for RAG.")
    p.add_argument("--log-level", default=None, help="DEBUG, INFO, WARNING (default: CLAIMWATCH_LOG_LEVEL or INFO)")
    p.add_argument("--debug", action="store_true", help="debug logs, and a traceback instead of a one-line error")
    sub = p.add_subparsers(dest="command", required=True)

    def judge_flag(sp):
        sp.add_argument("--judge", default=None, help="heuristic (default), anthropic, nli, cascade, or module:factory")

    w = sub.add_parser("worker", help="consume RagTrace records from Kafka, judge them, export metrics")
    w.add_argument("--bootstrap", help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    w.add_argument("--topic")
    w.add_argument("--group")
    judge_flag(w)
    w.add_argument("--metrics-port", type=int, default=None, help="Prometheus port (CLAIMWATCH_METRICS_PORT, default 9464; -1 off)")
    w.add_argument("--max-records", type=int, default=None, help=argparse.SUPPRESS)
    w.add_argument("--idle-timeout", type=float, default=None, help="exit after this many idle seconds")
    w.set_defaults(func=cmd_worker)

    s = sub.add_parser("score", help="score RagTrace JSONL offline (same code path as the worker)")
    s.add_argument("input", help="JSONL: question, answer, contexts (strings or objects), optional slices; - for stdin")
    s.add_argument("--output", "-o", default=None, help="results JSONL (default stdout)")
    judge_flag(s)
    s.set_defaults(func=cmd_score)

    v = sub.add_parser("verify", help="claim-level verification: {claim, context} JSONL in, + verdict/evidence out")
    v.add_argument("input")
    v.add_argument("--output", "-o", default=None)
    judge_flag(v)
    v.set_defaults(func=cmd_verify)

    c = sub.add_parser("calibrate", help="measure a judge against labeled claims (or answers)")
    c.add_argument("input", nargs="?", help="labeled claims JSONL")
    judge_flag(c)
    c.add_argument("--json", action="store_true", help="print one JSON object")
    c.add_argument("--compact", action="store_true", help=argparse.SUPPRESS)
    c.add_argument("--answers", action="store_true", help="input is labeled answers (faithful/hallucinated)")
    c.add_argument("--halueval", choices=["dialogue", "summarization", "qa"], help="HaluEval split (length-matched pairs)")
    c.add_argument("--limit", type=int, default=None)
    c.add_argument("--plot", default=None, help="write the reliability diagram (confidence vs accuracy) as a PNG")
    c.add_argument("--fit-confidence", default=None, metavar="PATH",
                   help="fit a confidence map (isotonic) on the judge's raw confidences and write it to PATH "
                        "(use it with CLAIMWATCH_CONFIDENCE_CALIBRATION=PATH)")
    c.set_defaults(func=cmd_calibrate)

    g = sub.add_parser("gate", help="release gate: promote (0) / rollback (1) / hold (2) from Prometheus")
    g.add_argument("--prometheus", required=True, help="Prometheus base URL")
    g.add_argument("--baseline", required=True)
    g.add_argument("--candidate", required=True)
    g.add_argument("--window", default="1h")
    g.add_argument("--min-claims", type=int, default=200, help="judged claims each release needs before a decision")
    g.add_argument("--alpha", type=float, default=0.05, help="one-sided significance level")
    g.add_argument("--max-increase", type=float, default=0.02, help="tolerated rise of the contradicted/unsupported rate")
    g.add_argument("--label", default="release", help="label that names releases")
    g.add_argument("--selector", default="", help='extra matchers, e.g. environment="prod"')
    g.set_defaults(func=cmd_gate)

    pr = sub.add_parser("probe", help="active consistency probe: ask paraphrases of questions, judge the answers")
    pr.add_argument("--endpoint", required=True, help='your RAG app: POST {"question"} -> {"answer"}')
    grp = pr.add_mutually_exclusive_group(required=True)
    grp.add_argument("--question")
    grp.add_argument("--questions", help='JSONL with {"question": ...} lines')
    pr.add_argument("--timeout", type=float, default=30.0)
    judge_flag(pr)
    pr.set_defaults(func=cmd_probe)

    from claimwatch.audit import add_cli as add_audit
    from claimwatch.claims_query import add_cli as add_claims
    from claimwatch.report import add_cli as add_report
    from claimwatch.soak import add_cli as add_soak
    from collector.otlp_bridge import add_cli as add_bridge
    from collector.receiver import add_cli as add_receiver  # noqa: E402 (subcommands owned by their modules)

    add_receiver(sub)
    add_bridge(sub)
    add_soak(sub)
    add_claims(sub)
    add_report(sub)
    add_audit(sub)

    d = sub.add_parser("demo", help="run the whole pipeline on loopback with a demo RAG app and two releases")
    judge_flag(d)
    d.add_argument("--summary-json", default=None, help="write the summary here")
    d.add_argument("--requests", type=int, default=240, help="requests per release")
    d.add_argument("--fault-rate", type=float, default=0.3, help="share of candidate answers with an injected failure")
    d.add_argument("--no-prometheus", action="store_true", help="don't start Prometheus even if installed")
    d.add_argument("--workers", type=int, default=1)
    d.add_argument("--seed", type=int, default=7)
    d.add_argument("--gate-min-claims", type=int, default=100, help="judged claims per release the gate needs")
    d.add_argument("--report", default="claimwatch-demo-report.html",
                   help="write the HTML release report here ('' to skip)")
    d.set_defaults(func=cmd_demo)
    return p


def explain(exc: BaseException) -> tuple[str, int]:
    """One line and an exit code for an error a command ended with (see the module docstring)."""
    import urllib.error

    from claimwatch.calibration import DataError

    if isinstance(exc, (ClaimwatchError, DataError)):
        return str(exc), 2
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, PermissionError, NotADirectoryError)):
        return f"{exc.strerror or type(exc).__name__}: {exc.filename}", 2
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text ({exc.reason} at byte {exc.start})", 2
    if isinstance(exc, json.JSONDecodeError):
        return f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", 2
    if isinstance(exc, urllib.error.URLError):
        return f"cannot reach {getattr(exc, 'url', None) or 'the server'}: {exc.reason}", 1
    from kafka.errors import KafkaError

    if isinstance(exc, KafkaError) and ("bootstrap" in str(exc).lower() or type(exc).__name__ == "NoBrokersAvailable"):
        return (f"no Kafka broker answered ({exc}): set CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS or pass --bootstrap, "
                "and check the listeners and TLS/SASL settings"), 1
    if isinstance(exc, KafkaError):
        return f"Kafka: {type(exc).__name__}: {exc}", 1
    return f"{type(exc).__name__}: {exc} (run with --debug for the traceback)", 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = "DEBUG" if args.debug else (args.log_level or WorkerSettings().log_level)
    configure_logging(level)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if args.debug or str(level).upper() == "DEBUG":
            raise
        message, code = explain(exc)
        print(f"claimwatch: error: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

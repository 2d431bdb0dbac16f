"""``claimwatch`` command line: worker, score, verify, calibrate (files, HaluEval, the real labelled sets), gate, demo, and the subcommands their modules register (receiver, bridge, soak, claims, report, audit, selfcheck, label).

Settings come from ``CLAIMWATCH_*`` environment variables (see
``evaluator_worker.config``); flags override the most common ones.

Exit codes: 0 ok; 1 failure (an unexpected error); 2 usage, input or configuration error; 130
interrupted. ``gate`` and ``report`` exit with their decision: 0 promote, 1 rollback, 2 hold, and
**every** error there exits 2 (hold), never 1: a crash must not read as a rollback (nor as a
promote). Every error is one line on stderr (``claimwatch: error: ...`` naming the file, line and
field, or the setting to fix); ``--debug`` (or ``CLAIMWATCH_LOG_LEVEL=DEBUG``) shows the traceback
instead (and ``gate``/``report`` still exit 2).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from contract.errors import ClaimwatchError, ConfigError
from contract.logs import configure_logging, get_logger
from evaluator_worker.config import NO_JUDGE_CHOSEN, WorkerSettings
from evaluator_worker.judges.base import preflight

if TYPE_CHECKING:
    from claimwatch.gate import GateConfig

log = get_logger(__name__)

#: commands whose exit code is a release decision (0 promote, 1 rollback, 2 hold): an error there holds
DECISION_COMMANDS = ("gate", "report")
EXIT_HOLD = 2


def _finite_float(text: str) -> float:
    """argparse type: a finite number (``nan``/``inf`` are not a test parameter)."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, not {text!r}")
    return value


def _duration(text: str, *, positive: bool) -> str:
    from claimwatch.gate.promql import GateError, duration_seconds

    try:
        seconds = duration_seconds(text)
    except GateError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if positive and seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be longer than 0, not {text!r}")
    return text


def _positive_duration(text: str) -> str:
    """argparse type: a PromQL duration longer than 0 (``--window``, ``--target``, ``--every``)."""
    return _duration(text, positive=True)


def _gate_duration(text: str) -> str:
    """argparse type: a PromQL duration, 0 allowed (``--duration``: one look)."""
    return _duration(text, positive=False)


#: the judge of the tools over files (score, verify, calibrate, probe) when neither --judge nor CLAIMWATCH_JUDGE
#: names one: the offline judge (the worker has no default: it refuses to start without a chosen judge)
TOOL_JUDGE = "heuristic"


def _settings(args: argparse.Namespace, *, default_judge: str | None = None) -> WorkerSettings:
    s = WorkerSettings()
    if getattr(args, "bootstrap", None):
        s.kafka.bootstrap_servers = args.bootstrap
    if getattr(args, "topic", None):
        s.topic = args.topic
    if getattr(args, "group", None):
        s.consumer.group_id = args.group
    if getattr(args, "judge", None):
        s.judge = args.judge
    if not s.judge:
        s.judge = default_judge
    if getattr(args, "metrics_port", None) is not None:
        s.metrics_port = args.metrics_port
    return s


def cmd_worker(args: argparse.Namespace) -> int:
    from evaluator_worker import assembly

    settings = _settings(args)
    if not settings.judge:
        raise ConfigError(NO_JUDGE_CHOSEN)
    metrics = assembly.build_metrics(settings)
    evaluator = assembly.build_evaluator(settings, metrics=metrics)
    preflight(evaluator.judge)  # a model the provider does not serve stops here, before any record is read
    server = assembly.serve_metrics(settings, metrics)
    exporter = assembly.build_exporter()
    worker = assembly.build_worker(settings, evaluator=evaluator, exporter=exporter)

    def _stop(signum, _frame):
        log.info("worker_signal", signal=signum)
        worker.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info(
        "worker_starting",
        topic=settings.topic,
        group=settings.consumer.group_id,
        judge=evaluator.judge.name,
        bootstrap=settings.kafka.bootstrap_servers,
        metrics_port=settings.metrics_port,
        max_in_flight=settings.flow.max_in_flight,
        io_bound=evaluator.io_bound,
    )
    try:
        n = worker.run(max_records=args.max_records, idle_timeout_s=args.idle_timeout)
    finally:
        if server is not None:
            server.shutdown()
        if exporter is not None:
            exporter.shutdown()
    log.info("worker_stopped", processed=n)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    from claimwatch.batch import score_file
    from evaluator_worker.assembly import build_evaluator, build_metrics

    settings = _settings(args, default_judge=TOOL_JUDGE)
    evaluator = build_evaluator(settings, metrics=build_metrics(settings))
    out = sys.stdout if args.output in (None, "-") else args.output
    stats = score_file(evaluator, args.input, out)
    print(f"scored {stats.written} answers, skipped {stats.skipped} bad lines", file=sys.stderr)
    if not stats.read:
        raise ConfigError(f"{args.input}: no records in the file (one RagTrace JSON object per line)")
    return 1 if not stats.written else 0


def cmd_verify(args: argparse.Namespace) -> int:
    from claimwatch.batch import verify_file
    from evaluator_worker.judges.registry import get_judge

    settings = _settings(args, default_judge=TOOL_JUDGE)
    judge = get_judge(settings.judge or TOOL_JUDGE, settings)
    out = sys.stdout if args.output in (None, "-") else open(args.output, "w", encoding="utf-8")
    try:
        stats = verify_file(judge, args.input, out)
    finally:
        if out is not sys.stdout:
            out.close()
    print(f"verified {stats.written} claims, skipped {stats.skipped} bad lines", file=sys.stderr)
    if not stats.read:
        raise ConfigError(f'{args.input}: no records in the file (one {{"claim", "context"}} JSON object per line)')
    return 1 if not stats.written else 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from claimwatch import calibration
    from claimwatch.progress import Progress
    from evaluator_worker.judges.registry import get_judge

    if args.profile_out:  # a `claimwatch label` file: the judge profile from the verdicts recorded in traffic
        try:
            from claimwatch.judge_profile import cmd_profile
        except ImportError as exc:  # numpy: the calibration extra
            raise ConfigError(
                f"calibrate --profile-out needs numpy ({exc}): pip install 'claimwatch[calibration]'"
            ) from exc
        return cmd_profile(args)
    settings = _settings(args, default_judge=TOOL_JUDGE)
    if args.fit_confidence:
        if args.halueval or args.answers or not args.input:
            raise ConfigError(
                "calibrate --fit-confidence fits on labeled claims: give a claims file, not --answers/--halueval"
            )
        settings = settings.model_copy(update={"confidence_calibration": "none"})  # fit on the raw confidences
    judge = get_judge(settings.judge or TOOL_JUDGE, settings)
    if args.fit_risk:
        return _fit_risk(args, judge, settings.confidence_calibration)
    if args.real:
        return _calibrate_real(args, judge)
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
            print(
                f"confidence map for {judge.name} written to {args.fit_confidence}: ECE {cmap['ece_raw']:.3f} raw -> "
                f"{cmap['ece_fitted']:.3f} fitted (in sample), {cmap['ece_cross_validated']} cross-validated",
                file=sys.stderr,
            )
    if args.json:
        print(json.dumps(report.to_json(), indent=None if args.compact else 2, ensure_ascii=False))
    else:
        print(report.to_text())
    return 0


def _fit_risk(args: argparse.Namespace, judge, confidence_calibration: str) -> int:
    """``calibrate --fit-risk``: the judge's answer-risk map fitted on the real sets (train claims, dev answers)."""
    from claimwatch.risk_fit import fit_risk
    from evaluator_worker.judges.risk import risk_path

    if args.input or args.answers or args.halueval or args.fit_confidence or args.real:
        raise ConfigError(
            "calibrate --fit-risk reads the real sets itself: give no file, --answers, --halueval or --real"
        )
    if args.split == "eval":
        raise ConfigError("calibrate --fit-risk never reads the eval split (claims: train, answers: dev)")
    try:
        rm = fit_risk(
            judge, answer_limit=args.limit, claim_limit=args.limit, confidence_calibration=confidence_calibration
        )
    except ImportError as exc:  # scipy: the calibration extra
        raise ConfigError(f"calibrate --fit-risk needs scipy ({exc}): pip install 'claimwatch[calibration]'") from exc
    path = Path(args.risk_out) if args.risk_out else risk_path(judge.name)
    path.write_text(json.dumps(rm.to_json(), indent=1) + "\n", encoding="utf-8")
    print(f"answer-risk map for {judge.name} written to {path}", file=sys.stderr)
    return 0


def _calibrate_real(args: argparse.Namespace, judge) -> int:
    """``calibrate --real SET``: the judge on one split of a public human-labelled set, baselines beside."""
    import io

    from claimwatch import realdata, realreport

    if args.input or args.answers or args.halueval or args.fit_confidence:
        raise ConfigError(
            "calibrate --real reads its own data: give no file, --answers, --halueval or --fit-confidence"
        )
    data = realdata.load_real(args.real, args.split, limit=args.limit)
    if not data.claims and not data.answers:
        raise ConfigError(f"--real {args.real} --split {args.split}: no items")
    print(f"{args.real}, split {args.split or 'all'}: {json.dumps(data.summary())}", file=sys.stderr)
    out = io.StringIO() if args.json else sys.stdout
    result = realreport.measure(data, {judge.name: judge}, out=out)
    if args.json:
        print(
            json.dumps(
                {"set": args.real, "split": args.split, "data": data.summary(), **result},
                indent=None if args.compact else 2,
                ensure_ascii=False,
            )
        )
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    from claimwatch.gate import Advice, Follow, GateConfig, Source, TestConfig, follow, run_gate
    from claimwatch.gate.promql import duration_seconds

    source = Source(args.prometheus, label=args.label, extra_selector=args.selector)
    try:
        config = GateConfig(
            TestConfig(method=args.test, alpha=args.alpha, max_increase=args.max_increase, tau=args.tau),
            min_answers=args.min_answers,
        )
        advice = Advice(target_s=duration_seconds(args.target), sampling_ratio=args.sampling_ratio)
        plan = Follow(every_s=duration_seconds(args.every), duration_s=duration_seconds(args.duration))
    except ValueError as exc:
        raise ConfigError(f"gate: {exc}") from exc
    if args.results:
        if args.follow:
            raise ConfigError("gate: --follow looks at Prometheus again and again; --results is one look at a file")
        return _gate_on_results(args, config)
    if args.follow:
        if config.test.method != "sequential":
            raise ConfigError("gate: --follow needs --test sequential (the fixed test is valid for one look)")
        return follow(
            source,
            args.baseline,
            args.candidate,
            window=args.window,
            config=config,
            plan=plan,
            advice=advice,
            profile=args.profile,
            trust_judge=args.trust_judge,
        )
    code, text = run_gate(
        source,
        args.baseline,
        args.candidate,
        window=args.window,
        config=config,
        advice=advice,
        profile=args.profile,
        trust_judge=args.trust_judge,
    )
    print(text)
    return code


def _gate_on_results(args: argparse.Namespace, config: GateConfig) -> int:
    """``claimwatch gate --results FILE``: the same decision (and ``--profile`` correction) on the counts of a results
    file (``claimwatch score`` output, the demo's ``--results-out``), counted as the worker counts them."""
    from claimwatch.claims_query import read_results_file
    from claimwatch.gate import EXIT_CODES, HOLD, GateError, counts_from_results, decide
    from claimwatch.gate.correction import correct
    from claimwatch.gate.judge_fitness import check_decision

    counts = counts_from_results(read_results_file(args.results), (args.baseline, args.candidate), args.label)
    d = decide(
        counts[args.baseline],
        counts[args.candidate],
        config,
        labels={"baseline": args.baseline, "candidate": args.candidate},
    )
    try:  # as run_gate: the profile decides when there is one, else the judge behind the counts is checked
        correction = correct(d, args.profile) if args.profile else check_decision(d, trust_judge=args.trust_judge)
    except GateError as exc:
        print(f"claimwatch gate: HOLD (exit 2)\n  - {exc}")
        return EXIT_CODES[HOLD]
    d = correction.apply(d)
    first, _, rest = d.render().partition("\n")
    where = f"results file {args.results}, {args.label} {args.baseline!r} (baseline) vs {args.candidate!r} (candidate)"
    print("\n".join([first, f"  {where}", rest, *(f"  {line}" for line in correction.lines)]))
    return d.exit_code


def cmd_probe(args: argparse.Namespace) -> int:
    from evaluator_worker.consistency import ActiveProbe, http_asker
    from evaluator_worker.judges.registry import get_judge

    settings = _settings(args, default_judge=TOOL_JUDGE)
    judge = get_judge(settings.judge or TOOL_JUDGE, settings)
    probe = ActiveProbe(http_asker(args.endpoint, timeout=args.timeout), judge)
    questions = (
        [args.question]
        if args.question
        else [json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()]
    )
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
        sp.add_argument("--judge", default=None, help=_judge_help())

    w = sub.add_parser("worker", help="consume RagTrace records from Kafka, judge them, export metrics")
    w.add_argument("--bootstrap", help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    w.add_argument("--topic")
    w.add_argument("--group")
    judge_flag(w)
    w.add_argument(
        "--metrics-port", type=int, default=None, help="Prometheus port (CLAIMWATCH_METRICS_PORT, default 9464; -1 off)"
    )
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
    c.add_argument(
        "--halueval", choices=["dialogue", "summarization", "qa"], help="HaluEval split (length-matched pairs)"
    )
    c.add_argument("--limit", type=int, default=None)
    c.add_argument(
        "--real",
        choices=["factcheck-gpt", "summedits", "expertqa", "wice", "faithbench"],
        default=None,
        help="a public human-labelled set of real LLM answers (data/real/; see docs/judge-quality.md)",
    )
    c.add_argument(
        "--split",
        choices=["train", "dev", "eval"],
        default="dev",
        help="with --real: train, dev (default) or eval (run eval once per judge version)",
    )
    c.add_argument("--plot", default=None, help="write the reliability diagram (confidence vs accuracy) as a PNG")
    c.add_argument(
        "--fit-confidence",
        default=None,
        metavar="PATH",
        help="fit a confidence map (isotonic) on the judge's raw confidences and write it to PATH "
        "(use it with CLAIMWATCH_CONFIDENCE_CALIBRATION=PATH)",
    )
    c.add_argument(
        "--fit-risk",
        action="store_true",
        help="fit the judge's answer-risk map on the real sets (claim map on train claims, aggregator and alert "
        "threshold on dev answers; never eval) and write it next to its confidence map (or to --risk-out)",
    )
    c.add_argument("--risk-out", default=None, metavar="PATH", help="with --fit-risk: write the map here instead")
    c.add_argument(
        "--profile-out",
        default=None,
        metavar="PATH",
        help="INPUT is a `claimwatch label` file: write the judge profile (sensitivity/specificity per "
        "verdict and slice, with intervals; the recorded verdicts are compared, the judge is not re-run)",
    )
    c.set_defaults(func=cmd_calibrate)

    g = sub.add_parser("gate", help="release gate: promote (0) / rollback (1) / hold (2) from Prometheus")
    counts_from = g.add_mutually_exclusive_group(required=True)
    counts_from.add_argument("--prometheus", help="Prometheus base URL")
    counts_from.add_argument(
        "--results",
        metavar="FILE",
        help="or one look at the counts of a results JSONL file (claimwatch score output, the demo's --results-out)",
    )
    g.add_argument("--baseline", required=True)
    g.add_argument("--candidate", required=True)
    g.add_argument(
        "--window",
        default="1h",
        type=_positive_duration,
        help="counts over this window (with --follow: its start stays put)",
    )
    g.add_argument(
        "--test",
        choices=["sequential", "fixed"],
        default="sequential",
        help="sequential: valid over any number of looks (default); fixed: one planned look, more power",
    )
    g.add_argument("--min-answers", type=int, default=50, help="evaluated answers each release needs before a decision")
    g.add_argument(
        "--alpha", type=_finite_float, default=0.05, help="false-rollback rate (over all looks when sequential)"
    )
    g.add_argument(
        "--max-increase",
        type=_finite_float,
        default=0.02,
        help="tolerated rise of the share of flagged answers (at risk: the calibrated answer risk at or above the "
        "judge's threshold; the any-claim rule for workers and records without it)",
    )
    g.add_argument(
        "--tau",
        type=_finite_float,
        default=0.1,
        help="sequential test: mixing sd (the Argo template's tau; see docs/gate.md)",
    )
    g.add_argument("--label", default="release", help="label that names releases")
    g.add_argument("--selector", default="", help='extra matchers, e.g. environment="prod"')
    g.add_argument("--follow", action="store_true", help="look again every --every until --duration or a rollback")
    g.add_argument("--every", default="5m", type=_positive_duration, help="--follow: time between looks")
    g.add_argument("--duration", default="1h", type=_gate_duration, help="--follow: how long to keep looking")
    g.add_argument(
        "--target",
        default="1h",
        type=_positive_duration,
        help="on HOLD, recommend sampling to settle it within this time",
    )
    g.add_argument(
        "--profile",
        default=None,
        metavar="PATH",
        help="a judge profile (claimwatch calibrate LABELS --profile-out): print corrected shares; an answer "
        "profile holds a rollback its measured error rates cannot support",
    )
    g.add_argument(
        "--trust-judge",
        action="store_true",
        help="without --profile, a rollback on the counts of a judge not fit for one (claimwatch_judge_info; "
        "docs/gate.md) is held (exit 2); this flag keeps it a rollback",
    )
    g.add_argument(
        "--sampling-ratio",
        type=_finite_float,
        default=None,
        help="the collector's current sampling ratio for the candidate (for the recommendation)",
    )
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
    from claimwatch.drift import add_cli as add_drift
    from claimwatch.ingest_cli import add_bridge_cli as add_bridge
    from claimwatch.ingest_cli import add_receiver_cli as add_receiver
    from claimwatch.judge_compare import add_cli as add_judge_compare
    from claimwatch.labeling import add_cli as add_label
    from claimwatch.report import add_cli as add_report
    from claimwatch.selfcheck import add_cli as add_selfcheck
    from claimwatch.soak import add_cli as add_soak

    add_receiver(sub)
    add_bridge(sub)
    add_soak(sub)
    add_claims(sub)
    add_report(sub)
    add_audit(sub)
    add_selfcheck(sub)
    add_label(sub)
    add_judge_compare(sub)
    add_drift(sub)

    d = sub.add_parser("demo", help="run the whole pipeline on loopback with a demo RAG app and two releases")
    judge_flag(d)
    d.add_argument("--summary-json", default=None, help="write the summary here")
    d.add_argument("--requests", type=int, default=240, help="requests per release")
    d.add_argument("--fault-rate", type=float, default=0.3, help="share of candidate answers with an injected failure")
    d.add_argument("--no-prometheus", action="store_true", help="don't start Prometheus even if installed")
    d.add_argument("--workers", type=int, default=1)
    d.add_argument("--seed", type=int, default=7)
    d.add_argument("--gate-min-answers", type=int, default=50, help="evaluated answers per release the gate needs")
    d.add_argument(
        "--results-out",
        default="claimwatch-demo-results.jsonl",
        help="write the results topic here at the end ('' to skip): the broker ends with the demo, and "
        "claimwatch label / report --results read the file",
    )
    d.add_argument(
        "--report", default="claimwatch-demo-report.html", help="write the HTML release report here ('' to skip)"
    )
    d.set_defaults(func=cmd_demo)
    return p


def _judge_help() -> str:
    from evaluator_worker.judges.table import TABLE

    names = ", ".join(TABLE)
    return f"the judge: {names}, or package.module:factory (CLAIMWATCH_JUDGE; docs/choosing-a-judge.md)"


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
        return (
            f"no Kafka broker answered ({exc}): set CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS or pass --bootstrap, "
            "and check the listeners and TLS/SASL settings"
        ), 1
    if isinstance(exc, KafkaError):
        return f"Kafka: {type(exc).__name__}: {exc}", 1
    return f"{type(exc).__name__}: {exc} (run with --debug for the traceback)", 1


def _decision_error(command: str, message: str) -> int:
    """An error in a command whose exit code is a release decision: HOLD (exit 2), said on stdout like its
    decisions and on stderr like any error; never 1 (rollback) or 0 (promote)."""
    print(f"claimwatch {command}: HOLD (exit {EXIT_HOLD})\n  - could not decide, an error: {message}")
    print(f"claimwatch: error: {message}", file=sys.stderr)
    return EXIT_HOLD


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = "DEBUG" if args.debug else (args.log_level or WorkerSettings().log_level)
    configure_logging(level)
    decision = args.command in DECISION_COMMANDS
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        debug = args.debug or str(level).upper() == "DEBUG"
        if debug and not decision:
            raise
        if debug:
            import traceback

            traceback.print_exc()
        message, code = explain(exc)
        if decision:
            return _decision_error(args.command, message)
        print(f"claimwatch: error: {message}", file=sys.stderr)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

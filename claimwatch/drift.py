"""``claimwatch drift-check``: the judge's drift canary. A fixed labelled set re-judged on a schedule; an alarm when
the same judge (same ``judge_id``) answers it measurably worse than it did the first time.

What it catches: what no judge id can see. A provider updates the model behind the same name, a served model's
behaviour shifts, a dependency changes tokenisation; the judge id stays, every release's rates move a little, and
nothing else notices. The canary re-judges the same labelled claims (``claimwatch label`` output, or any claims file
with ``claim``, ``context``, ``label``; the demo ships ``claimwatch/data/claims_heldout.jsonl``) with the worker's own
judge settings, and compares its recent runs with the judge's **reference runs** (its first runs on this set, kept
in ``--state``):

- per item, right or wrong (flagged = UNSUPPORTED or CONTRADICTED, as labelled or not; the worker's hedge policy
  applied), and per verdict the error rates: **false alarms** (labelled SUPPORTED, flagged), **misses** (labelled
  flagged, passed) and the overall error;
- **agreement**: the share of items with the same verdict as in the first reference run;
- **the test**: the judge's first ``reference_runs`` runs (3 by default) are its reference; every later run compares
  the last ``reference_runs`` runs with them, item by item: ``d_i`` = times item ``i`` was judged wrong in the recent
  runs minus in the reference runs, and an exact one-sided sign-flip test on the ``d_i`` (under a stable judge the
  recent and the reference runs are exchangeable, whatever the judge's randomness, so each ``d_i`` is as likely
  negative as positive; with one run each it is McNemar's test), for each of the three error rates on its own items,
  at ``alpha / 3`` each. **The alarm** is raised when any of them rejects. A stable judge raises it in at most
  ``alpha`` of the runs (1% by default: with a daily CronJob, about one false alarm in 100 days). A drop of 10
  accuracy points is caught by the first run after it with probability >= 0.99 on 500 labelled items; on the 148
  shipped items (15 items changing) with probability >= 0.45, within 3 runs >= 0.9, within 6 >= 0.97: label more
  for a faster canary (both simulated in ``tests/unit/test_drift.py``, where the numbers are asserted, with a judge
  that flips 10% of the items at random from run to run). Until the reference is complete nothing is decided.

The numbers go to Prometheus under the judge id (``--pushgateway`` for a CronJob, or ``--textfile`` for node
exporter's textfile collector): ``claimwatch_drift_*`` (:class:`DriftMetrics`); ``ClaimwatchJudgeDrift`` fires on the
alarm and ``ClaimwatchDriftCheckStale`` when the canary has not run for two days. A new judge id (a deliberate judge
change) starts a new reference: its first runs are never an alarm.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from prometheus_client import CollectorRegistry, Gauge

from claimwatch.calibration import LabeledClaim, data_path, load_labeled_claims
from claimwatch.stats.proportions import sign_flip_p_value
from contract.errors import ConfigError
from contract.logs import get_logger

log = get_logger(__name__)

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_REFERENCE_RUNS",
    "DriftMetrics",
    "DriftRun",
    "RATES",
    "compare_runs",
    "judge_items",
    "run_drift",
]

#: per-run false-alarm rate of a stable judge (three tests at alpha / 3 each)
DEFAULT_ALPHA = 0.01
#: runs that make a judge's reference, and the recent runs compared with them
DEFAULT_REFERENCE_RUNS = 3
#: the error rates tested, each on its own items
RATES = ("overall", "false_alarm", "miss")
FLAGGED = ("UNSUPPORTED", "CONTRADICTED")
#: a run whose judge failed on more than this share of items decides nothing (an outage is not drift)
MAX_ERROR_SHARE = 0.1


def _wrong(label: str, verdict: str) -> bool:
    return (label in FLAGGED) != (verdict in FLAGGED)


def _rate_items(rate: str, label: str) -> bool:
    """Whether an item with ``label`` counts towards ``rate``."""
    return rate == "overall" or (rate == "false_alarm") == (label not in FLAGGED)


@dataclass(frozen=True)
class DriftRun:
    """One run's verdicts on the set: item id -> verdict (``ERROR`` where the judge failed)."""

    judge_id: str
    set_digest: str
    verdicts: Mapping[str, str]
    at: float

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "verdicts": dict(self.verdicts)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> DriftRun:
        return cls(str(obj["judge_id"]), str(obj["set_digest"]), dict(obj["verdicts"]), float(obj["at"]))


@dataclass(frozen=True)
class Comparison:
    """This run against the reference: error rates, agreement, p-values and the alarm."""

    items: int
    errors: int
    error_rates: Mapping[str, float | None]
    reference_error_rates: Mapping[str, float | None]
    agreement: float | None
    p_values: Mapping[str, float]
    alarm: bool
    decided: bool
    reason: str


def set_digest(items: Sequence[LabeledClaim]) -> str:
    """A digest of the labelled set (ids, claims, contexts, labels): a reference holds for this set only."""
    h = hashlib.sha256()
    for it in sorted(items, key=lambda i: i.id):
        h.update(json.dumps([it.id, it.claim, list(it.context), it.label]).encode())
    return h.hexdigest()[:16]


def _error_rate(items: Sequence[LabeledClaim], verdicts: Mapping[str, str], rate: str) -> float | None:
    judged = [it for it in items if verdicts.get(it.id, "ERROR") != "ERROR" and _rate_items(rate, it.label)]
    return sum(_wrong(it.label, verdicts[it.id]) for it in judged) / len(judged) if judged else None


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def compare_runs(
    items: Sequence[LabeledClaim],
    runs: Sequence[DriftRun],
    *,
    reference_runs: int = DEFAULT_REFERENCE_RUNS,
    alpha: float = DEFAULT_ALPHA,
) -> Comparison:
    """The last run and the recent ``reference_runs`` runs against the first ``reference_runs`` (module docstring)."""
    m = max(1, reference_runs)
    current = runs[-1]
    ref, recent = list(runs[:m]), list(runs[-m:])
    errors = sum(current.verdicts.get(it.id, "ERROR") == "ERROR" for it in items)
    rates = {r: _error_rate(items, current.verdicts, r) for r in RATES}
    ref_rates = {r: _mean([_error_rate(items, run.verdicts, r) for run in ref]) for r in RATES}
    involved = [*ref, *recent]
    both = [it for it in items if all(run.verdicts.get(it.id, "ERROR") != "ERROR" for run in involved)]
    agreement = sum(ref[0].verdicts[it.id] == current.verdicts[it.id] for it in both) / len(both) if both else None
    p_values: dict[str, float] = {}
    for r in RATES:
        diffs = [
            sum(_wrong(it.label, run.verdicts[it.id]) for run in recent)
            - sum(_wrong(it.label, run.verdicts[it.id]) for run in ref)
            for it in both
            if _rate_items(r, it.label)
        ]
        p_values[r] = sign_flip_p_value(diffs)

    def done(alarm: bool, decided: bool, reason: str) -> Comparison:
        return Comparison(len(both), errors, rates, ref_rates, agreement, p_values, alarm, decided, reason)

    if len(runs) <= m:
        return done(False, False, f"building the reference: run {len(runs)} of {m}")
    if errors > MAX_ERROR_SHARE * len(items):
        return done(
            False, False, f"the judge failed on {errors} of {len(items)} items: not decided (an outage is not drift)"
        )
    rejected = [r for r in RATES if p_values[r] < alpha / len(RATES)]
    if rejected:
        return done(
            True, True, f"error rate rose beyond chance ({', '.join(rejected)}; p < {alpha / len(RATES):.4g} each)"
        )
    return done(False, True, "no error rate rose beyond chance")


def judge_items(evaluator: Any, items: Sequence[LabeledClaim], *, threads: int = 1) -> dict[str, str]:
    """Each item's verdict by the evaluator's judge, as the worker counts it (its hedge policy applied); ``ERROR``
    where the judge failed on it."""
    from evaluator_worker.errors import JudgeError
    from evaluator_worker.judges.base import Claim, apply_hedge_policy, complete_verdicts

    judge = evaluator.judge

    def one(it: LabeledClaim) -> tuple[str, str]:
        claim = Claim(id=it.id, text=it.claim)
        try:
            verification = judge.verify([claim], list(it.context))
        except JudgeError as exc:
            log.warning("drift_item_failed", item=it.id, error=str(exc)[:200])
            return it.id, "ERROR"
        verdicts = apply_hedge_policy(complete_verdicts([claim], verification.verdicts), evaluator.hedge_policy)
        return it.id, verdicts[0].verdict.value

    with ThreadPoolExecutor(max(1, threads)) as pool:
        return dict(pool.map(one, items))


class DriftMetrics:
    """The canary's numbers, per judge id, on their own registry (pushed or written as a textfile)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.items = Gauge(
            "claimwatch_drift_items", "Labelled items judged by this run and the reference.", ["judge_id"], registry=r
        )
        self.errors = Gauge(
            "claimwatch_drift_judge_errors", "Items the judge failed on in this run.", ["judge_id"], registry=r
        )
        self.error_rate = Gauge(
            "claimwatch_drift_error_rate",
            "This run's error rate on the labelled set, by rate (overall, false_alarm: labelled SUPPORTED and flagged, "
            "miss: labelled flagged and passed).",
            ["judge_id", "rate"],
            registry=r,
        )
        self.reference_error_rate = Gauge(
            "claimwatch_drift_reference_error_rate",
            "The reference runs' mean error rate (the judge's first runs on this set), by rate.",
            ["judge_id", "rate"],
            registry=r,
        )
        self.agreement = Gauge(
            "claimwatch_drift_agreement_ratio",
            "Share of items with the same verdict as in the first reference run.",
            ["judge_id"],
            registry=r,
        )
        self.p_value = Gauge(
            "claimwatch_drift_p_value",
            "One-sided exact sign-flip p-value that the rate rose in the recent runs over the reference runs.",
            ["judge_id", "rate"],
            registry=r,
        )
        self.alarm = Gauge(
            "claimwatch_drift_alarm",
            "1 when an error rate rose beyond chance (each rate tested at alpha/3; a stable judge alarms in at most "
            "alpha of the runs), else 0.",
            ["judge_id"],
            registry=r,
        )
        self.last_run = Gauge(
            "claimwatch_drift_last_run_timestamp_seconds",
            "Unix time of the canary's last completed run.",
            ["judge_id"],
            registry=r,
        )

    def record(self, judge_id: str, c: Comparison, at: float) -> None:
        self.items.labels(judge_id).set(c.items)
        self.errors.labels(judge_id).set(c.errors)
        for r in RATES:
            for gauge, value in (
                (self.error_rate, c.error_rates[r]),
                (self.reference_error_rate, c.reference_error_rates[r]),
            ):
                if value is not None:
                    gauge.labels(judge_id, r).set(value)
            self.p_value.labels(judge_id, r).set(c.p_values[r])
        if c.agreement is not None:
            self.agreement.labels(judge_id).set(c.agreement)
        self.alarm.labels(judge_id).set(1 if c.alarm else 0)
        self.last_run.labels(judge_id).set(at)


def _state_path(state: Path, judge_id: str, digest: str) -> Path:
    safe = hashlib.sha256(judge_id.encode()).hexdigest()[:16]
    return state / f"drift-{safe}-{digest}.json"


def run_drift(
    evaluator: Any,
    items: Sequence[LabeledClaim],
    state: Path,
    *,
    alpha: float = DEFAULT_ALPHA,
    reference_runs: int = DEFAULT_REFERENCE_RUNS,
    threads: int = 1,
    metrics: DriftMetrics | None = None,
    clock: Any = time.time,
) -> tuple[Comparison, list[DriftRun]]:
    """Judge ``items``, add the run to the judge's runs on this set (the first ``reference_runs`` stay as its
    reference, the last ``reference_runs`` are kept), compare, record."""
    if not items:
        raise ConfigError("drift-check: the labelled set is empty")
    judge_id = evaluator.identity.judge_id
    digest = set_digest(items)
    current = DriftRun(judge_id, digest, judge_items(evaluator, items, threads=threads), clock())
    state.mkdir(parents=True, exist_ok=True)
    path = _state_path(state, judge_id, digest)
    runs = (
        [DriftRun.from_json(r) for r in json.loads(path.read_text(encoding="utf-8"))["runs"]] if path.exists() else []
    )
    if not runs:
        log.info("drift_new_reference", judge_id=judge_id, path=str(path), items=len(items), runs=reference_runs)
    runs.append(current)
    m = max(1, reference_runs)
    runs = runs[:m] + runs[max(m, len(runs) - m) :]  # the reference and the recent runs
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"judge_id": judge_id, "set_digest": digest, "runs": [r.to_json() for r in runs]}))
    tmp.replace(path)
    c = compare_runs(items, runs, reference_runs=reference_runs, alpha=alpha)
    if metrics is not None:
        metrics.record(judge_id, c, current.at)
    return c, runs


def render(judge_id: str, c: Comparison) -> str:
    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x * 100:.1f}%"

    lines = [f"claimwatch drift-check: {'ALARM' if c.alarm else 'ok'} (judge_id {judge_id})"]
    lines.append(f"  {c.items} items judged in both runs, {c.errors} judge errors now; {c.reason}")
    for r in RATES:
        lines.append(
            f"  {r:<12} error {pct(c.error_rates[r])} now, {pct(c.reference_error_rates[r])} in the reference runs "
            f"(p = {c.p_values[r]:.3g})"
        )
    lines.append(f"  same verdict as the first reference run on {pct(c.agreement)} of items")
    return "\n".join(lines)


def cmd_drift(args: argparse.Namespace) -> int:
    from evaluator_worker.assembly import build_evaluator
    from evaluator_worker.config import WorkerSettings

    settings = WorkerSettings()  # the workers' CLAIMWATCH_* settings: the same judge, the same judge id
    if args.judge:
        settings.judge = args.judge
    if not settings.judge:
        raise ConfigError("drift-check: set CLAIMWATCH_JUDGE (or --judge): the judge whose drift to watch")
    evaluator = build_evaluator(settings)
    items = load_labeled_claims(args.labels or data_path("heldout"))
    metrics = DriftMetrics()
    c, _ = run_drift(
        evaluator,
        items,
        Path(args.state),
        alpha=args.alpha,
        reference_runs=args.reference_runs,
        threads=args.threads,
        metrics=metrics,
    )
    print(render(evaluator.identity.judge_id, c))
    if args.textfile:
        from prometheus_client import write_to_textfile

        write_to_textfile(args.textfile, metrics.registry)
    if args.pushgateway:
        from prometheus_client import push_to_gateway

        push_to_gateway(args.pushgateway, job="claimwatch-drift", registry=metrics.registry)
    return 1 if c.alarm else 0


def add_cli(sub: Any) -> None:
    p = sub.add_parser("drift-check", help="re-judge a fixed labelled set; alarm when the judge drifted (a CronJob)")
    p.add_argument("--labels", help="labelled claims (claimwatch label output); default: the shipped demo set")
    p.add_argument("--judge", default=None, help="the judge (default CLAIMWATCH_JUDGE: the worker's)")
    p.add_argument("--state", default=".claimwatch-drift", help="directory that keeps each judge's reference run")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA, help="false alarms per run of a stable judge")
    p.add_argument("--threads", type=int, default=4, help="items judged at once")
    p.add_argument(
        "--reference-runs",
        type=int,
        default=DEFAULT_REFERENCE_RUNS,
        help="the judge's first runs that make its reference (and the recent runs compared with them)",
    )
    p.add_argument("--pushgateway", help="push the numbers to this Prometheus Pushgateway (host:port)")
    p.add_argument("--textfile", help="write the numbers here (node exporter's textfile collector)")
    p.set_defaults(func=cmd_drift)

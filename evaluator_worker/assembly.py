"""The worker's one composition root: settings in, the production evaluator and worker out.

``claimwatch worker`` and ``claimwatch score`` (the CLI), ``claimwatch demo`` and ``claimwatch soak``
all build their evaluator and worker here, so every one of them runs what production runs:

- the judge ``settings.judge`` names (unless a shared instance is passed in);
- the one retry policy, from ``settings.flow`` (``retry_base_s``, ``retry_max_s``, ``retry_deadline_s``);
- parity scores and the consistency tracker, from ``settings.parity`` (consistency with its own judge
  when ``parity.consistency_judge`` differs from the main one);
- result text per ``settings.results_include_text``;
- metrics with the slice guard of ``settings.slice_labels`` / ``slice_values`` / ``max_values_per_label``;
- the evaluations-back-into-traces exporter from ``CLAIMWATCH_TRACE_EXPORT_*`` (off without an endpoint);
- the shadow judge of ``settings.shadow`` (off without ``shadow.judge``): the candidate judge with the worker's
  settings changed by ``shadow.settings``, its own evaluator on a private registry, counted apart on the worker's;
- the worker's parts (:func:`build_worker`): the adaptive concurrency limiter of a network judge (``flow``), the
  result writer, the in-flight table with its judging threads, and the group member's work.

Settings are read at the edge (the command builds one ``WorkerSettings`` and adjusts it); nothing here
reads flags. A caller that runs several workers builds the judge, metrics and exporter once and passes
them to each :func:`build_worker`; a caller that passes its own exporter shuts it down.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from contract.errors import ConfigError
from evaluator_worker.config import NO_JUDGE_CHOSEN, WorkerSettings

if TYPE_CHECKING:
    from evaluator_worker.judges.base import Judge
    from evaluator_worker.metrics import WorkerMetrics
    from evaluator_worker.pipeline import Evaluator
    from evaluator_worker.shadow import ShadowJudge
    from evaluator_worker.trace_export import EvaluationExporter, TraceExportSettings
    from evaluator_worker.worker import Worker

__all__ = [
    "FROM_SETTINGS",
    "build_evaluator",
    "build_exporter",
    "build_metrics",
    "build_shadow",
    "build_worker",
    "serve_metrics",
]


class _FromSettings:
    def __repr__(self) -> str:
        return "FROM_SETTINGS"


#: CPU-bound judges (heuristic, hybrid, nli) run on one judging thread: more threads only contend for the GIL (an
#: NLI model's own intra-op threads do the parallel work)
CPU_THREADS = 1
#: answers queued for that thread (their max_in_flight): a short queue keeps the judge busy; more only lengthens
#: drains on stop or revoke
CPU_QUEUE = 32

#: ``build_worker(exporter=FROM_SETTINGS)`` (the default): the exporter ``CLAIMWATCH_TRACE_EXPORT_*`` describes
FROM_SETTINGS: Any = _FromSettings()


def build_metrics(settings: WorkerSettings) -> WorkerMetrics:
    """Worker metrics on a fresh registry, slice labels bounded as ``settings`` says."""
    from evaluator_worker.metrics import SliceGuard, WorkerMetrics

    guard = SliceGuard(settings.slice_labels, settings.slice_values or None, settings.max_values_per_label)
    return WorkerMetrics(guard=guard)


def build_evaluator(
    settings: WorkerSettings,
    *,
    judge: Judge | None = None,
    metrics: WorkerMetrics | None = None,
    yield_when_throttled: bool = False,
) -> Evaluator:
    """The production evaluator: ``judge`` (default: the one ``settings.judge`` names), the retry policy of
    ``settings.flow``, parity and consistency of ``settings.parity``, result text per ``results_include_text``.
    ``yield_when_throttled``: give an answer up at a 429/529 instead of retrying (the shadow judge)."""
    from evaluator_worker.consistency import ConsistencyTracker
    from evaluator_worker.flow import RetryPolicy
    from evaluator_worker.judges.registry import get_judge
    from evaluator_worker.pipeline import Evaluator

    if judge is None:
        if not settings.judge:
            raise ConfigError(NO_JUDGE_CHOSEN)
        judge = get_judge(settings.judge, settings)
    p = settings.parity
    tracker = None
    if p.consistency:
        cjudge = judge if p.consistency_judge == settings.judge else get_judge(p.consistency_judge, settings)
        tracker = ConsistencyTracker(
            cjudge, threshold=p.consistency_threshold, window=p.consistency_window, sample=p.consistency_sample
        )
    f = settings.flow
    retry = RetryPolicy(
        base_s=f.retry_base_s,
        max_s=f.retry_max_s,
        deadline_s=f.retry_deadline_s,
        yield_when_throttled=yield_when_throttled,
    )
    return Evaluator(
        judge,
        metrics,
        retry=retry,
        include_text=settings.results_include_text,
        parity=p,
        consistency=tracker,
        hedge_policy=settings.hedge_policy,
        derived_slices=settings.derived_slices,
    )


def build_exporter(settings: TraceExportSettings | None = None) -> EvaluationExporter | None:
    """The evaluations-back-into-traces exporter (``CLAIMWATCH_TRACE_EXPORT_*`` unless given); None when off."""
    from evaluator_worker.trace_export import EvaluationExporter

    exporter = EvaluationExporter.from_settings(settings)
    return exporter if exporter.enabled else None


def _merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def shadow_settings(settings: WorkerSettings) -> WorkerSettings:
    """The worker's settings as the shadow judge sees them: ``shadow.settings`` merged over them (nested), its judge
    named, no consistency checks, its own retry deadline; :class:`ConfigError` naming the shadow on a bad value."""
    from pydantic import ValidationError

    sh = settings.shadow
    base = settings.model_dump()
    try:
        merged = _merged(base, sh.settings)
        merged["judge"] = sh.judge
        merged["parity"] = {**merged.get("parity", {}), "consistency": False}
        merged["flow"] = {**merged.get("flow", {}), "retry_deadline_s": sh.retry_deadline_s}
        return type(settings).model_validate(merged)
    except (ValidationError, TypeError) as exc:
        raise ConfigError(f"CLAIMWATCH_SHADOW__SETTINGS: not valid over the worker's settings: {exc}") from exc


def build_shadow(settings: WorkerSettings, main: Evaluator, metrics: WorkerMetrics) -> ShadowJudge | None:
    """The shadow judge ``settings.shadow`` describes (None when ``shadow.judge`` is unset), counting on ``metrics``
    under its own judge id; a shadow identical to the main judge (same judge id) is refused: it would measure
    nothing."""
    from evaluator_worker.metrics import NullMetrics
    from evaluator_worker.shadow import ShadowJudge

    if not settings.shadow.judge:
        return None
    ss = shadow_settings(settings)
    # its judge calls never reach the main judge's metrics, and it yields to the main judge when the provider throttles
    evaluator = build_evaluator(ss, metrics=NullMetrics(), yield_when_throttled=True)
    if evaluator.identity.judge_id == main.identity.judge_id:
        raise ConfigError(
            f"the shadow judge is the main judge ({main.identity.judge_id}): set CLAIMWATCH_SHADOW__JUDGE or "
            "CLAIMWATCH_SHADOW__SETTINGS to the candidate you want to compare"
        )
    return ShadowJudge(
        evaluator,
        settings.shadow,
        metrics,
        main_judge_id=main.identity.judge_id,
        max_request_bytes=settings.flow.producer_max_request_bytes,
    )


def build_worker(
    settings: WorkerSettings,
    *,
    judge: Judge | None = None,
    metrics: WorkerMetrics | None = None,
    evaluator: Evaluator | None = None,
    consumer: Any = None,
    producer: Any = None,
    exporter: Any = FROM_SETTINGS,
    clock: Callable[[], float] | None = None,
    seed_dedupe: Callable[[list[int]], list[str]] | None = None,
    shadow: Any = FROM_SETTINGS,
) -> Worker:
    """One member of the evaluator consumer group, assembled as production assembles it.

    ``judge`` and ``metrics`` default to what ``settings`` describes (:func:`build_evaluator`,
    :func:`build_metrics`); ``evaluator`` replaces both (it must come from :func:`build_evaluator` to be
    the product path). ``exporter``: :data:`FROM_SETTINGS` (default) builds it from the environment, None
    turns it off; the caller shuts down an exporter it passed. ``consumer``, ``producer``, ``clock`` and
    ``seed_dedupe`` are the worker's test seams (left at the worker's defaults when not given). ``shadow``:
    :data:`FROM_SETTINGS` (default) builds the shadow judge of ``settings.shadow`` (:func:`build_shadow`), None
    turns it off.
    """
    import threading

    from evaluator_worker.flow import AdaptiveLimiter
    from evaluator_worker.inflight import InFlight
    from evaluator_worker.results import DedupeWindow
    from evaluator_worker.worker import Worker
    from evaluator_worker.writer import ResultWriter, make_producer

    if evaluator is None:
        evaluator = build_evaluator(
            settings, judge=judge, metrics=metrics if metrics is not None else build_metrics(settings)
        )
    if exporter is FROM_SETTINGS:
        exporter = build_exporter()
    if shadow is FROM_SETTINGS:
        shadow = build_shadow(settings, evaluator, evaluator.metrics)
    f = settings.flow
    if evaluator.io_bound:
        if evaluator.caller.limiter is None:  # one limiter per evaluator: workers sharing a judge share its backoff
            evaluator.caller.limiter = AdaptiveLimiter(
                f.max_in_flight,
                min_limit=f.min_concurrency,
                requests_per_minute=f.requests_per_minute,
                input_tokens_per_minute=f.input_tokens_per_minute,
            )
        threads = max_in_flight = f.max_in_flight
        # network judges: wake the loop for every judged answer (threads mostly wait on sockets)
        wake_below = 0
    else:
        # CPU-bound judges: only when their queue runs low, so the loop works in batches and the judging thread is
        # not interrupted for the GIL after every answer (measured: 20% faster)
        threads = CPU_THREADS
        max_in_flight = min(f.max_in_flight, CPU_QUEUE)
        wake_below = max(1, max_in_flight // 4)
    clock = clock or time.monotonic
    wake = threading.Event()  # set by judged answers and failed writes; the group loop waits on it while full
    writer = ResultWriter(
        flow=f,
        metrics=evaluator.metrics,
        make_producer=lambda: make_producer(settings),
        producer=producer,
        clock=clock,
        wake=wake,
    )
    flight = InFlight(
        settings=settings,
        evaluator=evaluator,
        writer=writer,
        dedupe=DedupeWindow(settings.dedupe_window),
        threads=threads,
        max_in_flight=max_in_flight,
        wake_below=wake_below,
        wake=wake,
        clock=clock,
    )
    return Worker(
        settings=settings,
        evaluator=evaluator,
        flight=flight,
        consumer=consumer,
        seed_dedupe=seed_dedupe,
        exporter=exporter,
        shadow=shadow,
        wake=wake,
        clock=clock,
    )


def serve_metrics(settings: WorkerSettings, metrics: WorkerMetrics) -> Any:
    """Serve ``metrics`` on ``settings.metrics_host:metrics_port`` (Prometheus text); None when the port is < 0.

    Returns the server (``shutdown()`` stops it).
    """
    if settings.metrics_port < 0:
        return None
    from prometheus_client import start_http_server

    server, _thread = start_http_server(settings.metrics_port, addr=settings.metrics_host, registry=metrics.registry)
    return server

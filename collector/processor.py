"""``RagTraceProcessor``: the OpenTelemetry SpanProcessor that feeds claimwatch.

The app's thread does O(1) work in ``on_end``: append the finished span to a
bounded deque and return (no lock, no I/O, never raises; a full queue is
counted as ``span_queue_full``). One daemon thread does the rest, through the :class:`~collector.pipeline.TracePipeline`
shared with the OTLP receiver and the Collector-topic bridge::

    span -> conventions.extract -> assembler (per trace) -> complete trace
         -> conventions.build (not RAG? count) -> sampler -> redactor
         -> record.enforce_limits -> sink.submit (Kafka)

Install next to an existing TracerProvider (see docs/collector.md)::

    from collector import RagTraceProcessor, check_provider
    tracer_provider.add_span_processor(RagTraceProcessor.from_env())
    check_provider(tracer_provider)

Fork safety: an ``os.register_at_fork(after_in_child=...)`` hook gives a forked
child (gunicorn workers) a fresh queue, assembler, thread and producer; what
the parent had buffered stays the parent's to deliver.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import weakref
from typing import Any, Callable

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from prometheus_client import CollectorRegistry

from collector.assembler import TraceAssembler
from collector.background import BackgroundLoop
from collector.config import CollectorSettings
from collector.metrics import CollectorMetrics, get_metrics
from collector.pipeline import TracePipeline, warn_once
from collector.sink import KafkaSink, ProducerFactory, Sink
from contract.logs import get_logger
from contract.ratelog import RateLimitedLog

log = get_logger(__name__)

_IDLE_WAIT_S = 0.02
_GAUGE_EVERY_S = 0.5
_SPAN_QUEUE_HINT = (
    "spans end faster than the collector's thread takes them (or it is starved of the GIL): more than "
    "2 x CLAIMWATCH_QUEUE_SIZE spans waited"
)
_SHUTDOWN_HINT = "a span ended after the processor shut down"


def _pause() -> None:
    """Release the GIL for a moment: ``time.sleep(0)`` drops it and signals a waiting thread."""
    time.sleep(0)


#: the background thread yields the GIL after working this long (see ``_maybe_yield``)
_SLICE_S = 0.0001

#: attributes one OpenInference document uses (id, content, score, metadata)
_ATTRS_PER_DOCUMENT = 4
_ATTRS_OVERHEAD = 16
_HIDE_FLAGS = (
    "OPENINFERENCE_HIDE_INPUTS",
    "OPENINFERENCE_HIDE_OUTPUTS",
    "OPENINFERENCE_HIDE_INPUT_MESSAGES",
    "OPENINFERENCE_HIDE_OUTPUT_MESSAGES",
    "OPENINFERENCE_HIDE_INPUT_TEXT",
    "OPENINFERENCE_HIDE_OUTPUT_TEXT",
)
__all__ = ["RagTraceProcessor", "check_provider", "check_limits", "check_environment", "warn_once"]


def _truthy(value: str | None) -> bool:
    return value is not None and value.strip().lower() in ("1", "true", "yes", "on")


def check_environment(environ: Any = None) -> list[str]:
    """Warn (once) about env flags that blank the text claimwatch needs; returns the warning keys."""
    env = os.environ if environ is None else environ
    found = [name for name in _HIDE_FLAGS if _truthy(env.get(name))]
    keys = []
    if found:
        keys.append("hidden_inputs_env")
        warn_once(
            "hidden_inputs_env",
            "OpenInference is told to hide inputs/outputs: questions, answers or documents will be blank "
            "and such traces give no record (counted not_recorded_total{reason=no_content})",
            flags=found,
        )
    if (env.get("TRACELOOP_TRACE_CONTENT") or "").strip().lower() in ("false", "0", "no", "off"):
        keys.append("traceloop_content_off")
        warn_once(
            "traceloop_content_off",
            "TRACELOOP_TRACE_CONTENT=false: Traceloop spans carry no text; "
            "unset it or set TRACELOOP_TRACE_CONTENT=true",
        )
    keys += _check_genai_content(env)
    return keys


GENAI_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
#: OTel GenAI instrumentations whose content capture ``GENAI_CAPTURE_ENV`` controls
GENAI_INSTRUMENTATIONS = (
    "opentelemetry.instrumentation.openai_v2",
    "opentelemetry.instrumentation.google_genai",
    "opentelemetry.instrumentation.vertexai",
    "opentelemetry.instrumentation.langchain_v2",
    "opentelemetry.util.genai",
)


def _loaded(module: str) -> bool:
    """Imported in this process: an instrumentation that is merely installed may not be in use."""
    return module in sys.modules


def _check_genai_content(env: Any, installed: Callable[[str], bool] = _loaded) -> list[str]:
    """The GenAI content-capture setting, as each util-genai generation reads it.

    With ``opentelemetry-util-genai`` (the experimental GenAI mode the current
    instrumentations use) the accepted values are ``span_only``, ``span_and_event``,
    ``event_only`` and ``no_content``: ``true`` is rejected with a log line and means no
    content. Without it (older instrumentations) ``true`` turns content on.
    """
    # only when a GenAI instrumentation is loaded (call check_provider after instrumenting)
    if not any(installed(m) for m in GENAI_INSTRUMENTATIONS):
        return []
    raw = env.get(GENAI_CAPTURE_ENV)
    value = (raw or "").strip().lower()
    util = installed("opentelemetry.util.genai")
    if util and value == "true":
        warn_once(
            "genai_content_true",
            f"{GENAI_CAPTURE_ENV}=true is rejected by opentelemetry-util-genai (it falls "
            "back to no content): set it to span_only (or span_and_event)",
            value=raw,
        )
        return ["genai_content_true"]
    if util and value == "event_only":
        warn_once(
            "genai_content_events",
            f"{GENAI_CAPTURE_ENV}=event_only puts messages on log records and writes "
            "retrieved documents nowhere: set span_and_event (or span_only); with events, also add "
            "logger_provider.add_log_record_processor(processor.log_processor())",
        )
        return ["genai_content_events"]
    if value in ("", "false", "0", "no", "off", "no_content"):
        fix = "span_only" if util else "true"
        warn_once(
            "genai_content_off",
            f"OTel GenAI spans carry no message content, so answers cannot be judged: set {GENAI_CAPTURE_ENV}={fix}",
            value=raw,
        )
        return ["genai_content_off"]
    return []


def check_provider(tracer_provider: Any, settings: CollectorSettings | None = None) -> list[str]:
    """Warn (once) when the provider's span attribute count limit would strip retrieved documents.

    OpenInference writes up to 4 attributes per retrieved document; with the
    OTel default limit of 128 attributes, documents past about the 28th are
    dropped silently (the SDK evicts the *oldest* attributes first). Also runs
    :func:`check_environment`. Returns the warning keys that apply.
    """
    keys = check_environment()
    limits = getattr(tracer_provider, "_span_limits", None)
    return keys + check_limits(getattr(limits, "max_span_attributes", None), settings)


def check_limits(limit: int | None, settings: CollectorSettings | None = None) -> list[str]:
    """Warn (once) when a span attribute count ``limit`` is lower than ``max_contexts`` documents need."""
    settings = settings or CollectorSettings()
    keys: list[str] = []
    needed = settings.max_contexts * _ATTRS_PER_DOCUMENT + _ATTRS_OVERHEAD
    if limit is not None and limit < needed:
        keys.append("attribute_limit")
        warn_once(
            "attribute_limit",
            "span attribute count limit is lower than claimwatch needs for max_contexts retrieved documents; "
            "raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT or pass SpanLimits(max_span_attributes=...)",
            limit=limit,
            needed=needed,
            documents_that_fit=max(0, (limit - _ATTRS_OVERHEAD) // _ATTRS_PER_DOCUMENT),
        )
    return keys


class RagTraceProcessor(SpanProcessor):
    """Turns finished RAG traces into sampled, redacted ``RagTrace`` records on Kafka."""

    def __init__(
        self,
        settings: CollectorSettings | None = None,
        *,
        sink: Sink | None = None,
        clock: Callable[[], float] = time.monotonic,
        registry: CollectorRegistry | None = None,
        producer_factory: ProducerFactory | None = None,
        redact: Callable[[str], str] | None = None,
        span_queue_size: int | None = None,
    ) -> None:
        self.settings = settings or CollectorSettings()
        self.metrics: CollectorMetrics = get_metrics(registry)
        self._clock = clock
        self._span_queue_size = span_queue_size or max(1, self.settings.queue_size * 2)
        #: queued spans above which the background thread stops yielding the GIL (it is behind)
        self._yield_backlog = max(256, self._span_queue_size // 20)
        self.sink: Any = (
            sink
            if sink is not None
            else KafkaSink(self.settings, producer_factory=producer_factory, metrics=self.metrics)
        )
        self.pipeline = TracePipeline(self.settings, sink=self.sink, metrics=self.metrics, clock=clock, redact=redact)
        #: the provider's span limits are checked on the first span (from_env() or not, check_provider() or not)
        self._limits_checked = False
        self._drop_span_queue = self.metrics.dropped.labels(reason="span_queue_full")
        self._drop_shutdown = self.metrics.dropped.labels(reason="shutdown")
        self._reset_state()
        self._loop.start()
        check_environment()
        ref = weakref.ref(self)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=lambda: _after_fork(ref))

    @classmethod
    def from_env(cls, **kwargs: Any) -> "RagTraceProcessor":
        """Build from ``CLAIMWATCH_*`` environment variables (see ``CollectorSettings``)."""
        return cls(CollectorSettings(), **kwargs)

    # -- state -------------------------------------------------------------
    def _reset_state(self) -> None:
        self._spans: collections.deque[ReadableSpan] = collections.deque()
        self.pipeline.reset()
        self._flush_requests: collections.deque[threading.Event] = collections.deque()
        self._closed = False
        self._loop = BackgroundLoop(
            "claimwatch-collector",
            self._step,
            interval_s=_IDLE_WAIT_S,
            on_error=self._internal_error,
            error_pause_s=_IDLE_WAIT_S,
        )
        self._last_gauges = 0.0
        self._slice_started = 0.0
        #: drops on app threads are only counted there (O(1)); the background thread logs them, once a minute
        self._ratelog = RateLimitedLog(logger=__name__)
        self._span_queue_drops = 0
        self._span_queue_drops_logged = 0

    @property
    def _assembler(self) -> TraceAssembler:
        """The pipeline's assembler (kept for tests and introspection)."""
        return self.pipeline.assembler

    def _after_fork_in_child(self) -> None:
        """Fork handler (child side): new queue, assembler, thread and producer; parent's data dropped."""
        self._loop.stop(timeout_s=1.0)  # in a real child the old thread is gone; this matters when called directly
        self._reset_state()
        reset = getattr(self.sink, "reset_after_fork", None)
        if callable(reset):
            reset()
        self._loop.start()

    def log_processor(self) -> Any:
        """The companion ``LogRecordProcessor`` for OTel GenAI content sent as log events (``event_only``).

        ``logger_provider.add_log_record_processor(processor.log_processor())``; see
        :mod:`collector.genai_events`.
        """
        from collector.genai_events import RagLogProcessor

        return RagLogProcessor(self)

    # -- SpanProcessor API (app threads) -----------------------------------
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        """The first span's limits are checked once (the provider's attribute count limit); never raises."""
        if self._limits_checked:
            return
        self._limits_checked = True
        try:
            check_limits(getattr(getattr(span, "_limits", None), "max_span_attributes", None), self.settings)
        except Exception:  # pragma: no cover - a check must never break the app
            pass

    def on_end(self, span: ReadableSpan) -> None:
        """O(1): append the finished span to the bounded queue; never raises."""
        try:
            if self._closed:  # no background thread any more: logged here, at most once a minute
                self._drop_shutdown.inc()
                self._ratelog.warn("dropped_shutdown", "collector_dropped", reason="shutdown", hint=_SHUTDOWN_HINT)
                return
            spans = self._spans
            if len(spans) >= self._span_queue_size:
                self._drop_span_queue.inc()
                self._span_queue_drops += 1
                return
            spans.append(span)
        except Exception:  # pragma: no cover - must never reach the app
            try:
                self.metrics.drop("internal")
            except Exception:
                pass

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Emit every trace whose root has ended (no late-span wait) and deliver it, within the timeout."""
        deadline = time.monotonic() + max(0, timeout_millis) / 1000.0
        if not self._loop.alive or self._loop.in_loop():
            return self._sink_flush(deadline)
        done = threading.Event()
        self._flush_requests.append(done)
        self._loop.wake()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            return False
        return self._sink_flush(deadline)

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Deliver what is buffered (within ``flush_timeout_s``), stop the thread, close the sink."""
        if self._closed:
            return
        timeout_s = self.settings.flush_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        self.force_flush(int(timeout_s * 1000))
        self._closed = True
        self._loop.stop(timeout_s=max(0.05, min(2.0, deadline - time.monotonic())))
        incomplete = self.pipeline.drop_incomplete()
        self.metrics.drop("incomplete_at_shutdown", incomplete)
        self.metrics.drop("shutdown", len(self._spans))
        self._spans.clear()
        try:
            self.sink.shutdown(max(0.0, deadline - time.monotonic()))
        except Exception as exc:  # pragma: no cover - best effort
            log.warning("collector_sink_shutdown_failed", error=type(exc).__name__)

    def _sink_flush(self, deadline: float) -> bool:
        try:
            return bool(self.sink.force_flush(max(0.0, deadline - time.monotonic())))
        except Exception as exc:
            log.warning("collector_flush_failed", error=type(exc).__name__)
            return False

    # -- background thread -------------------------------------------------
    def _internal_error(self, exc: Exception) -> None:
        self.metrics.drop("internal")
        log.warning("collector_internal_error", error=type(exc).__name__, detail=str(exc)[:200])

    def _step(self) -> float | None:
        """Take the queued spans, emit complete traces, answer flush requests; 0 while more work is queued."""
        flushes = []
        while self._flush_requests:
            flushes.append(self._flush_requests.popleft())
        handled = self._drain_spans()
        if self.yield_after_s > 0:
            self.pipeline.pop_complete(flush=bool(flushes), pause=self._maybe_yield, pause_every=1)
        else:
            self.pipeline.pop_complete(flush=bool(flushes))
        for event in flushes:
            event.set()
        self._log_span_queue_drops()
        now = time.monotonic()
        if now - self._last_gauges >= _GAUGE_EVERY_S:
            self._last_gauges = now
            self.metrics.queue_depth.labels(queue="span").set(len(self._spans))
            self.metrics.buffered_traces.set(len(self.pipeline))
        return 0.0 if handled or self._spans or self._flush_requests else None

    def _log_span_queue_drops(self) -> None:
        """Log the spans the app threads dropped on a full queue (counted there), at most once a minute."""
        dropped = self._span_queue_drops
        if dropped != self._span_queue_drops_logged and self._ratelog.warn(
            "dropped_span_queue_full",
            "collector_dropped",
            reason="span_queue_full",
            amount=dropped - self._span_queue_drops_logged,
            hint=_SPAN_QUEUE_HINT,
        ):
            self._span_queue_drops_logged = dropped

    #: longest stretch (seconds) the background thread works before it yields the GIL; 0 turns the
    #: cooperative yield off (the benchmark's "before" variant)
    yield_after_s: float = _SLICE_S

    def _maybe_yield(self) -> None:
        """Yield the GIL if this thread has held it for ``yield_after_s`` since its last yield.

        CPython only forces a GIL hand-over every ``sys.getswitchinterval()`` (5 ms),
        so during a burst the app thread could wait that long for this thread.
        Only while the thread keeps up: with more than ``_yield_backlog`` spans
        queued (an overload burst) it stops yielding and takes its full GIL share
        again, so it does not fall further behind and drop spans.
        ``time.sleep(0)`` releases the GIL and signals a waiting thread, which in
        practice takes it (measured: whole-request p99 of the app 3-5x lower in
        ``benchmarks.app_overhead``). When nobody waits it costs one syscall
        (~1 us) per slice, so the thread's throughput does not change measurably.
        """
        now = time.perf_counter()
        if now - self._slice_started >= self.yield_after_s:
            self._slice_started = now
            if len(self._spans) <= self._yield_backlog:
                _pause()
                self._slice_started = time.perf_counter()

    def _drain_spans(self, limit: int = 1_000) -> int:
        n = 0
        spans = self._spans
        add = self.pipeline.add_span
        cooperative = self.yield_after_s > 0
        self._slice_started = time.perf_counter()
        while spans and n < limit:
            add(spans.popleft())
            n += 1
            if cooperative:
                self._maybe_yield()
        if n:
            self.metrics.spans.inc(n)
        return n


def _after_fork(ref: "weakref.ReferenceType[RagTraceProcessor]") -> None:
    proc = ref()
    if proc is not None and not proc._closed:
        proc._after_fork_in_child()

"""Per-trace buffers: collect a trace's span facts until it is complete.

A trace is *complete* when its local root span (no parent, or a remote parent)
has ended and ``late_span_wait_s`` has passed, so children that end a little
after the root (async callbacks, streaming) still make it in. Spans that arrive
for a trace already emitted are dropped as ``late_span``.

Memory is bounded three ways, each counted through ``on_drop(reason, n)``:

- ``trace_ttl_s``: a trace whose root never ends (orphans, a crashed request)
  is evicted ``ttl_evicted`` once no span of it has arrived for that long (an
  idle time, not an age: an agent turn of many tool calls and slow model steps
  may run for minutes while its spans keep arriving);
- ``max_traces``: a new trace beyond the bound evicts the least recently active ``buffer_full``;
- ``max_spans_per_trace``: further non-root spans are dropped ``too_many_spans``.

Only :class:`~collector.conventions.SpanFacts` are kept (never whole spans).
Not thread-safe: one background thread owns an assembler.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable

from collector.conventions import SpanFacts

Clock = Callable[[], float]
DropCounter = Callable[[str, int], None]


@dataclass(slots=True)
class _Buffer:
    last_seen: float
    facts: list[SpanFacts] = field(default_factory=list)
    root_ended_at: float | None = None


@dataclass(slots=True)
class CompletedTrace:
    """A trace ready for record building."""

    trace_id: int
    facts: list[SpanFacts]


class TraceAssembler:
    """Buffers span facts per trace id and hands out complete traces."""

    def __init__(
        self,
        *,
        late_span_wait_s: float = 0.5,
        trace_ttl_s: float = 120.0,
        max_traces: int = 2_000,
        max_spans_per_trace: int = 512,
        clock: Clock = time.monotonic,
        on_drop: DropCounter | None = None,
    ) -> None:
        self.late_span_wait_s = late_span_wait_s
        self.trace_ttl_s = trace_ttl_s
        self.max_traces = max(1, max_traces)
        self.max_spans_per_trace = max(1, max_spans_per_trace)
        self._clock = clock
        self._on_drop = on_drop or (lambda _reason, _n: None)
        self._buffers: "OrderedDict[int, _Buffer]" = OrderedDict()  # least recently active first
        self._ready: "OrderedDict[int, float]" = OrderedDict()  # trace id -> root end time
        self._emitted: "OrderedDict[int, float]" = OrderedDict()  # recently emitted, for late spans
        self._emitted_max = 4 * self.max_traces

    def __len__(self) -> int:
        return len(self._buffers)

    def __contains__(self, trace_id: object) -> bool:
        """Whether ``trace_id`` is being buffered (not yet emitted or evicted)."""
        return trace_id in self._buffers

    def add(self, trace_id: int, facts: SpanFacts) -> None:
        """Add one span's facts to its trace buffer."""
        now = self._clock()
        if trace_id in self._emitted:
            self._on_drop("late_span", 1)
            return
        buf = self._buffers.get(trace_id)
        if buf is None:
            if len(self._buffers) >= self.max_traces:
                old_id, _ = self._buffers.popitem(last=False)
                self._ready.pop(old_id, None)
                self._on_drop("buffer_full", 1)
            buf = _Buffer(last_seen=now)
            self._buffers[trace_id] = buf
        else:
            buf.last_seen = now
            self._buffers.move_to_end(trace_id)
        if len(buf.facts) >= self.max_spans_per_trace and not facts.is_root:
            self._on_drop("too_many_spans", 1)
            return
        buf.facts.append(facts)
        if facts.is_root and buf.root_ended_at is None:
            buf.root_ended_at = now
            self._ready[trace_id] = now

    def pop_complete(self, *, flush: bool = False) -> list[CompletedTrace]:
        """Traces whose root ended ``late_span_wait_s`` ago (or at all, when ``flush``); evicts expired orphans."""
        now = self._clock()
        out: list[CompletedTrace] = []
        while self._ready:
            trace_id, ended = next(iter(self._ready.items()))
            if not flush and now - ended < self.late_span_wait_s:
                break  # ordered by root end time: the rest are younger
            self._ready.popitem(last=False)
            buf = self._buffers.pop(trace_id, None)
            if buf is None:
                continue
            self._remember(trace_id, now)
            out.append(CompletedTrace(trace_id, buf.facts))
        self._evict_expired(now)
        return out

    def drop_incomplete(self) -> int:
        """Forget every trace whose root has not ended (shutdown); returns how many."""
        n = len(self._buffers)
        self._buffers.clear()
        self._ready.clear()
        return n

    def forget_all(self) -> int:
        """Forget every trace, the emitted ones too (their spans are about to be read again); returns the open ones."""
        self._emitted.clear()
        return self.drop_incomplete()

    def _remember(self, trace_id: int, now: float) -> None:
        self._emitted[trace_id] = now
        while len(self._emitted) > self._emitted_max:
            self._emitted.popitem(last=False)

    def _evict_expired(self, now: float) -> None:
        while self._buffers:
            trace_id, buf = next(iter(self._buffers.items()))
            if now - buf.last_seen < self.trace_ttl_s:
                break
            if buf.root_ended_at is not None:
                break  # complete, waiting out late spans: emitted by pop_complete
            self._buffers.popitem(last=False)
            self._on_drop("ttl_evicted", 1)
        # forget emitted ids after a TTL: a span that late is an orphan anyway
        while self._emitted:
            _tid, at = next(iter(self._emitted.items()))
            if now - at < self.trace_ttl_s:
                break
            self._emitted.popitem(last=False)

"""Per-trace buffering: completion after the late-span wait, late spans, TTL and size eviction."""

from __future__ import annotations

from collections import Counter

from collector.assembler import TraceAssembler
from collector.conventions import SpanFacts


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def facts(span_id: int, parent: int | None) -> SpanFacts:
    return SpanFacts(
        span_id=span_id, parent_id=parent, is_root=parent is None, name=f"s{span_id}", start_ns=0, end_ns=0
    )


def make(**kw):
    clock = FakeClock()
    drops: Counter[str] = Counter()
    asm = TraceAssembler(clock=clock, on_drop=lambda r, n: drops.update({r: n}), **kw)
    return asm, clock, drops


def test_trace_completes_after_late_span_wait_and_keeps_late_children():
    """A trace is emitted only after the wait; a child ending just after the root is included."""
    asm, clock, drops = make(late_span_wait_s=0.5)
    asm.add(1, facts(11, 10))
    asm.add(1, facts(10, None))
    assert asm.pop_complete() == []
    clock.now += 0.2
    asm.add(1, facts(12, 10))
    assert asm.pop_complete() == []
    clock.now += 0.4
    done = asm.pop_complete()
    assert [c.trace_id for c in done] == [1]
    assert {f.span_id for f in done[0].facts} == {10, 11, 12}
    assert len(asm) == 0 and not drops


def test_span_after_emission_is_counted_late():
    """A span for a trace already emitted is dropped as late_span."""
    asm, clock, drops = make(late_span_wait_s=0.1)
    asm.add(7, facts(1, None))
    clock.now += 1
    assert len(asm.pop_complete()) == 1
    asm.add(7, facts(2, 1))
    assert drops["late_span"] == 1
    assert len(asm) == 0


def test_flush_emits_root_ended_traces_immediately_and_keeps_open_ones():
    """flush=True skips the late-span wait but never emits a trace whose root has not ended."""
    asm, clock, _ = make(late_span_wait_s=60)
    asm.add(1, facts(1, None))
    asm.add(2, facts(5, 4))
    assert [c.trace_id for c in asm.pop_complete(flush=True)] == [1]
    assert len(asm) == 1
    assert asm.drop_incomplete() == 1


def test_orphan_evicted_by_ttl():
    """A trace whose root never ends is evicted after trace_ttl_s and counted."""
    asm, clock, drops = make(trace_ttl_s=10)
    asm.add(3, facts(2, 1))
    clock.now += 9
    asm.pop_complete()
    assert len(asm) == 1
    clock.now += 2
    assert asm.pop_complete() == []
    assert len(asm) == 0 and drops["ttl_evicted"] == 1


def test_long_running_trace_is_kept_while_its_spans_keep_arriving():
    """The TTL is idle time: an agent turn running past it, spans still arriving, is complete and whole at the end."""
    asm, clock, drops = make(trace_ttl_s=10, late_span_wait_s=0)
    for span_id in range(2, 12):  # a model step or tool call every 8 s: 80 s in all
        asm.add(5, facts(span_id, 1))
        clock.now += 8
        asm.pop_complete()
    asm.add(5, facts(1, None))
    [done] = asm.pop_complete()
    assert len(done.facts) == 11 and not drops


def test_buffer_full_evicts_the_least_recently_active_trace():
    """At the trace bound the trace idle longest goes, not an old one still receiving spans."""
    asm, clock, drops = make(max_traces=2)
    asm.add(1, facts(2, 1))
    clock.now += 1
    asm.add(2, facts(2, 1))
    clock.now += 1
    asm.add(1, facts(3, 1))  # trace 1 is active again
    asm.add(3, facts(2, 1))
    assert 1 in asm and 2 not in asm and 3 in asm and drops["buffer_full"] == 1


def test_oldest_trace_evicted_when_buffer_full():
    """Beyond max_traces the oldest buffered trace is evicted and counted buffer_full."""
    asm, clock, drops = make(max_traces=3, late_span_wait_s=0)
    for tid in range(1, 5):
        asm.add(tid, facts(tid * 10 + 1, tid * 10))
    assert drops["buffer_full"] == 1 and len(asm) == 3
    asm.add(1, facts(10, None))  # trace 1 was evicted: starts a new buffer (and evicts 2)
    assert drops["buffer_full"] == 2
    assert [c.trace_id for c in asm.pop_complete()] == [1]


def test_too_many_spans_dropped_but_root_still_completes():
    """Spans past max_spans_per_trace are dropped; the root is always accepted so the trace completes."""
    asm, clock, drops = make(max_spans_per_trace=2, late_span_wait_s=0)
    for sid in range(2, 6):
        asm.add(9, facts(sid, 1))
    asm.add(9, facts(1, None))
    assert drops["too_many_spans"] == 2
    (done,) = asm.pop_complete()
    assert len(done.facts) == 3

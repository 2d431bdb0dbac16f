"""Hostile spans through ``RagTraceProcessor``: never raises into the app; each trace is a bounded record or a counted drop.

Spans are built as ``ReadableSpan`` objects directly, so attribute values the
SDK's setters would filter (bytes, nested dicts, None, mixed lists) reach the
processor the way a buggy exporter bridge or instrumentation could deliver them.
The sink is the real ``KafkaSink`` with an in-memory producer, so serialisation
failures are counted exactly as in production.
"""

from __future__ import annotations

import itertools
import json
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.trace import SpanContext, TraceFlags
from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from collector.sink import KafkaSink
from contract.record import RagTrace
from tests.fakes.kafka import MemoryProducer

LIMITS = dict(max_contexts=8, max_text_chars=2_000, max_record_bytes=20_000)
_ids = itertools.count(1)


def make_processor() -> tuple[RagTraceProcessor, MemoryProducer, CollectorRegistry]:
    """A processor with small record limits, a real KafkaSink and an in-memory producer."""
    producer = MemoryProducer()
    registry = CollectorRegistry()
    s = CollectorSettings(late_span_wait_s=0.0, **LIMITS)
    from collector.metrics import get_metrics

    sink = KafkaSink(s, producer_factory=lambda **kw: producer, metrics=get_metrics(registry))
    return RagTraceProcessor(s, sink=sink, registry=registry), producer, registry


def span(name: str, trace_id: int, attrs: dict, parent: int | None = None) -> ReadableSpan:
    """A finished ReadableSpan with arbitrary (unchecked) attribute values."""
    sid = next(_ids)
    ctx = SpanContext(trace_id, sid, is_remote=False, trace_flags=TraceFlags(1))
    par = SpanContext(trace_id, parent, is_remote=False) if parent else None
    now = time.time_ns()
    return ReadableSpan(name, context=ctx, parent=par, attributes=attrs, start_time=now, end_time=now + 1)


def rag_spans(
    question, answer, docs, extra_root: dict | None = None, extra_ret: dict | None = None
) -> list[ReadableSpan]:
    """Retriever child + root CHAIN span (root last, as the SDK ends them)."""
    tid = next(_ids) << 64 | next(_ids)
    root_id = next(_ids)
    ret = {"openinference.span.kind": "RETRIEVER", "input.value": question, **(extra_ret or {})}
    for i, d in enumerate(docs):
        ret[f"retrieval.documents.{i}.document.content"] = d
        ret[f"retrieval.documents.{i}.document.metadata"] = d
        ret[f"retrieval.documents.{i}.document.score"] = d
    child = span("retriever", tid, ret, parent=root_id)
    root_attrs = {
        "openinference.span.kind": "CHAIN",
        "input.value": question,
        "output.value": answer,
        "metadata": answer,
        "claimwatch.route": question,
        **(extra_root or {}),
    }
    ctx = SpanContext(tid, root_id, is_remote=False, trace_flags=TraceFlags(1))
    now = time.time_ns()
    root = ReadableSpan(
        "RunnableSequence", context=ctx, parent=None, attributes=root_attrs, start_time=now, end_time=now + 1
    )
    return [child, root]


def counted(registry: CollectorRegistry) -> float:
    """Traces that ended without a record + every drop, from the collector's own metrics."""
    total = 0.0
    for fam in registry.collect():
        for s in fam.samples:
            if s.name == "claimwatch_collector_dropped_total" or (
                s.name == "claimwatch_collector_traces_total" and s.labels.get("outcome") in ("not_rag", "sampled_out")
            ):
                total += s.value
    return total


def check_bounded(value: bytes) -> RagTrace:
    """A produced value is a decodable RagTrace within the configured limits."""
    assert len(value) <= LIMITS["max_record_bytes"] + 2_000
    rec = RagTrace.from_json_bytes(value)
    assert len(rec.contexts) <= LIMITS["max_contexts"]
    assert len(rec.answer) <= LIMITS["max_text_chars"]
    assert all(len(c.content) <= LIMITS["max_text_chars"] for c in rec.contexts)
    return rec


_any_char = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=())
_strings = st.one_of(
    st.text(_any_char, max_size=40),
    st.sampled_from(
        [
            "\ud800",
            "a\udfffb",
            "</context>",
            "",
            " ",
            "null",
            "{}",
            "[]",
            '{"content": 5}',
            "x" * 50_000,
            "[" * 5_000 + "]" * 5_000,
            json.dumps({"a": [{"b": [{"c": [1, {"d": None}]}]}]}),
        ]
    ),
)
_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _strings, st.binary(max_size=20))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.tuples(inner, inner), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)

PROC, PRODUCER, REGISTRY = make_processor()


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(question=_values, answer=_values, docs=st.lists(_values, max_size=12))
def test_any_attribute_values_give_a_bounded_record_or_a_counted_drop(question, answer, docs):
    """Wrong types, surrogates, bytes, huge and nested values: on_end never raises; record or counted drop per trace."""
    before_sent, before_counted = len(PRODUCER.values), counted(REGISTRY)
    for sp in rag_spans(question, answer, docs):
        t0 = time.perf_counter()
        PROC.on_end(sp)
        assert time.perf_counter() - t0 < 0.05
    assert PROC.force_flush(5_000)
    new = PRODUCER.values[before_sent:]
    for value in new:
        check_bounded(value)
    assert len(new) + (counted(REGISTRY) - before_counted) >= 1, "a trace vanished without a record or a counted drop"
    assert PROC._loop.alive


def test_deeply_nested_json_metadata_is_treated_as_text():
    """A 50k-deep JSON array in input/output/metadata neither kills the trace nor the thread: the record goes out."""
    proc, producer, reg = make_processor()
    deep = "[" * 50_000 + "]" * 50_000
    for sp in rag_spans(deep, "The answer is 4.", [deep, "Two plus two is 4."], extra_root={"metadata": deep}):
        proc.on_end(sp)
    assert proc.force_flush(5_000)
    (value,) = producer.values
    rec = check_bounded(value)
    assert rec.answer == "The answer is 4."
    proc.shutdown()


def test_thousands_of_chunks_are_cut_to_max_contexts_in_retrieval_order():
    """5,000 retrieved documents become max_contexts chunks (best-ranked first) and the cut is recorded."""
    proc, producer, reg = make_processor()
    docs = [f"chunk {i}" for i in range(5_000)]
    for sp in rag_spans("q?", "a.", docs):
        proc.on_end(sp)
    assert proc.force_flush(5_000)
    rec = check_bounded(producer.values[0])
    assert [c.content for c in rec.contexts] == docs[: LIMITS["max_contexts"]]
    assert rec.truncation is not None and rec.truncation.contexts_dropped == 5_000 - LIMITS["max_contexts"]
    proc.shutdown()


def _sdk_trace(tp: TracerProvider, n_docs: int) -> None:
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span("RunnableSequence") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", "q?")
        root.set_attribute("output.value", "a.")
        with tracer.start_as_current_span("retriever") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("input.value", "q?")
            for i in range(n_docs):
                r.set_attribute(f"retrieval.documents.{i}.document.content", f"chunk {i}")


def test_sdk_attribute_limit_overflow_is_counted_and_a_raised_limit_gives_a_bounded_record():
    """Default 128-attribute limit + 3,000 docs: the SDK evicts the span kind, still a record flagged incomplete; raised limit: bounded record."""
    import logging

    logging.getLogger("opentelemetry.attributes").setLevel(logging.ERROR)  # the SDK warns once per evicted attribute
    proc, producer, reg = make_processor()
    tp = TracerProvider()
    tp.add_span_processor(proc)
    _sdk_trace(tp, 3_000)
    assert proc.force_flush(5_000)
    [value] = producer.values
    rec = check_bounded(value)
    assert rec.attributes["incomplete"] == "attribute_limit" and rec.attributes["dropped_attributes"] > 0
    assert reg.get_sample_value("claimwatch_collector_traces_total", {"outcome": "incomplete"}) == 1
    proc.shutdown()
    proc, producer, reg = make_processor()
    tp = TracerProvider(span_limits=SpanLimits(max_span_attributes=4_000))
    tp.add_span_processor(proc)
    _sdk_trace(tp, 3_000)
    assert proc.force_flush(5_000)
    rec = check_bounded(producer.values[0])
    assert (
        len(rec.contexts) == LIMITS["max_contexts"]
        and rec.truncation.contexts_dropped == 3_000 - LIMITS["max_contexts"]
    )
    proc.shutdown()


def test_unserialisable_text_is_a_counted_drop_not_an_exception():
    """A lone surrogate in the answer cannot be encoded: counted as serialise_error, later traces still flow."""
    proc, producer, reg = make_processor()
    for sp in rag_spans("q?", "bad \ud800 answer.", ["ctx"]) + rag_spans("q2?", "good answer.", ["ctx"]):
        proc.on_end(sp)
    assert proc.force_flush(5_000)
    assert reg.get_sample_value("claimwatch_collector_dropped_total", {"reason": "serialise_error"}) == 1
    assert [RagTrace.from_json_bytes(v).answer for v in producer.values] == ["good answer."]
    proc.shutdown()

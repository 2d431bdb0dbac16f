"""Collector kafkaexporter topic -> bridge -> RagTrace records, on the real broker."""

from __future__ import annotations

import threading
import time

import pytest
from kafka import KafkaConsumer, TopicPartition
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings
from collector.otlp_bridge import BridgeSettings, OtlpBridge
from contract.kafka import KafkaConnection
from contract.record import RagTrace
from tests.fakes.kafka import ScriptedConsumer
from tests.integration.kafka_helpers import create_topic, drain, produce, wait_until

pytestmark = pytest.mark.integration

QA = [
    ("How long do refunds take?", "Refunds take 5 days.", ["Refunds are paid within 5 days.", "Fees are 3 euros."]),
    ("Can I appeal?", "You can appeal within 30 days.", ["Appeals are open for 30 days."]),
    (
        "Is there a fee?",
        "There is a 3 euro fee.",
        ["A 3 euro fee applies.", "Members pay nothing.", "Fees go up in May."],
    ),
]


def rag_trace_spans(question: str, answer: str, chunks: list[str]):
    """Finished SDK spans of one OpenInference RAG request (root last, as they end)."""
    exp = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "java-rag"}))
    tp.add_span_processor(SimpleSpanProcessor(exp))
    tracer = tp.get_tracer("t")
    with tracer.start_as_current_span(
        "rag", attributes={"openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer}
    ):
        attrs = {"openinference.span.kind": "RETRIEVER", "input.value": question}
        for i, chunk in enumerate(chunks):
            attrs[f"retrieval.documents.{i}.document.content"] = chunk
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        with tracer.start_as_current_span(
            "llm", attributes={"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": answer}
        ):
            pass
    return list(exp.get_finished_spans())


def one_span_messages(spans) -> list[tuple[bytes, bytes]]:
    """Each span as its own ExportTraceServiceRequest message keyed by trace id (partition_traces_by_id)."""
    out = []
    for span in spans:
        key = format(span.context.trace_id, "032x").encode()
        out.append((key, encode_spans([span]).SerializeToString()))
    return out


class ListSink:
    """A sink that keeps what it is given (the bridge's logic without a producer)."""

    def __init__(self):
        self.records = []

    def submit(self, record):
        self.records.append(record)
        return True

    def force_flush(self, timeout_s):
        return True

    def shutdown(self, timeout_s):
        return True


def settings_for(bootstrap: str, source: str, group: str) -> tuple[BridgeSettings, CollectorSettings]:
    bs = BridgeSettings(
        source_topic=source, group_id=group, commit_interval_s=0.2, poll_timeout_ms=100, max_poll_interval_ms=10_000
    )
    cs = CollectorSettings(
        kafka=KafkaConnection(bootstrap_servers=bootstrap), topic=source + ".traces", late_span_wait_s=0.05, linger_ms=5
    )
    return bs, cs


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    try:
        return {p: c.committed(TopicPartition(topic, p)) for p in range(partitions)}
    finally:
        c.close()


def test_traces_split_across_messages_come_out_as_rag_records(kafka_bootstrap, topic_name):
    """Three traces, one span per Kafka message, interleaved over 2 partitions, plus garbage -> 3 records; all committed.

    Partitions are pinned (traces 0 and 2 on 0; trace 1 and the junk on 1): keyed by random trace ids, all four
    keys hashed to one partition in 1 run of 8, leaving the other with no message and so no committed offset.
    """
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    per_trace = [one_span_messages(rag_trace_spans(*qa)) for qa in QA]
    interleaved = [m for group in zip(*per_trace) for m in group]
    placed = [i % 3 % 2 for i in range(len(interleaved))]  # message i belongs to trace i % 3
    produce(kafka_bootstrap, topic_name, interleaved + [(b"junk", b"\xff\xff not protobuf")], placed + [1])
    bs, cs = settings_for(kafka_bootstrap, topic_name, topic_name + "-bridge")
    registry = CollectorRegistry()
    bridge = OtlpBridge(bs, cs, registry=registry)
    handled = bridge.run(max_messages=len(interleaved) + 1, idle_timeout_s=10.0)
    assert handled == len(interleaved) + 1
    records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, cs.topic, 3, 20)]
    by_q = {r.question: r for r in records}
    assert set(by_q) == {q for q, _, _ in QA}
    for q, a, chunks in QA:
        assert by_q[q].answer == a and [c.content for c in by_q[q].contexts] == chunks
        assert by_q[q].attributes["spans"] == 3 and by_q[q].attributes["service.name"] == "java-rag"
    # every message committed, on both partitions: 6 spans on 0; 3 spans + the junk on 1
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 2) == {0: 6, 1: 4}
    assert bridge.otlp_metrics.requests.labels(source="kafka", code="decode_error")._value.get() == 1
    assert bridge.otlp_metrics.spans.labels(source="kafka", outcome="accepted")._value.get() == 9


def test_stopping_commits_every_partition_it_consumed(kafka_bootstrap, topic_name):
    """With no periodic commit due, stopping alone commits each consumed partition; one with no message has none."""
    create_topic(kafka_bootstrap, topic_name, partitions=3)
    messages = [m for qa in QA for m in one_span_messages(rag_trace_spans(*qa))]  # trace k on partition k % 2
    produce(kafka_bootstrap, topic_name, messages, [i // 3 % 2 for i in range(len(messages))])
    bs, cs = settings_for(kafka_bootstrap, topic_name, topic_name + "-bridge")
    bs.commit_interval_s = 3600.0  # only the stop path commits
    bridge = OtlpBridge(bs, cs, registry=CollectorRegistry())
    assert bridge.run(max_messages=len(messages), idle_timeout_s=10.0) == len(messages)
    assert len(drain(kafka_bootstrap, cs.topic, 3, 20)) == 3
    # partition 2 never held a message: nothing to commit there (a new owner starts from the earliest offset)
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 3) == {0: 6, 1: 3, 2: None}


def test_open_trace_holds_the_offset_and_the_next_run_completes_it(kafka_bootstrap, topic_name):
    """A trace whose root has not arrived keeps its message uncommitted; a restarted bridge rebuilds it whole."""
    create_topic(kafka_bootstrap, topic_name, partitions=1)
    q, a, chunks = QA[2]
    messages = one_span_messages(rag_trace_spans(q, a, chunks))  # retrieve, llm, rag (root last)
    done = one_span_messages(rag_trace_spans(*QA[0]))
    produce(kafka_bootstrap, topic_name, messages[:2] + done)  # offsets 0,1 open trace; 2..4 a full trace
    bs, cs = settings_for(kafka_bootstrap, topic_name, topic_name + "-bridge")
    assert OtlpBridge(bs, cs, registry=CollectorRegistry()).run(max_messages=5, idle_timeout_s=10.0) == 5
    first = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, cs.topic, 1, 10)]
    assert [r.question for r in first] == [QA[0][0]]
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 1) == {0: 0}  # held by the open trace

    produce(kafka_bootstrap, topic_name, messages[2:])  # the root arrives
    # the restarted bridge re-reads from the held offset 0: 6 messages (the done trace again, at-least-once)
    assert OtlpBridge(bs, cs, registry=CollectorRegistry()).run(max_messages=6, idle_timeout_s=10.0) == 6
    records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, cs.topic, 3, 10)]
    rebuilt = [r for r in records if r.question == q]
    assert len(rebuilt) == 1 and rebuilt[0].answer == a and [c.content for c in rebuilt[0].contexts] == chunks
    assert rebuilt[0].attributes["spans"] == 3
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 1) == {0: 6}


def test_a_multi_trace_batch_message_is_handled():
    """One message carrying several traces (exporter without partition_traces_by_id) feeds each trace."""
    spans = [s for qa in QA for s in rag_trace_spans(*qa)]
    request = encode_spans(spans)
    assert isinstance(request, ExportTraceServiceRequest)

    sink = ListSink()
    bridge = OtlpBridge(
        BridgeSettings(), CollectorSettings(late_span_wait_s=0.0), sink=sink, registry=CollectorRegistry()
    )
    trace_ids = bridge._handle(request.SerializeToString())
    assert len(trace_ids) == 3
    bridge.pipeline.pop_complete(flush=True)
    assert sorted(r.question for r in sink.records) == sorted(q for q, _, _ in QA)


def test_spans_past_the_per_message_cap_are_counted_not_converted():
    """A message with more spans than max_spans_per_message: the first ones feed traces, the rest are counted
    as rejected (too_many_spans), as the receiver does per request."""
    spans = [s for qa in QA for s in rag_trace_spans(*qa)]  # 3 traces x 3 spans
    registry = CollectorRegistry()

    bridge = OtlpBridge(
        BridgeSettings(max_spans_per_message=4),
        CollectorSettings(late_span_wait_s=0.0),
        sink=ListSink(),
        registry=registry,
    )
    bridge._handle(encode_spans(spans).SerializeToString())
    rejected = registry.get_sample_value(
        "claimwatch_collector_otlp_rejected_spans_total", {"source": "kafka", "reason": "too_many_spans"}
    )
    assert rejected == len(spans) - 4


def test_cli_registers_the_bridge_subcommand():
    """claimwatch.ingest_cli registers `bridge` with source topic, group, encoding flags and its handler."""
    import argparse

    from claimwatch.ingest_cli import add_bridge_cli, cmd_bridge

    parser = argparse.ArgumentParser()
    add_bridge_cli(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["bridge", "--source-topic", "spans", "--group", "g", "--encoding", "otlp_json"])
    assert (args.source_topic, args.group, args.encoding, args.func) == ("spans", "g", "otlp_json", cmd_bridge)


def test_full_sink_pauses_fetching_and_a_drained_sink_resumes_it():
    """While the sink queue is full the bridge pauses its partitions; once it drains, it resumes them."""
    from types import SimpleNamespace

    class Sink:
        def __init__(self):
            self.settings = SimpleNamespace(queue_size=2)
            self.queue_depth = 2

        def submit(self, record):
            return False

        def force_flush(self, timeout_s):
            return True

        def shutdown(self, timeout_s):
            return True

    consumer = ScriptedConsumer({TopicPartition("otlp_spans", 0), TopicPartition("otlp_spans", 1)})
    sink = Sink()
    bridge = OtlpBridge(
        BridgeSettings(), CollectorSettings(), consumer=consumer, sink=sink, registry=CollectorRegistry()
    )
    bridge.step()
    assert consumer.paused() == consumer.assigned
    sink.queue_depth = 0
    bridge.step()
    assert consumer.paused() == set()


def test_a_rebalance_commits_what_was_consumed(kafka_bootstrap, topic_name):
    """A second member joins: the revoke hook (on kafka-python's IO thread, where a blocking commit() raises)
    flushes on a helper thread and commits asynchronously, so the partitions change hands at the bridge's offsets."""
    create_topic(kafka_bootstrap, topic_name, partitions=2)
    messages = [m for qa in QA for m in one_span_messages(rag_trace_spans(*qa))]
    produce(kafka_bootstrap, topic_name, messages, [i // 3 % 2 for i in range(len(messages))])
    bs, cs = settings_for(kafka_bootstrap, topic_name, topic_name + "-bridge")
    bs.commit_interval_s = 3600.0  # only the rebalance commits
    bridge = OtlpBridge(bs, cs, sink=ListSink(), registry=CollectorRegistry())
    deadline = time.monotonic() + 30
    while bridge.messages < len(messages) and time.monotonic() < deadline:
        bridge.step()
    time.sleep(0.1)  # the late-span wait passes: every trace is complete
    bridge.step()
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 2) == {0: None, 1: None}
    other = KafkaConsumer(topic_name, bootstrap_servers=kafka_bootstrap, group_id=bs.group_id, enable_auto_commit=False)
    stop = threading.Event()
    polling = threading.Thread(target=lambda: [other.poll(timeout_ms=100) for _ in iter(stop.is_set, True)])
    polling.start()
    try:
        while not other.assignment() and time.monotonic() < deadline + 15:
            bridge.step()
    finally:
        stop.set()
        polling.join(5)
    assert other.assignment()
    other.close()
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 2) == {0: 6, 1: 3}
    bridge.close()


class FailFirstSends:
    """A real producer whose first ``n`` records are lost as after a broker outage (retriable, via the errback); keeps
    the keys it lost and how many records it handed to the real producer (every instance built is in ``made``)."""

    made: "list[FailFirstSends]" = []

    def __init__(self, n: int = 1, **config):
        from kafka import KafkaProducer

        self.real = KafkaProducer(**config)
        self.left = n
        self.lost: list[bytes] = []
        self.sent = 0
        FailFirstSends.made.append(self)

    def send(self, topic, key=None, value=None, headers=None):
        from kafka.errors import KafkaTimeoutError

        from tests.fakes.kafka import DoneFuture

        if self.left:
            self.left -= 1
            self.lost.append(key)
            return DoneFuture(KafkaTimeoutError("Batch for claimwatch.traces expired after retries"))
        self.sent += 1
        return self.real.send(topic, key=key, value=value, headers=headers)

    def flush(self, timeout=None):
        self.real.flush(timeout)

    def close(self, timeout=None):
        self.real.close(timeout)


def test_a_record_lost_to_a_retriable_produce_error_is_read_and_produced_again(kafka_bootstrap, topic_name):
    """The lost record's message is not committed past: the bridge rewinds to the last commit and every trace arrives.

    How many traces were delivered before the rewind (and so come twice) depends on whether the commit that saw the
    loss came before or after the other traces were emitted: the test counts what the producer sent, not a timing.
    The bridge runs until its commit reaches the end of the topic (not for an idle window: under CPU load the first
    fetch alone can outlast one).
    """
    from structlog.testing import capture_logs

    create_topic(kafka_bootstrap, topic_name, partitions=1)
    messages = [m for qa in QA for m in one_span_messages(rag_trace_spans(*qa))]
    produce(kafka_bootstrap, topic_name, messages)
    bs, cs = settings_for(kafka_bootstrap, topic_name, topic_name + "-bridge")
    registry = CollectorRegistry()
    FailFirstSends.made.clear()
    bridge = OtlpBridge(bs, cs, registry=registry, producer_factory=FailFirstSends)
    with capture_logs() as logs:
        running = threading.Thread(target=bridge.run, name="bridge", daemon=True)
        running.start()
        try:
            done = wait_until(
                lambda: committed(kafka_bootstrap, bs.group_id, topic_name, 1)[0] == len(messages), 90, 0.5
            )
        finally:
            bridge.stop()
            running.join(30)
    assert done and not running.is_alive()
    assert len(FailFirstSends.made) == 1  # one producer for the bridge's life (none built after its shutdown)
    producer = FailFirstSends.made[0]
    assert len(producer.lost) == 1
    # run() returned after the final flush: every record the real producer took is on the topic
    records = [RagTrace.from_json_bytes(m.value) for m in drain(kafka_bootstrap, cs.topic, producer.sent, 20)]
    assert len(records) == producer.sent and 3 <= producer.sent <= 5
    assert {r.question for r in records} == {q for q, _, _ in QA}  # every trace, the lost one produced again
    assert producer.lost[0] in {r.key for r in records}
    assert bridge.rewinds == 1
    assert registry.get_sample_value("claimwatch_collector_dropped_total", {"reason": "produce_error"}) == 1
    assert any(e["event"] == "bridge_rewound_after_produce_failure" for e in logs)
    assert committed(kafka_bootstrap, bs.group_id, topic_name, 1) == {0: len(messages)}


def test_a_message_with_invalid_utf8_in_one_span_keeps_its_other_traces():
    """A lone surrogate in one span (a JS string cut mid-emoji) is repaired and counted; the message's traces go on."""
    from tests.unit.test_receiver_hostile import rag_request, with_bad_utf8_span

    sink, registry = ListSink(), CollectorRegistry()
    bridge = OtlpBridge(BridgeSettings(), CollectorSettings(late_span_wait_s=0.0), sink=sink, registry=registry)
    trace_ids = bridge._handle(with_bad_utf8_span(rag_request(1, traces=2)))
    assert len(trace_ids) == 3  # the two RAG traces and the repaired span's own
    bridge.pipeline.pop_complete(flush=True)
    assert len(sink.records) == 2
    assert registry.get_sample_value("claimwatch_collector_otlp_repaired_strings_total", {"source": "kafka"}) == 1
    assert registry.get_sample_value("claimwatch_collector_otlp_requests_total", {"source": "kafka", "code": "ok"}) == 1

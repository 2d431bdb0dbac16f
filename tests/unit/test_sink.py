"""KafkaSink: non-blocking submit, lazy producer with retry, flush/shutdown delivery, counted drops."""

from __future__ import annotations

import threading
import time

from prometheus_client import CollectorRegistry

from collector.config import CollectorSettings
from collector.metrics import get_metrics
from collector.sink import KafkaSink, producer_config
from contract.kafka import KafkaConnection
from contract.record import RagTrace


class FakeFuture:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def add_callback(self, fn):
        if self.error is None:
            fn(None)
        return self

    def add_errback(self, fn):
        if self.error is not None:
            fn(self.error)
        return self


class FakeProducer:
    """Records sends; ``fail_with`` makes deliveries fail asynchronously."""

    def __init__(self, fail_with: Exception | None = None, **config) -> None:
        self.config = config
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.fail_with = fail_with
        self.flushed = 0
        self.closed = False

    def send(self, topic, key=None, value=None):
        self.sent.append((topic, key, value))
        return FakeFuture(self.fail_with)

    def flush(self, timeout=None):
        self.flushed += 1

    def close(self, timeout=None):
        self.closed = True


def rec(i: int) -> RagTrace:
    return RagTrace(trace_id=f"{i:032x}", question="q", answer=f"a{i}", contexts=["c"])


def value(registry, name, **labels):
    return registry.get_sample_value(name, labels) or 0.0


def make_sink(registry=None, **kw):
    registry = registry or CollectorRegistry()
    settings = kw.pop("settings", None) or CollectorSettings(topic="t1", queue_size=kw.pop("queue_size", 100))
    sink = KafkaSink(settings, metrics=get_metrics(registry), **kw)
    return sink, registry


def test_submit_then_flush_delivers_key_and_json_value():
    """Submitted records reach the producer keyed by trace id with RagTrace JSON as value."""
    producers: list[FakeProducer] = []
    sink, reg = make_sink(producer_factory=lambda **c: producers.append(FakeProducer(**c)) or producers[-1])
    assert all(sink.submit(rec(i)) for i in range(5))
    assert sink.force_flush(2.0)
    (p,) = producers
    assert [RagTrace.from_json_bytes(v).answer for _, _, v in p.sent] == [f"a{i}" for i in range(5)]
    assert p.sent[0][0] == "t1" and p.sent[0][1] == rec(0).key
    assert p.flushed >= 1
    assert value(reg, "claimwatch_collector_produce_latency_seconds_count") == 5
    sink.shutdown(1.0)
    assert p.closed


def test_queue_full_drops_without_blocking():
    """When the queue is full submit returns False at once and counts queue_full."""
    sink, reg = make_sink(queue_size=2, producer_factory=FakeProducer, start=False)
    t0 = time.perf_counter()
    results = [sink.submit(rec(i)) for i in range(5)]
    assert time.perf_counter() - t0 < 0.1
    assert results == [True, True, False, False, False]
    assert value(reg, "claimwatch_collector_dropped_total", reason="queue_full") == 3


def test_broker_down_at_start_retries_then_delivers():
    """A failing producer factory is retried with backoff; once it works the queued records are delivered."""
    attempts = []
    ready = threading.Event()

    def factory(**config):
        attempts.append(time.monotonic())
        if not ready.is_set():
            raise ConnectionError("NoBrokersAvailable")
        return FakeProducer(**config)

    sink, reg = make_sink(producer_factory=factory)
    assert sink.submit(rec(1))
    time.sleep(0.5)
    assert len(attempts) >= 2 and not sink.connected
    ready.set()
    assert sink.force_flush(12.0)
    assert sink.connected
    sink.shutdown(1.0)


def test_shutdown_delivers_queued_records():
    """Records queued before shutdown are sent and flushed within the timeout."""
    p = FakeProducer()
    sink, reg = make_sink(producer_factory=lambda **c: p)
    for i in range(50):
        sink.submit(rec(i))
    assert sink.shutdown(3.0)
    assert len(p.sent) == 50 and p.closed
    assert sink.submit(rec(99)) is False
    assert value(reg, "claimwatch_collector_dropped_total", reason="sink_shutdown") == 1


def test_shutdown_with_no_producer_counts_leftovers():
    """If the broker never came up, shutdown returns False within the timeout and counts what is left."""

    def factory(**config):
        raise ConnectionError("down")

    sink, reg = make_sink(producer_factory=factory)
    sink.submit(rec(1))
    sink.submit(rec(2))
    t0 = time.monotonic()
    assert sink.shutdown(0.3) is False
    assert time.monotonic() - t0 < 3.0
    assert value(reg, "claimwatch_collector_dropped_total", reason="sink_shutdown") == 2


def test_produce_errors_counted_by_reason():
    """Failed deliveries and send() exceptions are counted with the error class as reason."""

    class Boom(Exception):
        pass

    class Raising(FakeProducer):
        def send(self, topic, key=None, value=None):
            raise Boom("no")

    sink, reg = make_sink(producer_factory=lambda **c: FakeProducer(fail_with=TimeoutError("t")))
    sink.submit(rec(1))
    sink.force_flush(2.0)
    assert value(reg, "claimwatch_collector_produce_errors_total", reason="TimeoutError") == 1
    sink.shutdown(1.0)
    sink2, _ = make_sink(reg, producer_factory=Raising)
    sink2.submit(rec(2))
    sink2.force_flush(2.0)
    assert value(reg, "claimwatch_collector_produce_errors_total", reason="Boom") == 1
    assert value(reg, "claimwatch_collector_dropped_total", reason="produce_error") == 2
    sink2.shutdown(1.0)


def test_metadata_timeout_on_send_is_retried_not_dropped():
    """send() timing out on topic metadata offers the same record again; only the last failed offer is a drop."""
    from kafka.errors import KafkaTimeoutError

    class SlowMetadata(FakeProducer):
        def __init__(self, failures: int, **c):
            super().__init__(**c)
            self.failures = failures

        def send(self, topic, key=None, value=None):
            if self.failures > 0:
                self.failures -= 1
                raise KafkaTimeoutError("Failed to update metadata after 0.5 secs.")
            return super().send(topic, key=key, value=value)

    made: list[SlowMetadata] = []
    sink, reg = make_sink(producer_factory=lambda **c: made.append(SlowMetadata(2, **c)) or made[-1])
    sink.submit(rec(1))
    assert sink.force_flush(5.0)
    assert len(made[0].sent) == 1
    assert value(reg, "claimwatch_collector_dropped_total", reason="produce_error") == 0
    sink.shutdown(1.0)
    sink2, reg2 = make_sink(producer_factory=lambda **c: SlowMetadata(10, **c))
    sink2.submit(rec(2))
    assert sink2.force_flush(5.0)
    assert value(reg2, "claimwatch_collector_produce_errors_total", reason="KafkaTimeoutError") == 1
    assert value(reg2, "claimwatch_collector_dropped_total", reason="produce_error") == 1
    sink2.shutdown(1.0)


def test_producer_config_passes_tls_sasl_and_tuning():
    """Producer kwargs carry acks, compression, linger, retries, max_block_ms and SASL/TLS settings."""
    s = CollectorSettings(
        acks="all",
        linger_ms=7,
        kafka=KafkaConnection(
            bootstrap_servers="a:1,b:2",
            security_protocol="SASL_SSL",
            sasl_mechanism="PLAIN",
            sasl_plain_username="u",
            sasl_plain_password="pw",
            ssl_cafile="/ca.pem",
        ),
    )
    cfg = producer_config(s)
    assert cfg["bootstrap_servers"] == ["a:1", "b:2"]
    assert (cfg["acks"], cfg["linger_ms"], cfg["compression_type"]) == ("all", 7, "gzip")
    assert cfg["sasl_plain_password"] == "pw" and cfg["ssl_cafile"] == "/ca.pem"
    assert cfg["max_block_ms"] == s.max_block_ms and cfg["retries"] == s.retries
    assert producer_config(CollectorSettings(acks="1"))["acks"] == 1


def test_reset_after_fork_starts_fresh_queue_and_producer():
    """After a fork the child has an empty queue, no producer, and a new working thread."""
    made: list[FakeProducer] = []
    sink, _ = make_sink(producer_factory=lambda **c: made.append(FakeProducer()) or made[-1])
    sink.submit(rec(1))
    sink.force_flush(2.0)
    old_thread = sink._loop.thread
    sink.reset_after_fork()
    assert sink.queue_depth == 0 and sink._loop.thread is not old_thread and not old_thread.is_alive()
    sink.submit(rec(2))
    assert sink.force_flush(2.0)
    assert len(made) == 2 and not made[0].closed
    sink.shutdown(1.0)


def test_queue_byte_budget_bounds_memory_and_counts_drops():
    """With Kafka unreachable, records past queue_max_bytes are dropped as queue_bytes_full, not buffered."""
    from prometheus_client import CollectorRegistry

    from collector.config import CollectorSettings
    from collector.metrics import get_metrics
    from collector.sink import KafkaSink
    from contract.record import RagTrace

    def never(**_kw):
        raise OSError("broker down")

    settings = CollectorSettings(queue_size=1000, queue_max_bytes=50_000)
    reg = CollectorRegistry()
    sink = KafkaSink(settings, producer_factory=never, metrics=get_metrics(reg))
    try:
        big = "x" * 10_000
        accepted = sum(sink.submit(RagTrace(trace_id=f"{i:032x}", answer=big)) for i in range(20))
        assert accepted == 4  # 4 x ~10 KB fit in 50 KB
        assert reg.get_sample_value("claimwatch_collector_dropped_total", {"reason": "queue_bytes_full"}) == 16
    finally:
        sink.shutdown(0.5)


def test_queue_full_drops_are_logged_once_a_minute_with_what_to_do():
    """Every drop is counted; the first of a reason is logged with a hint, the repeats only counted."""
    from structlog.testing import capture_logs

    sink, reg = make_sink(queue_size=2, producer_factory=FakeProducer, start=False)
    with capture_logs() as logs:
        results = [sink.submit(rec(i)) for i in range(6)]
    assert results.count(False) == 4
    assert value(reg, "claimwatch_collector_dropped_total", reason="queue_full") == 4
    lines = [e for e in logs if e["event"] == "collector_dropped"]
    assert len(lines) == 1 and lines[0]["reason"] == "queue_full" and "CLAIMWATCH_QUEUE_SIZE" in lines[0]["hint"]
    sink.shutdown(0.1)
    with capture_logs() as logs:
        assert not sink.submit(rec(9))
    assert [e["reason"] for e in logs if e["event"] == "collector_dropped"] == ["sink_shutdown"]


def test_only_retriable_produce_failures_count_as_readable_again():
    """A record lost to a retriable error (broker down) is counted for re-reading; one Kafka refuses for good is not."""
    from kafka.errors import KafkaTimeoutError, MessageSizeTooLargeError

    for error, retriable in ((KafkaTimeoutError("expired"), 1), (MessageSizeTooLargeError("big"), 0)):
        sink, reg = make_sink(producer_factory=lambda error=error, **c: FakeProducer(fail_with=error, **c))
        assert sink.submit(rec(1))
        sink.force_flush(2.0)
        assert sink.retriable_failures == retriable
        assert value(reg, "claimwatch_collector_dropped_total", reason="produce_error") == 1
        sink.shutdown(0.5)


def test_a_step_running_after_shutdown_builds_no_producer():
    """The background step can outlive shutdown()'s short stop wait under CPU load: it must not build a new producer
    (one nobody closes, with its own IO thread and connections) once the sink is shut down."""
    made: list[FakeProducer] = []

    def factory(**config):
        made.append(FakeProducer())
        return made[-1]

    sink, _ = make_sink(producer_factory=factory)
    sink.submit(rec(1))
    assert sink.shutdown(3.0) and len(made) == 1 and made[0].closed
    sink._step()  # what a loop thread still inside its step after the stop wait would do next
    assert len(made) == 1

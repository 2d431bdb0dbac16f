"""The fault-injecting proxy (tests/fakes/kafka_proxy.py) on a real Tansu broker and real kafka-python clients.

Producers here are non-idempotent: kafka-python 3.0.12's idempotent producer
carries state across a failed batch (a fatal error after a non-retriable code,
a sequence gap after retries run out) that would confound what is tested here,
the proxy. One dedicated broker serves the module; each test uses fresh topics.
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import NotEnoughReplicasError, TopicAuthorizationFailedError
from kafka.protocol.metadata import ApiVersionsRequest
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from tests.fakes.kafka_proxy import ProxiedBroker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker():
    with ProxiedBroker() as b:
        yield b


@pytest.fixture
def proxy(broker):
    yield broker.proxy
    broker.proxy.clear_faults()


def _topic() -> str:
    return f"px-{uuid.uuid4().hex[:10]}"


def _producer(broker: ProxiedBroker, **kw) -> KafkaProducer:
    return KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", enable_idempotence=False, **kw)


def _consumer(broker: ProxiedBroker, topic: str) -> KafkaConsumer:
    return KafkaConsumer(
        topic, bootstrap_servers=broker.bootstrap, group_id=None, auto_offset_reset="earliest", enable_auto_commit=False
    )


def _read(consumer: KafkaConsumer, expect: int, timeout_s: float = 10.0) -> list[bytes]:
    out: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    while len(out) < expect and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=200).values():
            out += [r.value for r in records]
    return out


def _values(broker: ProxiedBroker, topic: str, expect: int) -> list[bytes]:
    consumer = _consumer(broker, topic)
    try:
        return _read(consumer, expect)
    finally:
        consumer.close()


def test_relays_real_traffic(broker, proxy):
    """With no fault, 20 records produced (acks=all) through the proxy are all read back through it."""
    topic = _topic()
    producer = _producer(broker)
    for i in range(20):
        producer.send(topic, b"v%d" % i)
    producer.flush(10)
    producer.close()
    values = _values(broker, topic, 20)
    assert sorted(values) == sorted(b"v%d" % i for i in range(20))
    assert proxy.produce_requests(topic) >= 1 and proxy.forwarded_frames > 0 and proxy.rejected == 0


@pytest.mark.parametrize(
    ("code", "error", "retried"),
    [
        (19, NotEnoughReplicasError, True),
        (29, TopicAuthorizationFailedError, False),
    ],
)
def test_reject_produce(broker, proxy, code, error, retried):
    """A rejected produce fails the future with the code's error and writes nothing; other topics and later sends work."""
    topic, other = _topic(), _topic()
    producer = _producer(broker, retries=1, retry_backoff_ms=50, request_timeout_ms=5000)
    rejected = proxy.rejected
    try:
        proxy.reject_produce(topic, code)
        with pytest.raises(error):
            producer.send(topic, b"rejected").get(timeout=10)
        assert proxy.rejected - rejected == (2 if retried else 1)  # retriable: the one retry is rejected too
        producer.send(other, b"other").get(timeout=10)  # the fault is still on, for `topic` only
        proxy.clear_faults()
        producer.send(topic, b"after").get(timeout=10)
    finally:
        producer.close(5)
    assert _values(broker, topic, 1) == [b"after"]
    assert _values(broker, other, 1) == [b"other"]


def test_stall_holds_traffic_until_it_ends(broker, proxy):
    """A send during stall(4) completes only when the stall ends and is delivered; a consumer keeps working."""
    topic = _topic()
    producer = _producer(broker, request_timeout_ms=10_000)
    consumer = _consumer(broker, topic)
    try:
        producer.send(topic, b"before").get(timeout=10)
        assert _read(consumer, 1) == [b"before"]
        proxy.stall(4)
        t0 = time.monotonic()
        future = producer.send(topic, b"during")
        assert _read(consumer, 1, timeout_s=1.5) == []  # nothing moves while stalled
        future.get(timeout=15)
        elapsed = time.monotonic() - t0
        assert elapsed >= 3.5 and not proxy.stalled
        assert _read(consumer, 1) == [b"during"]
    finally:
        consumer.close()
        producer.close(5)


def _frame(sock: socket.socket) -> bytes:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            assert chunk, "proxy closed the connection"
            buf += chunk
        return buf

    return exactly(struct.unpack(">i", exactly(4))[0])


def _produce(version: int, correlation_id: int, topics: list[str], acks: int = -1) -> bytes:
    Topic = ProduceRequest.TopicProduceData
    request = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=1000,
        topic_data=[
            Topic(name=t, partition_data=[Topic.PartitionProduceData(index=i, records=None) for i in (0, 2)])
            for t in topics
        ],
    )
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id="raw")
    return bytes(request.encode(header=True, framed=True))


@pytest.mark.parametrize("version", range(0, 13))
def test_injected_response_wire_format(broker, proxy, version):
    """Every Produce version a name-based client can send gets a decodable, in-order response (none for acks=0)."""
    topic, innocent = _topic(), _topic()
    proxy.reject_produce(topic, 10)
    rejected = proxy.rejected
    versions = ApiVersionsRequest[0]()
    versions.with_header(correlation_id=1, client_id="raw")
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=5) as sock:
        sock.sendall(
            bytes(versions.encode(header=True, framed=True))  # forwarded to the broker
            + _produce(version, 2, [topic], acks=0)  # rejected, no response expected
            + _produce(version, 3, [topic, innocent])
        )  # mixed topics: rejected as a whole
        assert struct.unpack_from(">i", _frame(sock))[0] == 1  # the broker's answer comes first
        response = ProduceResponse.decode(_frame(sock), version=version, header=True)
    assert response.header.correlation_id == 3
    assert {(t.name, p.index, p.error_code) for t in response.responses for p in t.partition_responses} == {
        (t, i, 10) for t in (topic, innocent) for i in (0, 2)
    }
    assert proxy.rejected - rejected == 2 and proxy.produce_requests(innocent) == 1


def test_embedded_servers_leave_nothing_in_tmp():
    """EmbeddedBroker and EmbeddedPrometheus remove the work directories they created when stopped."""
    from claimwatch.embedded import EmbeddedBroker, EmbeddedPrometheus

    broker = EmbeddedBroker().start()
    dirs = [broker.workdir]
    broker.stop()
    if EmbeddedPrometheus.available():
        prom = EmbeddedPrometheus(["127.0.0.1:1"]).start()
        dirs.append(prom.workdir)
        prom.stop()
    assert dirs and not any(d.exists() for d in dirs)

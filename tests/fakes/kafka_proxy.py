"""A fault-injecting TCP proxy for real Kafka traffic (we never mock Kafka).

:class:`KafkaFaultProxy` sits between kafka-python clients and a real
Kafka-protocol broker and relays length-prefixed frames. On command it
reproduces production broker faults:

- ``stall(seconds)`` / ``stall_start()`` / ``stall_end()``: the broker stops
  answering. No byte moves in either direction (the proxy holds them); new
  connections are accepted but not served; everything resumes afterwards.
  A client that gives up and closes its connection meanwhile loses what it had
  sent on it: held bytes of a closed connection are dropped, never forwarded.
- ``reject_produce(topic, error_code, times=None)``: Produce requests writing
  to ``topic`` are not forwarded; the proxy answers them itself with a valid
  ProduceResponse (same api_version and correlation id) carrying
  ``error_code`` for every partition of the request. A request that also
  writes to other topics is rejected as a whole. Produce v13+ names topics by
  id only and is never matched (kafka-python 3.0.12 sends v9 at most).

Use :class:`ProxiedBroker` so that *every* connection goes through the proxy:
it starts a dedicated Tansu broker that advertises the proxy's port, so the
connections that metadata directs clients to come back to the proxy too::

    with ProxiedBroker() as broker:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=1)
        broker.proxy.reject_produce("orders", 19)   # NOT_ENOUGH_REPLICAS
        broker.proxy.stall(4)                        # returns at once; ends by itself

Responses stay in request order per connection (a Kafka client requires it):
an injected response waits for the broker's answers to earlier requests.
"""

from __future__ import annotations

import collections
import selectors
import socket
import struct
import threading
from pathlib import Path
from typing import Iterator

from kafka.protocol.producer import ProduceRequest, ProduceResponse

from claimwatch.embedded import EmbeddedBroker, free_port

PRODUCE = 0
_POLL_S = 0.05  # how often idle connection threads look at the stall / close flags


class KafkaFaultProxy:
    """Relays Kafka frames between clients on ``bootstrap`` and the broker at ``upstream`` ("host:port")."""

    def __init__(self, upstream: str, host: str = "127.0.0.1", port: int = 0) -> None:
        up_host, up_port = upstream.rsplit(":", 1)
        self.upstream = (up_host, int(up_port))
        self._listener = socket.create_server((host, port))
        self._listener.settimeout(_POLL_S)
        self.host, self.port = self._listener.getsockname()[:2]
        self._lock = threading.Lock()
        self._serving = threading.Event()  # cleared while stalled
        self._serving.set()
        self._closed = threading.Event()
        self._stall_timer: threading.Timer | None = None
        self._faults: dict[str, list[int | None]] = {}  # topic -> [error_code, remaining (None: until cleared)]
        self._produce_counts: collections.Counter[str] = collections.Counter()
        self._threads: list[threading.Thread] = []
        self.rejected = 0  # produce requests answered by the proxy with an error
        self.forwarded_frames = 0  # frames relayed, both directions
        self.connections = 0  # client connections accepted
        self._accept_thread = threading.Thread(target=self._accept_loop, name="kafka-proxy-accept", daemon=True)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> "KafkaFaultProxy":
        self._accept_thread.start()
        return self

    # -- faults -------------------------------------------------------------------------------

    @property
    def stalled(self) -> bool:
        return not self._serving.is_set()

    def stall(self, seconds: float) -> None:
        """Stall now and resume by itself after ``seconds`` (returns at once)."""
        self.stall_start()
        timer = threading.Timer(seconds, self.stall_end)
        timer.daemon = True
        with self._lock:
            previous, self._stall_timer = self._stall_timer, timer
        if previous is not None:
            previous.cancel()
        timer.start()

    def stall_start(self) -> None:
        self._serving.clear()

    def stall_end(self) -> None:
        with self._lock:
            timer, self._stall_timer = self._stall_timer, None
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()
        self._serving.set()

    def reject_produce(self, topic: str, error_code: int, times: int | None = None) -> None:
        """Answer Produce requests to ``topic`` with ``error_code``: ``times`` requests, or until cleared."""
        with self._lock:
            self._faults[topic] = [error_code, times]

    def clear_faults(self) -> None:
        """Drop every produce rejection and end a stall."""
        with self._lock:
            self._faults.clear()
        self.stall_end()

    def produce_requests(self, topic: str) -> int:
        """Produce requests seen for ``topic`` (forwarded or rejected)."""
        with self._lock:
            return self._produce_counts[topic]

    def _rejection(self, topics: list[str]) -> int | None:
        """The error code to answer with, or None to forward (and count the request)."""
        with self._lock:
            self._produce_counts.update(set(topics))
            for topic in topics:
                fault = self._faults.get(topic)
                if fault is None:
                    continue
                code, remaining = fault
                if remaining is not None:
                    if remaining <= 1:
                        del self._faults[topic]
                    else:
                        fault[1] = remaining - 1
                self.rejected += 1
                return code
        return None

    # -- plumbing -----------------------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._threads = [t for t in self._threads if t.is_alive()]
                t = threading.Thread(target=_Connection(self, client).run, name="kafka-proxy-conn", daemon=True)
                self._threads.append(t)
            t.start()

    def _count_forwarded(self) -> None:
        with self._lock:
            self.forwarded_frames += 1

    def close(self) -> None:
        self._closed.set()
        self.stall_end()
        self._listener.close()
        if self._accept_thread.is_alive():
            self._accept_thread.join(5)
        with self._lock:
            threads = list(self._threads)
        for t in threads:
            t.join(5)

    def __enter__(self) -> "KafkaFaultProxy":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Connection:
    """One client connection and its own upstream connection, served by one thread."""

    def __init__(self, proxy: KafkaFaultProxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.from_client = bytearray()
        self.from_broker = bytearray()
        # one entry per request awaiting its response, in order: None = the broker's answer,
        # bytes = a response the proxy made (sent once everything before it is)
        self.pending: collections.deque[bytes | None] = collections.deque()

    def run(self) -> None:
        upstream: socket.socket | None = None
        sel = selectors.DefaultSelector()
        try:
            self.client.settimeout(5.0)  # bounds a send to a peer that stopped reading
            upstream = socket.create_connection(self.proxy.upstream, timeout=5.0)
            sel.register(self.client, selectors.EVENT_READ, self.from_client)
            sel.register(upstream, selectors.EVENT_READ, self.from_broker)
            while not self.proxy._closed.is_set():
                for key, _ in sel.select(_POLL_S):
                    data = key.fileobj.recv(1 << 16)  # type: ignore[union-attr]
                    if not data:
                        return  # either side closed: drop what is held
                    key.data.extend(data)
                if self.proxy._serving.is_set():
                    self._relay(upstream)
        except OSError:
            return
        finally:
            sel.close()
            self.client.close()
            if upstream is not None:
                upstream.close()

    def _relay(self, upstream: socket.socket) -> None:
        for frame in _frames(self.from_client):
            self._request(frame, upstream)
        for frame in _frames(self.from_broker):
            self.client.sendall(frame)
            self.proxy._count_forwarded()
            if self.pending:
                self.pending.popleft()
            self._flush_injected()

    def _request(self, frame: bytes, upstream: socket.socket) -> None:
        expects_response = True
        api_key, api_version = struct.unpack_from(">hh", frame, 4) if len(frame) >= 8 else (-1, -1)
        if api_key == PRODUCE:
            request = _decode_produce(frame, api_version)
            if request is not None:
                expects_response = request.acks != 0
                code = self.proxy._rejection([t.name for t in request.topic_data if getattr(t, "name", None)])
                if code is not None:
                    if expects_response:
                        self.pending.append(_produce_error(request, api_version, code))
                        self._flush_injected()
                    return
        upstream.sendall(frame)
        self.proxy._count_forwarded()
        if expects_response:
            self.pending.append(None)

    def _flush_injected(self) -> None:
        while self.pending and self.pending[0] is not None:
            self.client.sendall(self.pending.popleft())  # type: ignore[arg-type]


def _frames(buf: bytearray) -> Iterator[bytes]:
    """Pop complete frames (length prefix included) off the front of ``buf``."""
    while len(buf) >= 4:
        size = struct.unpack_from(">i", buf)[0]
        if len(buf) < 4 + size:
            return
        frame = bytes(buf[: 4 + size])
        del buf[: 4 + size]
        yield frame


def _decode_produce(frame: bytes, api_version: int) -> ProduceRequest | None:
    try:
        return ProduceRequest.decode(frame[4:], version=api_version, header=True)
    except Exception:  # a version or encoding this kafka-python cannot read: forward untouched
        return None


def _produce_error(request: ProduceRequest, api_version: int, error_code: int) -> bytes:
    """A framed ProduceResponse answering ``request`` with ``error_code`` on each of its partitions."""
    Topic = ProduceResponse.TopicProduceResponse
    Partition = Topic.PartitionProduceResponse
    response = ProduceResponse(
        responses=[
            Topic(
                name=t.name,
                partition_responses=[
                    Partition(index=p.index, error_code=error_code, base_offset=-1) for p in t.partition_data
                ],
            )
            for t in request.topic_data
        ],
        throttle_time_ms=0,
    )
    response.API_VERSION = api_version
    response.with_header(correlation_id=request.header.correlation_id)
    return bytes(response.encode(header=True, framed=True))


class ProxiedBroker:
    """A dedicated Tansu broker reachable only through a :class:`KafkaFaultProxy` (context manager)."""

    def __init__(self) -> None:
        self.proxy = KafkaFaultProxy(f"127.0.0.1:{free_port()}")
        self.broker = EmbeddedBroker(port=self.proxy.upstream[1], advertised_port=self.proxy.port)

    @property
    def bootstrap(self) -> str:
        return self.proxy.bootstrap

    @property
    def log(self) -> Path:
        return self.broker.workdir / "broker.log"

    def start(self) -> "ProxiedBroker":
        self.proxy.start()
        try:
            self.broker.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        self.proxy.close()
        self.broker.stop()  # removes its work directory

    def __enter__(self) -> "ProxiedBroker":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

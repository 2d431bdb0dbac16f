"""``claimwatch receiver``: an OTLP/HTTP trace receiver for apps in any language.

Point any OpenTelemetry SDK's OTLP/HTTP exporter at it
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://host:4318/v1/traces``): the spans go
through the same :class:`~collector.pipeline.TracePipeline` as the in-app
processor (assembler, sampler, redactor, limits, Kafka sink) and come out as
``RagTrace`` records on ``claimwatch.traces``.

OTLP/HTTP behaviour (https://opentelemetry.io/docs/specs/otlp/#otlphttp):

- ``POST /v1/traces`` with ``Content-Type: application/x-protobuf`` or
  ``application/json`` (OTLP/JSON, hex ids); ``Content-Encoding: gzip`` accepted.
- 200 with an ``ExportTraceServiceResponse`` in the request's encoding;
  ``partial_success.rejected_spans`` counts spans refused (invalid ids, past
  ``max_spans_per_request``), with the reasons in ``error_message``.
- 400 with a ``google.rpc.Status`` when the body does not decode; 404 for
  other paths; 405 for other methods; 411 without ``Content-Length``;
  413 when the body (compressed or not) exceeds ``max_body_bytes``;
  415 for other content types or encodings.
- Backpressure instead of silent loss: when the Kafka sink's queue is full
  (broker down or slower than the input) the answer is **503** with
  ``Retry-After``; when the assembler already buffers ``max_buffered_traces``
  traces it is **429** with ``Retry-After``. Both are OTLP-retryable, so the
  exporter backs off and re-sends.

Hostile load (docs/reliability.md, "OTLP receiver under hostile load"):

- Admission: at most ``max_concurrent_requests`` requests are read and decoded
  at once, and their estimated memory (body as sent + inflated + decoded, see
  ``DECODE_COST``) stays within ``max_inflight_bytes``; a request that does not
  get in within ``admission_wait_s`` is answered **503** + ``Retry-After``
  before its body is read. The spans cap applies while converting: spans past
  ``max_spans_per_request`` are counted, never turned into Python objects.
- Connections: listen backlog ``listen_backlog``; one thread per connection, at
  most ``max_connections`` (past it: an immediate **503** + ``Retry-After``
  from the accept thread, then a graceful close). Total deadlines, not
  per-recv timeouts: request line + headers within ``header_timeout_s`` and
  ``max_header_bytes`` (past it: **431**), body
  within ``body_timeout_s`` (past either: **408**, connection closed), idle
  keep-alive connections closed after ``keepalive_timeout_s``, responses
  written within ``write_timeout_s``. Whenever a connection is closed with
  input unread, it is drained for up to ``linger_s`` first, so the client
  reads the answer instead of a connection reset.
- Malformed bodies of any depth, encoding or size are 4xx (deep JSON ->
  ``RecursionError`` -> 400), never 500.

Metrics (collector registry): ``claimwatch_collector_otlp_requests_total{source="http",code}``
(a refused request is counted here by its code: 429 buffer_full, 503 sink_full /
busy / too many connections, 400 decode_error, 408 timeout, 413 too_large, 415
unsupported media type, 431 headers too large),
``claimwatch_collector_otlp_spans_total{source="http",outcome}`` and
``claimwatch_collector_otlp_rejected_spans_total{source="http",reason}`` for the
spans of accepted requests (partial success), plus every ``claimwatch_collector_*``
metric of the shared pipeline.
"""

from __future__ import annotations

import argparse
import io
import queue
import re
import selectors
import signal
import socket
import sys
import threading
import time
import zlib
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, cast

from google.rpc import code_pb2, status_pb2
from prometheus_client import CollectorRegistry
from pydantic_settings import BaseSettings, SettingsConfigDict

from collector import otlp
from collector.config import CollectorSettings
from collector.pipeline import OtlpIngest
from collector.sink import ProducerFactory
from contract.logs import get_logger

log = get_logger("claimwatch.receiver")

SOURCE = "http"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class ReceiverSettings(BaseSettings):
    """Receiver settings (env: ``CLAIMWATCH_RECEIVER_*``); Kafka, topic, sampling come from ``CollectorSettings``."""

    model_config = SettingsConfigDict(env_prefix="CLAIMWATCH_RECEIVER_", extra="ignore")

    host: str = "0.0.0.0"
    port: int = 4318
    path: str = "/v1/traces"
    #: limit on the request body, both as sent and after gzip decompression
    max_body_bytes: int = 16 * 1024 * 1024
    #: spans past this many in one request are rejected (partial_success) without being converted
    max_spans_per_request: int = 10_000
    #: seconds the client is told to wait on 429 / 503
    retry_after_s: int = 5
    #: how often complete traces are moved to the sink
    pump_interval_s: float = 0.02
    #: requests read and decoded at the same time; more wait up to admission_wait_s, then get 503 + Retry-After
    max_concurrent_requests: int = 8
    #: memory budget (bytes) of the requests in flight: body as sent + decompressed + estimated decoded size
    #: (x6 protobuf, x10 JSON); a request past it waits, then gets 503 + Retry-After (one alone is always admitted)
    max_inflight_bytes: int = 192 * 1024 * 1024
    #: seconds a request waits for a concurrency slot / budget before 503 + Retry-After
    admission_wait_s: float = 5.0
    #: open connections (one thread each); a connection past it gets an immediate 503 + Retry-After and is closed
    max_connections: int = 512
    #: listen backlog (connections the kernel queues before accept; capped by net.core.somaxconn)
    listen_backlog: int = 1024
    #: total seconds to receive the request line and headers (from their first byte; a new connection must send
    #: that byte within the same time or is closed quietly); past it: 408, closed
    header_timeout_s: float = 10.0
    #: limit on the request line + headers (bytes read while parsing them); past it: 431, closed
    max_header_bytes: int = 32 * 1024
    #: total seconds to receive the body (from its admission); past it: 408, closed
    body_timeout_s: float = 30.0
    #: an idle keep-alive connection (no new request) is closed after this many seconds
    keepalive_timeout_s: float = 30.0
    #: seconds to write a response to a client that does not read it
    write_timeout_s: float = 10.0
    #: after answering with unread input left (refused body, timed-out request), read and discard it for up to
    #: this many seconds before closing, so the client reads the answer instead of a connection reset
    linger_s: float = 2.0


#: estimated decoded size per body byte (protobuf message / JSON document + message), measured on RAG traces;
#: used only for the memory budget (docs/reliability.md)
DECODE_COST = {PROTOBUF: 6, JSON: 10}
#: assumed gzip ratio when admitting a gzip body (its decoded size is unknown until inflated): the request
#: reserves min(sent x ratio, max_body_bytes) x (1 + DECODE_COST), then the reservation is set to the real size
GZIP_RATIO = {PROTOBUF: 10, JSON: 20}
_CHUNK = 1024 * 1024


class _DeadlineSocketReader(io.RawIOBase):
    """The connection's reads, with a total deadline (not only a per-recv timeout): a trickling client is cut off."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline: float | None = None
        self.limit: int | None = None  # while reading headers: ``received`` may not pass it
        self.received = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("read deadline passed")
            self.sock.settimeout(left)
        if self.limit is not None:
            if self.received >= self.limit:
                raise _HeadersTooLarge("request line and headers too large")
            buffer = memoryview(buffer)[: self.limit - self.received]
        n = self.sock.recv_into(buffer)
        self.received += n
        return n


class _HeadersTooLarge(Exception):
    """The request line and headers went past ``max_header_bytes``."""


class _Budget:
    """Admission control: at most ``max_requests`` in flight, their estimated memory within ``max_bytes``."""

    def __init__(self, max_requests: int, max_bytes: int) -> None:
        self.max_requests, self.max_bytes = max(1, max_requests), max(1, max_bytes)
        self.requests = 0
        self.bytes = 0
        self.peak_bytes = 0
        self._cond = threading.Condition()

    def admit(self, cost: int, wait_s: float) -> "_Ticket | None":
        """A ticket for ``cost`` bytes, waiting up to ``wait_s``; None when the receiver stays too busy."""
        deadline = time.monotonic() + wait_s
        with self._cond:
            while not (self.requests < self.max_requests
                       and (self.requests == 0 or self.bytes + cost <= self.max_bytes)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)
            self.requests += 1
            self._add(cost)
        return _Ticket(self, cost)

    def _add(self, n: int) -> None:
        self.bytes += n
        self.peak_bytes = max(self.peak_bytes, self.bytes)

    def grow(self, ticket: "_Ticket", extra: int) -> bool:
        """Add ``extra`` bytes to a ticket without waiting; False when they do not fit (and it is not alone)."""
        with self._cond:
            if self.requests > 1 and self.bytes + extra > self.max_bytes:
                return False
            self._add(extra)
            ticket.cost += extra
            return True

    def resize(self, ticket: "_Ticket", cost: int) -> None:
        """Set a ticket's reservation to ``cost`` (only ever called to shrink it)."""
        with self._cond:
            self.bytes += cost - ticket.cost
            ticket.cost = cost
            self._cond.notify_all()

    def release(self, ticket: "_Ticket") -> None:
        with self._cond:
            self.requests -= 1
            self.bytes -= ticket.cost
            ticket.cost = 0
            self._cond.notify_all()


class _Ticket:
    def __init__(self, budget: _Budget, cost: int) -> None:
        self.budget, self.cost = budget, cost


class _Lingerer(threading.Thread):
    """Closes refused connections gracefully off the accept thread: shut down writes, drain input, then close."""

    def __init__(self, linger_s: float, capacity: int = 1024) -> None:
        super().__init__(name="claimwatch-otlp-linger", daemon=True)
        self.linger_s, self.capacity = linger_s, capacity
        self._new: "queue.SimpleQueue[socket.socket]" = queue.SimpleQueue()
        self._count = 0
        self._count_lock = threading.Lock()
        self._stop = threading.Event()

    def add(self, sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        with self._count_lock:
            full = self._count >= self.capacity or self._stop.is_set()
            if not full:
                self._count += 1
        if full:  # last resort: a plain close
            sock.close()
            return
        self._new.put(sock)

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        sel = selectors.DefaultSelector()
        deadlines: dict[socket.socket, float] = {}
        while not self._stop.is_set() or deadlines:
            while True:
                try:
                    sock = self._new.get_nowait()
                except queue.Empty:
                    break
                try:
                    sel.register(sock, selectors.EVENT_READ)
                    deadlines[sock] = time.monotonic() + self.linger_s
                except (OSError, ValueError):
                    self._close(sel, deadlines, sock)
            if deadlines:
                for key, _ in sel.select(0.05):
                    sock = cast(socket.socket, key.fileobj)
                    try:
                        data = sock.recv(65536)
                    except OSError:
                        data = b""
                    if not data:
                        self._close(sel, deadlines, sock)
            else:
                self._stop.wait(0.05)
            now = time.monotonic()
            for sock in [s for s, d in deadlines.items() if d <= now or self._stop.is_set()]:
                self._close(sel, deadlines, sock)
        sel.close()

    def _close(self, sel: selectors.BaseSelector, deadlines: dict[socket.socket, float], sock: socket.socket) -> None:
        deadlines.pop(sock, None)
        try:
            sel.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass
        sock.close()
        with self._count_lock:
            self._count -= 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    receiver: "OtlpReceiver"

    def setup_limits(self, receiver: "OtlpReceiver") -> None:
        self.receiver = receiver
        self.active = 0
        self.peak_active = 0
        self._active_lock = threading.Lock()
        self.lingerer = _Lingerer(receiver.settings.linger_s)

    def process_request(self, request: Any, client_address: Any) -> None:
        """One thread per connection, at most ``max_connections``; past that a fast 503 + Retry-After."""
        with self._active_lock:
            admitted = self.active < self.receiver.settings.max_connections
            if admitted:
                self.active += 1
                self.peak_active = max(self.peak_active, self.active)
        if not admitted:
            self.refuse(request)
            return
        try:
            threading.Thread(target=self.process_request_thread, args=(request, client_address),
                             name="claimwatch-otlp-conn", daemon=True).start()
        except RuntimeError:  # cannot start a thread: refuse like a full server
            self._release()
            self.refuse(request)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._active_lock:
            self.active -= 1

    def refuse(self, request: socket.socket) -> None:
        """Answer 503 + Retry-After without reading the request (non-blocking), then close gracefully."""
        receiver = self.receiver
        receiver.count_request(503)
        log.info("receiver_refused", code=503, reason="too_many_connections")
        try:
            request.setblocking(False)
            request.send(receiver.busy_response)
        except OSError:
            pass
        self.lingerer.add(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        exc = sys.exc_info()[1]
        log.warning("receiver_connection_error", error=type(exc).__name__, detail=str(exc)[:200])


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        self.connection = self.request
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self.reader = _DeadlineSocketReader(self.connection)
        self.buffered = io.BufferedReader(self.reader, 65536)
        self.rfile = self.buffered
        self.wfile = self.connection.makefile("wb", 0)
        self.served = 0
        self.linger = False
        self.expect_continue = False

    def finish(self) -> None:
        try:
            self.wfile.close()
        except OSError:
            pass
        self.rfile.close()
        if self.linger:
            self._drain()

    def _drain(self) -> None:
        """Shut down writes and discard input for up to ``linger_s`` (or until EOF) so the peer reads our answer."""
        sock = self.connection
        settings = self.server.receiver.settings
        try:
            sock.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + settings.linger_s
            total = 0
            while total <= settings.max_body_bytes:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                sock.settimeout(left)
                data = sock.recv(65536)
                if not data:
                    break
                total += len(data)
        except OSError:
            pass

    def handle_one_request(self) -> None:
        """http.server's request loop step with deadlines: idle keep-alive, headers (total), then the method."""
        settings = self.server.receiver.settings
        self.close_connection = True
        self.expect_continue = False
        self.requestline, self.request_version, self.command = "", self.protocol_version, ""
        self.reader.deadline = time.monotonic() + (settings.keepalive_timeout_s if self.served
                                                   else settings.header_timeout_s)
        # bytes already buffered (pipelined) are free; past them, at most max_header_bytes until the headers end
        self.reader.limit = self.reader.received + settings.max_header_bytes
        try:
            if not self.buffered.peek(1):
                return  # the client closed
        except (TimeoutError, OSError, _HeadersTooLarge):
            self.reader.limit = None
            return  # idle: nothing of a new request arrived, close quietly
        self.reader.deadline = time.monotonic() + settings.header_timeout_s
        self.served += 1
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if len(self.raw_requestline) > 65536:
                self.requestline = self.request_version = self.command = ""
                self.linger = True
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                return
            if not self.parse_request():
                self.linger = True  # an error answer was sent
                return
        except TimeoutError:
            self.server.receiver.timed_out(self, "header")
            return
        except _HeadersTooLarge:
            self.linger = True
            self.server.receiver.count_request(431)
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "request line and headers too large")
            return
        except OSError:
            return
        finally:
            self.reader.limit = None
        method = getattr(self, "do_" + self.command, None)
        if method is None:
            self.server.receiver.reply_plain(self, 405, "use POST", allow="POST")
            return
        try:
            method()
            self.wfile.flush()
        except (TimeoutError, OSError):
            self.close_connection = True

    def handle_expect_100(self) -> bool:
        """Defer ``100 Continue`` until the request is admitted (a refusal then costs no body transfer)."""
        self.expect_continue = True
        return True

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.server.receiver.handle(self)

    def do_GET(self) -> None:  # noqa: N802
        self.server.receiver.reply_plain(self, 405, "use POST", allow="POST")

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("receiver_http", message=format % args)


class _Reject(Exception):
    def __init__(self, code: int, reason: str, message: str, *, retry: bool = False, close: bool = False) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.retry, self.close = code, reason, message, retry, close


_STATUS_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    404: code_pb2.NOT_FOUND,
    408: code_pb2.DEADLINE_EXCEEDED,
    411: code_pb2.INVALID_ARGUMENT,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    503: code_pb2.UNAVAILABLE,
}
_LENGTH = re.compile(r"\s*[0-9]{1,19}\s*")


class OtlpReceiver(OtlpIngest):
    """OTLP/HTTP receiver feeding the shared trace pipeline. ``start()``, then ``shutdown()``."""

    def __init__(
        self,
        settings: ReceiverSettings | None = None,
        collector_settings: CollectorSettings | None = None,
        *,
        sink: Any = None,
        registry: CollectorRegistry | None = None,
        producer_factory: ProducerFactory | None = None,
        clock: Callable[[], float] = time.monotonic,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        super().__init__(collector_settings, sink=sink, registry=registry, producer_factory=producer_factory,
                         clock=clock, redact=redact)
        self.settings = settings or ReceiverSettings()
        self.budget = _Budget(self.settings.max_concurrent_requests, self.settings.max_inflight_bytes)
        status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message="claimwatch receiver is busy; retry later")
        payload = status.SerializeToString()
        self.busy_response = (
            f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: {PROTOBUF}\r\nContent-Length: {len(payload)}\r\n"
            f"Retry-After: {self.settings.retry_after_s}\r\nConnection: close\r\n\r\n"
        ).encode("ascii") + payload
        self._server: _Server | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> "OtlpReceiver":
        """Bind the port and start the HTTP and pump threads; returns self."""
        server = _Server((self.settings.host, self.settings.port), _Handler, bind_and_activate=False)
        server.request_queue_size = self.settings.listen_backlog
        try:
            server.server_bind()
            server.server_activate()
        except BaseException:
            server.server_close()
            raise
        server.setup_limits(self)
        self._server = server
        http = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                name="claimwatch-otlp-http", daemon=True)
        pump = threading.Thread(target=self._pump, name="claimwatch-otlp-pump", daemon=True)
        self._threads = [http, pump]
        server.lingerer.start()
        http.start()
        pump.start()
        log.info("receiver_started", host=self.settings.host, port=self.port, path=self.settings.path,
                 topic=self.collector_settings.topic)
        return self

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``)."""
        return self._server.server_address[1] if self._server is not None else self.settings.port

    @property
    def url(self) -> str:
        """``http://host:port/v1/traces`` for local clients."""
        host = self.settings.host if self.settings.host not in ("0.0.0.0", "") else "127.0.0.1"
        return f"http://{host}:{self.port}{self.settings.path}"

    @property
    def open_connections(self) -> int:
        """Connections being served now (each holds one thread)."""
        return self._server.active if self._server is not None else 0

    def force_flush(self, timeout_s: float = 5.0) -> bool:
        """Emit every trace whose root has ended (no late-span wait) and deliver it to Kafka."""
        self.pipeline.pop_complete(flush=True)
        return bool(self.sink.force_flush(timeout_s))

    def shutdown(self, timeout_s: float | None = None) -> None:
        """Stop accepting, emit what is complete, deliver within ``timeout_s``, close the sink."""
        if self._closed:
            return
        self._closed = True
        timeout_s = self.collector_settings.flush_timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + timeout_s
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.lingerer.stop()
        self._stop.set()
        for t in self._threads:
            if t is not threading.current_thread():
                t.join(timeout=2.0)
        self.pipeline.pop_complete(flush=True)
        self.metrics.drop("incomplete_at_shutdown", self.pipeline.drop_incomplete())
        try:
            self.sink.shutdown(max(0.0, deadline - time.monotonic()))
        except Exception as exc:  # pragma: no cover - best effort
            log.warning("receiver_sink_shutdown_failed", error=type(exc).__name__)

    def _pump(self) -> None:
        last_gauge = 0.0
        while not self._stop.wait(self.settings.pump_interval_s):
            try:
                self.pipeline.pop_complete()
                now = time.monotonic()
                if now - last_gauge > 0.5:
                    last_gauge = now
                    self.metrics.buffered_traces.set(len(self.pipeline))
            except Exception as exc:  # never let the pump die
                self.metrics.drop("internal")
                log.warning("receiver_pump_error", error=type(exc).__name__, detail=str(exc)[:200])

    # -- requests --------------------------------------------------------------
    def count_request(self, code: int) -> None:
        """Count one answered request by status code."""
        self.otlp_metrics.requests.labels(source=SOURCE, code=str(code)).inc()

    def timed_out(self, req: _Handler, phase: str) -> None:
        """408 for a client too slow to send its request (``phase``: header / body); the connection is closed."""
        self.count_request(408)
        log.info("receiver_refused", code=408, reason=f"{phase}_timeout")
        req.linger = True
        self._send_status(req, _Reject(408, f"{phase}_timeout", f"request {phase} not received in time", close=True),
                          False)

    def handle(self, req: _Handler) -> None:
        """Serve one ``POST``: validate, admit, read, decode, apply backpressure and limits, feed the pipeline."""
        ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        as_json = ctype == JSON
        ticket: _Ticket | None = None
        try:
            if req.path.split("?")[0] != self.settings.path:
                raise _Reject(404, "", f"unknown path {req.path[:100]}; OTLP traces go to {self.settings.path}",
                              close=True)
            if ctype not in (PROTOBUF, JSON):
                raise _Reject(415, "unsupported_media_type",
                              f"unsupported Content-Type {ctype!r}; use {PROTOBUF} or {JSON}", close=True)
            encoding = (req.headers.get("Content-Encoding") or "identity").strip().lower()
            if encoding not in ("gzip", "identity", ""):
                raise _Reject(415, "unsupported_media_type", f"unsupported Content-Encoding {encoding!r}; use gzip",
                              close=True)
            length = self._content_length(req)
            gzipped = encoding == "gzip"
            factor = DECODE_COST[ctype]
            decoded_estimate = min(length * GZIP_RATIO[ctype], self.settings.max_body_bytes) if gzipped else length
            ticket = self.budget.admit(length + decoded_estimate * factor, self.settings.admission_wait_s)
            if ticket is None:
                raise _Reject(503, "busy", "claimwatch receiver is busy; retry later", retry=True, close=True)
            pressure = self.pipeline.saturation()
            if pressure is not None:
                raise _Reject(503 if pressure == "sink_full" else 429, pressure,
                              f"claimwatch receiver is saturated ({pressure}); retry later", retry=True, close=True)
            body: bytes | bytearray = self._read_body(req, length)
            if gzipped:
                body = self._gunzip(body, ticket, factor)
            try:
                request = otlp.decode_json(body) if as_json else otlp.decode_protobuf(body)
            except otlp.OtlpDecodeError as exc:
                raise _Reject(400, "decode_error", str(exc)[:500]) from exc
            del body
            response = self._accept(request)
        except _Reject as rej:
            # a refused request is counted by its status code (429 buffer_full, 503 sink_full / busy,
            # 400 decode_error, 408 timeout, 413 too_large, 415 unsupported); its spans are never decoded
            self.count_request(rej.code)
            if rej.reason:
                log.info("receiver_refused", code=rej.code, reason=rej.reason)
            if rej.close:
                req.linger = True
            self._send_status(req, rej, as_json)
            return
        except TimeoutError:
            self.timed_out(req, "body")
            return
        except OSError:  # the client went away mid-body
            req.close_connection = True
            return
        except Exception as exc:  # pragma: no cover - a bug must not kill the server thread
            log.warning("receiver_internal_error", error=type(exc).__name__, detail=str(exc)[:200])
            self.count_request(500)
            req.linger = True
            self._send_status(req, _Reject(500, "", "internal error", close=True), as_json)
            return
        finally:
            if ticket is not None:
                self.budget.release(ticket)
        self.count_request(200)
        payload = otlp.to_otlp_json(response) if as_json else response.SerializeToString()
        self._send(req, 200, JSON if as_json else PROTOBUF, payload)

    def _content_length(self, req: BaseHTTPRequestHandler) -> int:
        length_header = req.headers.get("Content-Length")
        if length_header is None:
            raise _Reject(411, "", "Content-Length required", close=True)
        if not _LENGTH.fullmatch(length_header):
            raise _Reject(400, "decode_error", "invalid Content-Length", close=True)
        length = int(length_header)
        if length > self.settings.max_body_bytes:
            raise _Reject(413, "too_large", f"body of {length} bytes exceeds {self.settings.max_body_bytes}",
                          close=True)
        return length

    def _read_body(self, req: _Handler, length: int) -> bytearray:
        """The body, read into one buffer within ``body_timeout_s`` in total."""
        if req.expect_continue:
            req.send_response_only(100)
            req.end_headers()
            req.wfile.flush()
        req.reader.deadline = time.monotonic() + self.settings.body_timeout_s
        body = bytearray(length)
        view = memoryview(body)
        got = 0
        while got < length:
            n = req.rfile.readinto(view[got:got + _CHUNK])
            if not n:
                req.close_connection = True
                raise _Reject(400, "decode_error", f"body ended after {got} of {length} bytes", close=True)
            got += n
        view.release()
        return body

    def _gunzip(self, body: bytes | bytearray, ticket: _Ticket, factor: int) -> bytearray:
        """Decompress chunk by chunk; past the admitted estimate the budget must grow (503 when it cannot).

        Once inflated, the reservation is set to the real need (sent + inflated x (1 + factor)).
        """
        limit = self.settings.max_body_bytes
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out = bytearray()
        data: bytes | bytearray = body
        try:
            while True:
                chunk = inflater.decompress(data, _CHUNK)
                if chunk:
                    if len(out) + len(chunk) > limit:
                        raise _Reject(413, "too_large", f"decompressed body exceeds {limit} bytes")
                    need = len(body) + (len(out) + len(chunk)) * (1 + factor)
                    if need > ticket.cost and not self.budget.grow(ticket, need - ticket.cost):
                        raise _Reject(503, "busy", "claimwatch receiver is busy; retry later", retry=True)
                    out += chunk
                data = inflater.unconsumed_tail
                if not data or not chunk:
                    break
            if not inflater.eof:
                raise _Reject(400, "decode_error", "invalid gzip body: truncated stream")
        except zlib.error as exc:
            raise _Reject(400, "decode_error", f"invalid gzip body: {exc}") from exc
        self.budget.resize(ticket, min(ticket.cost, len(body) + len(out) * (1 + factor)))
        return out

    def _accept(self, request: Any) -> Any:
        decoded = otlp.spans_from_request(request, max_spans=self.settings.max_spans_per_request)
        del request
        rejected = dict(decoded.rejected)
        spans = decoded.spans
        added = 0
        for span in spans:
            if self.pipeline.add_span(span):
                added += 1
        if added < len(spans):
            rejected["internal"] = rejected.get("internal", 0) + len(spans) - added
        if added:
            self.metrics.spans.inc(added)
        self.otlp_metrics.accept(SOURCE, added)
        for reason, n in rejected.items():
            self.otlp_metrics.reject(SOURCE, reason, n)
        total_rejected = sum(rejected.values())
        message = ", ".join(f"{n} {reason}" for reason, n in sorted(rejected.items())) if total_rejected else ""
        return otlp.export_response(total_rejected, message)

    # -- responses -------------------------------------------------------------
    def _send_status(self, req: BaseHTTPRequestHandler, rej: _Reject, as_json: bool) -> None:
        code = _STATUS_CODES.get(rej.code, code_pb2.INTERNAL)
        status = status_pb2.Status(code=code, message=rej.message)
        payload = otlp.to_otlp_json(status) if as_json else status.SerializeToString()
        headers = {"Retry-After": str(self.settings.retry_after_s)} if rej.retry else {}
        self._send(req, rej.code, JSON if as_json else PROTOBUF, payload, close=rej.close, headers=headers)

    def reply_plain(self, req: BaseHTTPRequestHandler, code: int, text: str, **headers: str) -> None:
        """A plain-text answer (wrong method)."""
        hdrs = {k.replace("_", "-").title(): v for k, v in headers.items()}
        if isinstance(req, _Handler):
            req.linger = True
        self._send(req, code, "text/plain; charset=utf-8", text.encode(), close=True, headers=hdrs)

    def _send(self, req: BaseHTTPRequestHandler, code: int, ctype: str, payload: bytes, *, close: bool = False,
              headers: dict[str, str] | None = None) -> None:
        try:
            req.connection.settimeout(self.settings.write_timeout_s)
            req.send_response(code)
            req.send_header("Content-Type", ctype)
            req.send_header("Content-Length", str(len(payload)))
            for k, v in (headers or {}).items():
                req.send_header(k, v)
            if close:
                req.send_header("Connection", "close")
                req.close_connection = True
            req.end_headers()
            req.wfile.write(payload)
        except OSError:  # the client went away or does not read
            req.close_connection = True


# -- CLI ----------------------------------------------------------------------


def cmd_receiver(args: argparse.Namespace) -> int:
    """Run the receiver until SIGTERM / SIGINT."""
    settings = ReceiverSettings()
    if args.host:
        settings.host = args.host
    if args.port is not None:
        settings.port = args.port
    csettings = CollectorSettings()
    if args.bootstrap:
        csettings.kafka.bootstrap_servers = args.bootstrap
    if args.topic:
        csettings.topic = args.topic
    metrics_port = args.metrics_port if args.metrics_port is not None else csettings.metrics_port
    server = None
    if metrics_port is not None and metrics_port >= 0:
        from prometheus_client import start_http_server

        server, _thread = start_http_server(metrics_port)
    receiver = OtlpReceiver(settings, csettings).start()
    stop = threading.Event()

    def _stop(signum: int, _frame: Any) -> None:
        log.info("receiver_signal", signal=signum)
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    stop.wait()
    receiver.shutdown()
    if server is not None:
        server.shutdown()
    return 0


def add_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``claimwatch receiver`` on an argparse subparsers object."""
    p = subparsers.add_parser("receiver", help="OTLP/HTTP trace receiver: spans from any language -> RagTrace on Kafka")
    p.add_argument("--host", default=None, help="bind address (CLAIMWATCH_RECEIVER_HOST, default 0.0.0.0)")
    p.add_argument("--port", type=int, default=None, help="port (CLAIMWATCH_RECEIVER_PORT, default 4318)")
    p.add_argument("--bootstrap", default=None, help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    p.add_argument("--topic", default=None, help="RagTrace topic (CLAIMWATCH_TOPIC, default claimwatch.traces)")
    p.add_argument("--metrics-port", type=int, default=None, help="Prometheus port (CLAIMWATCH_METRICS_PORT; off by default)")
    p.set_defaults(func=cmd_receiver)
    return p

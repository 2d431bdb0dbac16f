"""``claimwatch receiver``: an OTLP trace receiver (OTLP/HTTP, and OTLP/gRPC when enabled) for apps in any language.

Point any OpenTelemetry SDK's OTLP exporter at it
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://host:4318/v1/traces``, or ``http://host:4317`` for gRPC): the spans go
through the same :class:`~collector.pipeline.TracePipeline` as the in-app processor (assembler, sampler, redactor,
limits, Kafka sink) and come out as ``RagTrace`` records on ``claimwatch.traces``.

The HTTP server is aiohttp's (HTTP/1.1 parsing, ``Content-Length`` and ``Transfer-Encoding: chunked`` bodies,
keep-alive, pipelining), one asyncio event loop on its own thread; decoding runs on ``max_concurrent_requests``
worker threads. :mod:`collector.http_conn` adds the connection limits aiohttp lacks; the gRPC server
(:mod:`collector.grpc_receiver`) is grpcio's.

OTLP/HTTP behaviour (https://opentelemetry.io/docs/specs/otlp/#otlphttp):

- ``POST /v1/traces`` with ``Content-Type: application/x-protobuf`` or ``application/json`` (OTLP/JSON, hex ids);
  ``Content-Encoding: gzip`` accepted (every member of a multi-member body); the body with ``Content-Length`` or
  chunked (the OTel JS SDK streams it).
- Strings with invalid UTF-8 (a lone surrogate from a JS string sliced mid-emoji) get U+FFFD for the bad sequences
  instead of refusing the batch; counted in ``otlp_repaired_strings_total`` and logged at most once a minute.
- 200 with an ``ExportTraceServiceResponse`` in the request's encoding; ``partial_success.rejected_spans`` counts
  spans refused (invalid ids, past ``max_spans_per_request``), with the reasons in ``error_message``.
- 400 with a ``google.rpc.Status`` when the body does not decode (also: bytes after the gzip data that are not
  another gzip member; malformed HTTP framing, counted and logged without the request's bytes); 401 without a
  valid bearer token (when tokens are configured); 404 for other paths; 405 for other methods; 413 when the body
  (as sent, or gunzipped, or a chunked body as it streams in) exceeds ``max_body_bytes``; 415 for other content
  types or encodings.
- Backpressure instead of silent loss: when the Kafka sink's queue is full the answer is **503** with
  ``Retry-After``; when the assembler already buffers ``max_buffered_traces`` traces it is **429** with
  ``Retry-After``. Both are OTLP-retryable, so the exporter backs off and re-sends.

Hostile load (docs/reliability.md, "OTLP receiver under hostile load"):

- Admission (:mod:`collector.admission`): at most ``max_concurrent_requests`` requests are read and decoded at
  once, and their estimated memory (body as sent + inflated + decoded, see ``DECODE_COST``) stays within
  ``max_inflight_bytes``; a request that does not get in within ``admission_wait_s`` is answered **503** +
  ``Retry-After`` before its body is read. A chunked body is admitted on ``chunked_reserve_bytes`` and its
  reservation grows as it streams in (503 + Retry-After when it cannot). Spans past ``max_spans_per_request`` are
  counted, never turned into Python objects.
- Connections (:mod:`collector.http_conn`): at most ``max_connections`` (past it: an immediate **503** +
  ``Retry-After``); request line + headers within ``header_timeout_s`` in total and ``max_header_bytes`` (**408** /
  **431**); body within ``body_timeout_s`` (**408**); idle keep-alive connections closed after
  ``keepalive_timeout_s``. A refused connection is drained for up to ``linger_s`` before it is closed.
- Malformed bodies of any depth, encoding or size are 4xx (deep JSON -> ``RecursionError`` -> 400), never 500.

Metrics (collector registry): ``claimwatch_collector_otlp_requests_total{source="http"|"grpc",code}`` (a refused
request is counted by its code: 401 unauthenticated, 429 buffer_full, 503 sink_full / busy / too many connections,
400 decode_error / bad_http, 405 other methods, 408 timeout, 413 too_large, 415 unsupported media type, 431
headers too large; gRPC by status name), ``claimwatch_collector_otlp_spans_total{source,outcome}``,
``claimwatch_collector_otlp_rejected_spans_total{source,reason}`` and
``claimwatch_collector_otlp_repaired_strings_total{source}``, plus every ``claimwatch_collector_*`` metric of the
shared pipeline.
"""

from __future__ import annotations

import asyncio
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

from aiohttp import web
from google.rpc import code_pb2, status_pb2
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from collector import otlp, tls
from collector.admission import Budget, Ticket
from collector.auth import TokenAuth
from collector.background import BackgroundLoop
from collector.config import CollectorSettings
from collector.http_conn import LimitedServer
from collector.pipeline import OtlpIngest
from collector.sink import ProducerFactory
from contract.logs import get_logger
from contract.ratelog import RateLimitedLog

log = get_logger(__name__)

SOURCE = "http"
PROTOBUF = "application/x-protobuf"
JSON = "application/json"


class ReceiverSettings(BaseSettings):
    """Receiver settings (env: ``CLAIMWATCH_RECEIVER_*``); Kafka, topic, sampling come from ``CollectorSettings``."""

    model_config = SettingsConfigDict(env_prefix="CLAIMWATCH_RECEIVER_", extra="ignore", env_ignore_empty=True)

    host: str = "0.0.0.0"
    port: int = 4318
    path: str = "/v1/traces"
    #: OTLP/gRPC port (TraceService/Export); None: gRPC off. 4317 is OTLP's gRPC port
    grpc_port: int | None = None
    #: one bearer token clients must send (``Authorization: Bearer <token>``; gRPC metadata ``authorization``)
    auth_token: SecretStr | None = None
    #: a file of bearer tokens, one per line, re-read when it changes (checked at most once a second; rotation: add
    #: the new token, move the clients, remove the old one); with AUTH_TOKEN, either works
    auth_token_file: str | None = None
    #: TLS server certificate chain (PEM); with TLS_KEY_FILE set too, HTTP and gRPC serve TLS only
    tls_cert_file: str | None = None
    #: the TLS private key (PEM) of TLS_CERT_FILE (mount it from a secret)
    tls_key_file: str | None = None
    #: limit on the request body, both as sent and after gzip decompression (gRPC: the message size limit)
    max_body_bytes: int = 16 * 1024 * 1024
    #: spans past this many in one request are rejected (partial_success) without being converted
    max_spans_per_request: int = 10_000
    #: seconds the client is told to wait on 429 / 503
    retry_after_s: int = 5
    #: how often complete traces are moved to the sink
    pump_interval_s: float = 0.02
    #: requests read and decoded at the same time, HTTP and gRPC together; more HTTP requests wait up to
    #: admission_wait_s, then get 503 + Retry-After; more gRPC calls get UNAVAILABLE + RetryInfo at once
    max_concurrent_requests: int = 8
    #: memory budget (bytes) of the requests in flight: body as sent + decompressed + estimated decoded size
    #: (x6 protobuf, x10 JSON); a request past it waits, then gets 503 + Retry-After (one alone is always admitted)
    max_inflight_bytes: int = 192 * 1024 * 1024
    #: a chunked body (no Content-Length) is admitted on this many body bytes; its reservation grows as it arrives
    chunked_reserve_bytes: int = 1024 * 1024
    #: seconds a request waits for a concurrency slot / budget before 503 + Retry-After
    admission_wait_s: float = 5.0
    #: open connections; a connection past it gets an immediate 503 + Retry-After and is closed
    max_connections: int = 512
    #: listen backlog (connections the kernel queues before accept; capped by net.core.somaxconn)
    listen_backlog: int = 1024
    #: total seconds to receive the request line and headers (from their first byte; a new connection must send
    #: that byte within the same time or is closed quietly); past it: 408, closed. Also the TLS handshake limit
    header_timeout_s: float = 10.0
    #: limit on the request line + headers (bytes); past it: 431, closed
    max_header_bytes: int = 32 * 1024
    #: total seconds to receive the body (from its admission); past it: 408, closed
    body_timeout_s: float = 30.0
    #: an idle keep-alive connection (no new request) is closed after this many seconds
    keepalive_timeout_s: float = 30.0
    #: not applied since the aiohttp server (answers are small and buffered by the transport; a client that does
    #: not read is closed at keepalive_timeout_s); kept so existing configurations still load
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
#: gzip input given to the inflater per call: at the end of a member, zlib copies the rest of that input, so the
#: slice bounds the copy (a body of many tiny members costs linear, not quadratic, time)
_GZIP_FEED = 16 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_WBITS = 16 + zlib.MAX_WBITS

_STATUS_CODES = {
    400: code_pb2.INVALID_ARGUMENT,
    401: code_pb2.UNAUTHENTICATED,
    404: code_pb2.NOT_FOUND,
    408: code_pb2.DEADLINE_EXCEEDED,
    413: code_pb2.RESOURCE_EXHAUSTED,
    415: code_pb2.INVALID_ARGUMENT,
    429: code_pb2.RESOURCE_EXHAUSTED,
    431: code_pb2.RESOURCE_EXHAUSTED,
    503: code_pb2.UNAVAILABLE,
}
_REASON_PHRASES = {408: "Request Timeout", 431: "Request Header Fields Too Large", 503: "Service Unavailable"}


class Reject(Exception):
    """A refused request: HTTP status, bounded reason (logged), message (sent), whether to add Retry-After."""

    def __init__(self, code: int, reason: str, message: str, *, retry: bool = False, close: bool = False) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.retry, self.close = code, reason, message, retry, close


class OtlpReceiver(OtlpIngest):
    """OTLP/HTTP (+ optional OTLP/gRPC) receiver feeding the shared trace pipeline. ``start()``, then ``shutdown()``."""

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
        self.settings = settings or ReceiverSettings()
        s = self.settings
        token = s.auth_token.get_secret_value() if s.auth_token is not None else None
        self.auth = TokenAuth.from_settings(token, s.auth_token_file)
        self.tls = tls.check_pair(s.tls_cert_file, s.tls_key_file)
        super().__init__(
            collector_settings,
            sink=sink,
            registry=registry,
            producer_factory=producer_factory,
            clock=clock,
            redact=redact,
        )
        self.budget = Budget(s.max_concurrent_requests, s.max_inflight_bytes)
        # what collector.http_conn reads (ConnectionPolicy)
        self.header_timeout_s, self.max_header_bytes = s.header_timeout_s, s.max_header_bytes
        self.max_connections, self.linger_s = s.max_connections, s.linger_s
        self.open_connections = 0
        self._canned = {code: self._raw_status(code) for code in (408, 431, 503)}
        self._ratelog = RateLimitedLog(clock=clock, logger=__name__)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._web: LimitedServer | None = None
        self._listener: asyncio.AbstractServer | None = None
        self._port = s.port
        self._pool = ThreadPoolExecutor(max(1, s.max_concurrent_requests), thread_name_prefix="claimwatch-otlp-decode")
        self._grpc: Any = None
        self._http: threading.Thread | None = None
        self._last_gauge = 0.0
        self._pump = BackgroundLoop(
            "claimwatch-otlp-pump", self._pump_step, interval_s=s.pump_interval_s, on_error=self._pump_error
        )
        self._closed = False

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> "OtlpReceiver":
        """Bind the port(s) and start the server and pump threads; returns self."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        http = threading.Thread(target=loop.run_forever, name="claimwatch-otlp-http", daemon=True)
        http.start()
        try:
            asyncio.run_coroutine_threadsafe(self._listen(), loop).result(30)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            http.join(5)
            loop.close()
            raise
        if self.settings.grpc_port is not None:
            from collector.grpc_receiver import start_grpc

            self._grpc = start_grpc(self)
        self._http = http
        self._pump.start()
        log.info(
            "receiver_started",
            host=self.settings.host,
            port=self.port,
            path=self.settings.path,
            grpc_port=self.grpc_port,
            tls=self.tls,
            auth=self.auth.enabled,
            topic=self.collector_settings.topic,
        )
        return self

    async def _listen(self) -> None:
        s = self.settings
        self._web = LimitedServer(
            self._handle,
            self,
            keepalive_timeout=s.keepalive_timeout_s,
            lingering_time=s.linger_s,
            max_line_size=s.max_header_bytes,
            max_field_size=s.max_header_bytes,
            auto_decompress=False,
            access_log=None,
        )
        ssl_ctx = tls.server_context(s.tls_cert_file, s.tls_key_file) if self.tls else None  # type: ignore[arg-type]
        self._listener = await asyncio.get_running_loop().create_server(
            self._web,
            s.host,
            s.port,
            backlog=s.listen_backlog,
            reuse_address=True,
            ssl=ssl_ctx,
            ssl_handshake_timeout=s.header_timeout_s if ssl_ctx is not None else None,
        )
        self._port = self._listener.sockets[0].getsockname()[1]

    @property
    def port(self) -> int:
        """The bound HTTP port (useful with ``port=0``)."""
        return self._port

    @property
    def grpc_port(self) -> int | None:
        """The bound gRPC port, or None when gRPC is off."""
        return self._grpc.port if self._grpc is not None else None

    @property
    def url(self) -> str:
        """``http(s)://host:port/v1/traces`` for local clients."""
        host = self.settings.host if self.settings.host not in ("0.0.0.0", "") else "127.0.0.1"
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}{self.settings.path}"

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
        if self._grpc is not None:
            self._grpc.stop(min(1.0, timeout_s))
        loop = self._loop
        if loop is not None and loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._close_server(), loop).result(5)
            except Exception as exc:  # pragma: no cover - best effort
                log.warning("receiver_close_failed", error=type(exc).__name__)
            loop.call_soon_threadsafe(loop.stop)
        self._pump.stop(timeout_s=2.0)
        if self._http is not None and self._http is not threading.current_thread():
            self._http.join(timeout=2.0)
        if loop is not None and not loop.is_running():
            loop.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.pipeline.pop_complete(flush=True)
        self.metrics.drop("incomplete_at_shutdown", self.pipeline.drop_incomplete())
        try:
            self.sink.shutdown(max(0.0, deadline - time.monotonic()))
        except Exception as exc:  # pragma: no cover - best effort
            log.warning("receiver_sink_shutdown_failed", error=type(exc).__name__)

    async def _close_server(self) -> None:
        if self._listener is not None:
            self._listener.close()
        if self._web is not None:
            self._web.pre_shutdown()
            await self._web.shutdown(1.0)
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current]
        for task in pending:  # connections still lingering or waiting for admission
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def _pump_step(self) -> None:
        """Emit the traces that are complete (their late-span wait over); the buffered-traces gauge twice a second."""
        self.pipeline.pop_complete()
        now = time.monotonic()
        if now - self._last_gauge > 0.5:
            self._last_gauge = now
            self.metrics.buffered_traces.set(len(self.pipeline))

    def _pump_error(self, exc: Exception) -> None:
        self.metrics.drop("internal")
        log.warning("receiver_pump_error", error=type(exc).__name__, detail=str(exc)[:200])

    # -- counting (also used by collector.http_conn and collector.grpc_receiver) --------------------------------
    def count_request(self, code: int | str, source: str = SOURCE) -> None:
        """Count one answered request by status code."""
        self.otlp_metrics.requests.labels(source=source, code=str(code)).inc()

    def refused(self, code: int | str, reason: str, source: str = SOURCE) -> None:
        """Count and log a refusal (never with credentials or body content)."""
        self.count_request(code, source)
        log.info("receiver_refused", code=code, reason=reason, source=source)

    def malformed(self, error: str) -> web.StreamResponse:
        """Count, and log at most once a minute, a request whose HTTP framing aiohttp could not parse; its 400.

        ``error`` is the parser's exception type only: its message quotes the raw request bytes (span text).
        """
        self.count_request(400)
        self._ratelog.warn("bad_http", "receiver_bad_http", reason="bad_http", error=error, source=SOURCE)
        return self._status_response(Reject(400, "bad_http", f"malformed HTTP request ({error})", close=True), False)

    def repaired(self, strings: int, source: str = SOURCE) -> None:
        """Count, and log at most once a minute, the strings whose invalid UTF-8 decoding replaced by U+FFFD."""
        if strings <= 0:
            return
        self.otlp_metrics.repaired.labels(source=source).inc(strings)
        self._ratelog.warn(f"invalid_utf8_{source}", "receiver_invalid_utf8_repaired", strings=strings, source=source)

    def canned(self, code: int) -> bytes:
        """A complete raw HTTP answer (408 / 431 / 503 + Retry-After) written by the connection layer."""
        return self._canned[code]

    def _raw_status(self, code: int) -> bytes:
        messages = {
            408: "request head not received in time",
            431: "request line and headers too large",
            503: "claimwatch receiver is busy; retry later",
        }
        payload = status_pb2.Status(code=_STATUS_CODES[code], message=messages[code]).SerializeToString()
        retry = f"Retry-After: {self.settings.retry_after_s}\r\n" if code == 503 else ""
        return (
            f"HTTP/1.1 {code} {_REASON_PHRASES[code]}\r\nContent-Type: {PROTOBUF}\r\n"
            f"Content-Length: {len(payload)}\r\n{retry}Connection: close\r\n\r\n"
        ).encode("ascii") + payload

    # -- HTTP requests -----------------------------------------------------------
    async def _handle(self, req: web.BaseRequest) -> web.StreamResponse:
        """Serve one request: validate, authenticate, admit, read, decode, apply backpressure and limits."""
        ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        as_json = ctype == JSON
        if req.method != "POST":
            self.count_request(405)
            return web.Response(status=405, text="use POST", headers={"Allow": "POST"})
        ticket: Ticket | None = None
        try:
            if req.path != self.settings.path:
                raise Reject(404, "", f"unknown path {req.path[:100]}; OTLP traces go to {self.settings.path}")
            if not self.auth.check(req.headers.get("Authorization")):
                raise Reject(401, "unauthenticated", "missing or invalid bearer token")
            if ctype not in (PROTOBUF, JSON):
                raise Reject(
                    415, "unsupported_media_type", f"unsupported Content-Type {ctype!r}; use {PROTOBUF} or {JSON}"
                )
            encoding = (req.headers.get("Content-Encoding") or "identity").strip().lower()
            if encoding not in ("gzip", "identity", ""):
                raise Reject(415, "unsupported_media_type", f"unsupported Content-Encoding {encoding!r}; use gzip")
            length = req.content_length
            limit = self.settings.max_body_bytes
            if length is not None and length > limit:
                raise Reject(413, "too_large", f"body of {length} bytes exceeds {limit}")
            gzipped = encoding == "gzip"
            sent = length if length is not None else min(self.settings.chunked_reserve_bytes, limit)
            # a chunked gzip body is admitted as if not compressed: its reservation grows as it arrives and inflates
            estimate = self._reserve(sent, gzipped and length is not None, ctype)
            ticket = await self.budget.admit(estimate, self.settings.admission_wait_s)
            if ticket is None:
                raise Reject(503, "busy", "claimwatch receiver is busy; retry later", retry=True)
            pressure = self.pipeline.saturation()
            if pressure is not None:
                raise Reject(
                    503 if pressure == "sink_full" else 429,
                    pressure,
                    f"claimwatch receiver is saturated ({pressure}); retry later",
                    retry=True,
                )
            if req.headers.get("Expect", "").lower() == "100-continue":  # admitted: now the client may send
                await req.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            try:
                body = await asyncio.wait_for(
                    self._read_body(req, length, ticket, gzipped, ctype), self.settings.body_timeout_s
                )
            except asyncio.TimeoutError:
                raise Reject(408, "body_timeout", "request body not received in time", close=True) from None
            loop = asyncio.get_running_loop()
            response = await loop.run_in_executor(self._pool, self._decode_accept, body, gzipped, ticket, ctype)
        except Reject as rej:
            # a refused request is counted by its status code; its spans are never decoded
            if rej.reason:
                self.refused(rej.code, rej.reason)
            else:
                self.count_request(rej.code)
            return self._status_response(rej, as_json)
        except (ConnectionError, web.HTTPException):
            raise
        except Exception as exc:  # a bug must not kill the connection without an answer
            log.warning("receiver_internal_error", error=type(exc).__name__, detail=str(exc)[:200])
            self.count_request(500)
            return self._status_response(Reject(500, "", "internal error", close=True), as_json)
        finally:
            if ticket is not None:
                self.budget.release(ticket)
        self.count_request(200)
        payload = otlp.to_otlp_json(response) if as_json else response.SerializeToString()
        return web.Response(status=200, body=payload, headers={"Content-Type": JSON if as_json else PROTOBUF})

    def _reserve(self, sent: int, gzipped: bool, ctype: str) -> int:
        """Estimated memory of a body of ``sent`` bytes: as sent + (estimated) inflated x decode factor."""
        inflated = min(sent * GZIP_RATIO[ctype], self.settings.max_body_bytes) if gzipped else sent
        return sent + inflated * DECODE_COST[ctype]

    async def _read_body(
        self, req: web.BaseRequest, length: int | None, ticket: Ticket, gzipped: bool, ctype: str
    ) -> bytearray:
        """The body (Content-Length or chunked) in one buffer; a chunked body grows its ticket as it arrives."""
        limit = self.settings.max_body_bytes
        body = bytearray()
        try:
            while True:
                chunk = await req.content.readany()
                if not chunk:
                    break
                body += chunk
                if len(body) > limit:
                    raise Reject(413, "too_large", f"body exceeds {limit} bytes")
                need = self._reserve(len(body), gzipped, ctype)
                if need > ticket.cost and not self.budget.grow(ticket, need - ticket.cost):
                    raise Reject(503, "busy", "claimwatch receiver is busy; retry later", retry=True)
        except Reject:
            raise
        except Exception as exc:  # aiohttp's payload errors: a broken chunked encoding, the client went away
            raise Reject(400, "decode_error", f"body not received: {type(exc).__name__}", close=True) from exc
        if length is not None and len(body) < length:
            raise Reject(400, "decode_error", f"body ended after {len(body)} of {length} bytes", close=True)
        return body

    def _decode_accept(self, body: bytearray, gzipped: bool, ticket: Ticket, ctype: str) -> Any:
        """On a worker thread: gunzip, decode, feed the pipeline; raises :class:`Reject`."""
        data: bytes | bytearray = self._gunzip(body, ticket, DECODE_COST[ctype]) if gzipped else body
        repairs = otlp.Repairs()  # lenient: invalid UTF-8 in one string must not refuse the whole batch
        try:
            request = otlp.decode_json(data, repairs) if ctype == JSON else otlp.decode_protobuf(data, repairs)
        except otlp.OtlpDecodeError as exc:
            raise Reject(400, "decode_error", str(exc)[:500]) from exc
        del data, body
        self.repaired(repairs.strings)
        return self.accept(request, SOURCE)

    def _gunzip(self, body: bytes | bytearray, ticket: Ticket, factor: int) -> bytearray:
        """Decompress every gzip member (RFC 1952 allows several, one after another) chunk by chunk.

        The decompressed-size limit and the budget apply to all members together; past the admitted estimate the
        budget must grow (503 when it cannot). Bytes after the last member that are not a gzip member are refused
        (400), as is a truncated stream. Once inflated, the reservation is set to the real need
        (sent + inflated x (1 + factor)).
        """
        limit = self.settings.max_body_bytes
        view = memoryview(body)
        pos = 0  # the body bytes before pos were given to an inflater
        inflater = zlib.decompressobj(_GZIP_WBITS)
        out = bytearray()
        data: bytes | memoryview = b""
        try:
            while True:
                if not data and pos < len(view):
                    data = view[pos : pos + _GZIP_FEED]
                    pos += len(data)
                chunk = inflater.decompress(data, _CHUNK)
                if chunk:
                    if len(out) + len(chunk) > limit:
                        raise Reject(413, "too_large", f"decompressed body exceeds {limit} bytes")
                    need = len(body) + (len(out) + len(chunk)) * (1 + factor)
                    if need > ticket.cost and not self.budget.grow(ticket, need - ticket.cost):
                        raise Reject(503, "busy", "claimwatch receiver is busy; retry later", retry=True)
                    out += chunk
                if inflater.eof:  # end of a member: another one follows, or the body ends
                    data = inflater.unused_data
                    if not data and pos >= len(view):
                        break
                    following = bytes(data[:2]) + bytes(view[pos : pos + max(0, 2 - len(data))])
                    if following != _GZIP_MAGIC:
                        trailing = len(data) + len(view) - pos
                        raise Reject(
                            400, "decode_error", f"invalid gzip body: {trailing} bytes after the gzip data are not gzip"
                        )
                    inflater = zlib.decompressobj(_GZIP_WBITS)
                    continue
                data = inflater.unconsumed_tail
                if not chunk and not data and pos >= len(view):
                    break
            if not inflater.eof:
                raise Reject(400, "decode_error", "invalid gzip body: truncated stream")
        except zlib.error as exc:
            raise Reject(400, "decode_error", f"invalid gzip body: {exc}") from exc
        self.budget.resize(ticket, min(ticket.cost, len(body) + len(out) * (1 + factor)))
        return out

    def accept(self, request: Any, source: str) -> Any:
        """Feed a decoded ``ExportTraceServiceRequest`` to the pipeline; the ``ExportTraceServiceResponse``."""
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
        self.otlp_metrics.accept(source, added)
        for reason, n in rejected.items():
            self.otlp_metrics.reject(source, reason, n)
        total_rejected = sum(rejected.values())
        message = ", ".join(f"{n} {reason}" for reason, n in sorted(rejected.items())) if total_rejected else ""
        return otlp.export_response(total_rejected, message)

    def _status_response(self, rej: Reject, as_json: bool) -> web.Response:
        status = status_pb2.Status(code=_STATUS_CODES.get(rej.code, code_pb2.INTERNAL), message=rej.message)
        payload = otlp.to_otlp_json(status) if as_json else status.SerializeToString()
        headers = {"Content-Type": JSON if as_json else PROTOBUF}
        if rej.retry:
            headers["Retry-After"] = str(self.settings.retry_after_s)
        if rej.code == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="claimwatch"'
        response = web.Response(status=rej.code, body=payload, headers=headers)
        if rej.close:
            response.force_close()
        return response

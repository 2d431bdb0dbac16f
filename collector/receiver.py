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

Metrics (collector registry): ``claimwatch_collector_otlp_requests_total{source="http",code}``
(a refused request is counted here by its code: 429 buffer_full, 503 sink_full,
400 decode_error, 413 too_large, 415 unsupported media type),
``claimwatch_collector_otlp_spans_total{source="http",outcome}`` and
``claimwatch_collector_otlp_rejected_spans_total{source="http",reason}`` for the
spans of accepted requests (partial success), plus every ``claimwatch_collector_*``
metric of the shared pipeline.
"""

from __future__ import annotations

import argparse
import signal
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

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
    #: spans past this many in one request are rejected (partial_success)
    max_spans_per_request: int = 10_000
    #: seconds the client is told to wait on 429 / 503
    retry_after_s: int = 5
    #: how often complete traces are moved to the sink
    pump_interval_s: float = 0.02


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    receiver: "OtlpReceiver"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.server.receiver.handle(self)

    def do_GET(self) -> None:  # noqa: N802
        self.server.receiver.reply_plain(self, 405, "use POST", allow="POST")

    do_PUT = do_DELETE = do_PATCH = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("receiver_http", message=format % args)


class _Reject(Exception):
    def __init__(self, code: int, reason: str, message: str, *, retry: bool = False, close: bool = False) -> None:
        super().__init__(message)
        self.code, self.reason, self.message, self.retry, self.close = code, reason, message, retry, close


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
        self._server: _Server | None = None
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._closed = False

    # -- lifecycle -----------------------------------------------------------
    def start(self) -> "OtlpReceiver":
        """Bind the port and start the HTTP and pump threads; returns self."""
        server = _Server((self.settings.host, self.settings.port), _Handler)
        server.receiver = self
        self._server = server
        http = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2},
                                name="claimwatch-otlp-http", daemon=True)
        pump = threading.Thread(target=self._pump, name="claimwatch-otlp-pump", daemon=True)
        self._threads = [http, pump]
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
    def handle(self, req: BaseHTTPRequestHandler) -> None:
        """Serve one ``POST``: validate, decode, apply backpressure and limits, feed the pipeline."""
        ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        as_json = ctype == JSON
        try:
            if req.path.split("?")[0] != self.settings.path:
                raise _Reject(404, "", f"unknown path {req.path[:100]}; OTLP traces go to {self.settings.path}",
                              close=True)
            if ctype not in (PROTOBUF, JSON):
                raise _Reject(415, "unsupported_media_type",
                              f"unsupported Content-Type {ctype!r}; use {PROTOBUF} or {JSON}", close=True)
            body = self._read_body(req)
            encoding = (req.headers.get("Content-Encoding") or "identity").strip().lower()
            if encoding == "gzip":
                body = self._gunzip(body)
            elif encoding not in ("identity", ""):
                raise _Reject(415, "unsupported_media_type", f"unsupported Content-Encoding {encoding!r}; use gzip")
            pressure = self.pipeline.saturation()
            if pressure is not None:
                raise _Reject(503 if pressure == "sink_full" else 429, pressure,
                              f"claimwatch receiver is saturated ({pressure}); retry later", retry=True)
            try:
                request = otlp.decode_json(body) if as_json else otlp.decode_protobuf(body)
            except otlp.OtlpDecodeError as exc:
                raise _Reject(400, "decode_error", str(exc)[:500]) from exc
            response = self._accept(request)
        except _Reject as rej:
            # a refused request is counted by its status code (429 buffer_full, 503 sink_full,
            # 400 decode_error, 413 too_large, 415 unsupported); its spans are never decoded
            self.otlp_metrics.requests.labels(source=SOURCE, code=str(rej.code)).inc()
            if rej.reason:
                log.info("receiver_refused", code=rej.code, reason=rej.reason)
            self._send_status(req, rej, as_json)
            return
        except Exception as exc:  # pragma: no cover - a bug must not kill the server thread
            log.warning("receiver_internal_error", error=type(exc).__name__, detail=str(exc)[:200])
            self.otlp_metrics.requests.labels(source=SOURCE, code="500").inc()
            self._send_status(req, _Reject(500, "", "internal error", close=True), as_json)
            return
        self.otlp_metrics.requests.labels(source=SOURCE, code="200").inc()
        payload = otlp.to_otlp_json(response) if as_json else response.SerializeToString()
        self._send(req, 200, JSON if as_json else PROTOBUF, payload)

    def _read_body(self, req: BaseHTTPRequestHandler) -> bytes:
        length_header = req.headers.get("Content-Length")
        if length_header is None:
            raise _Reject(411, "", "Content-Length required", close=True)
        try:
            length = int(length_header)
        except ValueError:
            raise _Reject(400, "decode_error", "invalid Content-Length", close=True) from None
        if length < 0:
            raise _Reject(400, "decode_error", "invalid Content-Length", close=True)
        if length > self.settings.max_body_bytes:
            raise _Reject(413, "too_large", f"body of {length} bytes exceeds {self.settings.max_body_bytes}",
                          close=True)
        return req.rfile.read(length)

    def _gunzip(self, body: bytes) -> bytes:
        limit = self.settings.max_body_bytes
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise _Reject(400, "decode_error", f"invalid gzip body: {exc}") from exc
        if len(out) > limit or inflater.unconsumed_tail:
            raise _Reject(413, "too_large", f"decompressed body exceeds {limit} bytes")
        return out

    def _accept(self, request: Any) -> Any:
        decoded = otlp.spans_from_request(request)
        rejected = dict(decoded.rejected)
        spans = decoded.spans
        limit = self.settings.max_spans_per_request
        if len(spans) > limit:
            rejected["too_many_spans"] = len(spans) - limit
            spans = spans[:limit]
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
        code = {
            400: code_pb2.INVALID_ARGUMENT,
            404: code_pb2.NOT_FOUND,
            411: code_pb2.INVALID_ARGUMENT,
            413: code_pb2.RESOURCE_EXHAUSTED,
            415: code_pb2.INVALID_ARGUMENT,
            429: code_pb2.RESOURCE_EXHAUSTED,
            503: code_pb2.UNAVAILABLE,
        }.get(rej.code, code_pb2.INTERNAL)
        status = status_pb2.Status(code=code, message=rej.message)
        payload = otlp.to_otlp_json(status) if as_json else status.SerializeToString()
        headers = {"Retry-After": str(self.settings.retry_after_s)} if rej.retry else {}
        self._send(req, rej.code, JSON if as_json else PROTOBUF, payload, close=rej.close, headers=headers)

    def reply_plain(self, req: BaseHTTPRequestHandler, code: int, text: str, **headers: str) -> None:
        """A plain-text answer (wrong method)."""
        hdrs = {k.replace("_", "-").title(): v for k, v in headers.items()}
        self._send(req, code, "text/plain; charset=utf-8", text.encode(), close=True, headers=hdrs)

    @staticmethod
    def _send(req: BaseHTTPRequestHandler, code: int, ctype: str, payload: bytes, *, close: bool = False,
              headers: dict[str, str] | None = None) -> None:
        try:
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
        except (BrokenPipeError, ConnectionResetError):  # the client went away
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

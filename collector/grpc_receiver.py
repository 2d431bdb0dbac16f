"""OTLP/gRPC for ``claimwatch receiver``: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` on grpcio.

Same pipeline, limits and backpressure as OTLP/HTTP (:mod:`collector.receiver`), in gRPC terms:

- messages past ``max_body_bytes`` are refused by grpcio (RESOURCE_EXHAUSTED) while they are received;
- admission is ours, not grpcio's: before its message is read, a call takes a slot of the shared budget
  (:class:`collector.admission.Budget`, ``max_concurrent_requests`` HTTP requests and gRPC calls at once) without
  waiting, and once read, the message's memory (serialized size x (1 + decode factor)); when either does not fit:
  UNAVAILABLE with retry info. grpcio's own ``maximum_concurrent_rpcs`` is not used: it answers RESOURCE_EXHAUSTED
  *without* retry info, which OTLP clients (the OTel Collector's otlp exporter) treat as final and drop the spans.
  The server has ``max_concurrent_requests`` + ``SPARE_THREADS`` threads, so a call past the bound is refused at
  once by a spare thread instead of queueing behind the admitted ones;
- Kafka sink full: UNAVAILABLE; assembler full: RESOURCE_EXHAUSTED; both with ``google.rpc.RetryInfo``
  (``retry_delay`` = ``retry_after_s``) in the status details (``grpc-status-details-bin``) and in the
  ``google.rpc.retryinfo-bin`` trailer the OTel SDK exporters read, so they back off and re-send;
- without a valid bearer token (``authorization: Bearer <token>`` metadata, when tokens are configured):
  UNAUTHENTICATED;
- spans past ``max_spans_per_request`` and spans with invalid ids: ``partial_success``, as over HTTP;
- the message is decoded here, not by grpcio (which would answer INTERNAL): a message that does not decode is
  INVALID_ARGUMENT; invalid UTF-8 in a string is replaced by U+FFFD (counted), as over HTTP.

Every answer is counted in ``claimwatch_collector_otlp_requests_total{source="grpc",code=<status name>}``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Iterator, NoReturn, Protocol

import grpc  # type: ignore[import-untyped]
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

from collector import otlp, tls
from contract.logs import get_logger

if TYPE_CHECKING:  # pragma: no cover
    from collector.admission import Budget
    from collector.auth import TokenAuth
    from collector.pipeline import TracePipeline


class OtlpReceiver(Protocol):
    """What the gRPC service uses of the receiver it serves beside (``collector.receiver.OtlpReceiver``: admission,
    auth, counting, the pipeline), declared here so this module does not import the receiver that starts it."""

    settings: Any
    auth: TokenAuth
    budget: Budget
    pipeline: TracePipeline
    tls: bool

    def accept(self, request: Any, source: str) -> Any: ...
    def count_request(self, code: int | str, source: str = ...) -> None: ...
    def refused(self, code: int | str, reason: str, source: str = ...) -> None: ...
    def repaired(self, strings: int, source: str = ...) -> None: ...


log = get_logger(__name__)

SOURCE = "grpc"
#: decoded protobuf message -> Python span objects, per serialized byte (as DECODE_COST over HTTP)
DECODE_COST = 6
#: server threads beyond max_concurrent_requests: they answer the calls past the bound (refusals read no message)
SPARE_THREADS = 8
#: HTTP/2 streams one client connection may have open; a client past it waits for a stream (no error)
MAX_STREAMS_PER_CONNECTION = 100
SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"


class _TraceService:
    def __init__(self, receiver: "OtlpReceiver") -> None:
        self.receiver = receiver

    def Export(self, requests: Iterator[Any], context: Any) -> Any:
        """One ``Export`` call, registered as client-streaming so that the message is read only once admitted.

        On the wire a unary call and a client-streaming call of one message are the same; reading the message
        through the iterator lets a refused call (unauthenticated, saturated, busy) cost no message memory.
        """
        r = self.receiver
        if r.auth.enabled:
            metadata = dict(context.invocation_metadata() or ())
            if not r.auth.check(metadata.get("authorization")):
                self._refuse(
                    context,
                    grpc.StatusCode.UNAUTHENTICATED,
                    "unauthenticated",
                    "missing or invalid bearer token",
                    retry=False,
                )
        pressure = r.pipeline.saturation()
        if pressure is not None:
            code = grpc.StatusCode.UNAVAILABLE if pressure == "sink_full" else grpc.StatusCode.RESOURCE_EXHAUSTED
            self._refuse(context, code, pressure, f"claimwatch receiver is saturated ({pressure}); retry later")
        ticket = r.budget.try_admit(0)  # a slot first (max_concurrent_requests), the message's memory once read
        if ticket is None:
            self._refuse(context, grpc.StatusCode.UNAVAILABLE, "busy", "claimwatch receiver is busy; retry later")
        try:
            message = next(requests, None)  # grpcio refuses a message past max_body_bytes here (RpcError)
            if message is None:
                self._refuse(
                    context, grpc.StatusCode.INVALID_ARGUMENT, "decode_error", "no request message", retry=False
                )
            if not r.budget.grow(ticket, len(message) * (1 + DECODE_COST)):
                self._refuse(context, grpc.StatusCode.UNAVAILABLE, "busy", "claimwatch receiver is busy; retry later")
            repairs = otlp.Repairs()
            try:
                request = otlp.decode_protobuf(message, repairs)
            except otlp.OtlpDecodeError as exc:
                self._refuse(context, grpc.StatusCode.INVALID_ARGUMENT, "decode_error", str(exc)[:500], retry=False)
            del message
            r.repaired(repairs.strings, SOURCE)
            response = r.accept(request, SOURCE)
        finally:
            r.budget.release(ticket)
        r.count_request("OK", SOURCE)
        return response

    def _refuse(self, context: Any, code: Any, reason: str, message: str, *, retry: bool = True) -> NoReturn:
        """Count, log and abort the call with ``code`` (and retry info when ``retry``); raises."""
        r = self.receiver
        r.refused(code.name, reason, SOURCE)
        if retry:
            info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(seconds=r.settings.retry_after_s))
            detail = any_pb2.Any()
            detail.Pack(info)
            status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
            context.set_trailing_metadata(
                (
                    ("grpc-status-details-bin", status.SerializeToString()),
                    ("google.rpc.retryinfo-bin", info.SerializeToString()),
                )
            )
        context.abort(code, message)
        raise AssertionError("context.abort raises")  # pragma: no cover


class GrpcServer:
    """The running grpcio server and its bound port."""

    def __init__(self, server: Any, port: int) -> None:
        self.server, self.port = server, port

    def stop(self, grace_s: float) -> None:
        self.server.stop(grace_s).wait(grace_s + 1.0)


def start_grpc(receiver: "OtlpReceiver") -> GrpcServer:
    """Serve ``TraceService/Export`` on ``settings.grpc_port`` (TLS when the receiver has a certificate)."""
    s = receiver.settings
    workers = max(1, s.max_concurrent_requests) + SPARE_THREADS
    server = grpc.server(
        ThreadPoolExecutor(workers, thread_name_prefix="claimwatch-otlp-grpc"),
        # no maximum_concurrent_rpcs: its refusal carries no retry info (clients drop the data); Export admits
        options=[
            ("grpc.max_receive_message_length", s.max_body_bytes),
            ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.max_connection_idle_ms", int(s.keepalive_timeout_s * 1000)),
            ("grpc.so_reuseport", 0),
        ],
    )
    export = grpc.stream_unary_rpc_method_handler(
        _TraceService(receiver).Export,
        request_deserializer=None,  # the serialized message: Export decodes it (INVALID_ARGUMENT, not INTERNAL)
        response_serializer=trace_service_pb2.ExportTraceServiceResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Export": export}),))
    address = f"{s.host}:{s.grpc_port}"
    if receiver.tls:
        port = server.add_secure_port(address, tls.grpc_credentials(s.tls_cert_file, s.tls_key_file))
    else:
        port = server.add_insecure_port(address)
    server.start()
    log.info("receiver_grpc_started", host=s.host, port=port, tls=receiver.tls)
    return GrpcServer(server, port)

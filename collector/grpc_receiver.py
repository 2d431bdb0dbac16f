"""OTLP/gRPC for ``claimwatch receiver``: ``opentelemetry.proto.collector.trace.v1.TraceService/Export`` on grpcio.

Same pipeline, limits and backpressure as OTLP/HTTP (:mod:`collector.receiver`), in gRPC terms:

- messages past ``max_body_bytes`` are refused by grpcio (RESOURCE_EXHAUSTED) before they reach the servicer;
- at most ``max_concurrent_requests`` Exports run at once (grpcio's ``maximum_concurrent_rpcs``: past it
  RESOURCE_EXHAUSTED at once), and each takes a ticket of the shared memory budget (decoded message x decode factor)
  without waiting: when it does not fit, UNAVAILABLE with retry info;
- Kafka sink full: UNAVAILABLE; assembler full: RESOURCE_EXHAUSTED; both with ``google.rpc.RetryInfo``
  (``retry_delay`` = ``retry_after_s``) in the status details (``grpc-status-details-bin``) and in the
  ``google.rpc.retryinfo-bin`` trailer the OTel SDK exporters read, so they back off and re-send;
- without a valid bearer token (``authorization: Bearer <token>`` metadata, when tokens are configured):
  UNAUTHENTICATED;
- spans past ``max_spans_per_request`` and spans with invalid ids: ``partial_success``, as over HTTP.

Every answer is counted in ``claimwatch_collector_otlp_requests_total{source="grpc",code=<status name>}``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NoReturn

import grpc  # type: ignore[import-untyped]
from google.protobuf import any_pb2, duration_pb2
from google.rpc import error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

from collector import tls
from contract.logs import get_logger

if TYPE_CHECKING:  # pragma: no cover
    from collector.receiver import OtlpReceiver

log = get_logger("claimwatch.receiver")

SOURCE = "grpc"
#: decoded protobuf message -> Python span objects, per serialized byte (as DECODE_COST over HTTP)
DECODE_COST = 6


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: "OtlpReceiver") -> None:
        self.receiver = receiver

    def Export(self, request: Any, context: Any) -> Any:
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
        ticket = r.budget.try_admit(request.ByteSize() * (1 + DECODE_COST))
        if ticket is None:
            self._refuse(context, grpc.StatusCode.UNAVAILABLE, "busy", "claimwatch receiver is busy; retry later")
        try:
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
    workers = max(1, s.max_concurrent_requests)
    server = grpc.server(
        ThreadPoolExecutor(workers, thread_name_prefix="claimwatch-otlp-grpc"),
        maximum_concurrent_rpcs=workers,
        options=[
            ("grpc.max_receive_message_length", s.max_body_bytes),
            ("grpc.max_send_message_length", 4 * 1024 * 1024),
            ("grpc.max_connection_idle_ms", int(s.keepalive_timeout_s * 1000)),
            ("grpc.so_reuseport", 0),
        ],
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(receiver), server)
    address = f"{s.host}:{s.grpc_port}"
    if receiver.tls:
        port = server.add_secure_port(address, tls.grpc_credentials(s.tls_cert_file, s.tls_key_file))  # type: ignore[arg-type]
    else:
        port = server.add_insecure_port(address)
    server.start()
    log.info("receiver_grpc_started", host=s.host, port=port, tls=receiver.tls)
    return GrpcServer(server, port)

"""``claimwatch receiver`` and ``claimwatch bridge``: the command lines of the collector's ingestion services.

The services themselves live in :mod:`collector.receiver` (:class:`~collector.receiver.OtlpReceiver`) and
:mod:`collector.otlp_bridge` (:class:`~collector.otlp_bridge.OtlpBridge`), which parse no flags: this module
reads the flags, applies them over the settings (``ReceiverSettings``, ``BridgeSettings``, ``CollectorSettings``,
read from the environment here, at the edge), serves the metrics and handles SIGTERM / SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import threading
from typing import Any

from collector.config import CollectorSettings
from collector.otlp_bridge import BridgeSettings, OtlpBridge
from collector.receiver import OtlpReceiver, ReceiverSettings
from contract.logs import get_logger

log = get_logger(__name__)


# -- receiver ------------------------------------------------------------------


def cmd_receiver(args: argparse.Namespace) -> int:
    """Run the receiver until SIGTERM / SIGINT."""
    settings = ReceiverSettings()
    if args.host:
        settings.host = args.host
    if args.port is not None:
        settings.port = args.port
    if args.grpc_port is not None:
        settings.grpc_port = args.grpc_port
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


def add_receiver_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``claimwatch receiver`` on an argparse subparsers object."""
    p = subparsers.add_parser(
        "receiver", help="OTLP/HTTP (+gRPC) trace receiver: spans from any language -> RagTrace on Kafka"
    )
    p.add_argument(
        "--grpc-port",
        type=int,
        default=None,
        help="OTLP/gRPC port (CLAIMWATCH_RECEIVER_GRPC_PORT, e.g. 4317; off by default)",
    )
    p.add_argument("--host", default=None, help="bind address (CLAIMWATCH_RECEIVER_HOST, default 0.0.0.0)")
    p.add_argument("--port", type=int, default=None, help="port (CLAIMWATCH_RECEIVER_PORT, default 4318)")
    p.add_argument("--bootstrap", default=None, help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    p.add_argument("--topic", default=None, help="RagTrace topic (CLAIMWATCH_TOPIC, default claimwatch.traces)")
    p.add_argument(
        "--metrics-port", type=int, default=None, help="Prometheus port (CLAIMWATCH_METRICS_PORT; off by default)"
    )
    p.set_defaults(func=cmd_receiver)
    return p


# -- bridge --------------------------------------------------------------------


def cmd_bridge(args: argparse.Namespace) -> int:
    """Run the bridge until SIGTERM / SIGINT (or ``--idle-timeout``)."""
    settings = BridgeSettings()
    csettings = CollectorSettings()
    if args.bootstrap:
        csettings.kafka.bootstrap_servers = args.bootstrap
    if args.source_topic:
        settings.source_topic = args.source_topic
    if args.topic:
        csettings.topic = args.topic
    if args.group:
        settings.group_id = args.group
    if args.encoding:
        settings.encoding = args.encoding
    metrics_port = args.metrics_port if args.metrics_port is not None else csettings.metrics_port
    server = None
    if metrics_port is not None and metrics_port >= 0:
        from prometheus_client import start_http_server

        server, _thread = start_http_server(metrics_port)
    bridge = OtlpBridge(settings, csettings)

    def _stop(signum: int, _frame: Any) -> None:
        log.info("bridge_signal", signal=signum)
        bridge.stop()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info(
        "bridge_starting",
        source_topic=settings.source_topic,
        topic=csettings.topic,
        group=settings.group_id,
        bootstrap=csettings.kafka.bootstrap_servers,
    )
    n = bridge.run(idle_timeout_s=args.idle_timeout)
    log.info("bridge_stopped", messages=n)
    if server is not None:
        server.shutdown()
    return 0


def add_bridge_cli(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``claimwatch bridge`` on an argparse subparsers object."""
    p = subparsers.add_parser("bridge", help="OTel Collector kafkaexporter topic (otlp_spans) -> RagTrace records")
    p.add_argument("--bootstrap", default=None, help="Kafka bootstrap servers (CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    p.add_argument(
        "--source-topic", default=None, help="Collector topic (CLAIMWATCH_BRIDGE_SOURCE_TOPIC, default otlp_spans)"
    )
    p.add_argument("--topic", default=None, help="RagTrace topic (CLAIMWATCH_TOPIC, default claimwatch.traces)")
    p.add_argument("--group", default=None, help="consumer group (CLAIMWATCH_BRIDGE_GROUP_ID)")
    p.add_argument("--encoding", choices=["otlp_proto", "otlp_json"], default=None)
    p.add_argument(
        "--metrics-port", type=int, default=None, help="Prometheus port (CLAIMWATCH_METRICS_PORT; off by default)"
    )
    p.add_argument("--idle-timeout", type=float, default=None, help="exit after this many idle seconds")
    p.set_defaults(func=cmd_bridge)
    return p

"""OTLP/HTTP receiver under load and under hostile load: spans/s, latency, RSS, threads, resets, codes.

The receiver under test (``claimwatch receiver``'s ``OtlpReceiver``, default
``ReceiverSettings`` unless ``CLAIMWATCH_RECEIVER_*`` is set) runs in a child
process with a sink that DISCARDS records (no Kafka), so the figures are the
receiver's own: HTTP, decoding, admission, and the shared trace pipeline
(extract, assemble, build, sample, redact, limit). The child's
``/proc/<pid>/status`` (VmRSS, VmHWM, Threads) is sampled every 20 ms.

Phases, each on a fresh receiver process (so a peak belongs to one phase):

1. load: ``--clients`` keep-alive clients (threads here) for ``--seconds``, each
   sending realistic RAG export batches (``--traces`` traces of 3 spans, 5-20
   retrieved chunks, built with the OTel SDK and encoded with opentelemetry-proto),
   cycling protobuf, protobuf+gzip, JSON, JSON+gzip, and protobuf and JSON sent chunked (no Content-Length, as
   the OTel JS SDK sends them). Reports spans/s accepted,
   p50/p99 latency, refusals with Retry-After, connection resets, RSS peak.
2. big bodies: 8 concurrent 15.6 MB protobuf bodies of ~380k spans each (with Content-Length, then chunked); then
   8 concurrent gzip'd ~15.5 MB OTLP/JSON bodies of RAG traces (the costliest to decode); then (``biggrpc``,
   receiver started with its gRPC port on) the same 15.6 MB message as 8 concurrent OTLP/gRPC Export calls,
   counted by status code (OK, UNAVAILABLE / RESOURCE_EXHAUSTED with or without RetryInfo).
3. burst: 300 clients connect and POST at the same moment.
4. slowloris: 200 connections send part of their headers, then one byte per
   second; open file descriptors (connections) and threads counted until back to the pre-attack baseline.
5. deep JSON: a JSON body nested 100,000 deep.

    python -m benchmarks.receiver_load [--clients 16] [--seconds 10] [--src PATH]

``--src PATH`` puts PATH first on the receiver child's ``sys.path`` (e.g. a
``git archive`` of the previous commit) to measure the code before a change.
Last line: ``receiver: ... spans/s accepted; 8x15.6 MB: RSS peak ...; burst 300: ... resets; ...``.
"""

from __future__ import annotations

import argparse
import gzip
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks._common import machine, percentile, rag_request

ROOT = Path(__file__).resolve().parents[1]
PROTOBUF, JSON = "application/x-protobuf", "application/json"

_CHILD = r"""
import os, signal, sys, threading
sys.path.insert(0, sys.argv[1])
os.chdir(sys.argv[1])
from prometheus_client import CollectorRegistry
from contract.logs import configure_logging
from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings

class DiscardSink:
    '''Takes every record and drops it: the benchmark measures the receiver, not Kafka.'''
    submitted = 0
    def submit(self, record):
        self.submitted += 1
        return True
    def force_flush(self, timeout_s=None):
        return True
    def shutdown(self, timeout_s=None):
        return True

configure_logging("ERROR")
grpc = sys.argv[2:] == ["grpc"]
rs = ReceiverSettings(host="127.0.0.1", port=0, **({"grpc_port": 0} if grpc else {}))
r = OtlpReceiver(rs, CollectorSettings(), sink=DiscardSink(), registry=CollectorRegistry()).start()
print(r.port, r.grpc_port if grpc else 0, flush=True)
sys.stdin.read()  # until the parent closes our stdin
os._exit(0)
"""


class Receiver:
    """The receiver in a child process (``src`` first on its sys.path; ``grpc``: its OTLP/gRPC port on too);
    samples its RSS and threads."""

    def __init__(self, src: Path, *, grpc: bool = False) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(src), *(["grpc"] if grpc else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=str(src),
        )
        assert self.proc.stdout is not None
        self.port, self.grpc_port = (int(p) for p in self.proc.stdout.readline().split())
        self.pid = self.proc.pid
        self.peak_rss = self.peak_threads = 0
        self.series: list[tuple[float, int, int]] = []  # (t, rss kB, threads)
        self._halt = threading.Event()
        self.base_rss, self.base_threads = self.status()
        self._t = threading.Thread(target=self._sample, daemon=True)
        self._t.start()

    def fds(self) -> int:
        """Open file descriptors of the child now (each connection holds one)."""
        try:
            return len(os.listdir(f"/proc/{self.pid}/fd"))
        except OSError:
            return 0

    def status(self) -> tuple[int, int]:
        """(VmRSS kB, Threads) of the child now."""
        rss = threads = 0
        try:
            with open(f"/proc/{self.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        rss = int(line.split()[1])
                    elif line.startswith("Threads:"):
                        threads = int(line.split()[1])
        except OSError:
            pass
        return rss, threads

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the child has used."""
        try:
            with open(f"/proc/{self.pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0

    def hwm_mb(self) -> float:
        """VmHWM of the child (peak RSS since start), MiB."""
        try:
            with open(f"/proc/{self.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def _sample(self) -> None:
        t0 = time.monotonic()
        while not self._halt.is_set():
            rss, threads = self.status()
            self.peak_rss, self.peak_threads = max(self.peak_rss, rss), max(self.peak_threads, threads)
            self.series.append((time.monotonic() - t0, rss, threads))
            time.sleep(0.02)

    def close(self) -> None:
        self._halt.set()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)
        except Exception:  # pragma: no cover
            self.proc.kill()


# --------------------------------------------------------------------------- bodies


def rag_batches(n_batches: int, traces: int, seed: int = 11) -> list[Any]:
    """``n_batches`` ExportTraceServiceRequest messages of ``traces`` RAG traces (3 spans each) from the OTel SDK."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanLimits, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tp = TracerProvider(
        resource=Resource.create({"service.name": "rag-app", "service.version": "v1"}),
        span_limits=SpanLimits(max_span_attributes=512),
    )
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tp.get_tracer("bench")
    rng = random.Random(seed)
    out = []
    for _ in range(n_batches):
        exporter.clear()
        for _ in range(traces):
            rag_request(tracer, rng)
        out.append(encode_spans(exporter.get_finished_spans()))
    return out


def variants(batches: list[Any]) -> list[tuple[str, bytes, dict[str, str], int]]:
    """(label, body, headers, spans): protobuf, protobuf+gzip, JSON, JSON+gzip, protobuf/JSON chunked."""
    from collector import otlp

    out = []
    for i, req in enumerate(batches):
        spans = otlp.count_spans(req)
        raw = req.SerializeToString() if i % 2 == 0 else otlp.to_otlp_json(req)
        ctype = PROTOBUF if i % 2 == 0 else JSON
        if i % 6 >= 4:
            out.append(
                (ctype.split("/")[1] + "+chunked", raw, {"Content-Type": ctype, "Transfer-Encoding": "chunked"}, spans)
            )
        elif i % 6 >= 2:
            out.append(
                (
                    ctype.split("/")[1] + "+gzip",
                    gzip.compress(raw),
                    {"Content-Type": ctype, "Content-Encoding": "gzip"},
                    spans,
                )
            )
        else:
            out.append((ctype.split("/")[1], raw, {"Content-Type": ctype}, spans))
    return out


def big_body(n_spans: int = 380_000) -> bytes:
    """A ~15.6 MB protobuf ExportTraceServiceRequest of ``n_spans`` small spans (ids, start time, kind).

    1,000 spans per trace, so the 10,000 converted spans of a request open only 10 traces: the
    assembler's ``max_buffered_traces`` (429 buffer_full) does not refuse the next bodies before they
    are read, and the memory budget is what is measured.
    """
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    req = ExportTraceServiceRequest()
    spans = req.resource_spans.add().scope_spans.add().spans
    for i in range(n_spans):
        s = spans.add()
        s.trace_id = (i // 1000 + 1).to_bytes(16, "big")
        s.span_id = (i + 1).to_bytes(8, "big")
        s.start_time_unix_nano = 1_700_000_000_000_000_000 + i
        s.kind = 1
    return req.SerializeToString()


# --------------------------------------------------------------------------- clients

_RESETS = (
    ConnectionResetError,
    BrokenPipeError,
    ConnectionAbortedError,
    http.client.RemoteDisconnected,
    ConnectionRefusedError,
)


class Tally:
    """Thread-safe counts of answers by code, latencies, accepted spans, refusals and connection errors."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.codes: dict[int | str, int] = {}  # HTTP status, or gRPC status name
        self.latencies: list[float] = []
        self.accepted = 0
        self.retry_refusals = 0
        self.refused_without_retry = 0
        self.resets = 0
        self.errors: dict[str, int] = {}

    def answer(self, status: int, headers: Any, payload: bytes, spans: int, ctype: str, seconds: float) -> None:
        rejected = 0
        if status == 200:
            rejected = _rejected_spans(payload, ctype)
        with self.lock:
            self.codes[status] = self.codes.get(status, 0) + 1
            self.latencies.append(seconds)
            if status == 200:
                self.accepted += spans - rejected
            elif status in (429, 503):
                if headers.get("Retry-After"):
                    self.retry_refusals += 1
                else:
                    self.refused_without_retry += 1

    def grpc_answer(self, code: str, retry_info: bool, spans: int, rejected: int, seconds: float) -> None:
        """One gRPC call's outcome: ``code`` (status name), whether a refusal carried ``google.rpc.RetryInfo``."""
        with self.lock:
            self.codes[code] = self.codes.get(code, 0) + 1
            self.latencies.append(seconds)
            if code == "OK":
                self.accepted += spans - rejected
            elif code in ("UNAVAILABLE", "RESOURCE_EXHAUSTED"):
                if retry_info:
                    self.retry_refusals += 1
                else:
                    self.refused_without_retry += 1

    def error(self, exc: BaseException) -> None:
        with self.lock:
            name = type(exc).__name__
            self.errors[name] = self.errors.get(name, 0) + 1
            if isinstance(exc, _RESETS):
                self.resets += 1

    def codes_text(self) -> str:
        parts = [f"{c}: {n}" for c, n in sorted(self.codes.items())]
        parts += [f"{k}: {n}" for k, n in sorted(self.errors.items())]
        return ", ".join(parts) or "-"


def _rejected_spans(payload: bytes, ctype: str) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    if not payload:
        return 0
    if ctype == JSON:
        return int(json.loads(payload).get("partialSuccess", {}).get("rejectedSpans", 0))
    return int(ExportTraceServiceResponse.FromString(payload).partial_success.rejected_spans)


def post_once(
    port: int,
    body: bytes,
    headers: dict[str, str],
    tally: Tally,
    spans: int,
    conn: http.client.HTTPConnection | None = None,
    timeout: float = 120.0,
) -> http.client.HTTPConnection | None:
    """One POST (on ``conn`` if given, kept alive); records the outcome; returns the connection to reuse or None."""
    own = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t = time.perf_counter()
    try:
        if headers.get("Transfer-Encoding") == "chunked":  # streamed like the OTel JS SDK: no Content-Length
            own.request(
                "POST",
                "/v1/traces",
                body=iter([body[i : i + 65536] for i in range(0, len(body), 65536)]),
                headers={k: v for k, v in headers.items() if k != "Transfer-Encoding"},
                encode_chunked=True,
            )
        else:
            own.request("POST", "/v1/traces", body=body, headers=headers)
        resp = own.getresponse()
        payload = resp.read()
        tally.answer(resp.status, resp.headers, payload, spans, headers["Content-Type"], time.perf_counter() - t)
        if resp.will_close:
            own.close()
            return None
        return own
    except (OSError, http.client.HTTPException) as exc:
        tally.error(exc)
        own.close()
        return None


EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def grpc_channel(port: int, max_message: int) -> Any:
    """An insecure channel of its own (no subchannel shared with other channels: one connection per client)."""
    import grpc

    return grpc.insecure_channel(
        f"127.0.0.1:{port}",
        options=[("grpc.max_send_message_length", max_message), ("grpc.use_local_subchannel_pool", 1)],
    )


def export_once(channel: Any, message: bytes, tally: Tally, spans: int, timeout: float = 120.0) -> None:
    """One OTLP/gRPC ``Export`` of a serialized ExportTraceServiceRequest on ``channel``; records the outcome."""
    import grpc
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    export = channel.unary_unary(EXPORT, response_deserializer=ExportTraceServiceResponse.FromString)
    t = time.perf_counter()
    try:
        resp = export(message, timeout=timeout)  # bytes: no request serializer, sent as they are
        rejected = int(resp.partial_success.rejected_spans)
        tally.grpc_answer("OK", False, spans, rejected, time.perf_counter() - t)
    except grpc.RpcError as exc:
        trailers = dict(exc.trailing_metadata() or ())
        tally.grpc_answer(exc.code().name, "google.rpc.retryinfo-bin" in trailers, spans, 0, time.perf_counter() - t)


# --------------------------------------------------------------------------- phases


def concurrently(n: int, client: Any) -> float:
    """Run ``client`` on ``n`` threads at once (they meet at their own barrier); seconds until all finished."""
    t0 = time.monotonic()
    threads = [threading.Thread(target=client) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - t0


def phase_load(src: Path, clients: int, seconds: float, traces: int) -> dict:
    bodies = variants(rag_batches(64, traces))
    rec = Receiver(src)
    tally = Tally()
    stop = time.monotonic() + seconds
    by_label: dict[str, int] = {}

    def client(i: int) -> None:
        conn = None
        k = i
        while time.monotonic() < stop:
            label, body, headers, spans = bodies[k % len(bodies)]
            k += 1  # every client cycles through all four encodings: the same mix whatever the latencies
            t = time.perf_counter()
            conn = post_once(rec.port, body, headers, tally, spans, conn, timeout=30.0)
            with tally.lock:
                by_label.setdefault(label, []).append(time.perf_counter() - t)
        if conn is not None:
            conn.close()

    cpu0 = rec.cpu_s()
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    cpu = rec.cpu_s() - cpu0
    time.sleep(0.3)
    rec.close()
    sizes = sorted(len(b) for _, b, _, _ in bodies)
    p50_by = {label: percentile(v, 50) * 1000 for label, v in sorted(by_label.items())}
    return {
        "clients": clients,
        "seconds": elapsed,
        "spans_per_s": tally.accepted / elapsed,
        "requests": sum(tally.codes.values()),
        "p50_ms": percentile(tally.latencies, 50) * 1000,
        "p99_ms": percentile(tally.latencies, 99) * 1000,
        "codes": tally.codes_text(),
        "retry_refusals": tally.retry_refusals,
        "resets": tally.resets,
        "rss_peak_mb": rec.peak_rss / 1024,
        "rss_base_mb": rec.base_rss / 1024,
        "threads_peak": rec.peak_threads,
        "body_bytes": (sizes[0], sizes[len(sizes) // 2], sizes[-1]),
        "spans_per_request": bodies[0][3],
        "p50_by_encoding_ms": p50_by,
        "cpu_ms_per_1k_spans": cpu * 1e6 / max(1, tally.accepted),
    }


def phase_big(src: Path, n: int = 8, *, chunked: bool = False) -> dict:
    """``n`` concurrent 15.6 MB protobuf bodies, with Content-Length or (``chunked``) streamed without one, so the
    receiver's memory reservation grows as they arrive."""
    body = big_body()
    rec = Receiver(src)
    tally = Tally()
    barrier = threading.Barrier(n)
    headers = {"Content-Type": PROTOBUF, **({"Transfer-Encoding": "chunked"} if chunked else {})}

    def client() -> None:
        barrier.wait()
        post_once(rec.port, body, headers, tally, 380_000, timeout=300.0)

    return {**big_result(rec, tally, n, concurrently(n, client)), "body_mb": len(body) / 1e6}


def big_result(rec: Receiver, tally: Tally, n: int, elapsed: float, ok: int | str = 200) -> dict:
    """Closes ``rec`` after the ``n`` concurrent big requests; their RSS peak (VmHWM too), codes, answers."""
    time.sleep(0.2)
    hwm = rec.hwm_mb()
    rec.close()
    return {
        "n": n,
        "seconds": elapsed,
        "rss_peak_mb": max(hwm, rec.peak_rss / 1024),
        "rss_base_mb": rec.base_rss / 1024,
        "codes": tally.codes_text(),
        "answered_ok": tally.codes.get(ok, 0) + tally.retry_refusals,  # accepted, or refused with retry advice
        "refused_without_retry": tally.refused_without_retry,
        "resets": tally.resets,
        "accepted_spans": tally.accepted,
    }


def phase_big_grpc(src: Path, n: int = 8) -> dict:
    """``n`` concurrent OTLP/gRPC Export calls of the 15.6 MB message of :func:`big_body`, one channel each."""
    import grpc

    body = big_body()
    rec = Receiver(src, grpc=True)
    tally = Tally()
    barrier = threading.Barrier(n)

    def client() -> None:
        with grpc_channel(rec.grpc_port, len(body) + 1024) as channel:
            grpc.channel_ready_future(channel).result(timeout=30)  # connected before the barrier: calls at once
            barrier.wait()
            export_once(channel, body, tally, 380_000, timeout=300.0)

    return {**big_result(rec, tally, n, concurrently(n, client), ok="OK"), "body_mb": len(body) / 1e6}


def big_json_body(target: int = 15_500_000) -> bytes:
    """A gzip'd OTLP/JSON body of RAG traces that decompresses to ~``target`` bytes (the costliest bytes to decode)."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from collector import otlp

    batch = rag_batches(1, 10)[0]
    one = len(otlp.to_otlp_json(batch))
    req = ExportTraceServiceRequest()
    for _ in range(max(1, target // one)):
        req.resource_spans.extend(batch.resource_spans)
    return gzip.compress(otlp.to_otlp_json(req))


def phase_big_json(src: Path, n: int = 8) -> dict:
    body = big_json_body()
    rec = Receiver(src)
    tally = Tally()
    barrier = threading.Barrier(n)
    inflated = len(gzip.decompress(body))

    def client() -> None:
        barrier.wait()
        post_once(rec.port, body, {"Content-Type": JSON, "Content-Encoding": "gzip"}, tally, 0, timeout=300.0)

    return {**big_result(rec, tally, n, concurrently(n, client)), "wire_mb": len(body) / 1e6, "json_mb": inflated / 1e6}


def phase_burst(src: Path, n: int = 300) -> dict:
    _, body, headers, spans = variants(rag_batches(1, 5))[0]
    rec = Receiver(src)
    tally = Tally()
    barrier = threading.Barrier(n)

    def client() -> None:
        barrier.wait()
        post_once(rec.port, body, headers, tally, spans, timeout=60.0)

    elapsed = concurrently(n, client)
    rec.close()
    return {
        "n": n,
        "seconds": elapsed,
        "codes": tally.codes_text(),
        "resets": tally.resets,
        "retry_refusals": tally.retry_refusals,
        "p99_ms": percentile(tally.latencies, 99) * 1000,
        "threads_peak": rec.peak_threads,
        "rss_peak_mb": rec.peak_rss / 1024,
    }


def phase_slowloris(src: Path, n: int = 200, wait_s: float = 60.0) -> dict:
    """``n`` connections that send part of their headers, then one byte per second each."""
    rec = Receiver(src)
    time.sleep(0.3)
    base = rec.status()[1]
    base_fds = rec.fds()
    socks: list[socket.socket] = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", rec.port), timeout=5)
        s.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: victim\r\nContent-Type: application/x-protobuf\r\n")
        socks.append(s)
    t0 = time.monotonic()
    answers: dict[str, int] = {}
    open_socks = list(socks)
    back_at = None
    peak = peak_fds = 0
    while time.monotonic() - t0 < wait_s:
        threads, fds = rec.status()[1], rec.fds()
        peak, peak_fds = max(peak, threads), max(peak_fds, fds)
        if back_at is None and threads <= base and fds <= base_fds and time.monotonic() - t0 > 0.5:
            back_at = time.monotonic() - t0
            break
        still = []
        for s in open_socks:  # one header byte per second per connection, and see what came back
            try:
                s.setblocking(False)
                try:
                    got = s.recv(4096)
                except BlockingIOError:
                    got = None
                if got is not None:
                    key = got.split(b"\r\n", 1)[0].decode(errors="replace")[:24] if got else "closed"
                    answers[key] = answers.get(key, 0) + 1
                    continue
                s.send(b"X")
                still.append(s)
            except OSError as exc:
                answers[type(exc).__name__] = answers.get(type(exc).__name__, 0) + 1
        open_socks = still
        time.sleep(1.0)
    for s in socks:
        s.close()
    rec.close()
    return {
        "n": n,
        "base_threads": base,
        "peak_threads": peak,
        "base_fds": base_fds,
        "peak_fds": peak_fds,
        "back_s": back_at,
        "wait_s": wait_s,
        "rss_peak_mb": rec.peak_rss / 1024,
        "answers": ", ".join(f"{k}: {v}" for k, v in sorted(answers.items())) or "none",
    }


def phase_deep_json(src: Path, depth: int = 100_000) -> dict:
    rec = Receiver(src)
    tally = Tally()
    post_once(rec.port, b"[" * depth + b"]" * depth, {"Content-Type": JSON}, tally, 0, timeout=30.0)
    rec.close()
    return {"depth": depth, "codes": tally.codes_text()}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=16, help="concurrent keep-alive clients in the load phase")
    ap.add_argument("--seconds", type=float, default=10.0, help="duration of the load phase")
    ap.add_argument("--traces", type=int, default=10, help="RAG traces (3 spans each) per export request")
    ap.add_argument("--src", type=Path, default=ROOT, help="source tree for the receiver child (default: this one)")
    ap.add_argument(
        "--phases",
        default="load,big,bigchunked,bigjson,biggrpc,burst,slowloris,deep",
        help="comma-separated subset of load,big,bigchunked,bigjson,biggrpc,burst,slowloris,deep",
    )
    ap.add_argument("--slowloris-clients", type=int, default=200, help="half-sent connections in the slowloris phase")
    ap.add_argument("--slowloris-wait", type=float, default=60.0, help="max seconds to wait for threads to recover")
    args = ap.parse_args(argv)
    phases = set(args.phases.split(","))
    src = args.src.resolve()
    print(f"machine: {machine()}; receiver source: {src}; {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}")
    print("receiver child: default ReceiverSettings (+ CLAIMWATCH_RECEIVER_* env), sink DISCARDS records (no Kafka)")
    out: dict[str, Any] = {}
    if "load" in phases:
        r = out["load"] = phase_load(src, args.clients, args.seconds, args.traces)
        print(
            f"load: {r['clients']} clients x {r['seconds']:.1f} s, {r['spans_per_request']} spans/request "
            f"(body {r['body_bytes'][0]}-{r['body_bytes'][2]} B; protobuf, JSON, each +/- gzip): "
            f"{r['spans_per_s']:.0f} spans/s accepted, {r['requests']} requests, p50 {r['p50_ms']:.1f} ms, "
            f"p99 {r['p99_ms']:.1f} ms; codes {r['codes']}; refused with Retry-After {r['retry_refusals']}; "
            f"resets {r['resets']}; RSS {r['rss_base_mb']:.0f} -> peak {r['rss_peak_mb']:.0f} MB, "
            f"threads peak {r['threads_peak']}; receiver CPU {r['cpu_ms_per_1k_spans']:.0f} ms per 1k spans; "
            "p50 by encoding " + ", ".join(f"{k} {v:.1f} ms" for k, v in r["p50_by_encoding_ms"].items())
        )
    if "big" in phases:
        r = out["big"] = phase_big(src)
        print(
            f"big bodies: {r['n']} concurrent x {r['body_mb']:.1f} MB (380k spans): RSS {r['rss_base_mb']:.0f} -> "
            f"peak {r['rss_peak_mb']:.0f} MB; codes {r['codes']}; answered 200 or with Retry-After "
            f"{r['answered_ok']}/{r['n']}; resets {r['resets']}; {r['seconds']:.1f} s"
        )
    if "bigchunked" in phases:
        r = out["bigchunked"] = phase_big(src, chunked=True)
        print(
            f"big chunked: {r['n']} concurrent x {r['body_mb']:.1f} MB sent chunked: RSS {r['rss_base_mb']:.0f} -> "
            f"peak {r['rss_peak_mb']:.0f} MB; codes {r['codes']}; answered 200 or with Retry-After "
            f"{r['answered_ok']}/{r['n']}; resets {r['resets']}; {r['seconds']:.1f} s"
        )
    if "bigjson" in phases:
        r = out["bigjson"] = phase_big_json(src)
        print(
            f"big JSON: {r['n']} concurrent gzip'd OTLP/JSON RAG bodies ({r['wire_mb']:.1f} MB sent, "
            f"{r['json_mb']:.1f} MB JSON): RSS {r['rss_base_mb']:.0f} -> peak {r['rss_peak_mb']:.0f} MB; codes "
            f"{r['codes']}; answered 200 or with Retry-After {r['answered_ok']}/{r['n']}; resets {r['resets']}; "
            f"{r['seconds']:.1f} s"
        )
    if "biggrpc" in phases:
        r = out["biggrpc"] = phase_big_grpc(src)
        print(
            f"big gRPC: {r['n']} concurrent Export calls x {r['body_mb']:.1f} MB (380k spans): RSS "
            f"{r['rss_base_mb']:.0f} -> peak {r['rss_peak_mb']:.0f} MB; codes {r['codes']}; answered OK or with "
            f"RetryInfo {r['answered_ok']}/{r['n']}; refused without RetryInfo {r['refused_without_retry']}; "
            f"{r['seconds']:.1f} s"
        )
    if "burst" in phases:
        r = out["burst"] = phase_burst(src)
        print(
            f"burst: {r['n']} clients at once: codes {r['codes']}; resets {r['resets']}; refused with "
            f"Retry-After {r['retry_refusals']}; p99 {r['p99_ms']:.0f} ms; threads peak {r['threads_peak']}; "
            f"RSS peak {r['rss_peak_mb']:.0f} MB; {r['seconds']:.1f} s"
        )
    if "slowloris" in phases:
        r = out["slowloris"] = phase_slowloris(src, args.slowloris_clients, args.slowloris_wait)
        back = (
            f"back to baseline after {r['back_s']:.1f} s"
            if r["back_s"] is not None
            else f"NOT back to baseline after {r['wait_s']:.0f} s"
        )
        print(
            f"slowloris: {r['n']} half-sent requests (1 byte/s): threads {r['base_threads']} -> peak "
            f"{r['peak_threads']}, open fds {r['base_fds']} -> peak {r['peak_fds']}, {back}; clients saw "
            f"{r['answers']}; RSS peak {r['rss_peak_mb']:.0f} MB"
        )
    if "deep" in phases:
        r = out["deep"] = phase_deep_json(src)
        print(f"deep JSON: nested {r['depth']:,} deep: {r['codes']}")
    parts = []
    if "load" in out:
        parts.append(f"{out['load']['spans_per_s']:.0f} spans/s accepted (p99 {out['load']['p99_ms']:.0f} ms)")
    if "big" in out:
        parts.append(f"8x15.6 MB: RSS peak {out['big']['rss_peak_mb']:.0f} MB, {out['big']['answered_ok']}/8 answered")
    if "biggrpc" in out:
        g = out["biggrpc"]
        parts.append(f"8x15.6 MB gRPC: RSS peak {g['rss_peak_mb']:.0f} MB, {g['answered_ok']}/8 answered")
    if "burst" in out:
        parts.append(f"burst 300: {out['burst']['resets']} resets")
    if "slowloris" in out:
        s = out["slowloris"]
        parts.append(
            f"slowloris {s['n']}: threads and fds back in {s['back_s']:.1f} s"
            if s["back_s"] is not None
            else f"slowloris {s['n']}: threads/fds not back in {s['wait_s']:.0f} s"
        )
    if "deep" in out:
        parts.append(f"deep JSON: {out['deep']['codes']}")
    print("receiver: " + "; ".join(parts))
    sys.stdout.flush()
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()

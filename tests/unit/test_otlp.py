"""OTLP decoding: protobuf and OTLP/JSON requests become spans the extractor reads like SDK spans."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue, KeyValueList
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from collector import otlp
from collector.config import CollectorSettings
from collector.conventions import SpanExtractor
from collector.metrics import get_metrics
from collector.pipeline import TracePipeline
from collector.sink import MemorySink
from contract.record import RagTrace


def rag_spans(question: str = "How long do refunds take?", answer: str = "Refunds take 5 days.", n_docs: int = 3):
    """Finished SDK spans of one OpenInference RAG request (root CHAIN, RETRIEVER, LLM)."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({"service.name": "rag-app", "service.version": "v7"}))
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = tp.get_tracer("test")
    with tracer.start_as_current_span(
        "rag", attributes={"openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer}
    ):
        attrs = {"openinference.span.kind": "RETRIEVER", "input.value": question}
        for i in range(n_docs):
            attrs[f"retrieval.documents.{i}.document.id"] = f"d{i}"
            attrs[f"retrieval.documents.{i}.document.content"] = f"Refund policy clause {i}: refunds take {i + 4} days."
            attrs[f"retrieval.documents.{i}.document.score"] = 0.9 - i / 10
        with tracer.start_as_current_span("retrieve", attributes=attrs):
            pass
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "m-1",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": answer,
            },
        ):
            pass
    return exporter.get_finished_spans()


def build_all(spans, settings: CollectorSettings | None = None) -> list[RagTrace]:
    """Run spans through a TracePipeline and return the records it submits."""
    sink = MemorySink()
    pipe = TracePipeline(
        settings or CollectorSettings(late_span_wait_s=0.0), sink=sink, metrics=get_metrics(CollectorRegistry())
    )
    for span in spans:
        pipe.add_span(span)
    pipe.pop_complete(flush=True)
    return sink.records


def test_protobuf_request_yields_the_same_record_as_the_sdk_spans():
    """SDK spans encoded as OTLP protobuf and decoded again give the same RagTrace as the SDK spans themselves."""
    spans = rag_spans()
    body = encode_spans(spans).SerializeToString()
    decoded = otlp.spans_from_request(otlp.decode_protobuf(body))
    assert decoded.rejected == {} and len(decoded.spans) == 3
    direct, via_otlp = build_all(spans), build_all(decoded.spans)
    assert len(direct) == len(via_otlp) == 1
    a, b = direct[0].model_dump(), via_otlp[0].model_dump()
    assert a == b
    assert b["question"] == "How long do refunds take?" and b["answer"] == "Refunds take 5 days."
    assert [c["id"] for c in b["contexts"]] == ["d0", "d1", "d2"]
    assert b["slices"]["release"] == "v7" and b["slices"]["model"] == "m-1"


def test_span_adapter_exposes_ids_parent_status_resource_and_times():
    """The adapter carries the ids, parent link, status name, resource attributes and timestamps."""
    spans = rag_spans()
    decoded = otlp.spans_from_request(encode_spans(spans)).spans
    by_name = {s.name: s for s in decoded}
    sdk = {s.name: s for s in spans}
    for name, span in by_name.items():
        assert span.context.trace_id == sdk[name].context.trace_id
        assert span.context.span_id == sdk[name].context.span_id
        assert span.start_time == sdk[name].start_time and span.end_time == sdk[name].end_time
        assert span.resource.attributes["service.name"] == "rag-app"
        assert span.status.status_code.name == "UNSET"
    assert by_name["rag"].parent is None
    assert by_name["llm"].parent.span_id == sdk["rag"].context.span_id and not by_name["llm"].parent.is_remote


def test_remote_parent_flag_makes_a_local_root():
    """A span whose parent is flagged remote (SDK flags 0x300) is a local root for the extractor."""
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    parent = trace.NonRecordingSpan(trace.SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=trace.TraceFlags(1)))
    with tp.get_tracer("t").start_as_current_span("server", context=trace.set_span_in_context(parent)):
        pass
    span = otlp.spans_from_request(encode_spans(exporter.get_finished_spans())).spans[0]
    assert span.parent is not None and span.parent.is_remote
    assert SpanExtractor().extract(span).is_root


def test_otlp_json_with_hex_ids_decodes_and_round_trips():
    """OTLP/JSON (hex ids, camelCase, string int64) decodes to the same request as protobuf."""
    request = encode_spans(rag_spans())
    body = otlp.to_otlp_json(request)
    doc = json.loads(body)
    span0 = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span0["traceId"]) == 32 and int(span0["traceId"], 16)  # hex, not base64
    again = otlp.decode_json(body)
    assert again == request


def test_hand_written_otlp_json_is_read():
    """A minimal OTLP/JSON body as another language's exporter writes it gives a RAG record."""
    trace_id, root, child = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174", "eee19b7ec3c1b173"
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "node-rag"}}]},
                "scopeSpans": [
                    {
                        "scope": {"name": "manual"},
                        "spans": [
                            {
                                "traceId": trace_id,
                                "spanId": child,
                                "parentSpanId": root,
                                "name": "search",
                                "kind": 3,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000000100000000",
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "retrieval"}},
                                    {
                                        "key": "gen_ai.retrieval.query.text",
                                        "value": {"stringValue": "What is the fee?"},
                                    },
                                    {
                                        "key": "gen_ai.retrieval.documents",
                                        "value": {
                                            "arrayValue": {
                                                "values": [
                                                    {
                                                        "kvlistValue": {
                                                            "values": [
                                                                {"key": "id", "value": {"stringValue": "fee-1"}},
                                                                {
                                                                    "key": "content",
                                                                    "value": {"stringValue": "The fee is 3 euros."},
                                                                },
                                                                {"key": "score", "value": {"doubleValue": 0.8}},
                                                            ]
                                                        }
                                                    }
                                                ]
                                            }
                                        },
                                    },
                                ],
                            },
                            {
                                "traceId": trace_id,
                                "spanId": root,
                                "name": "chat",
                                "kind": 1,
                                "startTimeUnixNano": "1700000000000000000",
                                "endTimeUnixNano": "1700000000300000000",
                                "status": {"code": 2, "message": "boom"},
                                "attributes": [
                                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                    {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-x"}},
                                    {
                                        "key": "gen_ai.output.messages",
                                        "value": {
                                            "stringValue": json.dumps(
                                                [
                                                    {
                                                        "role": "assistant",
                                                        "parts": [{"type": "text", "content": "It is 3 euros."}],
                                                    }
                                                ]
                                            )
                                        },
                                    },
                                ],
                            },
                        ],
                    }
                ],
            }
        ]
    }
    decoded = otlp.spans_from_request(otlp.decode_json(json.dumps(body)))
    assert decoded.rejected == {}
    by_name = {s.name: s for s in decoded.spans}
    assert by_name["search"].parent.span_id == int(root, 16)
    assert by_name["chat"].status.status_code.name == "ERROR"
    docs = json.loads(by_name["search"].attributes["gen_ai.retrieval.documents"])
    assert docs == [{"id": "fee-1", "content": "The fee is 3 euros.", "score": 0.8}]
    [record] = build_all(decoded.spans)
    assert record.trace_id == trace_id and record.root_span_id == root
    assert record.question == "What is the fee?" and record.answer == "It is 3 euros."
    assert record.contexts[0].content == "The fee is 3 euros." and record.slices["model"] == "gpt-x"


def test_attribute_values_map_like_the_sdk():
    """Scalars stay scalars, scalar arrays become tuples, maps and nested arrays become JSON, bytes hex."""
    av = otlp.attribute_value
    assert av(AnyValue(string_value="x")) == "x"
    assert av(AnyValue(int_value=3)) == 3 and av(AnyValue(bool_value=True)) is True
    assert av(AnyValue(double_value=0.5)) == 0.5
    assert av(AnyValue(bytes_value=b"\x01\xff")) == "01ff"
    assert av(AnyValue(array_value=ArrayValue(values=[AnyValue(string_value="a"), AnyValue(int_value=1)]))) == ("a", 1)
    kv = AnyValue(kvlist_value=KeyValueList(values=[KeyValue(key="role", value=AnyValue(string_value="user"))]))
    assert json.loads(av(kv)) == {"role": "user"}
    assert json.loads(av(AnyValue(array_value=ArrayValue(values=[kv])))) == [{"role": "user"}]
    assert av(AnyValue()) is None


def test_spans_with_invalid_ids_are_rejected_with_a_reason():
    """All-zero or wrong-length ids are counted as rejected, the valid spans still come through."""
    good = trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="ok")
    bad_trace = trace_pb2.Span(trace_id=b"\x00" * 16, span_id=b"\x02" * 8, name="zero")
    bad_span = trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x02" * 4, name="short")
    bad_parent = trace_pb2.Span(trace_id=b"\x01" * 16, span_id=b"\x03" * 8, parent_span_id=b"\x01", name="p")
    req = ExportTraceServiceRequest()
    req.resource_spans.add().scope_spans.add().spans.extend([good, bad_trace, bad_span, bad_parent])
    decoded = otlp.spans_from_request(req)
    assert [s.name for s in decoded.spans] == ["ok"]
    assert decoded.rejected == {"invalid_trace_id": 1, "invalid_span_id": 1, "invalid_parent_id": 1}
    assert decoded.total == 4 and otlp.count_spans(req) == 4


def test_invalid_hex_id_in_json_rejects_the_span_not_the_request():
    """A non-hex id in OTLP/JSON turns into a rejected span; the request still decodes."""
    body = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {"traceId": "zz", "spanId": "eee19b7ec3c1b174", "name": "bad"},
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "good",
                            },
                        ]
                    }
                ]
            }
        ]
    }
    decoded = otlp.spans_from_request(otlp.decode_json(json.dumps(body).encode()))
    assert [s.name for s in decoded.spans] == ["good"] and decoded.rejected == {"invalid_trace_id": 1}


@pytest.mark.parametrize("body", [b"\xff\xff\xff\xff", b"\x0a\x05abc"])
def test_garbage_protobuf_raises_decode_error(body):
    """Bytes that are not an ExportTraceServiceRequest raise OtlpDecodeError."""
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode_protobuf(body)


@pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b'{"resourceSpans": 7}'])
def test_garbage_json_raises_decode_error(body):
    """Bodies that are not OTLP/JSON raise OtlpDecodeError."""
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode_json(body)


def test_export_response_has_partial_success_only_when_spans_were_rejected():
    """An all-accepted response is empty; a partial one carries rejected_spans and the message."""
    assert not otlp.export_response().HasField("partial_success")
    resp = otlp.export_response(2, "2 invalid_trace_id")
    assert resp.partial_success.rejected_spans == 2
    assert json.loads(otlp.to_otlp_json(resp)) == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": "2 invalid_trace_id"}
    }


def test_decode_by_encoding_name():
    """decode() picks protobuf or JSON from the kafkaexporter encoding name and refuses others."""
    request = encode_spans(rag_spans(n_docs=1))
    assert otlp.decode(request.SerializeToString(), "otlp_proto") == request
    assert otlp.decode(otlp.to_otlp_json(request), "otlp_json") == request
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode(b"", "jaeger_proto")


def test_collector_config_feeds_the_bridge():
    """deploy/otel-collector/config.yaml: otlp -> batch -> kafka exporter on the bridge's topic, otlp_proto, by trace id."""
    from pathlib import Path

    import yaml

    from collector.otlp_bridge import BridgeSettings

    cfg = yaml.safe_load((Path(__file__).parents[2] / "deploy" / "otel-collector" / "config.yaml").read_text())
    kafka = cfg["exporters"]["kafka/claimwatch"]
    assert kafka["traces"] == {"topic": BridgeSettings().source_topic, "encoding": "otlp_proto"}
    assert kafka["partition_traces_by_id"] is True
    assert kafka["producer"]["max_message_bytes"] <= 1_000_000
    pipeline = cfg["service"]["pipelines"]["traces"]
    assert pipeline["receivers"] == ["otlp"] and "batch" in pipeline["processors"]
    assert pipeline["exporters"] == ["kafka/claimwatch"]
    assert set(pipeline["processors"]) <= set(cfg["processors"])


def _bad_utf8_request() -> bytes:
    """A protobuf request of 2 spans: span name, attribute key and value of the second hold invalid UTF-8."""
    req = ExportTraceServiceRequest()
    ss = req.resource_spans.add().scope_spans.add()
    for i, name in ((1, "fine"), (2, "NAMEXX")):
        s = ss.spans.add()
        s.trace_id, s.span_id, s.name = (i).to_bytes(16, "big"), (1).to_bytes(8, "big"), name
    kv = ss.spans[1].attributes.add()
    kv.key, kv.value.string_value = "KEYXX", "VALXX"
    body = req.SerializeToString()
    # same lengths, so the wire format stays valid: a lone surrogate (protobufjs), a bad start byte, a cut sequence
    return body.replace(b"NAMEXX", b"abc\xed\xa0\xbd").replace(b"KEYXX", b"k\xffey!").replace(b"VALXX", b"v\xc3(al")


def test_invalid_utf8_protobuf_is_refused_strictly_and_repaired_leniently():
    """Without Repairs a bad string fails the request; with it, each bad string gets U+FFFD and is counted."""
    body = _bad_utf8_request()
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode_protobuf(body)
    repairs = otlp.Repairs()
    spans = otlp.spans_from_request(otlp.decode_protobuf(body, repairs)).spans
    assert repairs.strings == 3
    assert [s.name for s in spans] == ["fine", "abc\ufffd\ufffd\ufffd"]
    assert spans[1].attributes == {"k\ufffdey!": "v\ufffd(al"}
    assert otlp.decode(body, "otlp_proto", otlp.Repairs()) == otlp.decode_protobuf(body, otlp.Repairs())


@pytest.mark.parametrize("body", [b"\xff\xff\xff\xff", b"\x0a\x05abc", b"\x2a\x04ab\xff"])
def test_lenient_protobuf_still_refuses_a_corrupt_wire_format(body):
    """Repairs fix strings only: truncated or corrupt messages (with or without bad UTF-8) still raise."""
    repairs = otlp.Repairs()
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode_protobuf(body, repairs)
    assert repairs.strings == 0


def test_valid_protobuf_reports_no_repairs():
    """A valid request decodes the same with or without Repairs, and counts none."""
    body = encode_spans(rag_spans(n_docs=1)).SerializeToString()
    repairs = otlp.Repairs()
    assert otlp.decode_protobuf(body, repairs) == otlp.decode_protobuf(body) and repairs.strings == 0


def test_otlp_json_lone_surrogates_and_bad_bytes_are_repaired_leniently():
    """Escaped lone surrogates and raw non-UTF-8 bytes: refused strictly, U+FFFD and counted with Repairs."""
    span = {"traceId": "%032x" % 1, "spanId": "%016x" % 1, "name": "a\ud83d"}
    span["attributes"] = [{"key": "k\udc00", "value": {"stringValue": "pair \ud83d\ude00 kept"}}]
    escaped = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode_json(escaped)
    repairs = otlp.Repairs()
    (decoded,) = otlp.spans_from_request(otlp.decode_json(escaped, repairs)).spans
    assert repairs.strings == 2 and decoded.name == "a\ufffd"
    assert decoded.attributes == {"k\ufffd": "pair \U0001f600 kept"}
    raw_bytes = escaped.replace(b"a\\ud83d", b"a\xff")
    with pytest.raises(otlp.OtlpDecodeError):
        otlp.decode_json(raw_bytes)
    repairs = otlp.Repairs()
    (decoded,) = otlp.spans_from_request(otlp.decode_json(raw_bytes, repairs)).spans
    assert repairs.strings == 2 and decoded.name == "a\ufffd"


def test_an_all_zero_parent_id_is_a_root_not_an_invalid_span():
    """Exporters that write 8 zero bytes for "no parent" send roots: the trace completes into a record."""
    request = encode_spans(rag_spans())
    for span in request.resource_spans[0].scope_spans[0].spans:
        if not span.parent_span_id:
            span.parent_span_id = bytes(8)
    decoded = otlp.spans_from_request(otlp.decode_protobuf(request.SerializeToString()))
    assert decoded.rejected == {} and len(decoded.spans) == 3
    assert [s.parent for s in decoded.spans if s.name == "rag"] == [None]
    assert len(build_all(decoded.spans)) == 1

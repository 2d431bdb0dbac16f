"""Hostile Kafka values through the worker's record path (``tests.fakes.worker_drive.handle_now``): every bad record is dead-lettered with a reason, nothing raises.

The worker runs with tiny in-memory stand-ins for the few consumer/producer
methods it calls (no Kafka here; the broker path is covered by the integration
tests), and a real :class:`Evaluator` with the scripted ``TagJudge``.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from contract.record import RagTrace
from evaluator_worker.assembly import build_worker
from evaluator_worker.config import WorkerSettings
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import record_budget
from evaluator_worker.worker import Worker
from tests.fakes.judges import TagJudge
from tests.fakes.kafka import MemoryProducer, ScriptedConsumer
from tests.fakes.worker_drive import handle_now

KNOWN_REASONS = {"empty", "not_json", "not_object", "schema_version", "invalid", "invalid_text", "oversized"}


@dataclass
class Msg:
    """The fields of a kafka-python ConsumerRecord the worker reads."""

    value: bytes | None
    key: bytes | None = b"k"
    topic: str = "claimwatch.traces"
    partition: int = 0
    offset: int = 0


def make_worker(metrics: WorkerMetrics | None = None, **overrides) -> tuple[Worker, MemoryProducer, WorkerMetrics]:
    """A worker wired to the fakes, dedupe seeding disabled."""
    s = WorkerSettings()
    for k, v in overrides.items():
        setattr(s, k, v)
    metrics = metrics or WorkerMetrics()
    producer = MemoryProducer()
    w = build_worker(
        s,
        evaluator=Evaluator(TagJudge(), metrics, consistency=None),
        consumer=ScriptedConsumer(),
        producer=producer,
        seed_dedupe=lambda parts: [],
        exporter=None,
        shadow=None,
    )
    return w, producer, metrics


def outcome(w: Worker, p: MemoryProducer, value: bytes | None) -> tuple[str, str | None]:
    """Handle one message; return ('dlq', reason) or ('result', None)."""
    before = len(p.sent)
    started = time.monotonic()
    handle_now(w, Msg(value))
    assert time.monotonic() - started < 5.0, "handling one record must not hang"
    new = p.sent[before:]
    assert len(new) == 1, f"expected exactly one produce per record, got {len(new)}"
    topic, _key, _value, headers = new[0]
    if topic == w.settings.dead_letter_topic:
        reason = dict(headers)["claimwatch.reason"].decode()
        assert reason in KNOWN_REASONS, reason
        return "dlq", reason
    assert topic == w.settings.results_topic
    return "result", None


def _json_values():
    scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
    return st.recursive(
        scalars,
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
        max_leaves=12,
    )


FIELDS = ("schema_version", "trace_id", "question", "answer", "contexts", "slices", "attributes", "span_ids")

WORKER, PRODUCER, METRICS = make_worker()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=300))
def test_garbage_bytes_never_raise(value):
    """Random bytes are either a valid record (judged) or dead-lettered with a known reason."""
    kind, _ = outcome(WORKER, PRODUCER, value)
    if kind == "result":
        RagTrace.from_json_bytes(value)  # only genuinely valid records get judged


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(FIELDS), _json_values(), max_size=len(FIELDS)))
def test_wrong_json_types_and_missing_fields_never_raise(obj):
    """JSON objects with wrong types / missing fields are dead-lettered ('invalid'/'schema_version'), never raised."""
    kind, reason = outcome(WORKER, PRODUCER, json.dumps(obj).encode())
    if "trace_id" not in obj or not isinstance(obj.get("trace_id"), str):
        assert kind == "dlq" and reason in {"invalid", "schema_version"}


@settings(max_examples=60, deadline=None)
@given(
    st.one_of(
        st.integers(),
        st.text(max_size=5),
        st.floats(allow_nan=False),
        st.lists(st.integers(), max_size=2),
        st.booleans(),
        st.none(),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    )
)
def test_wrong_schema_version_goes_to_dlq(version):
    """Any schema_version other than the int 1 is dead-lettered as schema_version (including "1", true, [1])."""
    value = json.dumps({"schema_version": version, "trace_id": "ab" * 16, "answer": "Fine."}).encode()
    kind, reason = outcome(WORKER, PRODUCER, value)
    if type(version) is int and version == 1:
        assert kind == "result"
    else:
        assert (kind, reason) == ("dlq", "schema_version")


def test_named_hostile_values():
    """Empty, null value, non-object JSON, deep nesting, lone surrogates and invalid UTF-8 each get their reason."""
    w, p, m = make_worker()
    cases = {
        b"": "not_json",
        None: "empty",
        b"[1, 2]": "not_object",
        b'"just a string"': "not_object",
        b"[" * 50_000 + b"]" * 50_000: "not_json",
        b'{"trace_id": "a", "answer": "x\\ud800y"}': "invalid_text",
        b'{"trace_id": "a", "answer": "\xed\xa0\x80"}': "invalid_text",
        b'{"trace_id": "a", "answer": "\xff\xfe broken"}': "not_json",
        b'{"trace_id": "a", "contexts": "not a list"}': "invalid",
        b'{"trace_id": ["a"], "answer": "x"}': "invalid",
        b'{"schema_version": 2, "trace_id": "a"}': "schema_version",
    }
    for value, reason in cases.items():
        assert outcome(w, p, value) == ("dlq", reason), value[:40] if value else value
    assert m.registry.get_sample_value("claimwatch_records_total", {"outcome": "dead_lettered"}) == len(cases)
    assert w.processed == 0
    # an escaped emoji (a valid surrogate pair) is fine
    assert outcome(w, p, b'{"trace_id": "b", "answer": "ok \\ud83d\\ude00."}') == ("result", None)


def test_oversized_value_dead_lettered_without_judging_and_without_its_body():
    """A value over max_record_bytes is dead-lettered 'oversized'; a DLQ copy too big to produce keeps headers only."""
    w, p, m = make_worker(max_record_bytes=10_000)
    judge = w.evaluator.judge
    big = RagTrace(trace_id="c" * 32, answer="Long. " * 5_000).to_json_bytes()
    assert outcome(w, p, big) == ("dlq", "oversized")
    assert judge.calls == 0
    assert p.sent[-1][2] == big  # under the DLQ size cap: kept for inspection
    w2, p2, _ = make_worker(max_record_bytes=100_000)
    huge = RagTrace(
        trace_id="d" * 32, answer="x" * (record_budget(WorkerSettings().flow.producer_max_request_bytes) + 10)
    ).to_json_bytes()
    assert outcome(w2, p2, huge) == ("dlq", "oversized")
    _, _, value, headers = p2.sent[-1]
    assert value == b"" and int(dict(headers)["claimwatch.original_bytes"]) == len(huge)


def test_valid_record_with_hostile_text_is_judged_and_result_serialises():
    """Control characters, RTL marks, NUL and 10k-char slices are judged; the result JSON encodes; labels stay bounded."""
    w, p, m = make_worker()
    t = RagTrace(
        trace_id="e" * 32,
        question="\x00\u202e?",
        answer="A\x00b. \u202eC [U].",
        contexts=[{"content": "\x1b[31m red"}],
        slices={"release": "r" * 10_000, "route": "\n"},
    )
    assert outcome(w, p, t.to_json_bytes()) == ("result", None)
    json.loads(p.sent[-1][2])
    labels = [s.labels for fam in m.registry.collect() for s in fam.samples if "release" in s.labels]
    assert labels and all(len(lb["release"]) <= 128 for lb in labels)


def _series(registry) -> int:
    return sum(len(fam.samples) for fam in registry.collect())


LABELS = ("release", "model", "route", "environment", "tenant", "region", "feature", "experiment")


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_100k_distinct_slice_values_keep_the_series_count_bounded():
    """100,000 distinct slice values (12,500 records x 8 slice labels, all new) through the worker's record path: series plateau."""
    from evaluator_worker.metrics import SliceGuard

    w, p, m = make_worker(WorkerMetrics(guard=SliceGuard(LABELS, max_values_per_label=50)))

    def handle(i: int) -> None:
        t = RagTrace(
            trace_id=f"{i:032x}",
            answer="One. Two [U].",
            contexts=[{"content": "c"}],
            slices={k: f"{k}-{i}" for k in LABELS},
        )
        handle_now(w, Msg(t.to_json_bytes(), offset=i))

    for i in range(500):
        handle(i)
    plateau = _series(m.registry)
    started = time.monotonic()
    for i in range(500, 12_500):
        handle(i)
    elapsed = time.monotonic() - started
    series = _series(m.registry)
    print(f"12.5k records / 100k slice values: {elapsed:.1f}s for the last 12k; series {plateau} -> {series}")
    assert w.processed == 12_500 and len(p.sent) == 12_500
    assert series == plateau, "new slice values past the cap must not create series"
    combos = {
        tuple(s.labels.get(k) for k in LABELS)
        for fam in m.registry.collect()
        for s in fam.samples
        if "release" in s.labels
    }
    assert len(combos) <= 51 and ("other",) * len(LABELS) in combos


def test_metrics_exposition_carries_no_text():
    """Questions, answers, claims, evidence and trace ids never appear in the /metrics exposition."""
    from prometheus_client import generate_latest

    w, p, m = make_worker()
    t = RagTrace(
        trace_id="f00dfeed" * 4,
        question="Zanzibarquestion about Quokkafacts?",
        answer="Marmaladeclaim is true. Xylophoneclaim [C].",
        contexts=[{"content": "Evidenceword text."}],
        slices={"release": "v1"},
    )
    assert outcome(w, p, t.to_json_bytes()) == ("result", None)
    assert outcome(w, p, b'{"trace_id": "Poisonword", "contexts": 3}') == ("dlq", "invalid")
    body = generate_latest(m.registry).decode()
    assert 'verdict="contradicted"' in body
    for word in ("Zanzibar", "Quokka", "Marmalade", "Xylophone", "Evidenceword", "f00dfeed", "Poisonword"):
        assert word not in body

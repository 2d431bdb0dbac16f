"""The RagTrace wire contract: round trip, versioning, hard size limits."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract.errors import RecordDecodeError
from contract.record import RagTrace, enforce_limits


def _trace(**kw):
    base = dict(trace_id="ab" * 16, question="q?", answer="a.", contexts=["one", {"content": "two", "id": "d2"}])
    base.update(kw)
    return RagTrace.model_validate(base)


def test_round_trip_through_json_bytes():
    """A record survives to_json_bytes/from_json_bytes unchanged; string contexts become objects."""
    t = _trace(slices={"release": "v1", "n": 3})
    back = RagTrace.from_json_bytes(t.to_json_bytes())
    assert back == t
    assert back.contexts[0].content == "one" and back.contexts[1].id == "d2"
    assert back.slices == {"release": "v1", "n": "3"}


@pytest.mark.parametrize(
    "payload,reason",
    [
        (b"\xff\xfe garbage", "not_json"),
        (b"[1,2]", "not_object"),
        (b'{"schema_version": 99, "trace_id": "x"}', "schema_version"),
        (b'{"answer": "no trace id"}', "invalid"),
        (b'{"trace_id": "", "answer": "a"}', "invalid"),
        (b'{"trace_id": " \\n ", "answer": "a"}', "invalid"),
        (b'{"trace_id": "a/b", "answer": "a"}', "invalid"),
    ],
)
def test_bad_bytes_raise_decode_error_with_reason(payload, reason):
    """Undecodable values raise RecordDecodeError with a bounded reason label."""
    with pytest.raises(RecordDecodeError) as err:
        RagTrace.from_json_bytes(payload)
    assert err.value.reason == reason


def test_too_many_contexts_are_dropped_and_recorded():
    """Chunks past max_contexts are dropped (best-ranked kept) and the cut is recorded."""
    t = _trace(contexts=[f"chunk {i}" for i in range(100)])
    out = enforce_limits(t, max_contexts=10)
    assert len(out.contexts) == 10 and out.contexts[0].content == "chunk 0"
    assert out.truncation.contexts_dropped == 90


def test_oversize_record_fits_the_byte_limit():
    """A 5 MB record is cut to the byte limit; the answer survives longest."""
    t = _trace(answer="The answer. " * 100, contexts=["x" * 1_000_000 for _ in range(5)])
    out = enforce_limits(t, max_bytes=200_000, max_text_chars=10_000_000)
    assert len(out.to_json_bytes()) <= 200_000
    assert out.answer == t.answer
    assert out.truncation.chars_removed > 0 and "contexts.content" in out.truncation.fields


@settings(max_examples=50, deadline=None)
@given(answer=st.text(max_size=3000), contexts=st.lists(st.text(max_size=3000), max_size=30))
def test_enforce_limits_never_raises_and_always_fits(answer, contexts):
    """Arbitrary unicode text always yields a record within the limits."""
    t = _trace(answer=answer, contexts=contexts)
    out = enforce_limits(t, max_contexts=8, max_text_chars=2000, max_bytes=20_000)
    assert len(out.contexts) <= 8
    assert len(out.to_json_bytes()) <= 20_000
    json.loads(out.to_json_bytes())


def test_distinct_records_never_share_a_record_key():
    """Only a trace id that identifies decodes: no blank one (all "duplicates"), no '/' (ambiguous with a call)."""
    assert _trace(trace_id="a", call_id="b").record_key == "a/b"
    with pytest.raises(ValueError):
        _trace(trace_id="a/b")
    with pytest.raises(ValueError):
        _trace(trace_id="   ")

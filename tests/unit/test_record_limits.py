"""enforce_limits on big records: always under max_bytes, in a few passes, with the cuts it always made.

A record over the limit used to be re-serialised after every halving of its longest text (up to 200 times: 10 s
for 64 chunks of control characters) and was returned still over the limit when that guard ran out (CJK 2.6 MB,
control characters 5.3 MB against 900 kB), to be lost to Kafka's message-size limit.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contract.errors import RecordError
from contract.record import DEFAULT_MAX_RECORD_BYTES, Context, RagTrace, RecordTooLargeError, enforce_limits

MARK = " …[truncated]"

#: characters by what they take on the wire: 1 byte, 3 bytes (UTF-8), 4 bytes (UTF-8), 6 bytes (\u0001 escape)
CHARS = {"ascii": "a", "cjk": "\u4e2d", "emoji": "\U0001f600", "control": "\x01", "quote": '"'}


def _size(rec: RagTrace) -> int:
    return len(rec.to_json_bytes())


def _timed_limits(rec: RagTrace, **kw):
    t0 = time.perf_counter()
    out = enforce_limits(rec, **kw)
    return out, time.perf_counter() - t0


@pytest.mark.parametrize("kind", sorted(CHARS))
def test_many_chunks_of_any_text_fit_quickly(kind):
    """64 chunks plus question and answer of 100,000 characters each (6.6-40 MB of JSON) fit 900 kB in well under 1 s."""
    ch = CHARS[kind]
    rec = RagTrace(
        trace_id="ab" * 16,
        question=ch * 100_000,
        answer=ch * 100_000,
        contexts=[Context(content=ch * 100_000, id=f"d{i}") for i in range(64)],
        attributes={"route": "search"},
    )
    out, took = _timed_limits(rec)
    assert _size(out) <= DEFAULT_MAX_RECORD_BYTES
    assert took < 1.0, f"{kind}: {took:.2f}s"
    assert len(out.contexts) == 64 and [c.id for c in out.contexts] == [f"d{i}" for i in range(64)]
    assert out.truncation is not None and out.truncation.original_bytes == _size(rec)
    assert "attributes" in out.truncation.fields and out.attributes == {}


@pytest.mark.parametrize("kind", sorted(CHARS))
def test_a_few_texts_of_many_megabytes_fit_quickly(kind):
    """With max_text_chars out of the way, four 2-million-character chunks still fit in one quick pass."""
    ch = CHARS[kind]
    rec = RagTrace(trace_id="t", answer="The answer.", contexts=[ch * 2_000_000 for _ in range(4)])
    out, took = _timed_limits(rec, max_text_chars=10_000_000)
    assert _size(out) <= DEFAULT_MAX_RECORD_BYTES
    assert took < 1.0, f"{kind}: {took:.2f}s"
    assert out.answer == "The answer."


def test_the_longest_texts_give_way_first_and_evenly():
    """Long chunks are cut to one common wire size; a short chunk, the question and the answer are untouched."""
    rec = RagTrace(
        trace_id="t",
        question="What is the refund window?",
        answer="Thirty days.",
        contexts=["short chunk", "x" * 50_000, "\u4e2d" * 30_000, "y" * 20_000],
    )
    out = enforce_limits(rec, max_bytes=40_000)
    assert _size(out) <= 40_000
    assert out.question == rec.question and out.answer == rec.answer and out.contexts[0].content == "short chunk"
    cut = [c.content for c in out.contexts[1:]]
    assert all(c.endswith(MARK) for c in cut)
    wire = [len(json.dumps(c, ensure_ascii=False).encode()) for c in cut]
    assert max(wire) - min(wire) <= 3  # one level, give or take a split character
    assert out.truncation.fields == ["contexts.content"]
    assert out.truncation.chars_removed == sum(
        len(a.content) - len(b.content) + len(MARK) for a, b in zip(rec.contexts[1:], out.contexts[1:])
    )


def test_the_answer_is_cut_only_when_everything_else_is_at_the_floor():
    """The answer is cut last (once every chunk and the question are down to 64 bytes), and only as far as needed."""
    rec = RagTrace(trace_id="t", question="q" * 5_000, answer="a" * 20_000, contexts=["c" * 5_000 for _ in range(10)])
    out = enforce_limits(rec, max_bytes=10_000)
    assert _size(out) <= 10_000
    assert out.answer.startswith("a" * 5_000) and out.answer.endswith(MARK)
    assert all(len(c.content.encode()) <= 64 for c in out.contexts) and len(out.question.encode()) <= 64
    assert out.truncation.fields[-1] == "answer"


def test_the_truncation_note_counts_towards_the_limit():
    """A record cut only by max_text_chars that lands just under max_bytes still fits with its note attached."""
    rec = RagTrace(trace_id="t", answer="a" * 500, contexts=["c" * 5_000])
    bare = enforce_limits(rec, max_text_chars=1_000, max_bytes=10**9).model_copy(update={"truncation": None})
    limit = _size(bare) + 5
    out = enforce_limits(rec, max_text_chars=1_000, max_bytes=limit)
    assert _size(out) <= limit
    assert out.truncation is not None and out.truncation.chars_removed > 0


def test_fail_safe_drops_the_lowest_ranked_chunks_when_their_ids_are_too_big():
    """Chunks with huge ids (never cut) are dropped from the end until the record fits; the drop is recorded."""
    rec = RagTrace(trace_id="t", answer="ok", contexts=[Context(id=f"{i}" * 30_000, content="text") for i in range(9)])
    out = enforce_limits(rec, max_bytes=100_000)
    assert _size(out) <= 100_000
    assert [c.id[0] for c in out.contexts] == ["0", "1", "2"]
    assert out.truncation.contexts_dropped == 6 and "contexts" in out.truncation.fields


def test_a_record_that_cannot_fit_raises_a_value_error_the_caller_drops():
    """Slices alone over max_bytes: RecordTooLargeError, a ValueError (and RecordError) with reason too_large."""
    rec = RagTrace(trace_id="t", answer="a" * 10_000, slices={"release": "v" * 50_000})
    with pytest.raises(RecordTooLargeError) as err:
        enforce_limits(rec, max_bytes=20_000)
    assert isinstance(err.value, ValueError) and isinstance(err.value, RecordError)
    assert err.value.reason == "too_large"


def test_a_record_that_fits_is_returned_unchanged():
    """Nothing over any limit: no cut, no truncation note."""
    rec = RagTrace(trace_id="t", question="q?", answer="a.", contexts=["one", "two"], attributes={"k": 1})
    out = enforce_limits(rec)
    assert out == rec and out.truncation is None


texts = st.text(st.characters(codec="utf-8"), max_size=400) | st.builds(
    lambda ch, n: ch * n, st.sampled_from(list(CHARS.values()) + ["\n", "\\", "é"]), st.integers(0, 20_000)
)


@settings(max_examples=150, deadline=None)
@given(
    question=st.none() | texts,
    answer=texts,
    contexts=st.lists(texts, max_size=20),
    attributes=st.dictionaries(st.text(max_size=10), st.text(max_size=50) | st.integers(), max_size=3),
    max_bytes=st.integers(1_000, 80_000),
    max_contexts=st.integers(0, 25),
    max_text_chars=st.integers(0, 30_000),
)
def test_the_result_always_fits_and_only_cuts_with_markers(
    question, answer, contexts, attributes, max_bytes, max_contexts, max_text_chars
):
    """Any texts and limits: the result fits, is valid JSON, and every text is kept whole or as a marked prefix."""
    rec = RagTrace(trace_id="ab" * 16, question=question, answer=answer, contexts=contexts, attributes=attributes)
    out = enforce_limits(rec, max_bytes=max_bytes, max_contexts=max_contexts, max_text_chars=max_text_chars)
    assert _size(out) <= max_bytes
    assert RagTrace.from_json_bytes(out.to_json_bytes()) == out
    assert len(out.contexts) <= max_contexts
    pairs = [(rec.answer, out.answer), (rec.question, out.question)]
    pairs += [(a.content, b.content) for a, b in zip(rec.contexts, out.contexts)]
    for before, after in pairs:
        assert after == before or (after.endswith(MARK) and before.startswith(after[: -len(MARK)]))
    if out.truncation is not None:
        assert out.truncation.original_bytes == _size(rec)

"""Where evaluated answers go: the Kafka results topic, or a JSONL file (``claimwatch score``).

Also :class:`DedupeWindow`, the bounded set of trace ids already counted, and the
encoders that make every Kafka write fit the producer's request limit
(``flow.producer_max_request_bytes``, 1 MiB by default, as Kafka's own default):

- :func:`encode_result`: a result too large (a 1 MB question, thousands of claims) is
  shrunk in stages, text first, verdicts last; the dropped fields are listed in
  ``truncated`` and counted (``claimwatch_results_shrunk_total``);
- :func:`fit_key`: keys above ``MAX_KEY_BYTES`` become ``sha256:<hex>`` with the original
  length in a header; :func:`fit_value` replaces a dead letter's value that cannot fit
  with ``b""`` and an ``original_bytes`` header.

So no single record can make a write fail for size and stop the worker.

:func:`read_result_keys` reads the record keys of the latest results back (the worker seeds its dedupe
window with them when it is assigned partitions).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Callable, Iterable

from evaluator_worker.scoring import AnswerResult

if TYPE_CHECKING:
    from evaluator_worker.config import WorkerSettings

#: bytes kept free under the producer's request limit for record-batch framing, headers and the topic name
REQUEST_HEADROOM_BYTES = 16_384
#: longest Kafka key written as is (trace ids are 32 characters)
MAX_KEY_BYTES = 1_024
#: text fields are cut to this many characters in the first shrinking stage
SHRUNK_TEXT_CHARS = 200

Header = tuple[str, bytes]


def record_budget(max_request_bytes: int) -> int:
    """Bytes a key plus value may take so that one record fits a produce request."""
    return max(1_024, max_request_bytes - REQUEST_HEADROOM_BYTES)


def fit_key(key: bytes | None, limit: int = MAX_KEY_BYTES) -> tuple[bytes | None, list[Header]]:
    """The key, or ``sha256:<hex>`` of it (plus a header with its length) when it is over ``limit``."""
    if key is None or len(key) <= limit:
        return key, []
    digest = hashlib.sha256(key).hexdigest().encode()
    return b"sha256:" + digest, [("claimwatch.original_key_bytes", str(len(key)).encode())]


def fit_value(value: bytes | None, budget: int) -> tuple[bytes, list[Header]]:
    """The value, or ``b""`` plus an ``original_bytes`` header when it cannot fit ``budget``."""
    value = value or b""
    if len(value) <= budget:
        return value, []
    return b"", [("claimwatch.original_bytes", str(len(value)).encode())]


def _cut(text: str | None, n: int) -> str | None:
    return text if text is None or len(text) <= n else text[:n] + "\u2026"


def _drop_question_answer(r: AnswerResult) -> list[str]:
    dropped = [f for f in ("question", "answer") if getattr(r, f)]
    r.question = r.answer = None
    return dropped


def _cut_claim_text(r: AnswerResult) -> list[str]:
    for c in r.claims:
        c.text = _cut(c.text, SHRUNK_TEXT_CHARS) or ""
        c.evidence = _cut(c.evidence, SHRUNK_TEXT_CHARS)
        c.reason = _cut(c.reason, SHRUNK_TEXT_CHARS)
        c.context_excerpt = None
        c.context_id, c.context_source = _cut(c.context_id, 128), _cut(c.context_source, 128)
        c.context_tool = _cut(c.context_tool, 128)
    r.error = _cut(r.error, SHRUNK_TEXT_CHARS)
    return ["claims.text(cut)", "claims.context_excerpt"]


def _drop_claim_text(r: AnswerResult) -> list[str]:
    for c in r.claims:
        c.text, c.evidence, c.reason = "", None, None
        c.context_id = c.context_source = c.context_tool = c.context_excerpt = None
    r.consistency = None
    r.parity = None
    return ["claims.text", "claims.evidence", "claims.reason", "claims.context", "consistency", "parity"]


def _drop_claims(r: AnswerResult) -> list[str]:
    r.claims = []  # counts, scores and the answer risk stay
    r.usage = {k: v for k, v in r.usage.items() if k != "by_model"}
    return ["claims"]


def _cut_slices(r: AnswerResult) -> list[str]:
    r.slices = {k[:64]: v[:128] for k, v in list(r.slices.items())[:16]}
    r.trace_id = r.trace_id[:256]
    return ["slices(cut)"]


#: shrinking stages, cheapest loss first: each is tried only if the result still does not fit
SHRINK_STAGES: tuple[Callable[[AnswerResult], list[str]], ...] = (
    _drop_question_answer,
    _cut_claim_text,
    _drop_claim_text,
    _drop_claims,
    _cut_slices,
)


def encode_result(result: AnswerResult, budget: int) -> tuple[bytes, bytes, list[Header], list[str]]:
    """Key, value and headers of a result that fit ``budget`` bytes; the last item lists what was dropped."""
    key, headers = fit_key(result.record_key.encode("utf-8", "replace"))  # what the dedupe window is seeded with
    value = result.model_dump_json().encode("utf-8")
    if len(key or b"") + len(value) <= budget:
        return key or b"", value, headers, []
    shrunk = result.model_copy(deep=True)
    dropped: list[str] = []
    for stage in SHRINK_STAGES:
        dropped += stage(shrunk)
        shrunk.truncated = list(result.truncated) + dropped
        value = shrunk.model_dump_json().encode("utf-8")
        if len(key or b"") + len(value) <= budget:
            break
    else:  # pathological (a budget below a few hundred bytes): the counts alone
        value = json.dumps(
            {
                "trace_id": shrunk.trace_id,
                "call_id": shrunk.call_id,
                "outcome": shrunk.outcome,
                "counts": shrunk.counts,
                "answer_risk": shrunk.answer_risk,
                "at_risk": shrunk.at_risk,
                "truncated": ["all"],
            }
        ).encode()
        dropped.append("all")
    return key or b"", value, headers, dropped


class JsonlResults:
    """One JSON object per line (UTF-8)."""

    def __init__(self, target: str | Path | IO[str]) -> None:
        if isinstance(target, (str, Path)):
            self._fh: IO[str] = open(target, "w", encoding="utf-8")
            self._owned = True
        else:
            self._fh = target
            self._owned = False

    def write(self, result: AnswerResult) -> None:
        self._fh.write(result.model_dump_json() + "\n")

    def flush(self, timeout_s: float = 10.0) -> None:
        self._fh.flush()

    def close(self) -> None:
        self._fh.flush()
        if self._owned:
            self._fh.close()


class DedupeWindow:
    """The last ``maxsize`` trace ids seen (LRU). Thread-safe."""

    def __init__(self, maxsize: int = 100_000) -> None:
        self.maxsize = maxsize
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()

    def __contains__(self, trace_id: str) -> bool:
        with self._lock:
            return trace_id in self._ids

    def add(self, trace_id: str) -> None:
        with self._lock:
            self._ids[trace_id] = None
            self._ids.move_to_end(trace_id)
            while len(self._ids) > self.maxsize:
                self._ids.popitem(last=False)

    def update(self, ids: Iterable[str]) -> None:
        for i in ids:
            self.add(i)

    def __len__(self) -> int:
        return len(self._ids)


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


def read_result_keys(
    settings: WorkerSettings,
    partitions: list[int] | None,
    limit: int,
    timeout_s: float = 5.0,
    source_partitions: int | None = None,
) -> list[str]:
    """Trace ids of the last ``limit`` results.

    Results are keyed by trace id like the traces, so when both topics have the
    same partition count a trace's result lives on the same partition number and
    only the assigned ``partitions`` are read; otherwise every partition is.
    Every broker call is bounded by ``timeout_s`` (what was read by then is returned).
    """
    topic = settings.results_topic
    if not topic or limit <= 0:
        return []
    from kafka import KafkaConsumer, TopicPartition

    reader = KafkaConsumer(enable_auto_commit=False, **settings.kafka.client_kwargs())
    try:
        available = reader.partitions_for_topic(topic)
        if not available:
            return []
        if source_partitions is not None and source_partitions != len(available):
            partitions = None
        parts = [TopicPartition(topic, p) for p in sorted(available) if partitions is None or p in partitions]
        if not parts:
            return []
        reader.assign(parts)
        deadline = time.monotonic() + timeout_s
        call_ms = max(100, int(timeout_s * 1000 / 2))
        ends = reader.end_offsets(parts, timeout_ms=call_ms)
        begins = reader.beginning_offsets(parts, timeout_ms=call_ms)
        per = max(1, limit // len(parts))
        todo = {}
        for tp in parts:
            start = max(begins[tp], ends[tp] - per)
            if ends[tp] > start:
                reader.seek(tp, start)
                todo[tp] = ends[tp]
        keys: list[str] = []
        while todo and time.monotonic() < deadline:
            batch = reader.poll(timeout_ms=200)
            for tp, msgs in batch.items():
                for m in msgs:
                    if m.key:
                        keys.append(m.key.decode("utf-8", "replace"))
                    if m.offset + 1 >= todo.get(tp, 0):
                        todo.pop(tp, None)
        return keys
    finally:
        reader.close()

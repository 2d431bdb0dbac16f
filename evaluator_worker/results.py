"""Where evaluated answers go: the Kafka results topic, or a JSONL file (``claimwatch score``).

Also :class:`DedupeWindow`, the bounded set of trace ids already counted.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import IO, Iterable, Protocol

from evaluator_worker.scoring import AnswerResult


class ResultSink(Protocol):
    def write(self, result: AnswerResult) -> None: ...

    def flush(self, timeout_s: float = 10.0) -> None: ...

    def close(self) -> None: ...


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


class KafkaResults:
    """Produces each result to the results topic, keyed by trace id.

    ``flush`` blocks until every write is acknowledged (or raises), so the
    worker commits offsets only after results are durable.
    """

    def __init__(self, producer, topic: str) -> None:
        self._producer = producer
        self._topic = topic

    def write(self, result: AnswerResult) -> None:
        self._producer.send(
            self._topic,
            key=result.trace_id.encode("utf-8", "replace"),
            value=result.model_dump_json().encode("utf-8"),
        )

    def flush(self, timeout_s: float = 10.0) -> None:
        self._producer.flush(timeout=timeout_s)

    def close(self) -> None:
        self._producer.flush(timeout=5)


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


def result_summary(result: AnswerResult) -> str:
    """One human line per result (used by the CLI)."""
    c = result.counts
    f = "n/a" if result.faithfulness is None else f"{result.faithfulness:.2f}"
    return (
        f"{result.trace_id[:16]:16} {result.outcome:9} faithfulness={f} "
        f"S={c.get('SUPPORTED', 0)} U={c.get('UNSUPPORTED', 0)} C={c.get('CONTRADICTED', 0)} E={c.get('ERROR', 0)}"
    )


def dumps(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)

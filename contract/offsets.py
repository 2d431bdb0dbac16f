"""Which offsets may be committed: per partition, the contiguous prefix of finished records.

Shared by the two consumer groups of the project: the evaluator worker (a record is finished when its
result write was acknowledged) and the OTLP bridge (a message is finished when every trace it fed has left
the assembler), so both commit by the same rule.

Records of one partition are handed out in offset order but finish in any order (many
answers are judged at once). A record is *finished* when its outcome is durable: its
result or dead letter was acknowledged by the broker, or it needed no write (a
duplicate). The commit point of a partition is one past the last offset of the longest
finished prefix, so a committed offset never covers a record whose result could still
be lost. Before any record of a partition finished, the commit point is the first offset
handed out: committing it pins where this owner started, so a restart does not fall back to
``auto_offset_reset``.
"""

from __future__ import annotations

from collections import deque
from typing import Hashable


class _Partition:
    __slots__ = ("pending", "finished", "committable", "committed", "start")

    def __init__(self) -> None:
        self.pending: deque[int] = deque()  # tracked offsets, ascending
        self.finished: set[int] = set()
        self.committable: int | None = None  # next offset to commit (one past the finished prefix)
        self.committed: int | None = None  # last commit that succeeded
        self.start: int | None = None  # the first offset tracked (where this owner started)


class OffsetLedger:
    """Tracks offsets per partition (any hashable key, e.g. ``TopicPartition``). Not thread-safe: one owner thread."""

    def __init__(self) -> None:
        self._parts: dict[Hashable, _Partition] = {}

    def track(self, tp: Hashable, offset: int) -> None:
        """A record was handed out. Offsets of a partition must arrive in ascending order."""
        p = self._parts.get(tp)
        if p is None:  # a new owner: its commit point starts where it started (pins the group's position there)
            p = self._parts[tp] = _Partition()
            p.committable = p.start = offset
        if p.pending and offset <= p.pending[-1]:
            raise ValueError(f"offset {offset} of {tp} tracked after {p.pending[-1]}: forget() the partition first")
        p.pending.append(offset)

    def finish(self, tp: Hashable, offset: int) -> None:
        """The record's outcome is durable (unknown partitions/offsets are ignored: the partition was given up)."""
        p = self._parts.get(tp)
        if p is None:
            return
        p.finished.add(offset)
        while p.pending and p.pending[0] in p.finished:
            done = p.pending.popleft()
            p.finished.discard(done)
            p.committable = done + 1

    def to_commit(self) -> dict[Hashable, int]:
        """Commit points that moved since the last ``committed()``."""
        return {
            tp: p.committable
            for tp, p in self._parts.items()
            if p.committable is not None and p.committable != p.committed
        }

    def committed(self, offsets: dict[Hashable, int]) -> None:
        """Record a successful commit."""
        for tp, off in offsets.items():
            p = self._parts.get(tp)
            if p is not None:
                p.committed = off

    def rewind_points(self) -> dict[Hashable, int]:
        """Where to read each partition again so that nothing after its last commit is skipped: the last commit,
        or where this owner started when it has not committed yet."""
        out: dict[Hashable, int] = {}
        for tp, p in self._parts.items():
            point = p.committed if p.committed is not None else p.start
            if point is not None:
                out[tp] = point
        return out

    def unfinished(self, tp: Hashable | None = None) -> int:
        """Records handed out and not finished (of one partition, or all)."""
        if tp is not None:
            p = self._parts.get(tp)
            return len(p.pending) if p else 0
        return sum(len(p.pending) for p in self._parts.values())

    def tracked(self) -> list[Hashable]:
        """The partitions with state (tracked since their last ``forget``)."""
        return list(self._parts)

    def forget(self, tp: Hashable) -> None:
        """Drop a partition (revoked or lost): its unfinished records will be replayed by the next owner."""
        self._parts.pop(tp, None)

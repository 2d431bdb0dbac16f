"""The worker's partitions: assignment (dedupe seeding), revoke with drain, commits, pause/resume, lag.

Commits: per partition, the contiguous prefix of finished offsets (``OffsetLedger``), so an offset
is committed only when the result or dead letter of every record up to it was acknowledged by the
broker (``acks=all``) and a committed record is never lost.

A rebalance never kills the worker: on revoke, the revoked partitions' answers get
``flow.drain_timeout_s`` to finish and be committed; the rest is abandoned uncommitted (the next
owner replays it; the dedupe window, seeded from the results topic on assignment, skips what
already has a durable result). Lost partitions (the session expired) are abandoned at once.

Threading: the rebalance listener runs on kafka-python's IO thread and takes the worker's lock, like
the poll thread; the lock is never held across a blocking consumer call (poll, commit, offsets).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from contract.errors import ClaimwatchError
from contract.group import GroupListener, commit_offsets, loop_sleep, off_loop
from contract.logs import get_logger
from evaluator_worker.config import WorkerSettings
from evaluator_worker.jobs import Halt, JobTable
from evaluator_worker.records import Records
from evaluator_worker.seams import Consumer

log = get_logger("evaluator_worker.consumer")

#: commit timeout (a stalled broker must not hold the loop for long)
COMMIT_TIMEOUT_MS = 5_000
#: lag lookups must not hold the loop when the broker stalls
LAG_TIMEOUT_MS = 1_000


def make_consumer(settings: WorkerSettings) -> KafkaConsumer:
    c = settings.consumer
    return KafkaConsumer(
        group_id=c.group_id,
        enable_auto_commit=False,
        auto_offset_reset=c.auto_offset_reset,
        session_timeout_ms=c.session_timeout_ms,
        heartbeat_interval_ms=c.heartbeat_interval_ms,
        max_poll_interval_ms=c.max_poll_interval_ms,
        max_poll_records=c.max_poll_records,
        **settings.kafka.client_kwargs(),
    )


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
    """
    topic = settings.results_topic
    if not topic or limit <= 0:
        return []
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
        ends = reader.end_offsets(parts)
        begins = reader.beginning_offsets(parts)
        per = max(1, limit // len(parts))
        todo = {}
        for tp in parts:
            start = max(begins[tp], ends[tp] - per)
            if ends[tp] > start:
                reader.seek(tp, start)
                todo[tp] = ends[tp]
        keys: list[str] = []
        deadline = time.monotonic() + timeout_s
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


class Partitions:
    """The consumer's side of the worker: what is assigned, paused, committed, and how far behind it is."""

    def __init__(
        self,
        settings: WorkerSettings,
        records: Records,
        table: JobTable,
        lock: threading.RLock,
        halt: Halt,
        pump: Callable[[], None],
        clock: Callable[[], float],
        seed: Callable[[list[int]], list[str]] | None,
        lag_interval_s: float,
    ) -> None:
        self.settings = settings
        self.consumer: Consumer | None = None
        self.paused = False
        self.last_commit = 0.0
        self._records = records
        self._metrics = records.metrics
        self._table = table
        self._lock = lock
        self._halt = halt
        self._pump = pump  # collect judged answers and acknowledgements, without committing
        self._clock = clock
        self._seed = seed
        self._lag_interval_s = lag_interval_s
        self._last_lag = 0.0

    def subscribe(self) -> None:
        """Build the group consumer and join the group on the worker's topic."""
        self.consumer = make_consumer(self.settings)
        self.consumer.subscribe(
            [self.settings.topic],
            listener=GroupListener(lambda parts, lost: self.revoke(parts, lost=lost), self._assigned),
        )

    def commit(self, due_only: bool = False) -> bool:
        """Commit the durable prefixes (poll thread; never under the lock: commit() blocks on the IO loop)."""
        if due_only and self._clock() - self.last_commit < self.settings.flow.commit_interval_s:
            return True
        self.last_commit = self._clock()
        with self._lock:
            offsets = self._table.ledger.to_commit()
        if not offsets or self.consumer is None:
            return True
        try:
            self.consumer.commit(commit_offsets(offsets), timeout_ms=COMMIT_TIMEOUT_MS)
        except (KafkaError, ClaimwatchError) as exc:
            # CommitFailedError (the group moved on: the rebalance listener takes it from here),
            # KafkaTimeoutError (stalled broker): nothing is lost, the next commit carries the same offsets
            self._commit_failed(exc)
            return False
        with self._lock:
            self._table.ledger.committed(offsets)
        return True

    def _commit_failed(self, exc: BaseException) -> None:
        log.warning("worker_commit_failed", error=repr(exc)[:300])
        self._metrics.commit_failures.inc()

    async def revoke(self, revoked: list[Any], *, lost: bool) -> None:
        """Finish (or give up) the revoked partitions' answers, on kafka-python's IO loop.

        Revoked: the answers of those partitions get ``drain_timeout_s`` (at most half of
        ``max_poll_interval_ms``, the time the group waits for this member) to be judged and
        written; their durable prefix is committed; the rest is abandoned uncommitted and
        replayed by the next owner. Lost (the session expired): nothing can be committed, all
        is abandoned at once.
        """
        parts = set(revoked)
        started = self._clock()
        with self._lock:
            busy = self._table.count(parts)
        if not lost and busy:
            drain_s = min(self.settings.flow.drain_timeout_s, self.settings.consumer.max_poll_interval_ms / 2000.0)
            deadline = started + drain_s
            while True:
                self._pump()
                with self._lock:
                    pending = self._table.pending(parts)
                if not pending or self._halt.error is not None or self._clock() >= deadline:
                    break
                await loop_sleep(0.02)
        if not lost and self.consumer is not None:
            with self._lock:
                offsets = {tp: o for tp, o in self._table.ledger.to_commit().items() if tp in parts}
            if offsets:
                try:
                    await self.consumer.commit_async(commit_offsets(offsets))
                    with self._lock:
                        self._table.ledger.committed(offsets)
                except Exception as exc:
                    self._commit_failed(exc)
        with self._lock:
            left = self._table.count(parts)
            for tp in parts:
                self._records.forget_partition(tp)
        took = self._clock() - started
        if busy:
            self._metrics.rebalance_drain.observe(took)
        log.info(
            "worker_partitions_lost" if lost else "worker_partitions_revoked",
            partitions=sorted(tp.partition for tp in parts),
            in_flight=busy,
            abandoned=left,
            drain_s=round(took, 3),
        )

    async def _assigned(self, assigned: list[Any]) -> None:
        log.info("worker_partitions_assigned", partitions=sorted(tp.partition for tp in assigned))
        await self.assigned([tp.partition for tp in assigned])

    async def assigned(self, partitions: list[int]) -> None:
        """Seed the dedupe window from the results topic on a helper thread (this runs on the IO loop)."""
        await off_loop(lambda: self._seed_dedupe(partitions), 10.0, "claimwatch-dedupe-seed")

    def _seed_dedupe(self, partitions: list[int]) -> None:
        try:
            if self._seed is not None:
                keys = self._seed(partitions)
            else:
                source = self.consumer.partitions_for_topic(self.settings.topic) if self.consumer is not None else None
                keys = read_result_keys(
                    self.settings,
                    partitions,
                    self.settings.dedupe_seed_records,
                    source_partitions=len(source or ()) or None,
                )
            self._records.dedupe.update(keys)
            log.info("worker_dedupe_seeded", ids=len(keys))
        except Exception as exc:  # never block the assignment on this
            log.warning("worker_dedupe_seed_failed", error=str(exc)[:300])

    def flow_control(self, full: bool) -> None:
        """Pause every assigned partition while judging or unacknowledged writes are at their bound.

        Paused partitions keep what was already fetched; while paused, the loop waits for
        completions and polls only every ``POLL_KEEPALIVE_S`` to stay in the group.
        """
        assert self.consumer is not None
        try:
            if full:
                assigned = self.consumer.assignment()
                if assigned:
                    self.consumer.pause(*assigned)
            elif self.paused:
                paused = self.consumer.paused()
                if paused:
                    self.consumer.resume(*paused)
            self.paused = full
        except Exception as exc:  # a consumer mid-rebalance: try again next round
            log.debug("worker_pause_resume_failed", error=str(exc)[:200])

    def update_lag(self) -> None:
        """Lag is computed here, on the poll thread, because the consumer is not thread-safe (not at scrape time)."""
        now = self._clock()
        if now - self._last_lag < self._lag_interval_s:
            return
        self._last_lag = now
        topic = self.settings.topic
        try:
            assert self.consumer is not None
            assigned = list(self.consumer.assignment())
            if not assigned:
                self._metrics.consumer_lag.labels(topic).set(0)
                return
            ends = self.consumer.end_offsets(assigned, timeout_ms=LAG_TIMEOUT_MS)
            lag = 0
            for tp in assigned:
                # fetch position plus the records handed out and not finished (added below)
                pos = self.consumer.position(tp, timeout_ms=LAG_TIMEOUT_MS)
                lag += max(0, ends.get(tp, pos) - pos)
            with self._lock:
                lag += self._table.ledger.unfinished()
            self._metrics.consumer_lag.labels(topic).set(lag)
        except Exception as exc:
            log.debug("worker_lag_update_failed", error=str(exc)[:200])

    def close(self) -> None:
        if self.consumer is None:
            return
        try:
            self.consumer.close(autocommit=False)
        except Exception as exc:
            log.warning("worker_consumer_close_failed", error=str(exc)[:300])
        self.consumer = None

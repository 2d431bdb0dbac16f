"""The worker's side of its consumer-group membership: revoke with drain, assignment (dedupe seeding), lag.

The group loop itself (consumer, listener, poll, pause/resume, timed commits through the ``OffsetLedger``)
is :class:`contract.group.GroupMember`, the one the OTLP bridge runs too; :class:`Partitions` builds it
with the worker's hooks.

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

from contract.group import GroupMember, loop_sleep, make_group_consumer, off_loop
from contract.logs import get_logger
from evaluator_worker.config import WorkerSettings
from evaluator_worker.jobs import Halt, JobTable
from evaluator_worker.records import Records
from evaluator_worker.seams import Consumer

log = get_logger("evaluator_worker.consumer")


def make_consumer(settings: WorkerSettings) -> KafkaConsumer:
    """The worker's group consumer (what :class:`GroupMember` builds when none is given)."""
    return make_group_consumer(settings.consumer, settings.kafka)


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


class Partitions:
    """The worker's group membership: the :class:`GroupMember` with its hooks (revoke with drain, seeding, lag)."""

    def __init__(
        self,
        settings: WorkerSettings,
        records: Records,
        table: JobTable,
        lock: threading.RLock,
        halt: Halt,
        collect: Callable[[], None],
        clock: Callable[[], float],
        seed: Callable[[list[int]], list[str]] | None,
        lag_interval_s: float,
        consumer: Consumer | None,
        wake: threading.Event,
    ) -> None:
        self.settings = settings
        self._records = records
        self._metrics = records.metrics
        self._table = table
        self._lock = lock
        self._halt = halt
        self._collect = collect  # collect judged answers and acknowledgements (no consumer call, no commit)
        self._clock = clock
        self._seed = seed
        self.member = GroupMember(
            settings.consumer,
            settings.topic,
            settings.kafka,
            ledger=table.ledger,
            lock=lock,
            revoked=lambda parts, lost: self.revoke(parts, lost=lost),
            assigned=self._assigned,
            commit_interval_s=settings.flow.commit_interval_s,
            name="worker",
            consumer=consumer,
            clock=clock,
            wake=wake,
            on_commit_failed=lambda exc: self._metrics.commit_failures.inc(),
            on_lag=self._metrics.consumer_lag.labels(settings.topic).set,
            lag_interval_s=lag_interval_s,
        )

    @property
    def consumer(self) -> Consumer | None:
        consumer: Consumer | None = self.member.consumer
        return consumer

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
                self._collect()
                with self._lock:
                    pending = self._table.pending(parts)
                if not pending or self._halt.error is not None or self._clock() >= deadline:
                    break
                await loop_sleep(0.02)
        if not lost:
            await self.member.commits.commit_on_loop(parts)
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

    def seed_timeout_s(self) -> float:
        """How long an assignment waits for the seed: a third of ``max_poll_interval_ms`` (at most 10 s).

        A rebalance's hooks hold the member's ``poll()``; the revoke drain (at most half) plus the seed (at most
        a third) stay below the interval the group allows a member between polls. A seed still running then
        goes on in the background (its keys are added when it ends) and is logged as slow.
        """
        return min(10.0, self.settings.consumer.max_poll_interval_ms / 3000.0)

    async def assigned(self, partitions: list[int]) -> None:
        """Seed the dedupe window from the results topic on a helper thread (this runs on the IO loop)."""
        timeout_s = self.seed_timeout_s()
        if not await off_loop(lambda: self._seed_dedupe(partitions, timeout_s), timeout_s, "claimwatch-dedupe-seed"):
            log.warning("worker_dedupe_seed_slow", partitions=partitions, waited_s=round(timeout_s, 2))

    def _seed_dedupe(self, partitions: list[int], timeout_s: float) -> None:
        try:
            if self._seed is not None:
                keys = self._seed(partitions)
            else:
                consumer = self.member.consumer
                source = consumer.partitions_for_topic(self.settings.topic) if consumer is not None else None
                keys = read_result_keys(
                    self.settings,
                    partitions,
                    self.settings.dedupe_seed_records,
                    timeout_s=timeout_s,
                    source_partitions=len(source or ()) or None,
                )
            self._records.dedupe.update(keys)
            log.info("worker_dedupe_seeded", ids=len(keys))
        except Exception as exc:  # never block the assignment on this
            log.warning("worker_dedupe_seed_failed", error=str(exc)[:300])

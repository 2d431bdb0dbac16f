"""The consumer-group worker: poll, judge many answers at once, write, commit what is durable.

A record's path from poll to commit reads in four modules::

    contract.group.GroupMember   the poll loop (one thread): poll(max_records = free slots), pause while full,
                                 commit per partition the contiguous prefix of finished offsets
      └─ Worker (this module)    the loop's work: hands records to InFlight, acts on the events it returns
                                 (count, export, offer to the shadow judge, ``on_result``), drains revoked
                                 partitions, seeds the dedupe window on assignment
          └─ InFlight            (``inflight``) the table of jobs, the judging threads, the dedupe window: a
                                 record admitted -> judged -> written -> durable (or duplicate, dead letter,
                                 abandoned); returns :class:`~evaluator_worker.inflight.Durable` events
              └─ ResultWriter    (``writer``) result and dead-letter writes: acknowledgements, re-sends, stalls

The judging itself is the :class:`~evaluator_worker.pipeline.Evaluator` (``JudgeCaller``: retries, adaptive
concurrency, rate ceilings), called on the judging threads; the loop never waits on a judge, so group
membership does not depend on judge latency. Everything is assembled in :mod:`evaluator_worker.assembly`.

Guarantees:

- an offset is committed only when the result or dead letter of every record up to it
  was acknowledged by the broker (``acks=all``), so a committed record is never lost;
- a rebalance never kills the worker: on revoke, the revoked partitions' answers get
  ``flow.drain_timeout_s`` to finish and be committed; the rest is abandoned
  uncommitted (the next owner replays it; the dedupe window, seeded from the results
  topic on assignment, skips what already has a durable result); lost partitions
  (the session expired) are abandoned at once;
- no single record ends the worker: oversized results are shrunk, oversized keys
  hashed, a judge crash dead-letters its record; a broker stall only grows the lag;
- the worker stops (non-zero exit, nothing committed past the record) only for what
  retrying cannot fix: the judge rejecting its credentials (401/403), a
  ``ConfigError``, or a write the broker keeps refusing.

SIGTERM (``stop()``): no new records; in-flight answers get ``drain_timeout_s`` to
finish; durable offsets are committed; the worker leaves the group.

Threading: the loop's state is guarded by one lock, taken by the poll thread and by the rebalance listener
(kafka-python's IO thread), never held across a blocking consumer call (poll, commit, offsets).
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from contract.group import GroupMember, loop_sleep, off_loop
from contract.logs import get_logger
from contract.slices import DEFAULT_SLICE_LABELS
from evaluator_worker.config import WorkerSettings
from evaluator_worker.inflight import Durable, InFlight
from evaluator_worker.metrics import trace_exemplar
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import read_result_keys
from evaluator_worker.seams import Consumer, Exporter
from evaluator_worker.shadow import ShadowJudge

__all__ = ["Worker"]

log = get_logger(__name__)


class Worker:
    """One member of the evaluator consumer group: the work of its group loop (``contract.group.GroupWork``)."""

    def __init__(
        self,
        *,
        settings: WorkerSettings,
        evaluator: Evaluator,
        flight: InFlight,
        consumer: Consumer | None = None,
        seed_dedupe: Callable[[list[int]], list[str]] | None = None,
        exporter: Exporter | None = None,
        shadow: ShadowJudge | None = None,
        wake: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        lag_interval_s: float = 2.0,
    ) -> None:
        self.settings = settings
        self.flow = settings.flow
        self.evaluator = evaluator
        self.metrics = evaluator.metrics
        self.processed = 0
        #: called with every durable result (demo, soak, benchmarks); an exception is logged, never raised
        self.on_result: Callable[[Any], None] | None = None
        #: optional evaluations-back-into-traces exporter (``export(result, trace)``, never raises)
        self.exporter = exporter
        #: optional candidate judge beside the main one (``evaluator_worker.shadow``): counted apart, never decides
        self.shadow = shadow
        self._flight = flight
        self._seed = seed_dedupe
        self._clock = clock
        self._stop = flight.stopping
        #: guards the loop's state: the poll thread and the rebalance listener (IO thread) both use it
        self._lock = threading.RLock()
        self._member = GroupMember(
            settings.consumer,
            settings.topic,
            settings.kafka,
            ledger=flight.ledger,
            lock=self._lock,
            revoked=self._revoked,
            assigned=self._assigned,
            commit_interval_s=settings.flow.commit_interval_s,
            name="worker",
            consumer=consumer,
            clock=clock,
            wake=wake,
            on_commit_failed=lambda exc: self.metrics.commit_failures.inc(),
            on_lag=self.metrics.consumer_lag.labels(settings.topic).set,
            lag_interval_s=lag_interval_s,
        )

    # -- lifecycle -----------------------------------------------------------
    def stop(self) -> None:
        """Stop taking records, finish in-flight answers (``drain_timeout_s``), commit and leave (SIGTERM)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    @property
    def in_flight(self) -> int:
        """Answers being judged (not abandoned)."""
        return self._flight.judging

    @property
    def consumer(self) -> Consumer | None:
        """The group consumer (None before :meth:`run` built it)."""
        consumer: Consumer | None = self._member.consumer
        return consumer

    def oldest_unacked_write_age(self) -> float:
        """Seconds the oldest write still awaiting the broker's acknowledgement has waited (0: none)."""
        return self._flight.writer.oldest_age()

    def run(self, *, max_records: int | None = None, idle_timeout_s: float | None = None) -> int:
        """Consume until ``stop()`` (or ``max_records`` processed, or idle for ``idle_timeout_s``).

        Raises the fatal error (``JudgeError`` with ``fatal``, ``ConfigError``, ``WorkerFatal``)
        after committing what is durable and leaving the group.
        """
        self._open()
        halt = self._flight.halt

        def halted() -> bool:
            return halt.error is not None

        def done() -> bool:
            return self._stop.is_set() or halted() or (max_records is not None and self.processed >= max_records)

        def finished() -> bool:
            with self._lock:
                return not self._flight.pending() or halted()

        try:
            self._member.run(self, done, idle_timeout_s=idle_timeout_s)
            if not halted():
                self._member.drain(self, finished, self.flow.drain_timeout_s)
        finally:
            self._finish_run()
        if halt.error is not None:
            raise halt.error
        return self.processed

    def _open(self) -> None:
        self._flight.open()
        if self.shadow is not None and self.shadow.producer is None:
            self.shadow.producer = self._flight.writer.producer  # its own topic, fire and forget
        self._member.ensure_consumer()
        self.metrics.up.set(1)
        self.metrics.set_judge(self.evaluator.identity)  # which judge the gate's counts come from
        if tuple(self.settings.slice_labels) != DEFAULT_SLICE_LABELS:
            log.warning(
                "worker_slice_labels_differ",
                slice_labels=list(self.settings.slice_labels),
                rules_group_by=list(DEFAULT_SLICE_LABELS),
                hint="the shipped rules and dashboards group by the declared labels: regenerate them for these",
            )
        lim = self.evaluator.caller.limiter
        self.metrics.watch_queues(
            lambda: self._flight.judging,
            lambda: self._flight.writer.unacked,
            (lambda: lim.limit) if lim is not None else None,
            self.oldest_unacked_write_age,
        )

    def _finish_run(self) -> None:
        """Commit what is durable, give up the rest, leave the group, close the clients."""
        try:
            self.tick()
            self._member.commits.commit()
        except Exception as exc:
            log.warning("worker_final_commit_failed", error=str(exc)[:300])
        with self._lock:
            self._flight.abandon_all()
        self.close()

    def close(self) -> None:
        self.metrics.up.set(0)
        self.metrics.unwatch_queues()
        if self.shadow is not None:
            self.shadow.close()
        self._member.close()
        self._flight.close()

    # -- the group loop's work (contract.group.GroupWork) ---------------------------------------
    def tick(self) -> None:
        """Collect judged answers and acknowledgements (re-sends, stall watch) and act on the durable results."""
        with self._lock:
            for event in self._flight.collect():
                self._durable(event)

    def full(self) -> bool:
        """Fetching pauses while ``max_in_flight`` answers are judged or ``max_unacked_writes`` await the broker."""
        with self._lock:
            return self._flight.full()

    def busy(self) -> bool:
        return self._flight.busy()

    def room(self) -> int:
        return self._flight.room()

    def take(self, tp: Any, records: list[Any]) -> int:
        """Admit fetched records (under the lock, from the member's loop)."""
        for msg in records:
            self._flight.admit(tp, msg)
        return len(records)

    # -- events ----------------------------------------------------------------------------------
    def _durable(self, event: Durable) -> None:
        """A durable result: counted, exported into its trace, offered to the shadow judge, handed to ``on_result``."""
        result, trace = event.result, event.trace
        self.metrics.observe(result, trace_exemplar(result.trace_id, trace.root_span_id))
        self.processed += 1
        self.metrics.records.labels("processed").inc()
        self.metrics.evaluation_duration.observe(max(0.0, self._clock() - event.admitted))
        if self.exporter is not None:
            self.exporter.export(result, trace)
        if self.shadow is not None:
            self.shadow.offer(trace, result)  # a sampled share, judged again apart from the counts
        if self.on_result is not None:
            try:
                self.on_result(result)
            except Exception as exc:
                log.warning("worker_on_result_failed", error=str(exc)[:200])

    # -- rebalances (on kafka-python's IO loop) -------------------------------------------------
    async def _revoked(self, revoked: list[Any], lost: bool) -> None:
        """Finish (or give up) the revoked partitions' answers.

        Revoked: the answers of those partitions get ``drain_timeout_s`` (at most half of
        ``max_poll_interval_ms``, the time the group waits for this member) to be judged and
        written; their durable prefix is committed; the rest is abandoned uncommitted and
        replayed by the next owner. Lost (the session expired): nothing can be committed, all
        is abandoned at once.
        """
        parts = set(revoked)
        started = self._clock()
        with self._lock:
            busy = self._flight.count(parts)
        if not lost and busy:
            drain_s = min(self.flow.drain_timeout_s, self.settings.consumer.max_poll_interval_ms / 2000.0)
            deadline = started + drain_s
            while True:
                self.tick()
                with self._lock:
                    pending = self._flight.pending(parts)
                if not pending or self._flight.halt.error is not None or self._clock() >= deadline:
                    break
                await loop_sleep(0.02)
        if not lost:
            await self._member.commits.commit_on_loop(parts)
        with self._lock:
            left = self._flight.count(parts)
            for tp in parts:
                self._flight.forget(tp)
        took = self._clock() - started
        if busy:
            self.metrics.rebalance_drain.observe(took)
        log.info(
            "worker_partitions_lost" if lost else "worker_partitions_revoked",
            partitions=sorted(tp.partition for tp in parts),
            in_flight=busy,
            abandoned=left,
            drain_s=round(took, 3),
        )

    async def _assigned(self, assigned: list[Any]) -> None:
        """Seed the dedupe window from the results topic on a helper thread (bounded, never blocks the assignment)."""
        partitions = sorted(tp.partition for tp in assigned)
        log.info("worker_partitions_assigned", partitions=partitions)
        timeout_s = self.seed_timeout_s()
        if not await off_loop(lambda: self._seed_dedupe(partitions, timeout_s), timeout_s, "claimwatch-dedupe-seed"):
            log.warning("worker_dedupe_seed_slow", partitions=partitions, waited_s=round(timeout_s, 2))

    def seed_timeout_s(self) -> float:
        """How long an assignment waits for the seed: a third of ``max_poll_interval_ms`` (at most 10 s).

        A rebalance's hooks hold the member's ``poll()``; the revoke drain (at most half) plus the seed (at most
        a third) stay below the interval the group allows a member between polls. A seed still running then
        goes on in the background (its keys are added when it ends) and is logged as slow.
        """
        return min(10.0, self.settings.consumer.max_poll_interval_ms / 3000.0)

    def _seed_dedupe(self, partitions: list[int], timeout_s: float) -> None:
        try:
            if self._seed is not None:
                keys = self._seed(partitions)
            else:
                consumer = self._member.consumer
                source = consumer.partitions_for_topic(self.settings.topic) if consumer is not None else None
                keys = read_result_keys(
                    self.settings,
                    partitions,
                    self.settings.dedupe_seed_records,
                    timeout_s=timeout_s,
                    source_partitions=len(source or ()) or None,
                )
            self._flight.dedupe.update(keys)
            log.info("worker_dedupe_seeded", ids=len(keys))
        except Exception as exc:  # never block the assignment on this
            log.warning("worker_dedupe_seed_failed", error=str(exc)[:300])

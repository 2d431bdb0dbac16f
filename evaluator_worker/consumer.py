"""The consumer-group loop: poll, judge many answers at once, write, commit what is durable.

One thread (the *poll loop*) owns the Kafka consumer and producer bookkeeping; judging
runs on a pool of daemon threads. The loop never waits on a judge, so group membership
does not depend on judge latency::

    poll loop (one thread)
      ├─ poll(max_records = free slots); partitions paused while max_in_flight answers are
      │  being judged or max_unacked_writes writes await acknowledgement
      ├─ decode + validate; a bad value -> dead-letter write (reason in headers)
      ├─ duplicate of a durable result (dedupe window) -> finished, no write;
      │  duplicate of an answer in flight -> waits for it
      ├─ hand the answer to the judge pool  ──▶  Evaluator.evaluate (JudgeCaller: retries,
      │                                          adaptive concurrency, rate ceilings)
      ├─ judged -> result write (shrunk to fit the request limit); every send's future is
      │  checked: a failed write is re-sent with backoff (retriable errors for
      │  write_retry_deadline_s, others write_max_attempts times), then the worker stops
      ├─ acknowledged -> metrics, dedupe window, trace export, ``on_result``
      └─ commit, per partition, the contiguous prefix of finished offsets (OffsetLedger)

The parts (each module's docstring says more): ``jobs`` (a record's states, the in-flight table,
the judging threads), ``records`` (one record's path), ``writer`` (result writes, acknowledgements,
re-sends, stall warnings), ``partitions`` (revoke with drain, dedupe seeding, lag), ``seams``
(the consumer/producer protocols). The poll loop is ``contract.group.GroupMember`` (the OTLP bridge
runs the same one): ``Worker`` composes the parts and is the member's work (``tick``, ``full``,
``busy``, ``room``, ``take``).

Guarantees:

- an offset is committed only when the result or dead letter of every record up to it
  was acknowledged by the broker (``acks=all``), so a committed record is never lost;
- a rebalance never kills the worker: on revoke, the revoked partitions' answers get
  ``flow.drain_timeout_s`` to finish and be committed; the rest is abandoned
  uncommitted (the next owner replays it; the dedupe window, seeded from the results
  topic on assignment, skips what already has a durable result);
- no single record ends the worker: oversized results are shrunk, oversized keys
  hashed, a judge crash dead-letters its record; a broker stall only grows the lag;
- the worker stops (non-zero exit, nothing committed past the record) only for what
  retrying cannot fix: the judge rejecting its credentials (401/403), a
  ``ConfigError``, or a write the broker keeps refusing.

SIGTERM (``stop()``): no new records; in-flight answers get ``drain_timeout_s`` to
finish; durable offsets are committed; the worker leaves the group.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from contract.logs import get_logger
from contract.record import DEFAULT_SLICE_LABELS
from evaluator_worker.config import WorkerSettings
from evaluator_worker.flow import AdaptiveLimiter
from evaluator_worker.jobs import Halt, JobTable, JudgePool
from evaluator_worker.partitions import Partitions, make_consumer, read_result_keys
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.records import Records
from evaluator_worker.results import DedupeWindow
from evaluator_worker.seams import Consumer, Exporter, Producer
from evaluator_worker.shadow import ShadowJudge
from evaluator_worker.writer import ResultWriter, make_producer

__all__ = ["Worker", "make_consumer", "make_producer", "read_result_keys"]

log = get_logger(__name__)

#: answers queued per thread for CPU-bound judges (their max_in_flight)
CPU_QUEUE_PER_THREAD = 32


class Worker:
    """One member of the evaluator consumer group: the parts composed, and the work of its group loop."""

    def __init__(
        self,
        settings: WorkerSettings,
        evaluator: Evaluator,
        *,
        consumer: Consumer | None = None,
        producer: Producer | None = None,
        dedupe: DedupeWindow | None = None,
        seed_dedupe: Callable[[list[int]], list[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        lag_interval_s: float = 2.0,
        exporter: Exporter | None = None,
        shadow: ShadowJudge | None = None,
    ) -> None:
        self.settings = settings
        self.flow = settings.flow
        self.evaluator = evaluator
        self.metrics = evaluator.metrics
        self.dedupe = dedupe or DedupeWindow(settings.dedupe_window)
        self.processed = 0
        self.on_result: Callable[[Any], None] | None = None
        #: optional evaluations-back-into-traces exporter (``export(result, trace)``, never raises)
        self.exporter = exporter
        #: optional candidate judge beside the main one (``evaluator_worker.shadow``): counted apart, never decides
        self.shadow = shadow
        self._clock = clock
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by judged answers (see _ensure_clients) and failed writes
        #: guards the loop's state: the poll thread and the rebalance listener (IO thread) both use it
        self._lock = threading.RLock()
        self._halt = Halt()
        if evaluator.io_bound and evaluator.caller.limiter is None:
            evaluator.caller.limiter = AdaptiveLimiter(
                self.flow.max_in_flight,
                min_limit=self.flow.min_concurrency,
                requests_per_minute=self.flow.requests_per_minute,
                input_tokens_per_minute=self.flow.input_tokens_per_minute,
            )
        if evaluator.io_bound:
            self._threads = self._max_in_flight = self.flow.max_in_flight
        else:  # a short queue per thread keeps the judge busy; more only lengthens drains on stop/revoke
            self._threads = self.flow.cpu_threads
            self._max_in_flight = min(self.flow.max_in_flight, self.flow.cpu_threads * CPU_QUEUE_PER_THREAD)
        self._table = JobTable()
        self._writer = ResultWriter(producer, self.flow, self.metrics, clock, self._wake, self._halt)
        self._records = Records(
            settings, evaluator, self.dedupe, self._table, self._writer, self._halt, self._stop, clock, hooks=self
        )
        self._partitions = Partitions(
            settings,
            self._records,
            self._table,
            self._lock,
            self._halt,
            self.tick,
            clock,
            seed_dedupe,
            lag_interval_s,
            consumer,
            self._wake,
        )
        self._member = self._partitions.member

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
        return self._table.judging

    def oldest_unacked_write_age(self) -> float:
        """Seconds the oldest write still awaiting the broker's acknowledgement has waited (0: none)."""
        return self._writer.oldest_age()

    def _ensure_clients(self) -> None:
        self._writer.tap.attach()
        if self._writer.producer is None:
            self._writer.producer = make_producer(self.settings)
        if self.shadow is not None and self.shadow.producer is None:
            self.shadow.producer = self._writer.producer  # its own topic, fire and forget
        self._member.ensure_consumer()
        if self._records.pool is None:
            # network judges: wake the loop for every judged answer (threads mostly wait on sockets);
            # CPU-bound judges: only when their queue runs low, so the loop works in batches and the
            # judging thread is not interrupted for the GIL after every answer (measured: 20% faster)
            low = 0 if self.evaluator.io_bound else max(1, self._max_in_flight // 4)
            self._records.pool = JudgePool(self._threads, self._records.judge, self._wake.set, wake_below=low)

    def run(self, *, max_records: int | None = None, idle_timeout_s: float | None = None) -> int:
        """Consume until ``stop()`` (or ``max_records`` processed, or idle for ``idle_timeout_s``).

        Raises the fatal error (``JudgeError`` with ``fatal``, ``ConfigError``, ``WorkerFatal``)
        after committing what is durable and leaving the group.

        The loop is the group member's (``contract.group.GroupMember.run``); this worker is its work.
        Threading: the loop's state is guarded by ``self._lock``, never held across a blocking consumer
        call (poll, commit, offsets), because the rebalance listener (kafka-python's IO thread) takes it too.
        """
        self._ensure_clients()
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
            lambda: self._table.judging,
            lambda: self._writer.unacked,
            (lambda: lim.limit) if lim is not None else None,
            self.oldest_unacked_write_age,
        )

        def halted() -> bool:
            return self._halt.error is not None

        def done() -> bool:
            return self._stop.is_set() or halted() or (max_records is not None and self.processed >= max_records)

        def finished() -> bool:
            with self._lock:
                return not self._table.pending() or halted()

        try:
            self._member.run(self, done, idle_timeout_s=idle_timeout_s)
            if not halted():
                self._member.drain(self, finished, self.flow.drain_timeout_s)
        finally:
            self._finish_run()
        if self._halt.error is not None:
            raise self._halt.error
        return self.processed

    def _finish_run(self) -> None:
        """Commit what is durable, give up the rest, leave the group, close the clients."""
        try:
            self.tick()
            self._member.commits.commit()
        except Exception as exc:
            log.warning("worker_final_commit_failed", error=str(exc)[:300])
        with self._lock:
            self._records.abandon_all()
        self.close()

    def close(self) -> None:
        self.metrics.up.set(0)
        self.metrics.unwatch_queues()
        if self._records.pool is not None:
            self._records.pool.shutdown()
            self._records.pool = None
        if self.shadow is not None:
            self.shadow.close()
        self._member.close()
        self._writer.close()

    # -- the group loop's work (contract.group.GroupWork) ---------------------------------------
    def tick(self) -> None:
        """Collect judged answers and acknowledgements, re-send due writes, watch for stalled writes."""
        with self._lock:
            self._records.collect_judged()
            self._writer.collect(self._records.durable)
            self._writer.resend_due()
            self._writer.watch_stall()

    def full(self) -> bool:
        """Fetching pauses while ``max_in_flight`` answers are judged or ``max_unacked_writes`` await the broker."""
        with self._lock:
            return self._table.judging >= self._max_in_flight or self._writer.unacked >= self.flow.max_unacked_writes

    def busy(self) -> bool:
        return bool(self._table.judging or self._writer.busy())

    def room(self) -> int:
        return self._max_in_flight - self._table.judging

    def take(self, tp: Any, records: list[Any]) -> int:
        """Admit fetched records (under the lock, from the member's loop)."""
        now = self._clock()
        for msg in records:
            self._records.admit(tp, msg, now)
        return len(records)

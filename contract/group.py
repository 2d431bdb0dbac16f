"""Consumer-group membership shared by the worker and the OTLP bridge: one member, one listener, one loop.

:class:`GroupMember` is what both run: it builds the consumer from one settings shape
(:class:`GroupConfig`), subscribes with the shared listener, runs the poll loop (pause/resume on the
owner's back-pressure, records of partitions no longer owned dropped before they are tracked), and
commits through the :class:`~contract.offsets.OffsetLedger`. Each side supplies what differs: what to do
with fetched records and when to pause (:class:`GroupWork`), its revoke/assign hooks, and what must
happen before a commit (the bridge flushes its producer).

kafka-python 3 runs rebalance listeners on its IO thread, the one that sends heartbeats, and
refuses a blocking consumer call there (``commit()`` raises "Cannot block on net.run() from the
IO thread itself"). So the hooks are coroutines awaited on that loop (:class:`GroupListener`): they
commit with ``await consumer.commit_async(...)`` (:meth:`GroupCommits.commit_on_loop`), wait with
:func:`loop_sleep`, and run blocking work (a producer flush, reading the results topic) on a
helper thread with :func:`off_loop`, so heartbeats go on while a revoke drains.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Awaitable, Callable, Collection, Iterable, Mapping, Protocol

from kafka import KafkaConsumer
from kafka.consumer.subscription_state import AsyncConsumerRebalanceListener
from kafka.errors import KafkaError
from kafka.net.selector import KernelEvent
from kafka.structs import OffsetAndMetadata

from contract.errors import ClaimwatchError
from contract.kafka import KafkaConnection
from contract.logs import get_logger
from contract.offsets import OffsetLedger

log = get_logger(__name__)


async def loop_sleep(seconds: float) -> None:
    """Suspend a rebalance hook on kafka-python's IO loop without blocking it (heartbeats go on).

    The loop has no public sleep; this awaits the kernel event its own ``sleep`` returns.
    """
    await KernelEvent("_sleep", seconds)


async def off_loop(fn: Callable[[], Any], timeout_s: float, name: str, poll_s: float = 0.02) -> bool:
    """Run blocking ``fn()`` on a helper thread and await it from the IO loop; False if it did not end in time.

    ``fn``'s exceptions are its own to handle (an escaping one is logged and counts as ended).
    """
    done = threading.Event()

    def run() -> None:
        try:
            fn()
        except Exception as exc:
            log.warning("group_off_loop_failed", task=name, error=type(exc).__name__, detail=str(exc)[:200])
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    deadline = time.monotonic() + timeout_s
    while not done.is_set() and time.monotonic() < deadline:
        await loop_sleep(poll_s)
    return done.is_set()


def commit_offsets(offsets: dict[Any, int]) -> dict[Any, OffsetAndMetadata]:
    """``{partition: next offset}`` as kafka-python's commit argument."""
    return {tp: OffsetAndMetadata(o, None, -1) for tp, o in offsets.items()}


class GroupListener(AsyncConsumerRebalanceListener):
    """Rebalance hooks as coroutines: ``revoked(partitions, lost)`` and ``assigned(partitions)``.

    ``lost`` is true when the session expired (KIP-429): nothing can be committed any more.
    """

    def __init__(
        self,
        revoked: Callable[[list[Any], bool], Awaitable[None]],
        assigned: Callable[[list[Any]], Awaitable[None]],
    ) -> None:
        self._revoked = revoked
        self._assigned = assigned

    async def on_partitions_revoked(self, revoked: Any) -> None:
        await self._revoked(list(revoked), False)

    async def on_partitions_lost(self, lost: Any) -> None:
        await self._revoked(list(lost), True)

    async def on_partitions_assigned(self, assigned: Any) -> None:
        await self._assigned(list(assigned))


class GroupConfig(Protocol):
    """The one shape of consumer-group settings (the worker's ``ConsumerTuning``, the bridge's ``BridgeSettings``)."""

    group_id: str
    auto_offset_reset: str
    session_timeout_ms: int
    heartbeat_interval_ms: int
    max_poll_interval_ms: int
    max_poll_records: int
    poll_timeout_ms: int


class GroupConsumer(Protocol):
    """What a member calls on its consumer (``kafka.KafkaConsumer`` fits; so does any double with these keywords).

    Polled, paused, committed and closed by the poll thread only; ``commit_async`` is awaited from the
    rebalance listener (kafka-python's IO loop); ``subscribe`` only when the member builds its own consumer.
    """

    def subscribe(self, topics: list[str], listener: Any = None) -> None: ...
    def poll(self, timeout_ms: int = 0, max_records: int | None = None) -> Mapping[Any, list[Any]]: ...
    def assignment(self) -> Collection[Any]: ...
    def paused(self) -> Collection[Any]: ...
    def pause(self, *partitions: Any) -> None: ...
    def resume(self, *partitions: Any) -> None: ...
    def commit(self, offsets: Mapping[Any, Any] | None = None, timeout_ms: int | None = None) -> None: ...
    def commit_async(self, offsets: Mapping[Any, Any] | None = None) -> Any: ...
    def end_offsets(self, partitions: Iterable[Any], timeout_ms: int | None = None) -> Mapping[Any, int]: ...
    def position(self, partition: Any, timeout_ms: int | None = None) -> int: ...
    def partitions_for_topic(self, topic: str) -> Collection[int] | None: ...
    def close(self, autocommit: bool = True) -> None: ...


def make_group_consumer(config: GroupConfig, kafka: KafkaConnection, **extra: Any) -> KafkaConsumer:
    """A group consumer that commits only what its owner says (no auto-commit); ``extra``: more client settings."""
    return KafkaConsumer(
        group_id=config.group_id,
        enable_auto_commit=False,
        auto_offset_reset=config.auto_offset_reset,
        session_timeout_ms=config.session_timeout_ms,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        max_poll_interval_ms=config.max_poll_interval_ms,
        max_poll_records=config.max_poll_records,
        **kafka.client_kwargs(),
        **extra,
    )


class GroupWork(Protocol):
    """What a member does with its records, supplied by each side (the worker, the bridge).

    All are called on the poll thread; ``take`` under the member's lock, the others without it.
    """

    def tick(self) -> None:
        """Before every poll: collect finished work (commits follow it)."""

    def full(self) -> bool:
        """Back-pressure: fetching is paused while this is true."""

    def busy(self) -> bool:
        """Work in progress: poll briefly, and the member is not idle."""

    def room(self) -> int | None:
        """The most records the next poll may return (None: ``max_poll_records``)."""

    def take(self, tp: Any, records: list[Any]) -> int:
        """Records of one partition this member owns, in offset order; returns how many were handled."""


#: how long a poll blocks while work is in progress (finished work is collected between polls)
BUSY_POLL_MS = 50
#: while fetching is paused: wait this long for finished work between checks, and still poll (partitions
#: paused) at least every POLL_KEEPALIVE_S to stay in the group
FULL_WAIT_S = 0.05
POLL_KEEPALIVE_S = 1.0
#: a commit or a lag lookup must not hold the loop for long when the broker stalls
COMMIT_TIMEOUT_MS = 5_000
LAG_TIMEOUT_MS = 1_000


class GroupMember:
    """One member of a consumer group: its consumer, the shared listener, the poll loop, pause/resume, commits.

    - **membership**: builds its consumer from a :class:`GroupConfig` (unless given one, already subscribed by its
      owner; ``consumer_factory`` replaces the building) and subscribes with a
      :class:`GroupListener` that keeps the set of partitions it owns and then awaits the owner's
      ``revoked(partitions, lost)`` / ``assigned(partitions)`` hooks;
    - **the loop** (:meth:`round`, :meth:`run`): tick, commit when due, pause or resume on the owner's
      back-pressure, poll, hand the records of partitions still owned to ``work.take`` under the lock (a
      record of a partition given up in between is dropped, never tracked after its partition was
      forgotten); :meth:`drain` keeps the membership alive while work finishes on stop;
    - **commits** (:attr:`commits`, a :class:`GroupCommits`) through the :class:`~contract.offsets.OffsetLedger`:
      when due each round, on stop, and from the owner's revoke hook;
    - **lag** (optional ``on_lag``): fetch position to end of log, plus records handed out and not finished.

    The lock guards the ledger and the owner's state: the poll thread and the rebalance listener (IO thread)
    both take it; it is never held across a blocking consumer call or a hook's await.
    """

    def __init__(
        self,
        config: GroupConfig,
        topic: str,
        kafka: KafkaConnection,
        *,
        ledger: OffsetLedger,
        lock: threading.RLock,
        revoked: Callable[[list[Any], bool], Awaitable[None]],
        assigned: Callable[[list[Any]], Awaitable[None]],
        commit_interval_s: float,
        name: str,
        consumer: GroupConsumer | Any = None,
        clock: Callable[[], float] = time.monotonic,
        wake: threading.Event | None = None,
        settle: Callable[[], None] | None = None,
        flush: Callable[[], bool] | None = None,
        flush_timeout_s: float = 10.0,
        on_commit_failed: Callable[[BaseException], None] | None = None,
        on_lag: Callable[[int], None] | None = None,
        lag_interval_s: float = 2.0,
        consumer_factory: Callable[[], Any] | None = None,
    ) -> None:
        self.config = config
        self.topic = topic
        self.consumer: Any = consumer
        self.ledger = ledger
        self.lock = lock
        self.name = name
        self.paused = False
        self.dropped = 0  # fetched records of partitions given up before they were taken
        self._revoked_hook = revoked
        self._assigned_hook = assigned
        self._clock = clock
        self._wake = wake or threading.Event()
        self.commits = GroupCommits(
            lambda: self.consumer,
            ledger,
            lock,
            name=name,
            interval_s=commit_interval_s,
            clock=clock,
            settle=settle,
            flush=flush,
            flush_timeout_s=flush_timeout_s,
            on_failed=on_commit_failed,
        )
        self._on_lag = on_lag
        self._lag_interval_s = lag_interval_s
        self._factory = consumer_factory or (lambda: make_group_consumer(config, kafka))
        #: partitions owned per this member's listener; None for a consumer handed in (its owner subscribed it)
        self._owned: set[Any] | None = None
        self._first_assigned_at: float | None = None
        self._last_poll = 0.0
        self._last_lag = 0.0

    # -- membership ------------------------------------------------------------------------
    def ensure_consumer(self) -> Any:
        """The consumer; built and subscribed (with the shared listener) on first use when none was given."""
        if self.consumer is None:
            self.consumer = self._factory()
            self._owned = set()
            self.consumer.subscribe([self.topic], listener=GroupListener(self._revoked, self._assigned))
        return self.consumer

    async def _revoked(self, partitions: list[Any], lost: bool) -> None:
        with self.lock:  # from here on, records of these partitions are dropped, not taken
            if self._owned is not None:
                self._owned.difference_update(partitions)
        await self._revoked_hook(partitions, lost)

    async def _assigned(self, partitions: list[Any]) -> None:
        with self.lock:
            if self._owned is not None:
                self._owned.update(partitions)
            if self._first_assigned_at is None:
                self._first_assigned_at = self._clock()
        await self._assigned_hook(partitions)

    def hold(self, full: bool) -> None:
        """Pause every assigned partition while ``full`` (again each round: a new assignment is paused too);
        resume the paused ones once it is not. Paused partitions keep what was already fetched."""
        consumer = self.ensure_consumer()
        try:
            if full:
                assigned = consumer.assignment()
                if assigned:
                    consumer.pause(*assigned)
            elif self.paused:
                paused = consumer.paused()
                if paused:
                    consumer.resume(*paused)
            self.paused = full
        except Exception as exc:  # a consumer mid-rebalance: try again next round
            log.debug("group_pause_resume_failed", member=self.name, error=str(exc)[:200])

    # -- the loop --------------------------------------------------------------------------
    def round(self, work: GroupWork, stop: Callable[[], bool] | None = None) -> int:
        """One turn: tick, commit when due, pause or resume, poll, take; returns the records taken.

        While paused, the member waits for ``wake`` (finished work) instead of blocking in poll, and polls
        (with nothing to fetch) only every ``POLL_KEEPALIVE_S`` to stay in the group.
        """
        consumer = self.ensure_consumer()
        self._wake.clear()
        work.tick()
        self.commits.commit(due_only=True)
        if stop is not None and stop():
            return 0
        full = work.full()
        self.hold(full)
        if full and self._clock() - self._last_poll < POLL_KEEPALIVE_S:
            self._wake.wait(FULL_WAIT_S)
            return 0
        limit = self.config.poll_timeout_ms
        timeout_ms = 0 if full else (min(BUSY_POLL_MS, limit) if work.busy() else limit)
        room = work.room()
        max_records = self.config.max_poll_records if room is None else max(1, min(self.config.max_poll_records, room))
        batch = consumer.poll(timeout_ms=timeout_ms, max_records=max_records)
        self._last_poll = self._clock()
        taken = 0
        if batch:
            with self.lock:
                for tp, records in batch.items():
                    if self._owned is not None and tp not in self._owned:
                        self.dropped += len(records)
                        log.info("group_records_of_revoked_partition_dropped", member=self.name, records=len(records))
                        continue
                    taken += work.take(tp, records)
        self._update_lag()
        return taken

    def run(
        self,
        work: GroupWork,
        stop: Callable[[], bool],
        *,
        max_items: int | None = None,
        idle_timeout_s: float | None = None,
    ) -> int:
        """Rounds until ``stop()``, ``max_items`` taken, or idle for ``idle_timeout_s``; returns the records taken.

        Idle: nothing taken and no work in progress since the later of the start and the *first* assignment
        (joining does not count as idle time; a member caught in a rejoin loop, assigned again and again, still
        goes idle, and one never assigned goes idle from the start).
        """
        self.ensure_consumer()
        taken = 0
        idle_since = self._clock()
        while not stop():
            got = self.round(work, stop)
            taken += got
            now = self._clock()
            if got or work.busy():
                idle_since = now
            elif idle_timeout_s is not None and now - max(idle_since, self._first_assigned_at or 0.0) > idle_timeout_s:
                break
            if max_items is not None and taken >= max_items:
                break
        return taken

    def drain(self, work: GroupWork, finished: Callable[[], bool], timeout_s: float) -> None:
        """On stop: tick and commit until ``finished()`` or time is up, polling with every partition paused so the
        membership outlives a drain longer than ``max_poll_interval_ms`` (what such a poll returns is left
        uncommitted for the next owner)."""
        deadline = self._clock() + timeout_s
        consumer = self.ensure_consumer()
        while not finished() and self._clock() < deadline:
            work.tick()
            self.commits.commit(due_only=True)
            if finished():
                break
            try:
                with self.lock:
                    assigned = consumer.assignment()
                    if assigned:
                        consumer.pause(*assigned)
                consumer.poll(timeout_ms=20, max_records=1)
            except Exception as exc:
                log.debug("group_drain_poll_failed", member=self.name, error=str(exc)[:200])
                time.sleep(0.02)

    # -- lag, close ------------------------------------------------------------------------
    def _update_lag(self) -> None:
        """On the poll thread (the consumer is not thread-safe), at most every ``lag_interval_s``."""
        now = self._clock()
        if self._on_lag is None or now - self._last_lag < self._lag_interval_s:
            return
        self._last_lag = now
        try:
            assigned = list(self.consumer.assignment())
            if not assigned:
                self._on_lag(0)
                return
            ends = self.consumer.end_offsets(assigned, timeout_ms=LAG_TIMEOUT_MS)
            lag = 0
            for tp in assigned:
                # fetch position to the end of the log, plus the records handed out and not finished (below)
                pos = self.consumer.position(tp, timeout_ms=LAG_TIMEOUT_MS)
                lag += max(0, ends.get(tp, pos) - pos)
            with self.lock:
                lag += self.ledger.unfinished()
            self._on_lag(lag)
        except Exception as exc:
            log.debug("group_lag_update_failed", member=self.name, error=str(exc)[:200])

    def close(self) -> None:
        """Leave the group (the listener's revoke runs first) and close the consumer."""
        if self.consumer is None:
            return
        try:
            self.consumer.close(autocommit=False)
        except Exception as exc:
            log.warning("group_consumer_close_failed", member=self.name, error=str(exc)[:300])
        self.consumer = None


class GroupCommits:
    """A member's commits through its :class:`~contract.offsets.OffsetLedger`.

    :meth:`commit` on the poll thread (every ``interval_s`` with ``due_only``, and at the end),
    :meth:`commit_on_loop` from a rebalance hook; an optional ``flush`` (the bridge's producer) must succeed
    first, and ``settle`` (under the lock) may finish offsets before the ledger is read. A failure is logged
    and handed to ``on_failed``; nothing is lost: the next commit carries the same offsets.
    """

    def __init__(
        self,
        consumer: Callable[[], Any],
        ledger: OffsetLedger,
        lock: threading.RLock,
        *,
        name: str,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        settle: Callable[[], None] | None = None,
        flush: Callable[[], bool] | None = None,
        flush_timeout_s: float = 10.0,
        on_failed: Callable[[BaseException], None] | None = None,
    ) -> None:
        self._consumer = consumer
        self.ledger = ledger
        self.lock = lock
        self.name = name
        self.interval_s = interval_s
        self._clock = clock
        self._settle = settle
        self._flush = flush
        self._flush_timeout_s = flush_timeout_s
        self._on_commit_failed = on_failed
        self._last_commit = clock()

    def _to_commit(self, partitions: Collection[Any] | None = None) -> dict[Any, int]:
        with self.lock:
            if self._settle is not None:
                self._settle()
            offsets = self.ledger.to_commit()
        return offsets if partitions is None else {tp: o for tp, o in offsets.items() if tp in partitions}

    def _committed(self, offsets: dict[Any, int]) -> None:
        with self.lock:
            self.ledger.committed(offsets)

    def _commit_failed(self, exc: BaseException) -> None:
        log.warning("group_commit_failed", member=self.name, error=repr(exc)[:300])
        if self._on_commit_failed is not None:
            self._on_commit_failed(exc)

    def commit(self, due_only: bool = False) -> bool:
        """Commit the ledger's commit points (poll thread; never under the lock: commit() blocks on the IO loop).

        ``due_only``: only when ``commit_interval_s`` has passed since the last one. False when the flush or
        the commit failed (nothing is lost: the next commit carries the same offsets).
        """
        if due_only and self._clock() - self._last_commit < self.interval_s:
            return True
        self._last_commit = self._clock()
        offsets, consumer = self._to_commit(), self._consumer()
        if not offsets or consumer is None:
            return True
        if self._flush is not None and not self._flush():
            log.warning("group_flush_failed_commit_skipped", member=self.name, partitions=len(offsets))
            return False
        try:
            consumer.commit(commit_offsets(offsets), timeout_ms=COMMIT_TIMEOUT_MS)
        except (KafkaError, ClaimwatchError) as exc:
            # CommitFailedError (the group moved on: the rebalance listener takes it from here),
            # KafkaTimeoutError (stalled broker)
            self._commit_failed(exc)
            return False
        self._committed(offsets)
        return True

    async def commit_on_loop(self, partitions: Collection[Any] | None = None) -> bool:
        """:meth:`commit` for a rebalance hook (of ``partitions``, or all): the flush on a helper thread, the
        commit awaited. Never raises: a failure is logged and counted."""
        offsets, consumer = self._to_commit(partitions), self._consumer()
        if not offsets or consumer is None:
            return True
        flush = self._flush
        if flush is not None:
            flushed: list[bool] = []
            await off_loop(
                lambda: flushed.append(bool(flush())), self._flush_timeout_s + 1.0, f"claimwatch-{self.name}-flush"
            )
            if not (flushed and flushed[0]):
                log.warning("group_flush_failed_commit_skipped", member=self.name, partitions=len(offsets))
                return False
        try:
            await consumer.commit_async(commit_offsets(offsets))
        except Exception as exc:  # the group may already have moved on
            self._commit_failed(exc)
            return False
        self._committed(offsets)
        return True

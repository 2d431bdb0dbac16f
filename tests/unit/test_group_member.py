"""The one consumer-group loop (``contract.group.GroupMember``) with a small in-memory consumer.

What both the worker and the OTLP bridge rely on: fetching pauses while the owner's back-pressure
holds and resumes after; ``stop`` ends the loop before another poll; commits go through the
``OffsetLedger`` every ``commit_interval_s`` and only after the owner's flush; records of a partition
given up in a rebalance are dropped, never tracked after the partition was forgotten.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any

from kafka import TopicPartition

from contract.group import POLL_KEEPALIVE_S, GroupMember
from contract.kafka import KafkaConnection
from contract.offsets import OffsetLedger
from tests.fakes.kafka import ScriptedConsumer

P0, P1 = TopicPartition("t", 0), TopicPartition("t", 1)


@dataclass
class Config:
    group_id: str = "g"
    auto_offset_reset: str = "earliest"
    session_timeout_ms: int = 6_000
    heartbeat_interval_ms: int = 1_000
    max_poll_interval_ms: int = 10_000
    max_poll_records: int = 10
    poll_timeout_ms: int = 100


@dataclass
class Rec:
    offset: int
    value: bytes = b"v"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Consumer(ScriptedConsumer):
    """The scripted consumer on partitions 0 and 1 of topic t."""

    def __init__(self, batches: list[dict[Any, list[Rec]]] | None = None) -> None:
        super().__init__({P0, P1}, batches)


class Work:
    """An owner: tracks what it takes in the ledger; finishes offsets when told; pauses while ``is_full``."""

    def __init__(self, ledger: OffsetLedger) -> None:
        self.ledger = ledger
        self.is_full = False
        self.taken: list[tuple[Any, int]] = []
        self.ticks = 0
        self.on_tick: Any = None

    def tick(self) -> None:
        self.ticks += 1
        if self.on_tick is not None:
            self.on_tick()

    def full(self) -> bool:
        return self.is_full

    def busy(self) -> bool:
        return False

    def room(self) -> int | None:
        return None

    def take(self, tp, records) -> int:
        for r in records:
            self.ledger.track(tp, r.offset)
            self.taken.append((tp, r.offset))
        return len(records)


def make(consumer: Consumer, *, subscribe: bool = False, flush=None, clock=None, **kw):
    """A member over ``consumer``: handed in (no listener), or built by the member and subscribed by it."""
    ledger = OffsetLedger()
    events: list[tuple[str, list, bool]] = []

    async def revoked(parts, lost):
        for tp in parts:
            ledger.forget(tp)
        events.append(("revoked", list(parts), lost))

    async def assigned(parts):
        events.append(("assigned", parts, False))

    member = GroupMember(
        Config(),
        "t",
        KafkaConnection(),
        ledger=ledger,
        lock=threading.RLock(),
        revoked=revoked,
        assigned=assigned,
        commit_interval_s=kw.pop("commit_interval_s", 1.0),
        name="test",
        consumer=None if subscribe else consumer,
        consumer_factory=(lambda: consumer) if subscribe else None,
        clock=clock or Clock(),
        flush=flush,
        **kw,
    )
    return member, Work(ledger), ledger, events


def test_back_pressure_pauses_every_assigned_partition_and_its_end_resumes_them():
    consumer = Consumer()
    member, work, _, _ = make(consumer)
    work.is_full = True
    member.round(work)
    assert consumer.paused() == {P0, P1} and member.paused
    assert consumer.polls == [(0, 10)], "paused: a keep-alive poll that fetches nothing and does not block"
    work.is_full = False
    member.round(work)
    assert consumer.paused() == set() and not member.paused
    assert consumer.polls[-1] == (100, 10), "resumed: a normal poll"


def test_while_paused_the_member_waits_for_work_and_polls_only_to_stay_in_the_group():
    clock = Clock()
    consumer = Consumer()
    member, work, _, _ = make(consumer, clock=clock)
    work.is_full = True
    member.round(work)  # the first round polls (no poll yet)
    for _ in range(3):
        member.round(work)  # within POLL_KEEPALIVE_S: wait for finished work, no poll
    assert len(consumer.polls) == 1 and work.ticks == 4
    clock.now += POLL_KEEPALIVE_S
    member.round(work)
    assert len(consumer.polls) == 2


def test_stop_ends_the_loop_before_another_poll():
    consumer = Consumer([{P0: [Rec(0), Rec(1)]}, {P0: [Rec(2)]}])
    member, work, _, _ = make(consumer)
    stop = threading.Event()
    work.on_tick = lambda: work.ticks >= 2 and stop.set()  # stop while collecting, after the first poll
    assert member.run(work, stop.is_set) == 2
    assert len(consumer.polls) == 1 and work.taken == [(P0, 0), (P0, 1)]


def test_max_items_and_idle_timeout_end_the_run():
    consumer = Consumer([{P0: [Rec(0)]}, {P1: [Rec(0), Rec(1)]}, {P0: [Rec(1)]}])
    member, work, _, _ = make(consumer)
    assert member.run(work, lambda: False, max_items=3) == 3
    clock = Clock()
    idle = Consumer()
    member, work, _, _ = make(idle, clock=clock)

    def later():
        clock.now += 0.4

    idle.on_poll = later
    assert member.run(work, lambda: False, idle_timeout_s=1.0) == 0
    assert len(idle.polls) == 3  # 0.4, 0.8, 1.2 s idle: ends after the poll that passed the timeout


def test_a_member_assigned_again_and_again_still_goes_idle():
    """A rejoin loop (an assignment every poll, no records) does not hold off the idle timeout: it counts from the first."""
    clock = Clock()
    consumer = Consumer()
    member, work, _, events = make(consumer, subscribe=True, clock=clock)
    member.ensure_consumer()

    def rejoin():
        clock.now += 0.4
        asyncio.run(consumer.listener.on_partitions_assigned([P0]))

    consumer.on_poll = rejoin
    assert member.run(work, lambda: False, idle_timeout_s=1.0) == 0
    assert len(consumer.polls) == 4 and len(events) == 4  # first assigned at 0.4 s; idle past 1.0 s after it at 1.6 s


def test_idle_time_starts_at_the_first_assignment_not_while_joining():
    """Time spent joining the group is not idle time: the timeout counts from the first assignment."""
    clock = Clock()
    consumer = Consumer()
    member, work, _, _ = make(consumer, subscribe=True, clock=clock)
    member.ensure_consumer()

    def join_then_wait():
        clock.now += 0.9
        if len(consumer.polls) == 2:  # joined after 1.8 s, past the timeout measured from the start
            asyncio.run(consumer.listener.on_partitions_assigned([P0]))

    consumer.on_poll = join_then_wait
    assert member.run(work, lambda: False, idle_timeout_s=1.0) == 0
    assert len(consumer.polls) == 4  # assigned at 1.8 s; idle past 1.0 s after it at 3.6 s


def test_commits_go_through_the_ledger_when_due():
    clock = Clock()
    consumer = Consumer([{P0: [Rec(5), Rec(6), Rec(7)]}])
    member, work, ledger, _ = make(consumer, clock=clock, commit_interval_s=1.0)
    member.round(work)
    ledger.finish(P0, 5)
    ledger.finish(P0, 7)  # 6 is not finished: the commit point stops at 6
    member.round(work)
    assert consumer.commits == [], "not due yet"
    clock.now += 1.0
    member.round(work)
    assert consumer.commits == [{P0: 6}]
    clock.now += 1.0
    member.round(work)
    assert consumer.commits == [{P0: 6}], "nothing moved: no second commit"
    ledger.finish(P0, 6)
    assert member.commits.commit() is True
    assert consumer.commits == [{P0: 6}, {P0: 8}]


def test_a_failed_flush_skips_the_commit_and_a_failed_commit_is_retried_later():
    flushed = [False]
    failures: list[BaseException] = []
    consumer = Consumer([{P0: [Rec(0)]}])
    member, work, ledger, _ = make(consumer, flush=lambda: flushed[0], on_commit_failed=failures.append)
    member.round(work)
    ledger.finish(P0, 0)
    assert member.commits.commit() is False and consumer.commits == []
    flushed[0] = True
    consumer.fail_commit = True
    assert member.commits.commit() is False and len(failures) == 1
    consumer.fail_commit = False
    assert member.commits.commit() is True and consumer.commits == [{P0: 1}]


def test_commit_on_loop_commits_only_the_given_partitions():
    consumer = Consumer([{P0: [Rec(0)], P1: [Rec(3)]}])
    member, work, ledger, _ = make(consumer)
    member.round(work)
    ledger.finish(P0, 0)
    ledger.finish(P1, 3)
    assert asyncio.run(member.commits.commit_on_loop([P1])) is True
    assert consumer.commits == [{P1: 4}]
    assert ledger.to_commit() == {P0: 1}


def test_records_of_a_partition_revoked_during_the_poll_are_dropped_not_tracked():
    consumer = Consumer()
    member, work, ledger, events = make(consumer, subscribe=True)
    member.ensure_consumer()
    assert consumer.listener is not None
    asyncio.run(consumer.listener.on_partitions_assigned([P0, P1]))
    consumer.batches = [{P0: [Rec(0)], P1: [Rec(0)]}]
    member.round(work)
    assert work.taken == [(P0, 0), (P1, 0)]

    def rebalance():  # P1 goes to another member while this poll runs; its fetched records come back anyway
        asyncio.run(consumer.listener.on_partitions_revoked([P1]))

    consumer.on_poll = rebalance
    consumer.batches = [{P0: [Rec(1)], P1: [Rec(1), Rec(2)]}]
    assert member.round(work) == 1
    assert work.taken[-1] == (P0, 1) and (P1, 1) not in work.taken
    assert P1 not in ledger.tracked(), "a forgotten partition must not be tracked again"
    assert member.dropped == 2
    assert events[-1] == ("revoked", [P1], False)


def test_drain_keeps_polling_with_every_partition_paused_until_finished():
    consumer = Consumer()
    member, work, _, _ = make(consumer)
    left = [3]

    def finish_one():
        left[0] -= 1

    work.on_tick = finish_one
    member.drain(work, lambda: left[0] <= 0, timeout_s=5.0)
    assert left[0] == 0
    assert consumer.paused() == {P0, P1}
    assert consumer.polls and all(p == (20, 1) for p in consumer.polls)


def test_close_closes_the_consumer_once():
    consumer = Consumer()
    member, _, _, _ = make(consumer)
    member.close()
    member.close()
    assert consumer.closed and member.consumer is None

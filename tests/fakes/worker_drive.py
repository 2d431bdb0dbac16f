"""Driving a ``Worker`` one record at a time on the test's thread, without a consumer group (unit tests only: the
product path is the group loop, ``Worker.run``)."""

from __future__ import annotations

import time
from typing import Any

from kafka import TopicPartition

from evaluator_worker.worker import Worker


def handle_now(worker: Worker, msg: Any) -> None:
    """Take one record through the whole path on this thread (decode, judge, write, ack); raises the fatal error if
    the record hit one."""
    flight = worker._flight
    flight.open()
    tp = TopicPartition(msg.topic, msg.partition)
    flight.ledger.forget(tp)
    worker.take(tp, [msg])
    while worker.busy() and flight.halt.error is None:
        worker.tick()
        if worker.busy():
            time.sleep(0.0005)
    flight.table.clear(tp)
    fatal = flight.halt.take()
    if fatal is not None:
        raise fatal

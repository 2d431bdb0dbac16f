"""Driving a ``Worker`` one record at a time on the test's thread, without a consumer group (unit tests only: the
product path is the group loop, ``Worker.run``)."""

from __future__ import annotations

import time
from typing import Any

from kafka import TopicPartition

from evaluator_worker.consumer import Worker
from evaluator_worker.jobs import JudgePool


def handle_now(worker: Worker, msg: Any) -> None:
    """Take one record through the whole path on this thread (decode, judge, write, ack); raises the fatal error if
    the record hit one."""
    records, table, writer, halt = worker._records, worker._table, worker._writer, worker._halt
    if records.pool is None:
        records.pool = JudgePool(1, records.judge)
    tp = TopicPartition(msg.topic, msg.partition)
    table.ledger.forget(tp)
    records.admit(tp, msg, worker._clock())
    while worker.busy() and halt.error is None:
        records.collect_judged()
        writer.collect(records.durable)
        writer.resend_due()
        if worker.busy():
            time.sleep(0.0005)
    table.clear(tp)
    fatal = halt.take()
    if fatal is not None:
        raise fatal

"""The seams between the worker and its clients: what it calls on a consumer, a producer, a record.

``kafka.KafkaConsumer`` and ``kafka.KafkaProducer`` fit these protocols, and so does any test double
that defines the same methods with the same keywords (no ``TypeError`` fallbacks in the worker:
a double that lacks a keyword the worker passes is a broken double).
"""

from __future__ import annotations

from typing import Any, Callable, Protocol

from contract.group import GroupConsumer
from contract.record import RagTrace
from evaluator_worker.scoring import AnswerResult


class Record(Protocol):
    """The fields of a kafka-python ``ConsumerRecord`` the worker reads."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def value(self) -> bytes | None: ...


class SendFuture(Protocol):
    """What ``Producer.send`` returns: callbacks run on the producer's IO thread (or at once when already done)."""

    def add_callback(self, fn: Callable[[Any], None]) -> Any: ...
    def add_errback(self, fn: Callable[[Any], None]) -> Any: ...


class Producer(Protocol):
    """Result and dead-letter writes."""

    def send(
        self,
        topic: str,
        key: bytes | None = None,
        value: bytes | None = None,
        headers: list[tuple[str, bytes]] | None = None,
    ) -> SendFuture: ...

    def close(self, timeout: float | None = None) -> None: ...


#: the group member: polled, paused, committed and closed by the poll thread only (``contract.group``'s
#: protocol: the worker and the OTLP bridge run the same ``GroupMember`` over it)
Consumer = GroupConsumer


class Exporter(Protocol):
    """Evaluations back into the traces (``evaluator_worker.trace_export``); never raises."""

    def export(self, result: AnswerResult, trace: RagTrace) -> None: ...

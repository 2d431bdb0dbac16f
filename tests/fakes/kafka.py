"""In-memory stand-ins for kafka-python clients (unit tests; integration tests use the real broker)."""

from __future__ import annotations

from typing import Any, Callable


class DoneFuture:
    """A send future that is already resolved: callbacks run at once (like kafka-python's for a done future)."""

    def __init__(self, exc: BaseException | None = None) -> None:
        self.exc = exc

    def add_callback(self, fn: Callable[[Any], None]) -> "DoneFuture":
        if self.exc is None:
            fn(None)
        return self

    def add_errback(self, fn: Callable[[BaseException], None]) -> "DoneFuture":
        if self.exc is not None:
            fn(self.exc)
        return self

    def get(self, timeout: float | None = None) -> None:
        if self.exc is not None:
            raise self.exc


class MemoryProducer:
    """Keeps every ``send``: ``sent`` holds (topic, key, value, headers), ``values`` the values alone.

    ``fail_with(exc, times)`` makes the next ``times`` sends fail (their futures carry ``exc``);
    failed sends are not kept in ``sent``.
    """

    def __init__(self, **config) -> None:
        self.config = config
        self.sent: list[tuple[str, bytes | None, bytes, list]] = []
        self._failures: list[BaseException] = []

    @property
    def values(self) -> list[bytes]:
        return [value for _topic, _key, value, _headers in self.sent]

    def fail_with(self, exc: BaseException, times: int = 1) -> None:
        self._failures.extend([exc] * times)

    def send(self, topic, key=None, value=None, headers=None):
        if self._failures:
            return DoneFuture(self._failures.pop(0))
        self.sent.append((topic, key, value, list(headers or [])))
        return DoneFuture()

    def flush(self, timeout=None):
        pass

    def close(self, timeout=None):
        pass


class ScriptedConsumer:
    """A group consumer (``contract.group.GroupConsumer``) on fixed partitions: ``batches`` are returned by successive
    polls (then nothing), ``on_poll`` runs inside one, commits are kept (``fail_commit`` makes them raise), pauses
    are tracked."""

    def __init__(self, assigned: Any = (), batches: list[dict[Any, list[Any]]] | None = None) -> None:
        self.assigned = set(assigned)
        self._paused: set = set()
        self.batches = list(batches or [])
        self.polls: list[tuple[int, int | None]] = []
        self.commits: list[dict[Any, int]] = []
        self.listener: Any = None
        self.on_poll: Any = None
        self.fail_commit = False
        self.closed = False

    def subscribe(self, topics, listener=None):
        self.listener = listener

    def poll(self, timeout_ms=0, max_records=None):
        self.polls.append((timeout_ms, max_records))
        if self.on_poll is not None:
            self.on_poll()
        return self.batches.pop(0) if self.batches else {}

    def assignment(self):
        return set(self.assigned)

    def paused(self):
        return set(self._paused)

    def pause(self, *tps):
        self._paused |= set(tps)

    def resume(self, *tps):
        self._paused -= set(tps)

    def commit(self, offsets=None, timeout_ms=None):
        from kafka.errors import CommitFailedError

        if self.fail_commit:
            raise CommitFailedError("the group moved on")
        self.commits.append({tp: om.offset for tp, om in (offsets or {}).items()})

    async def commit_async(self, offsets=None):
        self.commit(offsets)

    def close(self, autocommit=True):
        self.closed = True

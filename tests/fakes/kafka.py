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

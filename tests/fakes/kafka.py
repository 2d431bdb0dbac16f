"""An in-memory stand-in for ``KafkaProducer`` (unit tests; integration tests use the real broker)."""

from __future__ import annotations


class MemoryProducer:
    """Keeps every ``send``: ``sent`` holds (topic, key, value, headers), ``values`` the values alone."""

    def __init__(self, **config) -> None:
        self.config = config
        self.sent: list[tuple[str, bytes | None, bytes, list]] = []

    @property
    def values(self) -> list[bytes]:
        return [value for _topic, _key, value, _headers in self.sent]

    def send(self, topic, key=None, value=None, headers=None):
        self.sent.append((topic, key, value, list(headers or [])))

    def flush(self, timeout=None):
        pass

    def close(self, timeout=None):
        pass

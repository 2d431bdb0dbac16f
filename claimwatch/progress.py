"""A dependency-free progress line for CLI commands (only when the stream is a TTY)."""

from __future__ import annotations

import sys
import time
from typing import IO


class Progress:
    """``with Progress(total, "scoring") as p: p.advance()``; silent when not a TTY."""

    def __init__(self, total: int | None, label: str, stream: IO[str] | None = None, min_interval_s: float = 0.1):
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.done = 0
        self._last = 0.0
        self._start = time.monotonic()
        self._min = min_interval_s

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < self._min and (self.total is None or self.done < self.total):
            return
        self._last = now
        rate = self.done / max(1e-9, now - self._start)
        if self.total:
            width = 30
            filled = int(width * self.done / self.total)
            bar = "#" * filled + "-" * (width - filled)
            self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {rate:.1f}/s")
        else:
            self.stream.write(f"\r{self.label} {self.done} {rate:.1f}/s")
        self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()

"""Rate-limited warnings: a condition that repeats for every trace or answer is logged at most once per interval per
key, with how many times it happened since the last line (a metric counts every occurrence)."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable

from contract.logs import get_logger

#: seconds between two log lines of the same key
DEFAULT_INTERVAL_S = 60.0


class RateLimitedLog:
    """``warn(key, message, **fields)`` logs at most once per ``interval_s`` per key; ``suppressed`` = skipped since."""

    def __init__(
        self,
        interval_s: float = DEFAULT_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        *,
        logger: str = __name__,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._log = get_logger(logger)
        self._last: dict[str, float] = {}
        self._skipped: dict[str, int] = {}
        self._lock = threading.Lock()

    def warn(self, key: str, message: str, **fields: Any) -> bool:
        """Log ``message`` now unless ``key`` was logged less than ``interval_s`` ago; True when logged."""
        now = self._clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval_s:
                self._skipped[key] = self._skipped.get(key, 0) + 1
                return False
            self._last[key] = now
            suppressed = self._skipped.pop(key, 0)
        self._log.warning(message, warning=key, suppressed=suppressed, **fields)
        return True

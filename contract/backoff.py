"""The one backoff schedule of the project: capped exponential, optional jitter, floored at a server's hint.

Used wherever something is tried again: the judge retry policy (``evaluator_worker.flow.RetryPolicy``), the
worker's result writes, the collector sink's producer creation and metadata waits, the OTLP bridge.

``Backoff(base_s, max_s).delay(attempt)`` is ``min(max_s, base_s * 2**attempt)`` (attempt 0 is the first
retry), times a factor in [0.5, 1) with ``jitter`` (so a fleet of clients retrying together spreads out, never
below half the schedule), and never below ``floor_s`` (a ``retry-after`` the server sent).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Backoff:
    """Capped exponential backoff with jitter; ``delay(attempt, floor_s)`` is the wait before retry ``attempt``."""

    base_s: float = 1.0
    max_s: float = 60.0
    jitter: bool = True

    def delay(self, attempt: int, floor_s: float | None = None, rng: Callable[[], float] = random.random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based), at least ``floor_s`` when given."""
        wait = min(self.max_s, self.base_s * (2 ** min(max(attempt, 0), 30)))
        if self.jitter:
            wait *= 0.5 + 0.5 * rng()
        return max(wait, floor_s or 0.0)

"""Which complete RAG traces are sent for judging.

Order of rules (first match decides the reason):

1. **Keep rules** (``keep_error``, ``keep_feedback``, ``keep_release``): a span
   with status ERROR anywhere in the trace, a negative user-feedback attribute,
   or a release listed in ``keep_releases``.
2. **Ratio** (``ratio_in`` / ``ratio_out``): deterministic per trace id, the same
   in every process and every language — the low 64 bits of the trace id are
   compared with ``ratio * 2**64`` like OTel's ``TraceIdRatioBased``. A slice
   override (``"route=billing": 0.5``) replaces the global ratio; when several
   overrides match, the highest ratio wins.
3. **Token bucket** (``rate_limited``): ``rate_per_second`` sustained with
   ``burst``; ``rate_per_second = 0`` disables it.

Keep-rule traces and the bucket (a deliberate choice): kept-by-rule traces
always pass, but they still take a token, and the bucket may go into debt down
to ``-burst``. So an error storm is never dropped by the limiter, yet it uses
up the budget and ratio-sampled traffic yields to it until the debt is repaid;
the debt floor keeps a long storm from starving ratio sampling for longer than
``2 * burst / rate_per_second`` seconds after it ends.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from collector.config import SamplingSettings

_TRACE_ID_LIMIT = (1 << 64) - 1
_NEGATIVE_WORDS = frozenset(
    {
        "negative",
        "thumbs_down",
        "thumbsdown",
        "thumbs-down",
        "down",
        "bad",
        "dislike",
        "unhelpful",
        "wrong",
        "true",
        "yes",
    }
)

REASONS = frozenset({"keep_error", "keep_feedback", "keep_release", "ratio_in", "ratio_out", "rate_limited"})


@dataclass(frozen=True, slots=True)
class Decision:
    """A sampling decision with a bounded ``reason`` label."""

    keep: bool
    reason: str


def ratio_bound(ratio: float) -> int:
    """Threshold on the low 64 bits of a trace id for ``ratio`` (as OTel's TraceIdRatioBased)."""
    return round(max(0.0, min(1.0, ratio)) * (_TRACE_ID_LIMIT + 1))


def ratio_keeps(trace_id: int, ratio: float) -> bool:
    """Deterministic: the same trace id gives the same answer everywhere."""
    return (trace_id & _TRACE_ID_LIMIT) < ratio_bound(ratio)


def is_negative_feedback(value: Any) -> bool:
    """True for ``True``, numbers <= 0, and words like "negative", "thumbs_down", "bad"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return value <= 0
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _NEGATIVE_WORDS:
            return True
        try:
            return float(text) <= 0
        except ValueError:
            return False
    return False


class TokenBucket:
    """Classic token bucket with an injectable clock; ``take(force=True)`` may go into bounded debt."""

    def __init__(self, rate_per_second: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate_per_second
        self.burst = max(1, burst)
        self._clock = clock
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.rate)

    def take(self, *, force: bool = False) -> bool:
        """Take one token; ``force`` takes it even when empty (debt floor ``-burst``)."""
        if self.rate <= 0:
            return True
        with self._lock:
            self._refill()
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            if force:
                self._tokens = max(-float(self.burst), self._tokens - 1.0)
                return True
            return False

    @property
    def tokens(self) -> float:
        with self._lock:
            self._refill()
            return self._tokens


class Sampler:
    """Applies keep rules, the deterministic ratio and the token bucket."""

    def __init__(
        self, settings: SamplingSettings | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings or SamplingSettings()
        self._bucket = TokenBucket(self.settings.rate_per_second, self.settings.burst, clock=clock)
        self._overrides: list[tuple[str, str, float]] = []
        for key, ratio in self.settings.slice_ratios.items():
            name, sep, value = key.partition("=")
            if sep:
                self._overrides.append((name.strip(), value.strip(), float(ratio)))
        self._keep_releases = frozenset(self.settings.keep_releases)

    def ratio_for(self, slices: Mapping[str, str]) -> float:
        """Global ratio, or the highest matching slice override."""
        matches = [r for name, value, r in self._overrides if slices.get(name) == value]
        return max(matches) if matches else self.settings.ratio

    def decide(
        self,
        trace_id: int,
        *,
        slices: Mapping[str, str] | None = None,
        error: bool = False,
        signals: Mapping[str, Any] | None = None,
    ) -> Decision:
        """Decide for one complete trace (``signals``: span attributes seen in the trace)."""
        slices = slices or {}
        signals = signals or {}
        keep_reason = None
        if error and self.settings.always_keep_errors:
            keep_reason = "keep_error"
        elif any(name in signals and is_negative_feedback(signals[name]) for name in self.settings.feedback_attributes):
            keep_reason = "keep_feedback"
        elif slices.get("release") in self._keep_releases:
            keep_reason = "keep_release"
        if keep_reason is not None:
            self._bucket.take(force=True)
            return Decision(True, keep_reason)
        if not ratio_keeps(trace_id, self.ratio_for(slices)):
            return Decision(False, "ratio_out")
        if not self._bucket.take():
            return Decision(False, "rate_limited")
        return Decision(True, "ratio_in")

"""Flow control for judge calls: the one retry layer, an adaptive concurrency limit, rate ceilings.

Every judge operation the :class:`~evaluator_worker.pipeline.Evaluator` makes (claim
extraction, verification) goes through :meth:`JudgeCaller.call`. It is **the only retry
layer**: the SDK clients are built with their own retries off (``max_retries=0``) so that
every 429/529 is seen here, where it can slow the whole worker down instead of one thread.

Policy per error (see :mod:`evaluator_worker.errors`):

- retryable (429, 529, 5xx, 408, timeouts, connection errors): wait and call again, with
  capped exponential backoff and full jitter, never less than the provider's
  ``retry-after``; give up only after ``retry_deadline_s`` (default 15 min) of trying, and
  then the answer's claims are ERROR. A rate-limit burst that clears within minutes costs
  lag (``claimwatch_consumer_lag_records``), not evaluations;
- not retryable (400, 413, malformed output): raised at once, the answer's claims ERROR;
- fatal (401, 403, unknown model): raised at once; the worker stops.

:class:`AdaptiveLimiter` bounds the calls in flight with AIMD, the scheme TCP uses for
congestion: each success adds ``1/limit`` (about +1 per round of calls), each throttled
reply halves the limit (at most once per ``decrease_cooldown_s``, so one burst of 429s
from 64 concurrent calls is one halving, not 64) and closes a gate until its
``retry-after`` has passed. As in TCP, a throttled call that started before the last
decrease says nothing about the lowered limit and does not lower it again; nor does a 429
before any call started under the lowered limit has succeeded: the provider is still in
the same throttled spell, which the retry-after gate paces (halving again would only
slow the recovery). Partial capacity (some calls pass, others get 429) keeps halving.

A decrease does not stop every call until the calls in flight have drained below the new
limit (64 -> 32 with 63 out would start nothing for about a second and then a burst of
30): as the calls started under the old limit pass, a share of them (new limit / old
limit, so one in two) is replaced by new calls, and the calls in flight shrink smoothly
to the new limit (proportional rate reduction, RFC 6937, as TCP does after a loss).

A throttling *episode* remembers the limit it started from. The burst is over when the
provider is seen accepting again: a rejection comes back in one round trip while an
accepted call runs for seconds, so a call started during the spell that is still out
after ``accepted_after_s`` (at least three times the slowest 429 round trip of the spell)
was accepted; the gate opens at once (each throttled call still waits its own
retry-after, then no longer than that, before it is tried again) and, if the spell named a
retry-after (so the accepted call started after the window it announced), the limit
returns to the episode's level. Otherwise the level returns at the first success once the
retry-after window has passed and ``recovery_quiet_s`` more went by without a 429 (a
success right after a 429 with no retry-after can be partial capacity). The restored level is on probation for
one round of calls (as many successes as the level), so a burst that clears costs the
spell and a round trip, not minutes of +1 per round. Verdicts are ordered by when their
calls started: a 429 of a call that started before the last accepted one is older news
than that acceptance and neither closes the gate nor starts a new spell. A 429 during the
probation means the level itself is too high: the episode ends there (halved once more)
and growth is additive again. Optional ceilings (``requests_per_minute``,
``input_tokens_per_minute``) keep the worker under an Anthropic organisation's limits
before the API has to say so; token estimates are corrected with the tokens each call
actually used.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from contract.backoff import Backoff
from contract.logs import get_logger
from evaluator_worker.errors import EvaluationAbandoned, JudgeError, JudgeThrottledYield, bounded_retry_after
from evaluator_worker.metrics import NullMetrics, WorkerMetrics

log = get_logger(__name__)

T = TypeVar("T")

#: estimated prompt overhead of one judge call (system prompt + tool schema), in tokens
PROMPT_OVERHEAD_TOKENS = 1_500


def estimate_tokens(*texts: str | None) -> int:
    """A cheap input-token estimate for the rate ceiling: ~4 characters per token plus the prompt."""
    return PROMPT_OVERHEAD_TOKENS + sum(len(t) for t in texts if t) // 4


@dataclass
class RetryPolicy:
    """Capped exponential backoff with full jitter, floored at the provider's retry-after."""

    base_s: float = 1.0
    max_s: float = 60.0
    #: stop retrying one operation after this long (the answer's claims become ERROR)
    deadline_s: float = 900.0
    #: and after this many attempts (None: only the deadline counts)
    max_attempts: int | None = None
    jitter: bool = True
    #: give an operation up at the first throttled reply (429/529) with :class:`JudgeThrottledYield` instead of
    #: retrying: the shadow judge, which shares the provider's rate limit with the main judge and must not compete
    yield_when_throttled: bool = False

    def delay(self, attempt: int, retry_after: float | None, rng: Callable[[], float] = random.random) -> float:
        """The project's one schedule (:class:`contract.backoff.Backoff`), floored at the provider's retry-after."""
        return Backoff(self.base_s, self.max_s, self.jitter).delay(attempt, retry_after, rng)


class _Bucket:
    """Token bucket refilled continuously: ``rate_per_s``, capacity ``burst``. May go negative (debt)."""

    def __init__(self, per_minute: float, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, per_minute)  # up to one minute's worth at once, like the provider's window
        self.level = self.capacity
        self.at = now

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.rate)
        self.at = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 if it is now). Amounts above capacity wait for a full bucket."""
        need = min(amount, self.capacity) - self.level
        return 0.0 if need <= 0 else need / self.rate


class Permit:
    __slots__ = ("tokens", "at", "epoch")

    def __init__(self, tokens: int, at: float, epoch: int = 0) -> None:
        self.tokens = tokens
        self.at = at
        #: decreases of the limit before this call started (a call from an older epoch started above the limit)
        self.epoch = epoch


class _Spell:
    """One spell of 429s: the calls started during it that are still out, and its slowest rejection."""

    #: an accepted call is out for at least this many times the slowest rejection's round trip
    RTT_FACTOR = 3.0

    def __init__(self, now: float, rejection_rtt: float) -> None:
        self.started = now
        self.slowest_rejection = rejection_rtt
        self.out: set[Permit] = set()
        #: the provider named a retry-after, so every call of the spell started after that window had passed
        self.gated = False

    def acceptance(self, floor_s: float) -> tuple[Permit, float] | None:
        """The call out longest and when it counts as accepted if no 429 comes first (None: no call is out)."""
        if not self.out:
            return None
        first = min(self.out, key=lambda p: p.at)
        return first, first.at + max(floor_s, self.RTT_FACTOR * self.slowest_rejection)


class AdaptiveLimiter:
    """AIMD limit on concurrent calls, a retry-after gate and optional request/token rate ceilings. Thread-safe."""

    def __init__(
        self,
        max_limit: int,
        *,
        initial: int | None = None,
        min_limit: int = 1,
        decrease_factor: float = 0.5,
        decrease_cooldown_s: float = 2.0,
        recovery_quiet_s: float = 1.0,
        accepted_after_s: float = 0.1,
        requests_per_minute: float | None = None,
        input_tokens_per_minute: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_limit = max(1, int(max_limit))
        self.min_limit = max(1, min(int(min_limit), self.max_limit))
        self._limit = float(min(self.max_limit, initial if initial is not None else self.max_limit))
        self._limit = max(self._limit, float(self.min_limit))
        self.decrease_factor = decrease_factor
        self.decrease_cooldown_s = decrease_cooldown_s
        self.recovery_quiet_s = recovery_quiet_s
        self.accepted_after_s = accepted_after_s
        self._clock = clock
        now = clock()
        self._requests = _Bucket(requests_per_minute, now) if requests_per_minute else None
        self._tokens = _Bucket(input_tokens_per_minute, now) if input_tokens_per_minute else None
        self._in_use = 0
        self._not_before = 0.0
        self._last_decrease = -1e18
        self._last_throttle = -1e18
        #: the limit the current throttling episode started from (None: no episode), regrown to quickly
        self._regrow_to: float | None = None
        #: the limit has grown fast since the last decrease (a 429 now means the old level is too high)
        self._regrowing = False
        #: successes left before a restored level counts as recovered (a 429 before then: the level is too high)
        self._probation = 0
        #: a call started after the last decrease has succeeded (the lowered limit was tried)
        self._tried_since_decrease = True
        #: the current spell of 429s (None: none), and when the provider was last seen accepting after one
        self._spell: _Spell | None = None
        self._accepted_at = -1e18
        #: proportional rate reduction: decreases so far; calls started before the last one still in flight,
        #: those that have passed since, and the share of them replaced by new calls (new limit / old limit)
        self._epoch = 0
        self._old_in_flight = 0
        self._old_passed = 0
        self._replace_share = 1.0
        self._cond = threading.Condition()
        #: times a call waited for the retry-after gate or a rate ceiling (not for a free slot)
        self.throttle_waits = 0

    # -- observation -----------------------------------------------------------------
    @property
    def limit(self) -> int:
        return int(self._limit)

    # -- acquire / release -------------------------------------------------------------
    def acquire(self, tokens: int = 0, *, cancelled: Callable[[], bool] | None = None) -> Permit:
        """Block until a call may start; raises ``EvaluationAbandoned`` when ``cancelled()`` turns true."""
        waited_for_rate = False
        with self._cond:
            while True:
                if cancelled is not None and cancelled():
                    raise EvaluationAbandoned("stopped while waiting for a judge slot")
                now = self._clock()
                self._check_accepted(now)
                wait = 0.0
                if self._in_use >= self._cap():
                    wait = 0.25  # woken by release(); the timeout only re-checks cancellation
                else:
                    wait = max(wait, self._not_before - now)
                    pending = self._spell.acceptance(self.accepted_after_s) if wait > 0 and self._spell else None
                    if pending is not None:  # wake when a call of the spell counts as accepted
                        wait = max(0.01, min(wait, pending[1] - now))
                    if self._requests is not None:
                        self._requests.refill(now)
                        wait = max(wait, self._requests.wait_for(1))
                    if self._tokens is not None and tokens:
                        self._tokens.refill(now)
                        wait = max(wait, self._tokens.wait_for(tokens))
                    if wait <= 0:
                        break
                    waited_for_rate = True
                self._cond.wait(min(wait, 0.25))
            self._in_use += 1
            if self._requests is not None:
                self._requests.level -= 1
            if self._tokens is not None and tokens:
                self._tokens.level -= tokens
            if waited_for_rate:
                self.throttle_waits += 1
            permit = Permit(tokens, now, self._epoch)
            if self._spell is not None:
                self._spell.out.add(permit)
            return permit

    def release(
        self,
        permit: Permit,
        *,
        throttled: bool = False,
        retry_after: float | None = None,
        used_tokens: int | None = None,
    ) -> None:
        """End a call. ``throttled``: the provider said slow down; ``used_tokens`` corrects the estimate."""
        with self._cond:
            self._in_use = max(0, self._in_use - 1)
            now = self._clock()
            self._check_accepted(now)
            if self._tokens is not None and used_tokens is not None:
                self._tokens.level -= used_tokens - permit.tokens
            if not throttled and permit.at >= self._last_decrease:
                self._tried_since_decrease = True
            if permit.epoch < self._epoch and self._old_in_flight > 0:
                self._old_in_flight -= 1
                self._old_passed += 0 if throttled else 1
                if self._old_in_flight == 0:
                    self._old_passed = 0
            spell = self._spell
            if spell is not None and permit in spell.out:
                spell.out.discard(permit)
                if throttled:
                    spell.slowest_rejection = max(spell.slowest_rejection, now - permit.at)
                else:
                    self._burst_over(now, permit)  # a call of the spell went through
            if throttled:
                self._throttled(now, permit, retry_after)
            elif self._regrowing or (self._regrow_to is not None and now >= self._quiet_at()):
                if now >= self._quiet_at():  # quiet since the last 429 and a call went through: the spell is over
                    self._burst_over(now, permit)
                self._restore()
                self._probation -= 1
                if self._probation <= 0:
                    self._regrow_to, self._regrowing = None, False
                    log.info("judge_limit_recovered", limit=int(self._limit))
            else:
                self._limit = min(float(self.max_limit), self._limit + 1.0 / max(self._limit, 1.0))
            self._cond.notify_all()

    def wait_accepting(self, since: float, timeout: float) -> bool:
        """Wait up to ``timeout`` s until the provider has accepted a call started after ``since`` (the limiter's
        clock) and so ended a spell of 429s; True once it has."""
        with self._cond:
            self._check_accepted(self._clock())
            if self._accepted_at <= since:
                self._cond.wait(timeout)  # woken by every release and by the end of a spell
                self._check_accepted(self._clock())
            return self._accepted_at > since

    def _cap(self) -> int:
        """Calls that may be in flight: the limit or, while calls of the old limit are still out, those plus a
        share of the ones that passed (proportional rate reduction: the pipe shrinks as they pass, no drain)."""
        return max(int(self._limit), self._old_in_flight + int(self._old_passed * self._replace_share))

    def _check_accepted(self, now: float) -> None:
        """End the spell once a call started during it has been out long enough to have been accepted."""
        pending = self._spell.acceptance(self.accepted_after_s) if self._spell is not None else None
        if pending is not None and now >= pending[1]:
            self._burst_over(now, pending[0])

    def _burst_over(self, now: float, accepted: Permit) -> None:
        """The provider accepted ``accepted``: the spell is over and the gate opens. If the spell named a
        retry-after, the accepted call started after it: the window it announced is over, the level returns.
        The call's start is what later 429s are ordered against (one of a call started before it is older)."""
        spell = self._spell
        if spell is not None:
            log.info("judge_throttle_spell_over", seconds=round(now - spell.started, 2))
            self._spell = None
            self._accepted_at = max(self._accepted_at, accepted.at)
            self._not_before = min(self._not_before, now)
            if spell.gated:
                self._restore()
            self._cond.notify_all()

    def _restore(self) -> None:
        """The burst is over: back to the level the episode started from, on probation for a round of calls."""
        if self._regrow_to is not None and not self._regrowing:
            self._limit = max(self._limit, self._regrow_to)
            self._regrowing = True
            self._probation = int(self._regrow_to)

    def _quiet_at(self) -> float:
        """When the current episode counts as over: its retry-after passed and a quiet spell without a 429."""
        return max(self._not_before, self._last_throttle + self.recovery_quiet_s)

    def _throttled(self, now: float, permit: Permit, retry_after: float | None) -> None:
        retry_after = bounded_retry_after(retry_after)  # one reply must not close the shared gate for a day
        if permit.at < self._accepted_at:  # started before a call the provider accepted: older news
            return
        self._last_throttle = now
        if self._spell is None:
            self._spell = _Spell(now, now - permit.at)
        self._spell.gated = self._spell.gated or bool(retry_after)
        stale = permit.at < self._last_decrease  # started under the old limit: no news about the new one
        if not stale and self._tried_since_decrease and now - self._last_decrease >= self.decrease_cooldown_s:
            if self._regrow_to is None:
                self._regrow_to = self._limit
            lowered = max(float(self.min_limit), self._limit * self.decrease_factor)
            # the calls in flight started under the old limit: as they pass, a share of them is replaced
            self._epoch += 1
            self._old_in_flight, self._old_passed = self._in_use, 0
            self._replace_share = lowered / max(self._limit, 1.0)
            self._limit = lowered
            self._last_decrease = now
            self._tried_since_decrease = False
            if self._regrowing:  # the level we were climbing back to is too high now: additive from here
                self._regrow_to = None
            self._regrowing = False
            log.warning("judge_throttled_limit_lowered", limit=int(self._limit), retry_after_s=retry_after)
        if retry_after:
            self._not_before = max(self._not_before, now + retry_after)


class JudgeCaller:
    """Runs judge operations with the retry policy and, for network judges, the adaptive limiter.

    ``stop`` (an Event) interrupts backoff and slot waits: the operation then raises
    :class:`EvaluationAbandoned` and the record is handed back uncommitted.
    """

    def __init__(
        self,
        judge_name: str,
        *,
        retry: RetryPolicy | None = None,
        limiter: AdaptiveLimiter | None = None,
        metrics: WorkerMetrics | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        self.judge_name = judge_name
        self.retry = retry or RetryPolicy()
        self.limiter = limiter
        self.metrics: WorkerMetrics = metrics if metrics is not None else NullMetrics()
        self.stop = stop or threading.Event()
        self._clock = clock
        self._sleep = sleep

    def _cancelled(self, cancelled: Callable[[], bool] | None) -> bool:
        return self.stop.is_set() or (cancelled is not None and cancelled())

    def _wait(
        self,
        seconds: float,
        cancelled: Callable[[], bool] | None,
        *,
        floor_s: float | None = None,
        since: float = 0.0,
    ) -> None:
        """Wait out a backoff. With ``floor_s`` (a 429's retry-after), the wait ends early once that much has
        passed and the provider has accepted a call started after ``since`` (when the throttled call started)."""
        if self._sleep is not None:
            self._sleep(seconds)
        else:
            limiter = self.limiter
            began = time.monotonic()
            while (left := began + seconds - time.monotonic()) > 0 and not self._cancelled(cancelled):
                to_floor = began + floor_s - time.monotonic() if floor_s is not None else left
                if to_floor <= 0 and limiter is not None:
                    if limiter.wait_accepting(since, min(left, 0.25)):
                        break
                else:
                    self.stop.wait(min(left, 0.25, to_floor if to_floor > 0 else left))
        self._raise_if_cancelled(cancelled)

    def _raise_if_cancelled(self, cancelled: Callable[[], bool] | None) -> None:
        if self._cancelled(cancelled):
            raise EvaluationAbandoned("stopped during backoff")

    def call(
        self,
        operation: str,
        fn: Callable[[], T],
        *,
        est_tokens: int = 0,
        used_tokens: Callable[[T], int] | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> T:
        """``fn()`` under the policy. ``cancelled()`` true -> ``EvaluationAbandoned`` (checked between attempts)."""
        first = self._clock()
        attempt = 0
        m = self.metrics
        limiter = self.limiter
        while True:
            if self._cancelled(cancelled):
                raise EvaluationAbandoned("stopped before a judge call")
            permit = limiter.acquire(est_tokens, cancelled=lambda: self._cancelled(cancelled)) if limiter else None
            start = time.perf_counter()
            try:
                out = fn()
            except JudgeError as exc:
                if limiter is not None and permit is not None:
                    limiter.release(permit, throttled=exc.throttled, retry_after=exc.retry_after)
                m.judge_call(
                    self.judge_name, operation, time.perf_counter() - start, error=exc.reason, throttled=exc.throttled
                )
                if exc.fatal or not exc.retryable:
                    raise
                if exc.throttled and self.retry.yield_when_throttled:
                    raise JudgeThrottledYield(
                        f"{self.judge_name} {operation}: throttled ({exc.reason}), yielding",
                        retry_after=exc.retry_after,
                    ) from exc
                delay = self.retry.delay(attempt, exc.retry_after)
                out_of_attempts = self.retry.max_attempts is not None and attempt + 1 >= self.retry.max_attempts
                if out_of_attempts or self._clock() - first + delay > self.retry.deadline_s:
                    log.warning(
                        "judge_retry_deadline_reached",
                        judge=self.judge_name,
                        operation=operation,
                        reason=exc.reason,
                        attempts=attempt + 1,
                    )
                    raise
                log.info(
                    "judge_call_retrying",
                    judge=self.judge_name,
                    operation=operation,
                    reason=exc.reason,
                    status=exc.status_code,
                    attempt=attempt + 1,
                    delay_s=round(delay, 2),
                )
                attempt += 1
                floor_s = (exc.retry_after or 0.0) if exc.throttled and permit is not None else None
                self._wait(delay, cancelled, floor_s=floor_s, since=permit.at if permit is not None else 0.0)
                continue
            except BaseException:
                if limiter is not None and permit is not None:
                    limiter.release(permit)
                raise
            if limiter is not None and permit is not None:
                used = None
                if used_tokens is not None:
                    try:
                        used = used_tokens(out)
                    except Exception:
                        used = None
                limiter.release(permit, used_tokens=used)
            m.judge_call(self.judge_name, operation, time.perf_counter() - start)
            return out

"""Flow control: the one retry layer, AIMD concurrency, retry-after gate, rate ceilings, error mapping."""

from __future__ import annotations

import threading
import time

import anthropic
import pytest

from contract.record import RagTrace
from evaluator_worker.config import AnthropicSettings
from evaluator_worker.errors import (
    EvaluationAbandoned,
    JudgeAuthError,
    JudgeError,
    JudgeOutputError,
    JudgeRateLimited,
    JudgeRequestRejected,
    JudgeThrottledYield,
    JudgeUnavailable,
)
from evaluator_worker.flow import AdaptiveLimiter, JudgeCaller, RetryPolicy
from evaluator_worker.judges.anthropic import AnthropicJudge, retry_after_s
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes import MessagesServer, oracle_responder


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _sample(m: WorkerMetrics, name: str, **labels) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


# ---------------------------------------------------------------- limiter


def test_limiter_halves_on_throttle_once_per_cooldown_and_grows_back_additively():
    """A burst of 429s from many calls is one halving; 429s past the cooldown halve again; each success adds 1/limit."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, decrease_cooldown_s=2.0)
    permits = [lim.acquire() for _ in range(64)]
    for p in permits[:40]:
        lim.release(p, throttled=True)
    assert lim.limit == 32
    clock.now = 0.5  # inside the quiet spell after the 429s: growth stays additive
    lim.release(lim.acquire())  # the lowered limit was tried: a call started after the decrease went through
    clock.now = 3.0
    lim.release(lim.acquire(), throttled=True)
    assert lim.limit == 16
    for p in permits[40:]:
        lim.release(p)
    assert 16 < lim.limit <= 18  # 24 successes at ~1/16 each
    for _ in range(2000):
        lim.release(lim.acquire())
    assert lim.limit == 64  # never above the maximum


def test_limiter_regrows_to_its_pre_throttle_level_once_the_burst_has_passed():
    """A 429 spell halves once; once it has cleared (retry-after passed, quiet spell) the next success restores 64."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, decrease_cooldown_s=2.0)
    permits = [lim.acquire() for _ in range(64)]
    for p in permits[:20]:
        lim.release(p, throttled=True, retry_after=1.0)
    clock.now = 2.5  # late 429s of the same spell (no call has passed under the new limit): no second halving
    for p in permits[20:40]:
        lim.release(p, throttled=True, retry_after=1.0)
    assert lim.limit == 32
    clock.now = 3.0  # still inside the quiet spell after the last 429: additive only
    for p in permits[40:]:
        lim.release(p)
    assert lim.limit == 32
    clock.now = 5.0  # quiet: the level the episode started from, at once
    lim.release(lim.acquire())
    assert lim.limit == 64
    for _ in range(80):
        lim.release(lim.acquire())
    assert lim.limit == 64  # never above the level the episode started from, nor the maximum


def test_limiter_recovery_restores_the_level_the_episode_started_from():
    """After two halvings (64 -> 16), the first success past the quiet spell puts the limit back at 64, not 17."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, decrease_cooldown_s=2.0)
    lim.release(lim.acquire(), throttled=True)
    clock.now = 0.5  # a call under the new limit passes (partial capacity), before the spell is quiet
    lim.release(lim.acquire())
    clock.now = 2.5
    lim.release(lim.acquire(), throttled=True, retry_after=1.0)
    assert lim.limit == 16
    clock.now = 6.0
    lim.release(lim.acquire())
    assert lim.limit == 64


def test_limiter_ignores_429s_of_calls_started_before_the_last_decrease():
    """Like TCP: a throttled call that started under the old limit does not lower the new one again."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, decrease_cooldown_s=2.0)
    old = [lim.acquire() for _ in range(10)]
    clock.now = 1.0
    lim.release(old[0], throttled=True)
    assert lim.limit == 32
    clock.now = 4.0  # past the cooldown, but these calls started before the decrease
    for p in old[1:]:
        lim.release(p, throttled=True)
    assert lim.limit == 32
    lim.release(lim.acquire(), throttled=True)  # started under the new limit, but nothing has passed under it yet
    assert lim.limit == 32
    lim.release(lim.acquire())
    lim.release(lim.acquire(), throttled=True)  # partial capacity under the new limit: halve again
    assert lim.limit == 16


def test_limiter_429_while_regrowing_ends_the_fast_regrowth():
    """A 429 during the restored level's probation means the old level is too high: halve once more, then grow
    additively; after a full round of successes at the restored level the episode is over."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, decrease_cooldown_s=2.0)
    lim.release(lim.acquire(), throttled=True, retry_after=1.0)
    assert lim.limit == 32
    clock.now = 4.0
    for _ in range(8):
        lim.release(lim.acquire())
    assert lim.limit == 64  # restored, on probation (64 successes)
    lim.release(lim.acquire(), throttled=True)
    assert lim.limit == 32
    clock.now = 10.0
    for _ in range(40):
        lim.release(lim.acquire())
    assert 33 <= lim.limit < 34  # additive: 40 successes at ~1/32 each, not a restore to 64


def test_limiter_probation_ends_after_a_round_of_successes():
    """64 successes at the restored level end the episode: a later 429 starts a new one from 64."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, decrease_cooldown_s=2.0)
    lim.release(lim.acquire(), throttled=True, retry_after=1.0)
    clock.now = 4.0
    for _ in range(64):
        lim.release(lim.acquire())
    assert lim.limit == 64
    clock.now = 8.0
    lim.release(lim.acquire(), throttled=True, retry_after=1.0)
    assert lim.limit == 32
    clock.now = 12.0
    lim.release(lim.acquire())
    assert lim.limit == 64  # a new episode, restored again


def test_limiter_spell_ends_when_a_call_started_during_it_is_accepted():
    """A call of the spell still out after three round trips of the slowest 429 was accepted: the gate opens before
    the retry-after has passed and, since the spell named one, the limit returns to the episode's level."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, accepted_after_s=0.1)
    older = lim.acquire()
    lim.release(lim.acquire(), throttled=True, retry_after=1.0)
    assert lim.limit == 32
    clock.now = 1.0  # the retry-after has passed: a new opening
    rejected, out = lim.acquire(), lim.acquire()
    clock.now = 1.05
    lim.release(rejected, throttled=True, retry_after=1.0)  # the gate closes again until 2.05; slowest 429: 0.05 s
    clock.now = 1.1
    assert _try_acquire(lim) is None  # 0.1 s out is not yet three round trips (0.15 s)
    clock.now = 1.16
    accepted = _try_acquire(lim)
    assert accepted is not None, "the gate stayed closed although the provider accepted a call"
    assert lim.limit == 64
    clock.now = 1.2
    lim.release(older, throttled=True, retry_after=1.0)  # started before the accepted call: older news, no gate
    assert lim.limit == 64 and _try_acquire(lim) is not None
    lim.release(out)


def test_limiter_spell_goes_on_while_every_call_of_it_is_rejected():
    """Calls of the spell that keep getting 429s never count as accepted: the gate follows each retry-after."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock, accepted_after_s=0.1)
    lim.release(lim.acquire(), throttled=True, retry_after=1.0)
    for opening in (1.0, 2.0, 3.0):
        clock.now = opening
        calls = [lim.acquire() for _ in range(8)]
        clock.now = opening + 0.02
        for p in calls:
            lim.release(p, throttled=True, retry_after=0.98)
        clock.now = opening + 0.5
        assert _try_acquire(lim) is None
    assert lim.limit == 32  # no call passed under the lowered limit: one halving for the whole spell


def test_limiter_quiet_recovery_ends_the_spell_too():
    """A spell without a retry-after ends at the first success past the quiet spell: a late 429 of a call that
    started before that success is older news and neither closes the gate nor lowers the restored level."""
    clock = FakeClock()
    lim = AdaptiveLimiter(64, clock=clock)
    slow = lim.acquire()
    lim.release(lim.acquire(), throttled=True)
    assert lim.limit == 32
    clock.now = 2.0
    lim.release(lim.acquire())
    assert lim.limit == 64
    clock.now = 2.1
    lim.release(slow, throttled=True, retry_after=5.0)
    assert lim.limit == 64 and _try_acquire(lim) is not None


def test_caller_backoff_ends_once_the_provider_accepts_again():
    """A 429'd call waits its retry-after, then no longer than it takes another call to be seen accepted."""
    lim = AdaptiveLimiter(8, accepted_after_s=0.1)
    caller = JudgeCaller("j", retry=RetryPolicy(base_s=10.0), limiter=lim)
    fn = Script(JudgeRateLimited("429", status_code=429, retry_after=0.3))

    def another_call() -> None:
        time.sleep(0.35)
        permit = lim.acquire()  # after the retry-after: the provider takes it and answers in 0.5 s
        time.sleep(0.5)
        lim.release(permit)

    helper = threading.Thread(target=another_call)
    helper.start()
    started = time.monotonic()
    assert caller.call("verify", fn) == "ok"
    took = time.monotonic() - started
    helper.join()
    assert 0.3 <= took < 2.0, f"waited {took:.2f} s; the backoff alone is at least 5 s"


def _try_acquire(lim: AdaptiveLimiter):
    """A permit if a call may start now, else None (after one 0.25 s wait for a slot)."""
    checks = [0]

    def cancelled() -> bool:
        checks[0] += 1
        return checks[0] > 1

    try:
        return lim.acquire(cancelled=cancelled)
    except EvaluationAbandoned:
        return None


def test_limiter_replaces_every_second_call_of_the_old_limit_after_halving():
    """Proportional rate reduction: after 8 -> 4 with 7 calls still out, one new call starts per two that pass
    (the in-flight count shrinks to the new limit, it does not drain first); a throttled old call earns nothing."""
    clock = FakeClock()
    lim = AdaptiveLimiter(8, clock=clock)
    old = [lim.acquire() for _ in range(8)]
    lim.release(old[0], throttled=True)
    assert lim.limit == 4
    assert _try_acquire(lim) is None  # 7 calls of the old limit are out
    lim.release(old[1], throttled=True)
    lim.release(old[2])
    assert _try_acquire(lim) is None  # one passed: half a call
    lim.release(old[3])
    new = _try_acquire(lim)
    assert new is not None  # two passed: one replaced
    assert _try_acquire(lim) is None
    for p in old[4:]:
        lim.release(p)
    started = [p for p in (_try_acquire(lim) for _ in range(8)) if p is not None]
    assert len(started) + 1 == lim.limit  # the old calls are gone: the limit alone bounds the calls in flight
    for p in [new, *started]:
        lim.release(p)


def test_limiter_never_below_min_and_blocks_at_limit():
    """The limit floors at min_limit; acquire past the limit waits for a release."""
    lim = AdaptiveLimiter(4, min_limit=2, decrease_cooldown_s=0.0)
    for _ in range(10):
        lim.release(lim.acquire(), throttled=True)
    assert lim.limit == 2
    a, b = lim.acquire(), lim.acquire()
    got = []
    t = threading.Thread(target=lambda: got.append(lim.acquire()))
    t.start()
    time.sleep(0.2)
    assert not got, "a third call started above the limit"
    lim.release(a)
    t.join(2)
    assert got
    lim.release(b)
    lim.release(got[0])


def test_retry_after_closes_the_gate_for_every_caller():
    """After a 429 with retry-after 0.4 s, no call starts until the time has passed."""
    lim = AdaptiveLimiter(8)
    lim.release(lim.acquire(), throttled=True, retry_after=0.4)
    started = time.monotonic()
    lim.release(lim.acquire())
    assert time.monotonic() - started >= 0.35
    assert lim.throttle_waits == 1


def test_requests_per_minute_ceiling_spaces_calls():
    """With 600 requests/min and an empty bucket, calls come 0.1 s apart."""
    lim = AdaptiveLimiter(8, requests_per_minute=600)
    lim._requests.level = 0  # start empty: measure the refill rate
    started = time.monotonic()
    for _ in range(3):
        lim.release(lim.acquire())
    assert 0.25 <= time.monotonic() - started < 1.0


def test_token_ceiling_uses_actual_usage():
    """Estimated tokens are corrected by what the call really used."""
    clock = FakeClock()
    lim = AdaptiveLimiter(8, input_tokens_per_minute=60_000, clock=clock)
    p = lim.acquire(1_000)
    lim.release(p, used_tokens=30_000)
    assert lim._tokens.level == pytest.approx(60_000 - 30_000)


def test_acquire_gives_up_when_cancelled():
    """A call waiting for a slot raises EvaluationAbandoned when its record is given up."""
    lim = AdaptiveLimiter(1)
    held = lim.acquire()
    flag = threading.Event()
    threading.Timer(0.2, flag.set).start()
    with pytest.raises(EvaluationAbandoned):
        lim.acquire(cancelled=flag.is_set)
    lim.release(held)


# ---------------------------------------------------------------- caller


class Script:
    """Raises the queued errors in order, then returns 'ok'."""

    def __init__(self, *errors: JudgeError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_caller_retries_retryable_errors_honouring_retry_after():
    """429 (retry-after 5) then 503 then success: two sleeps, the first at least retry-after."""
    sleeps: list[float] = []
    m = WorkerMetrics()
    caller = JudgeCaller("j", retry=RetryPolicy(base_s=1.0, jitter=False), metrics=m, sleep=sleeps.append)
    fn = Script(JudgeRateLimited("429", status_code=429, retry_after=5.0), JudgeUnavailable("503", status_code=503))
    assert caller.call("verify", fn) == "ok"
    assert fn.calls == 3 and sleeps == [5.0, 2.0]
    assert _sample(m, "claimwatch_judge_throttled_total", judge="j") == 1
    assert _sample(m, "claimwatch_judge_errors_total", judge="j", reason="rate_limited") == 1


def test_a_caller_that_yields_gives_up_at_a_throttle_but_retries_an_outage():
    """yield_when_throttled (the shadow judge): a 503 is still retried, a 429 raises JudgeThrottledYield with the
    provider's retry-after after one call, counted as throttled."""
    sleeps: list[float] = []
    m = WorkerMetrics()
    policy = RetryPolicy(base_s=1.0, jitter=False, yield_when_throttled=True)
    caller = JudgeCaller("j", retry=policy, metrics=m, sleep=sleeps.append)
    fn = Script(JudgeUnavailable("503", status_code=503), JudgeRateLimited("429", status_code=429, retry_after=7.0))
    with pytest.raises(JudgeThrottledYield) as info:
        caller.call("verify", fn)
    assert fn.calls == 2 and sleeps == [1.0] and info.value.retry_after == 7.0
    assert isinstance(info.value, EvaluationAbandoned)  # the evaluator hands it up, never turns it into a verdict
    assert _sample(m, "claimwatch_judge_throttled_total", judge="j") == 1


@pytest.mark.parametrize("error", [JudgeRequestRejected("400"), JudgeOutputError("bad"), JudgeAuthError("401")])
def test_caller_does_not_retry_rejected_malformed_or_fatal(error):
    """400, malformed output and 401 are raised after one call."""
    fn = Script(error)
    with pytest.raises(type(error)):
        JudgeCaller("j", sleep=lambda s: None).call("extract", fn)
    assert fn.calls == 1


def test_caller_gives_up_at_the_deadline():
    """A judge that keeps failing is retried until the deadline, then the error is raised."""
    clock = FakeClock()

    def sleep(s: float) -> None:
        clock.now += s

    fn = Script(*[JudgeUnavailable("503") for _ in range(1000)])
    caller = JudgeCaller(
        "j", retry=RetryPolicy(base_s=1, max_s=60, deadline_s=300, jitter=False), clock=clock, sleep=sleep
    )
    with pytest.raises(JudgeUnavailable):
        caller.call("verify", fn)
    assert 300 - 60 <= clock.now <= 300 and fn.calls == 10  # stops when the next wait would pass the deadline


def test_caller_backoff_is_interrupted_by_cancellation():
    """A record given up during a long backoff stops waiting at once (EvaluationAbandoned, no ERROR)."""
    flag = threading.Event()
    threading.Timer(0.2, flag.set).start()
    fn = Script(JudgeRateLimited("429", retry_after=30.0))
    started = time.monotonic()
    with pytest.raises(EvaluationAbandoned):
        JudgeCaller("j").call("verify", fn, cancelled=flag.is_set)
    assert time.monotonic() - started < 2.0


# ---------------------------------------------------------------- the anthropic judge's errors, through the real SDK


def _judge(srv: MessagesServer, **settings) -> AnthropicJudge:
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=5.0)
    return AnthropicJudge(AnthropicSettings(**settings), client=client)


def _trace() -> RagTrace:
    return RagTrace(
        trace_id="a" * 32,
        question="When?",
        answer="The tower was completed in 1889.",
        contexts=[{"content": "The tower was completed in 1889."}],
    )


def test_the_sdk_never_retries():
    """The judge's SDK client is built with max_retries=0 and no setting changes it: one retry layer (ours)."""
    assert "max_retries" not in AnthropicSettings.model_fields
    judge = AnthropicJudge(AnthropicSettings(api_key="k"))
    assert judge.client.max_retries == 0


@pytest.mark.parametrize(
    ("status", "cls", "retryable", "throttled", "fatal"),
    [
        (400, JudgeRequestRejected, False, False, False),
        (401, JudgeAuthError, False, False, True),
        (403, JudgeAuthError, False, False, True),
        (404, JudgeAuthError, False, False, True),
        (413, JudgeRequestRejected, False, False, False),
        (429, JudgeRateLimited, True, True, False),
        (500, JudgeUnavailable, True, False, False),
        (529, JudgeRateLimited, True, True, False),
    ],
)
def test_status_codes_map_to_policy(status, cls, retryable, throttled, fatal):
    """Each HTTP status becomes a JudgeError with the right retry policy, status code and retry-after."""
    with MessagesServer() as srv:
        srv.fail(status, retry_after="7")
        with pytest.raises(JudgeError) as info:
            _judge(srv).extract_claims("The tower is tall.")
        assert len(srv.requests) == 1
    exc = info.value
    assert type(exc) is cls and exc.status_code == status
    assert (exc.retryable, exc.throttled, exc.fatal) == (retryable, throttled, fatal)
    assert exc.retry_after == 7.0


def test_401_message_names_the_setting():
    """A rejected key says which setting to fix."""
    with MessagesServer() as srv:
        srv.fail(401)
        with pytest.raises(JudgeAuthError) as info:
            _judge(srv).extract_claims("The tower is tall.")
    assert "CLAIMWATCH_ANTHROPIC__API_KEY" in str(info.value) and info.value.setting == "CLAIMWATCH_ANTHROPIC__API_KEY"


def test_retry_after_header_forms():
    """retry-after-ms, seconds and HTTP dates are read; garbage is ignored."""
    assert retry_after_s({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_s({"retry-after": "3"}) == 3.0
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({}) is None


def test_evaluator_400_marks_claims_error_without_retry():
    """A 400 on verify: that answer's claims are ERROR, the call is not repeated."""
    with MessagesServer() as srv:
        ev = Evaluator(_judge(srv), WorkerMetrics(), sleep=lambda s: None)
        srv.enqueue(oracle_responder)  # extraction answers normally
        srv.fail(400)
        r = ev.evaluate(_trace())
        assert r.outcome == "failed" and r.counts["ERROR"] == 1 and "rejected" in (r.error or "")
        assert len(srv.requests) == 2  # extract ok, verify 400, no retry


def test_evaluator_429_burst_is_waited_out_not_failed():
    """Five 429s (retry-after 0.05 s) on extract: the answer is still judged, never ERROR."""
    with MessagesServer() as srv:
        srv.fail(429, times=5, retry_after="0.05")
        ev = Evaluator(_judge(srv), WorkerMetrics(), retry=RetryPolicy(base_s=0.01, jitter=False))
        r = ev.evaluate(_trace())
    assert r.outcome == "evaluated" and r.counts["SUPPORTED"] == 1 and r.counts["ERROR"] == 0


def test_evaluator_raises_fatal_errors():
    """401 is not an ERROR result: it is raised so the worker stops."""
    with MessagesServer() as srv:
        srv.fail(401, times=3)
        ev = Evaluator(_judge(srv), WorkerMetrics())
        with pytest.raises(JudgeAuthError):
            ev.evaluate(_trace())
        assert len(srv.requests) == 1


def test_a_day_long_retry_after_closes_the_shared_gate_for_at_most_a_minute():
    """Whatever retry-after reaches the limiter (a judge may pass any float), the gate reopens within a minute."""
    clock = FakeClock()
    lim = AdaptiveLimiter(8, clock=clock)
    permits = [lim.acquire(), lim.acquire()]
    for permit, retry_after in zip(permits, (86_400.0, float("inf"))):
        lim.release(permit, throttled=True, retry_after=retry_after)
    clock.now = 60.01
    give_up = time.monotonic() + 2.0  # unbounded, the gate would hold for a day (or forever): abandoned here
    assert lim.acquire(cancelled=lambda: time.monotonic() > give_up) is not None

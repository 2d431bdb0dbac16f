"""The collector's background loop: steps until stopped, woken early, errors counted and survived, joined on stop."""

from __future__ import annotations

import threading
import time

from collector.background import BackgroundLoop


def test_steps_at_the_interval_and_a_wake_ends_the_wait_early():
    """``None`` from the step waits the interval; ``wake()`` starts the next step at once."""
    steps: list[float] = []
    loop = BackgroundLoop("t-interval", lambda: steps.append(time.monotonic()), interval_s=30.0).start()
    try:
        deadline = time.monotonic() + 2.0
        while not steps and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert len(steps) == 1  # the first step ran; the next waits for the 30 s interval
        loop.wake()
        while len(steps) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(steps) == 2
    finally:
        assert loop.stop(timeout_s=2.0)


def test_a_step_returning_zero_runs_again_and_a_number_is_the_wait():
    """0 means more work is queued (no wait); a number of seconds is a backoff that stop() interrupts."""
    calls = [0]

    def step() -> float:
        calls[0] += 1
        return 0.0 if calls[0] < 5 else 60.0

    loop = BackgroundLoop("t-pace", step, interval_s=30.0).start()
    deadline = time.monotonic() + 2.0
    while calls[0] < 5 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert calls[0] == 5
    started = time.monotonic()
    assert loop.stop(timeout_s=2.0)
    assert time.monotonic() - started < 1.0 and not loop.alive


def test_errors_are_counted_reported_and_never_end_the_loop():
    """A raising step is handed to on_error, counted, paused after, and the loop goes on."""
    seen: list[str] = []
    calls = [0]

    def step() -> None:
        calls[0] += 1
        if calls[0] <= 2:
            raise ValueError(f"boom {calls[0]}")

    loop = BackgroundLoop(
        "t-errors", step, interval_s=0.01, on_error=lambda exc: seen.append(str(exc)), error_pause_s=0.01
    ).start()
    deadline = time.monotonic() + 2.0
    while calls[0] < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert loop.stop(timeout_s=2.0)
    assert seen == ["boom 1", "boom 2"] and loop.errors == 2 and calls[0] >= 4


def test_stop_from_inside_the_step_does_not_join_itself():
    """A step may stop its own loop (no self-join); wait() reports the stop."""
    results: list[bool] = []
    holder: list[BackgroundLoop] = []

    def step() -> None:
        results.append(holder[0].stop(timeout_s=1.0))
        results.append(holder[0].wait(5.0))

    loop = BackgroundLoop("t-self", step, interval_s=0.01)
    holder.append(loop)
    loop.start()
    assert loop.thread is not None
    loop.thread.join(2.0)
    assert not loop.alive and results == [False, True]
    assert loop.start().thread is not None and not loop.alive  # a stopped loop is not restarted


def test_threads_are_named_daemons():
    loop = BackgroundLoop("claimwatch-test-loop", lambda: None, interval_s=1.0).start()
    try:
        assert loop.thread is not None and loop.thread.daemon and loop.thread.name == "claimwatch-test-loop"
        assert any(t.name == "claimwatch-test-loop" for t in threading.enumerate())
    finally:
        loop.stop()

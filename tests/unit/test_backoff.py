"""contract.backoff: the one backoff schedule."""

from contract.backoff import Backoff


def test_delay_doubles_up_to_the_cap_without_jitter():
    """Without jitter the waits are base * 2**attempt, capped at max_s."""
    b = Backoff(base_s=0.5, max_s=4.0, jitter=False)
    assert [b.delay(a) for a in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_jitter_keeps_the_wait_between_half_and_the_full_schedule():
    """With jitter the wait lies in [schedule/2, schedule)."""
    b = Backoff(base_s=1.0, max_s=60.0)
    assert b.delay(3, rng=lambda: 0.0) == 4.0
    assert 7.9 < b.delay(3, rng=lambda: 0.999) < 8.0


def test_a_server_hint_is_a_floor():
    """A retry-after longer than the schedule wins; a shorter one does not shorten it."""
    b = Backoff(base_s=1.0, max_s=60.0, jitter=False)
    assert b.delay(0, floor_s=30.0) == 30.0
    assert b.delay(4, floor_s=1.0) == 16.0
    assert b.delay(10_000) == 60.0  # huge attempt numbers do not overflow

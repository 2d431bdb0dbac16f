"""OffsetLedger: the commit point is one past the contiguous prefix of finished offsets."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from contract.offsets import OffsetLedger


def test_out_of_order_finishes_commit_only_the_prefix():
    """Offsets 0..4 finishing as 2, 0, 4, 1: commit point 3, not 5."""
    led = OffsetLedger()
    for o in range(5):
        led.track("p0", o)
    for o in (2, 0):
        led.finish("p0", o)
    assert led.to_commit() == {"p0": 1}
    led.committed({"p0": 1})
    assert led.to_commit() == {}
    for o in (4, 1):
        led.finish("p0", o)
    assert led.to_commit() == {"p0": 3} and led.unfinished("p0") == 2


def test_the_commit_point_starts_at_the_first_offset_handed_out():
    """Before anything finished, the commit point is where this owner started (not None, not past it)."""
    led = OffsetLedger()
    led.track("p0", 7)
    led.track("p0", 8)
    assert led.to_commit() == {"p0": 7}
    led.finish("p0", 8)
    assert led.to_commit() == {"p0": 7}


def test_forgotten_partition_ignores_late_finishes():
    """After forget (revoke), a late finish of an old offset changes nothing."""
    led = OffsetLedger()
    led.track("p0", 10)
    led.forget("p0")
    led.finish("p0", 10)
    assert led.to_commit() == {} and led.unfinished() == 0


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.permutations(range(n)), st.integers(0, n))))
def test_commit_point_is_never_past_an_unfinished_offset(case):
    """For any finishing order of any prefix: committed offsets cover only finished records."""
    n, order, k = case
    led = OffsetLedger()
    for o in range(n):
        led.track("t", 100 + o)
    finished = set(order[:k])
    for o in order[:k]:
        led.finish("t", 100 + o)
    point = led.to_commit().get("t", 100)
    prefix = 0
    while prefix in finished:
        prefix += 1
    assert point == 100 + prefix
    assert all(o in finished for o in range(point - 100))

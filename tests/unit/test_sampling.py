"""Deterministic ratio sampling, slice overrides, keep rules and the token bucket."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from collector.config import SamplingSettings
from collector.sampling import Sampler, TokenBucket, is_negative_feedback, ratio_keeps

trace_ids = st.integers(min_value=1, max_value=(1 << 128) - 1)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@given(trace_id=trace_ids, ratio=st.floats(min_value=0.0, max_value=1.0))
@hsettings(max_examples=300, deadline=None)
def test_same_trace_id_same_decision_in_every_instance(trace_id, ratio):
    """Two independent samplers (as in two processes) decide the same for the same trace id."""
    a = Sampler(SamplingSettings(ratio=ratio))
    b = Sampler(SamplingSettings(ratio=ratio))
    assert a.decide(trace_id) == b.decide(trace_id)


@given(trace_id=trace_ids)
def test_decision_uses_low_64_bits_like_otel(trace_id):
    """Only the low 64 bits matter (OTel TraceIdRatioBased): high bits never change the decision."""
    low = trace_id & ((1 << 64) - 1)
    assert ratio_keeps(trace_id, 0.3) == ratio_keeps(low, 0.3) == (low < round(0.3 * 2**64))


def test_observed_rate_close_to_ratio():
    """Over 20,000 random trace ids the kept share is within 2 points of the ratio."""
    rng = random.Random(7)
    for ratio in (0.05, 0.25, 0.5, 0.9):
        sampler = Sampler(SamplingSettings(ratio=ratio))
        kept = sum(sampler.decide(rng.getrandbits(128)).keep for _ in range(20_000))
        assert abs(kept / 20_000 - ratio) < 0.02


def test_ratio_zero_and_one_are_exact():
    """ratio 0 keeps nothing and ratio 1 keeps everything."""
    ids = [random.Random(1).getrandbits(128) for _ in range(100)] + [(1 << 128) - 1, 1]
    assert not any(Sampler(SamplingSettings(ratio=0.0)).decide(t).keep for t in ids)
    assert all(Sampler(SamplingSettings(ratio=1.0)).decide(t).keep for t in ids)


def test_slice_override_replaces_global_ratio():
    """A matching 'name=value' override wins over the global ratio; the highest of several matches wins."""
    s = Sampler(SamplingSettings(ratio=0.0, slice_ratios={"route=billing": 1.0, "model=m": 0.1}))
    assert s.decide(123, slices={"route": "billing", "model": "m"}).reason == "ratio_in"
    assert s.decide(123, slices={"route": "search"}).reason == "ratio_out"


def test_keep_rules_override_ratio():
    """Errors, negative feedback and kept releases are kept even at ratio 0, with their reason."""
    s = Sampler(SamplingSettings(ratio=0.0, keep_releases=["canary-7"]))
    assert s.decide(5, error=True).reason == "keep_error"
    assert s.decide(5, signals={"feedback.score": -1}).reason == "keep_feedback"
    assert s.decide(5, signals={"user.feedback": "positive"}).keep is False
    assert s.decide(5, slices={"release": "canary-7"}).reason == "keep_release"


def test_negative_feedback_values():
    """Booleans, numbers <= 0 and negative words count as negative feedback."""
    assert all(is_negative_feedback(v) for v in (True, -1, 0, "thumbs_down", "Negative", "-0.5"))
    assert not any(is_negative_feedback(v) for v in (False, 1, 0.8, "positive", "great", None))


def test_token_bucket_limits_ratio_sampled_traces():
    """With rate 2/s and burst 3, three pass at once, the rest are rate_limited until tokens refill."""
    clock = FakeClock()
    s = Sampler(SamplingSettings(ratio=1.0, rate_per_second=2.0, burst=3), clock=clock)
    reasons = [s.decide(i).reason for i in range(5)]
    assert reasons == ["ratio_in"] * 3 + ["rate_limited"] * 2
    clock.now += 1.0
    assert [s.decide(i).keep for i in range(3)] == [True, True, False]


def test_rule_kept_traces_pass_empty_bucket_but_take_tokens():
    """Kept-by-rule traces pass when the bucket is empty and leave a debt (floor -burst) that ratio traffic repays."""
    clock = FakeClock()
    s = Sampler(SamplingSettings(ratio=1.0, rate_per_second=1.0, burst=2), clock=clock)
    assert all(s.decide(i, error=True).keep for i in range(10))
    assert s.decide(1).reason == "rate_limited"
    clock.now += 2.0  # debt -2 + 2 tokens = 0
    assert s.decide(1).reason == "rate_limited"
    clock.now += 1.0
    assert s.decide(1).reason == "ratio_in"


def test_bucket_disabled_when_rate_zero():
    """rate_per_second=0 disables the limit."""
    bucket = TokenBucket(0.0, 1, clock=FakeClock())
    assert all(bucket.take() for _ in range(1000))

"""The neutral HTTP-error mapping every judge transport uses: status + headers -> JudgeError kinds."""

from __future__ import annotations

import email.utils
import time

import pytest

from evaluator_worker.errors import (
    JudgeAuthError,
    JudgeRateLimited,
    JudgeRequestRejected,
    JudgeUnavailable,
)
from evaluator_worker.judges.http_errors import retry_after_s, should_retry, status_error
from tests.fakes import MessagesServer


def test_x_should_retry_false_on_a_529_is_not_retryable():
    """The server's x-should-retry: false beats the status: an overloaded 529 is not retried (still throttles)."""
    err = status_error(529, {"x-should-retry": "false"}, "overloaded", model="m")
    assert type(err) is JudgeRateLimited and not err.retryable and err.throttled and err.status_code == 529
    assert JudgeRateLimited.retryable  # the class policy is untouched


def test_x_should_retry_true_on_a_400_is_retryable():
    """x-should-retry: true makes a 400 retryable."""
    err = status_error(400, {"x-should-retry": "true"}, "bad", model="m")
    assert type(err) is JudgeRequestRejected and err.retryable and not err.fatal
    assert not JudgeRequestRejected.retryable


def test_x_should_retry_true_on_a_401_is_retryable_not_fatal():
    """A 401 the server calls transient is retried instead of stopping the worker."""
    err = status_error(401, {"x-should-retry": "true"}, "", model="m")
    assert isinstance(err, JudgeAuthError) and err.retryable and not err.fatal


@pytest.mark.parametrize("value", [None, "maybe", ""])
def test_no_or_unreadable_x_should_retry_keeps_the_status_policy(value):
    headers = {} if value is None else {"x-should-retry": value}
    assert should_retry(headers) is None
    assert status_error(529, headers, "", model="m").retryable
    assert not status_error(400, headers, "", model="m").retryable


def test_retry_after_ms_wins_over_retry_after():
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert status_error(429, {"retry-after-ms": "1500"}, "", model="m").retry_after == 1.5


def test_retry_after_http_date():
    """An HTTP date in the future gives the seconds until then; one in the past gives 0."""
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27.0 <= (retry_after_s({"retry-after": future}) or 0) <= 30.0
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert retry_after_s({"retry-after": "soon"}) is None and retry_after_s(None) is None


def test_both_transports_obey_x_should_retry_through_the_real_sdks():
    """The anthropic and openai transports map their SDK errors through the same module (headers included)."""
    import anthropic

    from evaluator_worker.judges.anthropic import AnthropicJudge
    from evaluator_worker.judges.base import Claim
    from evaluator_worker.judges.settings import AnthropicSettings

    claims = [Claim(id="c1", text="x is y")]
    with MessagesServer() as srv:
        srv.fail(529, times=1, headers={"x-should-retry": "false"})
        client = anthropic.Anthropic(api_key="t", base_url=srv.base_url, max_retries=0)
        with pytest.raises(JudgeRateLimited) as info:
            AnthropicJudge(AnthropicSettings(), client=client).verify(claims, ["x is y"])
        assert not info.value.retryable
        openai = pytest.importorskip("openai")
        from evaluator_worker.judges.openai_compat import OpenAIJudge
        from evaluator_worker.judges.settings import OpenAISettings

        srv.fail(503, times=1, headers={"x-should-retry": "false"})
        judge = OpenAIJudge(
            OpenAISettings(model="m"), client=openai.OpenAI(base_url=f"{srv.base_url}/v1", api_key="k", max_retries=0)
        )
        with pytest.raises(JudgeUnavailable) as info2:
            judge.verify(claims, ["x is y"])
        assert not info2.value.retryable


@pytest.mark.parametrize(
    "headers, expected",
    [
        ({"retry-after": "inf"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "86400"}, 60.0),
        ({"retry-after": "1e308"}, 60.0),
        ({"retry-after-ms": "1e12"}, 60.0),
        ({"retry-after": "Fri, 31 Dec 2099 23:59:59 GMT"}, 60.0),
        ({"retry-after": "2"}, 2.0),
    ],
)
def test_an_absurd_retry_after_is_bounded_to_a_minute(headers, expected):
    """A 429 saying wait a day (or forever) waits at most a minute: one reply must not stall the worker's gate."""
    err = status_error(429, headers, "slow down", model="m")
    assert err.retry_after == expected

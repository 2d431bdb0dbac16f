"""A 200 whose body is not the API's JSON (a proxy's HTML page, a cut body, a choice without its message), through
the real ``anthropic`` and ``openai`` SDKs against the local fake: a retryable ``JudgeUnavailable``, never a crash."""

from __future__ import annotations

import json

import anthropic
import pytest

from contract.record import RagTrace
from evaluator_worker.errors import JudgeUnavailable
from evaluator_worker.flow import RetryPolicy
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Verdict
from evaluator_worker.judges.llm import LLMJudge
from evaluator_worker.judges.settings import AnthropicSettings, OpenAISettings
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes import MessagesServer

openai = pytest.importorskip("openai")

from evaluator_worker.judges.openai_compat import OpenAIJudge  # noqa: E402

CONTEXT = "The tower was completed in 1889."
TRACE = RagTrace(trace_id="a" * 32, question="When?", answer=CONTEXT, contexts=[{"content": CONTEXT}])

TRUNCATED_JSON = ('{"id": "msg_1", "type": "mess', "application/json")
HTML_PAGE = ("<html><body>502 Bad Gateway (cached 200)</body></html>", "text/html")


def _completion(choices: list) -> str:
    """A chat completion body with these ``choices``, as a server would send it."""
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": choices,
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    )


MESSAGE_NULL = (_completion([{"index": 0, "message": None, "finish_reason": "stop"}]), "application/json")
NO_CHOICES = (_completion([]), "application/json")


def _anthropic(srv: MessagesServer) -> LLMJudge:
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=5.0)
    return AnthropicJudge(AnthropicSettings(), client=client)


def _openai(srv: MessagesServer) -> LLMJudge:
    client = openai.OpenAI(api_key="k", base_url=f"{srv.base_url}/v1", max_retries=0, timeout=5.0)
    return OpenAIJudge(OpenAISettings(model="m"), client=client)


JUDGES = {"anthropic": _anthropic, "openai": _openai}
CASES = [
    pytest.param("anthropic", TRUNCATED_JSON, id="anthropic-truncated-json"),
    pytest.param("anthropic", HTML_PAGE, id="anthropic-html"),
    pytest.param("openai", TRUNCATED_JSON, id="openai-truncated-json"),
    pytest.param("openai", HTML_PAGE, id="openai-html"),
    pytest.param("openai", MESSAGE_NULL, id="openai-message-null"),
    pytest.param("openai", NO_CHOICES, id="openai-no-choices"),
]


@pytest.mark.parametrize("judge, reply", CASES)
def test_one_odd_200_is_retried_and_the_answer_still_judged(judge, reply):
    """One odd 200 on extraction is retried by the JudgeCaller; the fake then answers and the claim is judged."""
    m = WorkerMetrics()
    with MessagesServer() as srv:
        srv.raw(reply[0], content_type=reply[1])
        ev = Evaluator(JUDGES[judge](srv), m, retry=RetryPolicy(base_s=0.01, jitter=False))
        result = ev.evaluate(TRACE)
        assert len(srv.recorded) == 3  # the odd 200, its retry, the verify call
    assert result.outcome == "evaluated" and result.error is None
    assert [c.verdict for c in result.claims] == [Verdict.SUPPORTED]
    errors = m.registry.get_sample_value("claimwatch_judge_errors_total", {"judge": judge, "reason": "unavailable"})
    assert errors == 1


@pytest.mark.parametrize("judge, reply", CASES)
def test_a_persistent_odd_200_makes_the_claims_error_not_a_crash(judge, reply):
    """An odd 200 on every attempt: retried until the policy gives up, then the answer's claims are ERROR."""
    with MessagesServer() as srv:
        judge_obj = JUDGES[judge](srv)
        srv.raw(reply[0], content_type=reply[1], times=3)
        ev = Evaluator(judge_obj, WorkerMetrics(), retry=RetryPolicy(base_s=0.01, jitter=False, max_attempts=3))
        result = ev.evaluate(TRACE)
        assert len(srv.recorded) == 3
    assert result.outcome == "failed" and result.counts["ERROR"] == 1
    assert all(c.verdict is Verdict.ERROR for c in result.claims)
    assert (result.error or "").startswith("unavailable: the judge API answered 200 with a body that is not")


@pytest.mark.parametrize("judge, reply", CASES)
def test_the_odd_200_is_a_retryable_judge_unavailable_naming_the_content_type(judge, reply):
    """The transport raises JudgeUnavailable (retryable, not fatal, status 200) naming the reply's content-type."""
    with MessagesServer() as srv:
        srv.raw(reply[0], content_type=reply[1])
        with pytest.raises(JudgeUnavailable) as info:
            JUDGES[judge](srv).extract_claims(CONTEXT)
    err = info.value
    assert err.retryable and not err.fatal and not err.throttled and err.status_code == 200
    assert "not the expected JSON" in str(err) and f"content-type {reply[1]}" in str(err)


def test_the_fake_still_answers_normally_after_a_raw_reply():
    """srv.raw serves exactly one request; the next one gets the responder's usual Messages body."""
    with MessagesServer() as srv:
        srv.raw(HTML_PAGE[0], content_type=HTML_PAGE[1])
        judge = _anthropic(srv)
        with pytest.raises(JudgeUnavailable):
            judge.extract_claims(CONTEXT)
        assert [c.text for c in judge.extract_claims(CONTEXT).claims] == [CONTEXT]
        assert [r.status for r in srv.recorded] == [200, 200]

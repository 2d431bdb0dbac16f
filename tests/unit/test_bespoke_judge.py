"""The bespoke-minicheck judge: the real openai client against the local fake, fed as the model's authors feed it."""

from __future__ import annotations

import math

import pytest

from evaluator_worker.errors import ConfigError, JudgeAuthError, JudgeRateLimited
from evaluator_worker.judges.base import Claim, Judge, Verdict
from evaluator_worker.judges.bespoke import SYSTEM_PROMPT, BespokeMiniCheckJudge, chunk_document, user_prompt
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.judges.settings import BespokeSettings, JudgeSettings
from tests.fakes import MessagesServer, minicheck_responder

pytest.importorskip("openai")

CONTEXTS = ["The Eiffel Tower was completed in 1889.", "It is 330 metres tall and stands in Paris."]


def _judge(srv: MessagesServer, **kw) -> BespokeMiniCheckJudge:
    return BespokeMiniCheckJudge(BespokeSettings(base_url=f"{srv.base_url}/v1", api_key="sk-local", **kw))


def _claims(*texts: str) -> list[Claim]:
    return [Claim(id=f"c{i}", text=t) for i, t in enumerate(texts, start=1)]


def test_each_call_is_the_authors_prompt_one_token_with_logprobs():
    """System prompt, 'Document: <all contexts>\\nClaim: <claim>', max_tokens 1, temperature 0, top-5 logprobs."""
    with MessagesServer(responder=minicheck_responder) as srv:
        judge = _judge(srv)
        judge.verify(_claims("The Eiffel Tower is 330 metres tall."), CONTEXTS)
        [rec] = [r for r in srv.recorded if r.platform == "openai"]
        req = rec.chat_request
        assert req["messages"] == [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": "Document: " + "\n\n".join(CONTEXTS) + "\nClaim: The Eiffel Tower is 330 metres tall.",
            },
        ]
        assert (req["max_tokens"], req["temperature"], req["logprobs"], req["top_logprobs"]) == (1, 0.0, True, 5)
        assert req["model"] == "bespokelabs/Bespoke-MiniCheck-7B"


def test_support_is_p_yes_over_yes_and_no_from_the_first_tokens_logprobs():
    """P(Yes) / (P(Yes) + P(No)), case-insensitive tokens summed; the verdict and confidence follow it."""
    with MessagesServer(responder=minicheck_responder) as srv:
        ver = _judge(srv).verify(
            _claims("The Eiffel Tower was completed in 1889.", "Gold paint covers every beam."), CONTEXTS
        )
    supported, unsupported = ver.verdicts
    assert supported.verdict is Verdict.SUPPORTED and supported.context_index == 0
    assert supported.confidence == pytest.approx(0.98 * (1 + math.exp(-6)) / (0.98 * (1 + math.exp(-6)) + 0.02))
    assert unsupported.verdict is Verdict.UNSUPPORTED and "P(Yes)" in (unsupported.reason or "")
    assert ver.usage.calls == 2 and ver.usage.input_tokens > 0


def test_a_claim_needing_two_contexts_is_checked_against_both():
    """The contexts form one document: a claim joining facts of two retrieved chunks can be supported."""
    with MessagesServer(responder=minicheck_responder) as srv:
        v = (
            _judge(srv)
            .verify(_claims("The Eiffel Tower was completed in 1889 and is 330 metres tall."), CONTEXTS)
            .verdicts[0]
        )
    assert v.verdict is Verdict.SUPPORTED


def test_long_documents_are_chunked_at_sentences_and_the_best_chunk_decides():
    """Chunks of at most chunk_words words, cut at sentence ends, each mapped to the context it starts in."""
    filler = " ".join(["The park by the river is green."] * 40)
    chunks = chunk_document([filler, "The Eiffel Tower was completed in 1889."], chunk_words=60)
    assert len(chunks) > 2 and all(len(text.split()) <= 60 for _, text in chunks)
    assert chunks[-1][0] == 1 and "1889" in chunks[-1][1]
    with MessagesServer(responder=minicheck_responder) as srv:
        v = (
            _judge(srv, chunk_words=60)
            .verify(
                _claims("The Eiffel Tower was completed in 1889."), [filler, "The Eiffel Tower was completed in 1889."]
            )
            .verdicts[0]
        )
    assert v.verdict is Verdict.SUPPORTED and v.context_index == 1 and "1889" in (v.evidence or "")


def test_a_server_without_logprobs_falls_back_to_the_answer_text_and_says_so():
    """No log-probabilities: Yes/No text gives 1.0/0.0 and the reason names the fallback."""
    reply = {"content": [{"type": "text", "text": "Yes"}], "stop_reason": "max_tokens"}
    with MessagesServer(responder=lambda r: reply) as srv:
        v = _judge(srv).verify(_claims("The Eiffel Tower was completed in 1889."), CONTEXTS).verdicts[0]
    assert v.verdict is Verdict.SUPPORTED and v.confidence == 1.0 and "no log-probabilities" in (v.reason or "")


def test_errors_map_to_the_judge_error_kinds():
    """429 is a rate limit the flow layer backs off on; 401 stops the worker naming the setting."""
    with MessagesServer(responder=minicheck_responder) as srv:
        srv.fail(429, retry_after="2")
        with pytest.raises(JudgeRateLimited):
            _judge(srv).verify(_claims("x"), CONTEXTS)
        srv.fail(401)
        with pytest.raises(JudgeAuthError):
            _judge(srv).verify(_claims("x"), CONTEXTS)
        srv.enqueue({"content": [{"type": "text", "text": "No"}], "stop_reason": "max_tokens"})
        assert _judge(srv).verify(_claims("x"), CONTEXTS).verdicts[0].verdict is Verdict.UNSUPPORTED


def test_registry_builds_it_and_it_declares_io_bound():
    """CLAIMWATCH_JUDGE=bespoke-minicheck with CLAIMWATCH_BESPOKE__BASE_URL; no server configured is a ConfigError."""
    with pytest.raises(ConfigError, match="BESPOKE__BASE_URL"):
        get_judge("bespoke-minicheck", JudgeSettings())
    judge = get_judge("bespoke-minicheck", JudgeSettings(bespoke=BespokeSettings(base_url="http://127.0.0.1:9/v1")))
    assert isinstance(judge, Judge) and judge.io_bound and judge.name == "bespoke-minicheck"
    assert user_prompt("D", "C") == "Document: D\nClaim: C"


@pytest.mark.parametrize(
    "body, ctype", [("<html><body>502 Bad Gateway</body></html>", "text/html"), ('{"choices": [', "application/json")]
)
def test_a_200_that_is_not_a_completion_is_a_retryable_judge_error(body, ctype):
    """A proxy's HTML page or a cut body is JudgeUnavailable (retried by the flow layer), not a crash."""
    from evaluator_worker.errors import JudgeUnavailable

    with MessagesServer(responder=minicheck_responder) as srv:
        srv.raw(body, content_type=ctype)
        with pytest.raises(JudgeUnavailable) as err:
            _judge(srv).verify(_claims("The Eiffel Tower is 330 metres tall."), CONTEXTS)
    assert err.value.retryable

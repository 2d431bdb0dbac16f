"""The ``openai`` judge: the real ``openai`` client against a local OpenAI-compatible fake (chat completions)."""

from __future__ import annotations

import pytest

from evaluator_worker.errors import ConfigError, JudgeAuthError, JudgeRateLimited, JudgeUnavailable
from evaluator_worker.judges import prompts
from evaluator_worker.judges.base import Judge, Verdict
from evaluator_worker.judges.openai_compat import OpenAIJudge
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.judges.settings import JudgeSettings, OpenAISettings
from tests.fakes import MessagesServer, drop_claims, oracle_responder

pytest.importorskip("openai")

CONTEXTS = ["The Eiffel Tower was completed in 1889. It is 330 metres tall."]
ANSWER = "The Eiffel Tower was completed in 1889. It is painted gold. It is 330 metres tall."


def _judge(srv: MessagesServer, **kw) -> OpenAIJudge:
    return OpenAIJudge(OpenAISettings(base_url=f"{srv.base_url}/v1", api_key="sk-local", model="qwen2.5-7b", **kw))


@pytest.mark.parametrize("output", ["tools", "json_schema"])
def test_judges_through_chat_completions_with_tools_or_json_schema(output):
    """Extraction and verdicts round-trip through function calling or response_format json_schema."""
    with MessagesServer() as srv:
        judge = _judge(srv, output=output)
        ex = judge.extract_claims(ANSWER)
        ver = judge.verify(ex.claims, CONTEXTS)
        assert [v.verdict for v in ver.verdicts] == [Verdict.SUPPORTED, Verdict.UNSUPPORTED, Verdict.SUPPORTED]
        assert ver.verdicts[0].evidence and ver.verdicts[0].context_index == 0
        recs = [r for r in srv.recorded if r.platform == "openai"]
        assert len(recs) == 2 and {r.chat_format for r in recs} == {output}
        assert recs[1].body["tool_choice"]["name"] == prompts.VERIFY_TOOL_NAME
        assert recs[1].headers["authorization"] == "Bearer sk-local"
        assert ver.usage.calls == 1 and ver.usage.input_tokens > 0 and ver.usage.output_tokens > 0


def test_is_a_judge_from_the_registry():
    """get_judge('openai') builds it from CLAIMWATCH_OPENAI__* settings; a missing model is a ConfigError."""
    with MessagesServer() as srv:
        judge = get_judge("openai", JudgeSettings(openai=OpenAISettings(base_url=f"{srv.base_url}/v1", model="m")))
        assert isinstance(judge, Judge) and judge.name == "openai" and judge.io_bound
    with pytest.raises(ConfigError, match="CLAIMWATCH_OPENAI__MODEL"):
        get_judge("openai", JudgeSettings())


def test_missing_verdicts_get_the_repair_call():
    """A verdict the model leaves out is asked for again in one repair call, as with the Anthropic judge."""
    with MessagesServer(responder=drop_claims(oracle_responder, {"c2"})) as srv:
        judge = _judge(srv)
        ver = judge.verify(judge.extract_claims(ANSWER).claims, CONTEXTS)
        assert all(v.verdict is not Verdict.ERROR for v in ver.verdicts if v.claim_id != "c2")
        verify_calls = [
            r for r in srv.recorded if r.body.get("tool_choice", {}).get("name") == prompts.VERIFY_TOOL_NAME
        ]
        assert len(verify_calls) == 2  # the batch, then the repair for c2


def test_http_errors_map_to_the_same_judge_errors():
    """429 throttles with retry-after, 503 is retryable, 401 stops naming the setting."""
    with MessagesServer() as srv:
        judge = _judge(srv)
        claims = judge.extract_claims(ANSWER).claims
        srv.fail(429, times=1, retry_after="3")
        with pytest.raises(JudgeRateLimited) as rl:
            judge.verify(claims, CONTEXTS)
        assert rl.value.throttled and rl.value.retry_after == 3.0
        srv.fail(503, times=1)
        with pytest.raises(JudgeUnavailable):
            judge.verify(claims, CONTEXTS)
        srv.fail(401, times=1)
        with pytest.raises(JudgeAuthError, match="CLAIMWATCH_OPENAI__API_KEY"):
            judge.verify(claims, CONTEXTS)


def test_a_cut_output_is_split_not_lost():
    """finish_reason=length on verification splits the claims in halves, so every claim still gets a verdict."""
    with MessagesServer() as srv:
        judge = _judge(srv, max_tokens=4096)
        claims = judge.extract_claims(ANSWER).claims
        srv.enqueue(
            {
                "content": [{"type": "text", "text": ""}],
                "stop_reason": "max_tokens",
                "usage": {"input_tokens": 10, "output_tokens": 4096},
            }
        )
        ver = judge.verify(claims, CONTEXTS)
        assert [v.verdict for v in ver.verdicts] == [Verdict.SUPPORTED, Verdict.UNSUPPORTED, Verdict.SUPPORTED]
        assert ver.usage.calls >= 3


def test_calibrate_runs_the_openai_judge_on_the_shipped_dev_set(monkeypatch, capsys):
    """`claimwatch calibrate --judge openai` measures the judge on labelled claims (here against the fake)."""
    import json

    from claimwatch.cli import main

    with MessagesServer() as srv:
        monkeypatch.setenv("CLAIMWATCH_OPENAI__BASE_URL", f"{srv.base_url}/v1")
        monkeypatch.setenv("CLAIMWATCH_OPENAI__MODEL", "local-model")
        code = main(["calibrate", "claimwatch/data/claims_dev.jsonl", "--judge", "openai", "--limit", "12", "--json"])
        assert code == 0
        report = json.loads(capsys.readouterr().out)
        assert report["n"] == 12 and 0.0 <= report["accuracy"] <= 1.0
        assert len([r for r in srv.recorded if r.platform == "openai"]) >= 12

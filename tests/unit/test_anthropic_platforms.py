"""Claude on AWS Bedrock and Google Vertex AI: the real SDK clients against a local fake of each platform's HTTP shape."""

from __future__ import annotations

import pytest

from evaluator_worker.errors import ConfigError, JudgeRateLimited
from evaluator_worker.judges import pricing, prompts
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Verdict
from evaluator_worker.judges.llm import LLMJudge
from evaluator_worker.judges.platforms import PLATFORM_MODEL_IDS, model_id
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.judges.settings import AnthropicSettings, JudgeSettings
from tests.fakes import MessagesServer

CONTEXTS = ["The Eiffel Tower was completed in 1889. It is 330 metres tall."]
ANSWER = "The Eiffel Tower was completed in 1889. It is painted gold."

PLATFORMS = {
    "bedrock": dict(platform="bedrock", region="us-east-1", aws_access_key="AKIAFAKEKEY", aws_secret_key="secret"),
    "vertex": dict(platform="vertex", region="us-east5", project_id="my-project", access_token="ya29.fake"),
}


@pytest.fixture
def srv():
    with MessagesServer() as s:
        yield s


def _judge(srv: MessagesServer, platform: str, **extra) -> AnthropicJudge:
    return AnthropicJudge(AnthropicSettings(base_url=srv.base_url, **PLATFORMS[platform], **extra))


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_judge_runs_on_the_platform_with_its_model_ids_auth_and_version(srv, platform):
    """Extraction and verification go to the platform's endpoint with its model ids, auth and API version."""
    judge = _judge(srv, platform)
    ex = judge.extract_claims(ANSWER, "Tell me about the tower")
    ver = judge.verify(ex.claims, CONTEXTS)
    assert [v.verdict for v in ver.verdicts] == [Verdict.SUPPORTED, Verdict.UNSUPPORTED]
    recs = [r for r in srv.recorded if r.status == 200]
    assert {r.platform for r in recs} == {platform}
    extract, verify = recs[0], recs[1]
    assert extract.body["model"] == model_id(platform, "claude-haiku-4-5")
    assert verify.body["model"] == model_id(platform, "claude-sonnet-4-5")
    assert all(r.body.get("anthropic_version") for r in recs)  # the platforms take the API version in the body
    auth = verify.headers["authorization"]
    assert (
        auth.startswith("AWS4-HMAC-SHA256 Credential=AKIAFAKEKEY/")
        if platform == "bedrock"
        else auth == "Bearer ya29.fake"
    )
    # same prompts, forced tool and cache breakpoints as on the first-party API
    assert verify.body["tool_choice"]["name"] == prompts.VERIFY_TOOL_NAME
    assert any(b.get("cache_control") for b in verify.body["system"])


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_cost_is_accounted_with_the_family_price_or_a_per_platform_override(srv, platform):
    """Platform ids find their family's list price; a price keyed by the platform's id overrides it."""
    judge = _judge(srv, platform)
    ver = judge.verify(judge.extract_claims(ANSWER).claims, CONTEXTS)
    sonnet = pricing.PRICES["claude-sonnet-4-5"]
    u = ver.usage
    expected = (
        u.input_tokens * sonnet["input"]
        + u.output_tokens * sonnet["output"]
        + u.cache_read_tokens * sonnet["cache_read"]
        + u.cache_creation_tokens * sonnet["cache_creation"]
    ) / 1e6
    assert u.cost_usd == pytest.approx(expected) and u.cost_usd > 0
    pid = model_id(platform, "claude-sonnet-4-5")
    assert pricing.price_for(f"us.{pid}" if platform == "bedrock" else pid) is not None
    override = {pid: {"input": 30.0, "output": 150.0}}
    dear = _judge(srv, platform, prices=override)
    u2 = dear.verify(dear.extract_claims(ANSWER).claims, CONTEXTS).usage
    p = pricing.price_for(pid, override)
    assert p is not None and p["input"] == 30.0 and p["cache_read"] == sonnet["cache_read"]
    assert u2.cost_usd == pytest.approx(
        (
            u2.input_tokens * 30.0
            + u2.output_tokens * 150.0
            + u2.cache_read_tokens * p["cache_read"]
            + u2.cache_creation_tokens * p["cache_creation"]
        )
        / 1e6
    )


@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_throttling_is_classified_the_same_on_every_platform(srv, platform):
    """A 429 from the platform is a retryable, throttling JudgeRateLimited carrying retry-after."""
    judge = _judge(srv, platform)
    claims = judge.extract_claims(ANSWER).claims
    srv.fail(429, times=1, retry_after="7")
    with pytest.raises(JudgeRateLimited) as err:
        judge.verify(claims, CONTEXTS)
    assert err.value.throttled and err.value.retryable and err.value.retry_after == 7.0


def test_missing_platform_settings_fail_at_start_up_naming_the_setting(monkeypatch):
    """Vertex without a project, or Bedrock without any region, is a ConfigError naming the variable."""
    with pytest.raises(ConfigError, match="PROJECT_ID"):
        AnthropicJudge(AnthropicSettings(platform="vertex", region="us-east5"))
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(ConfigError, match="REGION"):
        AnthropicJudge(AnthropicSettings(platform="bedrock"))


def test_registry_builds_a_bedrock_judge_without_an_anthropic_key(monkeypatch, srv):
    """The first-party API key is only demanded on the first-party platform."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judge = get_judge(
        "anthropic", JudgeSettings(anthropic=AnthropicSettings(base_url=srv.base_url, **PLATFORMS["bedrock"]))
    )
    assert (
        isinstance(judge, LLMJudge)
        and judge.name == "anthropic"
        and judge.settings.model == PLATFORM_MODEL_IDS["bedrock"]["claude-sonnet-4-5"]
    )


def test_unknown_model_names_pass_through_unchanged():
    """Inference profiles and ids newer than the table are sent as given."""
    assert (
        model_id("bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
        == "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    )
    assert model_id("vertex", "claude-future@20270101") == "claude-future@20270101"
    assert model_id("anthropic", "claude-sonnet-4-5") == "claude-sonnet-4-5"


@pytest.mark.parametrize("platform", ["anthropic", "bedrock", "vertex"])
def test_calibrate_runs_the_anthropic_judge_on_each_platform(platform, monkeypatch, capsys):
    """`claimwatch calibrate --judge anthropic` on the shipped dev set, against the fake of each platform."""
    import json

    from claimwatch.cli import main

    env = {
        "anthropic": {"ANTHROPIC_API_KEY": "test"},
        "bedrock": {
            "CLAIMWATCH_ANTHROPIC__PLATFORM": "bedrock",
            "CLAIMWATCH_ANTHROPIC__REGION": "us-east-1",
            "CLAIMWATCH_ANTHROPIC__AWS_ACCESS_KEY": "AKIAFAKEKEY",
            "CLAIMWATCH_ANTHROPIC__AWS_SECRET_KEY": "s",
        },
        "vertex": {
            "CLAIMWATCH_ANTHROPIC__PLATFORM": "vertex",
            "CLAIMWATCH_ANTHROPIC__REGION": "us-east5",
            "CLAIMWATCH_ANTHROPIC__PROJECT_ID": "p",
            "CLAIMWATCH_ANTHROPIC__ACCESS_TOKEN": "t",
        },
    }[platform]
    with MessagesServer() as srv:
        monkeypatch.setenv("CLAIMWATCH_ANTHROPIC__BASE_URL", srv.base_url)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert (
            main(["calibrate", "claimwatch/data/claims_dev.jsonl", "--judge", "anthropic", "--limit", "8", "--json"])
            == 0
        )
        assert {r.platform for r in srv.recorded if r.status == 200} == {platform}
    assert json.loads(capsys.readouterr().out)["n"] == 8

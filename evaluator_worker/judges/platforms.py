"""Where Claude runs: the first-party API, AWS Bedrock or Google Vertex AI, through the ``anthropic`` SDK.

The same prompts, tools and prompt caching go to every platform; only the client,
the model ids and the prices differ. :func:`make_client` builds the SDK client for
``AnthropicSettings.platform``; :func:`model_id` maps first-party model names to the
platform's (``claude-sonnet-4-5`` -> ``anthropic.claude-sonnet-4-5-20250929-v1:0`` on
Bedrock, ``claude-sonnet-4-5@20250929`` on Vertex); other names pass through, so
inference profiles (``us.anthropic...``) and newer ids work without a release.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

import anthropic

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.settings import AnthropicSettings

#: first-party name -> the platform's model id (Bedrock model ids, Vertex model@version)
PLATFORM_MODEL_IDS: dict[str, dict[str, str]] = {
    "bedrock": {
        "claude-sonnet-4-5": "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "claude-haiku-4-5": "anthropic.claude-haiku-4-5-20251001-v1:0",
        "claude-opus-4-1": "anthropic.claude-opus-4-1-20250805-v1:0",
        "claude-sonnet-4": "anthropic.claude-sonnet-4-20250514-v1:0",
        "claude-3-5-haiku": "anthropic.claude-3-5-haiku-20241022-v1:0",
    },
    "vertex": {
        "claude-sonnet-4-5": "claude-sonnet-4-5@20250929",
        "claude-haiku-4-5": "claude-haiku-4-5@20251001",
        "claude-opus-4-1": "claude-opus-4-1@20250805",
        "claude-sonnet-4": "claude-sonnet-4@20250514",
        "claude-3-5-haiku": "claude-3-5-haiku@20241022",
    },
}


def model_id(platform: str, name: str) -> str:
    """``name`` in the platform's naming (unchanged when it is not a known first-party name)."""
    return PLATFORM_MODEL_IDS.get(platform, {}).get(name, name)


def for_platform(settings: AnthropicSettings) -> AnthropicSettings:
    """``settings`` with ``model`` and ``extract_model`` in the platform's naming."""
    p = settings.platform
    return settings.model_copy(
        update={"model": model_id(p, settings.model), "extract_model": model_id(p, settings.extract_model)}
    )


def _secret(value: Any) -> str | None:
    return value.get_secret_value() if value is not None else None


def make_client(
    settings: AnthropicSettings,
) -> anthropic.Anthropic | anthropic.AnthropicBedrock | anthropic.AnthropicVertex:
    """The SDK client for the platform, its own retries off: ``flow.JudgeCaller`` is the one retry layer, so every 429
    lowers the worker's concurrency and a 401 is never retried."""
    common: dict[str, Any] = {
        "base_url": settings.base_url,
        "timeout": settings.timeout_s,
        "max_retries": 0,
    }
    if settings.platform == "bedrock":
        region = settings.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        if not region:
            raise ConfigError("the bedrock platform needs a region: set CLAIMWATCH_ANTHROPIC__REGION or AWS_REGION")
        if importlib.util.find_spec("botocore") is None:  # AnthropicBedrock signs lazily: fail at start-up instead
            raise ConfigError("the bedrock platform needs botocore: pip install 'claimwatch[bedrock]'")
        return anthropic.AnthropicBedrock(
            aws_region=region,
            aws_access_key=_secret(settings.aws_access_key),
            aws_secret_key=_secret(settings.aws_secret_key),
            aws_session_token=_secret(settings.aws_session_token),
            aws_profile=settings.aws_profile,
            api_key=_secret(settings.api_key),
            **common,
        )
    if settings.platform == "vertex":
        if not settings.region or not settings.project_id:
            raise ConfigError(
                "the vertex platform needs CLAIMWATCH_ANTHROPIC__REGION and CLAIMWATCH_ANTHROPIC__PROJECT_ID"
            )
        return anthropic.AnthropicVertex(
            region=settings.region,
            project_id=settings.project_id,
            access_token=_secret(settings.access_token),
            **common,
        )
    return anthropic.Anthropic(api_key=_secret(settings.api_key), **common)

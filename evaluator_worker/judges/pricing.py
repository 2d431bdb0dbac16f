"""Per-model prices (USD per million tokens) and the cost of one judge call.

``PRICES`` holds list prices for the Claude models a judge is likely to use
(standard tier, 5-minute cache writes). Model ids are matched by the longest
known prefix, so dated ids (``claude-sonnet-4-5-20250929``) find their family.
``AnthropicSettings.prices`` overrides or extends the table per model (partial
overrides are merged over the built-in entry). An unknown model costs 0 and
logs one warning per model per process, so a typo never crashes the worker
but does show up in the logs.
"""

from __future__ import annotations

import threading
from typing import Mapping

from contract.logs import get_logger

log = get_logger(__name__)

#: USD per million tokens: input, output, cache_read, cache_creation (5-minute TTL write)
PRICES: dict[str, dict[str, float]] = {
    "claude-opus-4-5": {"input": 5.0, "output": 25.0, "cache_read": 0.50, "cache_creation": 6.25},
    "claude-opus-4-1": {"input": 15.0, "output": 75.0, "cache_read": 1.50, "cache_creation": 18.75},
    "claude-opus-4": {"input": 15.0, "output": 75.0, "cache_read": 1.50, "cache_creation": 18.75},
    "claude-sonnet-4-5": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_creation": 3.75},
    "claude-sonnet-4": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_creation": 3.75},
    "claude-3-7-sonnet": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_creation": 3.75},
    "claude-3-5-sonnet": {"input": 3.0, "output": 15.0, "cache_read": 0.30, "cache_creation": 3.75},
    "claude-haiku-4-5": {"input": 1.0, "output": 5.0, "cache_read": 0.10, "cache_creation": 1.25},
    "claude-3-5-haiku": {"input": 0.80, "output": 4.0, "cache_read": 0.08, "cache_creation": 1.0},
    "claude-3-haiku": {"input": 0.25, "output": 1.25, "cache_read": 0.03, "cache_creation": 0.30},
}

_warned: set[str] = set()
_warned_lock = threading.Lock()


#: Bedrock cross-region inference profile prefixes (us.anthropic..., eu.anthropic..., global.anthropic...)
_REGION_PREFIXES = ("us.", "eu.", "apac.", "global.", "jp.", "au.")


def _family(model: str) -> str:
    """A platform model id reduced to the first-party name it starts with (prefixes and provider removed)."""
    for prefix in _REGION_PREFIXES:
        if model.startswith(prefix + "anthropic."):
            model = model[len(prefix) :]
            break
    return model.removeprefix("anthropic.")


def price_for(model: str, overrides: Mapping[str, Mapping[str, float]] | None = None) -> dict[str, float] | None:
    """The price entry for ``model`` (longest-prefix match; overrides merged over the built-in entry), or None.

    Bedrock and Vertex ids find their family too (``us.anthropic.claude-sonnet-4-5-20250929-v1:0``,
    ``claude-sonnet-4-5@20250929``); an override keyed by the exact platform id wins (per-platform prices).
    """
    base: dict[str, float] | None = None
    family = _family(model)
    for table in (PRICES, overrides or {}):
        for prefix in sorted(table, key=len, reverse=True):
            if any(m == prefix or m.startswith(prefix + "-") or m.startswith(prefix + "@") for m in (model, family)):
                base = {**(base or {}), **table[prefix]}
                break
    if base is None:
        return None
    base.setdefault("input", 0.0)
    base.setdefault("output", 0.0)
    base.setdefault("cache_read", base["input"] * 0.1)
    base.setdefault("cache_creation", base["input"] * 1.25)
    return base


def cost_usd(
    model: str,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_creation_tokens: int = 0,
    overrides: Mapping[str, Mapping[str, float]] | None = None,
) -> float:
    """USD cost of one call; 0.0 (and a one-time warning) when the model has no price."""
    price = price_for(model, overrides)
    if price is None:
        with _warned_lock:
            first = model not in _warned
            _warned.add(model)
        if first:
            log.warning("judge_model_price_unknown", model=model, hint="set anthropic.prices to account cost")
        return 0.0
    return (
        input_tokens * price["input"]
        + output_tokens * price["output"]
        + cache_read_tokens * price["cache_read"]
        + cache_creation_tokens * price["cache_creation"]
    ) / 1_000_000

"""Model families, for the same-family warning: a judge from the generator's own family over-estimates faithfulness.

The failure it guards against is **self-preference bias**: an LLM judge rates text from its own model family higher
than equally good text from other families, and recognises its own generations (Panickssery et al., "LLM Evaluators
Recognize and Favor Their Own Generations", NeurIPS 2024; Wataoka et al., "Self-Preference Bias in LLM-as-a-Judge",
2024). So where the ``model`` slice (the answering model) and the judge's model share a family, its verdicts on those
answers are the least trustworthy it makes, and a release that moves its generator into the judge's family looks
better than it is. The worker counts those answers (``claimwatch_answers_same_family_judge_total``), and the gate and
``claimwatch report`` name them per slice.

A family is the lineage of a vendor's models, recognised by declared name patterns (:data:`FAMILIES`): a model name
matching none has no family and is never flagged (a fine-tune renamed beyond recognition is not caught: name it in
``model`` as its base).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

__all__ = ["FAMILIES", "Family", "family", "shared_family"]


@dataclass(frozen=True)
class Family:
    """One model lineage: its name, vendor, and the patterns its model names match (case-insensitive)."""

    name: str
    vendor: str
    patterns: tuple[str, ...]

    def matches(self, model: str) -> bool:
        return any(re.search(p, model, re.IGNORECASE) for p in self.patterns)


#: the lineages recognised, first match wins (``(?<![a-z])`` keeps e.g. "o1" out of words)
FAMILIES: tuple[Family, ...] = (
    Family("claude", "Anthropic", (r"claude",)),
    Family("gpt", "OpenAI", (r"(?<![a-z])gpt", r"chatgpt", r"(?<![a-z0-9])o[1-9](?:-|$)", r"davinci")),
    Family("gemini", "Google", (r"gemini", r"(?<![a-z])palm", r"bison")),
    Family("gemma", "Google", (r"gemma",)),
    Family("llama", "Meta", (r"llama",)),
    Family("mistral", "Mistral AI", (r"mistral", r"mixtral", r"codestral", r"ministral", r"magistral")),
    Family("qwen", "Alibaba", (r"qwen",)),
    Family("deepseek", "DeepSeek", (r"deepseek",)),
    Family("phi", "Microsoft", (r"(?<![a-z])phi-?[0-9]",)),
    Family("command", "Cohere", (r"command-r", r"cohere", r"(?<![a-z])aya(?![a-z])")),
    Family("grok", "xAI", (r"grok",)),
    Family("granite", "IBM", (r"granite",)),
)


@lru_cache(maxsize=1024)
def family(model: str | None) -> str | None:
    """The family of a model name (``claude`` of ``anthropic.claude-3-5-sonnet-20240620-v1:0``), None when none
    matches."""
    if not model:
        return None
    return next((f.name for f in FAMILIES if f.matches(model)), None)


def shared_family(model: str | None, judge_models: Iterable[str]) -> str | None:
    """The family ``model`` shares with one of the judge's models, None when it shares none."""
    mine = family(model)
    if mine is None:
        return None
    return mine if any(family(m) == mine for m in judge_models) else None

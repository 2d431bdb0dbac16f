"""Which judge made a verdict: ``judge_id`` = kind, model(s) and a short digest of everything that changes verdicts.

A judge is a deployed component: when its model, prompt, rules, thresholds, calibration maps or weights change,
every release's rates shift at once. ``judge_id`` names the judge that made each count, so counts of different
judges are never compared as if one judge made them (the gate, ``claimwatch report`` and the release alerts
compare like with like; docs/judges.md, "Judge identity").

Form: ``kind[:model[+model]]@digest``, e.g. ``heuristic@3fa2c1d9`` or
``anthropic:claude-sonnet-4-5+claude-haiku-4-5@0b7e41aa`` (verifier model, then the extraction model when it
differs). ``kind`` is the registry name (``evaluator_worker.judges.registry``), the digest the first 8 hex
characters of the SHA-256 of the canonical JSON of the fingerprint's parts.

What goes into the digest (:func:`identify`):

- the judge's own ``fingerprint()`` (:class:`Fingerprinted`): for an LLM judge the requests it sends (system
  prompts, tool schemas, models, ``max_tokens``) and its parsing constants; for the heuristic its thresholds,
  its rule list and the source of its rule modules (its rules and lexicons are code); for a trained verifier the
  SHA-256 of its weight files and its thresholds; for a cascade both stages and the escalation settings; for a
  wrapper (confidence calibration) the map and the wrapped judge's fingerprint;
- what the worker applies after the judge: the hedge policy and the answer-risk map (the at-risk rule).

A judge without ``fingerprint()`` (your own ``module:factory`` judge) is identified by its class and the source
of its module, so a new version of its code is a new judge; give it a ``fingerprint()`` naming what changes its
verdicts to say more.

Not in the digest: what changes cost or speed but not verdicts (concurrency, retries, timeouts, budgets are in
only where they change which claims a cascade escalates), and secrets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from contract.judge_ids import format_judge_id, judge_kind

# the fingerprint helpers live apart (judges import them without importing the risk map, which imports judges)
from evaluator_worker.judges.fingerprint import (
    Fingerprinted,
    confidence_map_fields,
    digest,
    dir_digest,
    files_digest,
    fingerprint_of,
    models_of,
    source_digest,
)

__all__ = [
    "Fingerprinted",
    "JudgeIdentity",
    "confidence_map_fields",
    "digest",
    "dir_digest",
    "files_digest",
    "fingerprint_of",
    "identify",
    "judge_kind",
    "models_of",
    "source_digest",
]

#: hex characters of the digest kept in the id (32 bits: two judges collide with probability 2^-32)
DIGEST_CHARS = 8


@dataclass(frozen=True)
class JudgeIdentity:
    """A judge as deployed: its kind, models, digest and the parts the digest was taken over."""

    kind: str
    models: tuple[str, ...]
    digest: str
    #: part name -> that part's own digest (what changed, when two ids differ: :meth:`differs`)
    parts: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def judge_id(self) -> str:
        return format_judge_id(self.kind, self.models, self.digest)

    @property
    def model(self) -> str:
        """The verifier model (the first one), ``none`` for judges without a model (a label value)."""
        return self.models[0] if self.models else "none"

    def differs(self, other: "JudgeIdentity") -> list[str]:
        """The parts whose digests differ from ``other``'s (``kind``/``models`` first when those differ)."""
        out = [name for name in ("kind", "models") if getattr(self, name) != getattr(other, name)]
        keys = sorted(set(self.parts) | set(other.parts))
        return out + [k for k in keys if self.parts.get(k) != other.parts.get(k)]

    def __str__(self) -> str:
        return self.judge_id


def identify(judge: Any, *, hedge_policy: str | None = None, risk: Any = None) -> JudgeIdentity:
    """The identity of ``judge`` as the worker runs it: its fingerprint, plus the hedge policy and the answer-risk
    map the worker applies after it (``risk``: an :class:`~evaluator_worker.judges.risk.RiskMap`; default: the one
    :func:`~evaluator_worker.judges.risk.risk_map` finds for the judge's name)."""
    if risk is None:
        from evaluator_worker.judges.risk import risk_map

        risk = risk_map(judge.name)
    parts = {
        "judge": digest(fingerprint_of(judge)),
        "hedge_policy": digest(str(getattr(hedge_policy, "value", hedge_policy) or "lenient")),
        "risk_map": digest(_risk_fields(risk)),
    }
    return JudgeIdentity(
        kind=str(judge.name), models=models_of(judge), digest=digest(parts)[:DIGEST_CHARS], parts=parts
    )


def _risk_fields(risk: Any) -> Any:
    """What of a risk map decides ``at_risk`` (its metadata, fit dates and dev numbers, does not)."""
    cmap = getattr(risk, "claim_map", None)
    return {
        "claim_map": None if cmap is None else confidence_map_fields(cmap),
        "aggregator": getattr(risk, "aggregator", None),
        "threshold": getattr(risk, "threshold", None),
    }

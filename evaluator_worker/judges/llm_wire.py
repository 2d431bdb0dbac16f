"""The LLM judge's wire: the requests it sends and how a tool call's input becomes claims and verdicts.

:class:`ToolWire` builds each :class:`~evaluator_worker.judges.transport.ChatRequest` (extraction,
single call, verification) and validates what the model returns (pydantic wire models, nested JSON
strings decoded, bare strings accepted as claims, 0-100 confidences scaled), raising :class:`Malformed`
for output that does not fit. :meth:`ToolWire.to_verdict` checks the quoted evidence against the
contexts. The judge (:mod:`evaluator_worker.judges.llm`) runs the calls; the batch audit
(:mod:`claimwatch.audit`) sends the same requests as Message Batches and parses the replies here too.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from pydantic import BaseModel, Field, ValidationError, field_validator

from contract.failures import parse_failure_type
from contract.logs import get_logger
from evaluator_worker.judges import prompts
from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict
from evaluator_worker.judges.claims import strip_citations
from evaluator_worker.judges.transport import ChatRequest

log = get_logger(__name__)

#: confidence multiplier when the quoted evidence cannot be found in any context chunk
UNLOCATED_EVIDENCE_PENALTY = 0.5
UNLOCATED_NOTE = "[evidence not found verbatim in the context]"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")
#: confidences from this up to 100 are read as percentages; between 1 and this, as 1 (a slip past the scale's top)
PERCENT_FROM = 2.0
#: a quoted "evidence" that identifies no passage (a letter, punctuation, a function word) is found in any context
#: and would vouch for a verdict at full confidence: such a quote counts as not located. It must hold at least
#: this many word characters outside :data:`FUNCTION_WORDS`.
MIN_QUOTE_WORD_CHARS = 4
FUNCTION_WORDS = frozenset(
    "a an and are as at be been but by for from had has have he her his in into is it its of on or she that the "
    "their them then there these they this those to was we were which who will with would you".split()
)


# --------------------------------------------------------------------------- wire models (tool input)


def _claim_text(raw: str) -> str:
    """A claim as the model wrote it, without the source markers real answers carry ([2], "(passage 3)",
    "Passage 3 says that"): the prompt asks for none, and a model that keeps one would send the verifier a
    claim about a passage number (the declared markers of :data:`claims.CITATION_MARKERS`)."""
    text = prompts.unescape_data(raw).strip()
    return strip_citations(text) or text


class _ExtractedClaim(BaseModel):
    text: str = Field(min_length=1)
    sentence: int | None = None


class _ExtractOutput(BaseModel):
    claims: list[_ExtractedClaim] = Field(default_factory=list)
    abstained: bool = False


class _WireVerdict(ClaimVerdict):
    """A ``ClaimVerdict`` as a model writes it, read leniently: the verdict in any case, a confidence in percent, the
    class name by its aliases (a name outside the taxonomy is "other")."""

    @field_validator("failure_type", mode="before")
    @classmethod
    def _failure(cls, v: Any) -> Any:
        return None if v is None or (isinstance(v, str) and not v.strip()) else parse_failure_type(v)

    @field_validator("verdict", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @field_validator("confidence", mode="before")
    @classmethod
    def _percent(cls, v: Any) -> Any:
        # some outputs give 0-100 (85 is 0.85); a value just past 1 (1.5) is a slip at the top of the 0-1 scale,
        # not 1.5% (which would turn a confident verdict into a near-zero one); anything else fails validation
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if 1.0 < v < PERCENT_FROM:
                return 1.0
            if PERCENT_FROM <= v <= 100.0:
                return v / 100.0
        return v


def _maybe_json(value: Any) -> Any:
    """Tool inputs sometimes carry a nested field as a JSON string; decode it when it parses."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


class Truncated(Exception):
    """The model hit max_tokens; the output must not be parsed."""


class Malformed(Exception):
    """The tool input does not match the schema."""


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text).strip().lower()


def identifies_a_passage(quote: str) -> bool:
    """Whether ``quote`` says enough to point at a passage (see :data:`MIN_QUOTE_WORD_CHARS`)."""
    words = [w for w in re.findall(r"\w+", quote.lower()) if w not in FUNCTION_WORDS]
    return sum(map(len, words)) >= MIN_QUOTE_WORD_CHARS


def locate_evidence(evidence: str, contexts: Sequence[str], preferred: int | None) -> int | None:
    """Index of the context holding ``evidence`` (exact, then whitespace/quote/case-normalised); None if absent
    or if the quote identifies no passage (a letter, punctuation, function words)."""
    ev = prompts.unescape_data(evidence).strip().strip('"').strip()
    if not ev or not identifies_a_passage(ev):
        return None
    order = list(range(len(contexts)))
    if preferred is not None and 0 <= preferred < len(contexts):
        order.remove(preferred)
        order.insert(0, preferred)
    for i in order:
        if ev in contexts[i]:
            return i
    nev = _normalise(ev.rstrip(".").rstrip())
    for i in order:
        if nev and nev in _normalise(contexts[i]):
            return i
    return None


def chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    size = max(1, size)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def split_sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+", text.strip())
    return [p for p in parts if p]


def _request(model: str, system: str, tool: dict[str, Any], user: str, max_tokens: int) -> ChatRequest:
    return ChatRequest(
        model=model,
        system=system,
        messages=[{"role": "user", "content": user}],
        tools=[tool],
        tool_choice=str(tool["name"]),
        max_tokens=max_tokens,
    )


# --------------------------------------------------------------------------- requests and replies


class ToolWire:
    """The requests of one model pair and the parsing of their tool inputs (no network, no state)."""

    def __init__(self, model: str, extract_model: str, max_tokens: int) -> None:
        self.model = model
        self.extract_model = extract_model
        self.max_tokens = max_tokens

    def extract_request(self, answer: str, question: str | None) -> ChatRequest:
        """The request that extracts ``answer``'s claims (online, or one item of a Message Batch)."""
        return _request(
            self.extract_model,
            prompts.EXTRACT_SYSTEM,
            prompts.EXTRACT_TOOL,
            prompts.render_extract_user(answer, question),
            self.max_tokens,
        )

    @staticmethod
    def extracted_claims(parsed: _ExtractOutput, sentence_offset: int = 0) -> list[tuple[str, int | None]]:
        """(claim text, answer sentence) from a parsed extraction; an abstention gives none."""
        if parsed.abstained and not parsed.claims:
            return []
        out: list[tuple[str, int | None]] = []
        for c in parsed.claims:
            text = _claim_text(c.text)
            if text:
                out.append((text, None if c.sentence is None else c.sentence + sentence_offset))
        return out

    def parse_extract(self, raw: dict[str, Any] | None) -> _ExtractOutput:
        """The extraction tool's input, validated (raises ``Malformed``); shared with the batch audit.

        Items are validated one by one, as verdicts are: an invalid one (a number, a ``sentence`` that is not an
        index) is dropped and logged, and only when none validates is the output malformed. A tool input without
        ``claims`` (``{}``, a renamed key) is malformed unless the model abstained: read as "no claims" it would
        score a substantive answer as an abstention.
        """
        if raw is None:
            raise Malformed("no tool_use block")
        abstained = _maybe_json(raw.get("abstained", False))
        if not isinstance(abstained, bool):
            raise Malformed(f"abstained is {type(abstained).__name__}, not a boolean")
        items = _maybe_json(raw.get("claims"))
        if items is None:
            if abstained:
                return _ExtractOutput(claims=[], abstained=True)
            raise Malformed(f"no claims in the tool input (keys: {sorted(map(str, raw))[:8]})")
        if not isinstance(items, list):
            raise Malformed(f"claims is {type(items).__name__}, not a list")
        claims, bad = [], 0
        for item in items:
            item = _maybe_json(item)
            try:
                claims.append(_ExtractedClaim.model_validate({"text": item} if isinstance(item, str) else item))
            except ValidationError:
                bad += 1
        if items and not claims:
            raise Malformed(f"none of {len(items)} claims validated")
        if bad:
            log.warning("judge_invalid_claim_items", invalid=bad, of=len(items))
        return _ExtractOutput(claims=claims, abstained=abstained)

    def single_request(self, answer: str, contexts: Sequence[str], question: str | None) -> ChatRequest:
        """The single-call request: ``answer``'s claims and their verdicts against ``contexts`` in one tool call."""
        return _request(
            self.model,
            prompts.SINGLE_SYSTEM,
            prompts.SINGLE_TOOL,
            prompts.render_single_user(answer, list(contexts), question),
            self.max_tokens,
        )

    def parse_single(self, raw: dict[str, Any] | None) -> tuple[bool, list[dict[str, Any]]]:
        """The single-call tool's claims (dicts with ``text``; bare strings kept) and whether the model abstained."""
        if raw is None:
            raise Malformed("no tool_use block")
        items = _maybe_json(raw.get("claims"))
        if items is None:  # as in parse_extract: a missing list is no abstention unless the model said so
            if raw.get("abstained") is True:
                return True, []
            raise Malformed(f"no claims in the tool input (keys: {sorted(map(str, raw))[:8]})")
        if not isinstance(items, list):
            raise Malformed(f"claims is {type(items).__name__}, not a list")
        out = []
        for item in items:
            item = _maybe_json(item)
            if isinstance(item, str):
                item = {"text": item}  # a bare claim: kept, verdict repaired later
            if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip():
                out.append(item)
        if items and not out:
            raise Malformed(f"none of {len(items)} claims validated")
        return bool(raw.get("abstained", False)), out

    @staticmethod
    def single_claims(
        parsed: tuple[bool, list[dict[str, Any]]], sentence_offset: int = 0
    ) -> list[tuple[str, int | None, dict[str, Any] | None]]:
        """(claim text, answer sentence, verdict fields or None) from a parsed single call; an abstention gives none."""
        abstained, items = parsed
        if abstained and not items:
            return []
        out: list[tuple[str, int | None, dict[str, Any] | None]] = []
        for item in items:
            text = _claim_text(str(item.get("text") or ""))
            if not text:
                continue
            sentence = item.get("sentence")
            if isinstance(sentence, int) and not isinstance(sentence, bool):
                sentence += sentence_offset
            else:
                sentence = None
            wire: dict[str, Any] = {
                k: item[k]
                for k in ("verdict", "evidence", "context_index", "confidence", "reason", "failure_type")
                if k in item
            }
            out.append((text, sentence, wire if "verdict" in wire else None))
        return out

    def single_verdict(self, claim: Claim, fields: dict[str, Any], contexts: list[str]) -> ClaimVerdict | None:
        """A single call's verdict fields for ``claim`` as a ``ClaimVerdict``; None when they do not validate."""
        try:
            w = _WireVerdict.model_validate({**fields, "claim_id": claim.id})
        except ValidationError:
            return None
        return self.to_verdict(claim, w, contexts)

    @staticmethod
    def prompt_ids(claims: Sequence[Claim]) -> dict[str, str]:
        """Prompt ids: the claim's own id when it is safe inside an attribute, else a positional one."""
        return {c.id: (c.id if _SAFE_ID.match(c.id) else f"x{i}") for i, c in enumerate(claims)}

    def verify_request(
        self,
        batch: Sequence[Claim],
        contexts: Sequence[str],
        question: str | None,
        pid: Mapping[str, str],
        *,
        repair: bool = False,
    ) -> ChatRequest:
        """The request that judges ``batch`` (claim ids in the prompt: ``pid``) against ``contexts``."""
        return _request(
            self.model,
            prompts.VERIFY_SYSTEM,
            prompts.VERIFY_TOOL,
            prompts.render_verify_user([(pid[c.id], c.text) for c in batch], list(contexts), question, repair=repair),
            self.max_tokens,
        )

    def parse_verdicts(self, raw: dict[str, Any] | None) -> list[_WireVerdict]:
        """The verify tool's verdict items that validate (raises ``Malformed`` when none do); shared with the batch audit."""
        if raw is None:
            raise Malformed("no tool_use block")
        items = _maybe_json(raw.get("verdicts"))
        if not isinstance(items, list):
            raise Malformed(f"verdicts is {type(items).__name__}, not a list")
        out, bad = [], 0
        for item in items:
            try:
                out.append(_WireVerdict.model_validate(_maybe_json(item)))
            except ValidationError:
                bad += 1  # an invalid item counts as a missing id (repaired later)
        if items and not out:
            raise Malformed(f"none of {len(items)} verdicts validated")
        if bad:
            log.warning("judge_invalid_verdict_items", invalid=bad, of=len(items))
        return out

    def to_verdict(self, claim: Claim, w: _WireVerdict, contexts: list[str]) -> ClaimVerdict:
        """A wire verdict as a ``ClaimVerdict``: evidence located in the contexts (else confidence penalised)."""
        confidence, reason = w.confidence, w.reason
        evidence = w.evidence.strip() if w.evidence and w.evidence.strip() else None
        index = w.context_index if w.context_index is not None and 0 <= w.context_index < len(contexts) else None
        if evidence is not None:
            found = locate_evidence(evidence, contexts, index)
            if found is None:
                confidence *= UNLOCATED_EVIDENCE_PENALTY
                reason = f"{reason or ''} {UNLOCATED_NOTE}".strip()
            else:
                index = found
        elif w.verdict in (Verdict.SUPPORTED, Verdict.CONTRADICTED):
            confidence *= UNLOCATED_EVIDENCE_PENALTY
            reason = f"{reason or ''} [no evidence quoted]".strip()
        if evidence is None:
            index = None
        return ClaimVerdict(
            claim_id=claim.id,
            verdict=w.verdict,
            evidence=evidence,
            context_index=index,
            confidence=confidence,
            reason=reason,
            failure_type=w.failure_type,
        )

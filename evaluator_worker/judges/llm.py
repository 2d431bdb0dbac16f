"""The LLM judge: claim extraction and verification by a chat model through forced tool calls.

One judge for every chat API: the prompts, tool schemas, output repair, split on
truncation, evidence checks and cost accounting live here once; the wire is a
:class:`~evaluator_worker.judges.transport.ChatTransport` (``anthropic.AnthropicTransport``
for Claude on the first-party API, Bedrock or Vertex; ``openai_compat.OpenAITransport`` for
any OpenAI-compatible endpoint). ``AnthropicJudge(...)`` and ``OpenAIJudge(...)`` build it.

Two calls per answer:

1. ``extract_claims`` -> ``extract_model`` with the ``record_claims`` tool.
   Claim ids are ours (``c1``..``cN``), never taken from the model.
2. ``verify`` -> ``model`` with the ``record_verdicts`` tool, all claims in one call
   (chunks of ``max_claims_per_call`` for large answers).

Single-call mode (``single_call``, off by default): :meth:`LLMJudge.extract_and_verify`
makes one call to ``model`` with the ``record_claim_verdicts`` tool that returns the claims
*and* their verdicts (answer and contexts sent once); claims left without a valid verdict
get one repair call. ``extract_sees_contexts`` is then true, and the pipeline calls it
instead of ``extract_claims`` + ``verify``. ``extract_claims`` and ``verify`` stay the plain
two-call steps (the cascade extracts on another judge and verifies here). The judge keeps no
state between calls.

Reliability rules (see docs/anthropic-judge.md):

- every failure of a call is a ``JudgeError`` carrying ``retryable``/``throttled``/``fatal``, the
  status code and the ``retry-after`` (the transport maps it through ``http_errors``); SDK
  retries are off by default: ``flow.JudgeCaller`` is the one retry layer;
- ``stop_reason == "max_tokens"``: never parse partial output; split the batch in halves and
  retry (a single truncated claim becomes ``ERROR``);
- malformed tool input: one retry, then ``JudgeOutputError``;
- claim ids missing from the output: one repair call for just those ids; still missing ->
  ``Verdict.ERROR`` (never SUPPORTED/CONTRADICTED);
- evidence not found verbatim in the chosen chunk: located in another chunk (context_index
  fixed), else the verdict is kept with confidence halved and a note in ``reason``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel, Field, ValidationError, field_validator

from contract.logs import get_logger
from evaluator_worker.errors import JudgeOutputError
from evaluator_worker.judges import prompts
from evaluator_worker.judges.base import (
    Claim,
    ClaimVerdict,
    Extraction,
    JudgeBase,
    Usage,
    Verdict,
    Verification,
    complete_verdicts,
)
from evaluator_worker.judges.claims import strip_citations
from evaluator_worker.judges.pricing import cost_usd
from evaluator_worker.judges.transport import ChatRequest, ChatTransport, ToolCallResult

log = get_logger(__name__)

#: confidence multiplier when the quoted evidence cannot be found in any context chunk
UNLOCATED_EVIDENCE_PENALTY = 0.5
UNLOCATED_NOTE = "[evidence not found verbatim in the context]"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")


@dataclass(frozen=True)
class LLMOptions:
    """What the judge needs to know of its models (each provider's settings map onto it)."""

    #: verifier model (and the single-call model), in the API's naming
    model: str
    #: claim extraction model
    extract_model: str
    max_tokens: int = 4096
    max_claims_per_call: int = 40
    single_call: bool = False
    #: USD per million tokens: {model: {"input": x, "output": y, "cache_read": z, "cache_creation": w}}
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


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


class _WireVerdict(BaseModel):
    claim_id: str
    verdict: Verdict
    evidence: str | None = None
    context_index: int | None = None
    confidence: float = Field(0.5, ge=0.0, le=1.0)
    reason: str | None = None

    @field_validator("verdict", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.strip().upper() if isinstance(v, str) else v

    @field_validator("confidence", mode="before")
    @classmethod
    def _percent(cls, v: Any) -> Any:
        # some outputs give 0-100; accept them, anything else fails validation
        if isinstance(v, (int, float)) and 1.0 < v <= 100.0:
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


# --------------------------------------------------------------------------- helpers


class _Truncated(Exception):
    """The model hit max_tokens; the output must not be parsed."""


class _Malformed(Exception):
    """The tool input does not match the schema."""


def _normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text).strip().lower()


def locate_evidence(evidence: str, contexts: Sequence[str], preferred: int | None) -> int | None:
    """Index of the context holding ``evidence`` (exact, then whitespace/quote/case-normalised); None if absent."""
    ev = prompts.unescape_data(evidence).strip().strip('"').strip()
    if not ev:
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


def _chunks(items: Sequence[Any], size: int) -> list[list[Any]]:
    size = max(1, size)
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def _split_sentences(text: str) -> list[str]:
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


# --------------------------------------------------------------------------- the judge


class LLMJudge(JudgeBase):
    """A chat model as claim extractor and verifier (implements ``evaluator_worker.judges.base.Judge``)."""

    #: calls wait seconds on the network: the worker judges many answers at once
    io_bound = True

    def __init__(self, transport: ChatTransport, options: LLMOptions, *, name: str, settings: Any = None) -> None:
        self.transport = transport
        self.options = options
        self.name = name
        #: the provider's settings as configured (model ids in the API's naming), for callers that show them
        self.settings = settings if settings is not None else options

    @property
    def client(self) -> Any:
        """The transport's SDK client (e.g. for the Message Batches API), None when it has none."""
        return getattr(self.transport, "client", None)

    @property
    def extract_sees_contexts(self) -> bool:
        """True in single-call mode: the pipeline calls :meth:`extract_and_verify` with the contexts."""
        return bool(self.options.single_call)

    # ------------------------------------------------------------------ extraction

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Split ``answer`` into atomic claims (one call; halves of the answer if the output is truncated).

        ``contexts`` is not used: extraction alone never sees them (single-call: :meth:`extract_and_verify`).
        """
        usage = Usage(model=self.options.extract_model)
        if not answer or not answer.strip():
            return Extraction(claims=[], usage=usage)
        texts: list[tuple[str, int | None]] = []
        self._extract_part(answer, question, 0, usage, texts, depth=0)
        claims = [Claim(id=f"c{i}", text=t, sentence=s) for i, (t, s) in enumerate(texts, start=1)]
        return Extraction(claims=claims, usage=usage)

    def _extract_part(
        self,
        answer: str,
        question: str | None,
        sentence_offset: int,
        usage: Usage,
        out: list[tuple[str, int | None]],
        depth: int,
    ) -> None:
        try:
            parsed = self._call_tool(self.extract_request(answer, question), usage, self.parse_extract)
        except _Truncated:
            sentences = _split_sentences(answer)
            if len(sentences) < 2 or depth >= 6:
                raise JudgeOutputError("claim extraction truncated at max_tokens on an unsplittable answer") from None
            mid = len(sentences) // 2
            self._extract_part(" ".join(sentences[:mid]), question, sentence_offset, usage, out, depth + 1)
            self._extract_part(" ".join(sentences[mid:]), question, sentence_offset + mid, usage, out, depth + 1)
            return
        out.extend(self.extracted_claims(parsed, sentence_offset))

    def extract_request(self, answer: str, question: str | None) -> ChatRequest:
        """The request that extracts ``answer``'s claims (online, or one item of a Message Batch)."""
        return _request(
            self.options.extract_model,
            prompts.EXTRACT_SYSTEM,
            prompts.EXTRACT_TOOL,
            prompts.render_extract_user(answer, question),
            self.options.max_tokens,
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
        """The extraction tool's input, validated (raises ``_Malformed``); shared with the batch audit."""
        if raw is None:
            raise _Malformed("no tool_use block")
        data = dict(raw)
        data["claims"] = _maybe_json(data.get("claims", []))
        if isinstance(data["claims"], list):  # accept bare strings as claims
            data["claims"] = [{"text": c} if isinstance(c, str) else c for c in data["claims"]]
        try:
            return _ExtractOutput.model_validate(data)
        except ValidationError as exc:
            raise _Malformed(str(exc)) from exc

    # ------------------------------------------------------------------ single-call mode

    def extract_and_verify(
        self, answer: str, question: str | None, contexts: Sequence[str]
    ) -> tuple[Extraction, Verification]:
        """Claims and their verdicts from one ``record_claim_verdicts`` call (answer halves when truncated).

        The call's usage is the extraction's; claims left without a valid verdict get one repair
        call (``record_verdicts``, counted in the verification's usage); still missing -> ``ERROR``.
        """
        ctx = [c or "" for c in contexts]
        usage = Usage(model=self.options.model)
        if not answer or not answer.strip():
            return Extraction(claims=[], usage=usage), Verification(verdicts=[], usage=Usage(model=self.options.model))
        items: list[tuple[str, int | None, dict[str, Any] | None]] = []
        self._single_part(answer, question, ctx, 0, usage, items, depth=0)
        claims: list[Claim] = []
        got: dict[str, ClaimVerdict] = {}
        for i, (text, sentence, wire) in enumerate(items, start=1):
            claim = Claim(id=f"c{i}", text=text, sentence=sentence)
            claims.append(claim)
            if wire is not None:
                try:
                    w = _WireVerdict.model_validate({**wire, "claim_id": claim.id})
                except ValidationError:
                    continue  # no usable verdict: repaired below
                got[claim.id] = self.to_verdict(claim, w, ctx)
        missing = len(claims) - len(got)
        if missing:
            log.warning("judge_single_call_missing_verdicts", missing=missing, of=len(claims), action="repair")
        extraction = Extraction(claims=claims, usage=usage)
        if not claims:
            return extraction, Verification(verdicts=[], usage=Usage(model=self.options.model))
        return extraction, self._complete(claims, ctx, question, got, set())

    def _single_part(
        self,
        answer: str,
        question: str | None,
        contexts: list[str],
        sentence_offset: int,
        usage: Usage,
        out: list[tuple[str, int | None, dict[str, Any] | None]],
        depth: int,
    ) -> None:
        request = _request(
            self.options.model,
            prompts.SINGLE_SYSTEM,
            prompts.SINGLE_TOOL,
            prompts.render_single_user(answer, contexts, question),
            self.options.max_tokens,
        )
        try:
            parsed = self._call_tool(request, usage, self._parse_single)
        except _Truncated:
            sentences = _split_sentences(answer)
            if len(sentences) < 2 or depth >= 6:
                # one sentence whose claims+verdicts do not fit: plain extraction (shorter output);
                # the repair call then judges these claims with its own truncation handling
                log.info("judge_single_call_truncated_fallback", depth=depth)
                texts: list[tuple[str, int | None]] = []
                plain = Usage(model=self.options.extract_model)
                self._extract_part(answer, question, sentence_offset, plain, texts, depth=0)
                usage.calls += plain.calls
                usage.input_tokens += plain.input_tokens
                usage.output_tokens += plain.output_tokens
                usage.cache_read_tokens += plain.cache_read_tokens
                usage.cache_creation_tokens += plain.cache_creation_tokens
                usage.cost_usd += plain.cost_usd
                usage.retries += plain.retries
                out.extend((t, s, None) for t, s in texts)
                return
            mid = len(sentences) // 2
            log.info("judge_single_call_truncated_split", sentences=len(sentences))
            self._single_part(" ".join(sentences[:mid]), question, contexts, sentence_offset, usage, out, depth + 1)
            self._single_part(
                " ".join(sentences[mid:]), question, contexts, sentence_offset + mid, usage, out, depth + 1
            )
            return
        abstained, raw_items = parsed
        if abstained and not raw_items:
            return
        for item in raw_items:
            text = _claim_text(str(item.get("text") or ""))
            if not text:
                continue
            sentence = item.get("sentence")
            if isinstance(sentence, int) and not isinstance(sentence, bool):
                sentence += sentence_offset
            else:
                sentence = None
            wire = {k: item[k] for k in ("verdict", "evidence", "context_index", "confidence", "reason") if k in item}
            out.append((text, sentence, wire if "verdict" in wire else None))

    def _parse_single(self, raw: dict[str, Any] | None) -> tuple[bool, list[dict[str, Any]]]:
        if raw is None:
            raise _Malformed("no tool_use block")
        items = _maybe_json(raw.get("claims", []))
        if not isinstance(items, list):
            raise _Malformed(f"claims is {type(items).__name__}, not a list")
        out = []
        for item in items:
            item = _maybe_json(item)
            if isinstance(item, str):
                item = {"text": item}  # a bare claim: kept, verdict repaired later
            if isinstance(item, dict) and isinstance(item.get("text"), str) and item["text"].strip():
                out.append(item)
        if items and not out:
            raise _Malformed(f"none of {len(items)} claims validated")
        return bool(raw.get("abstained", False)), out

    # ------------------------------------------------------------------ verification

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: batched calls, one repair call for missing ids, ERROR for the rest."""
        claims = list(claims)
        if not claims:
            return Verification(verdicts=[], usage=Usage(model=self.options.model))
        ctx = [c or "" for c in contexts]
        usage = Usage(model=self.options.model)
        pid = self._prompt_ids(claims)
        got: dict[str, ClaimVerdict] = {}
        truncated: set[str] = set()
        for batch in _chunks(claims, self.options.max_claims_per_call):
            self._verify_batch(batch, ctx, question, pid, usage, got, truncated, repair=False)
        return self._complete(claims, ctx, question, got, truncated, usage)

    @staticmethod
    def _prompt_ids(claims: Sequence[Claim]) -> dict[str, str]:
        """Prompt ids: the claim's own id when it is safe inside an attribute, else a positional one."""
        return {c.id: (c.id if _SAFE_ID.match(c.id) else f"x{i}") for i, c in enumerate(claims)}

    def _complete(
        self,
        claims: list[Claim],
        contexts: list[str],
        question: str | None,
        got: dict[str, ClaimVerdict],
        truncated: set[str],
        usage: Usage | None = None,
    ) -> Verification:
        """The repair call for claims without a verdict, then one verdict per claim (ERROR for the rest)."""
        usage = usage if usage is not None else Usage(model=self.options.model)
        pid = self._prompt_ids(claims)
        missing = [c for c in claims if c.id not in got and c.id not in truncated]
        if missing:
            log.warning("judge_missing_claim_ids", missing=len(missing), of=len(claims), action="repair")
            for batch in _chunks(missing, self.options.max_claims_per_call):
                self._verify_batch(batch, contexts, question, pid, usage, got, truncated, repair=True)
        still = [c.id for c in claims if c.id not in got]
        if still:
            log.warning("judge_claims_without_verdict", count=len(still), of=len(claims))
        verdicts = complete_verdicts(claims, list(got.values()))
        for v in verdicts:
            if v.claim_id in truncated and v.verdict is Verdict.ERROR:
                v.reason = "judge output truncated at max_tokens"
        return Verification(verdicts=verdicts, usage=usage)

    def _verify_batch(
        self,
        batch: list[Claim],
        contexts: list[str],
        question: str | None,
        pid: dict[str, str],
        usage: Usage,
        got: dict[str, ClaimVerdict],
        truncated: set[str],
        *,
        repair: bool,
    ) -> None:
        request = self.verify_request(batch, contexts, question, pid, repair=repair)
        try:
            raw = self._call_tool(request, usage, self.parse_verdicts)
        except _Truncated:
            if len(batch) == 1:
                truncated.add(batch[0].id)
                log.warning("judge_truncated_single_claim", claim_id=batch[0].id)
                return
            mid = len(batch) // 2
            log.info("judge_truncated_split", size=len(batch))
            for half in (batch[:mid], batch[mid:]):
                self._verify_batch(half, contexts, question, pid, usage, got, truncated, repair=repair)
            return
        by_pid = {pid[c.id]: c for c in batch}
        for w in raw:
            claim = by_pid.get(w.claim_id)
            if claim is None or claim.id in got:
                continue  # unknown id or duplicate: ignored
            got[claim.id] = self.to_verdict(claim, w, contexts)

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
            self.options.model,
            prompts.VERIFY_SYSTEM,
            prompts.VERIFY_TOOL,
            prompts.render_verify_user([(pid[c.id], c.text) for c in batch], list(contexts), question, repair=repair),
            self.options.max_tokens,
        )

    def parse_verdicts(self, raw: dict[str, Any] | None) -> list[_WireVerdict]:
        """The verify tool's verdict items that validate (raises ``_Malformed`` when none do); shared with the batch audit."""
        if raw is None:
            raise _Malformed("no tool_use block")
        items = _maybe_json(raw.get("verdicts"))
        if not isinstance(items, list):
            raise _Malformed(f"verdicts is {type(items).__name__}, not a list")
        out, bad = [], 0
        for item in items:
            try:
                out.append(_WireVerdict.model_validate(item))
            except ValidationError:
                bad += 1  # an invalid item counts as a missing id (repaired later)
        if items and not out:
            raise _Malformed(f"none of {len(items)} verdicts validated")
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
        )

    # ------------------------------------------------------------------ one call

    def _call_tool(self, request: ChatRequest, usage: Usage, parse: Callable[[Any], Any]) -> Any:
        """One forced tool call (malformed output: one retry), usage accounted, the parsed tool input returned.

        Raises ``_Truncated`` on a cut output and ``JudgeOutputError`` when the output is malformed twice.
        """
        last: Exception | None = None
        for attempt in range(2):
            result = self._complete_call(request, usage)
            if result.truncated:
                raise _Truncated()
            try:
                return parse(result.input)
            except _Malformed as exc:
                last = exc
                log.warning(
                    "judge_malformed_output", tool=request.tool_choice, attempt=attempt + 1, error=str(exc)[:200]
                )
        raise JudgeOutputError(f"{request.tool_choice}: malformed tool output after retry: {last}")

    def _complete_call(self, request: ChatRequest, usage: Usage) -> ToolCallResult:
        """One transport call (errors are already ``JudgeError``s); tokens, retries and cost added to ``usage``."""
        result = self.transport.complete(request)
        u = result.usage
        usage.calls += 1
        usage.retries += result.retries
        usage.input_tokens += u.input_tokens
        usage.output_tokens += u.output_tokens
        usage.cache_read_tokens += u.cache_read_tokens
        usage.cache_creation_tokens += u.cache_creation_tokens
        usage.cost_usd += cost_usd(
            request.model,
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_creation_tokens=u.cache_creation_tokens,
            overrides=self.options.prices,
        )
        return result

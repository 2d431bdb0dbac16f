"""The production judge: Claude through the ``anthropic`` SDK, structured output via forced tool use.

Two calls per answer:

1. ``extract_claims`` -> ``settings.extract_model`` with the ``record_claims`` tool.
   Claim ids are ours (``c1``..``cN``), never taken from the model.
2. ``verify`` -> ``settings.model`` with the ``record_verdicts`` tool, all claims
   in one call (chunks of ``max_claims_per_call`` for large answers).

Single-call mode (``settings.single_call``, off by default): when the caller passes
``contexts`` to ``extract_claims``, one call to ``settings.model`` with the
``record_claim_verdicts`` tool returns the claims *and* their verdicts (answer and
contexts sent once). The verdicts are kept for the immediately following
``verify()`` of the same claims (same ids, texts and contexts) and returned from
there without a call; claims left without a valid verdict get the usual repair
call. Any other ``verify()`` call is a normal verify call, so the ``Judge``
protocol and the cascade (extract on another judge, verify here) are unchanged.

Reliability rules (see docs/anthropic-judge.md):

- every SDK error is mapped by :func:`map_api_error` to a ``JudgeError`` carrying
  ``retryable``/``throttled``/``fatal``, the status code and the ``retry-after``;
  the SDK does not retry (``max_retries=0`` by default): ``flow.JudgeCaller`` is the
  one retry layer (429/529/5xx/408/timeouts retried with backoff, 400/413 not,
  401/403/404 stop the worker with the setting to fix).
- ``stop_reason == "max_tokens"``: never parse partial output; split the batch
  in halves and retry (a single truncated claim becomes ``ERROR``).
- Malformed tool input: one retry, then ``JudgeOutputError``.
- Claim ids missing from the output: one repair call for just those ids; still
  missing -> ``Verdict.ERROR`` (never SUPPORTED/CONTRADICTED).
- Evidence not found verbatim in the chosen chunk: located in another chunk
  (context_index fixed), else the verdict is kept with confidence halved and a
  note in ``reason``.
"""

from __future__ import annotations

import email.utils
import json
import re
import threading
import time
from typing import Any, Callable, Mapping, Sequence

import anthropic
from pydantic import BaseModel, Field, ValidationError, field_validator

from contract.logs import get_logger
from evaluator_worker.errors import (
    ConfigError,
    JudgeAuthError,
    JudgeError,
    JudgeOutputError,
    JudgeRateLimited,
    JudgeRequestRejected,
    JudgeTimeout,
    JudgeUnavailable,
)
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
from evaluator_worker.judges.platforms import for_platform, make_client
from evaluator_worker.judges.pricing import cost_usd
from evaluator_worker.judges.settings import AnthropicSettings

log = get_logger(__name__)

#: confidence multiplier when the quoted evidence cannot be found in any context chunk
UNLOCATED_EVIDENCE_PENALTY = 0.5
UNLOCATED_NOTE = "[evidence not found verbatim in the context]"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")


# --------------------------------------------------------------------------- wire models (tool input)


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


class _AttemptCounter:
    """SDK middleware counting HTTP attempts per thread, so SDK retries show up in ``Usage.retries``."""

    def __init__(self) -> None:
        self._local = threading.local()

    def reset(self) -> None:
        self._local.n = 0

    @property
    def attempts(self) -> int:
        return getattr(self._local, "n", 0)

    def __call__(self, request: Any, call_next: Any) -> Any:
        self._local.n = self.attempts + 1
        return call_next(request)


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


def retry_after_s(headers: Any) -> float | None:
    """Seconds from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date); None when absent or unreadable."""
    if headers is None:
        return None
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def tool_input(message: Any, tool_name: str) -> dict[str, Any] | None:
    """The input of the message's ``tool_name`` tool_use block (JSON strings decoded), or None."""
    for block in getattr(message, "content", None) or []:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == tool_name:
            raw = block.input if isinstance(block.input, dict) else _maybe_json(block.input)
            return raw if isinstance(raw, dict) else None
    return None


def map_api_error(exc: Exception, *, model: str | None = None) -> JudgeError:
    """An SDK exception as a :class:`JudgeError` carrying retryable/throttled/fatal, status and retry-after."""
    if isinstance(exc, anthropic.APITimeoutError):
        return JudgeTimeout(f"judge timed out: {exc}")
    if isinstance(exc, anthropic.APIConnectionError):
        return JudgeUnavailable(f"judge unreachable: {exc}")
    if not isinstance(exc, anthropic.APIStatusError):
        return JudgeUnavailable(f"judge call failed: {exc}")
    return status_error(exc.status_code, getattr(exc.response, "headers", None), str(exc)[:300], model=model)


def status_error(
    status: int,
    headers: Any,
    detail: str,
    *,
    model: str | None,
    api: str = "the Anthropic API",
    prefix: str = "CLAIMWATCH_ANTHROPIC__",
    key_hint: str = "CLAIMWATCH_ANTHROPIC__API_KEY or ANTHROPIC_API_KEY",
) -> JudgeError:
    """An HTTP error status of a judge API as the :class:`JudgeError` the flow layer acts on."""
    after = retry_after_s(headers)
    kw: dict[str, Any] = {"status_code": status, "retry_after": after}
    if status == 401:
        return JudgeAuthError(f"{api} rejected the key (401): set a valid {key_hint}", setting=f"{prefix}API_KEY", **kw)
    if status == 403:
        return JudgeAuthError(
            f"{api} refused this key (403 permission_error): give {prefix}API_KEY access to "
            f"model {model!r} or choose another {prefix}MODEL",
            setting=f"{prefix}API_KEY",
            **kw,
        )
    if status == 404:
        return JudgeAuthError(
            f"{api} does not know model {model!r} (404): fix {prefix}MODEL / {prefix}EXTRACT_MODEL (or {prefix}BASE_URL)",
            setting=f"{prefix}MODEL",
            **kw,
        )
    if status == 429:
        return JudgeRateLimited(f"judge rate limited (429): {detail}", **kw)
    if status == 529:
        return JudgeRateLimited(f"judge overloaded (529): {detail}", **kw)
    if status == 408:
        return JudgeTimeout(f"judge request timeout (408): {detail}", **kw)
    if status == 409 or status >= 500:
        return JudgeUnavailable(f"judge server error {status}: {detail}", **kw)
    return JudgeRequestRejected(f"judge request rejected ({status}): {detail}", **kw)


# --------------------------------------------------------------------------- the judge


class AnthropicJudge(JudgeBase):
    """Claude as claim extractor and verifier (implements ``evaluator_worker.judges.base.Judge``)."""

    name = "anthropic"
    #: calls wait seconds on the network: the worker judges many answers at once
    io_bound = True

    def __init__(self, settings: AnthropicSettings | None = None, client: Any = None) -> None:
        #: model ids in the platform's naming (first-party, Bedrock or Vertex; see ``platforms``)
        self.settings = for_platform(settings or AnthropicSettings())
        if client is None:
            client = make_client(self.settings)
        self._counter = _AttemptCounter()
        if hasattr(client, "with_middleware"):  # SDKs with middleware: count retries per call
            try:
                client = client.with_middleware(self._counter)
            except Exception:  # pragma: no cover - older SDK shapes
                pass
        self.client = client
        self._pending = threading.local()  # single-call verdicts waiting for the next verify()

    @property
    def extract_sees_contexts(self) -> bool:
        """True in single-call mode: callers should pass ``contexts=`` to ``extract_claims``."""
        return bool(self.settings.single_call)

    # ------------------------------------------------------------------ extraction

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Split ``answer`` into atomic claims (one call; halves of the answer if the output is truncated).

        In single-call mode with ``contexts`` given, the same call also judges the claims; their
        verdicts are served by the next ``verify()`` of exactly these claims and contexts.
        """
        self._pending.value = None
        if self.settings.single_call and contexts is not None:
            return self._extract_and_verify(answer, question, [c or "" for c in contexts])
        usage = Usage(model=self.settings.extract_model)
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
        kwargs = self.extract_request(answer, question)
        try:
            parsed = self._call_tool(kwargs, prompts.EXTRACT_TOOL_NAME, usage, self.parse_extract)
        except _Truncated:
            sentences = _split_sentences(answer)
            if len(sentences) < 2 or depth >= 6:
                raise JudgeOutputError("claim extraction truncated at max_tokens on an unsplittable answer") from None
            mid = len(sentences) // 2
            self._extract_part(" ".join(sentences[:mid]), question, sentence_offset, usage, out, depth + 1)
            self._extract_part(" ".join(sentences[mid:]), question, sentence_offset + mid, usage, out, depth + 1)
            return
        out.extend(self.extracted_claims(parsed, sentence_offset))

    def extract_request(self, answer: str, question: str | None) -> dict[str, Any]:
        """The Messages request that extracts ``answer``'s claims (online, or one item of a Message Batch)."""
        return dict(
            model=self.settings.extract_model,
            max_tokens=self.settings.max_tokens,
            system=prompts.system_blocks(prompts.EXTRACT_SYSTEM),
            tools=[prompts.EXTRACT_TOOL],
            tool_choice={"type": "tool", "name": prompts.EXTRACT_TOOL_NAME},
            messages=[{"role": "user", "content": prompts.render_extract_user(answer, question)}],
        )

    @staticmethod
    def extracted_claims(parsed: _ExtractOutput, sentence_offset: int = 0) -> list[tuple[str, int | None]]:
        """(claim text, answer sentence) from a parsed extraction; an abstention gives none."""
        if parsed.abstained and not parsed.claims:
            return []
        out: list[tuple[str, int | None]] = []
        for c in parsed.claims:
            text = prompts.unescape_data(c.text).strip()
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

    def _extract_and_verify(self, answer: str, question: str | None, contexts: list[str]) -> Extraction:
        """One ``record_claim_verdicts`` call: claims plus verdicts (answer halves when truncated)."""
        usage = Usage(model=self.settings.model)
        if not answer or not answer.strip():
            return Extraction(claims=[], usage=usage)
        items: list[tuple[str, int | None, dict[str, Any] | None]] = []
        self._single_part(answer, question, contexts, 0, usage, items, depth=0)
        claims, verdicts = [], {}
        for i, (text, sentence, wire) in enumerate(items, start=1):
            claim = Claim(id=f"c{i}", text=text, sentence=sentence)
            claims.append(claim)
            if wire is not None:
                try:
                    w = _WireVerdict.model_validate({**wire, "claim_id": claim.id})
                except ValidationError:
                    continue  # no usable verdict: verify() repairs it
                verdicts[claim.id] = self.to_verdict(claim, w, contexts)
        missing = len(claims) - len(verdicts)
        if missing:
            log.warning("judge_single_call_missing_verdicts", missing=missing, of=len(claims), action="repair")
        self._pending.value = (
            [(c.id, c.text) for c in claims],
            list(contexts),
            verdicts,
        )
        return Extraction(claims=claims, usage=usage)

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
        kwargs = dict(
            model=self.settings.model,
            system=prompts.system_blocks(prompts.SINGLE_SYSTEM),
            tools=[prompts.SINGLE_TOOL],
            tool_choice={"type": "tool", "name": prompts.SINGLE_TOOL_NAME},
            messages=[{"role": "user", "content": prompts.render_single_user(answer, contexts, question)}],
        )
        try:
            parsed = self._call_tool(kwargs, prompts.SINGLE_TOOL_NAME, usage, self._parse_single)
        except _Truncated:
            sentences = _split_sentences(answer)
            if len(sentences) < 2 or depth >= 6:
                # one sentence whose claims+verdicts do not fit: plain extraction (shorter output);
                # verify() then judges these claims with its own truncation handling
                log.info("judge_single_call_truncated_fallback", depth=depth)
                texts: list[tuple[str, int | None]] = []
                plain = Usage(model=self.settings.extract_model)
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
            text = prompts.unescape_data(str(item.get("text") or "")).strip()
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

    def _take_pending(self, claims: list[Claim], contexts: list[str]) -> dict[str, ClaimVerdict] | None:
        """Verdicts from the single call just made, if ``verify`` is about exactly those claims and contexts."""
        pending = getattr(self._pending, "value", None)
        self._pending.value = None
        if pending is None:
            return None
        ids_texts, ctx, verdicts = pending
        if [(c.id, c.text) for c in claims] != ids_texts or list(contexts) != ctx:
            return None
        return {cid: v.model_copy() for cid, v in verdicts.items()}

    # ------------------------------------------------------------------ verification

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: batched calls, one repair call for missing ids, ERROR for the rest."""
        usage = Usage(model=self.settings.model)
        claims = list(claims)
        if not claims:
            return Verification(verdicts=[], usage=usage)
        contexts = [c or "" for c in contexts]
        # prompt ids: the claim's own id when it is safe inside an attribute, else a positional one
        pid = {c.id: (c.id if _SAFE_ID.match(c.id) else f"x{i}") for i, c in enumerate(claims)}
        got: dict[str, ClaimVerdict] = {}
        truncated: set[str] = set()
        cached = self._take_pending(claims, contexts)
        if cached is not None:  # single-call mode: judged already; only missing ids need a (repair) call
            got.update(cached)
        else:
            for batch in _chunks(claims, self.settings.max_claims_per_call):
                self._verify_batch(batch, contexts, question, pid, usage, got, truncated, repair=False)
        missing = [c for c in claims if c.id not in got and c.id not in truncated]
        if missing:
            log.warning("judge_missing_claim_ids", missing=len(missing), of=len(claims), action="repair")
            for batch in _chunks(missing, self.settings.max_claims_per_call):
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
        kwargs = self.verify_request(batch, contexts, question, pid, repair=repair)
        try:
            raw = self._call_tool(kwargs, prompts.VERIFY_TOOL_NAME, usage, self.parse_verdicts)
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
    ) -> dict[str, Any]:
        """The Messages request that judges ``batch`` (claim ids in the prompt: ``pid``) against ``contexts``."""
        return dict(
            model=self.settings.model,
            max_tokens=self.settings.max_tokens,
            system=prompts.system_blocks(prompts.VERIFY_SYSTEM),
            tools=[prompts.VERIFY_TOOL],
            tool_choice={"type": "tool", "name": prompts.VERIFY_TOOL_NAME},
            messages=[
                {
                    "role": "user",
                    "content": prompts.render_verify_user(
                        [(pid[c.id], c.text) for c in batch], list(contexts), question, repair=repair
                    ),
                }
            ],
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

    # ------------------------------------------------------------------ one API call

    def _call_tool(self, kwargs: dict[str, Any], tool_name: str, usage: Usage, parse: Callable[[Any], Any]) -> Any:
        """Call the API (malformed output: one retry), account usage, return the parsed tool input.

        Raises ``_Truncated`` on ``stop_reason == "max_tokens"`` and ``JudgeOutputError``
        when the output is malformed twice.
        """
        last: Exception | None = None
        for attempt in range(2):
            message = self._create(kwargs, usage)
            if message.stop_reason == "max_tokens":
                raise _Truncated()
            raw = tool_input(message, tool_name)
            try:
                return parse(raw)
            except _Malformed as exc:
                last = exc
                log.warning("judge_malformed_output", tool=tool_name, attempt=attempt + 1, error=str(exc)[:200])
        raise JudgeOutputError(f"{tool_name}: malformed tool output after retry: {last}")

    def _create(self, kwargs: dict[str, Any], usage: Usage) -> Any:
        """One ``messages.create`` (no SDK retries by default: ``flow.JudgeCaller`` retries); maps errors, adds usage."""
        self._counter.reset()
        try:
            message = self.client.messages.create(**{"max_tokens": self.settings.max_tokens, **kwargs})
        except TypeError as exc:
            if "authentication" in str(exc).lower():  # the SDK resolves credentials lazily
                raise ConfigError(
                    "no Anthropic credentials: set CLAIMWATCH_ANTHROPIC__API_KEY or ANTHROPIC_API_KEY"
                ) from exc
            raise
        except anthropic.APIError as exc:
            raise map_api_error(exc, model=str(kwargs.get("model"))) from exc
        finally:
            usage.retries += max(0, self._counter.attempts - 1)
        u = getattr(message, "usage", None)
        model = kwargs["model"]
        inp = int(getattr(u, "input_tokens", 0) or 0)
        out = int(getattr(u, "output_tokens", 0) or 0)
        cr = int(getattr(u, "cache_read_input_tokens", 0) or 0)
        cc = int(getattr(u, "cache_creation_input_tokens", 0) or 0)
        usage.calls += 1
        usage.input_tokens += inp
        usage.output_tokens += out
        usage.cache_read_tokens += cr
        usage.cache_creation_tokens += cc
        usage.cost_usd += cost_usd(
            model,
            input_tokens=inp,
            output_tokens=out,
            cache_read_tokens=cr,
            cache_creation_tokens=cc,
            overrides=self.settings.prices,
        )
        return message

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

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Mapping, Sequence

from contract.logs import get_logger
from evaluator_worker.errors import JudgeOutputError
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
from evaluator_worker.judges.llm_wire import (
    UNLOCATED_EVIDENCE_PENALTY,
    UNLOCATED_NOTE,
    Malformed,
    ToolWire,
    Truncated,
    chunks,
    locate_evidence,
    split_sentences,
)
from evaluator_worker.judges.pricing import cost_usd
from evaluator_worker.judges.settings import LLMSettings
from evaluator_worker.judges.transport import ChatRequest, ChatTransport, ToolCallResult

__all__ = ["LLMJudge", "LLMOptions", "ToolWire", "UNLOCATED_EVIDENCE_PENALTY", "UNLOCATED_NOTE", "locate_evidence"]

log = get_logger(__name__)


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

    @classmethod
    def from_settings(cls, settings: LLMSettings, *, model: str, extract_model: str) -> LLMOptions:
        """A provider's settings (the shared :class:`LLMSettings` part) with its models named in the API's naming."""
        return cls(
            model=model,
            extract_model=extract_model,
            max_tokens=settings.max_tokens,
            max_claims_per_call=settings.max_claims_per_call,
            single_call=settings.single_call,
            prices=settings.prices,
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
        #: the requests and the parsing of their replies (shared with the batch audit)
        self.wire = ToolWire(options.model, options.extract_model, options.max_tokens)

    def models(self) -> tuple[str, ...]:
        """The verifier model, then the extraction model (identity: ``evaluator_worker.judges.identity``)."""
        return (self.options.model, self.options.extract_model)

    def fingerprint(self) -> dict[str, Any]:
        """What changes this judge's verdicts: the requests it sends (prompts, tool schemas, models, max_tokens),
        how it splits claims into calls, the transport's output mode and the reply-parsing constants."""
        from evaluator_worker.judges import llm_wire

        probe = Claim(id="c1", text="<claim>")
        requests = [
            self.wire.extract_request("<answer>", "<question>"),
            self.wire.verify_request([probe], ["<context>"], "<question>", {"c1": "c1"}),
            self.wire.verify_request([probe], ["<context>"], "<question>", {"c1": "c1"}, repair=True),
            self.wire.single_request("<answer>", ["<context>"], "<question>"),
        ]
        transport = getattr(self.transport, "fingerprint", None)
        return {
            "kind": "llm",
            "requests": [asdict(r) for r in requests],
            "max_claims_per_call": self.options.max_claims_per_call,
            "single_call": self.options.single_call,
            "transport": transport() if callable(transport) else type(self.transport).__name__,
            "parsing": {
                "unlocated_evidence_penalty": llm_wire.UNLOCATED_EVIDENCE_PENALTY,
                "percent_from": llm_wire.PERCENT_FROM,
                "min_quote_word_chars": llm_wire.MIN_QUOTE_WORD_CHARS,
            },
        }

    def preflight(self) -> None:
        """Ask the provider about each configured model (the transport's ``check_model``, where it has one): a
        model it no longer serves stops the worker at start-up instead of turning every claim into ERROR."""
        check = getattr(self.transport, "check_model", None)
        if check is None:
            return
        for model in dict.fromkeys((self.options.model, self.options.extract_model)):
            if model:
                check(model)

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
            parsed = self._call_tool(self.wire.extract_request(answer, question), usage, self.wire.parse_extract)
        except Truncated:
            sentences = split_sentences(answer)
            if len(sentences) < 2 or depth >= 6:
                raise JudgeOutputError("claim extraction truncated at max_tokens on an unsplittable answer") from None
            mid = len(sentences) // 2
            self._extract_part(" ".join(sentences[:mid]), question, sentence_offset, usage, out, depth + 1)
            self._extract_part(" ".join(sentences[mid:]), question, sentence_offset + mid, usage, out, depth + 1)
            return
        out.extend(self.wire.extracted_claims(parsed, sentence_offset))

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
            verdict = self.wire.single_verdict(claim, wire, ctx) if wire is not None else None
            if verdict is not None:  # else no usable verdict: repaired below
                got[claim.id] = verdict
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
        request = self.wire.single_request(answer, contexts, question)
        try:
            parsed = self._call_tool(request, usage, self.wire.parse_single)
        except Truncated:
            sentences = split_sentences(answer)
            if len(sentences) < 2 or depth >= 6:
                # one sentence whose claims+verdicts do not fit: plain extraction (shorter output);
                # the repair call then judges these claims with its own truncation handling
                log.info("judge_single_call_truncated_fallback", depth=depth)
                texts: list[tuple[str, int | None]] = []
                plain = Usage(model=self.options.extract_model)
                self._extract_part(answer, question, sentence_offset, plain, texts, depth=0)
                usage.add(plain)
                out.extend((t, s, None) for t, s in texts)
                return
            mid = len(sentences) // 2
            log.info("judge_single_call_truncated_split", sentences=len(sentences))
            self._single_part(" ".join(sentences[:mid]), question, contexts, sentence_offset, usage, out, depth + 1)
            self._single_part(
                " ".join(sentences[mid:]), question, contexts, sentence_offset + mid, usage, out, depth + 1
            )
            return
        out.extend(self.wire.single_claims(parsed, sentence_offset))

    # ------------------------------------------------------------------ verification

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: batched calls, one repair call for missing ids, ERROR for the rest."""
        claims = list(claims)
        if not claims:
            return Verification(verdicts=[], usage=Usage(model=self.options.model))
        ctx = [c or "" for c in contexts]
        usage = Usage(model=self.options.model)
        pid = self.wire.prompt_ids(claims)
        got: dict[str, ClaimVerdict] = {}
        truncated: set[str] = set()
        for batch in chunks(claims, self.options.max_claims_per_call):
            self._verify_batch(batch, ctx, question, pid, usage, got, truncated, repair=False)
        return self._complete(claims, ctx, question, got, truncated, usage)

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
        pid = self.wire.prompt_ids(claims)
        missing = [c for c in claims if c.id not in got and c.id not in truncated]
        if missing:
            log.warning("judge_missing_claim_ids", missing=len(missing), of=len(claims), action="repair")
            for batch in chunks(missing, self.options.max_claims_per_call):
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
        request = self.wire.verify_request(batch, contexts, question, pid, repair=repair)
        try:
            raw = self._call_tool(request, usage, self.wire.parse_verdicts)
        except Truncated:
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
            got[claim.id] = self.wire.to_verdict(claim, w, contexts)

    # ------------------------------------------------------------------ one call

    def _call_tool(self, request: ChatRequest, usage: Usage, parse: Callable[[Any], Any]) -> Any:
        """One forced tool call (malformed output: one retry), usage accounted, the parsed tool input returned.

        Raises ``Truncated`` on a cut output and ``JudgeOutputError`` when the output is malformed twice.
        """
        last: Exception | None = None
        for attempt in range(2):
            result = self._complete_call(request, usage)
            if result.truncated:
                raise Truncated()
            try:
                return parse(result.input)
            except Malformed as exc:
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

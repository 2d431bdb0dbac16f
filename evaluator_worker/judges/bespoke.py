"""The ``bespoke-minicheck`` judge: Bespoke-MiniCheck-7B behind an OpenAI-compatible server, fed as its authors feed it.

Bespoke-MiniCheck-7B (a grounding verifier at the top of LLM-AggreFact) is served by vLLM or
Ollama. Its authors (Liyan06/MiniCheck, ``minicheck/inference.py`` ``LLMCheck``) give it a fixed
system prompt and ``Document: <chunk>\\nClaim: <claim>`` as the user turn, generate one token,
and read the support probability from the log-probabilities of "Yes" and "No"; the document is
the whole grounding text cut into chunks, the claim's score is the max over chunks. Fed through
the ``openai`` judge's tool-calling prompts instead, the model is asked a question it was never
trained on. This adapter:

- joins the retrieved contexts into one document and cuts it into sentence chunks of at most
  ``chunk_words`` words (claims spanning two adjacent contexts can be supported);
- sends the authors' prompt, ``max_tokens=1``, ``temperature=0``, ``logprobs`` with the top 5;
- support = P(Yes) / (P(Yes) + P(No)) over the first token's top log-probabilities; a server that
  returns no log-probabilities gives 1.0 / 0.0 from the text ("Yes"/"No"), said in the verdict's
  reason (confidence is then coarse);
- SUPPORTED when the best chunk's support >= ``threshold`` (0.5, the authors' cut), else UNSUPPORTED
  (a 2-way verifier: it never says CONTRADICTED);
- HTTP errors map to the openai judge's ``JudgeError`` kinds (429 throttles, 5xx retries, 401/404 stop).

Claims come from the rule-based extraction every offline judge shares. ``claimwatch selfcheck``
checks the model itself on the authors' published example.
"""

from __future__ import annotations

import bisect
import math
import os
from typing import Any, Sequence

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges import http_errors
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.claims import extract_claims, sentence_spans
from evaluator_worker.judges.settings import BespokeSettings

#: the authors' system prompt and user template (the model's trained input format, not claimwatch wording)
SYSTEM_PROMPT = (
    "Determine whether the provided claim is consistent with the corresponding document. Consistency in this "
    "context implies that all information presented in the claim is substantiated by the document. If not, it "
    "should be considered inconsistent. Please assess the claim's consistency with the document by responding "
    'with either "Yes" or "No".'
)
USER_TEMPLATE = "Document: {document}\nClaim: {claim}"
PREFIX = "CLAIMWATCH_BESPOKE__"


def user_prompt(document: str, claim: str) -> str:
    """The user turn the model was trained on."""
    return USER_TEMPLATE.format(document=document, claim=claim)


def chunk_document(contexts: Sequence[str], chunk_words: int) -> list[tuple[int, str]]:
    """(context index the chunk starts in, chunk): the contexts joined by blank lines, cut at sentence ends."""
    starts, parts, at = [], [], 0
    for c in contexts:
        starts.append(at)
        parts.append(c or "")
        at += len(c or "") + 2
    document = "\n\n".join(parts)
    if not document.strip():
        return []
    spans = list(sentence_spans(document)) or [(0, len(document))]
    chunks: list[tuple[int, str]] = []
    begin, words = spans[0][0], 0
    end = spans[0][0]
    for a, b in spans:
        n = len(document[a:b].split())
        if words and words + n > chunk_words:
            chunks.append((bisect.bisect_right(starts, begin) - 1, document[begin:end]))
            begin, words = a, 0
        words += n
        end = b
    chunks.append((bisect.bisect_right(starts, begin) - 1, document[begin:end]))
    return chunks


def support_from_choice(choice: Any) -> tuple[float, bool]:
    """(P(supported), read from log-probabilities?) of one chat completion choice."""
    logprobs = getattr(choice, "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if content:
        first = content[0]
        yes = no = 0.0
        for item in list(getattr(first, "top_logprobs", None) or []) or [first]:
            token = str(getattr(item, "token", "")).strip().lower()
            if token == "yes":
                yes += math.exp(float(item.logprob))
            elif token == "no":
                no += math.exp(float(item.logprob))
        if yes + no > 0:
            return yes / (yes + no), True
    text = str(getattr(getattr(choice, "message", None), "content", "") or "").strip().lower()
    return (1.0 if text.startswith("yes") else 0.0), False


class BespokeMiniCheckJudge(JudgeBase):
    """Bespoke-MiniCheck-7B over an OpenAI-compatible ``/chat/completions`` endpoint. Implements ``Judge``."""

    name = "bespoke-minicheck"

    def __init__(self, settings: BespokeSettings | None = None, client: Any = None) -> None:
        s = settings or BespokeSettings()
        if not s.base_url and client is None:
            raise ConfigError(
                f"the bespoke-minicheck judge needs its server: set {PREFIX}BASE_URL "
                "(e.g. http://vllm:8000/v1 serving bespokelabs/Bespoke-MiniCheck-7B)"
            )
        if s.chunk_words < 50:
            raise ConfigError(f"{PREFIX}CHUNK_WORDS must be >= 50")
        if client is None:
            try:
                import openai
            except ImportError as exc:
                raise ConfigError(
                    "the bespoke-minicheck judge needs the openai package: pip install 'claimwatch[openai]'"
                ) from exc
            key = s.api_key.get_secret_value() if s.api_key else os.environ.get("OPENAI_API_KEY", "not-needed")
            client = openai.OpenAI(
                base_url=s.base_url, api_key=key, timeout=s.timeout_s, max_retries=0
            )  # the flow layer retries
        self.settings = s
        self.client = client

    @property
    def io_bound(self) -> bool:
        return True

    def models(self) -> tuple[str, ...]:
        return (str(self.settings.model),)

    def fingerprint(self) -> dict[str, Any]:
        """The model, the authors' prompt and how documents are cut and scored (judge identity)."""
        from evaluator_worker.judges.fingerprint import source_digest

        s = self.settings.model_dump(mode="json", exclude={"api_key", "base_url", "timeout_s"})
        return {"kind": "bespoke-minicheck", "settings": s, "source": source_digest(BespokeMiniCheckJudge)}

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Atomic claims of ``answer`` (rule-based, no model call)."""
        claims = [
            c if isinstance(c, Claim) else Claim(id=f"c{i + 1}", text=str(c), sentence=i)
            for i, c in enumerate(extract_claims(answer or ""))
        ]
        return Extraction(claims=claims, usage=Usage(model=self.settings.model))

    def support(self, document: str, claim: str, usage: Usage) -> tuple[float, bool]:
        """One call: P(supported) of ``claim`` given ``document`` and whether it came from log-probabilities."""
        from evaluator_worker.judges.openai_compat import map_openai_error

        try:
            out = self.client.chat.completions.create(
                model=self.settings.model,
                messages=[
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": user_prompt(document, claim)},
                ],
                max_tokens=1,
                temperature=0.0,
                logprobs=True,
                top_logprobs=5,
            )
        except Exception as exc:  # the SDK's errors, mapped to the judge error kinds the flow layer retries on
            raise map_openai_error(exc, model=self.settings.model) from exc
        usage.calls += 1
        choices = getattr(out, "choices", None)
        if not isinstance(choices, list) or not choices:  # a proxy's HTML page (the SDK returns a str), no choices
            raise http_errors.bad_response_error(None, None, f"got {type(out).__name__} {str(out)[:80]!r}")
        u = getattr(out, "usage", None)
        usage.input_tokens += int(getattr(u, "prompt_tokens", 0) or 0)
        usage.output_tokens += int(getattr(u, "completion_tokens", 0) or 0)
        return support_from_choice(choices[0])

    def support_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(supported) for each (document, claim) pair, one call each, unchunked (``claimwatch selfcheck``)."""
        usage = Usage(model=self.settings.model)
        return [self.support(document, claim, usage)[0] for document, claim in pairs]

    @property
    def entail_threshold(self) -> float:
        return self.settings.threshold

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: the best chunk's support against ``threshold``."""
        usage = Usage(model=self.settings.model)
        chunks = chunk_document(contexts, self.settings.chunk_words)
        verdicts = []
        for claim in claims:
            if not chunks:
                verdicts.append(
                    ClaimVerdict(
                        claim_id=claim.id,
                        verdict=Verdict.UNSUPPORTED,
                        confidence=1.0,
                        reason="no context to check against",
                    )
                )
                continue
            scored = [(self.support(text, claim.text, usage), i, text) for i, text in chunks]
            (p, from_logprobs), ctx, text = max(scored, key=lambda s: s[0][0])
            how = "P(Yes)" if from_logprobs else "answer text (the server returned no log-probabilities)"
            if p >= self.settings.threshold:
                verdicts.append(
                    ClaimVerdict(
                        claim_id=claim.id,
                        verdict=Verdict.SUPPORTED,
                        evidence=text,
                        context_index=ctx,
                        confidence=p,
                        reason=f"{how} {p:.3f} >= {self.settings.threshold}",
                    )
                )
            else:
                verdicts.append(
                    ClaimVerdict(
                        claim_id=claim.id,
                        verdict=Verdict.UNSUPPORTED,
                        confidence=1 - p,
                        reason=f"best {how} {p:.3f} < {self.settings.threshold}",
                    )
                )
        return Verification(verdicts=verdicts, usage=usage)

"""The ``nli`` judge: a cross-encoder NLI model verifies each claim against each context chunk.

For every claim the judge scores (premise = a chunk, or a sentence window of a
long chunk; hypothesis = the claim) over all chunks, in length-sorted batches,
and keeps the **most favourable** verdict (the SAFE-for-RAG pattern: a claim is
supported if *any* retrieved passage entails it):

- ``SUPPORTED``    if the best entailment probability >= ``entail_threshold``
  (evidence = that window, verbatim; ``context_index`` = its chunk)
- ``CONTRADICTED`` else, if the best contradiction probability >= ``contradict_threshold``
- ``UNSUPPORTED``  otherwise

``confidence`` is the deciding probability: the entailment probability for
SUPPORTED, the contradiction probability for CONTRADICTED, and ``1 - best
entailment`` for UNSUPPORTED (how sure the judge is that nothing entails it).

The model is a Hugging Face model (a hub id or a local directory saved with
``save_pretrained``) behind one of four interfaces (``kind``; ``auto`` reads the config):

- ``nli``: a 3-label NLI cross-encoder (``cross-encoder/nli-deberta-v3-small``, ``facebook/bart-large-mnli``: an
  encoder-decoder with a classification head is an NLI model, not a seq2seq scorer); labels from ``id2label``;
- ``nli2``: a 2-label NLI model (``entailment`` / ``not_entailment``, the ``-2c`` DeBERTa checkpoints): the same
  (premise, claim) pair input, support = P(entailment) read at the index ``id2label`` names, never assumed;
- ``binary``: a 2-label supported / unsupported classifier (MiniCheck-RoBERTa/DeBERTa style);
  input ``premise + eos + claim`` as one sequence, class ``support_label`` is "supported"
  (Liyan06/MiniCheck ``minicheck/inference.py``, ``batch_tokenize`` and ``inference``);
- ``seq2seq``: a Flan-T5 scorer (MiniCheck-Flan-T5): input ``"predict: " + premise + eos + claim``,
  one decoder step from token 0, softmax over the logits of the "unsupported" and "supported"
  tokens (ids 3 and 209 in the T5 vocabulary; same file);
  for both MiniCheck kinds the premises are MiniCheck's: all contexts joined as one document, cut
  into ~400-token sentence chunks, support = the max over chunks (``document="joined"``);
- ``hhem``: Vectara HHEM-2.1-open, loaded with ``trust_remote_code``: its own
  ``predict([(premise, hypothesis), ...])`` returns the consistency score.

Two-way interfaces cannot see contradiction: they give SUPPORTED or UNSUPPORTED only.
Long chunks are windowed by sentences to fit (MiniCheck chunks documents the same way:
sentences packed up to a token budget, the claim checked against every chunk, max support
kept). **The claim is never cut**: the premise's token budget leaves room for the claim, the
special tokens and any prefix (``predict: ``, the eos joiner), windows are clipped to it at
token boundaries, and pairs truncate only the premise; a claim too long to fit beside any
premise gets ``ERROR`` (counted as a judge failure), never a verdict on half a claim.
``kind="auto"`` reads ``architectures`` and ``id2label``; 2-label models whose labels are named
but not understood (e.g. ``positive``/``negative``) are refused at start-up unless
``support_label`` is given. Loads lazily on first use. Needs the ``nli`` extra (torch + transformers).
"""

from __future__ import annotations

import bisect
import os
import threading
from typing import Any, Callable, Mapping, Sequence

from evaluator_worker.errors import ConfigError, JudgeError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.claims import extract_claims
from evaluator_worker.judges.nli_models import (
    KINDS,
    LABEL_NAMES,
    MODEL_HINT,
    LoadedModel,
    binary_support_index,
    detect_kind,
    load_model,
    minicheck_input,
    resolve_labels,
    score_pairs,
    two_label_entailment_index,
    unit,
)
from evaluator_worker.judges.sentences import sentence_window_spans, sentence_windows

__all__ = [
    "NLIJudge",
    "resolve_labels",
    "sentence_windows",
    "LABEL_NAMES",
    "KINDS",
    "detect_kind",
    "binary_support_index",
    "two_label_entailment_index",
    "minicheck_input",
    "too_long_verdicts",
    "merge_verdicts",
]

#: premise tokens a claim must leave room for (less than this: the claim is not judged, not cut)
MIN_PREMISE_TOKENS = 16


class NLIJudge(JudgeBase):
    """Cross-encoder NLI judge (see the module docstring). Implements ``Judge``.

    ``model``: a Hugging Face model id or a local directory. ``device``: ``"cpu"``, ``"cuda"``,
    ``"cuda:1"``, ``"mps"`` or ``"auto"``. ``max_length``: tokens per (premise, claim) pair,
    capped by the tokenizer's own limit; longer chunks are windowed by sentences.
    ``claim_extractor``: ``answer -> [Claim | str]``; defaults to ``evaluator_worker.judges.claims``.
    ``labels``: an explicit ``{"entailment": i, "neutral": j, "contradiction": k}`` for models
    whose config has no usable ``id2label``. ``local_files_only``: never touch the network
    (default: true when ``HF_HUB_OFFLINE`` is set).
    """

    name = "nli"

    def __init__(
        self,
        model: str,
        device: str = "cpu",
        batch_size: int = 16,
        max_length: int = 512,
        entail_threshold: float = 0.5,
        contradict_threshold: float = 0.7,
        claim_extractor: Callable[[str], Sequence[Claim | str]] | None = None,
        *,
        labels: Mapping[str, int] | None = None,
        local_files_only: bool | None = None,
        window_overlap: int = 1,
        kind: str = "auto",
        support_label: int | None = None,
        seq2seq_token_ids: tuple[int, int] = (3, 209),
        document: str = "auto",
        chunk_tokens: int = 400,
    ) -> None:
        _check_options(
            model, batch_size, max_length, (entail_threshold, contradict_threshold), kind, document, chunk_tokens
        )
        self.model_name = str(model)
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        self.entail_threshold = entail_threshold
        self.contradict_threshold = contradict_threshold
        self.claim_extractor = claim_extractor
        self.labels = dict(labels) if labels is not None else None
        if local_files_only is None:
            local_files_only = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}
        self.local_files_only = local_files_only
        self.window_overlap = window_overlap
        self.kind = kind
        #: binary models: the "supported" class; None = read it from id2label (generic LABEL_0/1: 1, as MiniCheck)
        self.support_label = support_label
        #: (unsupported, supported) token ids a seq2seq scorer answers with
        self.seq2seq_token_ids = seq2seq_token_ids
        #: joined: all contexts as one document cut into chunk_tokens pieces (MiniCheck's way: a claim that needs
        #: two adjacent chunks can be supported); per_chunk: each context windowed alone; auto: joined for
        #: the MiniCheck kinds (binary, seq2seq), per_chunk for NLI and HHEM
        self.document = document
        self.chunk_tokens = chunk_tokens
        self._loaded: LoadedModel | None = None
        self._lock = threading.Lock()

    def models(self) -> tuple[str, ...]:
        return (os.path.basename(self.model_name.rstrip("/")) or self.model_name,)

    def fingerprint(self) -> dict[str, Any]:
        """What changes its verdicts (judge identity): the model (a local directory by the SHA-256 of its files, a
        Hugging Face id by name), how it is read, its thresholds and how documents are cut."""
        from evaluator_worker.judges import claims, nli_models, premises, sentences
        from evaluator_worker.judges.fingerprint import dir_digest, source_digest

        local = os.path.isdir(self.model_name)
        return {
            "kind": "nli",
            "model": dir_digest(self.model_name) if local else self.model_name,
            "read_as": [self.kind, self.support_label, self.labels, list(self.seq2seq_token_ids)],
            "thresholds": [self.entail_threshold, self.contradict_threshold],
            "max_length": self.max_length,
            "document": [self.document, self.chunk_tokens, self.window_overlap],
            "claim_extractor": getattr(self.claim_extractor, "__qualname__", None),
            "source": source_digest(NLIJudge, nli_models, premises, sentences, claims),
        }

    # ------------------------------------------------------------------ loading

    def load(self) -> "NLIJudge":
        """Load the model now (it loads on first use otherwise); raises ``ConfigError`` if it can't."""
        self._get()
        return self

    def _get(self) -> LoadedModel:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = load_model(
                        self.model_name,
                        kind=self.kind,
                        device=self.device,
                        max_length=self.max_length,
                        labels=self.labels,
                        support_label=self.support_label,
                        local_files_only=self.local_files_only,
                    )
        return self._loaded

    # ------------------------------------------------------------------ claims

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Atomic claims of ``answer`` (no model call): the injected extractor or ``evaluator_worker.judges.claims``."""
        extractor = self.claim_extractor or _default_extractor()
        items = extractor(answer or "")
        claims = [
            c if isinstance(c, Claim) else Claim(id=f"c{i + 1}", text=str(c), sentence=i) for i, c in enumerate(items)
        ]
        return Extraction(claims=claims, usage=Usage(model=self.model_name))

    # ------------------------------------------------------------------ verification

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: the most favourable over every chunk (window) of ``contexts``."""
        usage = Usage(model=self.model_name)
        if not claims:
            return Verification(verdicts=[], usage=usage)
        loaded = self._get()
        lengths = _counter(loaded.tokenizer)([c.text for c in claims])
        too_long = too_long_verdicts(claims, lengths, loaded.max_length, loaded.special_tokens)
        if too_long:  # judged apart: never cut, never a verdict on part of a claim
            fits = [c for c in claims if c.id not in too_long]
            inner = self.verify(fits, contexts, question) if fits else Verification(verdicts=[], usage=usage)
            return merge_verdicts(claims, inner, too_long)
        windows = self._windows(loaded, max(lengths), contexts)  # [(context_index, text)]
        if not windows:
            verdicts = [
                ClaimVerdict(
                    claim_id=c.id, verdict=Verdict.UNSUPPORTED, confidence=1.0, reason="no context to check against"
                )
                for c in claims
            ]
            return Verification(verdicts=verdicts, usage=usage)
        pairs = [(w, c) for c in range(len(claims)) for w in range(len(windows))]
        probs = self._score(loaded, [windows[w][1] for w, _ in pairs], [claims[c].text for _, c in pairs], usage)
        ent, con = loaded.labels["entailment"], loaded.labels["contradiction"]
        verdicts = []
        n = len(windows)
        for ci, claim in enumerate(claims):
            rows = probs[ci * n : (ci + 1) * n]
            best_e = max(range(n), key=lambda w: rows[w][ent])
            best_c = max(range(n), key=lambda w: rows[w][con]) if con >= 0 else best_e
            pe, pc = rows[best_e][ent], (rows[best_c][con] if con >= 0 else 0.0)
            verdicts.append(self._decide(claim, windows, best_e, pe, best_c, pc))
        return Verification(verdicts=verdicts, usage=usage)

    def support_probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """The model's raw support probability for each (document, claim) pair, fed exactly as in ``verify``
        but unwindowed: P(entailment) for NLI kinds, P(supported) for the verifiers (``claimwatch selfcheck``)."""
        loaded = self._get()
        rows = self._score(loaded, [d for d, _ in pairs], [c for _, c in pairs], Usage(model=self.model_name))
        ent = loaded.labels["entailment"]
        return [unit(row[ent]) for row in rows]

    def _decide(
        self, claim: Claim, windows: list[tuple[int, str]], best_e: int, pe: float, best_c: int, pc: float
    ) -> ClaimVerdict:
        """The SAFE rule: entailment anywhere wins, then contradiction, else unsupported."""
        if pe >= self.entail_threshold:
            ctx, text = windows[best_e]
            return ClaimVerdict(
                claim_id=claim.id,
                verdict=Verdict.SUPPORTED,
                evidence=text,
                context_index=ctx,
                confidence=unit(pe),
                reason=f"entailment {pe:.3f} >= {self.entail_threshold} in context {ctx}",
            )
        if pc >= self.contradict_threshold:
            ctx, text = windows[best_c]
            return ClaimVerdict(
                claim_id=claim.id,
                verdict=Verdict.CONTRADICTED,
                evidence=text,
                context_index=ctx,
                confidence=unit(pc),
                reason=f"contradiction {pc:.3f} >= {self.contradict_threshold} in context {ctx}",
            )
        return ClaimVerdict(
            claim_id=claim.id,
            verdict=Verdict.UNSUPPORTED,
            confidence=unit(1.0 - pe),
            reason=f"best entailment {pe:.3f} < {self.entail_threshold}, best contradiction {pc:.3f} < {self.contradict_threshold}",
        )

    def _windows(self, loaded: LoadedModel, longest_claim: int, contexts: Sequence[str]) -> list[tuple[int, str]]:
        """Every premise to score: whole chunks, or sentence windows of chunks too long for ``max_length``.

        The budget leaves room for the longest claim and every token the input format adds, and each
        window is clipped to it at a token boundary: the tokenizer never has to truncate, so the claim
        is never cut (a single sentence longer than the budget loses its tail, not the claim's).
        """
        count = _counter(loaded.tokenizer)
        budget = loaded.max_length - loaded.special_tokens - longest_claim
        out: list[tuple[int, str]] = []
        if self._joined(loaded):  # MiniCheck: the whole context is one document, cut into ~chunk_tokens pieces
            document, starts = join_contexts(contexts)
            size = min(budget, self.chunk_tokens)
            for a, b in sentence_window_spans(document, size, count, overlap=self.window_overlap):
                out.append(
                    (bisect.bisect_right(starts, a) - 1, clip_to_tokens(document[a:b], budget, loaded.tokenizer))
                )
            return out
        for i, chunk in enumerate(contexts):
            for window in sentence_windows(chunk or "", budget, count, overlap=self.window_overlap):
                out.append((i, clip_to_tokens(window, budget, loaded.tokenizer)))
        return out

    def _joined(self, loaded: LoadedModel) -> bool:
        if self.document == "auto":
            return loaded.kind in ("binary", "seq2seq")
        return self.document == "joined"

    def _score(
        self, loaded: LoadedModel, premises: list[str], hypotheses: list[str], usage: Usage
    ) -> list[list[float]]:
        """Class probabilities per (premise, hypothesis) pair (:func:`~evaluator_worker.judges.nli_models.score_pairs`)."""
        try:
            return score_pairs(
                loaded, premises, hypotheses, usage, batch_size=self.batch_size, seq2seq_ids=self.seq2seq_token_ids
            )
        except RuntimeError as exc:  # out of memory, device errors: the answer's claims become ERROR
            raise JudgeError(f"NLI model {self.model_name!r} failed: {exc}") from exc


#: how contexts become premises (see ``NLIJudge.document``)
DOCUMENT_MODES = ("auto", "joined", "per_chunk")


def too_long_verdicts(
    claims: Sequence[Claim], lengths: Sequence[int], max_length: int, special_tokens: int
) -> dict[str, ClaimVerdict]:
    """ERROR verdicts for the claims that leave a premise under ``MIN_PREMISE_TOKENS`` of the model's input.

    Failure type: a run-on sentence or an unpunctuated list longer than the model reads. Cutting it would
    give a verdict on part of a claim (the unread part unchecked), and a tokenizer asked to cut the premise
    alone raises; so the claim is not judged, and the answer's other claims are.
    """
    room = max_length - special_tokens - MIN_PREMISE_TOKENS
    return {
        c.id: ClaimVerdict(
            claim_id=c.id,
            verdict=Verdict.ERROR,
            confidence=0.0,
            reason=f"claim of {n} tokens does not fit the model's {max_length}-token input beside a premise: "
            "not judged rather than cut",
        )
        for c, n in zip(claims, lengths)
        if n > room
    }


def merge_verdicts(claims: Sequence[Claim], judged: Verification, apart: dict[str, ClaimVerdict]) -> Verification:
    """``judged``'s verdicts and the ones decided ``apart``, in the order of ``claims``."""
    done = {v.claim_id: v for v in judged.verdicts} | apart
    return Verification(verdicts=[done[c.id] for c in claims], usage=judged.usage)


def _check_options(
    model: str,
    batch_size: int,
    max_length: int,
    thresholds: tuple[float, float],
    kind: str,
    document: str,
    chunk_tokens: int,
) -> None:
    """``ConfigError`` for an NLI judge setting out of range (checked at construction, before any model loads)."""
    if not model or not str(model).strip():
        raise ConfigError(f"the nli judge needs a model: {MODEL_HINT}")
    if batch_size < 1:
        raise ConfigError("batch_size must be >= 1")
    if max_length < 16:
        raise ConfigError("max_length must be >= 16 tokens")
    for label, value in zip(("entail_threshold", "contradict_threshold"), thresholds):
        if not 0.0 < value <= 1.0:
            raise ConfigError(f"{label} must be in (0, 1], got {value}")
    if kind not in KINDS:
        raise ConfigError(f"kind {kind!r}: choose one of {', '.join(KINDS)}")
    if document not in DOCUMENT_MODES:
        raise ConfigError(f"document {document!r}: choose one of {', '.join(DOCUMENT_MODES)}")
    if chunk_tokens < 16:
        raise ConfigError("chunk_tokens must be >= 16")


def join_contexts(contexts: Sequence[str]) -> tuple[str, list[int]]:
    """The contexts as one document (blank line between them) and each one's start offset in it."""
    starts, parts, at = [], [], 0
    for chunk in contexts:
        starts.append(at)
        parts.append(chunk or "")
        at += len(chunk or "") + 2
    return "\n\n".join(parts), starts


def _counter(tokenizer: Any) -> Callable[[list[str]], list[int]]:
    """Token counts per text (HHEM tokenizes inside predict(): ~1.5 T5 tokens per word)."""

    def count(texts: list[str]) -> list[int]:
        if not texts:
            return []
        if tokenizer is None:
            return [int(len(t.split()) * 1.5) + 1 for t in texts]
        return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]]

    return count


def clip_to_tokens(text: str, budget: int, tokenizer: Any) -> str:
    """``text`` cut at a token boundary so it holds at most ``budget`` tokens (unchanged when it fits)."""
    if tokenizer is None or budget <= 0:
        return text
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=getattr(tokenizer, "is_fast", False))
    ids = enc["input_ids"]
    if len(ids) <= budget:
        return text
    if "offset_mapping" in enc:
        return text[: enc["offset_mapping"][budget - 1][1]]
    words = text.split()
    while words and len(tokenizer(" ".join(words), add_special_tokens=False)["input_ids"]) > budget:
        words = words[: max(1, len(words) * 9 // 10)] if len(words) > 1 else []
    return " ".join(words)


def _default_extractor() -> Callable[[str], Sequence[Claim | str]]:
    """The rule-based claim extraction every offline judge shares (``claims.extract_claims``)."""
    return extract_claims

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
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from evaluator_worker.errors import ConfigError, JudgeError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.claims import extract_claims, sentence_spans

__all__ = ["NLIJudge", "resolve_labels", "sentence_windows", "LABEL_NAMES"]

#: canonical label -> the id2label spellings that mean it (compared lower-case, letters only)
LABEL_NAMES: dict[str, frozenset[str]] = {
    "entailment": frozenset({"entailment", "entail", "entails", "entailed"}),
    "neutral": frozenset({"neutral"}),
    "contradiction": frozenset({"contradiction", "contradict", "contradicts", "contradicted", "contradictory"}),
}
#: 2-label models: the names of the class that is not entailment (``-2c`` NLI checkpoints)
NOT_ENTAILMENT = frozenset({"notentailment", "nonentailment", "notentailed", "noentailment"})
#: 2-label verifiers (MiniCheck style): the names of the "supported" class and of the other one
SUPPORT_NAMES = frozenset({"supported", "support", "consistent", "faithful", "grounded", "factual"})
NOT_SUPPORT_NAMES = frozenset(
    {
        "unsupported",
        "notsupported",
        "inconsistent",
        "unfaithful",
        "hallucinated",
        "hallucination",
        "ungrounded",
        "nonfactual",
        "notfactual",
    }
)
_GENERIC_LABEL = re.compile(r"^label[01]$")
#: premise tokens a claim must leave room for (less than this: the claim is not judged, not cut)
MIN_PREMISE_TOKENS = 16

_MODEL_HINT = (
    "set CLAIMWATCH_NLI_MODEL to a local directory holding a saved NLI model "
    "(config.json, weights, tokenizer files; e.g. from save_pretrained), or to a Hugging Face id "
    "that is already in the local cache (HF_HOME) when the machine has no network"
)


def resolve_labels(id2label: Mapping[Any, str]) -> dict[str, int]:
    """Map ``{"entailment": i, "contradiction": j, ["neutral": k]}`` from a model config's ``id2label``.

    Accepts any case and order (``ENTAILMENT``, ``Contradiction``, ``neutral`` ...). Raises
    ``ConfigError`` when a label is unknown (e.g. ``LABEL_0``), repeated, or when entailment or
    contradiction is missing: guessing the order would silently invert verdicts.
    """
    found: dict[str, int] = {}
    for raw_id, raw_name in dict(id2label).items():
        key = re.sub(r"[^a-z]", "", str(raw_name).lower())
        canon = next((c for c, names in LABEL_NAMES.items() if key in names), None)
        if canon is None or canon in found:
            problem = f"unknown label {raw_name!r}" if canon is None else f"label {canon!r} appears twice"
            raise ConfigError(
                f"cannot map the NLI model's labels {dict(id2label)!r}: {problem}; expected entailment, "
                "neutral and contradiction (any case/order) in config.json id2label, or pass "
                "labels={'entailment': i, 'neutral': j, 'contradiction': k}"
            )
        found[canon] = int(raw_id)
    missing = [c for c in ("entailment", "contradiction") if c not in found]
    if missing:
        raise ConfigError(f"the NLI model's labels {dict(id2label)!r} lack {', '.join(missing)}")
    return found


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence: ``claims.sentence_spans``, else (text it finds no sentence in) a regex."""
    found = sentence_spans(text)
    if found:
        return list(found)
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    if text[start:].strip():
        spans.append((start, len(text.rstrip())))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def sentence_windows(
    text: str, budget: int, count_tokens: Callable[[list[str]], list[int]], overlap: int = 1
) -> list[str]:
    """Split ``text`` into verbatim windows of whole sentences of at most ``budget`` tokens.

    The whole text is one window when it fits. Otherwise consecutive sentences are packed
    greedily and each next window re-starts ``overlap`` sentences back, so a fact split across
    a boundary is still seen whole. A single sentence longer than the budget is its own window
    (the judge clips it). ``count_tokens`` returns the token count of each string.
    """
    return [text[a:b] for a, b in sentence_window_spans(text, budget, count_tokens, overlap)]


def sentence_window_spans(
    text: str, budget: int, count_tokens: Callable[[list[str]], list[int]], overlap: int = 1
) -> list[tuple[int, int]]:
    """:func:`sentence_windows` as (start, end) character offsets into ``text``."""
    if not text.strip():
        return []
    spans = _sentence_spans(text)
    if not spans:
        return [(0, len(text))]
    counts = count_tokens([text] + [text[a:b] for a, b in spans])
    if counts.pop(0) <= budget:
        return [(0, len(text))]
    windows: list[tuple[int, int]] = []
    i = 0
    while i < len(spans):
        j, used = i, counts[i]
        while j + 1 < len(spans) and used + counts[j + 1] <= budget:
            j += 1
            used += counts[j]
        windows.append((spans[i][0], spans[j][1]))
        if j + 1 >= len(spans):
            break
        i = max(i + 1, j + 1 - overlap)
    return windows


@dataclass
class _Loaded:
    """The model and what was read from it at load time."""

    tokenizer: Any
    model: Any
    torch: Any
    device: Any
    labels: dict[str, int]
    max_length: int
    special_tokens: int
    #: nli | nli2 | binary | seq2seq | hhem (two-way kinds score "supported" only: contradiction index -1)
    kind: str = "nli"
    #: binary: the class index that means supported (from id2label, else the support_label setting)
    support_index: int = 1


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
        if not model or not str(model).strip():
            raise ConfigError(f"the nli judge needs a model: {_MODEL_HINT}")
        if batch_size < 1:
            raise ConfigError("batch_size must be >= 1")
        if max_length < 16:
            raise ConfigError("max_length must be >= 16 tokens")
        for label, value in (("entail_threshold", entail_threshold), ("contradict_threshold", contradict_threshold)):
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"{label} must be in (0, 1], got {value}")
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
        if kind not in KINDS:
            raise ConfigError(f"kind {kind!r}: choose one of {', '.join(KINDS)}")
        self.kind = kind
        #: binary models: the "supported" class; None = read it from id2label (generic LABEL_0/1: 1, as MiniCheck)
        self.support_label = support_label
        #: (unsupported, supported) token ids a seq2seq scorer answers with
        self.seq2seq_token_ids = seq2seq_token_ids
        if document not in DOCUMENT_MODES:
            raise ConfigError(f"document {document!r}: choose one of {', '.join(DOCUMENT_MODES)}")
        if chunk_tokens < 16:
            raise ConfigError("chunk_tokens must be >= 16")
        #: joined: all contexts as one document cut into chunk_tokens pieces (MiniCheck's way: a claim that needs
        #: two adjacent chunks can be supported); per_chunk: each context windowed alone; auto: joined for
        #: the MiniCheck kinds (binary, seq2seq), per_chunk for NLI and HHEM
        self.document = document
        self.chunk_tokens = chunk_tokens
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ loading

    def load(self) -> "NLIJudge":
        """Load the model now (it loads on first use otherwise); raises ``ConfigError`` if it can't."""
        self._get()
        return self

    def _get(self) -> _Loaded:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._load()
        return self._loaded

    def _load(self) -> _Loaded:
        source = os.path.expanduser(self.model_name)
        looks_local = os.path.isabs(source) or source.startswith((".", "~")) or os.path.exists(source)
        if looks_local and not os.path.isdir(source):
            raise ConfigError(f"NLI model directory {source!r} does not exist: {_MODEL_HINT}")
        try:
            import torch
            from transformers import (
                AutoConfig,
                AutoModelForSeq2SeqLM,
                AutoModelForSequenceClassification,
                AutoTokenizer,
            )
        except ImportError as exc:
            raise ConfigError(
                f"the nli judge needs torch and transformers ({exc}); install them with "
                "`pip install 'claimwatch[nli]'` (CPU-only torch: see docs/nli-judge.md)"
            ) from exc
        local = {"local_files_only": self.local_files_only}
        tokenizer: Any
        try:
            config = AutoConfig.from_pretrained(source, trust_remote_code=self.kind == "hhem", **local)
            kind = self.kind if self.kind != "auto" else detect_kind(config)
            if kind == "hhem":  # HHEM brings its own code and tokenization (predict); runs as shipped
                model = _load_remote_code_model(AutoModelForSequenceClassification, source, self.model_name, local)
                tokenizer = None
            else:
                tokenizer = AutoTokenizer.from_pretrained(source, **local)
                auto = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForSequenceClassification
                model = auto.from_pretrained(source, **local)
        except (OSError, ValueError) as exc:
            raise ConfigError(
                f"cannot load NLI model {self.model_name!r} ({type(exc).__name__}: {exc}); {_MODEL_HINT}"
            ) from exc
        if kind not in ("nli", "nli2"):
            device = self._device(torch)
            model.to(device)
            model.eval()
            two_way = {"entailment": 1, "contradiction": -1}
            support = binary_support_index(model.config, self.support_label) if kind == "binary" else 1
            length = self.max_length
            if tokenizer is not None:
                limit = getattr(tokenizer, "model_max_length", None)
                if isinstance(limit, int) and 0 < limit < 100_000:
                    length = min(length, limit)
            special = 2 if tokenizer is None else _single_overhead(tokenizer, kind == "seq2seq")
            return _Loaded(tokenizer, model, torch, device, two_way, length, special, kind, support)
        if kind == "nli2" and self.labels is None:
            labels = {"entailment": two_label_entailment_index(model.config.id2label), "contradiction": -1}
        else:
            labels = dict(self.labels) if self.labels is not None else resolve_labels(model.config.id2label)
        if self.labels is not None:
            need = {"entailment"} if kind == "nli2" else {"entailment", "contradiction"}
            if kind == "nli2":
                labels.setdefault("contradiction", -1)
            if not need <= set(labels) or any(not 0 <= labels[k] < model.config.num_labels for k in need):
                raise ConfigError(
                    f"labels={labels!r} must give {' and '.join(sorted(need))} indices < {model.config.num_labels}"
                )
        device = self._device(torch)
        model.to(device)
        model.eval()
        limit = getattr(tokenizer, "model_max_length", None)
        max_length = self.max_length
        if isinstance(limit, int) and 0 < limit < 100_000:
            max_length = min(max_length, limit)
        positions = getattr(model.config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            max_length = min(max_length, positions)
        special = tokenizer.num_special_tokens_to_add(pair=True)
        return _Loaded(tokenizer, model, torch, device, labels, max_length, special, kind)

    def _device(self, torch: Any) -> Any:
        name = self.device
        if name == "auto":
            if torch.cuda.is_available():
                name = "cuda"
            elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
                name = "mps"
            else:
                name = "cpu"
        try:
            return torch.device(name)
        except (RuntimeError, ValueError) as exc:
            raise ConfigError(f"invalid device {self.device!r}: {exc}") from exc

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
        room = loaded.max_length - loaded.special_tokens - MIN_PREMISE_TOKENS
        too_long = {c.id: n for c, n in zip(claims, lengths) if n > room}
        if too_long:  # judged apart: never cut, never a verdict on part of a claim
            fits = [c for c in claims if c.id not in too_long]
            inner = self.verify(fits, contexts, question) if fits else Verification(verdicts=[], usage=usage)
            done = {v.claim_id: v for v in inner.verdicts}
            for c in claims:
                if c.id in too_long:
                    done[c.id] = ClaimVerdict(
                        claim_id=c.id,
                        verdict=Verdict.ERROR,
                        confidence=0.0,
                        reason=f"claim of {too_long[c.id]} tokens does not fit the model's {loaded.max_length}-token "
                        f"input beside a premise: not judged rather than cut",
                    )
            return Verification(verdicts=[done[c.id] for c in claims], usage=inner.usage)
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
        return [_unit(row[ent]) for row in rows]

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
                confidence=_unit(pe),
                reason=f"entailment {pe:.3f} >= {self.entail_threshold} in context {ctx}",
            )
        if pc >= self.contradict_threshold:
            ctx, text = windows[best_c]
            return ClaimVerdict(
                claim_id=claim.id,
                verdict=Verdict.CONTRADICTED,
                evidence=text,
                context_index=ctx,
                confidence=_unit(pc),
                reason=f"contradiction {pc:.3f} >= {self.contradict_threshold} in context {ctx}",
            )
        return ClaimVerdict(
            claim_id=claim.id,
            verdict=Verdict.UNSUPPORTED,
            confidence=_unit(1.0 - pe),
            reason=f"best entailment {pe:.3f} < {self.entail_threshold}, best contradiction {pc:.3f} < {self.contradict_threshold}",
        )

    def _windows(self, loaded: _Loaded, longest_claim: int, contexts: Sequence[str]) -> list[tuple[int, str]]:
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

    def _joined(self, loaded: _Loaded) -> bool:
        if self.document == "auto":
            return loaded.kind in ("binary", "seq2seq")
        return self.document == "joined"

    def _score(self, loaded: _Loaded, premises: list[str], hypotheses: list[str], usage: Usage) -> list[list[float]]:
        """Class probabilities per (premise, hypothesis) pair, batched by similar length.

        Two-way kinds return ``[p_unsupported, p_supported]`` rows (``labels["entailment"] == 1``);
        ``nli2`` returns the model's own rows, read at its entailment index.
        """
        if loaded.kind not in ("nli", "nli2"):
            return self._score_two_way(loaded, premises, hypotheses, usage)
        torch, tok = loaded.torch, loaded.tokenizer
        order = sorted(range(len(premises)), key=lambda k: len(premises[k]) + len(hypotheses[k]))
        out: list[list[float] | None] = [None] * len(premises)
        try:
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    idx = order[start : start + self.batch_size]
                    enc = tok(  # (premise, claim) order; only the premise may be truncated (it is clipped to fit)
                        [premises[k] for k in idx],
                        [hypotheses[k] for k in idx],
                        padding=True,
                        truncation="only_first",
                        max_length=loaded.max_length,
                        return_tensors="pt",
                    ).to(loaded.device)
                    logits = loaded.model(**enc).logits.float()
                    rows = torch.softmax(logits, dim=-1).cpu().tolist()
                    usage.calls += 1
                    usage.input_tokens += int(enc["attention_mask"].sum())
                    for k, row in zip(idx, rows):
                        out[k] = row
        except RuntimeError as exc:  # out of memory, device errors: the answer's claims become ERROR
            raise JudgeError(f"NLI model {self.model_name!r} failed: {exc}") from exc
        return [row if row is not None else [] for row in out]  # every index is filled by its batch

    def _score_two_way(
        self, loaded: _Loaded, premises: list[str], hypotheses: list[str], usage: Usage
    ) -> list[list[float]]:
        """``[1 - p_support, p_support]`` per pair for the binary, seq2seq and hhem interfaces."""
        torch, tok, model = loaded.torch, loaded.tokenizer, loaded.model
        order = sorted(range(len(premises)), key=lambda k: len(premises[k]) + len(hypotheses[k]))
        out: list[list[float]] = [[] for _ in premises]
        try:
            with torch.inference_mode():
                for start in range(0, len(order), self.batch_size):
                    idx = order[start : start + self.batch_size]
                    if loaded.kind == "hhem":
                        scores = model.predict([(premises[k], hypotheses[k]) for k in idx])
                        support = [float(x) for x in (scores.tolist() if hasattr(scores, "tolist") else scores)]
                    else:
                        texts = [
                            minicheck_input(premises[k], hypotheses[k], _eos(tok), seq2seq=loaded.kind == "seq2seq")
                            for k in idx
                        ]
                        enc = tok(
                            texts, padding=True, truncation=True, max_length=loaded.max_length, return_tensors="pt"
                        ).to(loaded.device)
                        usage.input_tokens += int(enc["attention_mask"].sum())
                        if loaded.kind == "seq2seq":
                            start_ids = torch.zeros(
                                (enc["input_ids"].size(0), 1), dtype=torch.long, device=loaded.device
                            )
                            logits = model(
                                input_ids=enc["input_ids"],
                                attention_mask=enc["attention_mask"],
                                decoder_input_ids=start_ids,
                            ).logits[:, 0, list(self.seq2seq_token_ids)]
                            support = torch.softmax(logits.float(), dim=-1)[:, 1].cpu().tolist()
                        else:
                            probs = torch.softmax(model(**enc).logits.float(), dim=-1)
                            support = probs[:, loaded.support_index].cpu().tolist()
                    usage.calls += 1
                    for k, p in zip(idx, support):
                        out[k] = [1.0 - _unit(p), _unit(p)]
        except RuntimeError as exc:  # out of memory, device errors: the answer's claims become ERROR
            raise JudgeError(f"NLI model {self.model_name!r} failed: {exc}") from exc
        return out


#: the model interfaces the judge drives (see the module docstring)
KINDS = ("auto", "nli", "nli2", "binary", "seq2seq", "hhem")
#: how contexts become premises (see ``NLIJudge.document``)
DOCUMENT_MODES = ("auto", "joined", "per_chunk")


def join_contexts(contexts: Sequence[str]) -> tuple[str, list[int]]:
    """The contexts as one document (blank line between them) and each one's start offset in it."""
    starts, parts, at = [], [], 0
    for chunk in contexts:
        starts.append(at)
        parts.append(chunk or "")
        at += len(chunk or "") + 2
    return "\n\n".join(parts), starts


def _label_key(name: Any) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def detect_kind(config: Any) -> str:
    """The interface a model config implies, from ``architectures`` and ``id2label``.

    HHEM remote code -> ``hhem``; a sequence-classification head -> a classifier even on an
    encoder-decoder (BART-MNLI is NLI, not a seq2seq scorer); an encoder-decoder without one
    (``T5ForConditionalGeneration``, MiniCheck-Flan-T5) -> ``seq2seq``; 2 labels named entailment /
    not-entailment -> ``nli2``; other 2-label models -> ``binary``; else 3-label ``nli``.
    """
    if (
        "hhem" in str(getattr(config, "model_type", "")).lower()
        or "hhem" in str(getattr(config, "auto_map", "")).lower()
    ):
        return "hhem"
    architectures = [str(a) for a in (getattr(config, "architectures", None) or [])]
    classifier = any(a.endswith("ForSequenceClassification") for a in architectures)
    if not classifier and (
        getattr(config, "is_encoder_decoder", False)
        or any(a.endswith("ForConditionalGeneration") for a in architectures)
    ):
        return "seq2seq"
    if getattr(config, "num_labels", 3) != 2:
        return "nli"
    keys = {_label_key(v) for v in dict(getattr(config, "id2label", None) or {}).values()}
    if keys & LABEL_NAMES["entailment"] and keys & (
        NOT_ENTAILMENT | LABEL_NAMES["neutral"] | LABEL_NAMES["contradiction"]
    ):
        return "nli2"
    return "binary"


def two_label_entailment_index(id2label: Mapping[Any, str]) -> int:
    """The entailment class of a 2-label NLI model; ``ConfigError`` when the labels do not say which."""
    hits = [int(i) for i, name in dict(id2label).items() if _label_key(name) in LABEL_NAMES["entailment"]]
    if len(hits) != 1 or len(dict(id2label)) != 2:
        raise ConfigError(
            f"cannot tell the entailment class of the 2-label model's labels {dict(id2label)!r}: pass "
            "labels={'entailment': i}"
        )
    return hits[0]


def binary_support_index(config: Any, support_label: int | None) -> int:
    """The "supported" class of a 2-label verifier: the setting, else ``id2label``'s names, else 1 for generic labels.

    MiniCheck's RoBERTa/DeBERTa checkpoints keep the generic ``LABEL_0``/``LABEL_1`` and read class 1 as
    supported (``minicheck/inference.py``). Labels with other names (a sentiment or topic model) are
    refused: guessing would silently invert verdicts.
    """
    n = int(getattr(config, "num_labels", 2))
    if support_label is not None:
        if not 0 <= support_label < n:
            raise ConfigError(f"support_label {support_label} is not a class of a {n}-label model")
        return support_label
    id2label = {int(i): _label_key(v) for i, v in dict(getattr(config, "id2label", None) or {}).items()}
    support = [i for i, k in id2label.items() if k in SUPPORT_NAMES]
    other = [i for i, k in id2label.items() if k in NOT_SUPPORT_NAMES]
    if len(support) == 1 and len(other) == n - 1:
        return support[0]
    if not id2label or all(_GENERIC_LABEL.match(k) for k in id2label.values()):
        return 1
    raise ConfigError(
        f"cannot tell which of the 2-label model's classes {dict(getattr(config, 'id2label', {}))!r} "
        "means supported: set CLAIMWATCH_NLI_SUPPORT_LABEL (or support_label=) to its index"
    )


def minicheck_input(premise: str, claim: str, eos: str, *, seq2seq: bool = False) -> str:
    """MiniCheck's model input: the document and the claim joined by the tokenizer's eos token
    (``"predict: "`` first for Flan-T5); Liyan06/MiniCheck ``minicheck/inference.py`` ``batch_tokenize``."""
    text = eos.join([premise, claim])
    return "predict: " + text if seq2seq else text


def _completed_post_init(cls: Any) -> Any:
    """``cls`` (a model class shipped as remote code) whose ``__init__`` ends with ``post_init()`` when it did not.

    transformers 5 registers a model's tied weights (``all_tied_weights_keys``, its children's included) in
    ``post_init``; a class written for 4.x that never calls it (HHEM-2.1-open's wrapper around a T5 classifier)
    fails to load (``AttributeError: all_tied_weights_keys``), and patched to an empty mapping it loads the T5
    embedding stored once as missing, i.e. random. Completing the constructor lets transformers tie the
    embedding as the checkpoint intends; the model's file itself is loaded unchanged.
    """
    if getattr(cls, "_claimwatch_post_init", False):
        return cls

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        cls.__init__(self, *args, **kwargs)
        if "all_tied_weights_keys" not in vars(self) and hasattr(self, "post_init"):
            self.post_init()

    return type(
        cls.__name__,
        (cls,),
        {
            "__init__": __init__,
            "_claimwatch_post_init": True,
            "__module__": cls.__module__,
            "__qualname__": cls.__qualname__,
        },
    )


def _remote_class(source: str, local: dict[str, Any]) -> Any:
    """The sequence-classification class a remote-code model's config names (``auto_map``), or None."""
    from transformers import AutoConfig
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    config = AutoConfig.from_pretrained(source, trust_remote_code=True, **local)
    ref = (getattr(config, "auto_map", None) or {}).get("AutoModelForSequenceClassification")
    if not ref:
        return None
    return get_class_from_dynamic_module(ref, source, **local)


def _load_remote_code_model(auto: Any, source: str, name: str, local: dict[str, Any]) -> Any:
    """A ``trust_remote_code`` model (HHEM), or one clear ``ConfigError``: its code failing under this transformers
    version even with its ``post_init`` completed (:func:`_completed_post_init`), or weights left missing (a model
    scoring with randomly initialised weights would give confident nonsense with only a warning)."""
    try:
        cls = _remote_class(source, local)
        loader = auto if cls is None else _completed_post_init(cls)
        model, info = loader.from_pretrained(source, trust_remote_code=True, output_loading_info=True, **local)
    except (OSError, ValueError):
        raise
    except Exception as exc:  # the model's own code: any error it raises is a start-up error, not a traceback
        raise ConfigError(
            f"the model code shipped with {name!r} fails under transformers "
            f"{_transformers_version()} ({type(exc).__name__}: {str(exc)[:200]}); use a transformers "
            "version its authors support, or a model without remote code"
        ) from exc
    missing = [k for k in (info or {}).get("missing_keys", []) if not k.endswith("position_ids")]
    if missing:
        raise ConfigError(
            f"{name!r} loaded with {len(missing)} weight(s) missing (e.g. {missing[0]!r}): it would "
            "score with random weights; re-save the model or use a transformers version that ties "
            "its shared weights"
        )
    return model


def _transformers_version() -> str:
    try:
        import transformers

        return str(transformers.__version__)
    except ImportError:  # pragma: no cover - checked before loading
        return "?"


def _single_overhead(tokenizer: Any, seq2seq: bool) -> int:
    """Tokens a one-sequence verifier input adds around premise and claim: specials, the eos joiner, the prefix."""
    added = tokenizer.num_special_tokens_to_add(pair=False)
    joiner = len(tokenizer(_eos(tokenizer), add_special_tokens=False)["input_ids"])
    prefix = len(tokenizer("predict:", add_special_tokens=False)["input_ids"]) if seq2seq else 0
    return added + joiner + prefix + 1  # +1: a word may tokenize differently at a join


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


def _eos(tokenizer: Any) -> str:
    return str(getattr(tokenizer, "eos_token", None) or getattr(tokenizer, "sep_token", None) or " ")


def _unit(p: float) -> float:
    """Clamp a probability to [0, 1] (float noise can give 1.0000001)."""
    return min(1.0, max(0.0, float(p)))


def _default_extractor() -> Callable[[str], Sequence[Claim | str]]:
    """The rule-based claim extraction every offline judge shares (``claims.extract_claims``)."""
    return extract_claims

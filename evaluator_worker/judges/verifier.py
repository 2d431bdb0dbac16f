"""The ``verifier`` judge: a small cross-encoder trained here (MiniLM-L6, 3 labels), kept in the repository.

Offline by default: the model lives next to this module in a checkout (``judges/models/verifier/``; the
wheel leaves its 23 MB out, so an installed wheel reads ``CLAIMWATCH_VERIFIER_MODEL``): int8 per-row weights
dequantised to float32 at load, the config, the tokenizer files and ``calibration.json`` with the
temperature and thresholds fitted on the dev claims). Trained by ``python3 -m claimwatch.training.train``
(see docs/verifier.md and the model card next to the weights).

For every claim the judge scores (premise = a context chunk, a sentence window of a long chunk,
or all chunks joined when they fit; hypothesis = the claim) in length-sorted batches, divides
the logits by the fitted temperature, and keeps the most favourable verdict, like the ``nli``
judge (whose windowing it reuses):

- ``SUPPORTED``    if the best entailment probability >= ``entail_threshold``
- ``CONTRADICTED`` else, if the best contradiction probability >= ``contradict_threshold``
- ``UNSUPPORTED``  otherwise

``confidence`` is the deciding (temperature-scaled) probability; ``1 - best entailment`` for
UNSUPPORTED. Needs torch and transformers (``pip install 'claimwatch[verifier]'``).
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from evaluator_worker.errors import ConfigError, JudgeError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.claims import extract_claims
from evaluator_worker.judges.nli import merge_verdicts, resolve_labels, too_long_verdicts
from evaluator_worker.judges.premises import PremiseFormat, context_windows, premise_text, question_prefix, rank_windows

__all__ = [
    "VerifierJudge",
    "LoadedVerifier",
    "load_verifier",
    "load_int8_state_dict",
    "decide",
    "require_backend",
    "DEFAULT_MODEL_DIR",
    "WEIGHTS_FILE",
    "SCALE_SUFFIX",
    "CALIBRATION_FILE",
]

DEFAULT_MODEL_DIR = Path(__file__).resolve().parent / "models" / "verifier"
WEIGHTS_FILE = "model.int8.safetensors"
SCALE_SUFFIX = ".__scale__"
CALIBRATION_FILE = "calibration.json"
#: premise + claim tokens when neither the caller nor the model's calibration.json says (the v1 model's)
DEFAULT_MAX_LENGTH = 192
_EXTRA_HINT = "install them with `pip install 'claimwatch[verifier]'` (CPU-only torch: see docs/verifier.md)"


@dataclass
class LoadedVerifier:
    """A loaded model: what ``VerifierJudge`` needs from it (``score`` gives raw logits per pair)."""

    score: Callable[[list[str], list[str]], list[list[float]]]
    count_tokens: Callable[[list[str]], list[int]]
    labels: dict[str, int]
    max_length: int
    special_tokens: int = 3
    calibration: dict[str, float] = field(default_factory=dict)
    name: str = "verifier"


def load_int8_state_dict(path: str | Path) -> dict[str, Any]:
    """Float32 state dict from an int8 per-row file (``name`` int8 rows, ``name + SCALE_SUFFIX`` scales)."""
    import torch
    from safetensors.torch import load_file

    raw = load_file(str(path))
    out: dict[str, Any] = {}
    for name, tensor in raw.items():
        if name.endswith(SCALE_SUFFIX):
            continue
        scale = raw.get(name + SCALE_SUFFIX)
        out[name] = tensor.to(torch.float32) * scale[:, None] if scale is not None else tensor.to(torch.float32)
    return out


def _import_backend() -> tuple[Any, Any]:
    """(torch, transformers), imported on demand."""
    import torch
    import transformers

    return torch, transformers


def require_backend(importer: Callable[[], tuple[Any, Any]] = _import_backend) -> tuple[Any, Any]:
    """(torch, transformers), or a ``ConfigError`` naming the extra to install when they are missing."""
    try:
        return importer()
    except ImportError as exc:
        raise ConfigError(f"the verifier judge needs torch and transformers ({exc}); {_EXTRA_HINT}") from exc


def load_verifier(
    model_dir: str | Path,
    max_length: int | None = None,
    torch_threads: int | None = None,
    importer: Callable[[], tuple[Any, Any]] = _import_backend,
    int8_kernels: bool = False,
) -> LoadedVerifier:
    """Load a verifier directory: int8 (``WEIGHTS_FILE``) or a ``save_pretrained`` fp32 model. Fully offline.

    ``int8_kernels``: run the linear layers with torch's dynamic int8 kernels (weights int8, activations
    quantised per batch) instead of float32: faster on CPU, verdicts can differ slightly (benchmarks/judge_speed.py).
    """
    source = Path(os.path.expanduser(str(model_dir)))
    torch, transformers = require_backend(importer)
    if not source.is_dir() or not (source / "config.json").is_file():
        hint = (
            "; the weights are not in the claimwatch wheel: set CLAIMWATCH_VERIFIER_MODEL to a copy of the "
            "repository's evaluator_worker/judges/models/verifier (the worker image has one at /opt/claimwatch/verifier)"
            if source == DEFAULT_MODEL_DIR
            else ""
        )
        raise ConfigError(f"verifier model directory {str(source)!r} does not exist or has no config.json{hint}")
    AutoConfig, AutoTokenizer = transformers.AutoConfig, transformers.AutoTokenizer
    AutoModelForSequenceClassification = transformers.AutoModelForSequenceClassification
    if torch_threads:
        torch.set_num_threads(torch_threads)
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
        if (source / WEIGHTS_FILE).is_file():
            config = AutoConfig.from_pretrained(str(source), local_files_only=True)
            model = AutoModelForSequenceClassification.from_config(config)
            missing, unexpected = model.load_state_dict(load_int8_state_dict(source / WEIGHTS_FILE), strict=False)
            missing = [k for k in missing if not k.endswith("position_ids")]
            if missing or unexpected:
                raise ConfigError(
                    f"verifier weights in {str(source)!r} do not match its config: missing {missing[:3]}, unexpected {unexpected[:3]}"
                )
        else:
            model = AutoModelForSequenceClassification.from_pretrained(str(source), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load the verifier model from {str(source)!r} ({type(exc).__name__}: {exc})") from exc
    model.eval()
    if int8_kernels:
        model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    labels = resolve_labels(model.config.id2label)
    calibration: dict[str, float] = {}
    if (source / CALIBRATION_FILE).is_file():
        calibration = {
            k: float(v)
            for k, v in json.loads((source / CALIBRATION_FILE).read_text()).items()
            if isinstance(v, (int, float))
        }
    wanted = max_length or int(calibration.get("max_length", DEFAULT_MAX_LENGTH))  # as the model was trained
    limit = min(wanted, int(getattr(model.config, "max_position_embeddings", wanted)))

    def score(premises: list[str], hypotheses: list[str]) -> list[list[float]]:
        enc = tokenizer(
            premises, hypotheses, padding=True, truncation="only_first", max_length=limit, return_tensors="pt"
        )
        with torch.inference_mode():
            rows: list[list[float]] = model(**enc).logits.float().tolist()
            return rows

    def count_tokens(texts: list[str]) -> list[int]:
        return [len(ids) for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]] if texts else []

    return LoadedVerifier(
        score,
        count_tokens,
        labels,
        limit,
        tokenizer.num_special_tokens_to_add(pair=True),
        calibration,
        name=f"verifier:{source.name}",
    )


def softmax(logits: Sequence[float], temperature: float = 1.0) -> list[float]:
    """Softmax of ``logits / temperature``."""
    scaled = [x / temperature for x in logits]
    top = max(scaled)
    exps = [math.exp(x - top) for x in scaled]
    total = sum(exps)
    return [e / total for e in exps]


def decide(
    window_logits: Sequence[Sequence[float]],
    labels: dict[str, int],
    temperature: float,
    entail_threshold: float,
    contradict_threshold: float,
) -> tuple[Verdict, float, int | None, list[float]]:
    """(verdict, confidence, deciding window, that window's probabilities) for one claim over its windows."""
    probs = [softmax(row, temperature) for row in window_logits]
    ent, con = labels["entailment"], labels["contradiction"]
    best_e = max(range(len(probs)), key=lambda w: probs[w][ent])
    best_c = max(range(len(probs)), key=lambda w: probs[w][con])
    pe, pc = probs[best_e][ent], probs[best_c][con]
    if pe >= entail_threshold:
        return Verdict.SUPPORTED, _unit(pe), best_e, probs[best_e]
    if pc >= contradict_threshold:
        return Verdict.CONTRADICTED, _unit(pc), best_c, probs[best_c]
    return Verdict.UNSUPPORTED, _unit(1.0 - pe), None, probs[best_e]


class VerifierJudge(JudgeBase):
    """The trained cross-encoder judge (see the module docstring). Implements ``Judge``.

    ``model_dir``: a verifier directory (default: the shipped one). ``loader``: ``model_dir ->
    LoadedVerifier`` (tests inject a fake; the default imports torch). Thresholds and temperature
    default to the model's ``calibration.json`` (else 0.5 / 0.5 / 1.0). ``join_chunks``: also score
    all chunks joined as one premise when they fit (claims that combine facts from two chunks).
    """

    name = "verifier"

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 8,
        max_length: int | None = None,
        entail_threshold: float | None = None,
        contradict_threshold: float | None = None,
        temperature: float | None = None,
        claim_extractor: Callable[[str], Sequence[Claim | str]] | None = None,
        loader: Callable[[str], LoadedVerifier] | None = None,
        join_chunks: bool = True,
        window_overlap: int = 1,
        torch_threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ConfigError("batch_size must be >= 1")
        if max_length is not None and max_length < 32:
            raise ConfigError("max_length must be >= 32 tokens")
        for label, value in (("entail_threshold", entail_threshold), ("contradict_threshold", contradict_threshold)):
            if value is not None and not 0.0 < value <= 1.0:
                raise ConfigError(f"{label} must be in (0, 1], got {value}")
        if temperature is not None and temperature <= 0:
            raise ConfigError(f"temperature must be > 0, got {temperature}")
        self.model_dir = str(model_dir) if model_dir else str(DEFAULT_MODEL_DIR)
        self.batch_size = batch_size
        self.max_length = max_length
        self._entail = entail_threshold
        self._contradict = contradict_threshold
        self._temperature = temperature
        self.claim_extractor = claim_extractor
        self.join_chunks = join_chunks
        self.window_overlap = window_overlap
        self._loader = loader or (lambda d: load_verifier(d, max_length=max_length, torch_threads=torch_threads))
        self._loaded: LoadedVerifier | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ loading

    def load(self) -> "VerifierJudge":
        """Load the model now (it loads on first use otherwise); raises ``ConfigError`` if it can't."""
        self._get()
        return self

    def _get(self) -> LoadedVerifier:
        if self._loaded is None:
            with self._lock:
                if self._loaded is None:
                    self._loaded = self._loader(self.model_dir)
        return self._loaded

    def models(self) -> tuple[str, ...]:
        """The model directory's name (``verifier`` for the shipped one)."""
        return (Path(self.model_dir).name,)

    def fingerprint(self) -> dict[str, Any]:
        """What changes its verdicts (judge identity): the SHA-256 of the model directory's files (weights,
        tokenizer, its calibration.json), the thresholds set over it, how premises are built, and the source
        of the premise and claim code."""
        from evaluator_worker.judges import claims, premises, sentences
        from evaluator_worker.judges.fingerprint import dir_digest, source_digest

        return {
            "kind": "verifier",
            "model": dir_digest(self.model_dir),
            "thresholds": [self._entail, self._contradict, self._temperature],
            "max_length": self.max_length,
            "join_chunks": self.join_chunks,
            "window_overlap": self.window_overlap,
            "claim_extractor": getattr(self.claim_extractor, "__qualname__", None),
            "source": source_digest(VerifierJudge, premises, sentences, claims),
        }

    @property
    def temperature(self) -> float:
        return self._temperature or self._get().calibration.get("temperature", 1.0)

    @property
    def entail_threshold(self) -> float:
        return self._entail or self._get().calibration.get("entail_threshold", 0.5)

    @property
    def contradict_threshold(self) -> float:
        return self._contradict or self._get().calibration.get("contradict_threshold", 0.5)

    # ------------------------------------------------------------------ claims

    def extract_claims(
        self, answer: str, question: str | None = None, *, contexts: Sequence[str] | None = None
    ) -> Extraction:
        """Atomic claims of ``answer`` (no model call): the injected extractor or ``claims.extract_claims``."""
        items = (self.claim_extractor or extract_claims)(answer or "")
        claims = [
            c if isinstance(c, Claim) else Claim(id=f"c{i + 1}", text=str(c), sentence=i) for i, c in enumerate(items)
        ]
        return Extraction(claims=claims, usage=Usage(model=self.name))

    # ------------------------------------------------------------------ verification

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        """One verdict per claim: the most favourable over every window of ``contexts``."""
        usage = Usage(model=self.name)
        if not claims:
            return Verification(verdicts=[], usage=usage)
        loaded = self._get()
        lengths = loaded.count_tokens([c.text for c in claims])
        too_long = too_long_verdicts(claims, lengths, loaded.max_length, loaded.special_tokens)
        if too_long:  # judged apart: never cut, never a verdict on part of a claim
            fits = [c for c in claims if c.id not in too_long]
            inner = self.verify(fits, contexts, question) if fits else Verification(verdicts=[], usage=usage)
            return merge_verdicts(claims, inner, too_long)
        windows, logits = self.window_logits(claims, contexts, usage, question)
        if not windows:
            return Verification(
                verdicts=[
                    ClaimVerdict(
                        claim_id=c.id, verdict=Verdict.UNSUPPORTED, confidence=1.0, reason="no context to check against"
                    )
                    for c in claims
                ],
                usage=usage,
            )
        verdicts = []
        t, te, tc = self.temperature, self.entail_threshold, self.contradict_threshold
        for claim, scored in zip(claims, logits):
            verdict, conf, w, probs = decide([row for _, row in scored], loaded.labels, t, te, tc)
            ctx, text = windows[scored[w][0]] if w is not None else (None, None)
            ent, con = probs[loaded.labels["entailment"]], probs[loaded.labels["contradiction"]]
            verdicts.append(
                ClaimVerdict(
                    claim_id=claim.id,
                    verdict=verdict,
                    confidence=conf,
                    evidence=text,
                    context_index=ctx if ctx is not None and ctx >= 0 else None,  # -1: all chunks joined
                    reason=f"verifier: entailment {ent:.3f}, contradiction {con:.3f} (T={t:.2f}, thresholds {te:.2f}/{tc:.2f})",
                )
            )
        return Verification(verdicts=verdicts, usage=usage)

    def window_logits(
        self, claims: Sequence[Claim], contexts: Sequence[str], usage: Usage | None = None, question: str | None = None
    ) -> tuple[list[tuple[int, str]], list[list[tuple[int, list[float]]]]]:
        """(windows as (context_index, text), per claim the (window index, raw logits) of each window it was scored on).

        ``context_index`` -1 = all chunks joined. The model's premise format decides which windows a claim
        is scored on (all, or its ``top_k`` by content words) and whether the question opens the premise.
        """
        loaded = self._get()
        fmt = PremiseFormat.from_calibration(loaded.calibration)
        asked = question if fmt.with_question else None
        windows = self._windows(loaded, claims, contexts, asked, fmt)
        if not windows:
            return [], [[] for _ in claims]
        chosen = [self._chosen(claim.text, windows, fmt.top_k) for claim in claims]
        pairs = [(c, w) for c, ws in enumerate(chosen) for w in ws]
        flat = self._score(
            loaded, [premise_text(asked, windows[w][1]) for _, w in pairs], [claims[c].text for c, _ in pairs], usage
        )
        out: list[list[tuple[int, list[float]]]] = [[] for _ in claims]
        for (c, w), row in zip(pairs, flat):
            out[c].append((w, row))
        return windows, out

    @staticmethod
    def _chosen(claim: str, windows: Sequence[tuple[int, str]], top_k: int) -> list[int]:
        """Indices of the windows one claim is scored on: all, or its ``top_k`` ranked by content words."""
        if top_k <= 0 or len(windows) <= top_k:
            return list(range(len(windows)))
        return sorted(rank_windows(claim, [w for _, w in windows])[:top_k])

    def _windows(
        self,
        loaded: LoadedVerifier,
        claims: Sequence[Claim],
        contexts: Sequence[str],
        question: str | None = None,
        fmt: PremiseFormat | None = None,
    ) -> list[tuple[int, str]]:
        """Whole chunks, sentence windows of long chunks, and (``join_chunks``, v1 models) all chunks joined when they fit."""
        fmt = fmt or PremiseFormat.from_calibration(loaded.calibration)
        longest_claim = max(loaded.count_tokens([c.text for c in claims]) or [0])
        prefix = sum(loaded.count_tokens([question_prefix(question)])) if question else 0
        budget = max(loaded.max_length - loaded.special_tokens - longest_claim - prefix, loaded.max_length // 4)
        out = context_windows(contexts, budget, loaded.count_tokens, overlap=self.window_overlap)
        texts = [c for c in contexts if c and c.strip()]
        if self.join_chunks and fmt.top_k == 0 and len(texts) > 1:
            joined = " ".join(t.strip() for t in texts)
            if sum(loaded.count_tokens([joined])) <= budget:
                out.append((-1, joined))
        return out

    def _score(
        self, loaded: LoadedVerifier, premises: list[str], hypotheses: list[str], usage: Usage | None
    ) -> list[list[float]]:
        """Raw logits per (premise, hypothesis) pair, in batches of similar length."""
        order = sorted(range(len(premises)), key=lambda k: len(premises[k]) + len(hypotheses[k]))
        out: list[list[float]] = [[] for _ in premises]
        try:
            for start in range(0, len(order), self.batch_size):
                idx = order[start : start + self.batch_size]
                rows = loaded.score([premises[k] for k in idx], [hypotheses[k] for k in idx])
                if usage is not None:
                    usage.calls += 1
                    usage.input_tokens += sum(loaded.count_tokens([premises[k] + " " + hypotheses[k] for k in idx]))
                for k, row in zip(idx, rows):
                    out[k] = list(row)
        except RuntimeError as exc:  # out of memory and the like: the answer's claims become ERROR
            raise JudgeError(f"verifier model failed: {exc}") from exc
        return out


def _unit(p: float) -> float:
    """Clamp a probability to [0, 1]."""
    return min(1.0, max(0.0, float(p)))

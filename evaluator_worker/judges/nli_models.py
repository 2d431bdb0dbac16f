"""What an NLI-family model is and how it loads: the interfaces (:data:`KINDS`), label reading, remote code.

:func:`load_model` loads a Hugging Face model (a hub id or a local directory) behind one of the
interfaces the ``nli`` judge drives (see :mod:`evaluator_worker.judges.nli`) and reads what scoring
needs from it (:class:`LoadedModel`: labels, token budget, special tokens, the support class). Labels are
read from ``id2label``, never guessed: a model whose labels do not say which class is which is refused
at start-up. Needs the ``nli`` extra (torch + transformers), imported only when a model loads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Mapping

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Usage

__all__ = [
    "KINDS",
    "LABEL_NAMES",
    "MODEL_HINT",
    "LoadedModel",
    "binary_support_index",
    "detect_kind",
    "load_model",
    "minicheck_input",
    "score_pairs",
    "pick_device",
    "resolve_labels",
    "two_label_entailment_index",
]


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


MODEL_HINT = (
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


@dataclass
class LoadedModel:
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


#: the model interfaces the judge drives (see the module docstring)
KINDS = ("auto", "nli", "nli2", "binary", "seq2seq", "hhem")


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
    joiner = len(tokenizer(eos_token(tokenizer), add_special_tokens=False)["input_ids"])
    prefix = len(tokenizer("predict:", add_special_tokens=False)["input_ids"]) if seq2seq else 0
    return added + joiner + prefix + 1  # +1: a word may tokenize differently at a join


def eos_token(tokenizer: Any) -> str:
    return str(getattr(tokenizer, "eos_token", None) or getattr(tokenizer, "sep_token", None) or " ")


def load_model(
    model_name: str,
    *,
    kind: str = "auto",
    device: str = "cpu",
    max_length: int = 512,
    labels: Mapping[str, int] | None = None,
    support_label: int | None = None,
    local_files_only: bool = False,
) -> LoadedModel:
    """Load a model of one of :data:`KINDS` (``auto``: from its config) and read what scoring needs from it.

    Raises ``ConfigError`` with a hint when it cannot be loaded, its labels do not say which class is which,
    or the device is unknown.
    """
    source = os.path.expanduser(model_name)
    looks_local = os.path.isabs(source) or source.startswith((".", "~")) or os.path.exists(source)
    if looks_local and not os.path.isdir(source):
        raise ConfigError(f"NLI model directory {source!r} does not exist: {MODEL_HINT}")
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
    local = {"local_files_only": local_files_only}
    tokenizer: Any
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=kind == "hhem", **local)
        kind = kind if kind != "auto" else detect_kind(config)
        if kind == "hhem":  # HHEM brings its own code and tokenization (predict); runs as shipped
            model = _load_remote_code_model(AutoModelForSequenceClassification, source, model_name, local)
            tokenizer = None
        else:
            tokenizer = AutoTokenizer.from_pretrained(source, **local)
            auto = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForSequenceClassification
            model = auto.from_pretrained(source, **local)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot load NLI model {model_name!r} ({type(exc).__name__}: {exc}); {MODEL_HINT}") from exc
    if kind not in ("nli", "nli2"):
        device = pick_device(device, torch)
        model.to(device)
        model.eval()
        two_way = {"entailment": 1, "contradiction": -1}
        support = binary_support_index(model.config, support_label) if kind == "binary" else 1
        length = max_length
        if tokenizer is not None:
            limit = getattr(tokenizer, "model_max_length", None)
            if isinstance(limit, int) and 0 < limit < 100_000:
                length = min(length, limit)
        special = 2 if tokenizer is None else _single_overhead(tokenizer, kind == "seq2seq")
        return LoadedModel(tokenizer, model, torch, device, two_way, length, special, kind, support)
    if kind == "nli2" and labels is None:
        labels = {"entailment": two_label_entailment_index(model.config.id2label), "contradiction": -1}
    else:
        labels = dict(labels) if labels is not None else resolve_labels(model.config.id2label)
    if labels is not None:
        need = {"entailment"} if kind == "nli2" else {"entailment", "contradiction"}
        if kind == "nli2":
            labels.setdefault("contradiction", -1)
        if not need <= set(labels) or any(not 0 <= labels[k] < model.config.num_labels for k in need):
            raise ConfigError(
                f"labels={labels!r} must give {' and '.join(sorted(need))} indices < {model.config.num_labels}"
            )
    device = pick_device(device, torch)
    model.to(device)
    model.eval()
    limit = getattr(tokenizer, "model_max_length", None)
    max_length = max_length
    if isinstance(limit, int) and 0 < limit < 100_000:
        max_length = min(max_length, limit)
    positions = getattr(model.config, "max_position_embeddings", None)
    if isinstance(positions, int) and positions > 0:
        max_length = min(max_length, positions)
    special = tokenizer.num_special_tokens_to_add(pair=True)
    return LoadedModel(tokenizer, model, torch, device, labels, max_length, special, kind)


def pick_device(name: str, torch: Any) -> Any:
    """The torch device for ``name`` (``auto``: CUDA, else MPS, else CPU); ``ConfigError`` when unknown."""
    wanted = name
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
        raise ConfigError(f"invalid device {wanted!r}: {exc}") from exc


def minicheck_input(premise: str, claim: str, eos: str, *, seq2seq: bool = False) -> str:
    """MiniCheck's model input: the document and the claim joined by the tokenizer's eos token
    (``"predict: "`` first for Flan-T5); Liyan06/MiniCheck ``minicheck/inference.py`` ``batch_tokenize``."""
    text = eos.join([premise, claim])
    return "predict: " + text if seq2seq else text


def unit(p: float) -> float:
    """Clamp a probability to [0, 1] (float noise can give 1.0000001)."""
    return min(1.0, max(0.0, float(p)))


def score_pairs(
    loaded: LoadedModel,
    premises: list[str],
    hypotheses: list[str],
    usage: Usage,
    *,
    batch_size: int,
    seq2seq_ids: tuple[int, int] = (3, 209),
) -> list[list[float]]:
    """Class probabilities per (premise, hypothesis) pair, batched by similar length (``usage`` counts batches
    and tokens; a device error raises ``RuntimeError``).

    Two-way kinds return ``[p_unsupported, p_supported]`` rows (``labels["entailment"] == 1``);
    ``nli2`` returns the model's own rows, read at its entailment index.
    """
    if loaded.kind not in ("nli", "nli2"):
        return _score_two_way(loaded, premises, hypotheses, usage, batch_size, seq2seq_ids)
    torch, tok = loaded.torch, loaded.tokenizer
    order = sorted(range(len(premises)), key=lambda k: len(premises[k]) + len(hypotheses[k]))
    out: list[list[float] | None] = [None] * len(premises)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
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
    return [row if row is not None else [] for row in out]  # every index is filled by its batch


def _score_two_way(
    loaded: LoadedModel,
    premises: list[str],
    hypotheses: list[str],
    usage: Usage,
    batch_size: int,
    seq2seq_ids: tuple[int, int],
) -> list[list[float]]:
    """``[1 - p_support, p_support]`` per pair for the binary, seq2seq and hhem interfaces."""
    torch, tok, model = loaded.torch, loaded.tokenizer, loaded.model
    order = sorted(range(len(premises)), key=lambda k: len(premises[k]) + len(hypotheses[k]))
    out: list[list[float]] = [[] for _ in premises]
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start : start + batch_size]
            if loaded.kind == "hhem":
                scores = model.predict([(premises[k], hypotheses[k]) for k in idx])
                support = [float(x) for x in (scores.tolist() if hasattr(scores, "tolist") else scores)]
            else:
                texts = [
                    minicheck_input(premises[k], hypotheses[k], eos_token(tok), seq2seq=loaded.kind == "seq2seq")
                    for k in idx
                ]
                enc = tok(texts, padding=True, truncation=True, max_length=loaded.max_length, return_tensors="pt").to(
                    loaded.device
                )
                usage.input_tokens += int(enc["attention_mask"].sum())
                if loaded.kind == "seq2seq":
                    start_ids = torch.zeros((enc["input_ids"].size(0), 1), dtype=torch.long, device=loaded.device)
                    logits = model(
                        input_ids=enc["input_ids"],
                        attention_mask=enc["attention_mask"],
                        decoder_input_ids=start_ids,
                    ).logits[:, 0, list(seq2seq_ids)]
                    support = torch.softmax(logits.float(), dim=-1)[:, 1].cpu().tolist()
                else:
                    probs = torch.softmax(model(**enc).logits.float(), dim=-1)
                    support = probs[:, loaded.support_index].cpu().tolist()
            usage.calls += 1
            for k, p in zip(idx, support):
                out[k] = [1.0 - unit(p), unit(p)]
    return out

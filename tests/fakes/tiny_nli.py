"""A tiny, real NLI cross-encoder with hand-set weights, for testing ``NLIJudge`` offline.

``build_tiny_nli(directory)`` saves a genuine ``BertForSequenceClassification``
(2 layers, hidden 96, 2 heads) and a lower-casing WordPiece tokenizer built from
a vocab file, with ``save_pretrained``: the judge loads it through the same
public path a user does (a local directory). No training, so it builds in well
under a second and its predictions are exact and deterministic.

Its toy semantics, computed by real attention over (premise, hypothesis):

- the hypothesis's *property word* (``open``, ``hot``, ``wet``, ... see ``ANTONYMS``)
  appears in the premise -> **entailment** (p ~ 0.95)
- its antonym (``closed``, ``cold``, ``dry``, ...) appears in the premise -> **contradiction**
- neither appears -> **neutral**

How: layer 1 lets [CLS] gather the hypothesis's property words (attention on
segment 1); layer 2 lets [CLS] attend to premise tokens equal to (head A) or
the antonym of (head B) a gathered word, with [CLS]/[SEP] as an attention sink
when nothing matches; the heads write "entail"/"contradict" features that the
pooler and classifier turn into logits. Every hidden vector is kept zero-mean
(each used dimension has a negated mirror) so LayerNorm only rescales.
Words outside the vocabulary become [UNK] and count for nothing.
"""

from __future__ import annotations

from pathlib import Path

#: property word -> antonym (both directions are added)
ANTONYMS = {
    "open": "closed",
    "hot": "cold",
    "wet": "dry",
    "full": "empty",
    "early": "late",
    "fast": "slow",
    "up": "down",
    "big": "small",
}
PROPERTIES = [w for pair in ANTONYMS.items() for w in pair]
FUNCTION_WORDS = [
    ".",
    ",",
    "the",
    "a",
    "it",
    "is",
    "was",
    "and",
    "door",
    "road",
    "cup",
    "train",
    "shop",
    "price",
    "today",
    "we",
    "like",
    "park",
    "weather",
    "town",
    "note",
    "this",
    "people",
    "walk",
    "in",
    "very",
]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
#: the label order of the saved model unless ``order`` says otherwise
LABELS = ["entailment", "neutral", "contradiction"]
MAX_POSITIONS = 512

_HALF = 48  # real dimensions; dims _HALF.. mirror them negated
_HIDDEN = 2 * _HALF
_CLS, _SINK, _SEG1, _E, _C, _FILL = 0, 1, 2, 3, 4, 5
_WORD0 = 6  # one dim per property word
_GATHER0 = _WORD0 + len(PROPERTIES)  # where layer 1 copies the hypothesis's property words


def antonym(word: str) -> str:
    """The opposite property word (``open`` <-> ``closed``)."""
    for a, b in ANTONYMS.items():
        if word == a:
            return b
        if word == b:
            return a
    raise KeyError(word)


def vocabulary() -> list[str]:
    """Every token, specials first (the list order is the token ids)."""
    return SPECIAL + FUNCTION_WORDS + PROPERTIES


def build_tiny_nli(
    directory: str | Path, *, order: list[str] | None = None, labels: dict[int, str] | None = None
) -> Path:
    """Save the toy cross-encoder (model + tokenizer) to ``directory`` and return it.

    ``order`` permutes the output labels (e.g. ``["CONTRADICTION", "Entailment", "neutral"]``):
    id2label and the classifier rows are reordered together, so predictions mean the same
    thing under another label mapping. ``labels`` overrides id2label afterwards without
    touching the weights (to build models whose labels cannot be mapped, e.g. LABEL_0).
    """
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    order = list(order or LABELS)
    if sorted(x.lower() for x in order) != sorted(LABELS):
        raise ValueError(f"order must be a permutation of {LABELS} (any case)")
    config = BertConfig(
        vocab_size=len(vocabulary()),
        hidden_size=_HIDDEN,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=8,
        max_position_embeddings=MAX_POSITIONS,
        type_vocab_size=2,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        num_labels=3,
    )
    labels = dict(labels) if labels is not None else dict(enumerate(order))
    config.id2label = labels
    config.label2id = {name: i for i, name in labels.items()}
    model = BertForSequenceClassification(config)
    with torch.no_grad():
        _set_weights(model, [x.lower() for x in order])
    model.eval()
    model.save_pretrained(directory)
    _tokenizer(directory).save_pretrained(directory)
    return directory


def _tokenizer(directory: Path):
    """A lower-casing WordPiece tokenizer over ``vocabulary()``, built from a vocab file."""
    import transformers
    from transformers import BertTokenizerFast

    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(vocabulary()) + "\n", encoding="utf-8")
    if int(transformers.__version__.split(".")[0]) < 5:
        return BertTokenizerFast(vocab_file=str(vocab_file), do_lower_case=True, model_max_length=MAX_POSITIONS)
    # transformers 5: the tokenizers-backed class takes the vocabulary itself
    words = vocab_file.read_text(encoding="utf-8").split("\n")
    vocab = {w: i for i, w in enumerate(w for w in words if w)}
    return BertTokenizerFast(vocab=vocab, do_lower_case=True, model_max_length=MAX_POSITIONS)


def _put(matrix, row: int, col: int, value: float) -> None:
    """Write ``value`` to output ``row`` (and ``-value`` to its mirror) of a hidden-size output."""
    matrix[row, col] = value
    matrix[row + _HALF, col] = -value


def _set_weights(model, order: list[str]) -> None:
    """Hand-set every weight (see the module docstring for what they compute)."""
    for p in model.parameters():
        p.zero_()
    vocab = {w: i for i, w in enumerate(vocabulary())}
    emb = model.bert.embeddings
    word = emb.word_embeddings.weight  # (vocab, hidden): rows are tokens
    for tok in ("[CLS]",):
        word[vocab[tok], _CLS], word[vocab[tok], _CLS + _HALF] = 1.0, -1.0
    for tok in ("[CLS]", "[SEP]"):
        word[vocab[tok], _SINK], word[vocab[tok], _SINK + _HALF] = 1.0, -1.0
    for i, w in enumerate(PROPERTIES):
        word[vocab[w], _WORD0 + i], word[vocab[w], _WORD0 + i + _HALF] = 1.0, -1.0
    for w in ["[UNK]", *FUNCTION_WORDS]:  # one active dim per token keeps LayerNorm scales equal
        word[vocab[w], _FILL], word[vocab[w], _FILL + _HALF] = 1.0, -1.0
    seg = emb.token_type_embeddings.weight
    seg[1, _SEG1], seg[1, _SEG1 + _HALF] = 1.0, -1.0
    emb.LayerNorm.weight.fill_(1.0)

    hd = _HIDDEN // 2  # head size; head A = outputs [0, hd), head B = [hd, 2 hd)
    n = len(PROPERTIES)
    # layer 1: [CLS] attends to segment-1 tokens and copies their property words into GATHER dims
    att = model.bert.encoder.layer[0].attention
    att.self.query.weight[0, _CLS] = 3.0
    att.self.key.weight[0, _SEG1] = 3.0
    for i in range(n):
        att.self.value.weight[i, _WORD0 + i] = 1.0
        _put(att.output.dense.weight, _GATHER0 + i, i, 4.0)
    # layer 2: head A matches the same word, head B the antonym; [CLS]/[SEP] are the sink
    att = model.bert.encoder.layer[1].attention
    q, k, v = att.self.query.weight, att.self.key.weight, att.self.value.weight
    for base, same in ((0, True), (hd, False)):
        for i, w in enumerate(PROPERTIES):
            q[base + i, _GATHER0 + i] = 6.0
            j = i if same else PROPERTIES.index(antonym(w))
            k[base + i, _WORD0 + j] = 6.0
            v[base, _WORD0 + i] = 1.0
        q[base + n, _CLS] = 2.0
        k[base + n, _SINK] = 2.0
        k[base + n, _SEG1] = -20.0  # hypothesis tokens are never attended to
    _put(att.output.dense.weight, _E, 0, 4.0)
    _put(att.output.dense.weight, _C, hd, 4.0)
    for layer in model.bert.encoder.layer:
        layer.attention.output.LayerNorm.weight.fill_(1.0)
        layer.output.LayerNorm.weight.fill_(1.0)  # feed-forward weights stay zero: identity
    # pooler + classifier: E -> entailment logit, C -> contradiction logit, neutral = bias
    model.bert.pooler.dense.weight[0, _E] = 1.0
    model.bert.pooler.dense.weight[1, _C] = 1.0
    logits = {"entailment": (0, 6.0, 0.0), "contradiction": (1, 6.0, 0.0), "neutral": (None, 0.0, 3.0)}
    for row, name in enumerate(order):
        col, weight, bias = logits[name]
        if col is not None:
            model.classifier.weight[row, col] = weight
        model.classifier.bias[row] = bias

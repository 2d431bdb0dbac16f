"""Tiny randomly initialised models behind each verifier interface the ``nli`` judge drives.

Same architectures and interfaces as the real ones, at toy size, saved with
``save_pretrained`` into a local directory (the path a user takes):

- ``build_binary``: ``RobertaForSequenceClassification`` with 2 labels (MiniCheck-RoBERTa's shape);
- ``build_seq2seq``: ``T5ForConditionalGeneration`` with a vocabulary holding ids 3 and 209
  (the tokens MiniCheck-Flan-T5 answers with);
- ``build_hhem``: a remote-code model (``auto_map`` + a modeling file, loaded with
  ``trust_remote_code``) whose ``predict(pairs)`` returns consistency scores, as HHEM-2.1-open's does.

The tokenizer is a WordPiece vocabulary with ``</s>`` as its eos token, so the MiniCheck input
``premise </s> claim`` tokenizes as it does for the real models. Weights are random (seeded):
tests check the interface, the input format and the aggregation, not accuracy.
"""

from __future__ import annotations

import json
from pathlib import Path

WORDS = (
    "the a is was it in of and to on at by for with from this that tower bridge city river opened closed built "
    "completed designed tall metres years old new year park museum door road shop price today people painted gold "
    "red blue green one two three four five six seven eight nine ten paris london rome 1889 1937 1900 . , : predict"
).split()
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "</s>"]

HHEM_CODE = '''"""A toy stand-in with HHEM-2.1-open's interface: predict([(premise, hypothesis)]) -> scores."""
import torch
from transformers import PretrainedConfig, PreTrainedModel


class TinyHHEMConfig(PretrainedConfig):
    model_type = "tiny-hhem"


class TinyHHEM(PreTrainedModel):
    config_class = TinyHHEMConfig

    def __init__(self, config):
        super().__init__(config)
        self.scale = torch.nn.Parameter(torch.ones(1))
        self.post_init()

    def forward(self, *args, **kwargs):
        raise NotImplementedError("use predict()")

    def predict(self, text_pairs):
        """Share of the hypothesis's words found in the premise (a tensor, like HHEM's)."""
        out = []
        for premise, hypothesis in text_pairs:
            seen = set(premise.lower().replace(".", " ").split())
            words = hypothesis.lower().replace(".", " ").split()
            out.append(sum(w in seen for w in words) / max(1, len(words)))
        return torch.tensor(out) * self.scale
'''


def _tokenizer(directory: Path):
    """A working WordPiece tokenizer over ``WORDS`` (transformers 5 ignores ``vocab_file``: every word was [UNK])."""
    import transformers
    from transformers import BertTokenizerFast

    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(SPECIAL + WORDS) + "\n", encoding="utf-8")
    if int(transformers.__version__.split(".")[0]) < 5:
        tok = BertTokenizerFast(vocab_file=str(vocab_file), eos_token="</s>", model_max_length=128)
    else:
        vocab = {w: i for i, w in enumerate(SPECIAL + WORDS)}
        tok = BertTokenizerFast(vocab=vocab, eos_token="</s>", model_max_length=128)
    tok.save_pretrained(directory)
    return tok


def build_binary(directory: Path, seed: int = 0) -> Path:
    """A 2-label RoBERTa classifier (random weights) and its tokenizer."""
    import torch
    from transformers import RobertaConfig, RobertaForSequenceClassification

    directory.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(directory)
    torch.manual_seed(seed)
    config = RobertaConfig(
        vocab_size=len(tok),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=140,
        num_labels=2,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=5,
        id2label={0: "unsupported", 1: "supported"},
        label2id={"unsupported": 0, "supported": 1},
    )
    RobertaForSequenceClassification(config).save_pretrained(directory)
    return directory


def build_seq2seq(directory: Path, seed: int = 0) -> Path:
    """A T5 encoder-decoder (random weights) whose vocabulary covers ids 3 and 209, and its tokenizer."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    directory.mkdir(parents=True, exist_ok=True)
    _tokenizer(directory)
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=256,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=5,
    )
    T5ForConditionalGeneration(config).save_pretrained(directory)
    return directory


def build_classifier(directory: Path, id2label: dict[int, str], *, bart: bool = False, seed: int = 0) -> Path:
    """A sequence-pair classifier (random weights) with the given labels: BERT, or BART (an encoder-decoder with a
    classification head, as facebook/bart-large-mnli) when ``bart``."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    tok = _tokenizer(directory)
    torch.manual_seed(seed)
    labels = {"id2label": id2label, "label2id": {v: k for k, v in id2label.items()}}
    if bart:
        from transformers import BartConfig, BartForSequenceClassification

        # BART pools the hidden state at the last eos: the WordPiece [SEP] closes every pair, so it is the eos here
        config = BartConfig(
            vocab_size=len(tok),
            d_model=32,
            encoder_layers=1,
            decoder_layers=1,
            encoder_attention_heads=2,
            decoder_attention_heads=2,
            encoder_ffn_dim=64,
            decoder_ffn_dim=64,
            max_position_embeddings=140,
            pad_token_id=0,
            bos_token_id=2,
            eos_token_id=3,
            decoder_start_token_id=3,
            **labels,
        )
        BartForSequenceClassification(config).save_pretrained(directory)
    else:
        from transformers import BertConfig, BertForSequenceClassification

        config = BertConfig(
            vocab_size=len(tok),
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=140,
            **labels,
        )
        BertForSequenceClassification(config).save_pretrained(directory)
    return directory


HHEM_T5_CODE = '''"""A toy with HHEM-2.1-open's shape: a T5 token classifier inside a wrapper, predict() on (premise, hypothesis)."""
import torch
from transformers import AutoConfig, AutoTokenizer, PretrainedConfig, PreTrainedModel, T5ForTokenClassification


class TinyHHEMT5Config(PretrainedConfig):
    model_type = "tiny-hhem-t5"

    def __init__(self, foundation=None, **kwargs):
        super().__init__(**kwargs)
        self.foundation = foundation


class TinyHHEMT5(PreTrainedModel):
    config_class = TinyHHEMT5Config

    def __init__(self, config):
        super().__init__(config)
        self.t5 = T5ForTokenClassification(AutoConfig.from_pretrained(config.foundation))
        self.tokenizer = AutoTokenizer.from_pretrained(config.foundation)

    def forward(self, *args, **kwargs):
        raise NotImplementedError("use predict()")

    def predict(self, text_pairs):
        texts = [f"premise: {p} hypothesis: {h}" for p, h in text_pairs]
        enc = self.tokenizer(texts, return_tensors="pt", padding=True)
        with torch.no_grad():
            logits = self.t5(**enc).logits[:, 0, :]
        return torch.softmax(logits, dim=-1)[:, 1]
'''


def _remote_code(directory: Path, name: str, code: str):
    """Write a model's remote-code file into ``directory`` and import it (to build and save the model)."""
    import importlib.util

    path = directory / f"{name}.py"
    path.write_text(code, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"{name}_build", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_hhem_t5(directory: Path, seed: int = 0) -> Path:
    """A remote-code model shaped like HHEM-2.1-open (a T5 encoder whose embedding is tied to ``shared``), saved the
    way its checkpoint is: the tied embedding stored once (``transformer.shared``), ``encoder.embed_tokens`` absent."""

    import torch
    from safetensors.torch import save_file
    from transformers import T5Config

    directory.mkdir(parents=True, exist_ok=True)
    foundation = directory / "foundation"
    foundation.mkdir(exist_ok=True)
    _tokenizer(foundation)
    T5Config(
        vocab_size=256,
        d_model=32,
        d_kv=16,
        d_ff=64,
        num_layers=1,
        num_heads=2,
        num_labels=2,
        pad_token_id=0,
        eos_token_id=5,
    ).save_pretrained(foundation)
    module = _remote_code(directory, "tiny_hhem_t5", HHEM_T5_CODE)
    torch.manual_seed(seed)
    model = module.TinyHHEMT5(module.TinyHHEMT5Config(foundation=str(foundation)))
    model.config.save_pretrained(directory)
    state = {k: v.contiguous() for k, v in model.state_dict().items() if not k.endswith("encoder.embed_tokens.weight")}
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((directory / "config.json").read_text())
    config["auto_map"] = {
        "AutoConfig": "tiny_hhem_t5.TinyHHEMT5Config",
        "AutoModelForSequenceClassification": "tiny_hhem_t5.TinyHHEMT5",
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def build_hhem(directory: Path) -> Path:
    """A remote-code model directory with HHEM's predict() interface."""

    directory.mkdir(parents=True, exist_ok=True)
    module = _remote_code(directory, "tiny_hhem", HHEM_CODE)
    module.TinyHHEM(module.TinyHHEMConfig()).save_pretrained(directory)
    config = json.loads((directory / "config.json").read_text())
    config["auto_map"] = {
        "AutoConfig": "tiny_hhem.TinyHHEMConfig",
        "AutoModelForSequenceClassification": "tiny_hhem.TinyHHEM",
    }
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory

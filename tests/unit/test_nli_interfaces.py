"""The nli judge's verifier interfaces on tiny random models: MiniCheck-style binary and seq2seq, HHEM's predict."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Claim, Verdict
from evaluator_worker.judges.nli import NLIJudge, detect_kind, minicheck_input

needs_ml = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "transformers")) and not os.environ.get("CI"),
    reason="torch/transformers not installed",
)
CONTEXT = "the tower is 300 metres tall. it was built in 1889."


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    """One directory per interface, built once."""
    from tests.fakes.tiny_verifiers import build_binary, build_hhem, build_seq2seq

    root = tmp_path_factory.mktemp("verifiers")
    return {
        "binary": build_binary(root / "binary"),
        "seq2seq": build_seq2seq(root / "seq2seq"),
        "hhem": build_hhem(root / "hhem"),
    }


def _claims(*texts: str) -> list[Claim]:
    return [Claim(id=f"c{i}", text=t) for i, t in enumerate(texts, start=1)]


def test_minicheck_input_joins_document_and_claim_with_eos():
    """The model input is premise + eos + claim, with "predict: " first for the seq2seq scorer (MiniCheck's format)."""
    assert minicheck_input("Doc text.", "A claim.", "</s>") == "Doc text.</s>A claim."
    assert minicheck_input("Doc text.", "A claim.", "</s>", seq2seq=True) == "predict: Doc text.</s>A claim."


class Cfg:
    """A model config reduced to the fields detection reads."""

    def __init__(self, **kw):
        kw.setdefault("num_labels", len(kw.get("id2label") or {}) or 2)
        self.__dict__.update(kw)


#: the fields of each named model's published config.json that decide its interface
PUBLISHED = {
    "facebook/bart-large-mnli": (
        Cfg(
            architectures=["BartForSequenceClassification"],
            model_type="bart",
            is_encoder_decoder=True,
            id2label={0: "contradiction", 1: "neutral", 2: "entailment"},
        ),
        "nli",
    ),
    "MoritzLaurer/DeBERTa-v3-base-mnli-fever-docnli-ling-2c": (
        Cfg(
            architectures=["DebertaV2ForSequenceClassification"],
            model_type="deberta-v2",
            id2label={0: "entailment", 1: "not_entailment"},
        ),
        "nli2",
    ),
    "cross-encoder/nli-deberta-v3-small": (
        Cfg(
            architectures=["DebertaV2ForSequenceClassification"],
            model_type="deberta-v2",
            id2label={0: "contradiction", 1: "entailment", 2: "neutral"},
        ),
        "nli",
    ),
    "lytang/MiniCheck-RoBERTa-Large": (
        Cfg(
            architectures=["RobertaForSequenceClassification"],
            model_type="roberta",
            id2label={0: "LABEL_0", 1: "LABEL_1"},
        ),
        "binary",
    ),
    "lytang/MiniCheck-DeBERTa-v3-Large": (
        Cfg(
            architectures=["DebertaV2ForSequenceClassification"],
            model_type="deberta-v2",
            id2label={0: "LABEL_0", 1: "LABEL_1"},
        ),
        "binary",
    ),
    "lytang/MiniCheck-Flan-T5-Large": (
        Cfg(architectures=["T5ForConditionalGeneration"], model_type="t5", is_encoder_decoder=True),
        "seq2seq",
    ),
    "vectara/hallucination_evaluation_model": (
        Cfg(
            architectures=["HHEMv2ForSequenceClassification"],
            model_type="HHEMv2Config",
            auto_map={"AutoConfig": "configuration_hhem_v2.HHEMv2Config"},
        ),
        "hhem",
    ),
}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_detect_kind_from_each_models_published_config(name):
    """BART-MNLI is NLI (not seq2seq), -2c is 2-label NLI (not a MiniCheck binary), Flan-T5 seq2seq, HHEM hhem."""
    config, kind = PUBLISHED[name]
    assert detect_kind(config) == kind


def test_binary_support_class_comes_from_the_labels_or_is_refused():
    """Named labels decide the supported class; generic LABEL_0/1 read as MiniCheck does (1); other names refused."""
    from evaluator_worker.judges.nli import binary_support_index, two_label_entailment_index

    assert binary_support_index(Cfg(id2label={0: "supported", 1: "unsupported"}), None) == 0
    assert binary_support_index(Cfg(id2label={0: "LABEL_0", 1: "LABEL_1"}), None) == 1
    with pytest.raises(ConfigError, match="SUPPORT_LABEL"):
        binary_support_index(Cfg(id2label={0: "negative", 1: "positive"}), None)
    assert binary_support_index(Cfg(id2label={0: "negative", 1: "positive"}), 0) == 0
    assert two_label_entailment_index({0: "ENTAILMENT", 1: "not-entailment"}) == 0
    assert two_label_entailment_index({0: "not_entailment", 1: "entailment"}) == 1


@needs_ml
def test_binary_classifier_scores_the_minicheck_input_and_never_contradicts(models):
    """The judge's support probability equals the model's class-1 softmax on "premise</s>claim"; no CONTRADICTED."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    judge = NLIJudge(str(models["binary"]), max_length=128).load()
    ver = judge.verify(_claims("the tower is tall", "the bridge is red"), [CONTEXT])
    assert {v.verdict for v in ver.verdicts} <= {Verdict.SUPPORTED, Verdict.UNSUPPORTED}
    tok = AutoTokenizer.from_pretrained(models["binary"])
    model = AutoModelForSequenceClassification.from_pretrained(models["binary"]).eval()
    with torch.inference_mode():
        p = torch.softmax(model(**tok([CONTEXT + "</s>the tower is tall"], return_tensors="pt")).logits, -1)[
            0, 1
        ].item()
    v = ver.verdicts[0]
    assert (v.confidence if v.verdict is Verdict.SUPPORTED else 1 - v.confidence) == pytest.approx(p, abs=1e-5)
    assert ver.usage.input_tokens > 0
    all_in = NLIJudge(str(models["binary"]), max_length=128, entail_threshold=1e-6).verify(_claims("x"), [CONTEXT])
    assert all_in.verdicts[0].verdict is Verdict.SUPPORTED and all_in.verdicts[0].evidence == CONTEXT


@needs_ml
def test_seq2seq_scorer_reads_two_token_logits_after_one_decoder_step(models):
    """Support = softmax over the logits of tokens (3, 209) at the first decoder step from token 0."""
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    judge = NLIJudge(str(models["seq2seq"]), max_length=128).load()
    v = judge.verify(_claims("the tower is tall"), [CONTEXT]).verdicts[0]
    tok = AutoTokenizer.from_pretrained(models["seq2seq"])
    model = AutoModelForSeq2SeqLM.from_pretrained(models["seq2seq"]).eval()
    enc = tok(["predict: " + CONTEXT + "</s>the tower is tall"], return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[:, 0, [3, 209]]
    p = torch.softmax(logits, -1)[0, 1].item()
    assert (v.confidence if v.verdict is Verdict.SUPPORTED else 1 - v.confidence) == pytest.approx(p, abs=1e-5)


@needs_ml
def test_hhem_runs_its_own_predict_only_when_asked_to_trust_its_code(models):
    """kind=hhem calls the model's predict on (premise, claim) pairs; auto never runs remote code."""
    with pytest.raises(ConfigError):
        NLIJudge(str(models["hhem"])).load()
    judge = NLIJudge(str(models["hhem"]), kind="hhem").load()
    ver = judge.verify(_claims("the tower is tall", "paris is red"), [CONTEXT])
    assert ver.verdicts[0].verdict is Verdict.SUPPORTED and ver.verdicts[0].confidence == pytest.approx(1.0)
    assert ver.verdicts[1].verdict is Verdict.UNSUPPORTED


@needs_ml
def test_long_chunks_are_windowed_and_the_best_window_decides(models):
    """A chunk longer than the budget is split into sentence windows; the claim is supported by the window holding it."""
    filler = " ".join(["The park is in the city."] * 60)
    judge = NLIJudge(str(models["hhem"]), kind="hhem", max_length=64).load()
    v = judge.verify(_claims("the tower was built in 1889"), [filler + " The tower was built in 1889."]).verdicts[0]
    assert v.verdict is Verdict.SUPPORTED and v.evidence is not None and "1889" in v.evidence
    assert len(v.evidence) < len(filler)


def test_bad_interface_settings_are_config_errors(models):
    """An unknown kind, or a support label the binary model does not have, fails at start-up."""
    with pytest.raises(ConfigError, match="kind"):
        NLIJudge(str(models["binary"]), kind="magic")
    with pytest.raises(ConfigError, match="support_label"):
        NLIJudge(str(models["binary"]), support_label=5).load()


@needs_ml
def test_registry_builds_each_interface_from_settings(models):
    """CLAIMWATCH_NLI_MODEL + CLAIMWATCH_NLI_KIND pick the interface; the default reads it from the config."""
    from evaluator_worker.judges.registry import get_judge
    from evaluator_worker.judges.settings import JudgeSettings

    assert get_judge("nli", JudgeSettings(nli_model=str(models["seq2seq"])))._loaded.kind == "seq2seq"
    assert get_judge("nli", JudgeSettings(nli_model=str(models["hhem"]), nli_kind="hhem"))._loaded.kind == "hhem"


class TokenizerSpy:
    """Forwards to a tokenizer and records the texts of every call (what the model is really fed)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.calls: list[tuple] = []

    def __getattr__(self, name):
        return getattr(self.tokenizer, name)

    def __call__(self, *args, **kwargs):
        if kwargs.get("return_tensors") == "pt":
            self.calls.append(args)
        return self.tokenizer(*args, **kwargs)


def _spied(judge: NLIJudge) -> TokenizerSpy:
    loaded = judge._get()
    spy = TokenizerSpy(loaded.tokenizer)
    loaded.tokenizer = spy
    return spy


@needs_ml
@pytest.mark.parametrize(
    "kind,expected",
    [
        ("binary", CONTEXT + "</s>" + "the tower is tall"),
        ("seq2seq", "predict: " + CONTEXT + "</s>" + "the tower is tall"),
    ],
)
def test_each_one_sequence_family_receives_exactly_its_authors_format(models, kind, expected):
    """MiniCheck RoBERTa/DeBERTa: chunk + eos + claim; Flan-T5: "predict: " first: the exact text, in that order."""
    judge = NLIJudge(str(models[kind]), max_length=128)
    spy = _spied(judge)
    judge.verify(_claims("the tower is tall"), [CONTEXT])
    assert spy.calls == [([expected],)]


@needs_ml
def test_nli_pairs_are_premise_then_claim(tmp_path):
    """NLI models get (premise, claim) pairs in that order, never the claim first."""
    from tests.fakes.tiny_verifiers import build_classifier

    d = build_classifier(tmp_path / "m", {0: "entailment", 1: "neutral", 2: "contradiction"})
    judge = NLIJudge(str(d), max_length=128)
    spy = _spied(judge)
    judge.verify(_claims("the tower is tall"), [CONTEXT])
    assert spy.calls == [([CONTEXT], ["the tower is tall"])]


def _model_support(directory: Path, premise: str, claim: str, index: int) -> float:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    with torch.inference_mode():
        return torch.softmax(model(**tok([premise], [claim], return_tensors="pt")).logits, -1)[0, index].item()


def _support(v) -> float:
    return v.confidence if v.verdict is Verdict.SUPPORTED else 1 - v.confidence


@needs_ml
@pytest.mark.parametrize(
    "id2label,entail", [({0: "entailment", 1: "not_entailment"}, 0), ({0: "not_entailment", 1: "entailment"}, 1)]
)
def test_two_label_nli_reads_entailment_where_its_labels_put_it(tmp_path, id2label, entail):
    """A -2c model's support is P(entailment) at the index id2label names (index 0 was read inverted before)."""
    from tests.fakes.tiny_verifiers import build_classifier

    d = build_classifier(tmp_path / "m", id2label)
    judge = NLIJudge(str(d), max_length=128).load()
    assert judge._loaded.kind == "nli2"
    for claim in ("the tower is tall", "paris is red"):
        v = judge.verify(_claims(claim), [CONTEXT]).verdicts[0]
        assert v.verdict is not Verdict.CONTRADICTED
        assert _support(v) == pytest.approx(_model_support(d, CONTEXT, claim, entail), abs=1e-5)


@needs_ml
def test_bart_mnli_is_scored_as_nli_not_on_t5_tokens(tmp_path):
    """An encoder-decoder with a classification head (BART-MNLI) is read through its NLI labels and pair input."""
    from tests.fakes.tiny_verifiers import build_classifier

    d = build_classifier(tmp_path / "bart", {0: "contradiction", 1: "neutral", 2: "entailment"}, bart=True)
    judge = NLIJudge(str(d), max_length=128, entail_threshold=1.0, contradict_threshold=1.0).load()
    assert judge._loaded.kind == "nli" and judge._loaded.labels["entailment"] == 2
    v = judge.verify(_claims("the tower is tall"), [CONTEXT]).verdicts[0]
    assert v.verdict is Verdict.UNSUPPORTED
    assert 1 - v.confidence == pytest.approx(_model_support(d, CONTEXT, "the tower is tall", 2), abs=1e-5)


@needs_ml
@pytest.mark.parametrize("kind", ["binary", "seq2seq", "nli"])
def test_the_claim_is_never_truncated_only_the_premise(models, tmp_path, kind):
    """A premise longer than the input budget is clipped; every encoded input fits and ends with the whole claim."""
    from tests.fakes.tiny_verifiers import build_classifier

    directory = models.get(kind) or build_classifier(
        tmp_path / "nli", {0: "entailment", 1: "neutral", 2: "contradiction"}
    )
    claim = "the tower in paris was built in 1889 and is 300 metres tall"
    long_sentence = " ".join(["the old museum in the city by the river was painted red and gold"] * 8) + "."
    judge = NLIJudge(str(directory), max_length=48)
    spy = _spied(judge)
    judge.verify(_claims(claim), [long_sentence + " The park is new."])
    tok = spy.tokenizer
    assert spy.calls
    for args in spy.calls:
        if kind == "nli":
            premises, claims = args
            encoded = tok(premises, claims, truncation=False)["input_ids"]
            assert claims == [claim] * len(premises)
        else:
            (texts,) = args
            encoded = tok(texts, truncation=False)["input_ids"]
            assert all(t.endswith("</s>" + claim) for t in texts)
        assert all(len(ids) <= 48 for ids in encoded)


@needs_ml
def test_a_claim_too_long_for_the_model_is_an_error_not_a_verdict_on_part_of_it(models):
    """Only the claim that cannot fit beside a premise becomes ERROR; the others are judged as usual."""
    judge = NLIJudge(str(models["binary"]), max_length=32)
    long_claim = " ".join(["the tower is tall"] * 10)
    ver = judge.verify(_claims("the tower is tall", long_claim), [CONTEXT])
    assert ver.verdicts[0].verdict in (Verdict.SUPPORTED, Verdict.UNSUPPORTED)
    assert ver.verdicts[1].verdict is Verdict.ERROR and "not judged rather than cut" in (ver.verdicts[1].reason or "")


@needs_ml
def test_a_two_label_model_with_labels_it_cannot_read_is_refused_at_load(tmp_path):
    """A 2-label model whose labels mean neither supported nor entailment fails at start-up with the setting to use."""
    from tests.fakes.tiny_verifiers import build_classifier

    d = build_classifier(tmp_path / "m", {0: "negative", 1: "positive"})
    with pytest.raises(ConfigError, match="SUPPORT_LABEL"):
        NLIJudge(str(d)).load()
    assert NLIJudge(str(d), support_label=1).load()._loaded.support_index == 1


@needs_ml
def test_registry_passes_the_thresholds(models):
    """CLAIMWATCH_NLI_ENTAIL_THRESHOLD / _CONTRADICT_THRESHOLD reach the judge."""
    from evaluator_worker.judges.registry import get_judge
    from evaluator_worker.judges.settings import JudgeSettings

    judge = get_judge(
        "nli", JudgeSettings(nli_model=str(models["binary"]), nli_entail_threshold=0.9, nli_contradict_threshold=0.95)
    )
    assert (judge.entail_threshold, judge.contradict_threshold) == (0.9, 0.95)


@needs_ml
def test_minicheck_kinds_read_all_contexts_as_one_document_cut_in_chunks(models):
    """binary/seq2seq join the contexts (a claim needing two of them is checked against both); nli keeps them apart."""
    contexts = ["the tower is tall.", "it was built in 1889."]
    joined = NLIJudge(str(models["binary"]), max_length=128)
    spy = _spied(joined)
    joined.verify(_claims("the tower was built in 1889"), contexts)
    assert spy.calls == [(["the tower is tall.\n\nit was built in 1889.</s>the tower was built in 1889"],)]
    apart = NLIJudge(str(models["binary"]), max_length=128, document="per_chunk")
    spy = _spied(apart)
    apart.verify(_claims("the tower was built in 1889"), contexts)
    assert sorted(spy.calls[0][0]) == sorted(c + "</s>the tower was built in 1889" for c in contexts)


@needs_ml
def test_joined_chunks_know_which_context_they_start_in(models):
    """A joined document cut into small chunks maps each chunk's evidence back to the context it starts in."""
    contexts = ["the park is new. the road is old.", "the tower was built in 1889. the bridge is red."]
    judge = NLIJudge(str(models["binary"]), max_length=128, chunk_tokens=16, entail_threshold=1e-6, window_overlap=0)
    windows = judge._windows(judge._get(), 8, contexts)
    assert [i for i, _ in windows] == sorted(i for i, _ in windows) and {i for i, _ in windows} == {0, 1}
    for i, text in windows:
        assert text.split("\n\n")[0] in contexts[i]


@needs_ml
def test_hhem_with_missing_weights_is_refused_not_scored(models, tmp_path):
    """A remote-code model whose weights file lacks a tensor fails at load with one line, never scores randomly."""
    import shutil

    from safetensors.torch import load_file, save_file

    broken = tmp_path / "hhem-missing"
    shutil.copytree(models["hhem"], broken)
    weights = broken / "model.safetensors"
    tensors = load_file(str(weights))
    save_file({k: v for k, v in tensors.items() if k != "scale"}, str(weights), metadata={"format": "pt"})
    with pytest.raises(ConfigError, match="missing"):
        NLIJudge(str(broken), kind="hhem").load()


@needs_ml
def test_hhem_whose_own_code_fails_is_a_start_up_error(models, tmp_path):
    """Model code that raises under this transformers version is one ConfigError naming it, not a traceback."""
    import shutil

    broken = tmp_path / "hhem-code"
    shutil.copytree(models["hhem"], broken)
    code = broken / "tiny_hhem.py"
    code.write_text(
        code.read_text().replace(
            "self.post_init()", "self.post_init()\n        raise AttributeError('all_tied_weights_keys')"
        )
    )
    with pytest.raises(ConfigError, match="all_tied_weights_keys"):
        NLIJudge(str(broken), kind="hhem").load()


@needs_ml
def test_an_hhem_shaped_remote_model_loads_unchanged_with_its_t5_embedding_tied(tmp_path):
    """A wrapper around a T5 classifier that never calls post_init (HHEM-2.1-open's shape), its embedding stored once:
    plain loading fails on transformers 5; the judge loads the same file with the embedding tied to the saved one."""
    import torch
    import transformers
    from safetensors.torch import load_file
    from transformers import AutoModelForSequenceClassification

    from tests.fakes.tiny_verifiers import build_hhem_t5

    directory = build_hhem_t5(tmp_path / "hhem-t5")
    if int(transformers.__version__.split(".")[0]) >= 5:
        with pytest.raises(AttributeError, match="all_tied_weights_keys"):
            AutoModelForSequenceClassification.from_pretrained(str(directory), trust_remote_code=True)
    judge = NLIJudge(str(directory), kind="hhem").load()
    t5 = judge._get().model.t5.transformer
    saved = load_file(str(directory / "model.safetensors"))
    assert "t5.transformer.encoder.embed_tokens.weight" not in saved
    assert torch.equal(t5.encoder.embed_tokens.weight, saved["t5.transformer.shared.weight"])
    assert t5.encoder.embed_tokens.weight.data_ptr() == t5.shared.weight.data_ptr()
    [p] = judge.support_probabilities([(CONTEXT, "the tower is tall")])
    assert p == pytest.approx(float(judge._get().model.predict([(CONTEXT, "the tower is tall")])[0]), abs=1e-6)

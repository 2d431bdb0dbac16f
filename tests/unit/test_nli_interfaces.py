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
    return {"binary": build_binary(root / "binary"), "seq2seq": build_seq2seq(root / "seq2seq"),
            "hhem": build_hhem(root / "hhem")}


def _claims(*texts: str) -> list[Claim]:
    return [Claim(id=f"c{i}", text=t) for i, t in enumerate(texts, start=1)]


def test_minicheck_input_joins_document_and_claim_with_eos():
    """The model input is premise + eos + claim, with "predict: " first for the seq2seq scorer (MiniCheck's format)."""
    assert minicheck_input("Doc text.", "A claim.", "</s>") == "Doc text.</s>A claim."
    assert minicheck_input("Doc text.", "A claim.", "</s>", seq2seq=True) == "predict: Doc text.</s>A claim."


def test_detect_kind_reads_the_config():
    """Encoder-decoder -> seq2seq, 2 labels -> binary, 3 labels -> nli, HHEM remote code -> hhem."""

    class C:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    assert detect_kind(C(is_encoder_decoder=True, num_labels=2)) == "seq2seq"
    assert detect_kind(C(num_labels=2)) == "binary"
    assert detect_kind(C(num_labels=3)) == "nli"
    assert detect_kind(C(model_type="HHEMv2Config", num_labels=2)) == "hhem"


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
        p = torch.softmax(model(**tok([CONTEXT + "</s>the tower is tall"], return_tensors="pt")).logits, -1)[0, 1].item()
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

"""The ``verifier`` judge (trained cross-encoder, shipped int8) and the ``offline`` judge built on it."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Claim, Judge, Verdict
from evaluator_worker.judges.verifier import (
    DEFAULT_MODEL_DIR,
    WEIGHTS_FILE,
    LoadedVerifier,
    VerifierJudge,
    decide,
    load_verifier,
    require_backend,
)

HAS_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None
SHIPPED = (DEFAULT_MODEL_DIR / WEIGHTS_FILE).is_file()
LABELS = {"entailment": 0, "neutral": 1, "contradiction": 2}


def fake_loaded(calls: list[int], max_length: int = 128) -> LoadedVerifier:
    """A model stand-in: entails when the claim's words are all in the premise, contradicts on 'not', records batch sizes."""

    def score(premises: list[str], hypotheses: list[str]) -> list[list[float]]:
        calls.append(len(premises))
        rows = []
        for p, h in zip(premises, hypotheses):
            if " not " in f" {h} ":
                rows.append([0.0, 0.0, 5.0])
            elif set(h.lower().rstrip(".").split()) <= set(p.lower().replace(".", "").split()):
                rows.append([5.0, 0.0, 0.0])
            else:
                rows.append([0.0, 5.0, 0.0])
        return rows

    return LoadedVerifier(
        score=score,
        count_tokens=lambda ts: [len(t.split()) for t in ts],
        labels=LABELS,
        max_length=max_length,
        calibration={"temperature": 1.0},
    )


def _claims(*texts: str) -> list[Claim]:
    return [Claim(id=f"c{i}", text=t) for i, t in enumerate(texts)]


def test_judge_conforms_to_the_protocol():
    """VerifierJudge is a Judge: CPU-bound, extraction without contexts, named 'verifier'."""
    judge = VerifierJudge(loader=lambda d: fake_loaded([]))
    assert isinstance(judge, Judge)
    assert judge.name == "verifier" and judge.io_bound is False and judge.extract_sees_contexts is False
    claims = judge.extract_claims("Paris is the capital of France. It has 2 million people.").claims
    assert [c.text for c in claims] == ["Paris is the capital of France.", "It has 2 million people."]


def test_verify_batches_and_keeps_the_most_favourable_window():
    """Pairs are scored in batches of batch_size; any entailing chunk makes SUPPORTED; order and ids are kept."""
    calls: list[int] = []
    judge = VerifierJudge(loader=lambda d: fake_loaded(calls), batch_size=2)
    contexts = ["the cat sat on the mat.", "the dog ran in the park."]
    claims = _claims("the dog ran.", "the cat is not black.", "a bird sang.")
    result = judge.verify(claims, contexts)
    assert [v.claim_id for v in result.verdicts] == ["c0", "c1", "c2"]
    assert [v.verdict for v in result.verdicts] == [Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.UNSUPPORTED]
    assert result.verdicts[0].context_index == 1 and result.verdicts[0].evidence == contexts[1]
    # 3 claims x (2 chunks + all chunks joined) = 9 pairs in batches of at most 2
    assert sum(calls) == 9 and max(calls) <= 2 and result.usage.calls == len(calls)


def test_no_context_gives_unsupported_without_scoring():
    """Claims with no context are UNSUPPORTED and the model is never called."""
    calls: list[int] = []
    judge = VerifierJudge(loader=lambda d: fake_loaded(calls))
    result = judge.verify(_claims("x is y."), ["  "])
    assert result.verdicts[0].verdict is Verdict.UNSUPPORTED and calls == []


def test_missing_torch_gives_a_config_error_naming_the_extra():
    """Without torch/transformers, loading raises ConfigError telling which extra to install."""

    def no_torch() -> tuple:
        raise ImportError("No module named 'torch'")

    with pytest.raises(ConfigError, match=r"claimwatch\[verifier\]"):
        require_backend(no_torch)
    judge = VerifierJudge(loader=lambda d: load_verifier(d, importer=no_torch))
    with pytest.raises(ConfigError, match="torch and transformers"):
        judge.load()


def test_decide_applies_temperature_and_thresholds():
    """Temperature flattens probabilities; below both thresholds the verdict is UNSUPPORTED with 1 - p(entail)."""
    rows = [[2.0, 0.0, 0.0]]
    verdict, conf, window, _ = decide(rows, LABELS, 1.0, 0.5, 0.5)
    assert verdict is Verdict.SUPPORTED and window == 0 and conf > 0.7
    verdict, conf, window, probs = decide(rows, LABELS, 10.0, 0.5, 0.5)
    assert verdict is Verdict.UNSUPPORTED and window is None and conf == pytest.approx(1 - probs[0])


def test_invalid_settings_are_config_errors():
    """Bad batch size, thresholds or temperature are rejected at construction."""
    for kwargs in ({"batch_size": 0}, {"entail_threshold": 0.0}, {"temperature": -1.0}, {"max_length": 8}):
        with pytest.raises(ConfigError):
            VerifierJudge(loader=lambda d: fake_loaded([]), **kwargs)


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_int8_round_trip_is_close(tmp_path):
    """Per-row int8 storage dequantises to within half a quantisation step of every weight; vectors are exact."""
    import torch
    from safetensors.torch import save_file

    from claimwatch.training.compress import quantize_state_dict
    from evaluator_worker.judges.verifier import SCALE_SUFFIX, load_int8_state_dict

    g = torch.Generator().manual_seed(0)
    state = {"w": torch.randn(64, 32, generator=g) * 0.1, "b": torch.randn(32, generator=g)}
    q = quantize_state_dict(state)
    assert q["w"].dtype == torch.int8 and q["w" + SCALE_SUFFIX].shape == (64,)
    save_file(q, str(tmp_path / "m.safetensors"))
    back = load_int8_state_dict(tmp_path / "m.safetensors")
    step = q["w" + SCALE_SUFFIX][:, None]
    assert bool(((back["w"] - state["w"]).abs() <= step / 2 + 1e-7).all())
    assert torch.equal(back["b"], state["b"])


@pytest.fixture(scope="module")
def shipped() -> VerifierJudge:
    if not (HAS_TORCH and SHIPPED):
        pytest.skip("needs torch and the shipped verifier model")
    return VerifierJudge().load()


def test_shipped_model_is_small_enough():
    """The shipped model directory (weights, tokenizer, config) is at most 30 MB."""
    if not SHIPPED:
        pytest.skip("model not shipped")
    assert sum(f.stat().st_size for f in DEFAULT_MODEL_DIR.iterdir()) <= 30_000_000


def test_shipped_model_gives_the_documented_verdicts(shipped):
    """Paraphrase -> SUPPORTED, changed number and explicit negation -> flagged (docs/verifier.md: the v2 model,
    trained on real labels with few contradictions, calls both UNSUPPORTED rather than CONTRADICTED)."""
    context = ["The museum opened in 1998 and welcomed 120,000 visitors in its first year. It is closed on Mondays."]
    claims = _claims(
        "In its first year the museum had 120,000 visitors.",
        "The museum welcomed 450,000 visitors in its first year.",
        "The museum did not open in 1998.",
    )
    got = [v.verdict for v in shipped.verify(claims, context).verdicts]
    assert got[0] is Verdict.SUPPORTED
    assert got[1] is not Verdict.SUPPORTED
    assert got[2] is not Verdict.SUPPORTED


def test_a_claim_longer_than_the_model_is_judged_not_raised(shipped):
    """A claim past the model's length (a run-on list) is ERROR, not cut; the answer's other claims are judged."""
    context = ["The museum opened in 1998 and welcomed 120,000 visitors in its first year."]
    run_on = "The museum owns " + ", ".join(f"painting number {i}" for i in range(150)) + "."
    claims = _claims("The museum opened in 1998.", run_on)
    got = shipped.verify(claims, context).verdicts
    assert [v.claim_id for v in got] == [c.id for c in claims]
    assert got[0].verdict is Verdict.SUPPORTED
    assert got[1].verdict is Verdict.ERROR and "not judged rather than cut" in (got[1].reason or "")


#: words and marks that stress claim splitting and tokenizing: abbreviations, citations, bullets, emoji, numbers
_PIECES = ["the", "museum", "opened", "in", "1998", "3.5%", "Dr.", "and", ",", ".", "\n", "•", "[1]", "e.g."]
_TEXT = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from([*_PIECES, "ü", "😀", "", "  ", "-", "?", "$12"]), max_size=300).map(" ".join),
    st.lists(st.sampled_from(["museum", "1998", "and", ",", "(2)", "visitors"]), min_size=150, max_size=400).map(
        " ".join
    ),  # one run-on claim longer than the model reads
)


@pytest.fixture(scope="module")
def model_judges(shipped):
    from evaluator_worker.judges.registry import get_judge

    return {name: get_judge(name) for name in ("verifier", "offline", "hybrid")}


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(answer=_TEXT, contexts=st.lists(_TEXT, min_size=1, max_size=3), question=st.none() | _TEXT)
def test_model_judges_never_raise_on_arbitrary_text(model_judges, answer, contexts, question):
    """verifier, offline and hybrid on any text (run-ons past the model's length included): one verdict per claim."""
    for name, judge in model_judges.items():
        claims = judge.extract_claims(answer, question, contexts=contexts).claims
        got = judge.verify(claims, contexts, question).verdicts
        assert [v.claim_id for v in got] == [c.id for c in claims], name
        assert all(0.0 <= v.confidence <= 1.0 for v in got), name


def test_registry_builds_verifier_and_offline(shipped):
    """get_judge('verifier') and get_judge('offline') build the judges from the shipped model; the v2 verifier
    ships no separate confidence map (its temperature is fitted on the real dev claims, calibration.json)."""
    from evaluator_worker.judges.calibrated import CalibratedJudge
    from evaluator_worker.judges.offline import OfflineJudge
    from evaluator_worker.judges.registry import get_judge

    verifier = get_judge("verifier")
    assert isinstance(verifier, VerifierJudge) and not isinstance(verifier, CalibratedJudge)
    assert verifier.load().temperature == pytest.approx(1.8)
    assert isinstance(get_judge("offline"), OfflineJudge)


def test_offline_keeps_heuristic_number_verdicts_and_asks_the_verifier_otherwise():
    """A number conflict stays the heuristic's CONTRADICTED; other claims get the verifier's verdict."""
    from evaluator_worker.judges.offline import OfflineJudge

    calls: list[int] = []
    judge = OfflineJudge(VerifierJudge(loader=lambda d: fake_loaded(calls)))
    contexts = ["The bridge opened in 1932 and is 1,149 metres long."]
    claims = _claims("The bridge is 2,000 metres long.", "the bridge opened.")
    result = judge.verify(claims, contexts)
    assert result.verdicts[0].verdict is Verdict.CONTRADICTED and result.verdicts[0].reason.startswith("heuristic")
    assert result.verdicts[1].verdict is Verdict.SUPPORTED and result.verdicts[1].reason.startswith("verifier")
    assert sum(calls) == 1  # only the second claim was scored (one chunk, nothing to join)

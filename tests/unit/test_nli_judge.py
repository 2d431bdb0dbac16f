"""NLIJudge against a tiny real BERT cross-encoder (tests/fakes/tiny_nli.py) loaded from a local directory.

The toy model: a hypothesis's property word (open, hot, wet, ...) in the premise ->
entailment; its antonym (closed, cold, dry, ...) -> contradiction; neither -> neutral.
Tests that need the model skip when torch/transformers are missing, but fail under CI.
"""

from __future__ import annotations

import importlib.util
import math
import os

import pytest

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Claim, Judge, Usage, Verdict
from evaluator_worker.judges.nli import NLIJudge, resolve_labels, sentence_windows

_HAVE_ML = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
_REASON = "torch/transformers not installed: pip install torch==2.13.0 && pip install -e '.[nli]'"
#: skip without torch/transformers, except under CI where the tests run (and fail loudly)
needs_ml = pytest.mark.skipif(not _HAVE_ML and not os.environ.get("CI"), reason=_REASON)


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> str:
    """Directory of the toy model in the default label order."""
    from tests.fakes.tiny_nli import build_tiny_nli

    return str(build_tiny_nli(tmp_path_factory.mktemp("tiny-nli")))


@pytest.fixture(scope="module")
def judge(tiny_model) -> NLIJudge:
    """One loaded judge shared by the read-only tests."""
    return NLIJudge(tiny_model, batch_size=4).load()


def claims(*texts: str) -> list[Claim]:
    """Claims c1, c2, ... from texts."""
    return [Claim(id=f"c{i + 1}", text=t) for i, t in enumerate(texts)]


# ---------------------------------------------------------------- pure helpers (no model)


def test_resolve_labels_any_case_and_order():
    """id2label in any case and order maps to the canonical label indices."""
    assert resolve_labels({0: "CONTRADICTION", 1: "Entailment", 2: "neutral"}) == {
        "contradiction": 0,
        "entailment": 1,
        "neutral": 2,
    }
    assert resolve_labels({"0": "entailment", "1": "neutral", "2": "contradiction"})["contradiction"] == 2


@pytest.mark.parametrize(
    "id2label",
    [
        {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"},
        {0: "entailment", 1: "entailment", 2: "neutral"},
        {0: "entailment", 1: "neutral"},
    ],
)
def test_resolve_labels_fails_clearly(id2label):
    """Unknown, repeated or missing labels raise ConfigError instead of guessing an order."""
    with pytest.raises(ConfigError, match="label"):
        resolve_labels(id2label)


def test_sentence_windows_whole_chunk_when_it_fits():
    """A chunk within budget is one window, verbatim."""
    text = "It is hot. The door is open."
    assert sentence_windows(text, 50, lambda ts: [len(t.split()) for t in ts]) == [text]


def test_sentence_windows_pack_sentences_with_overlap():
    """A long chunk becomes verbatim windows of whole sentences within budget, overlapping by one sentence."""
    text = "One two three. Four five six. Seven eight nine. Ten eleven twelve."
    windows = sentence_windows(text, 6, lambda ts: [len(t.split()) for t in ts])
    assert windows == [
        "One two three. Four five six.",
        "Four five six. Seven eight nine.",
        "Seven eight nine. Ten eleven twelve.",
    ]
    assert all(w in text for w in windows)
    assert sentence_windows(text, 6, lambda ts: [len(t.split()) for t in ts], overlap=0) == [
        "One two three. Four five six.",
        "Seven eight nine. Ten eleven twelve.",
    ]


def test_construction_is_lazy_and_missing_model_is_config_error(tmp_path):
    """Building the judge loads nothing; first use of a missing directory raises ConfigError naming the setting."""
    j = NLIJudge(str(tmp_path / "no-such-model"))
    assert j.name == "nli" and isinstance(j, Judge)
    assert j.extract_claims("The door is open.").claims  # claim extraction needs no model
    with pytest.raises(ConfigError, match="CLAIMWATCH_NLI_MODEL"):
        j.verify(claims("the door is open"), ["The door is open."])


def test_extract_claims_uses_the_injected_extractor():
    """A custom extractor returning strings yields Claims with ids c1, c2, ..."""
    j = NLIJudge("unused", claim_extractor=lambda answer: [s.strip() for s in answer.split(";") if s.strip()])
    got = j.extract_claims("a is b; c is d").claims
    assert [(c.id, c.text) for c in got] == [("c1", "a is b"), ("c2", "c is d")]


def test_bad_settings_are_config_errors():
    """Thresholds outside (0, 1], batch_size < 1 and an empty model id are rejected up front."""
    for kwargs in ({"entail_threshold": 0.0}, {"contradict_threshold": 1.5}, {"batch_size": 0}):
        with pytest.raises(ConfigError):
            NLIJudge("m", **kwargs)
    with pytest.raises(ConfigError, match="CLAIMWATCH_NLI_MODEL"):
        NLIJudge("")


# ---------------------------------------------------------------- with the tiny model


@needs_ml
def test_hub_id_offline_is_config_error():
    """A hub id that is not in the local cache, offline, raises ConfigError with the fix."""
    j = NLIJudge("claimwatch-test/definitely-not-cached-nli", local_files_only=True)
    with pytest.raises(ConfigError, match="set CLAIMWATCH_NLI_MODEL to a local directory"):
        j.load()


@needs_ml
def test_one_verdict_per_claim_in_order(judge):
    """Each claim gets its own verdict, in claim order, with evidence and context index when decided."""
    ctx = ["The door is open and it is hot today."]
    got = judge.verify(claims("the door is open", "it is cold", "the road is wet"), ctx).verdicts
    assert [v.claim_id for v in got] == ["c1", "c2", "c3"]
    assert [v.verdict for v in got] == [Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.UNSUPPORTED]
    assert got[0].evidence == ctx[0] and got[0].context_index == 0 and got[0].confidence > 0.9
    assert got[1].evidence == ctx[0] and got[1].confidence > 0.9
    assert got[2].evidence is None and got[2].context_index is None


@needs_ml
def test_most_favourable_verdict_across_chunks_wins(judge):
    """Entailment in any chunk beats contradiction in another; contradiction beats silence."""
    ctx = ["The door is closed.", "We like the park.", "The door is open."]
    v = judge.verify(claims("the door is open"), ctx).verdicts[0]
    assert (v.verdict, v.context_index, v.evidence) == (Verdict.SUPPORTED, 2, "The door is open.")
    v = judge.verify(claims("the door is open"), ctx[:2]).verdicts[0]
    assert (v.verdict, v.context_index, v.evidence) == (Verdict.CONTRADICTED, 0, "The door is closed.")
    v = judge.verify(claims("the door is open"), ctx[1:2]).verdicts[0]
    assert v.verdict is Verdict.UNSUPPORTED


@needs_ml
def test_long_chunks_are_windowed_by_sentence(tiny_model):
    """A fact past max_length in a long chunk is still found, with the window (not the chunk) as evidence."""
    filler = "We like the park. People walk in the town. The weather is very nice today. " * 6
    chunk = filler + "The shop is open today."
    j = NLIJudge(tiny_model, max_length=32)
    v = j.verify(claims("the shop is open"), ["It is hot.", chunk]).verdicts[0]
    assert v.verdict is Verdict.SUPPORTED and v.context_index == 1
    assert v.evidence in chunk and len(v.evidence) < len(chunk) and v.evidence.endswith("The shop is open today.")
    # the control: one whole-chunk premise truncated to 32 tokens never sees the fact
    probs = j._score(j._get(), [chunk], ["the shop is open"], Usage())
    assert max(probs[0]) == probs[0][j._get().labels["neutral"]]


@needs_ml
def test_a_claim_longer_than_max_length_is_judged_not_raised(tiny_model):
    """A claim that leaves no room for a premise is ERROR (not cut, no tokenizer error); the other claim is judged."""
    j = NLIJudge(tiny_model, max_length=32)
    run_on = "the shop is open " + " ".join(f"and item {i}" for i in range(40))
    got = j.verify(claims("the door is open", run_on), ["The door is open. The shop is open."]).verdicts
    assert got[0].verdict is Verdict.SUPPORTED
    assert got[1].verdict is Verdict.ERROR and "not judged rather than cut" in (got[1].reason or "")


@needs_ml
@pytest.mark.parametrize(
    "order", [["contradiction", "entailment", "neutral"], ["NEUTRAL", "Contradiction", "ENTAILMENT"]]
)
def test_label_mapping_in_other_orders(tmp_path, order):
    """A model saved with another label order (and case) gives the same verdicts."""
    from tests.fakes.tiny_nli import build_tiny_nli

    j = NLIJudge(str(build_tiny_nli(tmp_path / "m", order=order)))
    got = j.verify(
        claims("the door is open", "it is cold", "the road is wet"), ["The door is open. It is hot."]
    ).verdicts
    assert [v.verdict for v in got] == [Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.UNSUPPORTED]


@needs_ml
def test_unmappable_labels_fail_unless_given(tmp_path):
    """A model with LABEL_0..2 fails with ConfigError at load; an explicit labels= mapping makes it work."""
    from tests.fakes.tiny_nli import build_tiny_nli

    d = str(build_tiny_nli(tmp_path / "m", labels={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}))
    with pytest.raises(ConfigError, match="LABEL_0"):
        NLIJudge(d).load()
    j = NLIJudge(d, labels={"entailment": 0, "neutral": 1, "contradiction": 2})
    assert j.verify(claims("it is hot"), ["It is hot."]).verdicts[0].verdict is Verdict.SUPPORTED


@needs_ml
def test_batching_does_not_change_results(tiny_model):
    """Batch size 1 and 64 give the same verdicts and confidences; calls count the forward batches."""
    cs = claims("the door is open", "it is cold", "the road is wet", "the train is late", "the cup is full")
    ctx = ["The door is open.", "It is hot and the train is early.", "We like the park. The cup is full.", ""]
    one, many = NLIJudge(tiny_model, batch_size=1), NLIJudge(tiny_model, batch_size=64)
    a, b = one.verify(cs, ctx), many.verify(cs, ctx)
    assert [(v.verdict, v.context_index, v.evidence) for v in a.verdicts] == [
        (v.verdict, v.context_index, v.evidence) for v in b.verdicts
    ]
    assert all(math.isclose(x.confidence, y.confidence, abs_tol=1e-5) for x, y in zip(a.verdicts, b.verdicts))
    pairs = len(cs) * 3  # the empty chunk is skipped
    assert (a.usage.calls, b.usage.calls) == (pairs, 1)
    assert a.usage.input_tokens == b.usage.input_tokens > 0 and a.usage.cost_usd == 0.0


@needs_ml
def test_thresholds_and_confidence(tiny_model):
    """Above the model's probability the claim is UNSUPPORTED with confidence 1 - best entailment."""
    strict = NLIJudge(tiny_model, entail_threshold=0.99, contradict_threshold=0.99)
    v = strict.verify(claims("the door is open", "it is cold"), ["The door is open. It is hot."]).verdicts
    assert [x.verdict for x in v] == [Verdict.UNSUPPORTED, Verdict.UNSUPPORTED]
    assert 0.02 < v[0].confidence < 0.1 and v[1].confidence > 0.9


@needs_ml
def test_no_context_means_unsupported(judge):
    """With no (or only blank) chunks every claim is UNSUPPORTED, and no claims means no verdicts."""
    got = judge.verify(claims("it is hot", "the door is open"), ["", "   "]).verdicts
    assert [v.verdict for v in got] == [Verdict.UNSUPPORTED] * 2
    assert judge.verify([], ["It is hot."]).verdicts == []


@needs_ml
def test_registry_builds_the_judge_from_settings(tiny_model):
    """get_judge('nli') with CLAIMWATCH_NLI_MODEL set to the directory gives a working NLIJudge."""
    from evaluator_worker.config import WorkerSettings
    from evaluator_worker.judges.registry import get_judge

    j = get_judge("nli", WorkerSettings(nli_model=tiny_model))
    answer = "The door is open. It is cold today."
    ext = j.extract_claims(answer)
    got = j.verify(ext.claims, ["It is hot. The door is open."]).verdicts
    assert [v.verdict for v in got] == [Verdict.SUPPORTED, Verdict.CONTRADICTED]

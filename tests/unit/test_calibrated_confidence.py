"""Confidence maps: fitted by `calibrate --fit-confidence`, shipped per offline judge, applied by the registry."""

from __future__ import annotations

import io
import json
import random
from contextlib import redirect_stderr, redirect_stdout

import pytest

from claimwatch import calibration as cal
from claimwatch.cli import main
from claimwatch.confidence import Scored, cross_validated_ece, ece, errors_caught, fit_isotonic, fit_map, remapped
from contract.errors import ConfigError
from evaluator_worker.judges.base import Claim, ClaimVerdict, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.calibrated import SHIPPED_DIR, CalibratedJudge, ConfidenceMap, calibrated, shipped_map
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.registry import get_judge
from evaluator_worker.judges.settings import JudgeSettings


def _overconfident(n: int = 400, seed: int = 0) -> list[Scored]:
    """A judge that says c but is right with probability 0.3 + 0.6 * c (over-confident at the top)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        c = round(rng.choice([0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]), 3)
        out.append(Scored(c, rng.random() < 0.3 + 0.6 * c))
    return out


class Fixed(JudgeBase):
    """Gives every claim one verdict and confidence; the last claim ERROR."""

    name = "fixed"

    def __init__(self, confidence: float) -> None:
        self.confidence = confidence

    def extract_claims(self, answer, question=None, *, contexts=None):
        raise NotImplementedError

    def verify(self, claims, contexts, question=None):
        vs = [ClaimVerdict(claim_id=c.id, verdict=Verdict.SUPPORTED, confidence=self.confidence) for c in claims[:-1]]
        vs.append(ClaimVerdict(claim_id=claims[-1].id, verdict=Verdict.ERROR, confidence=0.0))
        return Verification(vs, Usage(calls=1))


def test_map_interpolates_between_knots_and_is_flat_outside():
    """Linear between knots, the end values outside them."""
    m = ConfidenceMap((0.5, 0.9), (0.4, 0.8))
    assert m(0.7) == pytest.approx(0.6)
    assert m(0.1) == 0.4 and m(1.0) == 0.8


@pytest.mark.parametrize("x, y", [((0.5, 0.4), (0.1, 0.2)), ((0.1, 0.2), (0.5, 0.4)), ((0.1,), (1.5,)), ((), ())])
def test_a_map_that_is_not_monotone_or_out_of_range_is_refused(x, y):
    """Decreasing knots, values outside [0, 1] or no knots: a ConfigError at load, not odd confidences later."""
    with pytest.raises(ConfigError):
        ConfidenceMap(x, y)


def test_an_unreadable_map_file_is_a_config_error(tmp_path):
    """A missing file, bad JSON or missing keys name the file in a ConfigError."""
    with pytest.raises(ConfigError, match="nope.json"):
        ConfidenceMap.load(tmp_path / "nope.json")
    (tmp_path / "bad.json").write_text('{"x": [0.1]}')
    with pytest.raises(ConfigError):
        ConfidenceMap.load(tmp_path / "bad.json")


def test_calibrated_judge_maps_confidences_and_keeps_everything_else():
    """Same name and capabilities; each verdict's confidence through the map; ERROR verdicts untouched."""
    inner = Fixed(0.9)
    j = CalibratedJudge(inner, ConfidenceMap((0.5, 1.0), (0.2, 0.7)))
    out = j.verify([Claim(id="a", text="x"), Claim(id="b", text="y")], ["ctx"])
    assert j.name == "fixed" and j.io_bound is False and j.extract_sees_contexts is False
    assert out.verdicts[0].confidence == pytest.approx(0.6) and out.verdicts[0].verdict == Verdict.SUPPORTED
    assert out.verdicts[1].verdict == Verdict.ERROR and out.verdicts[1].confidence == 0.0
    assert out.usage.calls == 1


def test_calibrated_modes_none_shipped_and_a_file_for_another_judge(tmp_path):
    """none leaves the judge; shipped wraps only judges with a shipped map; a file applies only to the judge it names."""
    h = HeuristicJudge()
    assert calibrated(h, "none") is h
    assert isinstance(calibrated(h, "shipped"), CalibratedJudge)
    assert calibrated(Fixed(0.5), "shipped").name == "fixed" and not isinstance(
        calibrated(Fixed(0.5), "shipped"), CalibratedJudge
    )
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"judge": "heuristic", "x": [0.5], "y": [0.5]}))
    assert not isinstance(calibrated(Fixed(0.5), str(path)), CalibratedJudge)
    assert isinstance(calibrated(h, str(path)), CalibratedJudge)


def test_registry_applies_the_shipped_map_and_none_turns_it_off():
    """get_judge('heuristic') gives calibrated confidences by default, the raw ones with confidence_calibration=none."""
    claim, ctx = [Claim(id="c", text="Bake the cookies at 350 F.")], ["Bake the cookies at 350 F for 8 to 10 minutes."]
    raw = get_judge("heuristic", JudgeSettings(confidence_calibration="none")).verify(claim, ctx).verdicts[0].confidence
    cal_ = get_judge("heuristic").verify(claim, ctx).verdicts[0].confidence
    assert cal_ == pytest.approx(shipped_map("heuristic")(raw), abs=1e-4)
    assert get_judge("heuristic").name == "heuristic"


def test_fit_lowers_ece_keeps_the_ranking_and_is_monotone():
    """On an over-confident judge the fitted map lowers ECE (also cross-validated) and escalation catches the same errors."""
    items = _overconfident()
    x, y = fit_isotonic(items)
    mapped = remapped(items, x, y)
    assert all(b >= a for a, b in zip(y, y[1:]))
    assert ece(mapped) < 0.05 < ece(items)
    assert cross_validated_ece(items) < ece(items)
    levels = sorted({s.confidence for s in items})
    after = [ConfidenceMap(tuple(x), tuple(y))(c) for c in levels]
    assert all(b > a for a, b in zip(after, after[1:]))  # distinct raw levels stay distinct and in order
    for share in (0.1, 0.3, 0.5):
        assert errors_caught(mapped, share) == pytest.approx(errors_caught(items, share))


def test_fit_needs_confidences():
    """Nothing with a confidence to fit on is a ConfigError, not an empty map."""
    with pytest.raises(ConfigError):
        fit_isotonic([Scored(None, False)])


def test_fit_confidence_command_writes_a_map_the_worker_setting_applies(tmp_path, monkeypatch):
    """calibrate --fit-confidence on labeled claims writes a map naming the judge; CLAIMWATCH_CONFIDENCE_CALIBRATION=PATH
    makes calibrate report the fitted ECE."""
    out_map = tmp_path / "heuristic.json"
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        assert (
            main(
                [
                    "calibrate",
                    str(cal.data_path("dev")),
                    "--judge",
                    "heuristic",
                    "--fit-confidence",
                    str(out_map),
                    "--json",
                ]
            )
            == 0
        )
    fitted = json.loads(out_map.read_text())
    assert fitted["judge"] == "heuristic" and fitted["n"] == 222 and fitted["ece_fitted"] < fitted["ece_raw"]
    assert json.loads(out.getvalue())["confidence"]["ece"] == pytest.approx(fitted["ece_raw"], abs=1e-3)  # raw: fitting
    assert "written to" in err.getvalue()
    monkeypatch.setenv("CLAIMWATCH_CONFIDENCE_CALIBRATION", str(out_map))
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        main(["calibrate", str(cal.data_path("dev")), "--judge", "heuristic", "--json"])
    assert json.loads(out.getvalue())["confidence"]["ece"] == pytest.approx(fitted["ece_fitted"], abs=2e-3)


def test_fit_confidence_refuses_answers():
    """--fit-confidence with --answers is a clear error (maps are fitted on claims)."""
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        assert main(["calibrate", str(cal.data_path("answers")), "--answers", "--fit-confidence", "x.json"]) != 0


#: the confidence maps (the folder also holds the answer-risk maps, ``<judge>.risk.json``: tests/unit/test_answer_risk.py)
CONFIDENCE_MAPS = sorted(p for p in SHIPPED_DIR.glob("*.json") if not p.name.endswith(".risk.json"))


def test_maps_ship_for_the_offline_judges_whose_map_beat_raw():
    """Maps ship for heuristic and hybrid (offline's was worse out of sample; the v2 verifier's temperature is
    fitted on the real dev claims in its model's calibration.json, and v1's map does not fit it: none)."""
    assert sorted(p.stem for p in CONFIDENCE_MAPS) == ["heuristic", "hybrid"]


@pytest.mark.parametrize("path", CONFIDENCE_MAPS, ids=lambda p: p.stem)
def test_shipped_maps_load_name_their_judge_and_beat_raw_out_of_sample(path):
    """Every shipped map loads, is for the judge its file names, was fitted on dev and lowers cross-validated ECE
    below the raw ECE, to at most 0.05 (the rule for shipping one)."""
    data = json.loads(path.read_text())
    m = ConfidenceMap.load(path)
    assert m.judge == path.stem and data["fitted_on"] == "claims_dev.jsonl"
    assert data["ece_cross_validated"] < data["ece_raw"] and data["ece_cross_validated"] <= 0.05


def test_answer_report_has_an_escalation_block_by_lowest_claim_confidence():
    """calibrate --answers reports the same confidence keys for answers, ranked by their least confident claim."""
    answers = [a for a in cal.load_labeled_answers(cal.data_path("answers"))][:30]
    rep = cal.calibrate_answers(get_judge("heuristic"), answers).to_json()
    block = rep["confidence"]
    assert block["n"] == 30 and set(block["errors_caught_at_escalated"]) == {"10%", "20%", "30%", "50%"}
    assert "ece" in block and "aurc" in block


def test_fit_map_records_its_provenance():
    """The map JSON says what it was fitted on, how many claims, and ECE raw / fitted / cross-validated."""
    m = fit_map(_overconfident(), "heuristic", fitted_on="x.jsonl")
    assert {"judge", "method", "x", "y", "fitted_on", "n", "ece_raw", "ece_fitted", "ece_cross_validated"} <= set(m)
    assert ConfidenceMap.from_json(m).judge == "heuristic"

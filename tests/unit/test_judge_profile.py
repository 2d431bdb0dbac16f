"""Judge profile from stratified labels, and rates corrected for the judge's measured error rates."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from scipy.stats import binomtest

from claimwatch.judge_profile import (
    FLAGGED_VERDICTS,
    Stratum,
    corrected_difference,
    corrected_rate,
    error_rates,
    fit_profile,
    label_next,
    simulate_coverage,
    strata_from_labels,
)
from claimwatch.labeling.sample import draw_plan, label_record, population

LABELS_GRID = (100, 300, 1000)
RATES_GRID = (0.6, 0.8, 0.95)
TRUE_RATES = (0.05, 0.3)


def _strata(se: float, sp: float, rate: float, n_flag: int, n_pass: int, pop: int = 100_000) -> list[Stratum]:
    """Two strata whose label counts are exactly what a judge with (se, sp) gives at a true rate."""
    tp, fp = rate * se, (1 - rate) * (1 - sp)
    fn, tn = rate * (1 - se), (1 - rate) * sp
    p_f, p_p = tp / (tp + fp), fn / (fn + tn)
    return [
        Stratum(
            "UNSUPPORTED",
            "UNSUPPORTED",
            round(pop * (tp + fp)),
            {"UNSUPPORTED": round(n_flag * p_f), "SUPPORTED": n_flag - round(n_flag * p_f)},
        ),
        Stratum(
            "SUPPORTED",
            "SUPPORTED",
            round(pop * (fn + tn)),
            {"UNSUPPORTED": round(n_pass * p_p), "SUPPORTED": n_pass - round(n_pass * p_p)},
        ),
    ]


def test_reweighted_strata_recover_sensitivity_and_specificity():
    """Se and Sp from verdict-stratified labels, reweighted by population shares, equal the judge's."""
    r = error_rates(_strata(0.8, 0.9, 0.2, 5000, 5000))
    assert r.sensitivity.estimate == pytest.approx(0.8, abs=0.01)
    assert r.specificity.estimate == pytest.approx(0.9, abs=0.01)
    assert r.rate.estimate == pytest.approx(0.2, abs=0.01)
    assert r.sensitivity.low < 0.8 < r.sensitivity.high


def test_corrected_rate_undoes_the_judge_errors():
    """A judge with Se 0.8 / Sp 0.9 flags 25% at a true 20%: the corrected rate is 20%, with an interval."""
    strata = _strata(0.8, 0.9, 0.2, 2000, 2000)
    r = corrected_rate(strata, flagged=2600, judged=10_000)  # q = 0.2*0.8 + 0.8*0.1 = 0.24, observed 0.26
    assert r.raw == pytest.approx(0.26)
    assert r.corrected.estimate == pytest.approx((0.26 + 0.9 - 1) / 0.7, abs=0.01)
    assert r.corrected.estimate is not None and r.corrected.low < r.corrected.estimate < r.corrected.high
    assert r.decidable and r.why is None


def test_a_judge_near_chance_is_too_uncertain_for_a_decision():
    """Se + Sp - 1 near 0 (or few labels) says 'too uncertain' instead of a number to roll back on."""
    weak = corrected_rate(_strata(0.55, 0.5, 0.2, 40, 40), flagged=500, judged=1000)
    assert not weak.decidable and "Se + Sp - 1" in (weak.why or "")
    few = corrected_rate(_strata(0.8, 0.9, 0.2, 15, 15), flagged=250, judged=1000, min_youden=0.0)
    assert not few.decidable and "wide" in (few.why or "")


def test_difference_keeps_the_raw_sign_and_rescales_it():
    """Candidate minus baseline, corrected: (q_c - q_b) / (Se + Sp - 1), its interval excluding 0 when it should."""
    strata = _strata(0.8, 0.9, 0.2, 1000, 1000)
    d = corrected_difference(strata, candidate=(3000, 10_000), baseline=(2400, 10_000))
    assert d.estimate == pytest.approx(0.06 / 0.7, abs=0.01)
    assert d.estimate is not None and 0 < d.low < d.estimate < d.high


def test_unlabelled_strata_keep_their_weight_from_the_plan():
    """A stratum nobody labelled still counts with its population share (and widens the interval)."""
    recs = [
        {"stratum": "SUPPORTED|hi", "judge_verdict": "SUPPORTED", "stratum_population": 900, "label": "SUPPORTED"},
        {
            "stratum": "UNSUPPORTED|hi",
            "judge_verdict": "UNSUPPORTED",
            "stratum_population": 100,
            "label": "UNSUPPORTED",
        },
    ]
    plan = {"SUPPORTED|lo": {"judge_verdict": "SUPPORTED", "population": 500, "slice": None}}
    strata = strata_from_labels(recs, plan_strata=plan)
    assert {s.key: s.labelled for s in strata} == {"SUPPORTED|hi": 1, "UNSUPPORTED|hi": 1, "SUPPORTED|lo": 0}
    assert {s.key: s.population for s in strata}["SUPPORTED|lo"] == 500


def test_profile_has_per_verdict_rates_and_slices_only_with_enough_labels():
    """The profile reports each verdict against the rest, and a slice only when it has labels on both sides."""
    recs = []
    for route, n in (("billing", 40), ("search", 5)):
        for i in range(n):
            verdict = "SUPPORTED" if i % 2 else "CONTRADICTED"
            recs.append(
                {
                    "stratum": f"route={route}|{verdict}",
                    "stratum_slice": f"route={route}",
                    "judge_verdict": verdict,
                    "stratum_population": 1000,
                    "judge": "j",
                    "label": verdict if i % 5 else "UNSUPPORTED",
                }
            )
    prof = fit_profile(recs, min_slice_labels=21)  # billing has 20 labels per side
    assert set(prof["per_verdict"]) == {"SUPPORTED", "UNSUPPORTED", "CONTRADICTED"}
    assert set(prof["slices"]) == set()
    prof = fit_profile(recs, min_slice_labels=20)
    assert set(prof["slices"]) == {"route=billing"}


def _label_lines(strata: list[Stratum]) -> list[dict]:
    return [
        {"stratum": s.key, "judge_verdict": s.judge_verdict, "stratum_population": s.population, "label": lab}
        for s in strata
        for lab, k in s.labels.items()
        for _ in range(k)
    ]


def test_the_advice_names_the_stratum_whose_labels_pin_the_less_certain_error_rate():
    """A judge that misses: label its passed claims next (sensitivity); one that over-flags: its flagged ones."""
    misses = fit_profile(_label_lines(_strata(0.6, 0.95, 0.1, 50, 50)))
    line = label_next(misses) or ""
    assert line.startswith("label next: stratum SUPPORTED (judge passed, 50 of ") and "pins the sensitivity" in line
    assert "--flagged-share 0.25" in line and "\n" not in line
    se, sp = misses["flagged"]["sensitivity"], misses["flagged"]["specificity"]
    assert se["high"] - se["low"] > sp["high"] - sp["low"]  # the one it pins is the wider interval
    over = label_next(fit_profile(_label_lines(_strata(0.95, 0.6, 0.1, 50, 50)))) or ""
    assert over.startswith("label next: stratum UNSUPPORTED (judge flagged, ") and "pins the specificity" in over
    assert "--flagged-share 0.75" in over


def test_a_stratum_nobody_labelled_is_advised_first():
    """A stratum of the plan with no label yet is known only by its prior: the advice names it."""
    recs = _label_lines(_strata(0.8, 0.9, 0.2, 40, 40))
    plan = {
        "SUPPORTED": {"judge_verdict": "SUPPORTED", "population": 72_000, "slice": None},
        "UNSUPPORTED": {"judge_verdict": "UNSUPPORTED", "population": 24_000, "slice": None},
        "CONTRADICTED|conf<0.80": {"judge_verdict": "CONTRADICTED", "population": 300, "slice": None},
    }
    line = label_next(fit_profile(recs, plan_strata=plan)) or ""
    assert "stratum CONTRADICTED|conf<0.80 (judge flagged, 0 of 300 labelled): nobody labelled it yet" in line


def test_calibrate_prints_the_advice_after_the_profile(tmp_path, capsys):
    """`claimwatch calibrate LABELS --profile-out` ends its profile text with the one-line advice."""
    from claimwatch.cli import main as cli_main

    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps(r) + "\n" for r in _label_lines(_strata(0.6, 0.95, 0.1, 50, 50))))
    assert cli_main(["calibrate", str(labels), "--profile-out", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr().out.rstrip().splitlines()
    assert out[-1].startswith("label next: stratum SUPPORTED (judge passed, ")
    assert [line for line in out if line.startswith("label next:")] == out[-1:]


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_corrected_intervals_cover_the_true_rate():
    """Seeded simulation: over 100-1,000 labels, judge Se and Sp 0.6-0.95 and true rates 5% and 30%, no cell's
    coverage of the nominal 95% interval is significantly below 93% (one-sided binomial p < 0.001), and the
    pooled coverage is at least 94%."""
    reps = 300
    covered = total = 0
    worst = []
    for i, (n, se, sp, rate) in enumerate(itertools.product(LABELS_GRID, RATES_GRID, RATES_GRID, TRUE_RATES)):
        r = simulate_coverage(labels=n, se=se, sp=sp, true_rate=rate, reps=reps, draws=1500, seed=100 + i)
        k = round(r.coverage * reps)
        covered, total = covered + k, total + reps
        if binomtest(k, reps, 0.93, alternative="less").pvalue < 0.001:
            worst.append((n, se, sp, rate, r.coverage))
    assert not worst, worst
    assert covered / total >= 0.94


def test_a_shifted_deployment_is_covered_too():
    """The error rates measured at one true rate correct a deployment whose true rate differs (transport)."""
    r = simulate_coverage(labels=300, se=0.8, sp=0.9, true_rate=0.05, target_rate=0.25, reps=400, seed=7)
    assert r.coverage >= 0.93


def _simulated_claims(rng: random.Random, n: int, rate: float, se: float, sp: float) -> list[tuple[bool, str, float]]:
    """``n`` claims of a deployment: (truly flagged, the judge's verdict with sensitivity se / specificity sp,
    its confidence)."""
    out = []
    for _ in range(n):
        bad = rng.random() < rate
        flagged = rng.random() < (se if bad else 1 - sp)
        out.append((bad, rng.choice(FLAGGED_VERDICTS) if flagged else "SUPPORTED", round(rng.random(), 3)))
    return out


def _real_path_covers(seed: int, labels: int, se: float, sp: float, rate: float) -> bool:
    """One run of what a user does: result records of a deployment -> the real plan -> labels -> the real strata ->
    the real corrected rate of a second deployment judged by the same judge; does its interval cover ``rate``?"""
    rng = random.Random(seed)
    claims = _simulated_claims(rng, 1000, rate, se, sp)
    results = [
        {
            "trace_id": f"t{i}",
            "judge": "sim",
            "outcome": "evaluated",
            "slices": {"release": "v1"},
            "claims": [{"id": "c0", "text": f"claim {i}", "verdict": verdict, "confidence": conf}],
        }
        for i, (_, verdict, conf) in enumerate(claims)
    ]
    plan = draw_plan(population(results), labels, seed=seed)  # stratified by verdict and confidence band
    truly = {f"t{i}/c0": bad for i, (bad, _, _) in enumerate(claims)}
    recs = [
        label_record(it, "UNSUPPORTED" if truly[it["id"]] else "SUPPORTED", labeller=None, at=0.0)
        for it in plan["items"]
    ]
    strata = strata_from_labels(recs, plan_strata=plan["strata"])
    measured = _simulated_claims(rng, 2000, rate, se, sp)
    r = corrected_rate(strata, sum(v != "SUPPORTED" for _, v, _ in measured), len(measured), seed=seed)
    return r.corrected.low <= rate <= r.corrected.high


@pytest.mark.slow  # the slow tier (scripts/test.sh --fast leaves it out)
def test_the_real_labelling_path_covers_the_true_rate():
    """Seeded: plan, labels, strata and corrected_rate themselves (not simulate_coverage's copy) cover >= 93%."""
    reps, covered = 150, 0
    for cell, (labels, se, sp, rate) in enumerate(
        ((100, 0.6, 0.95, 0.1), (200, 0.95, 0.6, 0.3), (300, 0.8, 0.8, 0.05))
    ):
        k = sum(_real_path_covers(10_000 * cell + i, labels, se, sp, rate) for i in range(reps))
        # a cell fails only when it is significantly below 93% (one-sided binomial p < 0.01)
        assert binomtest(k, reps, 0.93, alternative="less").pvalue >= 0.01, (labels, se, sp, rate, k / reps)
        covered += k
    assert covered / (3 * reps) >= 0.93


def test_correct_command_counts_claims_per_release(tmp_path, capsys):
    """`correct --results` counts judged and flagged claims per release (last record per trace) and corrects each."""
    from claimwatch.judge_profile import claim_counts, main

    recs = [
        {"trace_id": "a", "slices": {"release": "v1"}, "claims": [{"verdict": "UNSUPPORTED"}]},
        {"trace_id": "a", "slices": {"release": "v1"}, "claims": [{"verdict": "SUPPORTED"}, {"verdict": "ERROR"}]},
        {"trace_id": "b", "slices": {"release": "v2"}, "claims": [{"verdict": "CONTRADICTED"}]},
    ]
    assert claim_counts(recs) == {"v1": (0, 1), "v2": (1, 1)}
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    prof = fit_profile(
        [
            {"stratum": s.key, "judge_verdict": s.judge_verdict, "stratum_population": s.population, "label": lab}
            for s in _strata(0.9, 0.9, 0.2, 60, 60)
            for lab, k in s.labels.items()
            for _ in range(k)
        ]
    )
    (tmp_path / "p.json").write_text(json.dumps(prof))
    assert main(["correct", "--profile", str(tmp_path / "p.json"), "--results", str(tmp_path / "r.jsonl")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("release v1: ") and "release v2: " in out and "corrected" in out

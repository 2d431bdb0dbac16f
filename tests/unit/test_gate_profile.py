"""claimwatch gate --profile: raw and corrected shares side by side, and a rollback the judge's error rates cannot support held."""

from __future__ import annotations

import json
import re

import pytest

from claimwatch.gate import ROLLBACK, GateConfig, ReleaseCounts, Source, counts_from_results, run_gate
from claimwatch.gate.counts import Counts

pytest.importorskip("numpy")


def _records(se: float, sp: float, rate: float, n_flag: int, n_pass: int, unit: str, pop: int = 100_000) -> list[dict]:
    """Labels exactly as a judge with (se, sp) gives them at a true rate, stratified by the judge's call."""
    from claimwatch.judge_profile import HALLUCINATED

    tp, fp, fn, tn = rate * se, (1 - rate) * (1 - sp), rate * (1 - se), (1 - rate) * sp
    bad, good = ("hallucinated", "faithful") if unit == "answer" else ("UNSUPPORTED", "SUPPORTED")
    flagged_call = HALLUCINATED[0] if unit == "answer" else "UNSUPPORTED"
    passed_call = "faithful" if unit == "answer" else "SUPPORTED"
    out = []
    for call, share, n, p_bad in (
        (flagged_call, tp + fp, n_flag, tp / (tp + fp)),
        (passed_call, fn + tn, n_pass, fn / (fn + tn)),
    ):
        k = round(n * p_bad)
        for i in range(n):
            rec = {
                "stratum": call,
                "judge_verdict": call,
                "stratum_population": round(pop * share),
                "label": bad if i < k else good,
            }
            if unit == "answer":
                rec["unit"] = "answer"
            out.append(rec)
    return out


def _profile(tmp_path, se: float, sp: float, n: int, unit: str = "answer") -> str:
    from claimwatch.judge_profile import fit_profile

    path = tmp_path / f"profile-{unit}-{se}-{n}.json"
    path.write_text(json.dumps(fit_profile(_records(se, sp, 0.2, n, n, unit))))
    return str(path)


def _fetch(shares: dict[str, tuple[int, int]]):
    def fetch(source: Source, release: str, window: str) -> ReleaseCounts:
        flagged, answers = shares[release]
        return ReleaseCounts(
            answers=answers, flagged=flagged, claims=Counts(supported=2 * answers - flagged, unsupported=flagged)
        )

    return fetch


CLEAR_REGRESSION = {"v1": (60, 600), "v2": (240, 600)}  # 10% -> 40% of answers flagged


def test_a_well_measured_judge_keeps_the_rollback_and_prints_corrected_shares(tmp_path):
    """Se/Sp 0.9 from 400 labelled answers: still ROLLBACK, each release's corrected share beside its raw one."""
    code, text = run_gate(
        Source("http://unused"),
        "v1",
        "v2",
        config=GateConfig(),
        fetch=_fetch(CLEAR_REGRESSION),
        profile=_profile(tmp_path, 0.9, 0.9, 200),
    )
    assert code == 1 and "ROLLBACK" in text.splitlines()[0]
    assert "raw 10.00% -> corrected" in text and "raw 40.00% -> corrected" in text
    corrected = [float(m.group(1)) for m in re.finditer(r"-> corrected ([\d.]+)%", text)]
    # false positives inflate the baseline's raw share; the true difference is the raw one over Se + Sp - 1 (~0.8)
    assert corrected[0] < 10.0 < corrected[1] and corrected[1] - corrected[0] > 30.0


def test_a_profile_takes_precedence_over_the_judge_fitness_table(tmp_path):
    """Heuristic counts (unfit without a profile) with a well-measured answer profile: ROLLBACK, no judge-fitness line."""
    from dataclasses import replace

    plain = _fetch(CLEAR_REGRESSION)

    def fetch(source: Source, release: str, window: str) -> ReleaseCounts:
        return replace(plain(source, release, window), judges=("heuristic",))

    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=fetch, profile=_profile(tmp_path, 0.9, 0.9, 200))
    assert code == 1 and "ROLLBACK" in text.splitlines()[0]
    assert "judge heuristic" not in text and "-> corrected" in text
    held, _ = run_gate(Source("http://unused"), "v1", "v2", fetch=fetch)
    assert held == 2  # the same counts without the profile


def test_a_judge_whose_error_rates_are_too_uncertain_holds_the_rollback(tmp_path):
    """A near-chance judge measured on 40 answers: the same regression is HOLD (exit 2), with the reason said."""
    code, text = run_gate(
        Source("http://unused"),
        "v1",
        "v2",
        config=GateConfig(),
        fetch=_fetch(CLEAR_REGRESSION),
        profile=_profile(tmp_path, 0.6, 0.6, 20),
    )
    assert code == 2 and "HOLD" in text.splitlines()[0]
    assert "too uncertain for a rollback decision" in text


def test_a_claim_profile_is_shown_for_reference_and_never_vetoes(tmp_path):
    """A claim profile's corrected rates are for reference: never a veto, but a too-uncertain one says why."""
    code, text = run_gate(
        Source("http://unused"),
        "v1",
        "v2",
        config=GateConfig(),
        fetch=_fetch(CLEAR_REGRESSION),
        profile=_profile(tmp_path, 0.6, 0.6, 20, unit="claim"),
    )
    assert code == 1 and "(claims, " in text and "for reference" in text
    # a near-chance judge measured on 40 claims: the reason is printed even though nothing is held
    assert re.search(r"too uncertain for a decision: the judge's Se \+ Sp - 1 may be as low as -?[\d.]+", text), text


def test_an_unreadable_profile_holds_with_the_reason(tmp_path):
    """A missing or foreign profile file is a HOLD naming the file, never a silent raw decision."""
    bad = tmp_path / "not-a-profile.json"
    bad.write_text('{"kind": "something else"}')
    code, text = run_gate(Source("http://unused"), "v1", "v2", fetch=_fetch(CLEAR_REGRESSION), profile=str(bad))
    assert code == 2 and "not-a-profile.json" in text
    assert ROLLBACK not in text.splitlines()[0].lower()


def _results(release: str, answers: int, flagged: int) -> list[dict]:
    return [
        {
            "trace_id": f"{release}-{i}",
            "outcome": "evaluated",
            "slices": {"release": release, "route": "faq"},
            "claims": [{"id": "c1", "text": "x", "verdict": "UNSUPPORTED" if i < flagged else "SUPPORTED"}],
        }
        for i in range(answers)
    ]


def test_the_release_report_shows_corrected_shares_and_applies_the_same_veto(tmp_path):
    """claimwatch report --profile: the page has the corrected section, and a near-chance judge holds the rollback."""
    from claimwatch.report import build_report, render_html

    results = _results("v1", 200, 20) + _results("v2", 200, 80)
    good = build_report(results, "v1", "v2", profile=_profile(tmp_path, 0.9, 0.9, 200))
    assert good.decision.action == ROLLBACK and len(good.corrected) == 3
    page = render_html(good)
    assert 'id="corrected"' in page and "raw 10.00% -&gt; corrected" in page
    weak = build_report(results, "v1", "v2", profile=_profile(tmp_path, 0.6, 0.6, 20))
    assert weak.decision.action == "hold" and any("too uncertain" in r for r in weak.decision.reasons)


CORRECTED = re.compile(r"raw ([\d.]+)% -> corrected ([\d.]+)% \[([\d.]+)%, ([\d.]+)%\]")


def test_the_gate_command_reads_a_results_file_and_prints_corrected_shares(tmp_path, capsys):
    """`gate --results FILE --profile P` decides on a file's counts, printing raw and corrected with intervals."""
    from claimwatch.cli import main as cli_main

    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in _results("v1", 200, 20) + _results("v2", 200, 80)))
    args = ["gate", "--results", str(results), "--baseline", "v1", "--candidate", "v2"]
    assert cli_main([*args, "--profile", _profile(tmp_path, 0.9, 0.9, 200)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("claimwatch gate: ROLLBACK (exit 1)") and f"results file {results}" in out
    shares = [tuple(map(float, m.groups())) for m in CORRECTED.finditer(out)]
    assert [s[0] for s in shares] == [10.0, 40.0] and all(lo <= c <= hi for _, c, lo, hi in shares)
    assert cli_main([*args, "--profile", _profile(tmp_path, 0.6, 0.6, 20)]) == 2  # the same veto as from Prometheus
    assert "too uncertain for a rollback decision" in capsys.readouterr().out
    assert cli_main([*args, "--follow"]) == 2  # --follow needs Prometheus
    assert "--follow" in capsys.readouterr().err
    # without a profile: the decision run_gate makes on the same counts
    counts = counts_from_results(_results("v1", 200, 20) + _results("v2", 200, 80), ["v1", "v2"])
    for extra in ([], ["--trust-judge"]):
        expected, text = run_gate(
            Source("http://unused"),
            "v1",
            "v2",
            fetch=lambda source, release, window: counts[release],
            trust_judge=bool(extra),
        )
        assert cli_main([*args, *extra]) == expected
        out = capsys.readouterr().out.splitlines()
        assert out[0] == text.splitlines()[0] and out[2:] == text.splitlines()[2:]  # line 1: the file, not a window

"""`claimwatch label`: the stratified plan, the terminal session (resume, skip, back) and the labels file."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from claimwatch.calibration import load_labeled_claims
from claimwatch.claims_query import read_results_file
from claimwatch.judge_profile import corrected_rate, load_profile
from claimwatch.judge_profile import main as profile_main
from claimwatch.labeling import main
from claimwatch.labeling.sample import _allocate, band, draw_plan, plan_path, population
from claimwatch.labeling.session import run_session, skipped_path
from tests.unit.labeling_sim import deployment

ROOT = Path(__file__).resolve().parents[2]


def _record(trace: str, verdicts: list[str], release: str = "v1", **extra) -> dict:
    return {
        "trace_id": trace,
        "judge": "j",
        "outcome": "evaluated",
        "slices": {"release": release},
        "question": "q?",
        "claims": [
            {"id": f"c{i}", "text": f"claim {trace} {i}", "verdict": v, "confidence": 0.9}
            for i, v in enumerate(verdicts)
        ],
        **extra,
    }


def test_population_keeps_judged_claims_of_the_last_record_per_trace():
    """ERROR claims, claims without text and superseded records of a trace are not in the population."""
    recs = [
        _record("t1", ["UNSUPPORTED"]),
        _record("t1", ["SUPPORTED", "ERROR"]),
        {**_record("t2", ["SUPPORTED"]), "claims": [{"id": "c0", "verdict": "SUPPORTED"}]},
        _record("t3", ["CONTRADICTED"], release="v2"),
    ]
    cands = population(recs, cuts=(0.8,))
    assert sorted(c.id for c in cands) == ["t1/c0", "t3/c0"]
    assert [c.stratum for c in cands if c.id == "t1/c0"] == ["SUPPORTED|conf>=0.80"]
    assert [c.id for c in population(recs, filters={"release": "v2"})] == ["t3/c0"]
    by = population(recs, by="release")
    assert {c.stratum for c in by} == {"release=v1|SUPPORTED|conf>=0.80", "release=v2|CONTRADICTED|conf>=0.80"}


def test_confidence_bands():
    """Band names follow the cut points; a missing confidence counts as 0.5."""
    assert band(0.79, (0.8,)) == "conf<0.80"
    assert band(0.8, (0.8,)) == "conf>=0.80"
    assert band(0.7, (0.6, 0.9)) == "conf0.60-0.90"
    assert band(None, (0.8,)) == "conf<0.80"


def test_allocation_is_proportional_and_capped():
    """Two labels per stratum first, the rest proportionally, never more than a stratum holds, all handed out."""
    assert _allocate({"a": 90, "b": 10}, 20) == {"a": 17, "b": 3}
    assert _allocate({"a": 3, "b": 1000}, 100) == {"a": 2, "b": 98}
    assert _allocate({"a": 3, "b": 1000}, 3) == {"a": 0, "b": 3}  # too few labels for the floor
    assert sum(_allocate({"a": 7, "b": 5, "c": 1}, 10).values()) == 10
    assert _allocate({"a": 2}, 10) == {"a": 2}


def test_plan_puts_the_flagged_share_on_flagged_verdicts(tmp_path):
    """Half the sample from judge-flagged strata (rare in the population), each item carrying its stratum share."""
    deployment(tmp_path / "r.jsonl", answers=1000, true_rate=0.1, se=0.8, sp=0.9)
    plan = draw_plan(population(read_results_file(tmp_path / "r.jsonl")), 200, seed=3)
    flagged = sum(1 for it in plan["items"] if it["judge_verdict"] != "SUPPORTED")
    assert plan["n"] == 200 and flagged == 100
    assert sum(st["population"] for st in plan["strata"].values()) == plan["population_total"] == 2000
    it = plan["items"][0]
    assert it["stratum_share"] == pytest.approx(it["stratum_population"] / 2000, abs=1e-6)
    again = draw_plan(population(read_results_file(tmp_path / "r.jsonl")), 200, seed=3)
    assert [i["id"] for i in again["items"]] == [i["id"] for i in plan["items"]]  # seeded


def test_session_labels_skips_goes_back_and_resumes(tmp_path):
    """s/u/c append a label, k a skip, b undoes the last answer, q stops; a new session shows only the rest."""
    recs = [_record(f"t{i}", ["SUPPORTED" if i % 2 else "UNSUPPORTED"]) for i in range(6)]
    plan = draw_plan(population(recs), 6, seed=1)
    labels = tmp_path / "labels.jsonl"
    out = io.StringIO()
    s = run_session(plan, labels, io.StringIO("s\nk\nb\nu\nzz\nq\n"), out)
    assert (s.labelled, s.skipped, s.total, s.finished) == (2, 0, 6, False)
    assert "[1/6]" in out.getvalue() and "[3/6]" in out.getvalue() and "? one of" in out.getvalue()
    got = [json.loads(line)["label"] for line in labels.read_text().splitlines()]
    assert got == ["SUPPORTED", "UNSUPPORTED"]
    out = io.StringIO()
    s = run_session(plan, labels, io.StringIO("c\nk\n"), out)  # end of input: stops, keeps what was given
    assert "[3/6]" in out.getvalue() and "[1/6]" not in out.getvalue()
    assert (s.labelled, s.skipped) == (3, 1)
    assert len(skipped_path(labels).read_text().splitlines()) == 1
    items = load_labeled_claims(labels)  # what `claimwatch calibrate` reads
    assert [i.label for i in items] == ["SUPPORTED", "UNSUPPORTED", "CONTRADICTED"]
    assert set(items[0].extra) >= {"judge_verdict", "stratum"} and "question" not in items[0].extra


def test_blind_mode_hides_the_judge(tmp_path):
    """--blind shows question, claim and chunk but not the judge's verdict."""
    plan = draw_plan(population([_record("t1", ["CONTRADICTED"])]), 1)
    out = io.StringIO()
    run_session(plan, tmp_path / "l.jsonl", io.StringIO("q\n"), out, blind=True)
    assert "claim t1 0" in out.getvalue() and "judge" not in out.getvalue().split("label?")[0]


def _answers(plan_file: Path, truth: dict[str, bool], start: int, stop: int) -> str:
    """What a careful labeller types for plan items ``start:stop``: the true label of each claim."""
    items = json.loads(plan_file.read_text())["items"][start:stop]
    return "".join(("u" if truth[it["id"]] else "s") + "\n" for it in items)


def test_end_to_end_label_200_claims_then_profile_then_corrected_rate(tmp_path):
    """A scripted labeller drives the real command through a pipe (two sessions), the profile is fitted from the
    labels, and the corrected rate of another deployment covers its known true rate (the raw rate is 6 points off)."""
    results, labels = tmp_path / "results.jsonl", tmp_path / "labels.jsonl"
    truth = deployment(results, answers=2000, true_rate=0.1, se=0.7, sp=0.85, seed=4)
    cmd = [sys.executable, "-m", "claimwatch.labeling", "--out", str(labels)]
    assert main(["--results", str(results), "--out", str(labels), "--n", "200", "--plan-only"]) == 0
    first = subprocess.run(
        cmd,
        input=_answers(plan_path(labels), truth, 0, 120) + "q\n",
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert first.returncode == 0, first.stderr
    assert "[120/200]" in first.stdout and "run the same command again" in first.stderr
    second = subprocess.run(
        cmd, input=_answers(plan_path(labels), truth, 120, 200), text=True, capture_output=True, cwd=ROOT, timeout=60
    )
    assert second.returncode == 0, second.stderr
    assert "[121/200]" in second.stdout and "[1/200]" not in second.stdout
    recs = [json.loads(line) for line in labels.read_text().splitlines()]
    assert len(recs) == 200 and len({r["id"] for r in recs}) == 200
    assert Counter(r["judge_verdict"] != "SUPPORTED" for r in recs) == {True: 100, False: 100}

    profile = tmp_path / "profile.json"
    assert profile_main(["fit", str(labels), "--profile-out", str(profile)]) == 0
    data, strata = load_profile(profile)
    f = data["flagged"]
    from claimwatch.cli import main as cli_main  # the documented command writes the same profile

    assert cli_main(["calibrate", str(labels), "--profile-out", str(tmp_path / "via-cli.json")]) == 0
    via_cli = json.loads((tmp_path / "via-cli.json").read_text())["flagged"]
    assert via_cli["sensitivity"]["estimate"] == f["sensitivity"]["estimate"]
    assert f["sensitivity"]["low"] < 0.7 < f["sensitivity"]["high"]
    assert f["specificity"]["low"] < 0.85 < f["specificity"]["high"]
    # another deployment (say the candidate release) with a true rate of 20%, judged by the same judge
    target = deployment(tmp_path / "cand.jsonl", answers=5000, true_rate=0.2, se=0.7, sp=0.85, seed=9, release="v2")
    judged = [c for r in read_results_file(tmp_path / "cand.jsonl") for c in r["claims"]]
    flagged = sum(c["verdict"] != "SUPPORTED" for c in judged)
    true_share = sum(target.values()) / len(target)
    r = corrected_rate(strata, flagged, len(judged))
    assert r.corrected.low <= true_share <= r.corrected.high
    # 200 labels on a mediocre judge: an honest interval, too wide to roll back on (the command says so)
    assert r.decidable == (r.youden_low > 0.1 and r.corrected.width <= 0.2)
    assert r.raw is not None and r.raw > true_share + 0.05


def test_answer_unit_labels_whole_answers_for_the_gate(tmp_path):
    """--unit answer: answers stratified by the judge's call, labelled faithful/hallucinated through the real
    command, readable by `calibrate --answers`, and a profile whose corrected answer share covers the truth."""
    from claimwatch.calibration import load_labeled_answers
    from claimwatch.judge_profile import answer_counts, positive_for

    results, labels = tmp_path / "results.jsonl", tmp_path / "answers.jsonl"
    truth = deployment(results, answers=3000, true_rate=0.08, se=0.85, sp=0.95, seed=2)
    assert main(["--unit", "answer", "--results", str(results), "--out", str(labels), "--n", "300", "--plan-only"]) == 0
    items = json.loads(plan_path(labels).read_text())["items"]
    bad = {it["id"]: any(truth[f"{it['id']}/{c['id']}"] for c in it["claims"]) for it in items}
    keys = "".join(("h" if bad[it["id"]] else "f") + "\n" for it in items)
    proc = subprocess.run(
        [sys.executable, "-m", "claimwatch.labeling", "--out", str(labels)],
        input=keys,
        text=True,
        capture_output=True,
        cwd=ROOT,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "[300/300]" in proc.stdout and "[f]aithful" in proc.stdout
    answers = load_labeled_answers(labels)
    assert len(answers) == 300 and {a.label for a in answers} == {"faithful", "hallucinated"}
    profile = tmp_path / "p.json"
    assert profile_main(["fit", str(labels), "--profile-out", str(profile)]) == 0
    data, strata = load_profile(profile)
    assert data["unit"] == "answer" and positive_for(data) == ("hallucinated",)
    cand = tmp_path / "cand.jsonl"
    ctruth = deployment(cand, answers=4000, true_rate=0.15, se=0.85, sp=0.95, seed=5, release="v2")
    ((flagged, judged),) = answer_counts(read_results_file(cand)).values()
    true_share = sum(any(ctruth[f"v2-{a:06d}/c{c}"] for c in range(2)) for a in range(4000)) / 4000
    r = corrected_rate(strata, flagged, judged, positive=positive_for(data))
    assert r.corrected.low <= true_share <= r.corrected.high


def test_the_precision_hint_is_the_docs_table_row():
    """The command's precision hint gives the same half-widths as docs/labeling.md's Se = Sp = 0.8 row."""
    import re

    from claimwatch.labeling.cli import PRECISION_HINT

    docs = (ROOT / "docs" / "labeling.md").read_text(encoding="utf-8")
    (row,) = [line for line in docs.splitlines() if line.startswith("| 0.80 / 0.80 |")]
    assert re.findall(r"±([\d.]+)", row) == re.findall(r"\+-([\d.]+)", PRECISION_HINT)
    assert "Se = Sp = 0.8" in PRECISION_HINT

"""``claimwatch calibrate --real``: one judge on one split of a real human-labelled set, baselines beside."""

from __future__ import annotations

import json

from claimwatch.cli import main


def test_calibrate_real_prints_judge_beside_baselines(capsys):
    """calibrate --real prints the judge's claim table with flag-everything and claim-length rows."""
    assert (
        main(["calibrate", "--real", "factcheck-gpt", "--split", "dev", "--limit", "12", "--judge", "heuristic"]) == 0
    )
    out = capsys.readouterr().out
    assert "| heuristic | 12 |" in out and "| flag everything | 12 |" in out and "| claim length | 12 |" in out


def test_calibrate_real_json_has_answer_metrics_and_style(capsys):
    """calibrate --real --json gives the answer AUC, the length baseline and the per-model style block."""
    assert (
        main(
            [
                "calibrate",
                "--real",
                "expertqa",
                "--split",
                "dev",
                "--limit",
                "10",
                "--judge",
                "heuristic",
                "--json",
                "--compact",
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    entry = doc["judges"]["heuristic"]
    assert doc["set"] == "expertqa" and doc["split"] == "dev" and doc["data"]["answers"] == 10
    assert {"auc", "fpr_at_70_recall", "baseline_length_auc"} <= set(entry["answers"])
    assert "per_model" in entry["answers_style"]


def test_calibrate_real_refuses_a_file(capsys):
    """calibrate --real with a claims file is a usage error (exit 2), not a silent choice between them."""
    assert main(["calibrate", "claims.jsonl", "--real", "wice"]) == 2
    assert "--real" in capsys.readouterr().err

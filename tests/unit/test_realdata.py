"""The real human-labelled sets (data/real/): committed files, loaders, label mapping, splits, report, benchmark."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from claimwatch import calibration as cal
from claimwatch import realdata, realreport

COMMITTED = ("factcheck-gpt", "summedits", "expertqa", "wice")


@pytest.mark.parametrize("rel", sorted(realdata.SHA256))
def test_committed_file_matches_pinned_sha256(rel):
    """Every committed extract decompresses to the bytes whose sha256 SOURCE.md and realdata.SHA256 record."""
    assert realdata.file_sha256(rel) == realdata.SHA256[rel]


@pytest.mark.parametrize("name", COMMITTED)
def test_each_set_has_source_and_licence(name):
    """Each committed set's folder carries a SOURCE.md naming the commit and the upstream licence file."""
    folder = realdata.data_root() / name
    source = (folder / "SOURCE.md").read_text(encoding="utf-8")
    assert "commit `" in source and "sha256" in source
    assert any(p.name.upper().startswith("LICENSE") for p in folder.iterdir())


def test_loaders_parse_the_committed_files():
    """The loaders read every committed set with the documented counts and labels."""
    fc = realdata.load_real("factcheck-gpt").summary()
    assert fc["claim_labels"] == {"CONTRADICTED": 73, "SUPPORTED": 299, "UNSUPPORTED": 280}
    se = realdata.load_real("summedits").summary()
    assert se["answer_labels"] == {"faithful": 1648, "hallucinated": 3033} and se["claims"] == 0
    eq = realdata.load_real("expertqa").summary()
    assert eq["claim_labels"] == {"SUPPORTED": 1209, "UNSUPPORTED": 479}
    assert eq["answer_labels"] == {"faithful": 74, "hallucinated": 110}
    wi = realdata.load_real("wice").summary()
    assert wi["claim_labels"] == {"SUPPORTED": 226, "UNSUPPORTED": 481}


def test_items_are_well_formed_with_source_model():
    """Every item has text, a non-empty context, a split and a source model (style invariance needs it)."""
    for name in COMMITTED:
        data = realdata.load_real(name)
        for item in [*data.claims, *data.answers]:
            assert item.context and all(c.strip() for c in item.context)
            assert item.extra["split"] in realdata.SPLITS and item.extra["model"]
        assert len({c.id for c in data.claims}) == len(data.claims)
        assert len({a.id for a in data.answers}) == len(data.answers)


def test_expertqa_records_four_source_systems():
    """ExpertQA answers carry the GPT-4 system that wrote them (four systems have passages)."""
    models = {a.extra["model"] for a in realdata.load_real("expertqa").answers}
    assert models == {"post_hoc_gs_gpt4", "post_hoc_sphere_gpt4", "rr_gs_gpt4", "rr_sphere_gpt4"}


def test_factcheck_label_mapping():
    """Factcheck-GPT stances: any full support -> SUPPORTED, else refute -> CONTRADICTED, partial/irrelevant ->
    UNSUPPORTED; support and refute together, or no stance, drop the claim."""
    assert realdata.factcheck_label(["irrelevant", "completely-support"]) == "SUPPORTED"
    assert realdata.factcheck_label(["irrelevant", "refute", "partially-support"]) == "CONTRADICTED"
    assert realdata.factcheck_label(["partially-support", "irrelevant"]) == "UNSUPPORTED"
    assert realdata.factcheck_label(["completely-support", "refute"]) is None
    assert realdata.factcheck_label([]) is None


def test_claim_label_mapping():
    """ExpertQA/WiCE labels: complete support only is SUPPORTED; partial is UNSUPPORTED; N/A is dropped."""
    assert realdata.claim_label("Complete") == "SUPPORTED"
    assert realdata.claim_label("Partial") == realdata.claim_label("Incomplete") == "UNSUPPORTED"
    assert realdata.claim_label("supported") == "SUPPORTED"
    assert realdata.claim_label("partially_supported") == realdata.claim_label("not_supported") == "UNSUPPORTED"
    assert realdata.claim_label("N/A") is None and realdata.claim_label(None) is None


def test_split_of_is_fixed():
    """The split of a group is a pure function of its name (pinned values: changing the salt would show here)."""
    assert [realdata.split_of(f"g{i}") for i in range(6)] == [realdata.split_of(f"g{i}") for i in range(6)]
    shares = [realdata.split_of(f"group-{i}") for i in range(2000)]
    assert abs(shares.count("train") / 2000 - 0.5) < 0.05
    assert abs(shares.count("dev") / 2000 - 0.2) < 0.04
    assert abs(shares.count("eval") / 2000 - 0.3) < 0.04


@pytest.mark.parametrize("name", COMMITTED)
def test_splits_are_disjoint_by_source_group_and_cover_the_set(name):
    """train/dev/eval never share a source group (prompt, document, question, article) and together hold every item."""
    everything = realdata.load_real(name)
    groups: dict[str, set[str]] = {}
    ids: set[str] = set()
    for split in realdata.SPLITS:
        part = realdata.load_real(name, split)
        items = [*part.claims, *part.answers]
        assert items, f"{name} {split} is empty"
        groups[split] = {i.extra["group"] for i in items}
        ids |= {i.id for i in items}
    assert not groups["train"] & groups["dev"] and not groups["train"] & groups["eval"]
    assert not groups["dev"] & groups["eval"]
    assert ids == {i.id for i in [*everything.claims, *everything.answers]}


def test_limit_is_a_fixed_nested_sample():
    """--limit draws the same items every time, and a larger limit keeps every item of a smaller one."""
    small = realdata.load_real("wice", "dev", limit=10)
    again = realdata.load_real("wice", "dev", limit=10)
    large = realdata.load_real("wice", "dev", limit=40)
    assert [c.id for c in small.claims] == [c.id for c in again.claims] and len(small.claims) == 10
    assert {c.id for c in small.claims} <= {c.id for c in large.claims}


def test_faithbench_is_not_committed_and_checked(tmp_path):
    """FaithBench is read only from a fetched file whose sha256 matches the pinned upstream file."""
    assert (
        not (realdata.data_root() / "faithbench" / "FaithBench.csv").exists()
        or (realdata.data_root() / "faithbench" / ".gitignore").read_text().strip() == "FaithBench.csv"
    )
    with pytest.raises(realdata.RealDataMissing):
        realdata.load_real("faithbench", root=tmp_path)
    (tmp_path / "faithbench").mkdir()
    (tmp_path / "faithbench" / "FaithBench.csv").write_text("source,summary,LLM,worst-label,best-label\n")
    with pytest.raises(realdata.RealDataMissing, match="sha256"):
        realdata.load_real("faithbench", root=tmp_path)


def test_unknown_set_or_split_is_refused():
    """An unknown set or split is a ValueError naming the choices."""
    with pytest.raises(ValueError, match="expected one of"):
        realdata.load_real("nope")
    with pytest.raises(ValueError, match="expected one of"):
        realdata.load_real("wice", "test")


def test_fpr_at_recall_counts_ties_as_flagged():
    """FP rate at 70% recall: the threshold is the score that reaches the recall; negatives tied at it count."""
    scores = [0.9, 0.8, 0.7, 0.1, 0.8, 0.2, 0.0]
    positives = [True, True, True, True, False, False, False]
    # 70% of 4 positives -> 3 needed -> threshold 0.7 -> negatives >= 0.7: one of three
    assert realreport.fpr_at_recall(scores, positives) == pytest.approx(1 / 3)
    assert realreport.fpr_at_recall([1.0], [True]) is None


def _claim(label: str, text: str = "c") -> cal.LabeledClaim:
    return cal.LabeledClaim(id=f"{label}-{text}", claim=text, context=("ctx",), label=label, extra={"model": "m"})


def test_claim_metrics_positive_is_a_hallucination():
    """TPR counts flagged hallucinations, TNR grounded claims passed, contradiction recall exact CONTRADICTED."""
    outs = [
        cal.ClaimOutcome(_claim("SUPPORTED", "a"), "SUPPORTED", confidence=0.9),
        cal.ClaimOutcome(_claim("SUPPORTED", "bb"), "UNSUPPORTED", confidence=0.6),
        cal.ClaimOutcome(_claim("UNSUPPORTED", "ccc"), "CONTRADICTED", confidence=0.7),
        cal.ClaimOutcome(_claim("CONTRADICTED", "dddd"), "UNSUPPORTED", confidence=0.8),
        cal.ClaimOutcome(_claim("CONTRADICTED", "eeeee"), "ERROR"),
    ]
    m = realreport.claim_metrics(cal.ClaimReport("j", outs))
    assert m["tpr"] == pytest.approx(2 / 3) and m["tnr"] == pytest.approx(1 / 2)
    assert m["contradiction_recall"] == 0.0 and m["accuracy"] == pytest.approx(3 / 5)
    assert m["baseline_flag_all"] == {"accuracy": pytest.approx(3 / 5), "tpr": 1.0, "tnr": 0.0}
    assert m["baseline_length_auc"] == 1.0  # longer claims are the hallucinated ones here


def test_measure_prints_judge_beside_baselines():
    """measure() prints the judge's claim table with flag-everything and length rows on the same rows."""
    from evaluator_worker.judges.registry import get_judge

    out = io.StringIO()
    data = realdata.load_real("expertqa", "dev", limit=8)
    result = realreport.measure(data, {"heuristic": get_judge("heuristic")}, out=out)
    text = out.getvalue()
    assert "| heuristic | 8 |" in text and "| flag everything | 8 |" in text and "| claim length | 8 |" in text
    assert "| answer length |" in text and "spread" in text
    assert result["judges"]["heuristic"]["claims"]["n"] == 8


def test_heuristic_dev_quality_floor_on_factcheck_gpt():
    """Heuristic on Factcheck-GPT dev stays at its measured level (accuracy 0.560, AUC 0.682) within a margin."""
    from evaluator_worker.judges.registry import get_judge

    data = realdata.load_real("factcheck-gpt", "dev")
    m = realreport.claim_metrics(cal.calibrate_claims(get_judge("heuristic"), data.claims))
    assert m["n"] == 116
    assert m["accuracy"] >= 0.52 and m["auc"] >= 0.64


def test_real_judges_benchmark_smoke(capsys):
    """benchmarks.real_judges runs a tiny configuration end to end and prints the baselines."""
    from benchmarks import real_judges

    assert (
        real_judges.main(
            ["--sets", "factcheck-gpt,summedits", "--judges", "heuristic", "--limit", "6", "--heavy-limit", "0"]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "### factcheck-gpt, split dev" in out and "| answer length |" in out


def test_data_is_outside_the_packages():
    """data/real/ sits at the top of the repository, not inside a package that the wheel ships."""
    root = realdata.data_root().resolve()
    assert root.parent.name == "data" and not (root.parent / "__init__.py").exists()
    assert Path(realdata.__file__).resolve().parent.parent == root.parent.parent

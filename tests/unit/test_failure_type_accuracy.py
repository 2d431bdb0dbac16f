"""The failure-type benchmark on human-typed errors (benchmarks/failure_type_accuracy.py): mapping, diff, BUMP."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks import failure_type_accuracy as fta
from claimwatch import realdata
from contract.failures import FailureType
from evaluator_worker.judges.base import Claim


def _text(claim: Claim | None) -> str | None:
    return None if claim is None else claim.text


def test_mapping_is_total_over_bump_types():
    """Every BUMP type maps to a primary class among its accepted classes, with a reason; no `unknown`."""
    assert set(fta.BUMP_MAPPING) == set(realdata.BUMP_TYPES)
    for m in fta.BUMP_MAPPING.values():
        assert m.primary in m.accepted and FailureType.UNKNOWN not in m.accepted and m.reason.strip()


def test_bump_type_reads_both_upstream_spellings():
    """Task 1 writes "Intrinsic Entity Error", task 2 "Intrinsic Entity": one type; an unknown label is refused."""
    assert realdata.bump_type("Intrinsic Entity Error") == realdata.bump_type("Intrinsic Entity") == "Intrinsic Entity"
    with pytest.raises(ValueError):
        realdata.bump_type("Grammar Error")


def test_diff_finds_the_edited_claim_and_its_twin():
    """The word diff picks the claim holding the changed words, on the edited side and on the reference side."""
    ref = "The mayor opened the bridge on May 3, 2010. It cost $4 million."
    edited = "The mayor opened the bridge on June 9, 2012. It cost $4 million."
    assert [edited[a:b] for a, b in fta.changed_ranges(ref, edited)] == ["June 9, 2012."]
    assert _text(fta.changed_claim(ref, edited)) == "The mayor opened the bridge on June 9, 2012."
    assert _text(fta.changed_claim(edited, ref)) == "The mayor opened the bridge on May 3, 2010."


def test_diff_locates_insertions_and_deletions():
    """A pure insertion is the claim it lands in; its deletion (the twin side) the claim of the next word."""
    ref = "Sales rose in March . Costs fell ."
    edited = "Sales rose in March . Analysts say costs fell sharply ."
    assert _text(fta.changed_claim(ref, edited)) == "Analysts say costs fell sharply."
    assert _text(fta.changed_claim(edited, ref)) == "Costs fell."
    # a change outside every claim (a question) is not located
    assert fta.changed_claim("Why did it rise?", "Why did it fall?") is None


def test_majority_baselines_use_the_labels_only():
    """The constant baselines are the most frequent primary class and the class the most rows accept."""
    rows = [
        realdata.BumpEdit(f"e{i}", 1, "a", "art", "r", "e", t, t, "train", "bump|a")
        for i, t in enumerate(["Intrinsic Entity", "Intrinsic Entity", "Extrinsic Circumstance"])
    ]
    primary, accepted = fta.majority_classes(rows)
    assert primary is FailureType.ATTRIBUTION and accepted is FailureType.NUMERIC


def test_faithbench_spans_are_typed_by_agreement():
    """Identical spans are grouped; Extrinsic or Intrinsic only when no annotator said the other subtype."""
    anns = [
        {"summary_start": 0, "summary_end": 4, "label": ["Unwanted", "Unwanted.Extrinsic"]},
        {"summary_start": 0, "summary_end": 4, "label": ["Benign"]},
        {"summary_start": 5, "summary_end": 9, "label": ["Unwanted", "Unwanted.Intrinsic"]},
        {"summary_start": 5, "summary_end": 9, "label": ["Unwanted", "Unwanted.Extrinsic"]},
        {"summary_start": 10, "summary_end": 12, "label": ["Unwanted"]},
        {"summary_start": 13, "summary_end": 15, "label": ["Unwanted", "Unwanted.Intrinsic"]},
    ]
    dropped: Counter[str] = Counter()
    spans = fta.typed_spans(anns, dropped)
    assert [(s.start, s.label) for s in spans] == [(0, "Extrinsic"), (13, "Intrinsic")]
    assert dropped == {"both subtypes": 1, "Unwanted without subtype": 1}


def test_bump_extract_loads_with_disjoint_splits():
    """The committed BUMP extract loads 889 typed edits; no article spans two splits, and the splits cover it."""
    if not (realdata.data_root() / "bump" / "edits.jsonl.gz").is_file():
        pytest.skip("BUMP extract not present")
    everything = realdata.load_bump()
    assert len(everything) == 889 and {e.error_type for e in everything} == set(realdata.BUMP_TYPES)
    parts = {s: realdata.load_bump(s) for s in realdata.SPLITS}
    groups = {s: {e.group for e in p} for s, p in parts.items()}
    assert all(parts.values())
    assert not groups["train"] & groups["dev"] and not groups["train"] & groups["eval"]
    assert not groups["dev"] & groups["eval"]
    assert sorted(e.id for p in parts.values() for e in p) == sorted(e.id for e in everything)

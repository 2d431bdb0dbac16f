"""Source markers answers add ([1], (passage 2), 'Passage 3 says') are not content: removed before judging."""

from __future__ import annotations

import pytest

from evaluator_worker.judges.base import Claim, Verdict
from evaluator_worker.judges.claims import CITATION_MARKERS, extract_claims, strip_citations
from evaluator_worker.judges.registry import get_judge


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Paris is the capital of France [1].", "Paris is the capital of France."),
        ("Sales rose 5% [2][3] in 2020 [1, 4].", "Sales rose 5% in 2020."),
        ("Treatment takes 6 weeks [3-5].", "Treatment takes 6 weeks."),
        ("The dose is 10 mg (passage 2).", "The dose is 10 mg."),
        ("Fees apply (sources 1 and 3).", "Fees apply."),
        ("Passage 3 says that the bridge opened in 1932.", "The bridge opened in 1932."),
        ("According to document 2, fees are 3 euros.", "Fees are 3 euros."),
    ],
)
def test_markers_are_removed_and_the_content_kept(text, expected):
    """Each declared marker shape goes; every word and number of the statement stays."""
    assert strip_citations(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "array[0] is the first item.",
        "In [2020] the law changed.",
        "The ratio is 3:1.",
        "Chapter 3 covers fees.",
        "Document 2 of the treaty was signed in 1990.",
    ],
)
def test_content_that_looks_like_a_marker_is_kept(text):
    """Index 0, years in brackets, ratios and sentences about a numbered document are content, not citations."""
    assert strip_citations(text) == text


def test_every_marker_names_the_failure_it_fixes():
    """Declared as data: each marker carries a name and the failure type that justified it."""
    assert len({m.name for m in CITATION_MARKERS}) == len(CITATION_MARKERS)
    assert all(len(m.failure) > 20 for m in CITATION_MARKERS)


def test_a_cited_grounded_claim_is_supported_not_a_missing_number():
    """The heuristic no longer reads the citation [2] as the number 2 missing from the context."""
    context = ["Rapid cooling of magma prevents large crystals from growing, giving basalt a fine-grained texture."]
    claim = "Rapid cooling of magma prevents large crystals from growing, giving basalt a fine-grained texture [2]."
    [v] = get_judge("heuristic").verify([Claim(id="c1", text=claim)], context).verdicts
    assert v.verdict is Verdict.SUPPORTED, v.reason
    assert [c.text for c in extract_claims("Basalt is fine-grained [1]. Granite is coarse (passage 2).")] == [
        "Basalt is fine-grained.",
        "Granite is coarse.",
    ]


def test_a_claim_from_elsewhere_is_read_without_its_discourse_marker():
    """Claims not made by our extraction (an LLM's, a labelled set's) lose 'Furthermore,' before the rules run."""
    from evaluator_worker.judges.claims import claim_content

    assert (
        claim_content("Furthermore, drones give early warning of threats [4].")
        == "Drones give early warning of threats."
    )
    context = ["Drones give early warning of threats to the base."]
    [v] = (
        get_judge("heuristic")
        .verify([Claim(id="c1", text="Furthermore, drones give early warning of threats.")], context)
        .verdicts
    )
    assert v.verdict is Verdict.SUPPORTED, v.reason

"""docs/results.md shows the result-record schema and a real example, regenerated from the models."""

from __future__ import annotations

from claimwatch.docgen import results as results_doc
from evaluator_worker.scoring import AnswerResult, ClaimResult


def test_results_doc_is_up_to_date():
    """The committed docs/results.md equals `python -m claimwatch.docgen.results` output."""
    assert results_doc.DOC.read_text(encoding="utf-8") == results_doc.render(), (
        "docs/results.md is stale: python -m claimwatch.docgen.results --write"
    )


def test_example_is_a_valid_record_with_evidence_and_its_chunk():
    """The documented example validates as an AnswerResult and its claims carry evidence, chunk id, source, excerpt."""
    ex = AnswerResult.model_validate(results_doc.example())
    judged = [c for c in ex.claims if c.verdict.value in ("SUPPORTED", "CONTRADICTED")]
    assert judged and all(c.evidence and c.context_id and c.context_source and c.context_excerpt for c in judged)
    for field in ClaimResult.model_fields:
        assert f'"{field}"' in results_doc.render()

"""How the LLM judge reads tool inputs that stray from the schema: missing lists, bad items, odd numbers, thin quotes."""

from __future__ import annotations

import anthropic
import pytest

from contract.record import RagTrace
from evaluator_worker.config import AnthropicSettings
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Claim, Verdict
from evaluator_worker.judges.llm_wire import Malformed, ToolWire, _WireVerdict, locate_evidence
from evaluator_worker.pipeline import Evaluator
from tests.fakes import MessagesServer, tool_response

WIRE = ToolWire("m", "m", 1024)
CONTEXTS = ["Refunds are paid within 30 days of the request.", "Shipping is free over 50 euros."]


@pytest.mark.parametrize("raw", [{}, {"statements": ["Refunds take 30 days."]}, {"claims": None}])
def test_an_extraction_without_claims_is_malformed_not_an_abstention(raw):
    """{} or a renamed key is no answer about the claims: malformed (repaired, then ERROR), never "abstained"."""
    with pytest.raises(Malformed):
        WIRE.parse_extract(raw)
    with pytest.raises(Malformed):
        WIRE.parse_single(raw)


def test_an_explicit_abstention_without_a_claims_list_is_an_abstention():
    """The model said it abstains: that stands even when it left the empty list out."""
    assert WIRE.parse_extract({"abstained": True}).abstained
    assert WIRE.parse_single({"abstained": True}) == (True, [])


def test_one_bad_extracted_item_is_dropped_and_the_others_kept():
    """A number or a non-index sentence in one item no longer fails the whole extraction."""
    parsed = WIRE.parse_extract(
        {"claims": [5, {"text": "Refunds take 30 days.", "sentence": "first"}, {"text": "Shipping is free."}]}
    )
    assert [c.text for c in parsed.claims] == ["Shipping is free."]
    with pytest.raises(Malformed):
        WIRE.parse_extract({"claims": [5, {"sentence": 1}]})


@pytest.mark.parametrize("quote", ["e", ".", "the", "of the", '"', "in it"])
def test_a_quote_that_identifies_no_passage_is_not_located(quote):
    """A letter, punctuation or function words occur in any context: not evidence of anything."""
    assert locate_evidence(quote, CONTEXTS, 0) is None


@pytest.mark.parametrize("quote, index", [("30 days", 0), ("free over 50 euros", 1), ("Shipping", 1)])
def test_a_real_quote_is_still_located(quote, index):
    """Short quotes with content words or numbers still point at their passage."""
    assert locate_evidence(quote, CONTEXTS, None) == index


def test_a_trivial_quote_does_not_keep_full_confidence():
    """A SUPPORTED verdict "backed" by the quote "e" is penalised like one with no quote at all."""
    claim = Claim(id="c1", text="Refunds take 30 days.")
    thin = WIRE.to_verdict(
        claim, _WireVerdict(claim_id="c1", verdict="SUPPORTED", evidence="e", confidence=0.9), CONTEXTS
    )
    real = WIRE.to_verdict(
        claim, _WireVerdict(claim_id="c1", verdict="SUPPORTED", evidence="within 30 days", confidence=0.9), CONTEXTS
    )
    assert thin.confidence == pytest.approx(0.45) and real.confidence == pytest.approx(0.9)


@pytest.mark.parametrize("given, read", [(0.7, 0.7), (1.5, 1.0), (85, 0.85), (100, 1.0)])
def test_confidences_past_one_are_percentages_or_a_slip_at_the_top(given, read):
    """85 means 0.85; 1.5 is a slip past the top of the 0-1 scale (1.0), not 1.5%."""
    assert _WireVerdict(claim_id="c", verdict="SUPPORTED", confidence=given).confidence == pytest.approx(read)


def test_verdict_items_sent_as_json_strings_are_read():
    """A verdict item encoded as a JSON string (as some models nest them) validates like an object."""
    items = WIRE.parse_verdicts({"verdicts": ['{"claim_id": "c1", "verdict": "supported", "confidence": 0.8}']})
    assert [(v.claim_id, v.verdict) for v in items] == [("c1", Verdict.SUPPORTED)]


def test_through_the_real_client_an_empty_tool_input_fails_the_answer_instead_of_abstaining():
    """Claude calling record_claims with {} (twice, repair included): the answer fails, it is not an abstention."""
    with MessagesServer() as srv:
        srv.enqueue(*[tool_response("record_claims", {}) for _ in range(4)])
        client = anthropic.Anthropic(api_key="t", base_url=srv.base_url, max_retries=0, timeout=10.0)
        judge = AnthropicJudge(AnthropicSettings(), client=client)
        result = Evaluator(judge).evaluate(
            RagTrace(trace_id="t1", answer="Refunds take 30 days. Shipping costs 5 euros.", contexts=CONTEXTS)
        )
    assert result.outcome == "failed" and result.outcome != "abstained"
    assert "no claims" in (result.error or "")

"""The Claude judge on the shapes real RAG answers have: citation markers, hedges, lists, roles, paraphrase.

The fake Messages API replays tool outputs a model gives for such answers (markers kept in a claim, a hedge,
a list with one member the contexts lack); the real ``anthropic`` client talks to it over HTTP.
"""

from __future__ import annotations

import anthropic
import pytest

from evaluator_worker.config import AnthropicSettings
from evaluator_worker.judges import prompts
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Claim, Verdict
from tests.fakes import MessagesServer, tool_response

#: an ExpertQA-style answer: numeric citations, a "Passage N says" lead-in, a parenthesised source, a hedge, a list
ANSWER = (
    "Passage 2 says that statins lower LDL cholesterol by 30-50% [1]. "
    "They may also reduce arterial inflammation (passage 3). "
    "Common side effects include muscle pain, raised liver enzymes and headaches [2, 3]."
)
QUESTION = "What do statins do?"
CONTEXTS = [
    "Statins lower LDL cholesterol by 30-50% depending on dose.",
    "Some trials suggest statins reduce arterial inflammation.",
    "Reported side effects are muscle pain and raised liver enzymes.",
]
#: what a model returns when it copies the markers into the claims
EXTRACTED_WITH_MARKERS = {
    "claims": [
        {"text": "Passage 2 says that statins lower LDL cholesterol by 30-50% [1].", "sentence": 0},
        {"text": "Statins may also reduce arterial inflammation (passage 3).", "sentence": 1},
        {
            "text": "Common side effects of statins include muscle pain, raised liver enzymes and headaches [2, 3].",
            "sentence": 2,
        },
    ],
    "abstained": False,
}
CLEAN = [
    "Statins lower LDL cholesterol by 30-50%.",
    "Statins may also reduce arterial inflammation.",
    "Common side effects of statins include muscle pain, raised liver enzymes and headaches.",
]


@pytest.fixture
def srv():
    with MessagesServer() as s:
        yield s


def _judge(srv: MessagesServer, **settings) -> AnthropicJudge:
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=10.0)
    return AnthropicJudge(AnthropicSettings(**settings), client=client)


def _system_text(request: dict) -> str:
    system = request.get("system")
    return system if isinstance(system, str) else " ".join(b.get("text", "") for b in system or [])


def test_citation_markers_are_kept_out_of_claims_even_when_the_model_copies_them(srv):
    """The prompt asks for claims without source markers; markers a model copies anyway are removed, content kept."""
    srv.enqueue(tool_response(prompts.EXTRACT_TOOL_NAME, EXTRACTED_WITH_MARKERS))
    extraction = _judge(srv).extract_claims(ANSWER, QUESTION)
    assert [c.text for c in extraction.claims] == CLEAN
    assert [c.sentence for c in extraction.claims] == [0, 1, 2]
    request = srv.requests[-1]
    assert '"[2]"' in _system_text(request) and "Passage 3 says that" in _system_text(request)
    assert "[2, 3]" in str(request["messages"])  # the model still sees the answer as written


def test_hedged_list_and_role_claims_are_judged_with_their_rules(srv):
    """The verifier is told how hedges, lists and roles are judged; a realistic reply maps to the right verdicts."""
    srv.enqueue(
        tool_response(
            prompts.VERIFY_TOOL_NAME,
            {
                "verdicts": [
                    {
                        "claim_id": "c1",
                        "verdict": "SUPPORTED",
                        "context_index": 0,
                        "confidence": 0.95,
                        "evidence": "Statins lower LDL cholesterol by 30-50%",
                        "reason": "stated",
                    },
                    {
                        "claim_id": "c2",
                        "verdict": "SUPPORTED",
                        "context_index": 1,
                        "confidence": 0.8,
                        "evidence": "Some trials suggest statins reduce arterial inflammation",
                        "reason": "the hedged claim matches the hedged context",
                    },
                    {
                        "claim_id": "c3",
                        "verdict": "UNSUPPORTED",
                        "context_index": 2,
                        "confidence": 0.85,
                        "evidence": "Reported side effects are muscle pain and raised liver enzymes",
                        "reason": "headaches is not among the listed side effects",
                    },
                ]
            },
        )
    )
    judge = _judge(srv)
    claims = [Claim(id=f"c{i}", text=t) for i, t in enumerate(CLEAN, start=1)]
    verification = judge.verify(claims, CONTEXTS, QUESTION)
    by = {v.claim_id: v for v in verification.verdicts}
    assert [by[c].verdict for c in ("c1", "c2", "c3")] == [Verdict.SUPPORTED, Verdict.SUPPORTED, Verdict.UNSUPPORTED]
    assert by["c2"].context_index == 1 and by["c3"].evidence.startswith("Reported side effects")
    system = _system_text(srv.requests[-1])
    for rule in ("Hedged claims", "Lists:", "Roles count too", "Paraphrase:"):
        assert rule in system, rule


def test_single_call_mode_cleans_claims_the_same_way(srv):
    """In single-call mode the claims a model returns with their verdicts lose their source markers too."""
    items = [
        {
            **c,
            "verdict": "SUPPORTED",
            "context_index": i,
            "confidence": 0.9,
            "evidence": CONTEXTS[i][:30],
            "reason": "r",
        }
        for i, c in enumerate(EXTRACTED_WITH_MARKERS["claims"])
    ]
    srv.enqueue(tool_response(prompts.SINGLE_TOOL_NAME, {"claims": items, "abstained": False}))
    extraction, verification = _judge(srv, single_call=True).extract_and_verify(ANSWER, QUESTION, CONTEXTS)
    assert [c.text for c in extraction.claims] == CLEAN
    assert len(verification.verdicts) == 3 and len(srv.requests) == 1

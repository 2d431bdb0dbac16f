"""The failure taxonomy: every flagged claim typed by every judge, the hedge policy both ways, the types counted."""

from __future__ import annotations

import anthropic
import pytest
from prometheus_client import CollectorRegistry

from contract.failures import TAXONOMY, FailureType, parse_failure_type
from contract.record import RagTrace
from evaluator_worker.config import AnthropicSettings
from evaluator_worker.judges import prompts
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Claim, ClaimVerdict, HedgePolicy, Verdict, apply_hedge_policy
from evaluator_worker.judges.heuristic.judge import HeuristicJudge
from evaluator_worker.judges.heuristic.rules import CLASS_OF, RULES
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes import MessagesServer, tool_response

#: the article's example: the claim adds "may" to what the context states definitively
ASPIRIN_CLAIM, ASPIRIN_CONTEXT = "Aspirin may reduce inflammation.", "Aspirin reduces inflammation."


# -- the taxonomy ------------------------------------------------------------------------------------------------


def test_every_class_is_declared_once_with_a_definition_and_an_example():
    """Each type has one declaration with a definition, and every type but unknown an example claim and context."""
    assert {c.type for c in TAXONOMY} == set(FailureType) and len(TAXONOMY) == len(FailureType)
    for c in TAXONOMY:
        assert c.definition
        assert (c.claim and c.context) or c.type is FailureType.UNKNOWN


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("numeric", FailureType.NUMERIC),
        ("Numerical", FailureType.NUMERIC),
        ("speaker attribution drift", FailureType.ATTRIBUTION),
        ("HEDGE-INFLATION", FailureType.HEDGE_INFLATION),
        ("implicit knowledge insertion", FailureType.UNSUPPORTED_ADDITION),
        (None, FailureType.UNKNOWN),
        ("  ", FailureType.UNKNOWN),
        ("sarcasm", FailureType.OTHER),  # a class the taxonomy does not know: flagged, not one of ours
    ],
)
def test_type_names_judges_write_are_read_leniently(name, expected):
    """Canonical names, aliases, case and separators map to a type; blank is unknown; a foreign name is other."""
    assert parse_failure_type(name) is expected


def test_a_flag_always_carries_one_type_and_a_support_none_but_a_hedge():
    """UNSUPPORTED/CONTRADICTED without a type are unknown; SUPPORTED keeps only hedge_inflation; ERROR none."""
    assert ClaimVerdict(claim_id="c", verdict=Verdict.UNSUPPORTED).failure_type is FailureType.UNKNOWN
    s = ClaimVerdict(claim_id="c", verdict=Verdict.SUPPORTED, failure_type=FailureType.NUMERIC)
    assert s.failure_type is None
    h = ClaimVerdict(claim_id="c", verdict=Verdict.SUPPORTED, failure_type=FailureType.HEDGE_INFLATION)
    assert h.failure_type is FailureType.HEDGE_INFLATION
    assert ClaimVerdict(claim_id="c", verdict=Verdict.ERROR, failure_type=FailureType.NUMERIC).failure_type is None


# -- the heuristic ------------------------------------------------------------------------------------------------


def test_every_heuristic_rule_declares_its_class():
    """Each declared rule names a taxonomy class (its own, or its family's)."""
    assert {r.failure_type for r in RULES} <= set(CLASS_OF)
    assert all(isinstance(r.taxonomy, FailureType) for r in RULES)


@pytest.mark.parametrize(
    ("claim", "context", "verdict", "failure"),
    [
        ("The bridge opened in 1926.", "The bridge opened in 1924.", Verdict.CONTRADICTED, FailureType.TEMPORAL),
        ("The fee is 45 dollars.", "The fee is 30 dollars.", Verdict.CONTRADICTED, FailureType.NUMERIC),
        (
            "The new policy reduces wait times.",
            "The new policy may reduce wait times.",
            Verdict.UNSUPPORTED,
            FailureType.CERTAINTY_INFLATION,
        ),
        (ASPIRIN_CLAIM, ASPIRIN_CONTEXT, Verdict.SUPPORTED, FailureType.HEDGE_INFLATION),
        ("Aspirin reduces inflammation.", ASPIRIN_CONTEXT, Verdict.SUPPORTED, None),
    ],
)
def test_heuristic_types_its_verdicts(claim, context, verdict, failure):
    """A date, a number, certainty added, a hedge added: each verdict carries its class; a plain support none."""
    [v] = HeuristicJudge().verify([Claim(id="c1", text=claim)], [context]).verdicts
    assert (v.verdict, v.failure_type) == (verdict, failure)


# -- the hedge policy ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("policy", "verdict", "faithfulness"),
    [(HedgePolicy.LENIENT, Verdict.SUPPORTED, 1.0), (HedgePolicy.STRICT, Verdict.UNSUPPORTED, 0.0)],
)
def test_the_aspirin_example_both_ways(policy, verdict, faithfulness):
    """'Aspirin may reduce inflammation' vs 'Aspirin reduces inflammation': typed hedge_inflation under both
    policies; SUPPORTED when lenient, UNSUPPORTED when strict (the article's reading)."""
    trace = RagTrace(trace_id="t1", question="Does aspirin help?", answer=ASPIRIN_CLAIM, contexts=[ASPIRIN_CONTEXT])
    result = Evaluator(HeuristicJudge(), hedge_policy=policy).evaluate(trace)
    [claim] = result.claims
    assert (claim.verdict, claim.failure_type, result.faithfulness) == (verdict, "hedge_inflation", faithfulness)


def test_the_policy_decides_a_judges_hedge_verdict_either_way():
    """A judge that returns UNSUPPORTED for a hedge is made SUPPORTED by the lenient policy, and the reverse."""
    flagged = ClaimVerdict(claim_id="c", verdict=Verdict.UNSUPPORTED, failure_type=FailureType.HEDGE_INFLATION)
    kept = ClaimVerdict(claim_id="d", verdict=Verdict.CONTRADICTED, failure_type=FailureType.TEMPORAL)
    lenient = apply_hedge_policy([flagged, kept], HedgePolicy.LENIENT)
    assert [v.verdict for v in lenient] == [Verdict.SUPPORTED, Verdict.CONTRADICTED]
    strict = apply_hedge_policy(lenient, HedgePolicy.STRICT)
    assert [v.verdict for v in strict] == [Verdict.UNSUPPORTED, Verdict.CONTRADICTED]
    assert "hedge policy strict" in (strict[0].reason or "")


# -- the LLM judge ------------------------------------------------------------------------------------------------


@pytest.fixture
def srv():
    with MessagesServer() as s:
        yield s


def test_claude_judge_is_told_every_class_and_its_types_are_read(srv):
    """The verify prompt defines every class and the tool schema asks for one; replayed types (an alias and a name
    outside the taxonomy among them) become typed verdicts, a missing type on a flag becomes unknown."""
    contexts = ["The plan covers dental and vision.", "Aspirin reduces inflammation.", "The CEO spoke on Monday."]
    items = [
        ("c1", "UNSUPPORTED", None, None, "list_membership"),
        ("c2", "SUPPORTED", 1, "Aspirin reduces inflammation.", "hedge_inflation"),
        ("c3", "CONTRADICTED", 2, "The CEO spoke on Monday.", "Speaker Attribution"),
        ("c4", "UNSUPPORTED", None, None, "vibes"),
        ("c5", "UNSUPPORTED", None, None, None),
    ]
    srv.enqueue(
        tool_response(
            prompts.VERIFY_TOOL_NAME,
            {
                "verdicts": [
                    {
                        "claim_id": cid,
                        "verdict": verdict,
                        "context_index": index,
                        "evidence": evidence,
                        "confidence": 0.9,
                        "reason": "replayed",
                        **({"failure_type": failure} if failure is not None else {}),
                    }
                    for cid, verdict, index, evidence, failure in items
                ]
            },
        )
    )
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=10.0)
    judge = AnthropicJudge(AnthropicSettings(), client=client)
    claims = [Claim(id=cid, text=f"claim {cid}") for cid, *_ in items]
    by = {v.claim_id: v.failure_type for v in judge.verify(claims, contexts).verdicts}
    assert by == {
        "c1": FailureType.LIST_MEMBERSHIP,
        "c2": FailureType.HEDGE_INFLATION,
        "c3": FailureType.ATTRIBUTION,
        "c4": FailureType.OTHER,
        "c5": FailureType.UNKNOWN,
    }
    request = srv.requests[-1]
    system = str(request.get("system"))
    assert all(f"- {t.value}:" in system for t in FailureType)
    schema = request["tools"][0]["input_schema"]["properties"]["verdicts"]["items"]
    assert "failure_type" in schema["required"] and "numeric" in schema["properties"]["failure_type"]["enum"]


# -- counted --------------------------------------------------------------------------------------------------------


def test_types_are_counted_per_claim_and_per_answer_by_slice():
    """claim_failures counts every typed claim by verdict; answers_with_failure counts an answer once per class it
    has a claim of (a SUPPORTED hedge under the lenient policy included)."""
    metrics = WorkerMetrics(CollectorRegistry())
    answer = "The bridge opened in 1926. It cost 30 dollars. Aspirin may reduce inflammation."
    contexts = ["The bridge opened in 1924. It cost 45 dollars.", ASPIRIN_CONTEXT]
    trace = RagTrace(trace_id="t1", answer=answer, contexts=contexts, slices={"release": "v2"})
    evaluator = Evaluator(HeuristicJudge())
    metrics.observe(evaluator.evaluate(trace))
    sample = metrics.registry.get_sample_value
    base = {
        "judge_id": evaluator.identity.judge_id,
        "release": "v2",
        "model": "unknown",
        "route": "unknown",
        "environment": "unknown",
    }
    claims = {
        (t.value, verdict): sample(
            "claimwatch_claim_failures_total", {**base, "failure_type": t.value, "verdict": verdict}
        )
        for t in FailureType
        for verdict in ("supported", "unsupported", "contradicted")
    }
    assert {k: v for k, v in claims.items() if v} == {
        ("temporal", "contradicted"): 1.0,
        ("numeric", "contradicted"): 1.0,
        ("hedge_inflation", "supported"): 1.0,
    }
    shape = {"sources": "multi", "reasoning": "temporal"}  # evidence from both contexts; a year in a claim
    assert sample("claimwatch_answers_by_shape_total", {**base, **shape}) == 1.0
    answers = {
        t.value: sample("claimwatch_answers_with_failure_total", {**base, **shape, "failure_type": t.value})
        for t in FailureType
    }
    assert {k: v for k, v in answers.items() if v} == {"temporal": 1.0, "numeric": 1.0, "hedge_inflation": 1.0}
    assert set(answers.values()) == {0.0, 1.0}  # every class's series exists from the shape's first answer


def test_failure_types_doc_is_up_to_date():
    """The committed docs/failure-types.md equals `python -m claimwatch.docgen.failures` output."""
    from claimwatch.docgen import failures as doc

    assert doc.DOC.read_text(encoding="utf-8") == doc.render(), (
        "docs/failure-types.md is stale: python -m claimwatch.docgen.failures --write"
    )


# -- shown: the report, the gate, claims --type ------------------------------------------------------------------


def _records(release: str, n: int, typed: dict[str, int], route: str = "finance", start: int = 0) -> list[dict]:
    """``n`` evaluated answers of ``release``; the first ``typed[t]`` of them get one flagged claim of class ``t``."""
    out = []
    kinds = [t for t, k in typed.items() for _ in range(k)]
    for i in range(n):
        claims = [{"id": "c0", "text": "fine", "verdict": "SUPPORTED", "confidence": 0.9}]
        if i < len(kinds):
            claims.append(
                {"id": "c1", "text": "wrong", "verdict": "CONTRADICTED", "confidence": 0.9, "failure_type": kinds[i]}
            )
        out.append(
            {
                "trace_id": f"{release}-{start + i}",
                "judge": "heuristic",
                "outcome": "evaluated",
                "slices": {"release": release, "route": route},
                "claims": claims,
                "evaluated_at": 1_700_000_000.0 + i,
            }
        )
    return out


def test_report_tables_every_class_and_names_the_largest_rise_with_its_slice():
    """The release page has a per-class table and, at the top, the class that rose most and the route it rose on."""
    from claimwatch.report import build_report, render_html

    results = (
        _records("v1", 200, {"numeric": 4, "temporal": 10})
        + _records("v1", 200, {"numeric": 4}, route="history", start=200)
        + _records("v2", 200, {"numeric": 40, "temporal": 10})
        + _records("v2", 200, {"numeric": 6}, route="history", start=200)
    )
    report = build_report(results, "v1", "v2")
    top = report.type_headline()
    assert top is not None and top.startswith("numeric (numerical specificity loss or error) +9.5 pts of answers")
    assert "most on route=finance: +18.0 pts" in top
    page = render_html(report)
    assert 'id="top-type"' in page and 'id="types"' in page and "temporal" in page


def test_gate_names_the_kind_of_failure_behind_a_rollback():
    """A rollback decided on result records says which class rose most."""
    from claimwatch.gate import ReleaseCounts, decide

    base, cand = ReleaseCounts(), ReleaseCounts()
    for r in _records("v1", 300, {"numeric": 6}):
        base = base.add_result(r)
    for r in _records("v2", 300, {"numeric": 6, "attribution": 60}):
        cand = cand.add_result(r)
    d = decide(base, cand)
    assert d.action == "rollback"
    assert any(line.startswith("the kind of failure that rose most: attribution") for line in d.reasons), d.reasons


def test_claims_type_filter_keeps_only_that_class_and_shows_supported_hedges():
    """--type keeps the claims of the classes asked for; a SUPPORTED hedge is kept when its class is asked for."""
    from claimwatch.claims_query import FLAGGED, flagged_claims

    record = {
        "trace_id": "t",
        "slices": {},
        "claims": [
            {"id": "c1", "verdict": "CONTRADICTED", "failure_type": "numeric"},
            {"id": "c2", "verdict": "UNSUPPORTED", "failure_type": "unsupported_addition"},
            {"id": "c3", "verdict": "SUPPORTED", "failure_type": "hedge_inflation"},
        ],
    }
    assert [f.claim["id"] for f in flagged_claims(record, FLAGGED, types={"numeric"})] == ["c1"]
    kept = flagged_claims(record, (*FLAGGED, "SUPPORTED"), types={"hedge_inflation"})
    assert [f.claim["id"] for f in kept] == ["c3"] and "hedge_inflation" in kept[0].to_text()


def test_cascade_passes_each_judges_types_through():
    """The cascade's verdicts keep the type of whichever judge decided them (the heuristic's here, nothing escalated
    past a share of 0)."""
    from evaluator_worker.judges.cascade import CascadeJudge
    from evaluator_worker.judges.settings import CascadeSettings

    cascade = CascadeJudge(HeuristicJudge(), HeuristicJudge(), CascadeSettings(escalate_share=0.0))
    claims = [Claim(id="c1", text="The bridge opened in 1926."), Claim(id="c2", text=ASPIRIN_CLAIM)]
    verdicts = cascade.verify(claims, ["The bridge opened in 1924.", ASPIRIN_CONTEXT]).verdicts
    assert [v.failure_type for v in verdicts] == [FailureType.TEMPORAL, FailureType.HEDGE_INFLATION]


# -- derived slices ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "traits"),
    [
        ("The bridge opened in 1932.", {"temporal"}),
        ("The total cost was 45 dollars for 3 tickets.", {"arithmetic"}),
        ("Revenue rose by 12% after the merger in 2019.", {"arithmetic", "temporal"}),
        ("Aspirin reduces inflammation.", set()),
    ],
)
def test_claim_traits(text, traits):
    """A claim combining numbers is arithmetic, one placing events in time is temporal (a year alone is no number)."""
    from evaluator_worker.shape import claim_traits

    assert claim_traits(text) == traits


def test_answers_carry_their_shape_and_a_label_can_be_switched_off():
    """sources counts the documents the evidence came from; reasoning reads the claims; a label left out reads off."""
    from contract.record import Context

    contexts = [
        Context(content="The bridge opened in 1924.", source="kb/bridge.md"),
        Context(content="The canal opened in 1825.", source="kb/canal.md"),
    ]
    trace = RagTrace(trace_id="t", answer="The bridge opened in 1924. The canal opened in 1825.", contexts=contexts)
    r = Evaluator(HeuristicJudge()).evaluate(trace)
    assert r.shape == {"sources": "multi", "reasoning": "temporal"}
    r = Evaluator(HeuristicJudge(), derived_slices=("sources",)).evaluate(trace)
    assert r.shape == {"sources": "multi", "reasoning": "off"}


def test_derived_slice_names_are_declared_once_for_settings_and_metrics():
    """The settings' derived labels are the ones evaluator_worker.shape declares."""
    from evaluator_worker.config import DERIVED_LABELS
    from evaluator_worker.shape import DERIVED

    assert tuple(DERIVED) == DERIVED_LABELS


def test_report_names_the_derived_slice_a_class_rose_most_on():
    """A class that rose on multi-source answers only is named with sources=multi at the top of the report."""
    from claimwatch.report import build_report

    def shaped(records: list[dict], sources: str) -> list[dict]:
        return [{**r, "shape": {"sources": sources, "reasoning": "none"}} for r in records]

    results = (
        shaped(_records("v1", 200, {"numeric": 4}), "single")
        + shaped(_records("v1", 200, {"numeric": 4}, start=200), "multi")
        + shaped(_records("v2", 200, {"numeric": 4}), "single")
        + shaped(_records("v2", 200, {"numeric": 44}, start=200), "multi")
    )
    top = build_report(results, "v1", "v2").type_headline()
    assert top is not None and "most on sources=multi: +20.0 pts" in top

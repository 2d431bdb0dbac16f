"""The offline heuristic judge: seed examples, one test per failure type, paraphrases, robustness."""

from __future__ import annotations

import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator_worker.judges.base import Claim, ClaimVerdict, Judge, Verdict
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.heuristic.quantities import compare_quantity, quantities

JUDGE = HeuristicJudge()


def judge_one(claim: str, contexts: list[str], question: str | None = None) -> ClaimVerdict:
    return JUDGE.verify([Claim(id="c1", text=claim)], contexts, question).verdicts[0]


# --------------------------------------------------------------------------- seed examples


def test_seed_wrong_oven_temperature_is_contradicted():
    """'bake at 350 F for 8 to 10 minutes' vs a claim of 400 F -> CONTRADICTED with the numbers in the reason."""
    v = judge_one("Bake the cookies at 400 F.", ["Bake at 350 F for 8 to 10 minutes."])
    assert v.verdict is Verdict.CONTRADICTED
    assert "400 F" in v.reason and "350 F" in v.reason
    assert v.evidence == "Bake at 350 F for 8 to 10 minutes."
    assert v.context_index == 0
    assert v.confidence >= 0.8


def test_seed_spelled_out_duration_approximation_is_unsupported():
    """'two hours forty minutes' vs 'about three hours' -> UNSUPPORTED (specificity loss), not CONTRADICTED."""
    v = judge_one(
        "The flight takes about three hours.", ["The flight from Boston to Chicago takes two hours forty minutes."]
    )
    assert v.verdict is Verdict.UNSUPPORTED
    assert "three hours" in v.reason and "two hours forty minutes" in v.reason


def test_seed_quote_given_to_wrong_speaker_is_contradicted():
    """A quote attributed to Yellen when the context attributes it to Powell -> CONTRADICTED."""
    ctx = ['"We will not raise rates," said Chair Powell.']
    v = judge_one('Treasury Secretary Yellen said "we will not raise rates."', ctx)
    assert v.verdict is Verdict.CONTRADICTED
    assert "Yellen" in v.reason and "Powell" in v.reason
    assert v.evidence == ctx[0]


def test_seed_may_reduce_vs_reduces_is_supported():
    """'may reduce' when the context says 'reduces' -> SUPPORTED: a hedged claim is weaker than the assertion (issue 28)."""
    v = judge_one("Regular exercise may reduce blood pressure.", ["Regular exercise reduces blood pressure."])
    assert v.verdict is Verdict.SUPPORTED


def test_seed_reduces_vs_may_reduce_is_unsupported():
    """'reduces' when the context says 'may reduce' -> UNSUPPORTED (certainty the context does not give)."""
    v = judge_one("Regular exercise reduces blood pressure.", ["Regular exercise may reduce blood pressure."])
    assert v.verdict is Verdict.UNSUPPORTED
    assert "may" in v.reason


# --------------------------------------------------------------------------- numbers and units


def test_exact_numbers_and_ranges_are_supported():
    """Matching temperature and range are SUPPORTED."""
    v = judge_one("Bake at 350 F for 8 to 10 minutes.", ["Preheat the oven. Bake at 350 F for 8 to 10 minutes."])
    assert v.verdict is Verdict.SUPPORTED
    assert v.evidence == "Bake at 350 F for 8 to 10 minutes."


def test_number_outside_range_is_contradicted():
    """12 minutes against '8 to 10 minutes' for the same step -> CONTRADICTED."""
    assert judge_one("Bake for 12 minutes.", ["Bake at 350 F for 8 to 10 minutes."]).verdict is Verdict.CONTRADICTED


def test_unit_conversion_counts_as_same_value():
    """2 hours = 120 minutes: SUPPORTED, while 3 hours is CONTRADICTED."""
    ctx = ["The marinade needs 120 minutes in the fridge."]
    assert judge_one("The marinade needs 2 hours in the fridge.", ctx).verdict is Verdict.SUPPORTED
    assert judge_one("The marinade needs 3 hours in the fridge.", ctx).verdict is Verdict.CONTRADICTED


def test_spelled_out_numbers_are_parsed():
    """'three hours' in the claim matches '3 hours' in the context."""
    assert judge_one("The hike takes three hours.", ["The hike takes 3 hours."]).verdict is Verdict.SUPPORTED


def test_number_absent_from_context_is_unsupported():
    """A claim number the context never states -> UNSUPPORTED."""
    v = judge_one(
        "The library holds 2 million books.", ["The library is the largest in the region and opened in 1901."]
    )
    assert v.verdict is Verdict.UNSUPPORTED
    assert "2 million" in v.reason


def test_quantity_parser_handles_ranges_durations_and_dates():
    """Ranges, compound spelled durations, currency multipliers and dates parse to comparable values."""
    qs = {
        q.text: q
        for q in quantities(
            "It took two hours forty minutes, cost $3.5 million, ran between 2010 and 2015, opened May 27, 1937."
        )
    }
    assert qs["two hours forty minutes"].lo == 9600
    assert qs["$3.5 million"].lo == 3_500_000
    assert (qs["2010 and 2015"].lo, qs["2010 and 2015"].hi) == (2010, 2015)
    assert qs["May 27, 1937"].date == (1937, 5, 27)
    about = quantities("about three hours")[0]
    assert about.approx and compare_quantity(about, qs["two hours forty minutes"]) == "approx"


# --------------------------------------------------------------------------- dates


def test_swapped_year_is_contradicted():
    """A different year for the same event -> CONTRADICTED."""
    v = judge_one("The Golden Gate Bridge opened in 1973.", ["The Golden Gate Bridge opened to traffic in 1937."])
    assert v.verdict is Verdict.CONTRADICTED
    assert "1973" in v.reason and "1937" in v.reason


def test_swapped_day_is_contradicted_and_extra_precision_unsupported():
    """Different day -> CONTRADICTED; a day the context does not give -> UNSUPPORTED."""
    ctx = ["The treaty was signed on March 5, 1990 in Geneva."]
    assert judge_one("The treaty was signed on March 7, 1990.", ctx).verdict is Verdict.CONTRADICTED
    assert judge_one("The treaty was signed in 1990.", ctx).verdict is Verdict.SUPPORTED
    assert (
        judge_one("The treaty was signed on March 5, 1990.", ["The treaty was signed in 1990."]).verdict
        is Verdict.UNSUPPORTED
    )


# --------------------------------------------------------------------------- negation


@pytest.mark.parametrize(
    "claim,context",
    [
        ("The medication does not cause drowsiness.", "The medication causes drowsiness."),
        ("The museum is open on Mondays.", "The museum is never open on Mondays."),
        ("The vaccine contains mercury.", "The vaccine contains no mercury."),
        ("The bridge isn't a toll bridge.", "The bridge is a toll bridge."),
    ],
)
def test_negation_flip_is_contradicted(claim, context):
    """A claim whose polarity is opposite to the aligned evidence -> CONTRADICTED."""
    v = judge_one(claim, [context])
    assert v.verdict is Verdict.CONTRADICTED
    assert "negation" in v.reason


def test_negation_in_other_clause_does_not_contradict():
    """A negation in a different clause of the evidence sentence does not flip the claim."""
    v = judge_one("Aspirin reduces fever.", ["Aspirin reduces fever, but it does not cure infections."])
    assert v.verdict is Verdict.SUPPORTED


# --------------------------------------------------------------------------- speakers


def test_statement_attributed_to_wrong_person_is_contradicted():
    """'X said that ...' when the context says Y said it -> CONTRADICTED."""
    v = judge_one(
        "Mayor Lopez said the park will reopen in spring.",
        ["The park will reopen in spring, said Governor Chen on Tuesday."],
    )
    assert v.verdict is Verdict.CONTRADICTED


def test_quote_with_right_speaker_is_supported():
    """The same quote with the same speaker (title dropped) -> SUPPORTED; an added first name is not in context."""
    v = judge_one('Powell said "we will not raise rates."', ['"We will not raise rates," said Chair Powell.'])
    assert v.verdict is Verdict.SUPPORTED
    v2 = judge_one('Jerome Powell said "we will not raise rates."', ['"We will not raise rates," said Chair Powell.'])
    assert v2.verdict is Verdict.UNSUPPORTED and "Jerome" in v2.reason


def test_same_statement_about_different_person_is_contradicted():
    """Entity swap: the aligned sentence says the same thing about another name -> CONTRADICTED (low-ish confidence)."""
    v = judge_one("Remco Evenepoel won the yellow jersey.", ["Tadej Pogacar won the yellow jersey in 2024."])
    assert v.verdict is Verdict.CONTRADICTED
    assert "Evenepoel" in v.reason and "Pogacar" in v.reason
    assert v.confidence < 0.8


# --------------------------------------------------------------------------- hedges


def test_context_hedges_claim_asserts_is_unsupported():
    """Context 'might', claim asserts -> UNSUPPORTED."""
    v = judge_one("Coffee prevents liver disease.", ["Some researchers think coffee might prevent liver disease."])
    assert v.verdict is Verdict.UNSUPPORTED
    assert "hedge" in v.reason


def test_matching_hedges_are_supported():
    """Both hedged the same way -> SUPPORTED."""
    v = judge_one("Coffee may protect the liver.", ["Coffee may protect the liver."])
    assert v.verdict is Verdict.SUPPORTED


# --------------------------------------------------------------------------- implicit knowledge


def test_entity_not_in_context_is_unsupported():
    """A named entity the context never mentions -> UNSUPPORTED, named in the reason."""
    v = judge_one(
        "The Golden Gate Bridge was designed by Joseph Strauss.",
        ["The Golden Gate Bridge opened in 1937.", "It is painted International Orange."],
    )
    assert v.verdict is Verdict.UNSUPPORTED
    assert "Strauss" in v.reason
    assert v.confidence >= 0.7


def test_unrelated_claim_is_unsupported_with_low_confidence():
    """A claim sharing almost nothing with the context -> UNSUPPORTED without evidence."""
    v = judge_one(
        "Penguins migrate thousands of kilometres each winter.", ["The stock market closed higher on Friday."]
    )
    assert v.verdict is Verdict.UNSUPPORTED
    assert v.evidence is None


# --------------------------------------------------------------------------- paraphrases


@pytest.mark.parametrize(
    "claim,context",
    [
        ("Green tea lowers cholesterol levels.", "Drinking green tea reduces cholesterol levels."),
        ("Cholesterol is reduced by green tea.", "Green tea reduces cholesterol."),
        ("The company was founded in 1998 by two students.", "Two students established the company in 1998."),
        ("The tower stands 330 metres tall.", "The tower is 330 metres (1,083 ft) tall."),
        ("The capital of France is Paris.", "Paris is the capital and largest city of France."),
        ("Physicians prescribe the medication for migraines.", "Doctors prescribe the drug for migraines."),
    ],
)
def test_meaning_preserving_paraphrase_is_supported(claim, context):
    """Synonyms, morphology and passive/active reordering keep SUPPORTED."""
    v = judge_one(claim, [context])
    assert v.verdict is Verdict.SUPPORTED, v.reason
    assert v.evidence == context and v.context_index == 0


def test_elided_subject_resolved_from_question():
    """'It opened in 1937' is supported when the question names the subject."""
    v = judge_one(
        "The Golden Gate Bridge opened in 1937.",
        ["It opened in 1937 after four years of work."],
        question="When did the Golden Gate Bridge open?",
    )
    assert v.verdict is Verdict.SUPPORTED


def test_multi_source_synthesis_is_supported():
    """A claim combining two chunks -> SUPPORTED, evidence from one of them, reason names both."""
    ctx = ["The museum opened in 1990.", "Weather was mild.", "The museum is located in Lyon, France."]
    v = judge_one("The museum opened in 1990 and is located in Lyon.", ctx)
    assert v.verdict is Verdict.SUPPORTED
    assert v.context_index in (0, 2)
    assert v.evidence == ctx[v.context_index]
    assert "0" in v.reason and "2" in v.reason


def test_antonym_is_contradicted():
    """'increased' vs 'fell' in the aligned sentence -> CONTRADICTED."""
    v = judge_one("Sales increased in the third quarter.", ["Sales fell in the third quarter."])
    assert v.verdict is Verdict.CONTRADICTED


# --------------------------------------------------------------------------- contract


def test_empty_contexts_give_unsupported_for_every_claim():
    """No context: one UNSUPPORTED verdict per claim with high-ish confidence."""
    claims = [Claim(id=f"c{i}", text=t) for i, t in enumerate(["Paris is in France.", "It has 5 stores.", "x"], 1)]
    out = JUDGE.verify(claims, [], None).verdicts
    assert [v.claim_id for v in out] == ["c1", "c2", "c3"]
    assert all(v.verdict is Verdict.UNSUPPORTED and v.confidence >= 0.8 for v in out)
    out2 = JUDGE.verify(claims, ["", "   "], None).verdicts
    assert all(v.verdict is Verdict.UNSUPPORTED for v in out2)


def test_judge_protocol_and_extraction():
    """HeuristicJudge satisfies the Judge protocol; abstentions give zero claims; usage costs nothing."""
    assert isinstance(JUDGE, Judge) and JUDGE.name == "heuristic"
    assert JUDGE.extract_claims("I don't know.").claims == []
    ex = JUDGE.extract_claims("Bake at 400 F. Serve it warm, and it tastes great.")
    assert [c.id for c in ex.claims] == ["c1", "c2", "c3"]
    assert ex.usage.cost_usd == 0.0


def test_evidence_is_verbatim_from_the_chosen_chunk():
    """Evidence is a substring of contexts[context_index] for every verdict that has one."""
    ctx = ["Intro text. The tower is 330 metres tall.", "It opened in 1889.  It was painted in 1968!"]
    claims = JUDGE.extract_claims("The tower is 330 metres tall. It opened in 1890. It was painted in 1968.").claims
    for v in JUDGE.verify(claims, ctx).verdicts:
        if v.evidence is not None:
            assert v.evidence in ctx[v.context_index]


def test_verdicts_are_deterministic():
    """Two runs give identical verdicts."""
    claims = JUDGE.extract_claims("Bake at 400 F. It takes about three hours.").claims
    ctx = ["Bake at 350 F for 8 to 10 minutes.", "It takes two hours forty minutes."]
    assert JUDGE.verify(claims, ctx).verdicts == JUDGE.verify(claims, ctx).verdicts


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    answer=st.text(max_size=300),
    contexts=st.lists(st.text(max_size=300), max_size=4),
    question=st.none() | st.text(max_size=80),
)
def test_arbitrary_unicode_never_raises_and_gives_one_verdict_per_claim(answer, contexts, question):
    """Any unicode answer/contexts: no exception, one judged verdict per claim, confidence in [0, 1]."""
    claims = JUDGE.extract_claims(answer, question).claims
    assert [c.id for c in claims] == [f"c{i}" for i in range(1, len(claims) + 1)]
    verdicts = JUDGE.verify(claims, contexts, question).verdicts
    assert [v.claim_id for v in verdicts] == [c.id for c in claims]
    for v in verdicts:
        assert v.verdict in (Verdict.SUPPORTED, Verdict.UNSUPPORTED, Verdict.CONTRADICTED)
        assert 0.0 <= v.confidence <= 1.0 and v.reason
        if v.evidence is not None:
            assert v.evidence in contexts[v.context_index]


@settings(max_examples=100, deadline=None)
@given(
    claim=st.text(
        alphabet=st.sampled_from(list("0123456789 .,-$%°FCabout to and hours minutes May 1990")), max_size=60
    ),
    ctx=st.text(alphabet=st.sampled_from(list("0123456789 .,-$%°FCabout to and hours minutes May 1990")), max_size=80),
)
def test_number_heavy_text_never_raises(claim, ctx):
    """Number/unit-dense garbage exercises the quantity parser without errors."""
    v = JUDGE.verify([Claim(id="c1", text=claim)], [ctx]).verdicts
    assert len(v) == 1 and v[0].verdict is not Verdict.ERROR


def test_throughput_typical_answer():
    """A 5-claim answer over 5 chunks verifies at well over 50 claims/second."""
    ctx = [
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. It was built from 1887 to 1889.",
        "The tower is 330 metres (1,083 ft) tall. It was the tallest man-made structure until 1930.",
        "It was the centrepiece of the 1889 World's Fair. More than 6 million people visit it every year.",
        "The tower has three levels for visitors, with restaurants on the first and second levels.",
        "Paint is applied every seven years to protect the structure from rust.",
    ]
    claims = JUDGE.extract_claims(
        "The Eiffel Tower is in Paris. It is 330 metres tall. It opened for the 1889 World's Fair. "
        "About 7 million people visit each year. It is repainted every seven years."
    ).claims
    assert len(claims) == 5
    n, t0 = 0, time.perf_counter()
    while n < 100:
        JUDGE.verify(claims, ctx)
        n += 5
    assert n / (time.perf_counter() - t0) > 50


# --------------------------------------------------------------------------- bounds, derived numbers, cues (v2)


def test_bound_the_figure_satisfies_is_supported():
    """'more than six minutes' is entailed by '6 minutes 17 seconds'; 'more than two minutes' by '1 minute 20' is not."""
    ctx = ["Pogacar won the Tour by 6 minutes 17 seconds, and broke the record by 1 minute 20 seconds."]
    assert judge_one("Pogacar won the Tour by more than six minutes.", ctx).verdict is Verdict.SUPPORTED
    assert judge_one("Pogacar broke the record by more than two minutes.", ctx).verdict is Verdict.CONTRADICTED


def test_false_precision_against_approximate_context_is_unsupported():
    """'around 1450' -> 'in 1450' and 'roughly 0.5°C' -> '0.52°C' are UNSUPPORTED, not SUPPORTED or CONTRADICTED."""
    assert (
        judge_one(
            "Gutenberg introduced printing in Mainz in 1450.", ["Gutenberg introduced printing in Mainz around 1450."]
        ).verdict
        is Verdict.UNSUPPORTED
    )
    assert (
        judge_one(
            "The eruption cooled global temperatures by 0.52°C.",
            ["The eruption cooled global temperatures by roughly 0.5°C."],
        ).verdict
        is Verdict.UNSUPPORTED
    )


def test_duration_between_two_dates_is_derived():
    """'lasted eight days' is computed from '16 July 1969' and '24 July' (simple arithmetic), with the derivation in the reason."""
    ctx = ["Apollo 11 launched on 16 July 1969.", "The crew splashed down in the Pacific on 24 July."]
    v = judge_one("Apollo 11 lasted eight days from launch to splashdown.", ctx)
    assert v.verdict is Verdict.SUPPORTED
    assert judge_one("Apollo 11 lasted twelve days from launch to splashdown.", ctx).verdict is not Verdict.SUPPORTED


def test_difference_of_two_numbers_in_one_sentence_is_derived():
    """54.2% vs 41.6% entails a 12.6-point margin; a 15-point margin is not supported."""
    ctx = ["Mayor Janet Cole won with 54.2% of the vote, defeating Marcus Reed, who took 41.6%."]
    assert judge_one("Cole won by 12.6 percentage points.", ctx).verdict is Verdict.SUPPORTED
    assert judge_one("Cole won by 15 percentage points.", ctx).verdict is not Verdict.SUPPORTED


def test_age_inside_an_eligibility_bound_is_entailed():
    """'under 18 ... exempt' covers a 16-year-old; 'aged 50 and older' covers a 52-year-old but not a 45-year-old."""
    ctx = ["The limit is $7,000, or $8,000 for savers aged 50 and older."]
    assert judge_one("A 52-year-old saver can contribute $8,000.", ctx).verdict is Verdict.SUPPORTED
    assert judge_one("A 45-year-old saver can contribute $8,000.", ctx).verdict is not Verdict.SUPPORTED


def test_future_claim_against_a_promise_is_unsupported():
    """'promised to finish' does not entail 'will finish' (hedge inflation)."""
    v = judge_one(
        "Cole will finish the light-rail line this term.", ["Cole promised to finish the light-rail line this term."]
    )
    assert v.verdict is Verdict.UNSUPPORTED and "promised" in v.reason


def test_intensifier_the_context_lacks_is_unsupported():
    """'exactly eight million' against 'some eight million' (and 'always' where the context has exceptions) is not SUPPORTED."""
    v = judge_one(
        "Presses had printed exactly eight million books by 1500.",
        ["By 1500 presses had printed some eight million books."],
    )
    assert v.verdict is Verdict.UNSUPPORTED


def test_permission_may_matches_can():
    """Deontic 'may terminate' vs 'can end' is not hedge inflation."""
    v = judge_one(
        "Either party can terminate the agreement with 60 days' written notice.",
        ["Either party may terminate this Agreement with 60 days' written notice."],
    )
    assert v.verdict is Verdict.SUPPORTED


def test_statement_given_to_another_speaker_via_apposition_is_contradicted():
    """'Alcaraz, 21, said he was proud' -> a claim giving the quote to Djokovic is CONTRADICTED."""
    ctx = ["Djokovic won the final.", "Alcaraz, 21, said he was 'proud but hurting' after the match."]
    v = judge_one("Djokovic said he was 'proud but hurting' after the final.", ctx)
    assert v.verdict is Verdict.CONTRADICTED and "Alcaraz" in v.reason


def test_spelled_hyphenated_durations_and_half_units_parse():
    """'two-week', '21 and a half hours', '59½', 'percentage points' and '9:45 in the evening' become comparable quantities."""
    assert [(q.dim, q.lo) for q in quantities("a two-week appointment")] == [("time", 14 * 86400)]
    assert quantities("about 21 and a half hours")[0].lo == 21.5 * 3600
    assert quantities("before age 59½")[0].lo == 59.5
    assert quantities("12.6 percentage points")[0].dim == "percent"
    assert quantities("until 9:45 in the evening")[0].lo == 21 * 60 + 45


# --------------------------------------------------------------------------- scope-aware negation and roles


def test_role_swap_loser_named_as_winner_is_contradicted():
    """'A won, defeating B' vs a claim that B won -> CONTRADICTED (role, not bag of words)."""
    ctx = ["Senator Alma Ruiz won the governor's race, defeating businessman Tom Hale by nine points."]
    v = judge_one("Tom Hale won the governor's race.", ctx)
    assert v.verdict is Verdict.CONTRADICTED and "role" in v.reason
    assert judge_one("Alma Ruiz beat Tom Hale in the governor's race.", ctx).verdict is not Verdict.CONTRADICTED


def test_rank_second_named_as_winner_is_contradicted():
    """'X finished first, with Y second' vs 'Y won' -> CONTRADICTED."""
    ctx = ["In the sprint final, Kenji Mori finished first in 10.02 seconds, with teammate Daniel Osei second."]
    assert judge_one("Daniel Osei won the sprint final.", ctx).verdict is Verdict.CONTRADICTED


def test_reversed_beat_is_contradicted():
    """'A beat B' in the context vs 'B beat A' in the claim -> CONTRADICTED."""
    ctx = ["In the chess semifinal, Priya Nair beat Lukas Berg after a long endgame."]
    assert judge_one("Lukas Berg beat Priya Nair in the chess semifinal.", ctx).verdict is Verdict.CONTRADICTED


def test_contrastive_negation_scope_is_contradicted():
    """'covers X but not Y' vs a claim that it covers Y -> CONTRADICTED even though the claim has its own 'no'."""
    ctx = ["The museum pass covers most city galleries but not the Rothko Annex unless a surcharge is paid."]
    v = judge_one("The museum pass covers the Rothko Annex at no surcharge.", ctx)
    assert v.verdict is Verdict.CONTRADICTED and "negation" in v.reason


def test_without_vs_required_is_contradicted():
    """Claim 'without X' where the context says X is needed -> CONTRADICTED."""
    ctx = ["Guests under 12 stay free but still need a signed waiver from a parent."]
    assert judge_one("Guests under 12 can stay without a waiver.", ctx).verdict is Verdict.CONTRADICTED


def test_prohibition_vs_permission_is_contradicted():
    """'Do not X until Y' vs 'you can X' under another condition -> CONTRADICTED; under Y itself it is not."""
    ctx = ["After surgery you may walk short distances, but do not lift heavy boxes until the surgeon clears you."]
    v = judge_one("You can lift heavy boxes once the first week has passed.", ctx)
    assert v.verdict is Verdict.CONTRADICTED and "forbids" in v.reason
    ok = judge_one("You can lift heavy boxes once the surgeon clears you.", ctx)
    assert ok.verdict is not Verdict.CONTRADICTED


def test_name_moved_to_another_clause_is_contradicted():
    """'A and B did X, while C did Y' vs 'B did Y' -> CONTRADICTED (the clause that says Y names C)."""
    ctx = [
        "Maria Lind and Oskar Vey climbed the north ridge on Friday, while Greta Holm stayed at base camp with the radio."
    ]
    v = judge_one("Oskar Vey stayed at base camp with the radio.", ctx)
    assert v.verdict is Verdict.CONTRADICTED and "clause" in v.reason


def test_closed_class_colour_swap_is_contradicted():
    """A different colour in the same slot ('flashes red' vs 'flashes blue') -> CONTRADICTED."""
    ctx = ["When the battery is low, the status light on the charger flashes red twice a minute."]
    assert (
        judge_one("When the battery is low, the charger's status light flashes blue.", ctx).verdict
        is Verdict.CONTRADICTED
    )


def test_superlative_opposite_across_clause_split_is_contradicted():
    """'X was N, the smallest in a decade' vs 'X was the largest in a decade' -> CONTRADICTED."""
    ctx = ["The wheat harvest was 12 million tonnes, the smallest in a decade."]
    assert judge_one("The wheat harvest was the largest in a decade.", ctx).verdict is Verdict.CONTRADICTED


# --------------------------------------------------------------------------- redaction placeholders


def test_two_different_placeholders_are_two_different_names():
    """After redaction, '[PERSON_2] designed it' against '[PERSON_1] designed it' is an entity swap, not SUPPORTED."""
    ctx = ["The bridge was designed by [PERSON_1]. [PERSON_2] built the tunnel in 1932."]
    assert judge_one("The bridge was designed by [PERSON_2].", ctx).verdict is Verdict.CONTRADICTED
    assert judge_one("The bridge was designed by [PERSON_1].", ctx).verdict is Verdict.SUPPORTED


def test_a_placeholder_index_is_not_a_number():
    """'[PHONE_2]' carries no number 2, and a claim with the context's own placeholder is SUPPORTED."""
    assert all(q.text != "2" for q in quantities("Call [PHONE_2] after 5 pm."))
    assert (
        judge_one("Call [PHONE_1] for support.", ["Call [PHONE_1] for support, or [PHONE_2] for sales."]).verdict
        is Verdict.SUPPORTED
    )

"""Claim extraction: sentence splitting, clause splitting, non-claim filtering, ids."""

from __future__ import annotations

from evaluator_worker.judges.claims import extract_claims, is_non_claim, split_clauses, split_sentences, strip_markers


def texts(answer: str) -> list[str]:
    return [c.text for c in extract_claims(answer)]


def test_sentences_survive_abbreviations_decimals_and_acronyms():
    """'e.g.', 'Dr.', '3.5', 'U.S.' and middle initials do not end a sentence."""
    text = "Dr. Smith lives in the U.S. capital, e.g. near the Mall. The rate is 3.5 percent. John F. Kennedy was born in 1917."
    assert split_sentences(text) == [
        "Dr. Smith lives in the U.S. capital, e.g. near the Mall.",
        "The rate is 3.5 percent.",
        "John F. Kennedy was born in 1917.",
    ]


def test_unit_letter_before_period_ends_sentence():
    """'350 F.' is a unit at the end of a sentence, not an initial."""
    assert split_sentences("Preheat to 350 F. Bake for 8 to 10 minutes.") == [
        "Preheat to 350 F.",
        "Bake for 8 to 10 minutes.",
    ]


def test_acronym_followed_by_sentence_opener_splits():
    """A dotted acronym followed by 'The' ends the sentence."""
    assert split_sentences("He moved to the U.S. The move took a year.") == [
        "He moved to the U.S.",
        "The move took a year.",
    ]


def test_bullets_and_lines_are_sentences():
    """Bullet markers are dropped and each line is its own sentence."""
    assert split_sentences("- Flour is sifted\n* Sugar is added\n1. Eggs are beaten") == [
        "Flour is sifted",
        "Sugar is added",
        "Eggs are beaten",
    ]


def test_sentence_spans_are_verbatim():
    """Sentences are exact substrings of the input."""
    text = "  First one here.   Second one   here!  "
    for s in split_sentences(text):
        assert s in text


def test_clauses_split_on_independent_clauses_only():
    """', and' + subject+verb splits; ranges and shared-subject coordination stay whole."""
    assert split_clauses("The bridge opened in 1937, and it spans 1.7 miles") == [
        "The bridge opened in 1937",
        "It spans 1.7 miles",
    ]
    assert split_clauses("The study ran between 2010 and 2015") == ["The study ran between 2010 and 2015"]
    assert split_clauses("Bake for 8 to 10 minutes, and serve warm") == ["Bake for 8 to 10 minutes, and serve warm"]
    assert split_clauses("It is red; the towers are tall") == ["It is red", "The towers are tall"]


def test_but_clause_with_own_subject_splits():
    """', but' followed by its own subject and verb becomes a second claim."""
    assert texts("The trial ran between 2010 and 2015, but no results were published.") == [
        "The trial ran between 2010 and 2015.",
        "No results were published.",
    ]


def test_no_split_inside_quotes():
    """A coordinator inside a quotation does not split the claim."""
    assert texts('Powell said "rates are high, and we will wait."') == [
        'Powell said "rates are high, and we will wait."'
    ]


def test_abstention_only_answer_has_zero_claims():
    """Abstentions and meta talk alone produce no claims."""
    for answer in [
        "I don't know.",
        "I'm not sure.",
        "I'm sorry, but the context does not mention the opening date.",
        "The provided context does not contain this information. Let me know if you have other questions!",
        "Hello! Is there anything else?",
        "",
        "   ",
    ]:
        assert extract_claims(answer) == [], answer


def test_meta_and_discourse_markers_are_stripped_content_kept():
    """'Based on the context,' and 'Also,' are removed; the statement stays."""
    assert texts("Based on the context, the bridge opened in 1937. Also, it is painted orange.") == [
        "The bridge opened in 1937.",
        "It is painted orange.",
    ]
    assert strip_markers("Additionally, the tower is tall.") == "The tower is tall."


def test_questions_greetings_and_leadins_are_not_claims():
    """Questions, greetings and 'Here are...:' lead-ins are dropped."""
    assert is_non_claim("Would you like more details?")
    assert is_non_claim("Hi there!")
    assert is_non_claim("Here are the steps:")
    assert not is_non_claim("The bridge is red.")


def test_claim_ids_are_sequential_and_sentence_index_kept():
    """Ids are c1, c2, ... in order; ``sentence`` points at the answer sentence."""
    claims = extract_claims("I'm not sure. The sky is blue. Grass is green, and roses are red.")
    assert [c.id for c in claims] == ["c1", "c2", "c3"]
    assert [c.sentence for c in claims] == [1, 2, 2]


def test_extraction_is_deterministic():
    """The same answer gives the same claims."""
    a = "The tower is 330 metres tall, and it was built in 1889. Also, it is in Paris."
    assert extract_claims(a) == extract_claims(a)

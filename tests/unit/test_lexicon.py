"""The heuristic judge's word lists are consistent: every entry can fire and none changes a word's meaning."""

from __future__ import annotations

from itertools import combinations

import pytest

from evaluator_worker.judges.heuristic import lexicon as lex
from evaluator_worker.judges.heuristic import text as tx

#: words the judge removes before comparing content: an antonym or synonym using one can never fire
FUNCTION_WORDS = lex.STOPWORDS | lex.NEGATION_WORDS | lex.HEDGE_WORDS | frozenset(lex.NUM_WORDS)
SYNONYM_WORDS = [w for group in lex.SYNONYM_GROUPS for w in group]
ANTONYM_WORDS = sorted({w for pair in lex.ANTONYM_PAIRS for w in pair})


def _group_of() -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, group in enumerate(lex.SYNONYM_GROUPS):
        for w in group:
            out.setdefault(w, []).append(i)
    return out


def test_no_word_is_in_two_synonym_groups():
    """A word listed in two synonym groups would take the first group's meaning and lose the second."""
    twice = {w: groups for w, groups in _group_of().items() if len(groups) > 1}
    assert twice == {}


def test_every_synonym_word_gets_its_own_groups_key():
    """Each group word's comparison key is its group's key (no stem or irregular form collides with another group)."""
    wrong = {}
    for group in lex.SYNONYM_GROUPS:
        head = tx.key(group[0])
        for w in group:
            if tx.key(w) != head:
                wrong[w] = (tx.key(w), head)
    assert wrong == {}


def test_synonym_words_are_base_forms():
    """No group word is an irregular inflection: listing 'found' would put 'find' in the group of 'establish'."""
    inflected = [w for w in SYNONYM_WORDS if w in lex.IRREGULAR]
    assert inflected == []


def test_synonym_words_are_content_words():
    """Stopwords, negation and hedge words are dropped before comparison, so listing one is dead data."""
    assert [w for w in SYNONYM_WORDS if w in FUNCTION_WORDS] == []


def test_antonym_pairs_are_unique_in_either_order():
    """The same pair (in either order, or through synonyms of its words) is declared once."""
    seen: dict[frozenset[str], tuple[str, str]] = {}
    dupes = []
    for a, b in lex.ANTONYM_PAIRS:
        raw = frozenset((a, b))
        keys = frozenset((tx.key(a), tx.key(b)))
        for k in (raw, keys):
            if k in seen and seen[k] != (a, b):
                dupes.append(((a, b), seen[k]))
        seen.setdefault(raw, (a, b))
        seen.setdefault(keys, (a, b))
    assert dupes == []


def test_antonym_words_can_fire():
    """No antonym pair uses a stopword, negation, hedge or number word (those never reach the comparison)."""
    dead = [(a, b) for a, b in lex.ANTONYM_PAIRS if a in FUNCTION_WORDS or b in FUNCTION_WORDS]
    assert dead == []


def test_synonyms_are_never_antonyms_of_each_other():
    """Two words of one synonym group (or one word's two senses) cannot be declared opposites."""
    same = [(a, b) for a, b in lex.ANTONYM_PAIRS if tx.key(a) == tx.key(b)]
    assert same == []
    for group in lex.SYNONYM_GROUPS:
        for a, b in combinations(group, 2):
            assert tx.key(b) not in tx.antonyms(tx.key(a)), (a, b)


@pytest.mark.parametrize("word", ANTONYM_WORDS + sorted(w for cls in lex.CLOSED_CLASSES for w in cls))
def test_opposable_words_keep_their_meaning(word):
    """An antonym or closed-class word reaches a synonym group only if it (or its inflection) is listed there ('left' must not become 'depart')."""
    k = tx.key(word)
    listed = {tx.key(g[0]) for g in lex.SYNONYM_GROUPS if any(tx.stem(w) == tx.stem(word) for w in g)}
    assert k == tx.stem(word) or k in listed, f"{word!r} compares as {k!r}"
    assert word not in lex.IRREGULAR or tx.stem(lex.IRREGULAR[word]) == k


def test_closed_class_words_are_not_inflections():
    """A closed-class word is never read as an inflected verb ('left' is a direction, not only the past of 'leave')."""
    assert [w for cls in lex.CLOSED_CLASSES for w in cls if w in lex.IRREGULAR] == []


def test_ambiguous_words_map_to_one_sense():
    """'close' means shut (not near) and 'left' keeps its own key, so neither matches the other sense."""
    assert tx.key("closed") == tx.key("shut") and tx.key("near") != tx.key("close")
    assert tx.key("left") != tx.key("depart") and tx.key("right") in tx.antonyms(tx.key("left"))

"""The heuristic judge's rules, declared in order: the first rule that fires decides the verdict.

Each ``Rule`` names the failure type it targets and has one check, ``ClaimCase -> RuleHit | None``.
``RULES`` is the ordered declaration the judge walks; a claim no rule fires on is SUPPORTED
(``supported``). Contradictions come before "not supported" verdicts, and the explicit checks
(speakers, numbers, polarity, names) before the soft ones (hedges, coverage), so that the most
specific evidence decides. Every threshold and confidence is a field of ``Thresholds`` (``case.t``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable, Mapping

from contract import failures as fx
from evaluator_worker.judges.base import Verdict
from evaluator_worker.judges.heuristic import cues as cu
from evaluator_worker.judges.heuristic import lexicon as lex
from evaluator_worker.judges.heuristic import quantities as qt
from evaluator_worker.judges.heuristic import text as tx
from evaluator_worker.judges.heuristic.analysis import (
    Analysed,
    ClaimCase,
    Clause,
    Sentence,
    analyse,
    fuzzy_keys,
    has_key,
    overlap,
    sentence_overlap,
    short,
    term_keys,
)

__all__ = ["FailureType", "RuleHit", "Rule", "RULES", "supported"]


class FailureType(str, Enum):
    """The unfaithfulness a rule detects."""

    NUMBER = "number"  # a different, approximated or invented quantity
    DATE = "date"  # a different date or year
    ENTITY = "entity"  # the statement made about another name or value
    ROLE = "role"  # winner and loser (or similar roles) swapped
    ATTRIBUTION = "attribution"  # a quote or statement given to another speaker
    NEGATION = "negation"  # polarity flipped, or an excluded/forbidden thing asserted
    ANTONYM = "antonym"  # a word replaced by its opposite
    HEDGE = "hedge"  # certainty changed: hedged vs asserted, planned vs done, approximate vs exact
    KNOWLEDGE_INSERTION = "knowledge_insertion"  # a name the context never mentions
    COVERAGE = "coverage"  # too little of the claim is in the context


#: the taxonomy class (contract.failures) of each rule family's flags; a rule may declare its own
CLASS_OF: dict[FailureType, fx.FailureType] = {
    FailureType.NUMBER: fx.FailureType.NUMERIC,
    FailureType.DATE: fx.FailureType.TEMPORAL,
    FailureType.ENTITY: fx.FailureType.ATTRIBUTION,
    FailureType.ROLE: fx.FailureType.ATTRIBUTION,
    FailureType.ATTRIBUTION: fx.FailureType.ATTRIBUTION,
    FailureType.NEGATION: fx.FailureType.POLARITY,
    FailureType.ANTONYM: fx.FailureType.POLARITY,
    FailureType.HEDGE: fx.FailureType.CERTAINTY_INFLATION,
    FailureType.KNOWLEDGE_INSERTION: fx.FailureType.UNSUPPORTED_ADDITION,
    FailureType.COVERAGE: fx.FailureType.UNSUPPORTED_ADDITION,
}


@dataclass(frozen=True)
class RuleHit:
    """A rule's decision: the verdict, how explicit the evidence is, why, and the deciding sentence; ``failure`` the
    taxonomy class (set from the rule that fired, unless the check knows better)."""

    verdict: Verdict
    confidence: float
    reason: str
    evidence: Sentence | None = None
    failure: fx.FailureType | None = None


@dataclass(frozen=True)
class Rule:
    """One declared check."""

    name: str
    failure_type: FailureType
    check: Callable[[ClaimCase], RuleHit | None]
    #: False for polarity/role checks: when a claim number is derived by arithmetic over the context
    #: ("N did not finish" from "started" minus "finished"), the claim's wording states the
    #: relation, not a negation of the context
    applies_to_derived: bool = True
    #: the taxonomy class of this rule's flags when it is not its family's (``CLASS_OF``)
    failure_class: fx.FailureType | None = None

    @property
    def taxonomy(self) -> fx.FailureType:
        """The taxonomy class this rule's flags carry."""
        return self.failure_class or CLASS_OF[self.failure_type]

    def apply(self, case: ClaimCase) -> RuleHit | None:
        """The rule's hit on ``case`` (typed), or None when it does not fire (or does not apply)."""
        if case.derived and not self.applies_to_derived:
            return None
        hit = self.check(case)
        if hit is None or hit.failure is not None:
            return hit
        return replace(hit, failure=self.taxonomy)


def _contradicted(confidence: float, reason: str, s: Sentence | None) -> RuleHit:
    return RuleHit(Verdict.CONTRADICTED, confidence, reason, s)


def _unsupported(confidence: float, reason: str, s: Sentence | None = None) -> RuleHit:
    return RuleHit(Verdict.UNSUPPORTED, confidence, reason, s)


def _has(k: str, s: Sentence) -> bool:
    return has_key(k, s.a.terms, s.a.fuzzy)


def _clause_fuzzy(s: Sentence) -> tuple[frozenset[str], ...]:
    """``fuzzy_keys`` of each clause's keys, computed once per sentence (``overlap`` recomputes them per call)."""
    return s.memo("clause_fuzzy", lambda: tuple(fuzzy_keys(cl.keys) for cl in s.clauses))


def _clause_overlap(
    terms: Mapping[str, float], s: Sentence, i: int, exclude: frozenset[str] | set[str] = frozenset()
) -> float:
    """``overlap`` of ``terms`` with the keys of clause ``i`` of ``s``."""
    return overlap(terms, s.clauses[i].keys, exclude=exclude, fuzzy=_clause_fuzzy(s)[i])


def _names(a: Analysed) -> list[str]:
    """Name keys in text order (reasons list them in a stable order)."""
    return [k for k in a.terms if k in a.entities]


def _non_names(ca: Analysed) -> dict[str, float]:
    return {k: w for k, w in ca.terms.items() if k not in ca.entities}


# --------------------------------------------------------------------------- coverage guards


def no_context(case: ClaimCase) -> RuleHit | None:
    """Nothing retrieved: nothing can support the claim."""
    return None if case.sents else _unsupported(case.t.confidence.no_context, "no context retrieved")


def nothing_checkable(case: ClaimCase) -> RuleHit | None:
    """The claim has no content words and no numbers to compare."""
    if case.ca.terms or case.ca.quants:
        return None
    return _unsupported(case.t.confidence.nothing_checkable, "nothing checkable in the claim")


# --------------------------------------------------------------------------- attribution


def quote_speaker(case: ClaimCase) -> RuleHit | None:
    """A quote the claim gives to one speaker, where the context gives the same quote to another."""
    for cq in cu.quotes(case.text):
        if not cq.speaker:
            continue
        qkeys = term_keys(cq.text)
        if not qkeys:
            continue
        for s in case.sents:
            for qi, (eq, ekeys) in enumerate(_quotes(s)):
                if len(qkeys & ekeys) / len(qkeys) < case.t.rules.quote_overlap:
                    continue
                speaker, speaker_text = eq.speaker, eq.speaker_text
                if not speaker:
                    speaker, speaker_text = _unquoted_speakers(s, qi, eq)
                if speaker and not (speaker & cq.speaker):
                    return _contradicted(
                        case.t.confidence.quote_speaker,
                        f"quote attributed to {cq.speaker_text}; context attributes it to {speaker_text}",
                        s,
                    )
    return None


def _quotes(s: Sentence) -> tuple[tuple[cu.Quote, frozenset[str]], ...]:
    """The quotes of ``s`` with their content keys (read once per sentence)."""
    return s.memo("quotes", lambda: tuple((eq, term_keys(eq.text)) for eq in cu.quotes(s.text)))


def _unquoted_speakers(s: Sentence, qi: int, eq: cu.Quote) -> tuple[set[str], str]:
    """Who ``s`` attributes its ``qi``-th quote to when the quote names no speaker (read once per quote)."""
    return s.memo(("quote_speakers", qi), lambda: cu.speakers(s.text.replace(eq.text, " ")))


def _speakers(s: Sentence) -> tuple[set[str], str]:
    """``cues.speakers`` of the sentence (read once per sentence)."""
    return s.memo("speakers", lambda: cu.speakers(s.text))


def _words_lower(s: Sentence) -> frozenset[str]:
    """The sentence's words, lower-cased (read once per sentence)."""
    return s.memo("words_lower", lambda: frozenset(w.lower() for w in re.findall(r"[\w'’]+", s.text)))


#: reporting verbs are not part of the statement's content
_SPEECH_KEYS = frozenset(tx.key(w) for w in lex.REPORTING_VERBS)


def statement_speaker(case: ClaimCase) -> RuleHit | None:
    """'X said ...' where the sentence carrying the statement attributes it to someone else."""
    spk, spk_text = cu.speakers(case.text)
    if not spk:
        return None
    ca = case.ca
    excl = spk | lex.TITLES | _SPEECH_KEYS | {tx.key(w) for w in spk}
    # the sentence that carries the statement's content (not necessarily the one naming the speaker)
    cs = max(case.sents, key=lambda s2: sentence_overlap(ca.terms, s2, exclude=excl))
    for s2 in [case.best, cs] if cs is not case.best else [case.best]:
        ekeys, etext = _speakers(s2)
        content = sentence_overlap(ca.terms, s2, exclude=excl)
        names_here = _words_lower(s2)
        if ekeys and not (ekeys & spk) and content >= case.t.rules.statement_overlap and not (spk & names_here):
            return _contradicted(
                case.t.confidence.statement_speaker,
                f"statement attributed to {spk_text}; context attributes it to {etext}",
                s2,
            )
    return None


# --------------------------------------------------------------------------- numbers and dates


def _is_date(q: qt.Quantity) -> bool:
    return q.dim in ("date", "year")


def _conflict(case: ClaimCase, dates: bool) -> RuleHit | None:
    for f in case.numbers:
        if f.status == "conflict" and _is_date(f.q) == dates and f.evidence is not None:
            kind = "date" if dates else "number"
            return _contradicted(
                case.t.confidence.number_conflict_base + case.t.confidence.number_conflict_slope * f.align,
                f"{kind} {f.q.text} vs {f.evidence.text} in context",
                f.sentence,
            )
    return None


def date_conflict(case: ClaimCase) -> RuleHit | None:
    """A date or year that differs from the one in an aligned context sentence."""
    return _conflict(case, dates=True)


def number_conflict(case: ClaimCase) -> RuleHit | None:
    """A quantity that differs from the same kind of quantity in an aligned sentence (units converted)."""
    return _conflict(case, dates=False)


def number_less_specific(case: ClaimCase) -> RuleHit | None:
    """A number rounded, widened, or made more precise than the context states it."""
    for f in case.numbers:
        if f.status == "approx" and f.evidence is not None:
            return _unsupported(
                case.t.confidence.number_approx,
                f"{f.q.text} approximates {f.evidence.text} in context (less specific)",
                f.sentence,
            )
    return None


def number_absent(case: ClaimCase) -> RuleHit | None:
    """A number the context neither states nor gives by simple arithmetic. Typed numeric when the rest of the claim
    is in the context (a number changed or made up inside a grounded statement), unsupported_addition when too
    little of it is (a whole fact the context lacks, which happens to hold a number)."""
    for f in case.numbers:
        if f.status == "absent":
            added = case.coverage.share < case.t.alignment.support
            return RuleHit(
                Verdict.UNSUPPORTED,
                case.t.confidence.number_absent,
                f"number {f.q.text} not in context" + ("; nor most of the claim" if added else ""),
                failure=fx.FailureType.UNSUPPORTED_ADDITION if added else None,
            )
    return None


# --------------------------------------------------------------------------- negation

_CONDITIONAL = re.compile(r"^\s*" + lex.alternation(lex.CONDITIONAL_OPENERS) + r"\b", re.I)
_UNTIL_WORD = re.compile(r"\buntil\b", re.I)


def _neg_cues(text: str) -> list[str]:
    """Predicate negations ('not', 'never', "n't", 'no')."""
    return [c for c in cu.negation_cues(text) if c not in lex.POLARITY_IGNORE]


def _shares_condition(claim_cond: str, context_cond: str) -> bool:
    """The claim keeps the context's condition ('not X until Y' vs 'X once Y')."""
    return _shares_condition_keys(term_keys(claim_cond), term_keys(context_cond))


def _shares_condition_keys(cond: frozenset[str], context_cond: frozenset[str]) -> bool:
    """``_shares_condition`` on the keys of the claim's and the context's conditions."""
    return bool(cond) and len(cond & context_cond) >= max(1, len(cond) // 2)


def _clause_polarity(s: Sentence) -> tuple[tuple[Clause, bool, bool], ...]:
    """Each clause of ``s`` with whether it is conditional and whether it is negated (read once per sentence;
    a clause's ``keys`` are ``term_keys`` of its text)."""
    return s.memo(
        "clause_polarity",
        lambda: tuple((cl, bool(_CONDITIONAL.match(cl.text)), bool(_neg_cues(cl.text))) for cl in s.clauses),
    )


def negation_flip(case: ClaimCase) -> RuleHit | None:
    """The best-aligned clause says the opposite polarity (not/never/no/n't); conditional clauses are skipped."""
    t, text, ca = case.t, case.text, case.ca
    if case.frame < t.rules.polarity_overlap or _CONDITIONAL.match(text):
        return None
    claim_neg = bool(_neg_cues(text))
    predicate = _non_names(ca)
    scored = []
    for i, (cl, conditional, neg) in enumerate(_clause_polarity(case.best)):
        if conditional:
            continue
        scored.append((_clause_overlap(ca.terms, case.best, i), neg == claim_neg, neg, cl.text, cl.keys))
    if not scored:
        return None
    scored.sort(key=lambda x: (x[0], x[1]), reverse=True)
    ov, same, _, ctext, ckeys = scored[0]
    if same or ov < t.rules.polarity_overlap:
        return None
    if predicate and overlap(predicate, ckeys) < t.rules.polarity_overlap:
        return None  # the clause shares the subject's names, not what the claim says about them
    conf = t.confidence.negation_base + t.confidence.negation_slope * ov
    if claim_neg:
        if any(n and o > 0 for o, _, n, _, _ in scored):
            return None  # the context negates something the claim mentions: leave it to coverage
        return _contradicted(
            conf, f"negation: claim says '{_neg_cues(text)[0]}', context affirms: '{short(ctext)}'", case.best
        )
    um, cm = _UNTIL_WORD.search(ctext), lex.CONDITION.search(text)
    if um and cm and _shares_condition(text[cm.start() :], ctext[um.start() :]):
        return None
    return _contradicted(conf, f"negation: context says '{_neg_cues(ctext)[0]}': '{short(ctext)}'", case.best)


_SEGMENT_END = re.compile(r"[,;:.()]|\b" + lex.alternation(lex.SCOPE_END_WORDS) + r"\b", re.I)
_CLAIM_NEG_AFTER = re.compile(r"\b" + lex.alternation(lex.CLAIM_NEGATORS) + r"\s+", re.I)
_WITHOUT = re.compile(r"\bwithout\s+", re.I)
#: "rather than X" / "but not X" exclude a noun phrase: its scope ends at the next preposition too
_NP_END = re.compile(_SEGMENT_END.pattern + r"|\b" + lex.alternation(lex.NP_END_WORDS) + r"\b", re.I)
_PROHIBITION_END = re.compile(r"\b" + lex.alternation(lex.PROHIBITION_END_WORDS) + r"\b", re.I)


_NON_SPACE = re.compile(r"\S+")  # the words of str.split(): \S is exactly "not str.isspace"


def _first_words(text: str, pos: int, n: int) -> list[str]:
    """``text[pos:].split()[:n]`` without splitting the rest of a long text."""
    return [m.group(0) for m in itertools.islice(_NON_SPACE.finditer(text, pos), n)]


def _scope_keys(text: str, pos: int, scope_words: int, end_at: re.Pattern[str]) -> frozenset[str]:
    """Keys of the first ``scope_words`` words from ``pos``, up to ``end_at``: what a cue ending at ``pos``
    puts out of the statement. Reads only those words (and the text up to them), not the rest of the text."""
    if pos and not text[pos - 1].isspace():  # ``end_at`` would see the character before pos: read the slice
        rest = text[pos:]
        end = end_at.search(rest)
        return term_keys(" ".join(rest[: end.start() if end else len(rest)].split()[:scope_words]))
    words = list(itertools.islice(_NON_SPACE.finditer(text, pos), scope_words))
    # an end marker is one character or one word, so one ending after the last word wanted changes nothing
    stop = words[-1].end() if len(words) == scope_words else len(text)
    end = end_at.search(text, pos, stop)
    return term_keys(" ".join(text[pos : end.start() if end else stop].split()[:scope_words]))


def _negated_keys(
    text: str, cue: re.Pattern[str], scope_words: int, end_at: re.Pattern[str] = _SEGMENT_END
) -> set[str]:
    """Keys of the words each ``cue`` match puts out of the statement (up to ``end_at``)."""
    out: set[str] = set()
    for m in cue.finditer(text):
        out |= _scope_keys(text, m.end(), scope_words, end_at)
    return out


#: at most this many contrastive cues ("rather than", "but not") of one sentence (its first) are checked:
#: each cue's exclusion runs to the end of the sentence and its assertion from the last comma, so the work
#: grows with the square of a sentence holding many (a run-on list: "A and not B and not C ..."). Guards the
#: negation failure type's contrastive check; real sentences hold one or two.
_CONTRAST_MAX_CUES = 16


def _contrast_scopes(s: Sentence, scope_words: int) -> tuple[tuple[str, frozenset[str]], ...]:
    """(cue, keys it excludes) for each of the first ``_CONTRAST_MAX_CUES`` contrastive cues of ``s``: the
    words the cue and every later cue of the sentence put out of the statement, less those its own segment
    asserts before it. Read once per sentence."""

    def compute() -> tuple[tuple[str, frozenset[str]], ...]:
        text = s.text
        ms = list(lex.CONTRAST_NEG.finditer(text))
        if not ms:
            return ()
        scopes = [_scope_keys(text, m.end(), scope_words, _NP_END) for m in ms]
        later: set[str] = set().union(*scopes[_CONTRAST_MAX_CUES:])
        out = []
        for i in range(min(len(ms), _CONTRAST_MAX_CUES) - 1, -1, -1):
            m = ms[i]
            later |= scopes[i]
            seg_start = max(text.rfind(c, 0, m.start()) for c in ",;:") + 1
            out.append((m.group(0).strip(), frozenset(later - term_keys(text[seg_start : m.start()]))))
        return tuple(reversed(out))

    return s.memo(("contrast", scope_words), compute)


def contrast_exclusion(case: ClaimCase) -> RuleHit | None:
    """The context excludes X ('A rather than X', 'covers A but not X'); the claim asserts X."""
    t, ca = case.t, case.ca
    claim_neg = _negated_keys(case.text, _CLAIM_NEG_AFTER, t.rules.scope_words)
    anywhere: set[str] | None = None
    anywhere_fuzzy: frozenset[str] = frozenset()
    for s in case.sents:
        for cue, neg in _contrast_scopes(s, t.rules.scope_words):
            for k in ca.terms:
                if k not in neg or k in claim_neg:
                    continue
                if anywhere is None:
                    anywhere = set().union(*(s2.a.terms for s2 in case.sents))
                    anywhere_fuzzy = fuzzy_keys(anywhere)
                if (
                    sentence_overlap(ca.terms, s, exclude={k}) >= t.rules.contrast_here
                    and overlap(ca.terms, anywhere, exclude={k}, fuzzy=anywhere_fuzzy) >= t.rules.contrast_all
                ):
                    return _contradicted(
                        t.confidence.scoped_negation,
                        f"negation: context says '{cue} {ca.surface[k]}': '{short(s.text)}'",
                        s,
                    )
    return None


def without_vs_required(case: ClaimCase) -> RuleHit | None:
    """The claim says 'without X'; an aligned sentence says X is needed."""
    lacking = _negated_keys(case.text, _WITHOUT, case.t.rules.scope_words)
    if not lacking:
        return None
    ca = case.ca
    for s in case.sents:
        if sentence_overlap(ca.terms, s, exclude=lacking) < case.t.rules.without_overlap:
            continue
        for cue, keys in _requirements(s, case.t.rules.require_lookback):
            hit = lacking & keys
            if hit:
                k = sorted(hit)[0]
                return _contradicted(
                    case.t.confidence.scoped_negation,
                    f"negation: claim says 'without {ca.surface.get(k, k)}'; context says '{cue}' it: '{short(s.text)}'",
                    s,
                )
    return None


def _requirements(s: Sentence, lookback: int) -> tuple[tuple[str, frozenset[str]], ...]:
    """(cue, keys of the next four words) for each requirement cue of ``s`` not negated within ``lookback``
    characters before it ("needs X", not "does not need X"). Read once per sentence."""

    def compute() -> tuple[tuple[str, frozenset[str]], ...]:
        text = s.text
        return tuple(
            (m.group(0), term_keys(" ".join(_first_words(text, m.end(), 4))))
            for m in lex.REQUIRE.finditer(text)
            if not cu.negation_cues(text[max(0, m.start() - lookback) : m.start()])
        )

    return s.memo(("require", lookback), compute)


def _prohibitions(
    s: Sentence,
) -> tuple[tuple[Clause, frozenset[str], frozenset[str], frozenset[str] | None], ...]:
    """(clause, keys of what it forbids and their ``fuzzy_keys``, keys of its condition or None) for each
    clause of ``s`` that forbids something ('do not X until Y'). Read once per sentence."""

    def compute() -> tuple[tuple[Clause, frozenset[str], frozenset[str], frozenset[str] | None], ...]:
        out = []
        for cl in s.clauses:
            if not lex.PROHIBITION.match(cl.text):
                continue
            um = _PROHIBITION_END.search(cl.text)
            forbidden = term_keys(cl.text[: um.start()] if um else cl.text)
            out.append((cl, forbidden, fuzzy_keys(forbidden), term_keys(cl.text[um.start() :]) if um else None))
        return tuple(out)

    return s.memo("prohibitions", compute)


def prohibited_action(case: ClaimCase) -> RuleHit | None:
    """The claim permits an action ('you can X') a context clause forbids ('do not X'), unless the
    claim permits it under the context's own condition ('do not X until Y' vs 'can X once Y')."""
    text = case.text
    if not lex.PERMISSION.search(text) or cu.negation_cues(text):
        return None
    cm = lex.CONDITION.search(text)
    main = analyse(text[: cm.start()] if cm else text).terms
    if len(main) < 2:
        return None
    cond = term_keys(text[cm.start() :]) if cm else frozenset()
    for s in case.sents:
        for cl, forbidden, forbidden_fuzzy, condition in _prohibitions(s):
            if overlap(main, forbidden, fuzzy=forbidden_fuzzy) < case.t.rules.prohibition_overlap:
                continue
            if condition is not None and cm and _shares_condition_keys(cond, condition):
                continue
            return _contradicted(
                case.t.confidence.scoped_negation, f"negation: context forbids it: '{short(cl.text)}'", s
            )
    return None


# --------------------------------------------------------------------------- antonyms


def antonym_in_clause(case: ClaimCase) -> RuleHit | None:
    """A claim word whose opposite stands in a clause of the best sentence that matches the rest of the claim."""
    ca = case.ca
    for i, cl in enumerate(case.best.clauses):
        for k in ca.terms:
            if k in cl.keys:
                continue
            opp = tx.antonyms(k) & cl.keys
            if not opp:
                continue
            rest = _clause_overlap(ca.terms, case.best, i, exclude={k})
            if rest >= case.t.rules.antonym_rest:
                o = sorted(opp)[0]
                o_word = analyse(cl.text).surface.get(o, o)
                return _contradicted(
                    case.t.confidence.antonym_base + case.t.confidence.antonym_slope * rest,
                    f"opposite: claim '{ca.surface[k]}' vs context '{o_word}' in '{short(cl.text)}'",
                    case.best,
                )
    return None


def antonym_in_sentence(case: ClaimCase) -> RuleHit | None:
    """The opposite word sits in another clause of the best sentence than its subject
    ('X was N, the lowest in a decade' vs 'X was the highest')."""
    ca, best = case.ca, case.best
    for k in ca.terms:
        if k in best.a.terms:
            continue
        opp = tx.antonyms(k) & set(best.a.terms)
        if opp and sentence_overlap(ca.terms, best, exclude={k}) >= case.t.rules.antonym_sentence_rest:
            o = sorted(opp)[0]
            return _contradicted(
                case.t.confidence.antonym_sentence,
                f"opposite: claim '{ca.surface[k]}' vs context '{best.a.surface.get(o, o)}' in '{short(best.text)}'",
                best,
            )
    return None


# --------------------------------------------------------------------------- entities and roles


def _entity_swap_reason(case: ClaimCase, s: Sentence, other_sentences: list[Sentence]) -> str | None:
    """Sentence ``s`` says what the claim says about a different name -> reason, else None."""
    ca, t = case.ca, case.t
    missing = [k for k in _names(ca) if not _has(k, s) and k not in case.qterms]
    if not missing:
        return None
    others = [
        k
        for k in _names(s.a)
        if k not in ca.terms and s.a.surface[k][:1].isupper() and s.a.surface[k].lower() not in lex.TITLES
    ]
    if not others:
        return None
    rest = sentence_overlap(ca.terms, s, exclude=ca.entities)
    non_ent = [k for k in ca.terms if k not in ca.entities]
    uncovered = {k for k in non_ent if not _has(k, s)}
    for s2 in other_sentences:
        if s2 is not s and any(_has(k, s2) for k in missing) and any(_has(k, s2) for k in uncovered):
            return None  # the name comes with another part of the claim from another sentence: synthesis
    shared = [k for k in _names(ca) if k not in missing and _has(k, s)]
    # a short frame counts only when the rest of it, another name included, matches exactly
    if rest < t.rules.entity_rest or (len(non_ent) < 2 and not (non_ent and rest >= t.rules.exact_frame and shared)):
        return None
    return (
        f"entity: claim says {', '.join(ca.surface[k] for k in missing[:2])}; "
        f"the matching context sentence names {', '.join(s.a.surface[k] for k in others[:2])}"
    )


def entity_swap(case: ClaimCase) -> RuleHit | None:
    """The best-aligned sentence says the same thing about a different name."""
    reason = _entity_swap_reason(case, case.best, case.sents)
    return _contradicted(case.t.confidence.entity_swap, reason, case.best) if reason else None


def stitched_entity_swap(case: ClaimCase) -> RuleHit | None:
    """A claim covered only by combining sentences, where the sentence carrying its predicate names
    someone else in the claim's slot (true facts recombined into a false one)."""
    cov = case.coverage
    predicate = _non_names(case.ca)
    if len(cov.covered_by) < 2 or not predicate:
        return None
    frame_s = max(cov.covered_by, key=lambda s2: sentence_overlap(predicate, s2))
    reason = _entity_swap_reason(case, frame_s, [])
    return _contradicted(case.t.confidence.entity_swap, reason, frame_s) if reason else None


def clause_entity(case: ClaimCase) -> RuleHit | None:
    """The clause of the best sentence that carries the claim's predicate names someone else
    ('A did X, while B did Y' vs 'A did Y')."""
    ca, best, t = case.ca, case.best, case.t
    non_ent = _non_names(ca)
    if len(non_ent) < 3 or len(best.clauses) < 2 or sentence_overlap(non_ent, best) < t.rules.clause_sentence:
        return None
    ranked = sorted(((_clause_overlap(non_ent, best, i), cl.text) for i, cl in enumerate(best.clauses)), reverse=True)
    ov, ctext = ranked[0]
    if ov < t.rules.clause_best or ov - ranked[1][0] < t.rules.clause_margin:
        return None
    clause, toks = best.memo(("clause", ctext), lambda: (analyse(ctext), [tok.low for tok in tx.tokenize(ctext)]))
    moved = [k for k in _names(ca) if k not in case.qterms and k in best.a.terms and k not in clause.terms]
    claim_low = {ca.surface[k].lower() for k in ca.entities}
    beside = {toks[i + d] for i, w in enumerate(toks) if w in claim_low for d in (-1, 1) if 0 <= i + d < len(toks)}
    others = [
        k
        for k in _names(clause)
        if k not in ca.terms
        and clause.surface[k].lower() not in lex.TITLES
        and clause.surface[k].lower() not in beside
        and clause.surface[k].lower() not in _CALENDAR
    ]
    if not moved or not others:
        return None
    return _contradicted(
        t.confidence.entity_swap,
        f"entity: claim says {', '.join(ca.surface[k] for k in moved[:2])}; "
        f"the matching clause names {', '.join(clause.surface[k] for k in others[:2])}: '{short(ctext)}'",
        best,
    )


_CALENDAR = lex.CLOSED_CLASSES[1] | lex.MONTH_NAMES


def _ascii_words(s: Sentence) -> frozenset[str]:
    """The sentence's ASCII words, lower-cased (read once per sentence)."""
    return s.memo("ascii_words", lambda: frozenset(w.lower() for w in re.findall(r"[A-Za-z]+", s.text)))


def closed_class_swap(case: ClaimCase) -> RuleHit | None:
    """Another member of a closed class (colour, weekday, compass point, left/right) in the slot of the claim's."""
    ca = case.ca
    for k, surf in ca.surface.items():
        cls = next((c for c in lex.CLOSED_CLASSES if surf.lower() in c), None)
        if cls is None:
            continue
        for s in case.sents:
            if k in s.a.terms:
                continue
            rivals = (_ascii_words(s) & cls) - {surf.lower()}
            if rivals and sentence_overlap(ca.terms, s, exclude={k}) >= case.t.rules.closed_class_rest:
                return _contradicted(
                    case.t.confidence.closed_class,
                    f"entity: claim says '{surf}'; context says '{sorted(rivals)[0]}': '{short(s.text)}'",
                    s,
                )
    return None


_NAME = r"((?:[A-ZÀ-Ý][\w'’-]*\s+){0,3}[A-ZÀ-Ý][\w'’-]*)"
#: the first character and the rest of a word of ``_NAME`` (for ``cues.name_led_matches``)
_CAPITAL = re.compile(r"[A-ZÀ-Ý]")
_NAME_CHARS = re.compile(r"[\w'’-]*")
_WIN_RE = re.compile(_NAME + r"(?:,\s*\d+,)?\s+(?:also\s+|has\s+|had\s+)?" + lex.WIN_VERBS + r"\b")
_LOSE_RE = re.compile(r"\b" + lex.LOSE_AFTER + r"\s+(?:[a-z][\w-]*\s+){0,3}" + _NAME)
_RANK_ONLY = re.compile(
    _NAME + r"\s+(?:(?:finished|came|placed|was)\s+)?" + lex.LOSE_RANK + r"\b|" + _NAME + r"\s+lost\b"
)


def _name_key(name: str) -> str:
    """Key of a name's last word ('Senator Alma Ruiz' -> 'ruiz')."""
    return tx.key(name.split()[-1].strip("'’").lower().removesuffix("'s").removesuffix("’s"))


def _roles(text: str) -> set[tuple[str, str]]:
    """(name key, 'win'|'lose') pairs: 'A beat B' -> {(a, win), (b, lose)}; 'B finished second' -> {(b, lose)}."""
    out: set[tuple[str, str]] = set()
    for m in cu.name_led_matches(_WIN_RE, text, _CAPITAL, _NAME_CHARS):
        out.add((_name_key(m.group(1)), "win"))
    for m in _LOSE_RE.finditer(text):
        out.add((_name_key(m.group(1)), "lose"))
    for m in cu.name_led_matches(_RANK_ONLY, text, _CAPITAL, _NAME_CHARS):
        name = m.group(1) or m.group(2)
        if name:
            out.add((_name_key(name), "lose"))
    return out


def _sentence_roles(s: Sentence) -> set[tuple[str, str]]:
    """``_roles`` of the sentence (read once per sentence)."""
    return s.memo("roles", lambda: _roles(s.text))


def role_swap(case: ClaimCase) -> RuleHit | None:
    """The claim makes X the winner (or loser) where the sentence about X gives X the other role."""
    croles = _roles(case.text)
    if not croles:
        return None
    ca = case.ca
    non_ent = _non_names(ca)
    for name, role in croles:
        about = [s for s in case.sents if name in s.a.terms]
        if not about:
            continue
        s = max(about, key=lambda s2: sentence_overlap(ca.terms, s2))
        sroles = _sentence_roles(s)
        other = "lose" if role == "win" else "win"
        if (name, other) not in sroles or (name, role) in sroles:
            continue
        if non_ent and sentence_overlap(non_ent, s) < case.t.rules.role_overlap:
            continue
        word = "won" if role == "win" else "lost"
        return _contradicted(
            case.t.confidence.role_swap,
            f"role: claim says {ca.surface.get(name, name)} {word}; context says otherwise: '{short(s.text)}'",
            s,
        )
    return None


# --------------------------------------------------------------------------- knowledge insertion


def name_not_in_context(case: ClaimCase) -> RuleHit | None:
    """A name no context sentence mentions (knowledge the answer added from elsewhere)."""
    names = case.coverage.missing_names
    if not names:
        return None
    return _unsupported(
        case.t.confidence.missing_name_base + case.t.confidence.missing_name_step * min(len(names), 2),
        f"not in context: {', '.join(names[:3])}",
    )


# --------------------------------------------------------------------------- hedges and overclaiming

_MODAL_CAN = re.compile(r"\b" + lex.alternation(lex.MODAL_CAN) + r"\b", re.I)
#: a claim about the future stated as fact
_FUTURE = re.compile(r"\b" + lex.alternation(lex.FUTURE_CUES) + r"\b", re.I)
#: context words that make a future event an intention, promise or forecast, not a fact
_INTENT = re.compile(r"\b" + lex.alternation(lex.INTENT_CUES) + r"\b", re.I)


def _hedge_texts(case: ClaimCase) -> tuple[Sentence, str, list[str], list[str]] | None:
    """(evidence sentence, its clause carrying the claim, claim hedges, clause hedges); None when both
    the claim and the evidence sentence hedge (hedged alike)."""
    ev = case.coverage.evidence
    ev_text = ev.text
    if len(ev.clauses) > 1:
        # the hedge must sit in the clause that carries the claim, not elsewhere in the sentence
        # the first clause with the most overlap (as a stable sort, best first, would put it)
        ev_text = ev.clauses[max(range(len(ev.clauses)), key=lambda i: _clause_overlap(case.ca.terms, ev, i))].text
    ch = cu.hedge_cues(case.text)
    if ch and _hedges(ev, ev.text):
        return None
    return ev, ev_text, ch, _hedges(ev, ev_text)


def _hedges(s: Sentence, text: str) -> list[str]:
    """``cues.hedge_cues`` of ``text`` (the sentence ``s`` or one of its clauses), read once."""
    return s.memo(("hedges", text), lambda: cu.hedge_cues(text))


def future_as_fact(case: ClaimCase) -> RuleHit | None:
    """The claim says something will happen; the context only plans, promises or forecasts it."""
    h = _hedge_texts(case)
    if h is None or not _FUTURE.search(case.text) or _INTENT.search(case.text):
        return None
    ev, ev_text, _, _ = h
    m = _INTENT.search(ev_text) or _INTENT.search(ev.text)
    if not m:
        return None
    return _unsupported(
        case.t.confidence.hedge_future, f"hedge: claim says 'will' but context only says '{m.group(0).lower()}'", ev
    )


def hedge_mismatch(case: ClaimCase) -> RuleHit | None:
    """The claim asserts what the context only hedges ("reduces" where the context says "may reduce"): certainty
    the context does not give. A modal of permission on the claim's side ('can' for 'may') is not an assertion.

    The reverse, a claim that hedges what the context asserts ("may reduce" where it "reduces"), is weaker than
    the context and entailed by it, so it is not flagged: real answers hedge by habit ("may", "could"), and
    this rule's flags of them marked grounded and hallucinated claims alike (real train claims, issue 28: 123
    flags, 31% hallucinated, the same share as the claims no rule flagged).
    """
    h = _hedge_texts(case)
    if h is None:
        return None
    ev, _, ch, eh = h
    if not eh or ch:
        return None
    if _MODAL_CAN.search(case.text) and all(x in lex.POSSIBILITY for x in eh):
        return None
    return _unsupported(case.t.confidence.hedge_context, f"hedge: context says '{eh[0]}' but claim asserts it", ev)


def _intensifiers(s: Sentence) -> list[str]:
    """``cues.intensifier_cues`` of the sentence (read once per sentence)."""
    return s.memo("intensifiers", lambda: cu.intensifier_cues(s.text))


def overclaiming(case: ClaimCase) -> RuleHit | None:
    """The claim adds a universal or exactness word ('exactly', 'always', 'no exceptions') its evidence lacks."""
    cov = case.coverage
    have = {x for s in (cov.covered_by or (cov.evidence,)) for x in _intensifiers(s)}
    added = [w for w in cu.intensifier_cues(case.text) if w not in have]
    if not added:
        return None
    return _unsupported(
        case.t.confidence.intensifier,
        f"claim says '{added[0]}'; the context does not say it that absolutely",
        cov.evidence,
    )


# --------------------------------------------------------------------------- coverage


def low_coverage(case: ClaimCase) -> RuleHit | None:
    """Too little of the claim is in the context, or no single sentence anchors a synthesised claim."""
    cov, t, ca = case.coverage, case.t, case.ca
    unanchored = (
        bool(ca.terms) and cov.anchor < t.alignment.anchor and not (case.number_support or case.qterms & set(ca.terms))
    )
    if cov.share >= t.alignment.support and not unanchored:
        return None
    return _unsupported(
        t.confidence.low_coverage_base + t.confidence.low_coverage_slope * (1 - cov.share),
        f"only {cov.share:.0%} of the claim's terms in context; missing: {', '.join(cov.missing[:4])}",
        cov.evidence if cov.anchor >= t.alignment.align else None,
    )


def hedge_added(case: ClaimCase) -> list[str]:
    """The hedges a supported claim adds to what its evidence asserts ("may reduce" where it "reduces"): hedge
    inflation. Weaker than the context and entailed by it, so the claim stays SUPPORTED and is typed
    ``hedge_inflation`` (the hedge policy decides whether it counts against faithfulness)."""
    h = _hedge_texts(case)
    if h is None:
        return []
    _, _, claim_hedges, evidence_hedges = h
    return [] if evidence_hedges else claim_hedges


def supported(case: ClaimCase) -> RuleHit:
    """No rule fired: SUPPORTED, more confident the more of the claim one sentence covers; typed
    ``hedge_inflation`` when the claim adds a hedge (:func:`hedge_added`)."""
    cov, t = case.coverage, case.t
    synthesis = len(cov.covered_by) > 1
    conf = (
        t.confidence.supported_base
        + t.confidence.supported_slope * cov.share * (t.confidence.supported_synthesis if synthesis else 1.0)
        + t.confidence.supported_exact_bonus * (case.frame >= t.rules.exact_frame)
    )
    reason = f"{cov.share:.0%} of terms"
    if case.ca.quants:
        reason += f" and numbers {', '.join(q.text for q in case.ca.quants)}"
    reason += " found in context"
    chunks = sorted({s.chunk for s in cov.covered_by})
    if len(chunks) > 1:
        reason += f" (combined from chunks {', '.join(map(str, chunks))})"
    if cov.missing:
        reason += f"; not found: {', '.join(cov.missing[:3])}"
    if case.derived:
        conf = min(conf, t.confidence.supported_derived_cap)
        reason += f"; derived: {case.derived[0].derivation}"
    hedges = hedge_added(case)
    if hedges:
        reason += f"; hedge: claim says '{hedges[0]}', the context asserts it"
        return RuleHit(Verdict.SUPPORTED, conf, reason, cov.evidence, fx.FailureType.HEDGE_INFLATION)
    return RuleHit(Verdict.SUPPORTED, conf, reason, cov.evidence)


# --------------------------------------------------------------------------- the declaration

F = FailureType

#: the rules in the order the judge tries them; the first hit decides
RULES: tuple[Rule, ...] = (
    Rule("no_context", F.COVERAGE, no_context),
    Rule("nothing_checkable", F.COVERAGE, nothing_checkable),
    Rule("quote_speaker", F.ATTRIBUTION, quote_speaker),
    Rule("statement_speaker", F.ATTRIBUTION, statement_speaker),
    Rule("date_conflict", F.DATE, date_conflict),
    Rule("number_conflict", F.NUMBER, number_conflict),
    Rule("negation_flip", F.NEGATION, negation_flip, applies_to_derived=False),
    Rule("antonym_in_clause", F.ANTONYM, antonym_in_clause, applies_to_derived=False),
    Rule("entity_swap", F.ENTITY, entity_swap),
    Rule("role_swap", F.ROLE, role_swap, applies_to_derived=False),
    Rule("contrast_exclusion", F.NEGATION, contrast_exclusion, applies_to_derived=False),
    Rule("without_vs_required", F.NEGATION, without_vs_required, applies_to_derived=False),
    Rule("prohibited_action", F.NEGATION, prohibited_action, applies_to_derived=False),
    Rule("clause_entity", F.ENTITY, clause_entity, applies_to_derived=False),
    Rule(
        "closed_class_swap", F.ENTITY, closed_class_swap, applies_to_derived=False, failure_class=fx.FailureType.OTHER
    ),
    Rule("antonym_in_sentence", F.ANTONYM, antonym_in_sentence, applies_to_derived=False),
    Rule("number_less_specific", F.NUMBER, number_less_specific),
    Rule("number_absent", F.NUMBER, number_absent),
    Rule("name_not_in_context", F.KNOWLEDGE_INSERTION, name_not_in_context),
    Rule("stitched_entity_swap", F.ENTITY, stitched_entity_swap),
    Rule("future_as_fact", F.HEDGE, future_as_fact),
    Rule("hedge_mismatch", F.HEDGE, hedge_mismatch),
    Rule("overclaiming", F.HEDGE, overclaiming, failure_class=fx.FailureType.QUANTIFIER),
    Rule("low_coverage", F.COVERAGE, low_coverage),
)

"""What the heuristic judge's rules read: analysed text, aligned sentences, number findings, coverage.

A claim and its contexts are analysed once into a ``ClaimCase``; each rule in
``rules.RULES`` reads it. Expensive parts (number matching, the multi-sentence
cover) are computed on first use and shared between rules.

- ``Analysed``: a text's content terms (stemmed + synonym keys, names weighted up), surface
  forms, names and quantities.
- ``Sentence``: one context sentence with its chunk index and clauses.
- ``overlap``: weighted share of the claim's terms found in a set of keys (the alignment score).
- ``NumberFinding``: how one claim number relates to the context (match, within a range, an
  approximation, a conflict, derived by arithmetic, or absent).
- ``Coverage``: a greedy cover of the claim's terms by up to ``cover_sentences`` sentences.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, Mapping, Sequence

from evaluator_worker.judges.claims import sentence_spans
from evaluator_worker.judges.heuristic import lexicon as lex
from evaluator_worker.judges.heuristic import quantities as qt
from evaluator_worker.judges.heuristic import text as tx
from evaluator_worker.judges.heuristic.thresholds import DEFAULT_THRESHOLDS, Thresholds

# --------------------------------------------------------------------------- analysed text

_LIGHT_KEYS = frozenset(tx.key(w) for w in lex.LIGHT_WORDS)
_COMMON_SUFFIX = re.compile(lex.alternation(lex.COMMON_SUFFIXES) + "$")
_OPENERS = ('"', "“", "(", "'", "‘")
_CLAUSE_SPLIT = re.compile(r"[;:]\s*|,\s*|\s+(?=" + lex.alternation(lex.CLAUSE_CONJUNCTIONS) + r"\b)", re.I)


def _placeholder(k: str) -> bool:
    """A redaction placeholder's key (``person_2``: the only keys with an underscore, see ``text._PLACEHOLDER``):
    matched exactly, never by prefix, so ``[PERSON_1]`` and ``[PERSON_2]`` stay two names."""
    return "_" in k


def fuzzy_keys(keys: Iterable[str], prefix: int = DEFAULT_THRESHOLDS.alignment.prefix) -> frozenset[str]:
    """Prefix forms of keys, for morphological variants the stemmer misses (visitor/visit, repaint/paint)."""
    out = set()
    for k in keys:
        if _placeholder(k):
            continue
        if len(k) >= prefix:
            out.add(k[:prefix])
        if k.startswith("re") and len(k) >= prefix + 1:
            out.add(k[2 : 2 + prefix] if len(k) - 2 >= prefix else k[2:])
    return frozenset(out)


def has_key(
    k: str,
    keys: Mapping[str, float] | frozenset[str] | set[str],
    fuzzy: frozenset[str],
    prefix: int = DEFAULT_THRESHOLDS.alignment.prefix,
) -> bool:
    """Claim key ``k`` present among ``keys`` (exactly, or by a shared prefix / a 're-' prefix)."""
    if k in keys:
        return True
    if _placeholder(k):
        return False
    if len(k) >= prefix and k[:prefix] in fuzzy:
        return True
    return k.startswith("re") and len(k) >= prefix + 1 and (k[2:] in keys or k[2 : 2 + prefix] in fuzzy)


@dataclass(frozen=True)
class Analysed:
    """A text reduced to what the rules compare: weighted content terms, names and quantities."""

    text: str
    #: key -> weight (names weigh ``name_weight``, light verbs ``light_weight``, other words 1)
    terms: dict[str, float]
    #: key -> the word as written (for reasons)
    surface: dict[str, str]
    #: keys of words that are names
    entities: frozenset[str]
    quants: tuple[qt.Quantity, ...]
    fuzzy: frozenset[str] = frozenset()


def analyse(
    text: str, context_vocab: frozenset[str] | set[str] | None = None, t: Thresholds = DEFAULT_THRESHOLDS
) -> Analysed:
    """Content terms of ``text``. A capitalised word is a name unless it only opens the sentence
    (or, given ``context_vocab``, the context uses it in lower case or it has a common-word ending)."""
    toks = tx.tokenize(text)
    quants = tuple(qt.quantities(text))
    in_quant: set[int] = set()
    for q in quants:
        in_quant.update(range(*q.token_span))
    terms: dict[str, float] = {}
    surface: dict[str, str] = {}
    entities: set[str] = set()
    first_word = True
    for i, tok in enumerate(toks):
        if not tok.low[:1].isalpha():
            if tok.low not in _OPENERS and tok.low[:1].isdigit():
                first_word = False
            continue
        if i in in_quant:
            first_word = False
            continue
        parts = (
            [tok]
            if "-" not in tok.low
            else [tx.Tok(p, p.lower(), tok.start, tok.end) for p in tok.text.split("-") if p]
        )
        for p in parts:
            low = p.low
            if (
                low in lex.STOPWORDS
                or low in lex.HEDGE_WORDS
                or low in lex.NEGATION_WORDS
                or low in lex.NUM_WORDS
                or (len(low) < 2 and not p.text.isupper())
            ):
                continue
            k = tx.key(low)
            if not k:
                continue
            is_name = p.text[:1].isupper() and (
                not first_word
                or (i + 1 < len(toks) and toks[i + 1].text[:1].isupper())
                or (context_vocab is not None and low not in context_vocab and not _COMMON_SUFFIX.search(low))
            )
            if p.text.isupper() and len(p.text) >= 2:
                is_name = True
            if is_name:
                w = t.alignment.name_weight
                entities.add(k)
            elif low in lex.LIGHT_WORDS or k in _LIGHT_KEYS:
                w = t.alignment.light_weight
            else:
                w = 1.0
            terms[k] = max(terms.get(k, 0.0), w)
            surface.setdefault(k, p.text)
        first_word = False
    return Analysed(text, terms, surface, frozenset(entities), quants, fuzzy_keys(terms, t.alignment.prefix))


def term_keys(text: str) -> frozenset[str]:
    """The content keys of ``text`` (no weights)."""
    return frozenset(analyse(text).terms)


@dataclass(frozen=True)
class Clause:
    """A clause of a context sentence (split at punctuation and contrastive conjunctions)."""

    text: str
    keys: frozenset[str]


def split_clauses(text: str) -> tuple[Clause, ...]:
    """Clauses of ``text`` with their content keys."""
    out = tuple(Clause(part, term_keys(part)) for part in _CLAUSE_SPLIT.split(text) if part and part.strip())
    return out or (Clause(text, term_keys(text)),)


@dataclass(frozen=True, eq=False)
class Sentence:
    """One context sentence: its chunk index, analysis and clauses (compared by identity)."""

    chunk: int
    a: Analysed
    clauses: tuple[Clause, ...] = field(default_factory=tuple)

    @property
    def text(self) -> str:
        return self.a.text


def overlap(
    claim_terms: Mapping[str, float],
    keys: Mapping[str, float] | frozenset[str] | set[str],
    exclude: frozenset[str] | set[str] = frozenset(),
    fuzzy: frozenset[str] | None = None,
) -> float:
    """Weighted share of ``claim_terms`` found in ``keys``."""
    total = sum(w for k, w in claim_terms.items() if k not in exclude)
    if total <= 0:
        return 0.0
    fz = fuzzy if fuzzy is not None else fuzzy_keys(keys)
    return sum(w for k, w in claim_terms.items() if k not in exclude and has_key(k, keys, fz)) / total


def sentence_overlap(
    terms: Mapping[str, float], s: Sentence, exclude: frozenset[str] | set[str] = frozenset()
) -> float:
    """``overlap`` of ``terms`` with the whole sentence ``s``."""
    return overlap(terms, s.a.terms, exclude=exclude, fuzzy=s.a.fuzzy)


@functools.lru_cache(maxsize=4096)
def _chunk_sentences(chunk: str) -> tuple[tuple[Analysed, tuple[Clause, ...]], ...]:
    """Analysed sentences of one chunk. Cached: production traffic retrieves the same chunks again and again."""
    out = []
    for a, b in sentence_spans(chunk):
        text = chunk[a:b]
        out.append((analyse(text), split_clauses(text)))
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _chunk_vocab(chunk: str) -> frozenset[str]:
    return frozenset(tok.low for tok in tx.tokenize(chunk) if tok.text[:1].islower())


def index_contexts(contexts: Sequence[str]) -> list[Sentence]:
    """Every sentence of every chunk, in order."""
    return [
        Sentence(ci, analysed, clauses)
        for ci, chunk in enumerate(contexts or [])
        for analysed, clauses in _chunk_sentences(chunk or "")
    ]


def context_vocab(contexts: Sequence[str]) -> frozenset[str]:
    """Words the contexts use in lower case (a capitalised claim word the context writes in lower case is not a name)."""
    out: frozenset[str] = frozenset()
    for chunk in contexts or []:
        out |= _chunk_vocab(chunk or "")
    return out


def short(s: str, n: int = 60) -> str:
    """``s`` on one line, cut to ``n`` characters."""
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


# --------------------------------------------------------------------------- numbers

#: words that make a claim number a relation between context numbers (a margin, a duration, a total)
_RELATIONAL = re.compile(
    r"\b(?:" + "|".join(lex.RELATIONAL_WORDS) + "|" + lex.alternation(lex.CHANGE_BY_VERBS) + r"\s+by)\b", re.I
)


def neighbours(text: str, q: qt.Quantity, n: int = DEFAULT_THRESHOLDS.numbers.neighbours) -> set[str]:
    """Keys of up to ``n`` words either side of quantity ``q`` in ``text`` (in the number's own clause)."""
    toks = tx.tokenize(text)
    a, b = q.token_span
    out: set[str] = set()
    for rng in (range(a - 1, max(a - 1 - 2 * n, -1), -1), range(b, min(b + 2 * n, len(toks)))):
        got = 0
        for i in rng:
            w = toks[i].low
            if w in (",", ";", ":", "(", ")") or w[:1].isdigit():
                break
            if not w[:1].isalpha() or w in lex.NEIGHBOUR_SKIP or w in qt.UNITS:
                continue
            out.add(tx.key(w))
            got += 1
            if got >= n:
                break
    return out


def _bound_ok(q: qt.Quantity, value: float, tol: float) -> bool:
    """Derived ``value`` satisfies claim quantity ``q`` (its bound, or its value within ``tol``)."""
    if q.bound == "lower":
        return value >= q.lo - tol * 0.01
    if q.bound == "upper":
        return value <= q.lo + tol * 0.01
    if q.approx:
        return abs(value - q.lo) <= max(tol, 0.1 * q.lo)
    return abs(value - q.lo) <= tol


@dataclass(frozen=True)
class NumberFinding:
    """How one claim number relates to the context.

    status: ``match`` / ``within`` (the value, or inside a context range), ``approx`` (rounded,
    widened or made more precise than the context), ``conflict`` (a different value in an aligned
    sentence), ``derived`` (simple arithmetic over context numbers gives it), ``absent``.
    """

    q: qt.Quantity
    status: str
    evidence: qt.Quantity | None = None
    sentence: Sentence | None = None
    align: float = 0.0
    derivation: str = ""


def _derive(q: qt.Quantity, ca: Analysed, sents: Sequence[Sentence]) -> tuple[str, Sentence, float] | None:
    """A claim number computed from context numbers, as an annotator would: the time between two
    dates/years anywhere in the context, or the sum/difference of two same-unit numbers in one
    sentence. -> (derivation, evidence sentence, alignment) or None."""
    if q.dim in ("date", "year", "clock") or q.is_range:
        return None
    if q.dim == "time":
        dated = [(e, s) for s in sents for e in s.a.quants if e.dim in ("date", "year") and not e.is_range]
        for i, (a, sa) in enumerate(dated):
            for b, sb in dated[i + 1 :]:
                days = qt.days_between(a, b)
                if not days:
                    continue
                secs = abs(days) * 86400.0
                unit = q.unit or 86400.0
                coarse = (
                    a.dim == "year"
                    or b.dim == "year"
                    or (a.date and a.date[2] is None)
                    or (b.date and b.date[2] is None)
                )
                tol = max(unit, 86400.0) * (1.0 if coarse else 0.5)
                if _bound_ok(q, secs, tol):
                    s = sa if sentence_overlap(ca.terms, sa) >= sentence_overlap(ca.terms, sb) else sb
                    return f"{q.text} = time from {a.text} to {b.text}", s, sentence_overlap(ca.terms, s)
    if q.bound:
        return None  # a bound is satisfied by too many sums/differences to count as evidence
    for s in sents:
        if q.dim.startswith("count:") or q.dim == "num":
            qs = [e for e in s.a.quants if (e.dim == "num" or e.dim.startswith("count:")) and not e.is_range]
        else:
            qs = [e for e in s.a.quants if e.dim == q.dim and not e.is_range and e.dim not in ("date", "year", "clock")]
        for i, a in enumerate(qs):
            for b in qs[i + 1 :]:
                for val, op in ((a.lo + b.lo, "+"), (abs(a.lo - b.lo), "-")):
                    if (
                        val > 0
                        and _bound_ok(q, val, 1e-6 * max(val, 1.0))
                        and not qt.close(val, a.lo)
                        and not qt.close(val, b.lo)
                    ):
                        return f"{q.text} = {a.text} {op} {b.text}", s, sentence_overlap(ca.terms, s)
    return None


def _compare_counted(q: qt.Quantity, e: qt.Quantity, s: Sentence, ca: Analysed) -> str:
    """Compare two numbers; counts of different nouns compare when each noun is in the other text
    ("three visitor levels" vs "three levels for visitors")."""
    st = qt.compare_quantity(q, e)
    if st == "other" and q.dim.startswith("count:") and e.dim.startswith("count:"):
        if q.dim[6:] in s.a.terms and e.dim[6:] in ca.terms:
            st = qt.compare_quantity(q, qt.Quantity(e.lo, e.hi, q.dim, e.text, e.approx))
    return st


def find_number(
    q: qt.Quantity, claim_text: str, ca: Analysed, sents: Sequence[Sentence], t: Thresholds
) -> NumberFinding:
    """The context number that best pairs with claim number ``q`` (alignment of its sentence, its
    status and shared neighbouring words), or a derivation, or absent."""
    cands: list[tuple[float, str, qt.Quantity, Sentence, float]] = []
    qn = neighbours(claim_text, q, t.numbers.neighbours)
    for s in sents:
        align = sentence_overlap(ca.terms, s) if ca.terms else 1.0
        for e in s.a.quants:
            st = _compare_counted(q, e, s, ca)
            if st == "other":
                continue
            sc = (
                align
                + t.numbers.status_bonus(st)
                + t.numbers.neighbour_bonus * min(len(qn & neighbours(s.a.text, e, t.numbers.neighbours)), 3)
            )
            cands.append((sc, st, e, s, align))
    best = None
    for c in cands:
        if best is None or c[0] > best[0]:
            best = c
    if best is not None and best[1] == "conflict":
        # another sentence that agrees and aligns nearly as well wins over the clash
        agree = [
            c
            for c in cands
            if c[1] != "conflict"
            and c[3] is not best[3]
            and c[4] >= best[4] - t.numbers.agree_margin
            and c[4] >= t.numbers.agree_min
        ]
        if agree:
            best = max(agree, key=lambda c: c[0])
    if best is None or best[1] == "conflict":
        derived = _derive(q, ca, sents)
        if derived and (best is None or best[4] < t.alignment.align or _RELATIONAL.search(claim_text)):
            return NumberFinding(q, "derived", None, derived[1], derived[2], derived[0])
    if best is None:
        if (q.dim == "num" or q.dim.startswith("count:")) and not q.is_range:
            # a bare count or a label number (a model or mission number): the same value anywhere will do
            for s in sents:
                for e in s.a.quants:
                    if e.dim != "date" and not e.is_range and qt.close(e.lo, q.lo):
                        return NumberFinding(q, "match", e, s, sentence_overlap(ca.terms, s))
        return NumberFinding(q, "absent")
    _, st, e, s, align = best
    if st in ("match", "within"):
        return NumberFinding(q, st, e, s, align)
    strong = align >= t.alignment.align and sum(w for k, w in ca.terms.items() if has_key(k, s.a.terms, s.a.fuzzy)) >= 1
    if not strong:
        return NumberFinding(q, "absent", e, None, align)
    return NumberFinding(q, st, e, s, align)


def _number_bonus(ca: Analysed, s: Sentence, bonus: float) -> float:
    """Alignment bonus for a sentence holding one of the claim's numbers."""
    if ca.quants and s.a.quants:
        for q in ca.quants:
            for e in s.a.quants:
                if qt.compare_quantity(q, e) in ("match", "within"):
                    return bonus
    return 0.0


# --------------------------------------------------------------------------- coverage


@dataclass(frozen=True)
class Coverage:
    """Greedy cover of the claim's terms by up to ``cover_sentences`` sentences (multi-source synthesis)."""

    #: the sentences picked, best first
    covered_by: tuple[Sentence, ...]
    #: weighted share of claim terms (plus matched numbers) covered
    share: float
    #: claim words (as written) not covered / names among them
    missing: tuple[str, ...]
    missing_names: tuple[str, ...]
    #: the sentence reported as evidence
    evidence: Sentence
    #: overlap of the claim with the evidence sentence alone
    anchor: float


# --------------------------------------------------------------------------- the case


@dataclass
class ClaimCase:
    """One claim against its contexts: what every rule reads (derived facts computed on first use)."""

    text: str
    ca: Analysed
    sents: list[Sentence]
    #: content keys of the question (an answer may leave out the subject the question names)
    qterms: frozenset[str]
    t: Thresholds = DEFAULT_THRESHOLDS

    @classmethod
    def build(
        cls,
        text: str,
        sents: list[Sentence],
        vocab: frozenset[str],
        qterms: frozenset[str],
        t: Thresholds = DEFAULT_THRESHOLDS,
    ) -> ClaimCase:
        return cls(text, analyse(text, vocab, t), sents, qterms, t)

    @cached_property
    def ranked(self) -> list[Sentence]:
        """Context sentences by alignment with the claim (ties: earlier first)."""
        scored = [
            (
                overlap(self.ca.terms, s.a.terms, fuzzy=s.a.fuzzy)
                + _number_bonus(self.ca, s, self.t.numbers.number_align_bonus),
                -i,
                s,
            )
            for i, s in enumerate(self.sents)
        ]
        scored.sort(key=lambda x: (x[0], x[1]), reverse=True)
        return [s for _, _, s in scored]

    @cached_property
    def best(self) -> Sentence:
        """The best-aligned sentence: the default evidence."""
        return self.ranked[0]

    @cached_property
    def frame(self) -> float:
        """Overlap of the claim with the best sentence (without the number bonus)."""
        return sentence_overlap(self.ca.terms, self.best)

    @cached_property
    def numbers(self) -> list[NumberFinding]:
        """One finding per claim number, in claim order."""
        return [find_number(q, self.text, self.ca, self.sents, self.t) for q in self.ca.quants]

    @cached_property
    def derived(self) -> list[NumberFinding]:
        """Numbers obtained by arithmetic over the context (the claim then states a relation, not a fact to negate)."""
        return [f for f in self.numbers if f.status == "derived"]

    @cached_property
    def number_support(self) -> list[Sentence]:
        """Sentences holding a claim number (matched, inside a range, or the base of a derivation)."""
        return [
            f.sentence for f in self.numbers if f.status in ("match", "within", "derived") and f.sentence is not None
        ]

    @cached_property
    def coverage(self) -> Coverage:
        ca, t = self.ca, self.t
        covered_by: list[Sentence] = []
        covered = {k for k in ca.terms if k in self.qterms}
        remaining = {k for k in ca.terms if k not in covered}
        pool = self.ranked[: t.alignment.cover_pool] + self.number_support
        for _ in range(t.alignment.cover_sentences):
            if not remaining:
                break
            gain_s, gain = None, 0.0
            for s in pool:
                g = sum(ca.terms[k] for k in remaining if has_key(k, s.a.terms, s.a.fuzzy))
                if g > gain:
                    gain_s, gain = s, g
            if gain_s is None:
                break
            covered_by.append(gain_s)
            newly = {k for k in remaining if has_key(k, gain_s.a.terms, gain_s.a.fuzzy)}
            covered |= newly
            remaining -= newly
        qweight = t.alignment.number_weight * len(ca.quants)
        total = sum(ca.terms.values()) + qweight
        share = (sum(w for k, w in ca.terms.items() if k in covered) + qweight) / total if total else 1.0
        ev = covered_by[0] if covered_by else (self.number_support[0] if self.number_support else self.best)
        return Coverage(
            covered_by=tuple(covered_by),
            share=share,
            missing=tuple(ca.surface[k] for k in ca.terms if k not in covered),
            missing_names=tuple(ca.surface[k] for k in ca.terms if k in ca.entities and k not in covered),
            evidence=ev,
            anchor=sentence_overlap(ca.terms, ev) if ca.terms else 1.0,
        )

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

import bisect
import functools
import heapq
import itertools
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Hashable, Iterable, Iterator, Mapping, Sequence, TypeVar, cast

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


_T = TypeVar("_T")


@dataclass(frozen=True, eq=False)
class Sentence:
    """One context sentence: its chunk index, analysis and clauses (compared by identity)."""

    chunk: int
    a: Analysed
    clauses: tuple[Clause, ...] = field(default_factory=tuple)
    #: what the rules derive from the sentence alone, kept for the other claims of the answer (see ``memo``)
    _memo: dict[Hashable, Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def text(self) -> str:
        return self.a.text

    def memo(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """``compute()``, computed once per ``key`` for this sentence. A check that reads a sentence's text
        the same way for every claim caches what it reads here: the judge compares every claim of an answer
        with every context sentence, so re-reading the sentences per claim multiplies the answer's length by
        the contexts'. Lives as long as the sentence (one ``verify`` call), so long chunks do not pile up in
        the chunk cache."""
        try:
            return cast(_T, self._memo[key])
        except KeyError:
            got = self._memo[key] = compute()
            return got

    def neighbour_keys(self, n: int) -> tuple[frozenset[str], ...]:
        """``quantity_neighbours`` of the sentence (its quantities' neighbouring words), computed once."""
        return self.memo(("neighbours", n), lambda: quantity_neighbours(self.a, n))


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
    """Keys of up to ``n`` words either side of quantity ``q`` in ``text`` (in the number's own clause).

    Tokenises ``text``: ``quantity_neighbours`` gives those of all an analysed text's quantities at once."""
    return _neighbours_in(tx.tokenize(text), q.token_span, n)


def quantity_neighbours(a: Analysed, n: int = DEFAULT_THRESHOLDS.numbers.neighbours) -> tuple[frozenset[str], ...]:
    """``neighbours`` of every quantity of ``a`` (in ``a.quants`` order) from one tokenisation of its text:
    tokenising per quantity made a long sentence with many numbers (a flattened table) quadratic."""
    if not a.quants:
        return ()
    toks = tx.tokenize(a.text)
    return tuple(frozenset(_neighbours_in(toks, q.token_span, n)) for q in a.quants)


def _neighbours_in(toks: Sequence[tx.Tok], span: tuple[int, int], n: int) -> set[str]:
    """``neighbours`` over the text's tokens: reads at most ``2 * n`` tokens either side of ``span``."""
    a, b = span
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


#: at most this many dated quantities (the first in context order) are paired when a claimed duration is
#: derived as the time between two context dates: every pair is tried, so the work is the square of this.
#: Guards the number failure type's derivation against a context full of dates (a timeline or a dated table
#: flattened to text); real contexts hold far fewer (the most in the labelled and real dev data is 194).
_DERIVE_MAX_DATES = 256
#: at most this many numbers of one sentence (its first) are paired when a claim number is derived as the sum
#: or difference of two of them: a sentence with more is a table, where some pair of hundreds of figures adds
#: up to nearly any number by chance. Guards the number failure type's derivation (the pairs grow with the
#: square of the sentence's numbers); real sentences hold far fewer (the most in the labelled and real dev
#: data is 68 quantities of any kind).
_DERIVE_MAX_NUMBERS = 100


def _derive(q: qt.Quantity, ca: Analysed, sents: Sequence[Sentence]) -> tuple[str, Sentence, float] | None:
    """A claim number computed from context numbers, as an annotator would: the time between two
    dates/years anywhere in the context, or the sum/difference of two same-unit numbers in one
    sentence. -> (derivation, evidence sentence, alignment) or None."""
    if q.dim in ("date", "year", "clock") or q.is_range:
        return None
    if q.dim == "time":
        dated = [(e, s) for s in sents for e in s.a.quants if e.dim in ("date", "year") and not e.is_range]
        dated = dated[:_DERIVE_MAX_DATES]
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
    numeric = q.dim.startswith("count:") or q.dim == "num"
    for s in sents:
        qs, sums = _pairable(s, q.dim, numeric)
        hit = _first_pair(q, qs, sums)
        if hit is not None:
            a, b, op = qs[hit[0]], qs[hit[1]], "+-"[hit[2]]
            return f"{q.text} = {a.text} {op} {b.text}", s, sentence_overlap(ca.terms, s)
    return None


#: the sums and differences of a sentence's pairable numbers: (values sorted, (i, j, op) of each), or None
#: where a value is not finite (``_first_pair`` then tries the pairs in order)
_Sums = tuple[list[float], list[tuple[int, int, int]]] | None


def _pairable(s: Sentence, dim: str, numeric: bool) -> tuple[list[qt.Quantity], _Sums]:
    """The numbers of ``s`` a claim number of ``dim`` may be the sum or difference of (bare numbers and counts
    for a bare number or count, else the same dimension; the first ``_DERIVE_MAX_NUMBERS``) and their sums
    and differences that are neither number itself, sorted. Computed once per sentence and kind of number."""

    def compute() -> tuple[list[qt.Quantity], _Sums]:
        if numeric:
            qs = [e for e in s.a.quants if (e.dim == "num" or e.dim.startswith("count:")) and not e.is_range]
        else:
            qs = [e for e in s.a.quants if e.dim == dim and not e.is_range and e.dim not in ("date", "year", "clock")]
        qs = qs[:_DERIVE_MAX_NUMBERS]
        return qs, _sums(qs)

    return s.memo(("pairable", "numeric" if numeric else dim), compute)


def _sums(qs: Sequence[qt.Quantity]) -> _Sums:
    """The sums (op 0) and differences (op 1) of each pair (i < j) of ``qs`` that are positive and neither
    number itself, sorted by value; None where a value is not finite."""
    if not all(math.isfinite(e.lo) for e in qs):
        return None
    sums = []
    for i, a in enumerate(qs):
        for j in range(i + 1, len(qs)):
            b = qs[j]
            for op, val in enumerate((a.lo + b.lo, abs(a.lo - b.lo))):
                if val > 0 and not qt.close(val, a.lo) and not qt.close(val, b.lo):
                    sums.append((val, (i, j, op)))
    sums.sort(key=lambda x: x[0])
    return [v for v, _ in sums], [k for _, k in sums]


def _pair_ok(q: qt.Quantity, a: qt.Quantity, b: qt.Quantity, op: int) -> bool:
    """``a + b`` (op 0) or ``|a - b|`` (op 1) gives claim number ``q``, and is neither of the two itself."""
    val = a.lo + b.lo if op == 0 else abs(a.lo - b.lo)
    return val > 0 and _bound_ok(q, val, 1e-6 * max(val, 1.0)) and not qt.close(val, a.lo) and not qt.close(val, b.lo)


def _first_pair(q: qt.Quantity, qs: Sequence[qt.Quantity], sums: _Sums) -> tuple[int, int, int] | None:
    """The first pair (i < j, then the sum before the difference) of ``qs`` whose sum or difference gives
    ``q`` -> (i, j, op), or None. Looks the claim number up among the sentence's sorted ``sums``: every sum
    within ``_bound_ok``'s tolerance of it lies in the window searched, and is checked exactly as the
    pairwise loop checks it."""
    if sums is None or not math.isfinite(q.lo):
        return _first_pair_scan(q, qs)
    values, pairs = sums
    # q has no bound here: a value passing ``_bound_ok`` is within 10% (approx) or 1e-6 (exact) of it
    half = (0.11 * abs(q.lo) if q.approx else 0.0) + 1e-5 * max(abs(q.lo), 1.0)
    best = None
    for k in range(bisect.bisect_left(values, q.lo - half), bisect.bisect_right(values, q.lo + half)):
        val = values[k]
        if (best is None or pairs[k] < best) and _bound_ok(q, val, 1e-6 * max(val, 1.0)):
            best = pairs[k]
    return best


def _first_pair_scan(q: qt.Quantity, qs: Sequence[qt.Quantity]) -> tuple[int, int, int] | None:
    """``_first_pair`` by trying every pair in order (for values the window lookup cannot order: inf)."""
    for i, a in enumerate(qs):
        for j in range(i + 1, len(qs)):
            for op in (0, 1):
                if _pair_ok(q, a, qs[j], op):
                    return i, j, op
    return None


def _compare_counted(q: qt.Quantity, e: qt.Quantity, s: Sentence, ca: Analysed) -> str:
    """Compare two numbers; counts of different nouns compare when each noun is in the other text
    ("three visitor levels" vs "three levels for visitors")."""
    st = qt.compare_quantity(q, e)
    if st == "other" and q.dim.startswith("count:") and e.dim.startswith("count:"):
        if q.dim[6:] in s.a.terms and e.dim[6:] in ca.terms:
            st = qt.compare_quantity(q, qt.Quantity(e.lo, e.hi, q.dim, e.text, e.approx))
    return st


class _SentenceNumbers:
    """A sentence's quantities indexed for pairing with claim numbers (built once per sentence).

    A claim number that is *plain* (one finite value, no bound, not approximate, not a date) compares with a
    plain context number of its own dimension by value and wording alone: the two match, or the claim rounds
    the context figure, only when the values are within ``_value_window`` of each other; otherwise they
    conflict. So a plain claim number is compared one by one only with the non-plain context numbers and
    with one plain number of each (value, wording) near its own, whose status holds for all that share them;
    the plain numbers far from it are conflicts. A candidate's score then depends only on its status and the
    neighbouring words it shares with the claim number, and the first of the best-scored candidates wins, so
    the first number of each set of neighbouring words stands for the conflicts. The result is the same as
    comparing every pair (the tests check it against that) at a cost that no longer multiplies the claim's
    numbers by every number of a long context (a table)."""

    def __init__(self, s: Sentence) -> None:
        #: dimension -> indices (in order) of its plain quantities / of the others
        self.plain: dict[str, list[int]] = {}
        self.other: dict[str, list[int]] = {}
        labels: list[tuple[float, int]] = []
        self.odd_labels: list[int] = []  # non-finite values: compared one by one
        for i, e in enumerate(s.a.quants):
            (self.plain if _plain(e) else self.other).setdefault(e.dim, []).append(i)
            if e.dim != "date" and not e.is_range:
                if math.isfinite(e.lo):
                    labels.append((e.lo, i))
                else:
                    self.odd_labels.append(i)
        labels.sort()
        self.label_values = [v for v, _ in labels]
        self.label_index = [i for _, i in labels]
        self.dims = frozenset(self.plain) | frozenset(self.other)
        self.counts = any(d.startswith("count:") for d in self.dims)

    def comparable(self, q: qt.Quantity, counted: bool) -> bool:
        """Some quantity here may compare with ``q`` as anything but "other" (see ``_pairing``)."""
        d, dims = q.dim, self.dims
        return (
            d in dims
            or d == "age"
            or "age" in dims
            or (d in ("year", "date") and not dims.isdisjoint(("year", "date")))
            or (counted and self.counts and d.startswith("count:"))
        )


class _PlainNumbers:
    """The plain quantities of one dimension of a sentence (see ``_SentenceNumbers``): by (value, wording),
    sorted by value, and by neighbouring words, each set with the first index outside a value window."""

    def __init__(self, s: Sentence, dim: str, n: int) -> None:
        qs, near = s.a.quants, s.neighbour_keys(n)
        groups: dict[frozenset[str], list[int]] = {}
        classes: dict[tuple[float, str], list[int]] = {}
        for i in _sentence_numbers(s).plain.get(dim, []):
            groups.setdefault(near[i], []).append(i)
            classes.setdefault((qs[i].lo, qs[i].text), []).append(i)
        ranked = sorted(classes.items(), key=lambda kv: kv[0][0])
        self.class_values = [lo for (lo, _), _ in ranked]
        #: the indices (in order) of the quantities of each (value, wording), by value
        self.classes = [members for _, members in ranked]
        #: (neighbouring words, member values sorted, least index of the members up to / from each position)
        self.groups: list[tuple[frozenset[str], list[float], list[int], list[int]]] = []
        for g, members in groups.items():
            members.sort(key=lambda i: qs[i].lo)
            before = list(itertools.accumulate(members, min))
            after = list(itertools.accumulate(reversed(members), min))[::-1]
            self.groups.append((g, [qs[i].lo for i in members], before, after))

    def near(self, centre: float, half: float) -> list[list[int]]:
        """The members of each (value, wording) whose value is within ``half`` of ``centre``."""
        return _near(self.class_values, self.classes, centre, half)

    def far(self, centre: float, half: float) -> Iterable[tuple[frozenset[str], int]]:
        """(neighbouring words, first index) of each set of neighbouring words among the values not within
        ``half`` of ``centre``."""
        for g, values, before, after in self.groups:
            lo, hi = bisect.bisect_left(values, centre - half), bisect.bisect_right(values, centre + half)
            firsts = ([before[lo - 1]] if lo else []) + ([after[hi]] if hi < len(values) else [])
            if firsts:
                yield g, min(firsts)


def _near(values: list[float], order: list[_T], centre: float, half: float) -> list[_T]:
    """The entries of ``order`` (sorted by ``values``) whose value is within ``half`` of ``centre``."""
    return order[bisect.bisect_left(values, centre - half) : bisect.bisect_right(values, centre + half)]


def _sentence_numbers(s: Sentence) -> _SentenceNumbers:
    got = s._memo.get("numbers")  # the common case first: this runs for every claim number and sentence
    return got if got is not None else s.memo("numbers", lambda: _SentenceNumbers(s))


def _plain_numbers(s: Sentence, dim: str, n: int) -> _PlainNumbers:
    return s.memo(("plain_numbers", dim, n), lambda: _PlainNumbers(s, dim, n))


def _plain(e: qt.Quantity) -> bool:
    """One finite value with no bound and no approximation (see ``_SentenceNumbers``)."""
    return e.bound is None and not e.approx and e.lo == e.hi and math.isfinite(e.lo)


def _value_window(q: qt.Quantity) -> float:
    """How far a plain context value may be from plain claim number ``q`` and still not conflict with it:
    a match is within 0.1% (``close``), rounding to the claim's decimals within one unit of the claim."""
    return 0.01 * abs(q.lo) + 1.01 * (q.unit or 1.0) + 1e-6


def _plain_claim(q: qt.Quantity) -> bool:
    """``q`` takes the indexed path (``_SentenceNumbers``): plain, not a date, and with a usable unit."""
    unit = q.unit or 1.0
    return _plain(q) and q.dim != "date" and math.isfinite(unit) and unit > 0 and math.isfinite(_value_window(q))


def _pairing(
    q: qt.Quantity, s: Sentence, ca: Analysed, n: int, counted: bool = True, plain: bool = True
) -> tuple[list[int], list[str], list[list[int]]]:
    """What of sentence ``s`` claim number ``q`` is compared with: the quantities of the dimensions that can
    compare as anything but "other" (its own; a year and a date; anything with an age; with ``counted``, the
    counts ``_compare_counted`` compares). -> (indices to compare one by one, in order; for a ``plain``
    claim number (``_plain_claim``), the dimensions whose plain quantities far from it are sure conflicts,
    and the members of each (value, wording) of theirs near it, whose first stands for the rest)."""
    idx = _sentence_numbers(s)
    if not idx.comparable(q, counted):
        return [], [], []
    d = q.dim
    one_by_one: list[int] = []
    by_value: list[str] = []
    for dim in idx.dims:
        if dim == d or (
            counted
            and dim.startswith("count:")
            and d.startswith("count:")
            and d[6:] in s.a.terms
            and dim[6:] in ca.terms
        ):
            one_by_one += idx.other.get(dim, ())
            if dim in idx.plain:
                if plain:
                    by_value.append(dim)
                else:
                    one_by_one += idx.plain[dim]
        elif {dim, d} == {"year", "date"} or "age" in (dim, d):
            one_by_one += idx.plain.get(dim, []) + idx.other.get(dim, [])
    one_by_one.sort()
    if not by_value:
        return one_by_one, by_value, []
    half = _value_window(q)
    return one_by_one, by_value, [members for dim in by_value for members in _plain_numbers(s, dim, n).near(q.lo, half)]


_Cand = tuple[float, str, qt.Quantity, Sentence, float]


def find_number(
    q: qt.Quantity,
    claim_text: str,
    ca: Analysed,
    sents: Sequence[Sentence],
    t: Thresholds,
    qn: frozenset[str] | set[str] | None = None,
    aligns: Sequence[float] | None = None,
) -> NumberFinding:
    """The context number that best pairs with claim number ``q`` (alignment of its sentence, its
    status and shared neighbouring words), or a derivation, or absent. ``qn``: the ``neighbours``
    of ``q`` in ``claim_text``, and ``aligns``: ``sentence_overlap`` of the claim with each sentence,
    when the caller has them."""
    n = t.numbers.neighbours
    if qn is None:
        qn = neighbours(claim_text, q, n)
    plain = _plain_claim(q)
    best: _Cand | None = None  # the first candidate with the highest score
    agreeing: list[_Cand] = []  # the candidates that do not conflict, in order
    for si, s in enumerate(sents):
        if not s.a.quants:
            continue
        one_by_one, plain_dims, near_classes = _pairing(q, s, ca, n, plain=plain)
        if not (one_by_one or plain_dims):
            continue
        align = (aligns[si] if aligns is not None else sentence_overlap(ca.terms, s)) if ca.terms else 1.0
        near = s.neighbour_keys(n)
        found: list[tuple[int, float, str]] = []  # (index, score, status) of the sentence's candidates
        if plain:
            conflict = align + t.numbers.status_bonus("conflict")
            half = _value_window(q)
            for dim in plain_dims:
                for group, first in _plain_numbers(s, dim, n).far(q.lo, half):
                    found.append((first, conflict + t.numbers.neighbour_bonus * min(len(qn & group), 3), "conflict"))
            for members in near_classes:
                st = _compare_counted(q, s.a.quants[members[0]], s, ca)
                if st == "other":
                    continue
                # the same status for every member: the first of the best scored stands for the rest
                base = align + t.numbers.status_bonus(st)
                sc, first = max((base + t.numbers.neighbour_bonus * min(len(qn & near[i]), 3), -i) for i in members)
                found.append((-first, sc, st))
        for i in one_by_one:
            e = s.a.quants[i]
            st = _compare_counted(q, e, s, ca)
            if st == "other":
                continue
            found.append(
                (i, align + t.numbers.status_bonus(st) + t.numbers.neighbour_bonus * min(len(qn & near[i]), 3), st)
            )
        found.sort(key=lambda c: c[0])
        for i, sc, st in found:
            c = (sc, st, s.a.quants[i], s, align)
            if st != "conflict":
                agreeing.append(c)
            if best is None or sc > best[0]:
                best = c
    if best is not None and best[1] == "conflict":
        # another sentence that agrees and aligns nearly as well wins over the clash
        b = best
        agree = [
            c
            for c in agreeing
            if c[3] is not b[3] and c[4] >= b[4] - t.numbers.agree_margin and c[4] >= t.numbers.agree_min
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
                same = _same_value(q, s)
                if same is not None:
                    return NumberFinding(q, "match", same, s, sentence_overlap(ca.terms, s))
        return NumberFinding(q, "absent")
    _, st, e, s, align = best
    if st in ("match", "within"):
        return NumberFinding(q, st, e, s, align)
    strong = align >= t.alignment.align and sum(w for k, w in ca.terms.items() if has_key(k, s.a.terms, s.a.fuzzy)) >= 1
    if not strong:
        return NumberFinding(q, "absent", e, None, align)
    return NumberFinding(q, st, e, s, align)


def _same_value(q: qt.Quantity, s: Sentence) -> qt.Quantity | None:
    """The first quantity of ``s`` (not a date, not a range) with the value of ``q``, or None."""
    if not math.isfinite(q.lo):
        return next((e for e in s.a.quants if e.dim != "date" and not e.is_range and qt.close(e.lo, q.lo)), None)
    idx = _sentence_numbers(s)
    # ``close`` is within 0.1%: well inside this window (a non-finite value is compared one by one)
    near = _near(idx.label_values, idx.label_index, q.lo, 0.01 * abs(q.lo) + 1e-6) + idx.odd_labels
    hits = [i for i in near if qt.close(s.a.quants[i].lo, q.lo)]
    return s.a.quants[min(hits)] if hits else None


def _number_bonus(ca: Analysed, s: Sentence, bonus: float, n: int = DEFAULT_THRESHOLDS.numbers.neighbours) -> float:
    """Alignment bonus for a sentence holding one of the claim's numbers."""
    if ca.quants and s.a.quants:
        for q in ca.quants:
            # a plain claim number can only match or lie within the quantities ``_pairing`` leaves to compare
            one_by_one, _, near_classes = _pairing(q, s, ca, n, counted=False, plain=_plain_claim(q))
            for i in itertools.chain(one_by_one, (members[0] for members in near_classes)):
                if qt.compare_quantity(q, s.a.quants[i]) in ("match", "within"):
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
    def alignments(self) -> list[float]:
        """``sentence_overlap`` of the claim with each context sentence, in order (computed once per claim)."""
        return [sentence_overlap(self.ca.terms, s) for s in self.sents]

    def _scored(self) -> Iterator[tuple[float, int, Sentence]]:
        t = self.t
        for i, s in enumerate(self.sents):
            bonus = _number_bonus(self.ca, s, t.numbers.number_align_bonus, t.numbers.neighbours)
            yield self.alignments[i] + bonus, -i, s

    @cached_property
    def ranked(self) -> list[Sentence]:
        """Context sentences by alignment with the claim (ties: earlier first)."""
        scored = list(self._scored())
        scored.sort(key=lambda x: (x[0], x[1]), reverse=True)
        return [s for _, _, s in scored]

    @cached_property
    def top(self) -> list[Sentence]:
        """The first ``cover_pool`` (at least one) of ``ranked``, without sorting every sentence."""
        if "ranked" in self.__dict__:
            return self.ranked[: max(self.t.alignment.cover_pool, 1)]
        best = heapq.nlargest(max(self.t.alignment.cover_pool, 1), self._scored(), key=lambda x: (x[0], x[1]))
        return [s for _, _, s in best]

    @cached_property
    def best(self) -> Sentence:
        """The best-aligned sentence: the default evidence."""
        return self.top[0]

    @cached_property
    def frame(self) -> float:
        """Overlap of the claim with the best sentence (without the number bonus)."""
        return sentence_overlap(self.ca.terms, self.best)

    @cached_property
    def numbers(self) -> list[NumberFinding]:
        """One finding per claim number, in claim order."""
        near = quantity_neighbours(self.ca, self.t.numbers.neighbours) if self.ca.text == self.text else None
        return [
            find_number(
                q, self.text, self.ca, self.sents, self.t, near[i] if near is not None else None, self.alignments
            )
            for i, q in enumerate(self.ca.quants)
        ]

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
        pool = self.top[: t.alignment.cover_pool] + self.number_support
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

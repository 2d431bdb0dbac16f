"""Text helpers for the heuristic judge: tokens, light stemming, synonym keys, numbers, dates, quotes, cues.

Everything here is pure and deterministic; the word lists live in ``lexicon``.

- ``tokenize(text)`` -> ``Tok`` s; ``key(word)`` -> comparison key (stem, then synonym group);
  ``antonyms(key)`` -> opposite keys
- ``quantities(text)`` -> ``Quantity`` s: numbers with units (converted to a base unit per
  dimension), spelled-out numbers ("two hours forty minutes"), ranges ("8 to 10 minutes",
  "between 2010 and 2015"), approximations ("about three hours"), bounds ("more than 20"), years and dates
- ``compare_quantity(claim_q, evidence_q)`` -> match | within | approx | conflict | other
- ``negation_cues`` / ``hedge_cues`` / ``intensifier_cues`` / ``speakers`` / ``quotes`` cue detectors
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field

from evaluator_worker.judges.lexicon import (
    ANTONYM_PAIRS,
    HEDGE_WORDS,
    INTENSIFIER,
    IRREGULAR,
    LIGHT_WORDS,
    NEGATION_WORDS,
    STOPWORDS,
    SYNONYM_GROUPS,
)

__all__ = [
    "HEDGE_WORDS",
    "LIGHT_WORDS",
    "NEGATION_WORDS",
    "STOPWORDS",
    "NUM_WORDS",
    "UNITS",
    "TITLES",
    "Tok",
    "Quantity",
    "Quote",
    "tokenize",
    "stem",
    "key",
    "antonyms",
    "quantities",
    "compare_quantity",
    "close",
    "days_between",
    "negation_cues",
    "hedge_cues",
    "intensifier_cues",
    "quotes",
    "speakers",
    "name_keys",
]

# --------------------------------------------------------------------------- tokens

#: a redaction placeholder (``[PERSON_2]``, ``[PHONE_1]``: collector.redaction numbers them per record) is one
#: name token, ``PERSON_2``: two different placeholders are two different names, and the index is not a number
#: (failure type: after masking, a swapped name read as the number 2 that the context also has)
_PLACEHOLDER = r"(?<=\[)[A-Z]+(?:_[A-Z]+)*_[0-9]+(?=\])"
_TOKEN = re.compile(
    _PLACEHOLDER + r"|[0-9]+(?:,[0-9]{3})*(?:\.[0-9]+)?|[^\W\d_]+(?:['’\-][^\W\d_]+)*|[$€£¥%°º~]|[^\w\s]", re.UNICODE
)


_DIGITS = frozenset("0123456789")
_DIGITS_OR_EMPTY = _DIGITS  # '' in a frozenset is False, matching str.isdigit('') semantics


def _isnum(s: str) -> bool:
    """ASCII digits only (str.isdigit accepts '²' and other characters int() rejects)."""
    return bool(s) and all(ch in _DIGITS for ch in s)


@dataclass(frozen=True)
class Tok:
    text: str
    low: str
    start: int
    end: int


def tokenize(text: str) -> list[Tok]:
    """Word, number and symbol tokens with their character offsets."""
    return [
        Tok(m.group(0), m.group(0).lower().replace("’", "'"), m.start(), m.end()) for m in _TOKEN.finditer(text or "")
    ]


def _strip_suffix(w: str) -> str:
    if len(w) <= 3:
        return w
    for suf, rep in (
        ("ies", "y"),
        ("ied", "y"),
        ("sses", "ss"),
        ("ness", ""),
        ("ment", ""),
        ("ings", ""),
        ("ing", ""),
        ("edly", ""),
        ("ly", ""),
        ("ed", ""),
        ("es", "e"),
        ("s", ""),
    ):
        if w.endswith(suf) and len(w) - len(suf) >= 3:
            if suf == "s" and (w.endswith("ss") or w.endswith("us") or w.endswith("is")):
                return w
            if suf == "ly" and not (len(w) > 5):
                return w
            w = w[: -len(suf)] + rep
            break
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeiouls":
        w = w[:-1]  # stopp -> stop, runn -> run
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]  # bake/baked/baking -> bak
    return w


def stem(word: str) -> str:
    """Light stemmer: irregular forms, then suffix stripping (consistent, not linguistic)."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    w = IRREGULAR.get(w, w)
    return _strip_suffix(w)


def _synonym_keys() -> dict[str, str]:
    """Stem -> key of its synonym group (the group's first word); one group per stem (tested)."""
    out: dict[str, str] = {}
    for group in SYNONYM_GROUPS:
        head = _strip_suffix(group[0])
        for w in group:
            out.setdefault(stem(w), head)
    return out


_SYN = _synonym_keys()


def _antonym_keys() -> dict[str, frozenset[str]]:
    """Key -> keys of its opposites (pairs resolved through the synonym groups, both directions)."""
    out: dict[str, set[str]] = {}
    for a, b in ANTONYM_PAIRS:
        ka, kb = key(a), key(b)
        out.setdefault(ka, set()).add(kb)
        out.setdefault(kb, set()).add(ka)
    return {k: frozenset(v) for k, v in out.items()}


def key(word: str) -> str:
    """Comparison key: stem mapped to its synonym group's head."""
    s = stem(word)
    return _SYN.get(s, s)


_ANT = _antonym_keys()


def antonyms(k: str) -> frozenset[str]:
    """Keys that mean the opposite of key ``k``."""
    return _ANT.get(k, frozenset())


# --------------------------------------------------------------------------- numbers

NUM_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fourty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "dozen": 12,
}
MULTIPLIERS = {"hundred": 100, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9, "mn": 1e6}

#: unit token -> (dimension, factor to base, display)
UNITS: dict[str, tuple[str, float, str]] = {}


def _u(dim: str, factor: float, *names: str) -> None:
    for n in names:
        UNITS[n] = (dim, factor, names[0])


_u("time", 1, "seconds", "second", "secs", "sec", "s")
_u("time", 60, "minutes", "minute", "mins", "min")
_u("time", 3600, "hours", "hour", "hrs", "hr", "h")
_u("time", 86400, "days", "day")
_u("time", 604800, "weeks", "week", "wks")
_u("time", 2629800, "months", "month")
_u("time", 31557600, "years", "year", "yrs", "yr")
_u("time", 315576000, "decades", "decade")
_u("time", 3155760000, "centuries", "century")
_u("temp_f", 1, "F", "f", "fahrenheit")
_u("temp_c", 1, "C", "c", "celsius", "centigrade")
_u("length", 0.001, "mm", "millimeters", "millimetres", "millimeter", "millimetre")
_u("length", 0.01, "cm", "centimeters", "centimetres", "centimeter", "centimetre")
_u("length", 1, "m", "meters", "metres", "meter", "metre")
_u("length", 1000, "km", "kilometers", "kilometres", "kilometer", "kilometre", "kms")
_u("length", 0.0254, "inches", "inch")
_u("length", 0.3048, "feet", "foot", "ft")
_u("length", 0.9144, "yards", "yard", "yd")
_u("length", 1609.344, "miles", "mile", "mi")
_u("mass", 0.001, "mg", "milligrams", "milligram")
_u("mass", 1, "g", "grams", "gram", "gr")
_u("mass", 1000, "kg", "kilograms", "kilogram", "kilos", "kilo")
_u("mass", 453.592, "lb", "lbs", "pounds", "pound")
_u("mass", 28.3495, "oz", "ounces", "ounce")
_u("mass", 1e6, "tons", "ton", "tonnes", "tonne")
_u("volume", 1, "ml", "milliliters", "millilitres", "milliliter", "millilitre")
_u("volume", 1000, "l", "liters", "litres", "liter", "litre")
_u("volume", 236.6, "cups", "cup")
_u("volume", 14.79, "tbsp", "tablespoons", "tablespoon")
_u("volume", 4.93, "tsp", "teaspoons", "teaspoon")
_u("volume", 3785.4, "gallons", "gallon")
_u("percent", 1, "%", "percent", "pct")
_u("money_usd", 1, "dollars", "dollar", "usd")
_u("money_usd", 0.01, "cents", "cent")
_u("money_eur", 1, "euros", "euro", "eur")
_u("speed", 1, "mph")
_u("speed_k", 1, "kph", "km/h")
_u("energy", 1, "calories", "calorie", "kcal", "cal")
_u("data", 1, "mb", "megabytes")
_u("data", 1000, "gb", "gigabytes")
_u("data", 1e6, "tb", "terabytes")
_u("degrees", 1, "degrees", "degree")
_u("power", 1, "W", "watts", "watt")
_u("power", 1000, "kw", "kilowatts", "kilowatt")
_u("charge", 1, "mah")
_u("frequency", 1e9, "ghz")
_u("frequency", 1e6, "mhz")
_u("iu", 1, "iu")

CURRENCY_PREFIX = {"$": "money_usd", "€": "money_eur", "£": "money_gbp", "¥": "money_jpy"}
_APPROX_1 = {
    "about",
    "around",
    "approximately",
    "roughly",
    "nearly",
    "almost",
    "some",
    "circa",
    "ca",
    "~",
    "over",
    "under",
    "approx",
    "estimated",
    "upwards",
}
_APPROX_2 = {
    ("more", "than"),
    ("less", "than"),
    ("fewer", "than"),
    ("up", "to"),
    ("at", "least"),
    ("at", "most"),
    ("close", "to"),
    ("just", "over"),
    ("just", "under"),
    ("well", "over"),
    ("or", "so"),
    ("as", "many"),
    ("as", "much"),
}
_DURATION_INTRO = {
    "for",
    "in",
    "after",
    "within",
    "about",
    "around",
    "than",
    "over",
    "takes",
    "took",
    "take",
    "lasts",
    "lasted",
    "last",
    "nearly",
    "almost",
    "roughly",
    "under",
}
MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}


#: words that are durations in years ('the centennial of' = 100 years)
_ANNIVERSARY = {
    w: n * 31557600
    for w, n in (
        ("centennial", 100),
        ("centenary", 100),
        ("bicentennial", 200),
        ("bicentenary", 200),
        ("tercentenary", 300),
        ("sesquicentennial", 150),
        ("millennium", 1000),
        ("quincentenary", 500),
    )
}


@dataclass
class Quantity:
    """A number (or range, or date) found in text, in a comparable form."""

    lo: float
    hi: float
    dim: str  # time, length, temp_f, percent, money_usd, count:<key>, num, year, date
    text: str  # verbatim span
    approx: bool = False
    #: 'lower' ("more than 20", "at least 40", "50 and older"), 'upper' ("under 18", "up to 5"), or None
    bound: str | None = None
    date: tuple[int | None, int | None, int | None] | None = None  # (year, month, day)
    token_span: tuple[int, int] = (0, 0)
    #: factor of the unit it was written in (the last one of a compound duration); None for bare numbers
    unit: float | None = None
    #: written with a rounding word ("about", "roughly"): a rough bound is not a claim about the precise figure
    rough: bool = False

    @property
    def is_range(self) -> bool:
        return self.hi != self.lo


_FRACTIONS = {"½": 0.5, "¼": 0.25, "¾": 0.75, "⅓": 1 / 3, "⅔": 2 / 3}


def _num_at(toks: list[Tok], i: int) -> tuple[float, int] | None:
    """Parse a number starting at token i: digits (with multiplier) or spelled words. -> (value, next index)."""
    if i >= len(toks):
        return None
    t = toks[i]
    if t.low[0] in _DIGITS:
        try:
            v = float(t.low.replace(",", ""))
        except ValueError:
            return None
        j = i + 1
        if j < len(toks) and toks[j].low in MULTIPLIERS:
            v *= MULTIPLIERS[toks[j].low]
            j += 1
        elif j < len(toks) and toks[j].low in _FRACTIONS and toks[j].start == toks[j - 1].end:
            v += _FRACTIONS[toks[j].low]  # '59½'
            j += 1
        elif (
            j + 2 < len(toks) and toks[j].low == "and" and toks[j + 1].low in ("a", "one") and toks[j + 2].low == "half"
        ):
            v += 0.5  # 'N and a half'
            j += 3
        return v, j
    total, current, j, seen = 0.0, 0.0, i, False
    while j < len(toks):
        w = toks[j].low
        parts = w.split("-")
        if len(parts) == 2 and parts[0] in NUM_WORDS and parts[1] in UNITS and not seen:
            return None  # 'two-week': handled by quantities() as a number plus a unit

        if all(p in NUM_WORDS for p in parts):
            if w == "dozen":
                current = (current or 1) * 12
            else:
                current += sum(NUM_WORDS[p] for p in parts)
            seen = True
        elif w in MULTIPLIERS and seen:
            if w == "hundred":
                current *= 100
            else:
                total += current * MULTIPLIERS[w]
                current = 0
        elif w == "and" and seen and j + 1 < len(toks) and toks[j + 1].low in NUM_WORDS and current >= 100:
            pass
        else:
            break
        j += 1
    if not seen:
        return None
    return total + current, j


def _unit_at(toks: list[Tok], j: int, text_before_adjacent: bool) -> tuple[tuple[str, float, str] | None, int]:
    """Unit starting at token j -> ((dim, factor, display), next index)."""
    if j >= len(toks):
        return None, j
    w = toks[j]
    if w.low in ("°", "º"):
        if j + 1 < len(toks) and toks[j + 1].low in ("f", "c"):
            return UNITS[toks[j + 1].text.upper()] if toks[j + 1].text.upper() in UNITS else None, j + 2
        return UNITS["degrees"], j + 1
    if w.low in ("degrees", "degree"):
        if j + 1 < len(toks) and toks[j + 1].low in ("f", "c", "fahrenheit", "celsius", "centigrade"):
            return UNITS[toks[j + 1].low if len(toks[j + 1].low) > 1 else toks[j + 1].text.upper()], j + 2
        return UNITS["degrees"], j + 1
    if w.low == "per" and j + 1 < len(toks) and toks[j + 1].low == "cent":
        return UNITS["%"], j + 2
    if w.low == "percentage" and j + 1 < len(toks) and toks[j + 1].low in ("point", "points"):
        return UNITS["%"], j + 2
    # single letters only count as units when written in the unit's usual case / adjacent to the digits
    if len(w.low) == 1 and w.low not in ("%",):
        if w.text in ("F", "C", "W") or (text_before_adjacent and w.low in ("s", "h", "m", "g", "l")):
            return UNITS.get(w.text if w.text in ("F", "C", "W") else w.low), j + 1
        return None, j
    if w.low in UNITS:
        return UNITS[w.low], j + 1
    return None, j


def _approx_before(toks: list[Tok], i: int) -> bool:
    k = i - 1
    if k >= 0 and toks[k].low in CURRENCY_PREFIX:
        k -= 1
    if k >= 1 and toks[k].low in ("age", "aged"):
        k -= 1
    if k >= 0 and toks[k].low in _APPROX_1:
        return True
    if k >= 1 and (toks[k - 1].low, toks[k].low) in _APPROX_2:
        return True
    return False


_ROUGH = {"about", "around", "approximately", "roughly", "nearly", "almost", "some", "circa", "ca", "~", "approx"}
_LOWER_1 = {"over", "above", "exceeding", "upwards", "beyond"}
_UPPER_1 = {"under", "below", "within", "max", "maximum"}
_LOWER_2 = {
    ("more", "than"),
    ("at", "least"),
    ("greater", "than"),
    ("higher", "than"),
    ("longer", "than"),
    ("larger", "than"),
    ("older", "than"),
}
_UPPER_2 = {
    ("less", "than"),
    ("fewer", "than"),
    ("up", "to"),
    ("at", "most"),
    ("lower", "than"),
    ("shorter", "than"),
    ("smaller", "than"),
    ("younger", "than"),
    ("no", "later"),
    ("as", "late"),
}
_LOWER_AFTER = {
    ("or", "more"),
    ("and", "older"),
    ("or", "older"),
    ("and", "over"),
    ("or", "over"),
    ("and", "above"),
    ("or", "above"),
    ("and", "up"),
    ("or", "later"),
    ("and", "later"),
    ("or", "higher"),
    ("+",),
}
_UPPER_AFTER = {
    ("or", "less"),
    ("or", "fewer"),
    ("and", "under"),
    ("or", "under"),
    ("or", "younger"),
    ("and", "younger"),
    ("or", "below"),
    ("and", "below"),
    ("or", "earlier"),
    ("or", "lower"),
}


def _bound_at(toks: list[Tok], i: int, j: int) -> str | None:
    """Direction of a bound around the number spanning tokens [i, j): 'lower', 'upper' or None.

    Before: "more than", "over", "at least" (lower); "less than", "under", "up to", "no more than" (upper).
    After: "or more", "and older" (lower); "or less", "and under" (upper).
    """
    k = i - 1
    if k >= 0 and toks[k].low in CURRENCY_PREFIX:
        k -= 1
    while k >= 1 and toks[k].low in ("about", "around", "roughly", "approximately", "some", "age", "aged", "ages"):
        k -= 1
    # "a little over", "just under", "well over": the modifier does not change the direction
    w1 = toks[k].low if k >= 0 else ""
    w2 = (toks[k - 1].low, w1) if k >= 1 else ("", w1)
    w3 = toks[k - 2].low if k >= 2 else ""
    if w2 in _LOWER_2:
        return "upper" if w3 in ("no", "not") and w2 == ("more", "than") else "lower"
    if w2 in _UPPER_2:
        return "lower" if w3 in ("no", "not") and w2 in {("less", "than"), ("fewer", "than")} else "upper"
    if w1 in _LOWER_1:
        return "lower"
    if w1 in _UPPER_1:
        return "upper"
    a = tuple(t.low for t in toks[j : j + 2])
    if a[:1] == ("+",) or a in _LOWER_AFTER:
        return "lower"
    if a in _UPPER_AFTER:
        return "upper"
    return None


def _generic_unit(toks: list[Tok], j: int) -> str | None:
    for k in range(j, min(j + 2, len(toks))):
        w = toks[k].low
        if not w[0].isalpha():
            return None
        if w in STOPWORDS or w in NUM_WORDS or w in MULTIPLIERS:
            if k == j and w in ("of",):
                return None
            continue
        return key(w)
    return None


def _day_at(toks: list[Tok], i: int) -> tuple[int, int] | None:
    if i < len(toks) and _isnum(toks[i].low) and 1 <= int(toks[i].low) <= 31:
        j = i + 1
        if j < len(toks) and toks[j].low in ("st", "nd", "rd", "th") and toks[j].start == toks[i].end:
            j += 1
        return int(toks[i].low), j
    return None


def _year_at(toks: list[Tok], i: int) -> tuple[int, int] | None:
    j = i
    if j < len(toks) and toks[j].low == ",":
        j += 1
    if j < len(toks) and _isnum(toks[j].low) and len(toks[j].low) == 4 and 1000 <= int(toks[j].low) <= 2100:
        return int(toks[j].low), j + 1
    return None


def _date_at(toks: list[Tok], i: int) -> tuple[tuple[int | None, int | None, int | None], int] | None:
    """Month-name dates: 'March 5, 2020', '5 March 2020', 'March 2020', 'the 5th of March'."""
    t = toks[i]
    if t.low in MONTHS and (t.text[0].isupper() or t.low != "may"):
        if t.low == "may" and not (i + 1 < len(toks) and toks[i + 1].low[:1] in _DIGITS_OR_EMPTY):
            return None
        m = MONTHS[t.low]
        j = i + 1
        if j < len(toks) and toks[j].low == ".":
            j += 1
        d = _day_at(toks, j)
        if d and not (len(toks[j].low) == 4):
            y = _year_at(toks, d[1])
            return ((y[0] if y else None), m, d[0]), (y[1] if y else d[1])
        y = _year_at(toks, j)
        if y:
            return (y[0], m, None), y[1]
        if (
            t.low
            in (
                "march",
                "june",
                "july",
                "august",
                "september",
                "october",
                "november",
                "december",
                "january",
                "february",
                "april",
            )
            and t.text[0].isupper()
        ):
            return (None, m, None), j
        return None
    d = _day_at(toks, i)
    if d:
        j = d[1]
        if j < len(toks) and toks[j].low == "of":
            j += 1
        if j < len(toks) and toks[j].low in MONTHS and toks[j].text[0].isupper():
            m = MONTHS[toks[j].low]
            y = _year_at(toks, j + 1)
            return ((y[0] if y else None), m, d[0]), (y[1] if y else j + 1)
    return None


def _time_merge(q: Quantity, toks: list[Tok], j: int, text: str) -> tuple[Quantity, int]:
    """'two hours forty minutes', '2 hours and 40 minutes', 'an hour and a half'."""
    while j < len(toks):
        k = j
        if toks[k].low in ("and", ","):
            k += 1
        if k + 1 < len(toks) and toks[k].low in ("a", "an") and toks[k + 1].low == "half":
            unit_sec = q.lo and q.unit
            if unit_sec:
                q.lo += unit_sec * 0.5
                q.hi += unit_sec * 0.5
                q.text = text[toks[q.token_span[0]].start : toks[k + 1].end]
                j = k + 2
                continue
            break
        n = _num_at(toks, k)
        if not n:
            break
        u, nxt = _unit_at(toks, n[1], False)
        if not u or u[0] != "time":
            break
        q.lo += n[0] * u[1]
        q.hi += n[0] * u[1]
        q.text = text[toks[q.token_span[0]].start : toks[nxt - 1].end]
        q.token_span = (q.token_span[0], nxt)
        q.unit = u[1]
        j = nxt
    return q, j


def quantities(text: str) -> list[Quantity]:
    """All numbers/ranges/dates/years in ``text`` with units normalised to a base per dimension."""
    toks = tokenize(text)
    out: list[Quantity] = []
    i = 0
    while i < len(toks):
        t = toks[i]
        dt = _date_at(toks, i)
        if dt:
            (y, m, d), j = dt
            out.append(
                Quantity(y or 0, y or 0, "date", text[t.start : toks[j - 1].end], date=(y, m, d), token_span=(i, j))
            )
            i = j
            continue
        currency = None
        start_i = i
        if t.low in CURRENCY_PREFIX and i + 1 < len(toks) and toks[i + 1].low[:1] in _DIGITS_OR_EMPTY:
            currency = CURRENCY_PREFIX[t.low]
            i += 1
            t = toks[i]
        # "an hour", "a minute": an implicit one before a time unit
        if (
            t.low in ("a", "an")
            and i >= 1
            and toks[i - 1].low in _DURATION_INTRO
            and i + 1 < len(toks)
            and UNITS.get(toks[i + 1].low, ("",))[0] == "time"
            and toks[i + 1].low not in ("s", "h", "m", "min")
        ):
            u = UNITS[toks[i + 1].low]
            q = Quantity(u[1], u[1], "time", text[t.start : toks[i + 1].end], token_span=(i, i + 2), unit=u[1])
            q, j = _time_merge(q, toks, i + 2, text)
            q.approx = _approx_before(toks, i)
            q.bound = _bound_at(toks, i, j)
            out.append(q)
            i = j
            continue
        clock = _clock_at(toks, i, text)
        if clock:
            out.append(clock)
            i = clock.token_span[1]
            continue
        hy = t.low.split("-")
        if (
            len(hy) == 2
            and hy[0] in NUM_WORDS
            and hy[1] in UNITS
            and UNITS[hy[1]][0] in ("time", "length", "mass", "volume")
        ):
            dim, factor, _ = UNITS[hy[1]]  # 'a two-week appointment', 'a three-day pass'
            out.append(
                Quantity(
                    NUM_WORDS[hy[0]] * factor,
                    NUM_WORDS[hy[0]] * factor,
                    dim,
                    t.text,
                    token_span=(i, i + 1),
                    unit=factor,
                )
            )
            i += 1
            continue
        if t.low in _ANNIVERSARY:
            out.append(
                Quantity(
                    _ANNIVERSARY[t.low],
                    _ANNIVERSARY[t.low],
                    "time",
                    t.text,
                    token_span=(i, i + 1),
                    unit=UNITS["years"][1],
                )
            )
            i += 1
            continue
        n = _num_at(toks, i)
        if not n:
            i += 1
            continue
        value, j = n
        if t.low == "one" and j < len(toks) and toks[j].low in ("of", "another", "day", "time"):
            i = j
            continue
        adjacent = j < len(toks) and toks[j].start == toks[j - 1].end
        q = _make_quantity(text, toks, start_i, i, j, value, currency, adjacent)
        j = q.token_span[1]
        # ranges: "8 to 10 minutes", "8-10", "between 2010 and 2015", "from 3 to 5"
        between = (
            i >= 1
            and toks[i - 1].low in ("between", "from")
            or (currency and i >= 2 and toks[i - 2].low in ("between", "from"))
        )
        if j + 1 < len(toks) and (
            toks[j].low in ("to", "-", "–", "—", "or", "through") or (between and toks[j].low == "and")
        ):
            k = j + 1
            cur2 = currency
            if k < len(toks) and toks[k].low in CURRENCY_PREFIX:
                cur2 = CURRENCY_PREFIX[toks[k].low]
                k += 1
            n2 = _num_at(toks, k)
            if n2:
                adj2 = n2[1] < len(toks) and toks[n2[1]].start == toks[n2[1] - 1].end
                q2 = _make_quantity(text, toks, k, k, n2[1], n2[0], cur2, adj2)
                merged = _merge_range(q, q2, text, toks, start_i)
                if merged is not None:
                    q = merged
                    j = q.token_span[1]
        if q.dim == "time" and not q.is_range:
            q, j = _time_merge(q, toks, j, text)
        q.approx = _approx_before(toks, start_i) or (
            j + 1 < len(toks) and (toks[j].low, toks[j + 1].low) == ("or", "so")
        )
        if not q.is_range:
            q.bound = _bound_at(toks, start_i, j)
            k = start_i - 1 - (1 if start_i >= 1 and toks[start_i - 1].low in CURRENCY_PREFIX else 0)
            q.rough = k >= 0 and toks[k].low in _ROUGH
        out.append(q)
        i = max(j, i + 1)
    return out


def _clock_at(toks: list[Tok], i: int, text: str) -> Quantity | None:
    """Times of day: '9:45', '9:30 a.m.', '21:00' -> minutes after midnight (dim 'clock')."""
    if not (
        i + 2 < len(toks)
        and _isnum(toks[i].low)
        and toks[i + 1].low == ":"
        and _isnum(toks[i + 2].low)
        and toks[i + 1].start == toks[i].end
        and len(toks[i + 2].low) == 2
    ):
        return None
    h, m = int(toks[i].low), int(toks[i + 2].low)
    if h > 24 or m > 59:
        return None
    j = i + 3
    rest = text[toks[i + 2].end : toks[i + 2].end + 6].lower().replace(" ", "")
    after = text[toks[i + 2].end : toks[i + 2].end + 24].lower()
    if (
        rest.startswith(("p.m", "pm")) or re.match(r"\s*(?:in the (?:evening|afternoon)|at night|tonight)", after)
    ) and h < 12:
        h += 12
    while j < len(toks) and toks[j].low in ("a", "p", "m", ".", "am", "pm") and toks[j].start - toks[j - 1].end <= 1:
        j += 1
    return Quantity(h * 60 + m, h * 60 + m, "clock", text[toks[i].start : toks[j - 1].end], token_span=(i, j))


def _merge_range(q: Quantity, q2: Quantity, text: str, toks: list[Tok], start_i: int) -> Quantity | None:
    """Join 'X to Y unit' into one range quantity; the first end borrows the second's unit."""
    if q.dim == q2.dim:
        lo, hi = q.lo, q2.hi
    elif q.dim == "num" and q2.dim != "date":
        factor = _unit_of(q2) if q2.dim not in ("year",) and not q2.dim.startswith("count") else 1.0
        lo = q.lo * factor
        if q2.dim == "temp_f" and re.search(r"\b(?:C|celsius|centigrade)\b", q2.text, re.I):
            lo = q.lo * 9 / 5 + 32
        hi = q2.hi
    else:
        return None
    if q.dim == "num" and q2.dim == "year":
        return None
    return Quantity(
        min(lo, hi),
        max(lo, hi),
        q2.dim,
        text[toks[start_i].start : toks[q2.token_span[1] - 1].end],
        token_span=(start_i, q2.token_span[1]),
        unit=_unit_of(q2),
    )


def _make_quantity(
    text: str, toks: list[Tok], start_i: int, i: int, j: int, value: float, currency: str | None, adjacent: bool
) -> Quantity:
    """Attach a unit (or year/count/num dimension) to a parsed number ending at token j."""
    span_start = toks[start_i].start
    if currency:
        mult_j = j
        return Quantity(value, value, currency, text[span_start : toks[mult_j - 1].end], token_span=(start_i, mult_j))
    raw = toks[i].low
    # decades: 1990s
    if adjacent and toks[j].low == "s" and _isnum(raw) and len(raw) == 4:
        v = int(raw)
        return Quantity(v, v + 9, "year", text[span_start : toks[j].end], token_span=(start_i, j + 1))
    # ages: '16-year-old', '52 years old', 'aged 50'
    if j + 1 < len(toks) and toks[j].low == "-" and toks[j + 1].low in ("year-old", "year-olds"):
        return Quantity(value, value, "age", text[span_start : toks[j + 1].end], token_span=(start_i, j + 2))
    if j + 1 < len(toks) and toks[j].low in ("years", "year") and toks[j + 1].low == "old":
        return Quantity(value, value, "age", text[span_start : toks[j + 1].end], token_span=(start_i, j + 2))
    if _age_after(toks, start_i):
        return Quantity(value, value, "age", text[span_start : toks[j - 1].end], token_span=(start_i, j))
    u, k = _unit_at(toks, j, adjacent)
    if not u and j + 1 < len(toks) and toks[j].low == "-" and toks[j].start == toks[j - 1].end:
        u, k = _unit_at(toks, j + 1, False)
        if u and u[0] == "percent":
            u = None
    if u:
        dim, factor, _ = u
        span = text[span_start : toks[k - 1].end]
        if dim == "temp_c":
            return Quantity(
                value * 9 / 5 + 32, value * 9 / 5 + 32, "temp_f", span, token_span=(start_i, k), unit=factor
            )
        return Quantity(value * factor, value * factor, dim, span, token_span=(start_i, k), unit=factor)
    if _isnum(raw) and len(raw) == 4 and 1000 <= value <= 2100 and j - i == 1:
        return Quantity(value, value, "year", text[span_start : toks[j - 1].end], token_span=(start_i, j))
    g = _generic_unit(toks, j)
    if g:
        # include the counted noun in the span for readable reasons
        end = j
        while end < len(toks) and end < j + 2 and key(toks[end].low) != g:
            end += 1
        end = min(end + 1, len(toks))
        return Quantity(value, value, "count:" + g, text[span_start : toks[end - 1].end], token_span=(start_i, j))
    return Quantity(value, value, "num", text[span_start : toks[j - 1].end], token_span=(start_i, j))


def _age_after(toks: list[Tok], i: int) -> bool:
    """The number at token i is an age ('aged 50', 'age 65', 'ages 6 to 11')."""
    return i >= 1 and toks[i - 1].low in ("aged", "age", "ages")


def close(a: float, b: float, rel: float = 1e-3) -> bool:
    """``a`` and ``b`` equal within relative tolerance ``rel``."""
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-9)


def _decimals(text: str) -> int:
    m = re.search(r"\d+\.(\d+)", text)
    return len(m.group(1)) if m else 0


def compare_quantity(c: Quantity, e: Quantity) -> str:
    """How claim quantity ``c`` relates to evidence quantity ``e`` of the same dimension.

    match: same value/range (or the claim is a less precise date that agrees)
    within: the claim value lies inside the evidence range
    approx: the claim approximates/rounds/widens the evidence value (specificity loss)
    conflict: different values
    other: not comparable
    """
    if c.dim != e.dim and "age" in (c.dim, e.dim):
        other = e if c.dim == "age" else c
        if other.dim == "age" or (other.bound and (other.dim == "num" or other.dim.startswith("count:"))):
            c = Quantity(c.lo, c.hi, "age", c.text, c.approx, c.bound)
            e = Quantity(e.lo, e.hi, "age", e.text, e.approx, e.bound)
    if c.dim == e.dim and c.dim not in ("date", "year") and (c.bound or e.bound):
        r = _compare_bounds(c, e)
        if r:
            return r
    if c.dim != e.dim:
        if {c.dim, e.dim} == {"year", "date"}:
            cy = c.date[0] if c.date else int(c.lo)
            ey = e.date[0] if e.date else int(e.lo)
            if cy is None or ey is None:
                return "other"
            if c.dim == "year" and c.is_range:
                return "match" if c.lo <= ey <= c.hi else "conflict"
            if cy != ey:
                return "conflict"
            return "match" if c.dim == "year" else "approx"  # claim adds month/day the evidence lacks
        return "other"
    if c.dim == "date":
        cy, cm, cd = c.date or (None, None, None)
        ey, em, ed = e.date or (None, None, None)
        for a, b in ((cy, ey), (cm, em), (cd, ed)):
            if a is not None and b is not None and a != b:
                return "conflict"
        for a, b in ((cy, ey), (cm, em), (cd, ed)):
            if a is not None and b is None:
                return "approx"
        return "match"
    if (
        e.approx
        and not e.bound
        and not c.approx
        and not c.bound
        and not c.is_range
        and not e.is_range
        and close(c.lo, e.lo, 0.1)
    ):
        return "approx"  # false precision: an approximate context figure stated exactly
    if close(c.lo, e.lo) and close(c.hi, e.hi):
        return "match"
    if not c.is_range and e.is_range and e.lo - 1e-9 <= c.lo <= e.hi + 1e-9:
        return "within"
    if c.is_range and not e.is_range and c.lo <= e.lo <= c.hi:
        return "approx"
    if c.is_range and e.is_range and c.lo <= e.hi and e.lo <= c.hi:
        return "approx"
    if not c.is_range and not e.is_range:
        if c.approx and close(c.lo, e.lo, 0.2):
            return "approx"
        d = _decimals(c.text)
        if round(e.lo / _unit_of(c), d) == round(c.lo / _unit_of(c), d) and _decimals(e.text) > d:
            return "approx"
    if c.approx and e.is_range and close(c.lo, (e.lo + e.hi) / 2, 0.25):
        return "approx"
    return "conflict"


def _compare_bounds(c: Quantity, e: Quantity) -> str | None:
    """Bounds: a claim bound the evidence satisfies is entailed ('22.5 points' -> 'more than 20 points');
    an exact age inside an eligibility bound is entailed ('under N' -> an age below N); an exact count
    inside a bound is false precision ('more than N' -> a specific count above N)."""
    eps = 1e-9
    if not c.approx and not c.is_range and not e.is_range and close(c.lo, e.lo) and (not c.bound or c.bound == e.bound):
        return "match"  # the stated figure itself: 'within N days' -> 'N days after'
    if c.bound and not c.is_range:
        if c.rough and not close(c.lo, e.lo) and close(c.lo, e.lo, 0.2):
            return "approx"  # a rough bound near the context's precise one: less specific, not different
        if e.bound and e.bound != c.bound:
            return "approx"
        if e.bound == c.bound and not e.is_range and not close(c.lo, e.lo):
            # two limits of the same kind with different values are different rules ('use within 6 days'
            # vs 'within 6 hours', 'under 12s travel free' vs 'under 16s'), not one entailing the other
            return "approx" if c.rough and close(c.lo, e.lo, 0.2) else "conflict"
        if c.bound == "lower":
            if e.lo >= c.lo - eps:
                return "within"
            return "conflict" if not e.bound and e.hi < c.lo and not e.approx else "approx"
        if e.hi <= c.lo + eps:
            return "within"
        return "conflict" if not e.bound and e.lo > c.lo and not e.approx else "approx"
    if e.bound and not e.is_range and not c.bound and not c.approx:
        inside = c.lo >= e.lo - eps if e.bound == "lower" else c.hi <= e.lo + eps
        if c.dim == "age":
            return "within" if inside else "conflict"
        return "approx" if inside else "conflict"
    return None


def days_between(a: Quantity, b: Quantity) -> float | None:
    """Days from date/year ``a`` to date/year ``b`` (a missing year is taken from the other date;
    a year alone counts as its 1 July). None when either has no year at all."""
    da = a.date if a.dim == "date" and a.date else (int(a.lo), None, None)
    db = b.date if b.dim == "date" and b.date else (int(b.lo), None, None)
    ya, yb = da[0] or db[0], db[0] or da[0]
    if not ya or not yb:
        return None
    try:
        x = _dt.date(ya, da[1] or 7, da[2] or 1)
        y = _dt.date(yb, db[1] or 7, db[2] or 1)
    except ValueError:
        return None
    return float((y - x).days)


def _unit_of(q: Quantity) -> float:
    return q.unit or 1.0


# --------------------------------------------------------------------------- cues

_NEG_IGNORE = re.compile(
    r"\bnot\s+only\b|\bno\s+doubt\b|\bnot\s+just\b|\bno\.\s*\d|\bnothing\s+but\b|\bno\s+sooner\b", re.I
)
_NEG = re.compile(
    r"\b(?:not|never|no|none|nobody|nothing|neither|nor|without|cannot|no\s+longer|fail(?:s|ed)?\s+to|lack(?:s|ed)?)\b|n['’]t\b",
    re.I,
)
_HEDGE = re.compile(
    r"\b(?:may|might|could|possibly|perhaps|probably|likely|unlikely|potentially|reportedly|allegedly|presumably|"
    r"apparently|maybe|arguably|suggests?|suggested|seems?\s+to|seemed\s+to|appears?\s+to|appeared\s+to|"
    r"(?:is|are|was|were)\s+(?:thought|believed|considered|said|reported|suspected|expected)\s+to|tends?\s+to|"
    r"it\s+is\s+possible|in\s+some\s+cases|can\s+sometimes)\b",
    re.I,
)


def negation_cues(text: str) -> list[str]:
    """Negation cue strings in ``text`` ("not", "never", "n't", ...), ignoring "not only", "no doubt"."""
    t = _NEG_IGNORE.sub(" ", text)
    return [m.group(0).lower() for m in _NEG.finditer(t)]


def intensifier_cues(text: str) -> list[str]:
    """Universal/exactness markers in ``text`` ('exactly', 'always', 'no exceptions'), lower-cased."""
    return [m.group(0).lower() for m in INTENSIFIER.finditer(text or "")]


def hedge_cues(text: str) -> list[str]:
    """Hedge cue strings: "may", "might", "is thought to", ...; the month 'May' is ignored."""
    out = []
    for m in _HEDGE.finditer(text):
        if m.group(0) == "May":
            continue
        out.append(m.group(0).lower())
    return out


# --------------------------------------------------------------------------- speakers and quotes

TITLES = frozenset(
    """chair chairman chairwoman chairperson president vice secretary treasury minister prime sen senator rep
    representative gov governor mayor judge justice dr mr mrs ms mx prof professor sir dame lord lady ceo cfo cto
    coo founder director general gen col captain capt chief officer commissioner ambassador spokesperson
    spokesman spokeswoman federal reserve fed state the king queen prince princess pope bishop rev saint st
    economist analyst coach manager""".split()
)
_NAME = r"((?:[A-Z][\w.'’\-]*\s+){0,4}[A-Z][\w.'’\-]*)"
_SAY = r"(?:said|says|say|cautioned|acknowledged|acknowledges|stated|states|added|adds|told|tells|wrote|writes|explained|explains|announced|announces|declared|declares|noted|notes|claimed|claims|argued|argues|warned|warns|insisted|insists|remarked|replied|called|calls|described|describes|promised|promises|pledged|acknowledged|admitted|cautioned)"
_QUOTE = re.compile(r"[\"“]([^\"”]{3,})[\"”]|(?<![\w'’])['‘]([^'‘’]{3,}?)['’](?![\w'’])")
_AFTER_SPEAKER = [
    re.compile(r"^[\s,.]*" + _SAY + r"\s+" + _NAME),
    re.compile(r"^[\s,.]*" + _NAME + r"\s+" + _SAY + r"\b"),
]
#: between a name and its verb: a role noun ('<Org> officials said') or an apposition ('<Name>, <age>, said')
_GAP = r"(?:\s+(?:leaders?|officials?|spokes(?:person|man|woman)|representatives?|executives?|researchers?|officers?))?(?:,\s*[^,\"“”]{1,60},)?"
_BEFORE_SPEAKER = re.compile(_NAME + _GAP + r"\s+" + _SAY + r"(?:\s+[\w'’]+){0,4}\s*[:,]?\s*(?:that\s+)?$")
_ATTRIB = [
    re.compile(_NAME + _GAP + r"\s+" + _SAY + r"\b"),
    re.compile(r"\b" + _SAY + r"\s+" + _NAME),
    re.compile(r"\b[Aa]ccording\s+to\s+" + _NAME),
]


def name_keys(name: str) -> set[str]:
    """Lower-case name tokens without titles: 'Treasury Secretary Yellen' -> {'yellen'}."""
    toks = [w.strip(".,'’").lower() for w in name.split()]
    return {w for w in toks if w and w not in TITLES and w not in STOPWORDS}


@dataclass
class Quote:
    text: str
    speaker: set[str] = field(default_factory=set)
    speaker_text: str = ""


def quotes(text: str) -> list[Quote]:
    """Quoted passages with the speaker named right before or after them (if any)."""
    out = []
    for m in _QUOTE.finditer(text):
        spk, spk_text = set(), ""
        after = text[m.end() : m.end() + 80]
        for pat in _AFTER_SPEAKER:
            a = pat.match(after)
            if a and name_keys(a.group(1)):
                spk, spk_text = name_keys(a.group(1)), a.group(1)
                break
        if not spk:
            b = _BEFORE_SPEAKER.search(text[max(0, m.start() - 80) : m.start()])
            if b and name_keys(b.group(1)):
                spk, spk_text = name_keys(b.group(1)), b.group(1)
        out.append(Quote(m.group(1) or m.group(2), spk, spk_text.strip().rstrip(".,")))
    return out


def speakers(text: str) -> tuple[set[str], str]:
    """Names a statement is attributed to ("X said", "said X", "according to X") -> (keys, display)."""
    for pat in _ATTRIB:
        for m in pat.finditer(text):
            k = name_keys(m.group(1))
            if k:
                return k, m.group(1).strip().rstrip(".,")
    return set(), ""

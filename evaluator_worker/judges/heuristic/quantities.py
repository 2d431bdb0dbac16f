"""Quantities for the heuristic judge: numbers, units, ranges, bounds, years, dates and clock times.

- ``quantities(text)`` -> ``Quantity`` s: numbers with units (converted to a base unit per
  dimension), spelled-out numbers ("two hours forty minutes"), ranges ("8 to 10 minutes",
  "between 2010 and 2015"), approximations ("about three hours"), bounds ("more than 20"), years and dates
- ``compare_quantity(claim_q, evidence_q)`` -> match | within | approx | conflict | other
- ``close``, ``days_between``: numeric helpers
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from evaluator_worker.judges.heuristic.lexicon import (
    AGE_BEFORE,
    ANNIVERSARY,
    APPROX_BEFORE,
    APPROX_BEFORE_2,
    BOUND_SKIP,
    CURRENCY_PREFIX,
    DURATION_INTRO,
    FRACTIONS,
    LOWER_AFTER,
    LOWER_BEFORE,
    LOWER_BEFORE_2,
    MONTH_ALONE,
    MONTHS,
    MULTIPLIERS,
    NUM_WORDS,
    ROUGH,
    STOPWORDS,
    UNITS,
    UPPER_AFTER,
    UPPER_BEFORE,
    UPPER_BEFORE_2,
)
from evaluator_worker.judges.heuristic.text import DIGITS, DIGITS_OR_EMPTY, Tok, isnum, key, tokenize

__all__ = ["NUM_WORDS", "UNITS", "Quantity", "quantities", "compare_quantity", "close", "days_between"]

# --------------------------------------------------------------------------- numbers


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


def _num_at(toks: list[Tok], i: int) -> tuple[float, int] | None:
    """Parse a number starting at token i: digits (with multiplier) or spelled words. -> (value, next index)."""
    if i >= len(toks):
        return None
    t = toks[i]
    if t.low[0] in DIGITS:
        try:
            v = float(t.low.replace(",", ""))
        except ValueError:
            return None
        j = i + 1
        if j < len(toks) and toks[j].low in MULTIPLIERS:
            v *= MULTIPLIERS[toks[j].low]
            j += 1
        elif j < len(toks) and toks[j].low in FRACTIONS and toks[j].start == toks[j - 1].end:
            v += FRACTIONS[toks[j].low]  # '59½'
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
    if k >= 0 and toks[k].low in APPROX_BEFORE:
        return True
    if k >= 1 and (toks[k - 1].low, toks[k].low) in APPROX_BEFORE_2:
        return True
    return False


def _bound_at(toks: list[Tok], i: int, j: int) -> str | None:
    """Direction of a bound around the number spanning tokens [i, j): 'lower', 'upper' or None.

    Before: "more than", "over", "at least" (lower); "less than", "under", "up to", "no more than" (upper).
    After: "or more", "and older" (lower); "or less", "and under" (upper).
    """
    k = i - 1
    if k >= 0 and toks[k].low in CURRENCY_PREFIX:
        k -= 1
    while k >= 1 and toks[k].low in BOUND_SKIP:
        k -= 1
    # "a little over", "just under", "well over": the modifier does not change the direction
    w1 = toks[k].low if k >= 0 else ""
    w2 = (toks[k - 1].low, w1) if k >= 1 else ("", w1)
    w3 = toks[k - 2].low if k >= 2 else ""
    if w2 in LOWER_BEFORE_2:
        return "upper" if w3 in ("no", "not") and w2 == ("more", "than") else "lower"
    if w2 in UPPER_BEFORE_2:
        return "lower" if w3 in ("no", "not") and w2 in {("less", "than"), ("fewer", "than")} else "upper"
    if w1 in LOWER_BEFORE:
        return "lower"
    if w1 in UPPER_BEFORE:
        return "upper"
    a = tuple(t.low for t in toks[j : j + 2])
    if a[:1] == ("+",) or a in LOWER_AFTER:
        return "lower"
    if a in UPPER_AFTER:
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
    if i < len(toks) and isnum(toks[i].low) and 1 <= int(toks[i].low) <= 31:
        j = i + 1
        if j < len(toks) and toks[j].low in ("st", "nd", "rd", "th") and toks[j].start == toks[i].end:
            j += 1
        return int(toks[i].low), j
    return None


def _year_at(toks: list[Tok], i: int) -> tuple[int, int] | None:
    j = i
    if j < len(toks) and toks[j].low == ",":
        j += 1
    if j < len(toks) and isnum(toks[j].low) and len(toks[j].low) == 4 and 1000 <= int(toks[j].low) <= 2100:
        return int(toks[j].low), j + 1
    return None


def _date_at(toks: list[Tok], i: int) -> tuple[tuple[int | None, int | None, int | None], int] | None:
    """Month-name dates: 'March 5, 2020', '5 March 2020', 'March 2020', 'the 5th of March'."""
    t = toks[i]
    if t.low in MONTHS and (t.text[0].isupper() or t.low != "may"):
        if t.low == "may" and not (i + 1 < len(toks) and toks[i + 1].low[:1] in DIGITS_OR_EMPTY):
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
        if t.low in MONTH_ALONE and t.text[0].isupper():
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
        if t.low in CURRENCY_PREFIX and i + 1 < len(toks) and toks[i + 1].low[:1] in DIGITS_OR_EMPTY:
            currency = CURRENCY_PREFIX[t.low]
            i += 1
            t = toks[i]
        # "an hour", "a minute": an implicit one before a time unit
        if (
            t.low in ("a", "an")
            and i >= 1
            and toks[i - 1].low in DURATION_INTRO
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
        if t.low in ANNIVERSARY:
            out.append(
                Quantity(
                    ANNIVERSARY[t.low],
                    ANNIVERSARY[t.low],
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
            q.rough = k >= 0 and toks[k].low in ROUGH
        out.append(q)
        i = max(j, i + 1)
    return out


def _clock_at(toks: list[Tok], i: int, text: str) -> Quantity | None:
    """Times of day: '9:45', '9:30 a.m.', '21:00' -> minutes after midnight (dim 'clock')."""
    if not (
        i + 2 < len(toks)
        and isnum(toks[i].low)
        and toks[i + 1].low == ":"
        and isnum(toks[i + 2].low)
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
    if adjacent and toks[j].low == "s" and isnum(raw) and len(raw) == 4:
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
    if isnum(raw) and len(raw) == 4 and 1000 <= value <= 2100 and j - i == 1:
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
    return i >= 1 and toks[i - 1].low in AGE_BEFORE


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

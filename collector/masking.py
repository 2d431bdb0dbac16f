"""What a redaction backend shares with the builtin rules: the record's placeholders (:class:`Masker`), the backend
protocol, and the phone rules' shared facts. A leaf module: :mod:`collector.redaction` and
:mod:`collector.redaction_presidio` both import it, and neither the other back."""

from __future__ import annotations

import re
from typing import Protocol, Sequence

__all__ = ["LENIENCIES", "NOT_PHONE_SHAPES", "Masker", "RecordDetector"]

#: shapes libphonenumber can accept as a phone number in some region that are facts, not phones. A match that
#: overlaps one of them is kept (failure type: a masked date, time, version, address or coordinate hides a
#: changed fact from the judge)
NOT_PHONE_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("iso_date", re.compile(r"(?<!\d)\d{4}-\d{1,2}-\d{1,2}(?!\d)")),
    ("day_month_year", re.compile(r"(?<!\d)\d{1,2}[./-]\d{1,2}[./-]\d{2,4}(?!\d)")),
    ("year_range", re.compile(r"(?<!\d)\d{4}(?:\s*[-/–]\s*\d{4})+(?!\d)")),
    ("clock_time", re.compile(r"(?<!\d)\d{1,2}:\d{2}(?::\d{2})?(?!\d)")),
    ("dotted_quad", re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])")),  # IPv4, four-part versions
    ("decimal_fraction", re.compile(r"(?<![\d.])-?\d{1,3}\.\d{3,}(?![\d.])")),  # coordinates, measurements
    # amounts grouped in thousands, "2 392 000 000" (a valid US number, 239-200-0000); a phone's last group has
    # 4 digits, so "+1 650 253 0000" is no match (nor is any part of it: no digit group may touch the match)
    ("grouped_thousands", re.compile(r"(?<!\d)(?<!\d[ ,.])\d{1,3}(?:[ ,\u00a0\u202f]\d{3}){2,}(?!\d)(?![ ,.]\d)")),
)
#: phonenumbers leniency names (settings) -> how strict a match must be
LENIENCIES = ("possible", "valid", "strict_grouping", "exact_grouping")


class Masker:
    """Numbered placeholders for one record: the same (normalised) value -> the same placeholder."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self._count: dict[str, int] = {}

    def mask(self, kind: str, key: str) -> str:
        """``[KIND_n]`` for ``key`` (a new n for a value not seen in this record)."""
        found = self._seen.get((kind, key))
        if found is None:
            n = self._count[kind] = self._count.get(kind, 0) + 1
            found = self._seen[(kind, key)] = f"[{kind}_{n}]"
        return found


class RecordDetector(Protocol):
    """A redaction backend that masks the strings of one record together (see :mod:`collector.redaction_presidio`)."""

    def mask(self, texts: Sequence[str], masker: Masker) -> list[str]:
        """``texts`` with what it finds replaced by ``masker``'s placeholders."""
        ...

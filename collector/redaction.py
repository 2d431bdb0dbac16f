"""Redaction applied to every record before it leaves the process, keeping the facts checkable.

Built from settings: e-mail addresses, phone numbers (Google's libphonenumber via the
``phonenumbers`` package: region-aware, only numbers that are valid phone numbers, so
amounts, dates, versions, coordinates and addresses stay), payment card numbers (13-19
digits that pass the Luhn check, so order numbers are left alone), custom regular
expressions, and optionally a callable ``str -> str`` for anything else. Applied to the
question, the answer, every context chunk (content, id, source) and string attributes.

Masks keep verification possible: within one record the same value always gets the same
numbered placeholder (``[PHONE_1]``, ``[EMAIL_2]``...), in the question, the answer and the
contexts alike. So an answer that gives a different phone number than the context still
differs after masking (``[PHONE_2]`` vs ``[PHONE_1]``), and the judge can still call it
CONTRADICTED instead of seeing two identical ``[PHONE]`` masks.

``redaction_backend=presidio`` adds a detector (:mod:`collector.redaction_presidio`: names, places and other
Presidio entities, offline) that runs over all the strings of a record first, sharing the record's
:class:`Masker`; the builtin rules that are on, the patterns and the callable then run as usual.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, Callable, Iterable, Iterator, Sequence

from collector.config import CollectorSettings
from collector.masking import LENIENCIES, NOT_PHONE_SHAPES, Masker, RecordDetector
from contract.errors import ConfigError
from contract.record import RagTrace

#: an e-mail address is a run of :data:`EMAIL_LOCAL_CHARS` followed by this (``@`` and the domain). The two are
#: matched apart so the work is linear: one regex ``[local]+@domain`` restarts at every character of a long run
#: that holds no ``@`` (a base64 or hex blob, a JWT) and is quadratic in it (60,000 characters: a 4 s stall with
#: the GIL held). Each ``@`` here is tried once, and the local part is found by walking back from it (each
#: character at most once). The addresses found are exactly the ones the single regex would find.
EMAIL_DOMAIN_RE = re.compile(r"@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
EMAIL_LOCAL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
CARD_RE = re.compile(r"(?<!\d)(?:\d[ \-]?){12,18}\d(?!\d)")

CUSTOM_MASK = "[REDACTED]"


def email_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of every e-mail address in ``text``, in order, without overlaps; linear time.

    Leftmost-first like ``re.finditer`` over ``[local]+@domain``: the local part is the run of local-part
    characters before the ``@``, back to the end of the previous address at most.
    """
    spans: list[tuple[int, int]] = []
    floor = 0
    for match in EMAIL_DOMAIN_RE.finditer(text):
        at = start = match.start()
        while start > floor and text[start - 1] in EMAIL_LOCAL_CHARS:
            start -= 1
        if start < at:  # an empty local part is no address (the domain is not searched again: it holds no "@")
            spans.append((start, match.end()))
            floor = match.end()
    return spans


def luhn_ok(digits: str) -> bool:
    """Luhn checksum of a digit string."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2 == 1:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def _replace(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with each ``(start, end, new)`` span (in order, not overlapping) replaced: one join, linear."""
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end, new in spans:
        parts += (text[pos:start], new)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


class _Spans:
    """Disjoint ``[start, end)`` spans kept sorted: overlap queries and inserts by binary search."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    @classmethod
    def union(cls, spans: Iterable[tuple[int, int]]) -> "_Spans":
        """The union of possibly overlapping spans, merged into disjoint ones."""
        out = cls()
        for start, end in sorted(spans):
            if out.ends and start < out.ends[-1]:
                out.ends[-1] = max(out.ends[-1], end)
            else:
                out.starts.append(start)
                out.ends.append(end)
        return out

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` shares a position with a span."""
        i = bisect.bisect_left(self.ends, start + 1)  # the first span ending after ``start``
        return i < len(self.starts) and self.starts[i] < end

    def add(self, start: int, end: int) -> None:
        """Insert a span that overlaps none."""
        i = bisect.bisect_left(self.starts, start)
        self.starts.insert(i, start)
        self.ends.insert(i, end)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self.starts, self.ends)


class Redactor:
    """Masks personal data in text and in :class:`RagTrace` records."""

    def __init__(
        self,
        *,
        emails: bool = False,
        phones: bool = False,
        cards: bool = False,
        patterns: Iterable[str] = (),
        func: Callable[[str], str] | None = None,
        phone_regions: Iterable[str] = ("US",),
        phone_leniency: str = "valid",
        detector: RecordDetector | None = None,
    ) -> None:
        self.emails, self.phones, self.cards = emails, phones, cards
        self.func = func
        self.detector = detector
        try:
            self.patterns = [re.compile(p) for p in patterns]
        except re.error as exc:
            raise ConfigError(f"invalid redaction pattern: {exc}") from exc
        if phone_leniency not in LENIENCIES:
            raise ConfigError(f"redact_phone_leniency {phone_leniency!r}: choose one of {', '.join(LENIENCIES)}")
        self.phone_regions = [r.upper() for r in phone_regions] or ["US"]
        self._phonenumbers: Any = None
        if phones:
            try:
                import phonenumbers
            except ImportError as exc:  # pragma: no cover - a core dependency
                raise ConfigError("redact_phones needs the phonenumbers package") from exc
            unknown = [r for r in self.phone_regions if r not in phonenumbers.SUPPORTED_REGIONS]
            if unknown:
                raise ConfigError(
                    f"redact_phone_regions: unknown region code(s) {unknown}; use ISO 3166 codes like US, GB"
                )
            self._phonenumbers = phonenumbers
            self._leniency = getattr(phonenumbers.Leniency, phone_leniency.upper())

    @classmethod
    def from_settings(cls, settings: CollectorSettings, func: Callable[[str], str] | None = None) -> "Redactor":
        """Build from ``redact_*`` settings (plus an optional callable); loads the Presidio backend if chosen."""
        detector: RecordDetector | None = None
        if settings.redaction_backend == "presidio":
            from collector.redaction_presidio import PresidioDetector

            detector = PresidioDetector.from_settings(settings)
        return cls(
            emails=settings.redact_emails,
            phones=settings.redact_phones,
            cards=settings.redact_cards,
            patterns=settings.redact_patterns,
            func=func,
            phone_regions=settings.redact_phone_regions,
            phone_leniency=settings.redact_phone_leniency,
            detector=detector,
        )

    @property
    def enabled(self) -> bool:
        """Whether any rule is active."""
        return bool(self.emails or self.phones or self.cards or self.patterns or self.func or self.detector)

    def text(self, value: str, masker: Masker | None = None) -> str:
        """Redact one string; ``masker`` shares placeholders across the strings of one record."""
        return self.texts([value], masker)[0]

    def texts(self, values: Sequence[str], masker: Masker | None = None) -> list[str]:
        """Redact the strings of one record (in order); one ``masker`` numbers the placeholders across them."""
        m = masker or Masker()
        if self.detector is not None and any(values):
            values = self.detector.mask(values, m)
        return [self._rules(v, m) for v in values]

    def _rules(self, value: str, m: Masker) -> str:
        """The builtin rules, the patterns and the callable on one string."""
        if not value:
            return value
        if self.emails:
            value = _replace(value, [(a, b, m.mask("EMAIL", value[a:b].lower())) for a, b in email_spans(value)])
        if self.cards:
            value = CARD_RE.sub(lambda x: self._card(x, m), value)
        if self.phones:
            value = self._phones(value, m)
        for pattern in self.patterns:
            value = pattern.sub(CUSTOM_MASK, value)
        if self.func is not None:
            value = self.func(value)
        return value

    @staticmethod
    def _card(match: re.Match[str], m: Masker) -> str:
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            return m.mask("CARD", digits)
        return match.group(0)

    def _phones(self, value: str, m: Masker) -> str:
        """Every phone number libphonenumber finds (any configured region) that overlaps no fact shape or earlier
        find, masked in text order. Overlap checks are binary searches (not a scan of every fact per match)."""
        pn = self._phonenumbers
        facts = _Spans.union(s.span() for _, shape in NOT_PHONE_SHAPES for s in shape.finditer(value))
        found = _Spans()
        e164: dict[tuple[int, int], str] = {}
        for region in self.phone_regions:
            for match in pn.PhoneNumberMatcher(value, region, leniency=self._leniency):
                if facts.overlaps(match.start, match.end) or found.overlaps(match.start, match.end):
                    continue
                found.add(match.start, match.end)
                e164[(match.start, match.end)] = pn.format_number(match.number, pn.PhoneNumberFormat.E164)
        return _replace(value, [(a, b, m.mask("PHONE", e164[(a, b)])) for a, b in found])  # numbered in text order

    def record(self, record: RagTrace) -> RagTrace:
        """A redacted copy of ``record`` (the input is not changed); one placeholder per value across its fields."""
        if not self.enabled:
            return record
        rec = record.model_copy(deep=True)
        values: list[str] = [] if rec.question is None else [rec.question]
        values.append(rec.answer)
        for ctx in rec.contexts:
            values += [v for v in (ctx.content, ctx.id, ctx.source) if v is not None]
        values += [v for v in rec.attributes.values() if isinstance(v, str)]
        out = iter(self.texts(values, Masker()))  # same order as collected: placeholders numbered in this order
        if rec.question is not None:
            rec.question = next(out)
        rec.answer = next(out)
        for ctx in rec.contexts:
            ctx.content = next(out)
            if ctx.id is not None:
                ctx.id = next(out)
            if ctx.source is not None:
                ctx.source = next(out)
        rec.attributes = {k: (next(out) if isinstance(v, str) else v) for k, v in rec.attributes.items()}
        return rec

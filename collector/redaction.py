"""Redaction applied to every record before it leaves the process.

Built from settings: e-mail addresses, phone numbers, payment card numbers
(13-19 digits that pass the Luhn check, so order numbers are left alone),
custom regular expressions, and optionally a callable ``str -> str`` for
anything else. Applied to the question, the answer, every context chunk
(content, id, source) and string attributes.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from collector.config import CollectorSettings
from contract.errors import ConfigError
from contract.record import RagTrace

EMAIL_RE = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
CARD_RE = re.compile(r"(?<!\d)(?:\d[ \-]?){12,18}\d(?!\d)")
PHONE_RE = re.compile(r"(?<![\w+])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?)?\d{2,4}(?:[ .\-]?\d{2,4}){2,4}(?!\w)")

EMAIL_MASK = "[EMAIL]"
PHONE_MASK = "[PHONE]"
CARD_MASK = "[CARD]"
CUSTOM_MASK = "[REDACTED]"


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


def _card_sub(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    if 13 <= len(digits) <= 19 and luhn_ok(digits):
        return CARD_MASK
    return match.group(0)


def _phone_sub(match: re.Match[str]) -> str:
    digits = sum(ch.isdigit() for ch in match.group(0))
    return PHONE_MASK if 9 <= digits <= 15 else match.group(0)


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
    ) -> None:
        self.emails, self.phones, self.cards = emails, phones, cards
        self.func = func
        try:
            self.patterns = [re.compile(p) for p in patterns]
        except re.error as exc:
            raise ConfigError(f"invalid redaction pattern: {exc}") from exc

    @classmethod
    def from_settings(cls, settings: CollectorSettings, func: Callable[[str], str] | None = None) -> "Redactor":
        """Build from ``redact_*`` settings (plus an optional callable)."""
        return cls(
            emails=settings.redact_emails,
            phones=settings.redact_phones,
            cards=settings.redact_cards,
            patterns=settings.redact_patterns,
            func=func,
        )

    @property
    def enabled(self) -> bool:
        """Whether any rule is active."""
        return bool(self.emails or self.phones or self.cards or self.patterns or self.func)

    def text(self, value: str) -> str:
        """Redact one string (cards before phones so a card number is not half-masked)."""
        if not value:
            return value
        if self.emails:
            value = EMAIL_RE.sub(EMAIL_MASK, value)
        if self.cards:
            value = CARD_RE.sub(_card_sub, value)
        if self.phones:
            value = PHONE_RE.sub(_phone_sub, value)
        for pattern in self.patterns:
            value = pattern.sub(CUSTOM_MASK, value)
        if self.func is not None:
            value = self.func(value)
        return value

    def record(self, record: RagTrace) -> RagTrace:
        """A redacted copy of ``record`` (the input is not changed)."""
        if not self.enabled:
            return record
        rec = record.model_copy(deep=True)
        if rec.question is not None:
            rec.question = self.text(rec.question)
        rec.answer = self.text(rec.answer)
        for ctx in rec.contexts:
            ctx.content = self.text(ctx.content)
            if ctx.id is not None:
                ctx.id = self.text(ctx.id)
            if ctx.source is not None:
                ctx.source = self.text(ctx.source)
        rec.attributes = {k: (self.text(v) if isinstance(v, str) else v) for k, v in rec.attributes.items()}
        return rec

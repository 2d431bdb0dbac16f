"""Redaction of e-mails, phones, Luhn-valid cards, custom patterns and callables."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collector.config import CollectorSettings
from collector.redaction import Redactor, luhn_ok
from contract.errors import ConfigError
from contract.record import Context, RagTrace

emails = st.from_regex(r"[a-z][a-z0-9._]{0,15}@[a-z]{2,10}\.(com|org|io|co\.uk)", fullmatch=True)


@given(email=emails, prefix=st.text(max_size=20), suffix=st.text(max_size=20))
def test_emails_never_survive(email, prefix, suffix):
    """Any e-mail inside arbitrary text is masked."""
    out = Redactor(emails=True).text(f"{prefix} {email} {suffix}")
    assert email not in out and "[EMAIL]" in out


def test_cards_masked_only_when_luhn_valid():
    """A Luhn-valid card number (with spaces or dashes) is masked; an order number that fails Luhn is kept."""
    r = Redactor(cards=True)
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert r.text("card 4111 1111 1111 1111 ok") == "card [CARD] ok"
    assert r.text("card 5500-0000-0000-0004.") == "card [CARD]."
    assert r.text("order 4111111111111112") == "order 4111111111111112"


def test_phones_masked_but_short_numbers_kept():
    """Phone numbers with 9-15 digits are masked; years and small numbers are not."""
    r = Redactor(phones=True)
    assert r.text("call +1 (415) 555-2671 now") == "call [PHONE] now"
    assert r.text("call 020 7946 0958") == "call [PHONE]"
    assert r.text("in 2024 we had 35 cases") == "in 2024 we had 35 cases"


def test_custom_patterns_and_callable():
    """Custom regexes and a callable run after the built-in rules."""
    r = Redactor(patterns=[r"ACC-\d+"], func=lambda s: s.replace("secret", "s*****"))
    assert r.text("ACC-12345 is secret") == "[REDACTED] is s*****"


def test_invalid_pattern_is_a_config_error():
    """A bad regex fails at start-up with ConfigError."""
    with pytest.raises(ConfigError):
        Redactor(patterns=["("])


def test_record_redaction_covers_every_text_field_and_copies():
    """Question, answer, context content/id/source and string attributes are redacted on a copy."""
    rec = RagTrace(
        trace_id="ab" * 16,
        question="mail me at a@b.com",
        answer="sent to a@b.com",
        contexts=[Context(id="a@b.com", content="owner a@b.com", source="/u/a@b.com/doc")],
        attributes={"user": "a@b.com", "n": 3},
    )
    out = Redactor.from_settings(CollectorSettings(redact_emails=True)).record(rec)
    assert "a@b.com" not in out.model_dump_json()
    assert out.attributes["n"] == 3
    assert rec.question == "mail me at a@b.com"


def test_disabled_redactor_returns_record_unchanged():
    """With no rule enabled the record is passed through as is."""
    rec = RagTrace(trace_id="1", answer="a@b.com")
    r = Redactor()
    assert not r.enabled and r.record(rec) is rec

"""Redaction of e-mails, phones, Luhn-valid cards, custom patterns and callables."""

from __future__ import annotations

import datetime

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
    assert email not in out and "[EMAIL_1]" in out


def test_cards_masked_only_when_luhn_valid():
    """A Luhn-valid card number (with spaces or dashes) is masked; an order number that fails Luhn is kept."""
    r = Redactor(cards=True)
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert r.text("card 4111 1111 1111 1111 ok") == "card [CARD_1] ok"
    assert r.text("card 5500-0000-0000-0004.") == "card [CARD_1]."
    assert r.text("order 4111111111111112") == "order 4111111111111112"


def test_phones_masked_by_region_but_short_numbers_kept():
    """Valid phone numbers are masked (national formats of the configured regions, any +international one)."""
    r = Redactor(phones=True, phone_regions=["US", "GB"])
    assert r.text("call +1 (415) 555-2671 now") == "call [PHONE_1] now"
    assert r.text("call 020 7946 0958") == "call [PHONE_1]"
    assert r.text("in 2024 we had 35 cases") == "in 2024 we had 35 cases"
    assert Redactor(phones=True).text("call 020 7946 0958") == "call 020 7946 0958"  # not a US number


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


# ---------------------------------------------------------------- masks that keep the facts checkable

DATES = st.dates(min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2100, 12, 31))
NOT_PHONES = st.one_of(
    DATES.map(str),  # 2024-05-01
    DATES.map(lambda d: d.strftime("%B %d, %Y")),  # May 01, 2024
    DATES.map(lambda d: d.strftime("%d.%m.%Y")),  # 01.05.2024
    st.times().map(lambda t: t.strftime("%H:%M:%S")),  # 10:30:15
    st.tuples(*[st.integers(1990, 2030)] * 3).map(lambda y: "-".join(map(str, y))),  # 2019-2020-2021
    st.integers(1_000_000, 10**13).map(lambda n: f"{n:,}".replace(",", " ")),  # 4 200 000 000
    st.integers(1_000_000, 10**13).map(lambda n: f"{n:,}"),  # 4,200,000,000
    st.floats(0, 100, allow_nan=False).map(lambda f: f"{f:.2f}%"),  # 12.50%
    st.tuples(*[st.integers(0, 99)] * 4).map(lambda v: ".".join(map(str, v))),  # version 10.2.33.4
    st.tuples(st.floats(-90, 90), st.floats(-180, 180), st.integers(0, 99)).map(
        lambda c: f"{c[0]:.4f} {c[1]:.4f} {c[2]}"
    ),  # coordinates 40.7128 -74.0060 12
    st.tuples(*[st.integers(0, 255)] * 4).map(lambda v: ".".join(map(str, v))),  # 192.168.1.1
)


@given(value=NOT_PHONES, before=st.sampled_from(["", "It was ", "Revenue: ", "see "]))
def test_dates_amounts_versions_coordinates_and_ips_are_never_masked_as_phones(value, before):
    """Only valid phone numbers are phones: dates, ranges, times, amounts, percentages, versions, coordinates, IPs stay."""
    text = f"{before}{value} today."
    assert Redactor(phones=True, phone_regions=["US", "GB", "DE", "FR"]).text(text) == text


def test_the_issue_examples_are_no_longer_masked():
    """The figures the regex used to mask as phones stay, so a changed figure is still visible to the judge."""
    r = Redactor(phones=True)
    for text in (
        "Revenue was 4 200 000 000 dollars",
        "Revenue was 2 392 000 000 dollars",
        "The model has 1 760 000 000 000 parameters",
        "Between 2019-2020-2021 it grew",
        "Coordinates 40.7128 74.0060 12",
    ):
        assert r.text(text) == text


def test_same_value_same_placeholder_within_a_record_and_a_changed_number_stays_visible():
    """Within one record a phone number keeps one placeholder everywhere; a different number gets another."""
    rec = RagTrace(
        trace_id="t" * 32,
        question="What is the support line?",
        answer="Call (650) 253-0000 or mail help@x.com, not 650-253-0001.",
        contexts=[Context(content="Support: +1 650 253 0000, help@X.com.")],
    )
    out = Redactor(phones=True, emails=True).record(rec)
    assert out.contexts[0].content == "Support: [PHONE_1], [EMAIL_1]."
    assert out.answer == "Call [PHONE_1] or mail [EMAIL_1], not [PHONE_2]."


def test_unknown_region_or_leniency_is_a_config_error():
    """Region codes and the leniency are checked at start-up."""
    with pytest.raises(ConfigError, match="region"):
        Redactor(phones=True, phone_regions=["XX"])
    with pytest.raises(ConfigError, match="leniency"):
        Redactor(phones=True, phone_leniency="loose")


def _verdicts_with_and_without_redaction(items, redactor=None):
    """(claim, redacted claim, changed?) for every (claim, contexts) item judged by the heuristic before and after."""
    from evaluator_worker.judges.base import Claim
    from evaluator_worker.judges.heuristic import HeuristicJudge

    judge = HeuristicJudge()
    redactor = redactor or Redactor(emails=True, phones=True, cards=True, phone_regions=["US", "GB"])
    out = []
    for claim, contexts in items:
        rec = redactor.record(RagTrace(trace_id="t", answer=claim, contexts=[Context(content=c) for c in contexts]))
        before = judge.verify([Claim(id="c1", text=claim)], contexts).verdicts[0].verdict
        after = judge.verify([Claim(id="c1", text=rec.answer)], [c.content for c in rec.contexts]).verdicts[0].verdict
        out.append((claim, rec.answer, before != after))
    return out


def _dev_and_demo_items():
    """(dev claims, demo traffic): (claim, contexts) items; demo = every answer sentence against its retrieved chunks."""
    from claimwatch.calibration import DATA_DIR, load_labeled_claims
    from claimwatch.demo.corpus import QUESTIONS, answer, retrieve

    dev = [(c.claim, list(c.context)) for c in load_labeled_claims(DATA_DIR / "claims_dev.jsonl")]
    demo = [(sentence, [d.text for d in retrieve(q)]) for q in QUESTIONS for sentence in answer(q)]
    return dev, demo


def test_full_redaction_changes_no_verdict_on_the_dev_claims_or_the_demo_traffic():
    """Every redaction on: a verdict changes only where the claim itself held a masked value (none in this data)."""
    dev, demo = _dev_and_demo_items()
    results = _verdicts_with_and_without_redaction(dev + demo)
    changed = [claim for claim, masked, flipped in results if flipped and masked == claim]
    assert len(results) > 250 and changed == []

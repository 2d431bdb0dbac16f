"""Conformance suite: real instrumentation packages, offline, into RagTraceProcessor."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # registered here too so `--strict-markers` accepts it before pyproject lists it
    config.addinivalue_line("markers", "conformance: drives a real third-party instrumentation package offline")


@pytest.fixture
def capture():
    """A fresh TracerProvider -> RagTraceProcessor -> MemorySink (and raw span/log copies)."""
    from tests.conformance.harness import make_capture

    cap = make_capture(logs=True)
    try:
        yield cap
    finally:
        cap.close()


@pytest.fixture
def capture_factory():
    """Build captures with custom CollectorSettings: ``capture_factory(context_from_prompt=True)``."""
    from collector.config import CollectorSettings
    from tests.conformance.harness import make_capture

    made = []

    def factory(**settings):
        cap = make_capture(logs=True, settings=CollectorSettings(late_span_wait_s=0.0, **settings))
        made.append(cap)
        return cap

    try:
        yield factory
    finally:
        for cap in made:
            cap.close()

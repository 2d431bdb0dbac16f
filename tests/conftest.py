"""Shared fixtures: the real Kafka-protocol broker and unique topic names.

``CLAIMWATCH_TEST_BOOTSTRAP`` (set by ``.ci/run``) points the tests at a broker
that is already running; otherwise one embedded broker is started per session.
"""

from __future__ import annotations

import os
import uuid

import pytest


@pytest.fixture(scope="session")
def kafka_bootstrap() -> str:
    """Bootstrap address of a real Kafka-protocol broker."""
    env = os.environ.get("CLAIMWATCH_TEST_BOOTSTRAP")
    if env:
        yield env
        return
    from claimwatch.embedded import EmbeddedBroker

    broker = EmbeddedBroker().start()
    try:
        yield broker.bootstrap
    finally:
        broker.stop()


@pytest.fixture
def topic_name() -> str:
    """A fresh topic name per test (topics are auto-created on first produce)."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(autouse=True)
def _fresh_structlog():
    """Each test starts and ends with structlog's defaults (a CLI or benchmark run may have set a level filter).

    Resetting after the test too matters: a module-scoped fixture of the next file is set up before this
    function-scoped one, so it would otherwise run under whatever the previous test configured.
    """
    import structlog

    structlog.reset_defaults()
    yield
    structlog.reset_defaults()

"""The judge is a deliberate choice: no default for the worker, a start-up check of the configured models."""

from __future__ import annotations

import anthropic
import pytest

from contract.errors import ConfigError
from evaluator_worker import assembly
from evaluator_worker.config import AnthropicSettings, WorkerSettings
from evaluator_worker.errors import JudgeAuthError
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import preflight
from tests.fakes import MessagesServer


def test_the_worker_settings_name_no_judge_and_the_evaluator_refuses_to_guess(monkeypatch):
    """Without CLAIMWATCH_JUDGE the worker's evaluator is not built: one error saying how to choose."""
    monkeypatch.delenv("CLAIMWATCH_JUDGE", raising=False)
    settings = WorkerSettings()
    assert settings.judge is None
    with pytest.raises(ConfigError, match="no judge chosen: set CLAIMWATCH_JUDGE"):
        assembly.build_evaluator(settings)


def test_consistency_checks_are_opt_in(monkeypatch):
    """The consistency side check costs judge calls: off unless asked for."""
    monkeypatch.delenv("CLAIMWATCH_PARITY__CONSISTENCY", raising=False)
    assert WorkerSettings().parity.consistency is False


@pytest.fixture
def srv():
    with MessagesServer() as s:
        yield s


def _judge(srv: MessagesServer, **settings) -> AnthropicJudge:
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0, timeout=10.0)
    return AnthropicJudge(AnthropicSettings(**settings), client=client)


def test_a_retired_model_stops_the_judge_at_start_up_naming_the_setting(srv):
    """The Models API says 404 for the configured model: a fatal error naming CLAIMWATCH_ANTHROPIC__MODEL, before
    any Messages call."""
    srv.served_models = {"claude-haiku-4-5"}
    with pytest.raises(JudgeAuthError) as info:
        preflight(_judge(srv, model="claude-sonnet-3-5-retired"))
    assert info.value.fatal and "404" in str(info.value) and "CLAIMWATCH_ANTHROPIC__MODEL" in str(info.value)
    assert srv.model_checks == ["claude-sonnet-3-5-retired"] and srv.requests == []


def test_served_models_pass_the_start_up_check(srv):
    """Both configured models (verifier and extraction) are asked about once each; served models pass."""
    preflight(_judge(srv, model="claude-sonnet-4-5", extract_model="claude-haiku-4-5"))
    assert srv.model_checks == ["claude-sonnet-4-5", "claude-haiku-4-5"]


def test_wrapped_judges_run_their_inner_judges_check(srv):
    """The registry's Claude judge (wrapped in its confidence map) and a cascade reach the Models API check."""
    from evaluator_worker.judges.calibrated import CalibratedJudge
    from evaluator_worker.judges.cascade import CascadeJudge
    from evaluator_worker.judges.heuristic.judge import HeuristicJudge

    srv.served_models = set()
    inner = _judge(srv, model="claude-gone")
    for judge in (CalibratedJudge(inner, lambda c: c), CascadeJudge(HeuristicJudge(), inner)):
        with pytest.raises(JudgeAuthError):
            preflight(judge)

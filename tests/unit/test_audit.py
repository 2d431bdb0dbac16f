"""`claimwatch audit`: Message Batches through the real SDK against the fake's batch endpoints, crash and resume."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from claimwatch.audit import BATCH_PRICE_FACTOR, Audit, AuditState
from contract.record import RagTrace
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.settings import AnthropicSettings
from tests.fakes import MessagesServer

CONTEXT = "The Eiffel Tower was completed in 1889. It is 330 metres tall. It was designed by Gustave Eiffel's company."
ANSWERS = [
    "The Eiffel Tower was completed in 1889.",
    "It is 330 metres tall. It is painted gold.",
    "It was designed by Gustave Eiffel's company.",
    "The tower opened in 1925.",
    "It is 330 metres tall.",
    "The Eiffel Tower was completed in 1889. It is 330 metres tall.",
]


class Crash(Exception):
    """Stands in for the process dying."""


def _traces() -> list[RagTrace]:
    return [
        RagTrace(
            trace_id=f"t{i:02d}",
            question="Tell me about the Eiffel Tower",
            answer=a,
            contexts=[{"content": CONTEXT}],
            slices={"release": "r1"},
        )
        for i, a in enumerate(ANSWERS)
    ]


def _judge(srv: MessagesServer) -> AnthropicJudge:
    client = anthropic.Anthropic(api_key="test", base_url=srv.base_url, max_retries=0)
    return AnthropicJudge(AnthropicSettings(), client=client)


def _audit(srv: MessagesServer, tmp: Path, **kw) -> Audit:
    judge = _judge(srv)
    return Audit(_traces(), judge, judge.client, tmp / "state.json", tmp / "out.jsonl", poll_s=0.01, **kw)


def _out(tmp: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp / "out.jsonl").read_text().splitlines()]


def _verdicts(rows: list[dict]) -> dict[str, list[str]]:
    return {r["trace_id"]: [c["verdict"] for c in r["claims"]] for r in rows}


EXPECTED = {
    "t00": ["SUPPORTED"],
    "t01": ["SUPPORTED", "UNSUPPORTED"],
    "t02": ["SUPPORTED"],
    "t03": ["UNSUPPORTED"],
    "t04": ["SUPPORTED"],
    "t05": ["SUPPORTED", "SUPPORTED"],
}


def test_audit_judges_every_answer_in_two_batches_at_half_the_online_cost(tmp_path):
    """One extraction batch, one verification batch; the verdicts match the online judge's at <= 0.55x its cost."""
    with MessagesServer() as srv:
        report = _audit(srv, tmp_path).run()
        assert (report.answers, report.written, report.rounds, report.failed) == (6, 6, 2, 0)
        assert srv.batch_creates == 2 and srv.batch_items == 12
        rows = _out(tmp_path)
        assert _verdicts(rows) == EXPECTED
    with MessagesServer() as srv:  # the online run on a fresh server: the same prompt-cache start
        judge = _judge(srv)
        online = 0.0
        for t in _traces():
            ex = judge.extract_claims(t.answer, t.question)
            online += ex.usage.cost_usd + judge.verify(ex.claims, [CONTEXT], t.question).usage.cost_usd
    batch_cost = sum(r["usage"]["cost_usd"] for r in rows)
    assert batch_cost == pytest.approx(report.cost_usd)
    assert 0 < batch_cost <= 0.55 * online
    assert BATCH_PRICE_FACTOR == 0.5


def test_errored_and_expired_items_are_resubmitted_and_nothing_is_lost(tmp_path):
    """Partial errors and a whole expired batch go again in the next round; every answer is written once."""
    seen: dict[str, int] = {}

    def outcome(custom_id: str) -> str | None:
        seen[custom_id] = seen.get(custom_id, 0) + 1
        return "errored" if custom_id in ("a1-x", "a4-vc1") and seen[custom_id] == 1 else None

    with MessagesServer() as srv:
        srv.batch_outcome = outcome
        srv.expire_next_batch()
        report = _audit(srv, tmp_path).run()
    assert report.written == 6 and report.failed == 0 and report.rounds >= 4
    rows = _out(tmp_path)
    assert sorted(r["trace_id"] for r in rows) == sorted(EXPECTED)
    assert _verdicts(rows) == EXPECTED


def test_items_that_keep_failing_become_error_claims_and_the_audit_ends(tmp_path):
    """An item errored on every attempt gives up after max_attempts: its claims are ERROR, the rest are judged."""
    with MessagesServer() as srv:
        srv.batch_outcome = lambda cid: "errored" if cid == "a3-vc1" else None
        report = _audit(srv, tmp_path, max_attempts=2).run()
    assert report.written == 6
    got = _verdicts(_out(tmp_path))
    assert got["t03"] == ["ERROR"] and got["t00"] == ["SUPPORTED"]


def test_a_crash_mid_batch_resumes_without_judging_anything_twice(tmp_path):
    """The process dies while the verification batch runs; the resumed audit collects it, submits nothing again."""
    calls = {"n": 0}

    def dying_sleep(_s: float) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Crash()

    with MessagesServer() as srv:
        srv.batch_seconds = 0.3
        with pytest.raises(Crash):
            _audit(srv, tmp_path, sleep=dying_sleep).run()
        state = AuditState.load(tmp_path / "state.json")
        assert state.batches and not all(b.collected for b in state.batches)
        items_before = srv.batch_items
        report = _audit(srv, tmp_path).run()
        assert report.written == 6
        assert srv.batch_items == 12 and items_before <= 12  # no request submitted twice
    rows = _out(tmp_path)
    assert sorted(r["trace_id"] for r in rows) == sorted(EXPECTED) and _verdicts(rows) == EXPECTED


def test_a_crash_inside_create_adopts_the_batch_instead_of_submitting_it_again(tmp_path):
    """The API created the batch but the process died before recording its id: the resumed run adopts it."""

    class DiesAfterCreate:
        def __init__(self, client):
            self._client = client
            self.messages = self

        @property
        def batches(self):
            outer = self

            class B:
                def create(self, **kw):
                    outer._client.messages.batches.create(**kw)
                    raise Crash()

            return B()

    with MessagesServer() as srv:
        judge = _judge(srv)
        with pytest.raises(Crash):
            Audit(
                _traces(),
                judge,
                DiesAfterCreate(judge.client),
                tmp_path / "state.json",
                tmp_path / "out.jsonl",
                poll_s=0.01,
            ).run()
        assert srv.batch_creates == 1
        report = _audit(srv, tmp_path).run()
        assert report.written == 6 and srv.batch_creates == 2 and srv.batch_items == 12


def test_answers_already_in_the_output_are_not_written_twice(tmp_path):
    """A crash after writing but before recording it: the resumed run sees the trace ids in the file."""
    with MessagesServer() as srv:
        _audit(srv, tmp_path).run()
        state = json.loads((tmp_path / "state.json").read_text())
        state["written"] = []
        (tmp_path / "state.json").write_text(json.dumps(state))
        _audit(srv, tmp_path).run()
    ids = [r["trace_id"] for r in _out(tmp_path)]
    assert sorted(ids) == sorted(EXPECTED)


def test_a_batch_canceled_from_outside_is_resubmitted(tmp_path):
    """Someone cancels the running batch (console, another tool): its canceled items go again next round."""
    state = {"canceled": False}

    with MessagesServer() as srv:
        srv.batch_seconds = 0.2
        judge = _judge(srv)

        def cancel_once(_s: float) -> None:
            if not state["canceled"]:
                batch_id = next(b.id for b in AuditState.load(tmp_path / "state.json").batches if b.id)
                judge.client.messages.batches.cancel(batch_id)
                state["canceled"] = True

        report = Audit(
            _traces(),
            judge,
            judge.client,
            tmp_path / "state.json",
            tmp_path / "out.jsonl",
            poll_s=0.01,
            sleep=cancel_once,
        ).run()
    assert state["canceled"] and report.written == 6 and report.failed == 0
    assert _verdicts(_out(tmp_path)) == EXPECTED

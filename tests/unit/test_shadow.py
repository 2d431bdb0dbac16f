"""The shadow judge: a sampled share judged again by a candidate judge, counted apart, never in the main path's way."""

from __future__ import annotations

import json
import threading

import pytest

from contract.errors import ConfigError
from contract.record import RagTrace
from evaluator_worker.assembly import build_shadow, shadow_settings
from evaluator_worker.config import ShadowSettings, WorkerSettings
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.shadow import ShadowJudge, SpendWindow, answer_call, pair_claims, sampled
from tests.fakes.judges import StrictTagJudge as StrictTag
from tests.fakes.judges import TagJudge
from tests.fakes.kafka import MemoryProducer


class BlockingTag(StrictTag):
    """Waits on ``gate`` before judging (a slow shadow)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__()
        self.gate = gate

    def verify(self, claims, contexts, question=None):
        self.gate.wait(10)
        return super().verify(claims, contexts, question)


class BrokenTag(StrictTag):
    def verify(self, claims, contexts, question=None):
        raise RuntimeError("a shadow judge bug")


def _trace(i: int, answer: str, release: str = "v1") -> RagTrace:
    return RagTrace(
        trace_id=f"{i + 1:032x}",
        question="q?",
        answer=answer,
        contexts=[{"content": "ctx"}],
        slices={"release": release, "route": "faq"},
    )


def _shadow(metrics, judge=None, **kw) -> tuple[Evaluator, ShadowJudge, MemoryProducer]:
    main = Evaluator(TagJudge(), metrics)
    shadow_eval = Evaluator(judge or StrictTag())
    producer = MemoryProducer()
    settings = ShadowSettings(judge="strict-tag", **{"sample": 1.0, **kw})
    sh = ShadowJudge(shadow_eval, settings, metrics, main_judge_id=main.identity.judge_id, producer=producer)
    return main, sh, producer


def _wait(sh: ShadowJudge) -> None:
    sh.close(timeout_s=10)


def _value(m: WorkerMetrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


def test_sampling_is_by_record_key_and_keeps_the_share():
    """The same key is always in or out (every replica agrees); about `share` of keys are in."""
    keys = [f"{i:032x}" for i in range(20_000)]
    inside = [k for k in keys if sampled(k, 0.1)]
    assert 0.09 < len(inside) / len(keys) < 0.11
    assert inside == [k for k in keys if sampled(k, 0.1)]
    assert all(sampled(k, 1.0) for k in keys[:10]) and not any(sampled(k, 0.0) for k in keys[:10])


def test_claims_pair_by_text_and_the_unpaired_say_none():
    """Claims both judges extracted pair by their text; one only one judge extracted pairs with none."""
    ev = Evaluator(TagJudge())
    main = ev.evaluate(_trace(0, "Paris is big. Lyon [C]. Nice too."))
    other = ev.evaluate(_trace(0, "paris  is big. Lyon [C]. Marseille."))
    assert sorted(pair_claims(main, other)) == sorted(
        [("supported", "supported"), ("contradicted", "contradicted"), ("supported", "none"), ("none", "supported")]
    )


def test_spend_window_forgets_spend_older_than_an_hour():
    """The budget counts the last hour's spend only."""
    now = [0.0]
    w = SpendWindow(clock=lambda: now[0])
    w.add(1.5)
    now[0] = 1800.0
    w.add(0.5)
    assert w.spent() == pytest.approx(2.0)
    now[0] = 3600.5
    assert w.spent() == pytest.approx(0.5)


def test_a_shadowed_answer_is_counted_apart_and_written_to_its_own_topic():
    """Both judges' calls and paired verdicts are counted under the shadow's id; the decision counters see only the main judge."""
    m = WorkerMetrics()
    main, sh, producer = _shadow(m)
    for i, answer in enumerate(["Fine. Fine again.", "Fine. Rephrased [P].", "Wrong [C]. Fine."]):
        trace = _trace(i, answer)
        result = main.evaluate(trace)
        m.observe(result)
        sh.offer(trace, result)
    _wait(sh)
    shadow_id, main_id = sh.identity.judge_id, main.identity.judge_id
    assert shadow_id != main_id and shadow_id.startswith("strict-tag")
    sl = {"release": "v1", "model": "unknown", "route": "faq", "environment": "unknown"}
    calls = {
        (s.labels["main"], s.labels["shadow"]): s.value
        for fam in m.registry.collect()
        for s in fam.samples
        if s.name == "claimwatch_shadow_answers_total" and s.value  # the other both-called series exist at 0
    }
    assert calls == {("ok", "ok"): 1, ("ok", "flagged"): 1, ("flagged", "flagged"): 1}
    assert (
        _value(
            m,
            "claimwatch_shadow_answers_total",
            main="ok",
            shadow="flagged",
            main_judge_id=main_id,
            judge_id=shadow_id,
            **sl,
        )
        == 1
    )
    assert (
        _value(
            m,
            "claimwatch_shadow_claims_total",
            main_verdict="supported",
            shadow_verdict="unsupported",
            main_judge_id=main_id,
            judge_id=shadow_id,
        )
        == 1
    )
    # the decision counters: the main judge only
    judges = {
        s.labels["judge_id"] for fam in m.registry.collect() for s in fam.samples if s.name == "claimwatch_claims_total"
    }
    assert judges == {main_id}
    assert _value(m, "claimwatch_judge_info", judge="strict-tag", judge_id=shadow_id, model="none", role="shadow") == 1
    assert _value(m, "claimwatch_shadow_cost_dollars_total", judge_id=shadow_id) == pytest.approx(0.003)
    sent = producer.sent
    assert [topic for topic, *_ in sent] == ["claimwatch.shadow-results"] * 3
    assert {key for _, key, _, _ in sent} == {f"{i + 1:032x}".encode() for i in range(3)}
    assert {json.loads(value)["judge_id"] for value in producer.values} == {shadow_id}


def test_a_busy_shadow_skips_counted_and_logged_once_and_never_blocks():
    """With the shadow's threads and queue full, a sampled answer is skipped (reason busy), logged at most once, offer returns at once."""
    m = WorkerMetrics()
    gate = threading.Event()
    main, sh, _ = _shadow(m, BlockingTag(gate), max_in_flight=1, max_queued=1)
    traces = [_trace(i, "Fine.") for i in range(5)]
    for t in traces:
        sh.offer(t, main.evaluate(t))
    assert sh.in_flight == 2  # one being judged, one queued
    assert _value(m, "claimwatch_shadow_skipped_total", reason="busy") == 3
    gate.set()
    _wait(sh)
    assert (
        sum(s.value for fam in m.registry.collect() for s in fam.samples if s.name == "claimwatch_shadow_answers_total")
        == 2
    )


def test_the_budget_stops_the_shadow_until_the_hours_spend_falls():
    """Past budget_usd_per_hour the sampled answers are skipped (reason budget)."""
    m = WorkerMetrics()
    main, sh, _ = _shadow(m, budget_usd_per_hour=0.0015, max_in_flight=1)
    for i in range(4):
        t = _trace(i, "Fine.")
        sh.offer(t, main.evaluate(t))
        sh_wait_idle(sh)
    _wait(sh)
    assert _value(m, "claimwatch_shadow_skipped_total", reason="budget") == 2  # 0.001 each: two fit under 0.0015
    assert (
        m.registry.get_sample_value("claimwatch_shadow_budget_dollars_per_hour", {"judge_id": sh.identity.judge_id})
        == 0.0015
    )


def sh_wait_idle(sh: ShadowJudge) -> None:
    import time

    deadline = time.monotonic() + 10
    while sh.in_flight and time.monotonic() < deadline:
        time.sleep(0.005)


def test_a_failing_shadow_judge_is_counted_and_the_main_path_goes_on():
    """A shadow judge that raises is an 'error' skip; offer never raises and the main result is untouched."""
    m = WorkerMetrics()
    main, sh, producer = _shadow(m, BrokenTag())
    t = _trace(0, "Fine.")
    result = main.evaluate(t)
    before = result.model_dump()
    sh.offer(t, result)
    _wait(sh)
    assert result.model_dump() == before
    assert _value(m, "claimwatch_shadow_skipped_total", reason="error") == 1  # a judge bug: counted, logged
    assert producer.sent == []


def test_a_failed_shadow_write_is_counted():
    """A shadow result the broker refuses is counted (write_error); the main path does not see it."""
    m = WorkerMetrics()
    main, sh, producer = _shadow(m)
    producer.fail_with(RuntimeError("NotLeaderForPartition"))
    t = _trace(0, "Fine.")
    sh.offer(t, main.evaluate(t))
    _wait(sh)
    assert _value(m, "claimwatch_shadow_skipped_total", reason="write_error") == 1


def test_only_evaluated_answers_are_offered_and_a_stopped_shadow_skips():
    """An abstained main answer is not shadowed; after close every sampled answer is a 'stopped' skip."""
    m = WorkerMetrics()
    main, sh, _ = _shadow(m)
    t = _trace(0, "I don't know.")
    sh.offer(t, main.evaluate(t))
    _wait(sh)
    t = _trace(1, "Fine.")
    sh.offer(t, main.evaluate(t))
    assert _value(m, "claimwatch_shadow_skipped_total", reason="stopped") == 1
    assert not any(
        s.value for fam in m.registry.collect() for s in fam.samples if s.name == "claimwatch_shadow_answers_total"
    )


def test_answer_call_reads_at_risk_then_the_any_claim_rule():
    """An answer's call is flagged by at_risk when present, else by any flagged claim; no claims: none; failed: failed."""
    ev = Evaluator(TagJudge())
    r = ev.evaluate(_trace(0, "Wrong [U]."))
    assert answer_call(r) == ("flagged" if r.at_risk is not False else "ok")
    assert answer_call(r.model_copy(update={"at_risk": None})) == "flagged"
    assert answer_call(r.model_copy(update={"outcome": "abstained"})) == "none"
    assert answer_call(r.model_copy(update={"outcome": "failed"})) == "failed"


def test_shadow_settings_merge_over_the_workers_and_name_the_candidate():
    """shadow.settings change the worker's settings (nested); the shadow gets its judge, no consistency, a short retry deadline."""
    s = WorkerSettings(
        judge="heuristic",
        shadow={"judge": "anthropic", "settings": {"anthropic": {"model": "claude-opus-4-5"}}, "retry_deadline_s": 30},
    )
    ss = shadow_settings(s)
    assert ss.judge == "anthropic" and ss.anthropic.model == "claude-opus-4-5"
    assert ss.anthropic.max_tokens == s.anthropic.max_tokens  # the rest as the worker's
    assert ss.flow.retry_deadline_s == 30 and not ss.parity.consistency
    with pytest.raises(ConfigError, match="CLAIMWATCH_SHADOW__SETTINGS"):
        shadow_settings(
            WorkerSettings(
                judge="heuristic", shadow={"judge": "heuristic", "settings": {"flow": {"max_in_flight": -1}}}
            )
        )


def test_a_shadow_that_is_the_main_judge_is_refused_and_none_is_built_without_one():
    """A shadow with the main judge's id would measure nothing: ConfigError; no shadow.judge: no shadow."""
    m = WorkerMetrics()
    s = WorkerSettings(judge="heuristic")
    main = Evaluator(TagJudge(), m)
    assert build_shadow(s, main, m) is None
    same = WorkerSettings(judge="heuristic", shadow={"judge": "heuristic"})
    from evaluator_worker.assembly import build_evaluator

    with pytest.raises(ConfigError, match="the shadow judge is the main judge"):
        build_shadow(same, build_evaluator(same, metrics=m), m)
    other = WorkerSettings(judge="heuristic", shadow={"judge": "offline"})
    sh = build_shadow(other, build_evaluator(other, metrics=m), m)
    assert sh is not None and sh.identity.kind == "offline"
    sh.close()


def test_shadow_settings_read_from_the_environment(monkeypatch):
    """CLAIMWATCH_SHADOW__JUDGE, __SAMPLE and __SETTINGS (JSON) configure the shadow."""
    monkeypatch.setenv("CLAIMWATCH_SHADOW__JUDGE", "anthropic")
    monkeypatch.setenv("CLAIMWATCH_SHADOW__SAMPLE", "0.25")
    monkeypatch.setenv("CLAIMWATCH_SHADOW__SETTINGS", '{"anthropic": {"model": "claude-opus-4-5"}}')
    s = WorkerSettings()
    assert s.shadow.judge == "anthropic" and s.shadow.sample == 0.25
    assert s.shadow.settings == {"anthropic": {"model": "claude-opus-4-5"}}


def test_answers_still_queued_when_the_worker_stops_are_counted_stopped():
    """Closing with a backlog: each queued answer is a 'stopped' skip, so judged + skipped = sampled (no silent loss)."""
    m = WorkerMetrics()
    gate = threading.Event()
    main, sh, _ = _shadow(m, BlockingTag(gate), max_in_flight=1, max_queued=3)
    for i in range(4):
        t = _trace(i, "Fine.")
        sh.offer(t, main.evaluate(t))
    sh.close(timeout_s=0.1)
    gate.set()
    sh_wait_idle(sh)
    judged = sum(
        s.value for fam in m.registry.collect() for s in fam.samples if s.name == "claimwatch_shadow_answers_total"
    )
    stopped = _value(m, "claimwatch_shadow_skipped_total", reason="stopped")
    assert stopped >= 3 and judged + stopped == 4


def test_a_throttled_shadow_yields_to_the_main_judge_then_resumes():
    """A 429 on a shadow call (real anthropic client, local Messages API): the answer is skipped at once (throttled),
    not retried; no new answer is taken for the retry-after (no request reaches the provider); then it judges again."""
    import time

    from tests.fakes.messages_server import MessagesServer

    m = WorkerMetrics()
    with MessagesServer() as srv:
        settings = WorkerSettings(judge="heuristic")
        settings.shadow = ShadowSettings(
            judge="anthropic",
            settings={"anthropic": {"base_url": srv.base_url, "api_key": "test"}},
            sample=1.0,
            results_topic=None,
        )
        main = Evaluator(TagJudge(), m)
        sh = build_shadow(settings, main, m)
        assert sh is not None and sh.evaluator.caller.retry.yield_when_throttled
        srv.fail(429, times=1, retry_after="1")
        started = time.monotonic()
        t1 = _trace(0, "Refunds take 5 days.")
        sh.offer(t1, main.evaluate(t1))
        sh_wait_idle(sh)
        assert time.monotonic() - started < 5.0  # not held in retries for the 60 s retry deadline
        assert _value(m, "claimwatch_shadow_skipped_total", reason="throttled") == 1
        assert len(srv.requests) == 1  # the one throttled call, not retried
        t2 = _trace(1, "Appeals close after 30 days.")
        sh.offer(t2, main.evaluate(t2))  # inside the retry-after: skipped before any call
        assert _value(m, "claimwatch_shadow_skipped_total", reason="throttled") == 2 and len(srv.requests) == 1
        time.sleep(1.1)
        t3 = _trace(2, "The fee is 3 euros.")
        sh.offer(t3, main.evaluate(t3))
        sh.close(timeout_s=20)
        assert len(srv.requests) > 1  # judged again after the pause
        judged = sum(s.value for s in m.shadow_answers.collect()[0].samples if s.name.endswith("_total") and s.value)
        assert judged == 1 and _value(m, "claimwatch_shadow_skipped_total", reason="throttled") == 2

"""A judge switch inside the gate's window: HOLD naming both judges, not a false ROLLBACK (real Prometheus, the real
``anthropic`` client against a local Messages API).

Two workers' registries (the worker's own counting code, ``WorkerMetrics``) are served over HTTP and scraped by a real
Prometheus. The old worker judges with ``claude-lenient`` (a faithful paraphrase is SUPPORTED), the new one, after
the judge change, with ``claude-strict`` (only a verbatim claim is SUPPORTED). Both releases answer alike: 1 answer in
20 invents a fact, 8 paraphrase the context. The baseline was judged by the lenient judge before the switch, the
candidate by the strict one after it: pooled, the candidate's flagged share is 45% against 5% and the gate would roll
it back. Per judge, the releases share no judge: the gate holds and names both. Once the strict judge has judged
baseline answers too, the gate compares the two releases on its counts alone and promotes.
"""

from __future__ import annotations

import json
import math
import re
import time
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client import start_http_server

from claimwatch.embedded import EmbeddedPrometheus, free_port
from claimwatch.gate import HOLD, PROMOTE, ROLLBACK, GateConfig, ReleaseCounts, Source, decide, fetch_counts, run_gate
from contract.record import RagTrace
from dashboards import argo_gen
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.settings import AnthropicSettings
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.messages_server import (
    MessagesServer,
    oracle_responder,
    request_claims,
    request_contexts,
    tool_name,
    tool_response,
)

pytestmark = pytest.mark.integration

CONTEXT = "The Eiffel Tower is 330 metres tall. It was completed in 1889."
ANSWERS = {
    "ok": "The Eiffel Tower is 330 metres tall. It was completed in 1889.",
    "paraphrase": "The Eiffel Tower is 330 metres tall. The tower was finished in 1889.",
    "invented": "The Eiffel Tower is 330 metres tall. It is painted bright green every spring.",
}


def _kind(i: int) -> str:
    """1 in 20 answers invents a fact, 8 in 20 paraphrase the context, the rest quote it."""
    k = i % 20
    return "invented" if k == 0 else "paraphrase" if k <= 8 else "ok"


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def judges_by_model(request: dict) -> dict:
    """``claude-strict``: the substring oracle. ``claude-lenient``: a claim whose words are mostly in a context is
    SUPPORTED (a faithful paraphrase passes)."""
    if request.get("model") != "claude-lenient" or tool_name(request) != "record_verdicts":
        return oracle_responder(request)
    contexts = request_contexts(request)
    verdicts = []
    for cid, text in request_claims(request):
        words = _words(text)
        best = max(range(len(contexts)), key=lambda i: len(words & _words(contexts[i])))
        share = len(words & _words(contexts[best])) / max(1, len(words))
        ok = share >= 0.6
        verdicts.append(
            {
                "claim_id": cid,
                "verdict": "SUPPORTED" if ok else "UNSUPPORTED",
                "evidence": contexts[best][:40] if ok else None,
                "context_index": best if ok else None,
                "confidence": 0.8,
                "reason": "mostly in the context" if ok else "not in the context",
            }
        )
    return tool_response("record_verdicts", {"verdicts": verdicts}, model="claude-lenient")


def _evaluator(srv: MessagesServer, model: str, metrics: WorkerMetrics) -> Evaluator:
    settings = AnthropicSettings(api_key="test", base_url=srv.base_url, model=model, extract_model=model)
    return Evaluator(AnthropicJudge(settings), metrics)


def _judge(evaluator: Evaluator, release: str, start: int, n: int) -> None:
    """Judge answers ``start`` .. ``start + n`` of ``release`` several at a time (as the worker does for an LLM
    judge) and count each one."""

    def one(i: int) -> None:
        trace = RagTrace(
            trace_id=f"{release}-{i:05d}",
            question="How tall is the Eiffel Tower and when was it built?",
            answer=ANSWERS[_kind(i)],
            contexts=[CONTEXT],
            slices={"release": release, "model": "m", "route": "qa", "environment": "prod"},
        )
        evaluator.metrics.observe(evaluator.evaluate(trace))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(start, start + n)))


def _scraped(prom: EmbeddedPrometheus, metrics: WorkerMetrics, judge_id: str, release: str) -> None:
    """Wait until Prometheus holds the worker's current evaluated-answer count of ``release`` under ``judge_id``."""
    want = metrics.registry.get_sample_value(
        "claimwatch_answers_total",
        {"judge_id": judge_id, "release": release, "model": "m", "route": "qa", "environment": "prod"}
        | {"outcome": "evaluated"},
    )
    sel = f'claimwatch_answers_total{{judge_id="{judge_id}", release="{release}", outcome="evaluated"}}'
    deadline = time.monotonic() + 30
    while True:
        url = f"{prom.url}/api/v1/query?" + urllib.parse.urlencode({"query": f"{sel} == {want}"})
        with urllib.request.urlopen(url, timeout=10) as r:
            if b'"result":[{' in r.read():
                return
        assert time.monotonic() < deadline, f"Prometheus never scraped {sel} = {want}"
        time.sleep(0.5)


def _argo(prom: EmbeddedPrometheus, kind: str, window: str, judge: str = ".*") -> list:
    """The Argo analysis query ``kind`` for v1 -> v2 over ``window`` (``judge``: its judge-id arg)."""
    args = {"environment": "prod", "window": window, "min-answers": "50", "alpha": "0.05", "tau": "0.1"}
    args |= {"max-increase": "0.02", "baseline-release": "v1", "candidate-release": "v2", "judge-id": judge}
    url = f"{prom.url}/api/v1/query?" + urllib.parse.urlencode({"query": argo_gen.query(kind, args)})
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())["data"]["result"]


def _pooled(c: ReleaseCounts) -> ReleaseCounts:
    """The same counts with no judge split: what counters without a judge label would give the gate."""
    return ReleaseCounts(answers=c.answers, flagged=c.flagged, contradicted=c.contradicted, claims=c.claims)


@pytest.fixture(scope="module")
def stack():
    if not EmbeddedPrometheus.available():
        pytest.fail("prometheus is not installed (scripts/setup.sh installs it)")
    old, new = WorkerMetrics(), WorkerMetrics()
    servers = []
    targets = []
    for metrics in (old, new):
        port = free_port()
        servers.append(start_http_server(port, addr="127.0.0.1", registry=metrics.registry))
        targets.append(f"127.0.0.1:{port}")
    prom = EmbeddedPrometheus(targets).start()
    try:
        with MessagesServer(judges_by_model) as srv:
            yield prom, srv, old, new
    finally:
        prom.stop()
        for server, thread in servers:
            server.shutdown()
            thread.join(timeout=5)


def test_a_judge_switch_holds_naming_both_judges_and_then_compares_like_with_like(stack):
    """Baseline judged before the switch, candidate after it: HOLD naming both judge ids (pooled counts would roll
    back); once the new judge has judged baseline answers, the gate decides on its counts alone and promotes."""
    prom, srv, old_metrics, new_metrics = stack
    start = time.time()
    lenient = _evaluator(srv, "claude-lenient", old_metrics)
    strict = _evaluator(srv, "claude-strict", new_metrics)
    lenient_id, strict_id = lenient.identity.judge_id, strict.identity.judge_id
    assert lenient_id.startswith("anthropic:claude-lenient@") and strict_id.startswith("anthropic:claude-strict@")

    _judge(lenient, "v1", 0, 100)  # the baseline, before the judge change
    _judge(strict, "v2", 0, 100)  # the candidate, after it
    _scraped(prom, old_metrics, lenient_id, "v1")
    _scraped(prom, new_metrics, strict_id, "v2")
    window = f"{math.ceil(time.time() - start) + 5}s"
    config = GateConfig(min_answers=50)

    base, cand = fetch_counts(Source(prom.url), "v1", window), fetch_counts(Source(prom.url), "v2", window)
    assert set(base.by_judge) == {lenient_id} and set(cand.by_judge) == {strict_id}
    assert base.answers == cand.answers == 100
    assert base.flagged_share == pytest.approx(0.05) and cand.flagged_share == pytest.approx(0.45)
    assert decide(_pooled(base), _pooled(cand), config).action == ROLLBACK  # the false rollback judge ids prevent

    code, report = run_gate(Source(prom.url), "v1", "v2", window=window, config=config, trust_judge=True)
    assert code == 2 and report.splitlines()[0].startswith(f"claimwatch gate: {HOLD.upper()}"), report
    assert lenient_id in report and strict_id in report and "different judges" in report
    assert "0 more" not in report
    # the Argo analysis holds too: no sample (inconclusive point rise, no rollback evidence) over two judges
    assert not _argo(prom, "point", window) and not _argo(prom, "evidence", window)

    _judge(strict, "v1", 100, 100)  # the new judge now judges the baseline's answers too
    _scraped(prom, new_metrics, strict_id, "v1")
    window = f"{math.ceil(time.time() - start) + 5}s"
    base = fetch_counts(Source(prom.url), "v1", window)
    assert base.by_judge[lenient_id].answers == 100 and base.by_judge[strict_id].answers == 100
    code, report = run_gate(Source(prom.url), "v1", "v2", window=window, config=config, trust_judge=True)
    assert code == 0 and report.splitlines()[0].startswith(f"claimwatch gate: {PROMOTE.upper()}"), report
    assert f"decided on judge {strict_id}'s counts only (100 baseline and 100 candidate answers)" in report
    # Argo on the new judge's counts (its judge-id arg): the point rise is 0, within the tolerance
    assert not _argo(prom, "point", window)
    assert float(_argo(prom, "point", window, strict_id)[0]["value"][1]) == pytest.approx(0.0)

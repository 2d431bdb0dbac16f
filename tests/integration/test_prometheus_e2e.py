"""Acceptance: dashboards, rules, alerts and the release gate against a real Prometheus.

One scenario per module (about 40 s): a real broker, the real collector
(``RagTraceProcessor`` with its own registry, served over HTTP) turning
OpenInference spans into records, a real worker (cascade of two ``TagJudge``
so the cascade panels have data too, and a shadow judge beside it so the rollout panels do; ``WorkerMetrics``
served over HTTP) and
a real Prometheus scraping both every second with the project's rule files.

Traffic (environment ``prod`` unless noted, 4 claims per answer, one
UNSUPPORTED claim in every 10th answer):

- ``v1`` baseline, clean: routes faq + billing, model m-a; plus faq in ``staging``
  with two answers whose judge call fails (ERROR claims, judge errors);
- ``v2`` candidate: like v1 on model claude-m-b (the judge's own family: the same-family counter), every other
  answer has a CONTRADICTED claim;
- ``v3`` an equal clean release; ``v4`` a thin release (3 answers);
- faults: two poison records (dead letters), a non-RAG trace, and a second
  app instance whose topic name is misspelt (a real produce error and drop).

Prometheus's ``increase()`` cannot count what a series did before its first
scrape, so every slice first gets one abstained answer (which creates its
verdict series at 0 without counting a claim) and the bulk follows after a scrape.
The two rule groups with ``interval: 1m`` are loaded with ``1s`` (the only
change to the project's rule files) so they evaluate within the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from prometheus_client import CollectorRegistry, start_http_server

from claimwatch.calibration import data_path, load_labeled_claims
from claimwatch.drift import DEFAULT_REFERENCE_RUNS, DriftMetrics, run_drift
from claimwatch.embedded import EmbeddedPrometheus, free_port
from claimwatch.gate import Counts, GateConfig, ReleaseCounts, Source, fetch_counts, run_gate
from collector.config import CollectorSettings
from collector.processor import RagTraceProcessor
from dashboards import catalog
from dashboards.queries import iter_queries
from evaluator_worker.assembly import build_worker
from evaluator_worker.config import CascadeSettings, ParitySettings, ShadowSettings
from evaluator_worker.consistency import ConsistencyTracker
from evaluator_worker.flow import RetryPolicy
from evaluator_worker.judges.cascade import CascadeJudge
from evaluator_worker.metrics import WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.shadow import ShadowJudge
from tests.fakes.judges import StrictTagJudge, TagJudge
from tests.integration.kafka_helpers import create_topic, produce, wait_until, worker_settings

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
RULES_DIR = ROOT / "dashboards" / "rules"
BASELINE, CANDIDATE, EQUAL, THIN = "v1", "v2", "v3", "v4"
MIN_ANSWERS = 20  # gate: evaluated answers each release needs (thin v4 has 3)


@dataclass(frozen=True)
class SliceTraffic:
    """Answers the app serves for one slice."""

    release: str
    environment: str
    route: str
    model: str
    answers: int
    contradicted_every: int = 0  # every n-th answer has one CONTRADICTED claim (0: never)
    failing: int = 0  # extra answers whose judge call fails (ERROR claims)


REPEAT = SliceTraffic("v0.9-consistency", "prod", "faq", "m-a", 2)

TRAFFIC = [
    SliceTraffic(BASELINE, "prod", "faq", "m-a", 40),
    SliceTraffic(BASELINE, "prod", "billing", "m-a", 40),
    SliceTraffic(BASELINE, "staging", "faq", "m-a", 10, failing=2),
    SliceTraffic(CANDIDATE, "prod", "faq", "claude-m-b", 40, contradicted_every=2),
    SliceTraffic(CANDIDATE, "prod", "billing", "claude-m-b", 40, contradicted_every=2),
    SliceTraffic(EQUAL, "prod", "faq", "m-a", 40),
    SliceTraffic(EQUAL, "prod", "billing", "m-a", 40),
    SliceTraffic(THIN, "prod", "faq", "m-a", 3),
]


def answer_text(s: SliceTraffic, i: int) -> str:
    """Four claims; TagJudge reads the [U]/[C] tags as the verdict."""
    b = " [C]" if s.contradicted_every and i % s.contradicted_every == 0 else ""
    d = " [U]" if i % 10 == 0 else ""
    return f"Fact a{i} holds. Fact b{i} holds{b}. Fact c{i} holds. Fact d{i} holds{d}."


# -- the scenario ------------------------------------------------------------------------------


@dataclass
class Stack:
    prom: EmbeddedPrometheus
    worker_metrics: WorkerMetrics
    collector_registry: CollectorRegistry
    expected_records: int
    #: trace ids of the answers the worker judged with at least one CONTRADICTED claim
    contradicted: set = field(default_factory=set)


def _ask(tracer, s: SliceTraffic, question: str, answer: str) -> None:
    """One RAG request instrumented like an OpenInference LangChain app."""
    with tracer.start_as_current_span("RunnableSequence") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", question)
        root.set_attribute("service.version", s.release)
        root.set_attribute("deployment.environment", s.environment)
        root.set_attribute("claimwatch.route", s.route)
        with tracer.start_as_current_span("VectorStoreRetriever") as ret:
            ret.set_attribute("openinference.span.kind", "RETRIEVER")
            ret.set_attribute("input.value", question)
            ret.set_attribute("retrieval.documents.0.document.id", "doc-1")
            ret.set_attribute("retrieval.documents.0.document.content", f"Context for {question}.")
        with tracer.start_as_current_span("ChatModel") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.model_name", s.model)
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", answer)
        root.set_attribute("output.value", answer)


def _collector_settings(bootstrap: str, topic: str) -> CollectorSettings:
    settings = CollectorSettings()
    settings.kafka.bootstrap_servers = bootstrap
    settings.topic = topic
    settings.late_span_wait_s = 0.05
    settings.max_block_ms = 2000
    return settings


def _project_rules(tmp: Path) -> list[str]:
    """The project's rule files, with the 1m group intervals shortened to 1s (nothing else changes)."""
    out = []
    for path in sorted(RULES_DIR.glob("*.yml")):
        text = path.read_text()
        fast = text.replace('interval: "1m"', 'interval: "1s"')
        if path.name == "claimwatch-recording.yml":
            assert text.count('interval: "1m"') == 2, "expected two 1m recording groups"
        target = tmp / path.name
        target.write_text(fast)
        out.append(str(target))
    return out


def _records_processed(metrics: WorkerMetrics) -> float:
    get = metrics.registry.get_sample_value
    return sum(get("claimwatch_records_total", {"outcome": o}) or 0 for o in ("processed", "dead_lettered"))


@pytest.fixture(scope="module")
def stack(kafka_bootstrap, tmp_path_factory):
    """Broker + collector + worker + Prometheus with the scenario's traffic fully scraped and evaluated."""
    if not EmbeddedPrometheus.available():
        pytest.skip("prometheus binary not on PATH (apt-get install prometheus)")
    topic = f"e2e-{uuid.uuid4().hex[:10]}"
    create_topic(kafka_bootstrap, topic, partitions=2)
    servers = []
    try:
        # worker: cascade of two tag judges (every confident claim sampled for agreement)
        wm = WorkerMetrics()
        wport = free_port()
        servers.append(start_http_server(wport, addr="127.0.0.1", registry=wm.registry)[0])
        # the second stage stands for a Claude model: the candidate's claude-m-b answers share its family
        judge = CascadeJudge(TagJudge(), TagJudge(model="claude-tag"), CascadeSettings(agreement_sample=1.0))
        # every 4-claim answer gets the FActScore penalty; TagJudge confidence 0.9 is under the floor
        parity = ParitySettings(min_claims_per_route={"*": 5}, confidence_floor=0.95)
        evaluator = Evaluator(
            judge,
            wm,
            retry=RetryPolicy(max_attempts=1),
            parity=parity,
            consistency=ConsistencyTracker(TagJudge(), threshold=0.99),
        )
        # a shadow judge beside it (every answer, counted apart): the rollout panels have data too
        shadow = ShadowJudge(
            Evaluator(StrictTagJudge(), retry=RetryPolicy(max_attempts=1)),
            ShadowSettings(judge="strict-tag", sample=1.0, results_topic=None, max_queued=10_000),
            wm,
            main_judge_id=evaluator.identity.judge_id,
        )
        worker = build_worker(
            worker_settings(kafka_bootstrap, topic), evaluator=evaluator, shadow=shadow, exporter=None
        )
        contradicted: set[str] = set()
        worker.on_result = lambda r: contradicted.add(r.trace_id) if r.counts.get("CONTRADICTED") else None
        wthread = threading.Thread(target=worker.run, name="e2e-worker", daemon=True)
        wthread.start()

        # collector: its own registry, served like the app would
        creg = CollectorRegistry()
        cport = free_port()
        servers.append(start_http_server(cport, addr="127.0.0.1", registry=creg)[0])
        processor = RagTraceProcessor(_collector_settings(kafka_bootstrap, topic), registry=creg)
        provider = TracerProvider()
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("e2e-rag-app")

        rules = _project_rules(tmp_path_factory.mktemp("rules"))
        # the judge drift canary (claimwatch drift-check), its reference runs and one decided run, served like a
        # Pushgateway would serve them
        dm = DriftMetrics()
        items = load_labeled_claims(data_path("heldout"))[:20]
        drift_state = tmp_path_factory.mktemp("drift")
        for k in range(DEFAULT_REFERENCE_RUNS + 1):
            run_drift(Evaluator(TagJudge()), items, drift_state, metrics=dm, clock=lambda k=k: time.time() - 60 + k)
        dport = free_port()
        servers.append(start_http_server(dport, addr="127.0.0.1", registry=dm.registry)[0])
        targets = [f"127.0.0.1:{wport}", f"127.0.0.1:{cport}", f"127.0.0.1:{dport}"]
        prom = EmbeddedPrometheus(targets, rule_files=rules).start()
        try:
            # Prometheus applies new targets a few seconds after start: wait for a scrape of both
            assert wait_until(lambda: _prom_value(prom.url, "sum(up)") == 3, 30), (
                "Prometheus never scraped every target (worker, collector, drift canary)"
            )
            expected = 0
            # 1. one abstained answer per slice: creates every verdict series at 0, then let Prometheus scrape
            for s in [*TRAFFIC, REPEAT]:
                _ask(tracer, s, f"warm-up {s}", "I don't know.")
                expected += 1
            assert processor.force_flush(10_000)
            assert wait_until(lambda: _records_processed(wm) >= expected, 60), "worker never saw the warm-up answers"
            # the zeros (and the warm-up answers) are in the TSDB before any claim is counted
            assert wait_until(
                lambda: _prom_value(prom.url, 'sum(claimwatch_answers_total{outcome="abstained"})') == len(TRAFFIC) + 1,
                20,
            ), "Prometheus never scraped the warm-up"

            # 2. the bulk
            for s in TRAFFIC:
                for i in range(s.answers):
                    _ask(tracer, s, f"q{i} {s.route}", answer_text(s, i))
                for i in range(s.failing):
                    _ask(tracer, s, f"broken {i}", "The judge breaks here [BOOM].")
                expected += s.answers + s.failing
            # the same question twice, answered the same: a consistency group (its own release, so the
            # per-slice shares of the releases above stay equal)
            for _ in range(2):
                _ask(tracer, REPEAT, "repeat question", "Fact r holds. Fact s holds.")
            expected += 2
            # 3. faults: a trace that is not RAG, poison records, an app instance with a misspelt topic
            with tracer.start_as_current_span("healthcheck"):
                pass
            assert processor.force_flush(10_000)
            produce(
                kafka_bootstrap,
                topic,
                [
                    (b"poison", b"\x00not json at all"),
                    (b"future", json.dumps({"schema_version": 42, "trace_id": "f" * 32, "answer": "x"}).encode()),
                ],
            )
            expected += 2
            misspelt = RagTraceProcessor(_collector_settings(kafka_bootstrap, "claimwatch traces"), registry=creg)
            other_app = TracerProvider()
            other_app.add_span_processor(misspelt)
            _ask(other_app.get_tracer("misconfigured"), TRAFFIC[0], "lost question", "Lost answer.")
            misspelt.force_flush(5_000)
            misspelt.shutdown(2.0)

            assert wait_until(lambda: _records_processed(wm) >= expected, 60), (
                f"worker handled {_records_processed(wm)} of {expected} records"
            )
            # 4. Prometheus has the final counters, and every rule group evaluated them
            final = _records_processed(wm)
            assert wait_until(lambda: _prom_value(prom.url, "sum(claimwatch_records_total)") == final, 20)
            time.sleep(2.5)
            yield Stack(prom, wm, creg, expected, contradicted)
        finally:
            worker.stop()
            wthread.join(20)
            processor.shutdown(2.0)
            prom.stop()
    finally:
        for server in servers:
            server.shutdown()


# -- Prometheus HTTP API -------------------------------------------------------------------------


def _api(url: str, path: str, **params) -> dict:
    full = url + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(full, timeout=10) as resp:
        payload = json.loads(resp.read())
    assert payload["status"] == "success", payload
    return payload["data"]


def _query(url: str, expr: str) -> list[dict]:
    data = _api(url, "/api/v1/query", query=expr)
    assert data["resultType"] == "vector", (expr, data["resultType"])
    return data["result"]


def _prom_value(url: str, expr: str) -> float | None:
    result = _query(url, expr)
    return float(result[0]["value"][1]) if result else None


def _by(url: str, expr: str, label: str) -> dict[str, float]:
    return {r["metric"].get(label, ""): float(r["value"][1]) for r in _query(url, expr)}


def _worker_counts(metrics: WorkerMetrics, family: str, key: str) -> dict[str, float]:
    """Sum of a worker counter's samples grouped by one label, read from its own registry."""
    out: dict[str, float] = defaultdict(float)
    for fam in metrics.registry.collect():
        for sample in fam.samples:
            if sample.name == family:
                out[sample.labels.get(key, "")] += sample.value
    return dict(out)


# -- the tests -----------------------------------------------------------------------------------


def test_catalog_names_and_label_values_match_what_prometheus_scraped(stack):
    """Every catalog metric is scraped from the live worker/collector; every live collector name is catalogued."""
    names = {
        r["metric"]["__name__"] for r in _query(stack.prom.url, 'count by (__name__) ({__name__=~"claimwatch_.+"})')
    }
    names = {n for n in names if not n.endswith("_created")}
    known = catalog.known_series()
    assert known - names == set(), "catalogued but never exported"
    collector_names = {n for n in names if n.startswith("claimwatch_collector_")}
    assert collector_names == catalog.series_names(catalog.COLLECTOR_METRICS)
    for (metric, label), allowed in catalog.LABEL_VALUES.items():
        seen = set(_by(stack.prom.url, f"count by ({label}) ({metric})", label))
        assert seen and seen <= allowed, (metric, label, seen)


def test_every_dashboard_query_runs_and_returns_data(stack):
    """All panel queries (variables = All) execute on the real Prometheus and return at least one sample."""
    empty, errors = [], []
    queries = list(iter_queries())
    assert len(queries) >= 30
    for uid, title, expr in queries:
        try:
            if not _query(stack.prom.url, expr):
                empty.append(f"{uid} / {title}: {expr}")
        except Exception as exc:
            errors.append(f"{uid} / {title}: {exc}")
    assert not errors, "\n".join(errors)
    assert not empty, "queries without data:\n" + "\n".join(empty)


def test_every_recording_rule_has_output_and_every_group_is_healthy(stack):
    """GET /api/v1/rules: every group evaluated without error, and each `record` name has series."""
    groups = _api(stack.prom.url, "/api/v1/rules")["groups"]
    names = {g["name"] for g in groups}
    assert {"claimwatch.recording.5m", "claimwatch.recording.release", "claimwatch.alerts.quality"} <= names
    records = []
    for group in groups:
        for rule in group["rules"]:
            assert rule["health"] == "ok", (group["name"], rule.get("name"), rule.get("lastError"))
            assert not rule.get("lastError"), (group["name"], rule.get("name"), rule["lastError"])
            if rule["type"] == "recording":
                records.append(rule["name"])
    assert len(records) >= 20
    # the level alert's baseline reads what the rules recorded an hour ago: nothing yet in this Prometheus
    history = {r for r in records if r.endswith("_offset1h")}
    assert history == {
        "release_judge_id:claimwatch_answers_flagged:count24h_offset1h",
        "release_judge_id:claimwatch_answers_flagged:ratio_count24h_offset1h",
    }
    missing = [r for r in records if r not in history and not _query(stack.prom.url, r)]
    assert not missing, f"recording rules without output: {missing}"


def test_prometheus_numbers_equal_the_worker_counts(stack):
    """Claims by verdict, answers with unsupported claims and per-release faithfulness match the worker registry."""
    url, wm = stack.prom.url, stack.worker_metrics
    worker_verdicts = _worker_counts(wm, "claimwatch_claims_total", "verdict")
    assert _by(url, "sum by (verdict) (claimwatch_claims_total)", "verdict") == worker_verdicts
    assert worker_verdicts["contradicted"] == 40 and worker_verdicts["error"] == 2
    assert _by(url, "sum by (release) (claimwatch_answers_with_unsupported_total)", "release") == _worker_counts(
        wm, "claimwatch_answers_with_unsupported_total", "release"
    )
    assert _by(url, "sum by (reason) (claimwatch_dead_letters_total)", "reason") == {"not_json": 1, "schema_version": 1}

    by_release: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for fam in wm.registry.collect():
        for sample in fam.samples:
            if sample.name == "claimwatch_claims_total":
                by_release[sample.labels["release"]][sample.labels["verdict"]] += sample.value
    recorded = _by(url, "release_judge_id:claimwatch_claims_supported:ratio_rate5m", "release")
    raw = _by(
        url,
        'sum by (release) (claimwatch_claims_total{verdict="supported"})'
        ' / sum by (release) (claimwatch_claims_total{verdict!="error"})',
        "release",
    )
    assert set(recorded) == {BASELINE, CANDIDATE, EQUAL, THIN, REPEAT.release}
    for release, counts in by_release.items():
        judged = counts["supported"] + counts["unsupported"] + counts["contradicted"]
        expected = counts["supported"] / judged
        assert raw[release] == pytest.approx(expected, abs=1e-12), release
        # rate() scales each slice by its own extrapolation factor; every slice of a release has the same
        # supported share here, so the recorded per-release ratio is the worker's exactly
        assert recorded[release] == pytest.approx(expected, rel=1e-9), release
    assert recorded[CANDIDATE] == pytest.approx(272 / 320, rel=1e-9)  # 40 contradicted, 8 unsupported of 320

    # the gate's exact counts are the worker's, to the answer and the claim (every series was born in the window)
    for release in (BASELINE, CANDIDATE):
        got = fetch_counts(Source(url), release, window="10m")
        answers = {k: v for k, v in _worker_counts_where(wm, "claimwatch_answers_total", release).items()}
        c = by_release[release]
        expected = ReleaseCounts(
            answers=int(answers.get("evaluated", 0)),
            flagged=int(_worker_counts_where(wm, "claimwatch_answers_with_unsupported_total", release).get("", 0)),
            contradicted=int(
                _worker_counts_where(wm, "claimwatch_answers_with_contradicted_total", release).get("", 0)
            ),
            claims=Counts(**{v: int(c[v]) for v in ("supported", "unsupported", "contradicted", "error")}),
        )
        assert got == expected, release


def _worker_counts_where(metrics: WorkerMetrics, family: str, release: str) -> dict[str, float]:
    """A worker counter's samples of one release, summed by outcome ("" for counters without one)."""
    out: dict[str, float] = defaultdict(float)
    for fam in metrics.registry.collect():
        for sample in fam.samples:
            if sample.name == family and sample.labels.get("release") == release:
                out[sample.labels.get("outcome", "")] += sample.value
    return dict(out)


def test_gate_decisions_through_the_api_and_the_cli(stack):
    """run_gate and `python -m claimwatch.cli gate`: contradicted candidate 1, equal release 0, thin release 2."""
    url = stack.prom.url
    cases = [(CANDIDATE, 1, "ROLLBACK"), (EQUAL, 0, "PROMOTE"), (THIN, 2, "HOLD")]
    for candidate, code, word in cases:
        got, report = run_gate(
            Source(url),
            BASELINE,
            candidate,
            window="10m",
            config=GateConfig(min_answers=MIN_ANSWERS),
            trust_judge=True,
        )
        assert got == code, report
        assert word in report.splitlines()[0]
    # the worker exported claimwatch_judge_info{judge="cascade"}: without --trust-judge its rollback is held
    got, report = run_gate(Source(url), BASELINE, CANDIDATE, window="10m", config=GateConfig(min_answers=MIN_ANSWERS))
    assert got == 2 and "HOLD" in report.splitlines()[0], report
    assert "judge cascade: not fit for a rollback decision" in report
    for candidate, code, word in cases:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "claimwatch.cli",
                "gate",
                "--prometheus",
                url,
                "--baseline",
                BASELINE,
                "--candidate",
                candidate,
                "--window",
                "10m",
                "--min-answers",
                str(MIN_ANSWERS),
                "--trust-judge",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == code, out.stdout + out.stderr
        assert word in out.stdout
    # an unreachable Prometheus holds
    assert run_gate(Source(f"http://127.0.0.1:{free_port()}"), BASELINE, CANDIDATE, window="10m")[0] == 2


def _alert_expr(name: str) -> str:
    import yaml

    doc = yaml.safe_load((RULES_DIR / "claimwatch-alerts.yml").read_text())
    return next(r["expr"] for g in doc["groups"] for r in g["rules"] if r.get("alert") == name)


def test_quality_alerts_fire_for_the_faulty_candidate_only(stack):
    """Spike and release-worse alert expressions select v2's series only, and both alerts are pending."""
    url = stack.prom.url
    spike = _query(url, _alert_expr("ClaimwatchContradictedClaimsSpike"))
    assert {(r["metric"]["release"], r["metric"]["route"]) for r in spike} == {
        (CANDIDATE, "faq"),
        (CANDIDATE, "billing"),
    }
    worse = _query(url, _alert_expr("ClaimwatchReleaseWorseThanPrevious"))
    assert {(r["metric"]["release"], r["metric"]["environment"]) for r in worse} == {(CANDIDATE, "prod")}

    def active() -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        for a in _api(url, "/api/v1/alerts")["alerts"]:
            if a["state"] in ("pending", "firing"):
                out[a["labels"]["alertname"]].add(a["labels"].get("release", ""))
        return out

    assert wait_until(
        lambda: {"ClaimwatchContradictedClaimsSpike", "ClaimwatchReleaseWorseThanPrevious"} <= set(active()), 10
    )
    now = active()
    assert now["ClaimwatchContradictedClaimsSpike"] == {CANDIDATE}
    assert now["ClaimwatchReleaseWorseThanPrevious"] == {CANDIDATE}
    assert "ClaimwatchWorkerDown" not in now and "ClaimwatchFaithfulnessDrop" not in now


def test_metrics_doc_examples_are_valid_promql(stack):
    """Every example query in docs/metrics.md is accepted by the real Prometheus."""
    from prometheus_client import CollectorRegistry

    from claimwatch.docgen import metrics as metrics_doc
    from collector.metrics import get_metrics
    from evaluator_worker.metrics import WorkerMetrics

    metrics = metrics_doc._metrics(WorkerMetrics(registry=CollectorRegistry())) + metrics_doc._metrics(
        get_metrics(CollectorRegistry())
    )
    for m in metrics:
        _query(stack.prom.url, metrics_doc.example(m))  # raises unless Prometheus accepts it


def test_contradicted_claims_link_to_the_traces_that_caused_them(stack):
    """Prometheus (exemplar storage on) returns, for the contradicted counter, trace ids of answers judged CONTRADICTED."""
    now = time.time()
    data = _api(
        stack.prom.url,
        "/api/v1/query_exemplars",
        query='claimwatch_claims_total{verdict="contradicted"}',
        start=str(now - 3600),
        end=str(now + 60),
    )
    trace_ids = {e["labels"]["trace_id"] for series in data for e in series["exemplars"]}
    assert trace_ids, "no exemplars stored"
    assert trace_ids <= stack.contradicted, trace_ids - stack.contradicted
    assert all(len(e["labels"].get("span_id", "x" * 16)) == 16 for series in data for e in series["exemplars"])

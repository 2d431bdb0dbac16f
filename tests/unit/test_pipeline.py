"""The Evaluator: judge failures, dropped claims, retries, metrics, never NaN."""

from prometheus_client import generate_latest

from contract.record import RagTrace
from evaluator_worker.flow import RetryPolicy
from evaluator_worker.metrics import SliceGuard, WorkerMetrics
from evaluator_worker.pipeline import Evaluator
from tests.fakes.judges import FlakyJudge, TagJudge


def _trace(answer, **kw):
    return RagTrace(
        trace_id="t" * 32,
        question="q",
        answer=answer,
        contexts=[{"content": "ctx"}],
        slices=kw.pop("slices", {"release": "v1", "route": "faq"}),
        **kw,
    )


def _sample(metrics, name, **labels):
    return metrics.registry.get_sample_value(name, labels) or 0.0


def test_verdicts_are_counted_per_verdict_and_slice():
    """Each claim increments claimwatch_claims_total for its verdict and slice."""
    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    r = ev.evaluate(_trace("Fine. Wrong [C]. Made up [U]. Also fine."))
    ev.metrics.observe(r)
    base = dict(judge_id=ev.identity.judge_id, release="v1", model="unknown", route="faq", environment="unknown")
    assert _sample(m, "claimwatch_claims_total", verdict="supported", **base) == 2
    assert _sample(m, "claimwatch_claims_total", verdict="contradicted", **base) == 1
    assert _sample(m, "claimwatch_claims_total", verdict="unsupported", **base) == 1
    assert _sample(m, "claimwatch_answers_with_contradicted_total", **base) == 1
    assert _sample(m, "claimwatch_answer_faithfulness_ratio_sum", **base) == 0.5


def test_judge_that_drops_a_claim_gets_error_not_inflated_score():
    """A dropped claim is ERROR; faithfulness is over judged claims only and the drop is visible."""
    ev = Evaluator(TagJudge(), WorkerMetrics())
    r = ev.evaluate(_trace("Fine. Silently dropped [DROP]."))
    assert r.counts["ERROR"] == 1 and r.counts["SUPPORTED"] == 1
    assert r.claims[1].verdict.value == "ERROR"


def test_malformed_judge_output_marks_claims_error_and_counts_it():
    """JudgeOutputError -> outcome failed, every claim ERROR, judge error counter moves."""
    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    r = ev.evaluate(_trace("Fine. Broken [BOOM]."))
    ev.metrics.observe(r)
    assert r.outcome == "failed" and r.counts["ERROR"] == 2 and r.counts["SUPPORTED"] == 0
    assert _sample(m, "claimwatch_judge_errors_total", judge="tag", reason="bad_output") == 1


def test_rate_limit_then_success_is_retried_with_backoff():
    """Two 429s then success: verdicts are real, two backoff sleeps happened."""
    sleeps = []
    retry = RetryPolicy(base_s=1.0, jitter=False)
    ev = Evaluator(FlakyJudge(failures=2), WorkerMetrics(), retry=retry, sleep=sleeps.append)
    r = ev.evaluate(_trace("Fine."))
    assert r.outcome == "evaluated" and r.counts["SUPPORTED"] == 1
    assert sleeps == [1.0, 2.0]


def test_persistent_rate_limit_fails_the_answer_without_verdicts():
    """A judge that keeps failing never produces SUPPORTED or CONTRADICTED."""
    ev = Evaluator(FlakyJudge(failures=100), WorkerMetrics(), retry=RetryPolicy(max_attempts=3), sleep=lambda s: None)
    r = ev.evaluate(_trace("Fine. Also fine."))
    assert r.outcome == "failed"
    assert r.counts["SUPPORTED"] == 0 and r.counts["CONTRADICTED"] == 0 and r.counts["ERROR"] == 2


def test_abstention_counts_as_abstained_not_nan():
    """'I don't know' -> outcome abstained, its own counter, no faithfulness observation."""
    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    r = ev.evaluate(_trace("I don't know."))
    ev.metrics.observe(r)
    base = dict(judge_id=ev.identity.judge_id, release="v1", model="unknown", route="faq", environment="unknown")
    assert r.outcome == "abstained"
    assert _sample(m, "claimwatch_answers_total", outcome="abstained", **base) == 1
    assert _sample(m, "claimwatch_answer_faithfulness_ratio_count", **base) == 0
    assert b"NaN" not in generate_latest(m.registry)


def test_slice_values_are_bounded():
    """100k distinct release values create at most max_values_per_label + 'other' series."""
    m = WorkerMetrics(guard=SliceGuard(max_values_per_label=5))
    ev = Evaluator(TagJudge(), m)
    for i in range(100_000):
        m.guard.value("release", f"r{i}")
    r = ev.evaluate(_trace("Fine.", slices={"release": "r99999"}))
    ev.metrics.observe(r)
    releases = {s.labels["release"] for s in m.claims.collect()[0].samples}
    assert releases <= {"r0", "r1", "r2", "r3", "r4", "other"}
    assert "other" in releases


def test_no_text_in_metrics():
    """Claim text, questions and trace ids never appear in the exposition."""
    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    ev.metrics.observe(ev.evaluate(_trace("Secret claim about Zanzibar [C].")))
    body = generate_latest(m.registry).decode()
    assert "Zanzibar" not in body and "t" * 32 not in body


def test_tokens_and_cost_are_exported_per_model():
    """Extraction and verification usage land under their own model labels."""
    from evaluator_worker.judges.base import Extraction, Usage

    class TwoModels(TagJudge):
        name = "two"

        def extract_claims(self, answer, question=None):
            ex = super().extract_claims(answer, question)
            return Extraction(
                ex.claims, Usage(calls=1, input_tokens=50, output_tokens=5, cost_usd=0.0001, model="small")
            )

    m = WorkerMetrics()
    ev = Evaluator(TwoModels(), m)
    r = ev.evaluate(_trace("Fine."))
    ev.metrics.observe(r)
    assert r.usage["calls"] == 2 and r.usage["input_tokens"] == 150
    assert _sample(m, "claimwatch_judge_tokens_total", judge="two", model="small", kind="input") == 50
    assert _sample(m, "claimwatch_judge_tokens_total", judge="two", model="tag-1", kind="input") == 100
    assert _sample(m, "claimwatch_judge_calls_total", judge="two", model="tag-1") == 1


def test_verdicts_carry_their_chunk_id_source_and_an_excerpt():
    """A verdict's context_index brings the chunk's id, source and an excerpt around the evidence; no text when excluded."""
    from contract.record import RagTrace

    long_chunk = "Intro. " * 100 + "ctx evidence here. " + "Outro. " * 100
    t = RagTrace(
        trace_id="b" * 32, answer="Fine.", contexts=[{"content": long_chunk, "id": "doc-7", "source": "kb/a.md"}]
    )
    r = Evaluator(TagJudge(), WorkerMetrics()).evaluate(t)
    (c,) = r.claims
    assert (c.context_index, c.context_id, c.context_source) == (0, "doc-7", "kb/a.md")
    assert c.evidence and c.evidence in long_chunk and len(c.context_excerpt) <= 310
    r2 = Evaluator(TagJudge(), WorkerMetrics(), include_text=False).evaluate(t)
    assert r2.claims[0].context_id == "doc-7" and r2.claims[0].context_excerpt is None


def test_contradicted_and_unsupported_counters_carry_the_trace_as_an_exemplar():
    """The OpenMetrics exposition shows trace_id/span_id exemplars on contradicted and unsupported claims only."""
    from prometheus_client.openmetrics.exposition import generate_latest

    from evaluator_worker.metrics import trace_exemplar

    m = WorkerMetrics()
    ev = Evaluator(TagJudge(), m)
    ev.metrics.observe(ev.evaluate(_trace("Fine. Wrong [C]. Made up [U].")), trace_exemplar("ab" * 16, "cd" * 8))
    text = generate_latest(m.registry).decode()
    lines = [line for line in text.splitlines() if line.startswith("claimwatch_claims_total")]
    with_ex = [line for line in lines if "# {" in line]
    assert len(with_ex) == 2 and all('trace_id="' + "ab" * 16 + '"' in line for line in with_ex)
    assert all('verdict="contradicted"' in line or 'verdict="unsupported"' in line for line in with_ex)
    assert trace_exemplar("x" * 200) is None and trace_exemplar("t" * 100, "s" * 16) == {"trace_id": "t" * 100}

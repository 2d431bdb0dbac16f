"""Smoke tests: every benchmark module runs end to end in a tiny configuration (so they don't rot).

The numbers are not checked against targets here (they depend on the machine);
only that each run completes, measures something and prints its figure last.
"""

from __future__ import annotations

import pytest

from benchmarks import (
    _common,
    app_overhead,
    freshness,
    judge_economy,
    llm_latency,
    memory,
    receiver_load,
    worker_throughput,
)

#: the slow tier: each benchmark runs end to end (scripts/test.sh --fast leaves it out)
pytestmark = pytest.mark.slow


def _last_line(capsys) -> str:
    return capsys.readouterr().out.strip().splitlines()[-1]


def test_percentile_interpolates():
    """percentile() interpolates linearly and handles the edges."""
    assert _common.percentile([1, 2, 3, 4], 50) == 2.5
    assert _common.percentile([5], 99) == 5.0
    assert _common.percentile([0, 10], 90) == 9.0


def test_demo_traces_are_unique_rag_records():
    """demo_traces() yields one record per request, with unique trace ids, an answer and contexts."""
    records = _common.demo_traces(12)
    assert len(records) == 12
    assert len({r.trace_id for r in records}) == 12
    assert all(r.answer and r.contexts for r in records)


def test_judge_economy_tiny(capsys):
    """judge_economy counts calls and tokens for every pipeline through the local Messages API."""
    out = judge_economy.main(["--answers", "4", "--frontier-claims", "20"])
    assert out["claimwatch"]["calls"] > 0 and out["ragas-style"]["prompt"] > 0
    assert out["per-claim"]["calls"] >= out["claimwatch"]["calls"]
    assert "ragas-style" in _last_line(capsys)


def test_ragas_style_prompt_has_ragas_fixed_size():
    """The Ragas-style prompt is exactly the measured fixed size plus the input rendered as indented JSON."""
    inputs = {"question": "q", "answer": "a"}
    prompt = judge_economy.ragas_style_prompt("[m]", "do it", judge_economy.RAGAS_STATEMENT_FIXED_CHARS, inputs)
    import json

    assert len(prompt) == judge_economy.RAGAS_STATEMENT_FIXED_CHARS + len(json.dumps(inputs, indent=4))


@pytest.mark.integration
def test_app_overhead_tiny(capsys):
    """app_overhead measures all variants on RAG and agent traces (with a real broker), the agent line, then the RAG
    on_end ratio last."""
    out = app_overhead.main(["--rounds", "2", "--requests", "10", "--redaction-records", "20"])
    assert out["bsp"]["spans"] == out["claimwatch"]["spans"] == 60
    assert out["ratio_span_end_median"] > 0
    agent = out["agent"]
    assert agent["bsp"]["requests"] == agent["claimwatch"]["requests"] == 4  # 2 rounds x max(2, 10 // 4)
    assert agent["bsp"]["spans"] == agent["claimwatch"]["spans"] >= 4 * 22  # root, 10 x (LLM, TOOL), final LLM
    assert agent["ratio_span_end_median"] > 0 and agent["ratio_request_p99"] > 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-2].startswith("agent traces: on_end ratio claimwatch/bsp (median span end): ")
    assert "processor/BSP p99: request " in lines[-2]
    assert lines[-1].startswith("on_end ratio claimwatch/bsp (median span end): ")


def test_agent_request_shape():
    """agent_request emits an OpenInference agent turn: AGENT root, an LLM asking for each tool, the TOOL span (some
    with a RETRIEVER child), a final LLM whose input messages carry every tool result and whose output is the answer."""
    import random

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    timings: list[int] = []
    assert _common.agent_request(provider.get_tracer("t"), random.Random(3), tool_calls=10, timings=timings) > 0
    spans = exporter.get_finished_spans()
    assert len(timings) == len(spans)
    kinds = [s.attributes["openinference.span.kind"] for s in spans]
    assert kinds[-1] == "AGENT" and spans[-1].parent is None
    assert kinds.count("LLM") == 11 and kinds.count("TOOL") == 10 and kinds.count("RETRIEVER") >= 1
    tools = [s for s in spans if s.attributes["openinference.span.kind"] == "TOOL"]
    steps = [s for s in spans if s.attributes["openinference.span.kind"] == "LLM"][:-1]
    for step, tool in zip(steps, tools):
        call = "llm.output_messages.0.message.tool_calls.0.tool_call."
        assert step.attributes[call + "function.name"] == tool.attributes["tool.name"]
        assert step.attributes[call + "function.arguments"] == tool.attributes["input.value"]
        assert 100 <= len(tool.attributes["output.value"]) <= 1000
    retriever = next(s for s in spans if s.attributes["openinference.span.kind"] == "RETRIEVER")
    assert retriever.parent.span_id in {t.context.span_id for t in tools}
    assert "retrieval.documents.0.document.content" in retriever.attributes
    final = spans[-2].attributes
    roles = [final[f"llm.input_messages.{i}.message.role"] for i in range(22)]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 10
    assert [final[f"llm.input_messages.{2 * i + 3}.message.content"] for i in range(10)] == [
        t.attributes["output.value"] for t in tools
    ]
    assert final["llm.input_messages.3.message.tool_call_id"] == steps[0].attributes[call + "id"]
    assert final["llm.output_messages.0.message.content"] == spans[-1].attributes["output.value"]
    assert all(s.dropped_attributes == 0 for s in spans)  # fits the SDK's default 128-attribute limit


@pytest.mark.integration
def test_worker_throughput_tiny(capsys):
    """worker_throughput runs a real worker process on the broker and reports its rate."""
    out = worker_throughput.main(["--records", "60", "--idle", "1", "--workers", "1"])
    assert out[1]["processed"] == 60 and out[1]["rate"] > 0
    assert _last_line(capsys).startswith("throughput")


@pytest.mark.integration
def test_freshness_and_memory_tiny(capsys):
    """freshness sees every answer on /metrics; memory reports the collector's RSS per phase."""
    fresh = freshness.main(["--duration", "1", "--rate", "10", "--configs", "tuned"])
    assert fresh["tuned"]["seen"] == fresh["tuned"]["sent"] == 10
    mem = memory.main(
        ["--rate", "20", "--normal-seconds", "0.3", "--burst-seconds", "0.3", "--bursts", "2", "--backlog", "0"]
    )  # the worker-process path is the one worker_throughput exercises
    assert len(mem["collector"]["phases"]) == 3 and mem["collector"]["hwm_mb"] > 0
    assert _last_line(capsys).startswith("collector peak RSS")


@pytest.mark.integration
def test_llm_latency_tiny(capsys):
    """llm_latency runs one worker process against the fake Messages API process and reports answers/s and RSS."""
    out = llm_latency.main(["--median", "0.05", "--in-flight", "1", "4", "--per-slot", "3", "--no-burst"])
    rows = out["rows"]
    assert [r["in_flight"] for r in rows] == [1, 4] and all(r["answers"] == 12 and r["rate"] > 0 for r in rows)
    assert all(1.0 <= r["requests_per_answer"] <= 2.0 for r in rows) and rows[0]["rss_mb"] > 0
    assert _last_line(capsys).startswith("default max_in_flight=")


def test_receiver_load_tiny(capsys):
    """receiver_load runs a receiver child, loads it briefly and sends the deep JSON: spans accepted, no reset, 400."""
    receiver_load.main(["--phases", "load,deep", "--seconds", "1", "--clients", "2"])
    out = capsys.readouterr().out
    assert "resets 0" in out and "400: 1" in out
    assert out.strip().splitlines()[-1].startswith("receiver:")


def test_base_choice_tiny(tmp_path, capsys):
    """base_choice fits the frozen-encoder probe, and fine-tunes the base, on a few pairs: a dev AUC per set each."""
    pytest.importorskip("torch")
    import gzip
    import json

    from benchmarks import base_choice

    def write(name: str, rows: list[dict]) -> str:
        path = tmp_path / name
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        return str(path)

    facts = [("The bridge opened in 1932.", "The bridge opened in 1932."), ("Rain fell all day.", "It was sunny.")]
    train = [
        {"set": "a", "claim": c, "label": "SUPPORTED" if i % 2 == 0 else "UNSUPPORTED", "premises": [p + f" ({i})"]}
        for i, (p, c) in enumerate(facts * 4)
    ]
    dev = [
        {"set": s, "claim": c, "label": "SUPPORTED" if i % 2 == 0 else "UNSUPPORTED", "premises": [p]}
        for s in ("a", "b")
        for i, (p, c) in enumerate(facts * 2)
    ]
    paths = ["--pairs", write("train.jsonl.gz", train), "--dev", write("dev.jsonl.gz", dev)]
    out = base_choice.main(paths)
    assert set(out["minilm"]) >= {"a", "b", "mean_auc", "texts_per_s"}
    assert 0.0 <= out["minilm"]["mean_auc"] <= 1.0 and out["minilm"]["texts_per_s"] > 0
    assert _last_line(capsys).startswith("minilm: mean dev AUC")
    tuned = base_choice.main([*paths, "--finetune", "--batch-size", "4", "--max-length", "32"])
    assert set(tuned["minilm"]) >= {"a", "b", "mean_auc", "train_seconds"}
    assert 0.0 <= tuned["minilm"]["mean_auc"] <= 1.0
    assert "fine-tuned" in _last_line(capsys)


def test_judge_speed_pooled_tiny(capsys):
    """judge_speed --pooled scores the same real pairs per answer and pooled, and prints both model times."""
    pytest.importorskip("torch")
    from benchmarks import judge_speed
    from claimwatch import realdata

    try:
        realdata.load_real("expertqa", "dev")
    except realdata.RealDataMissing:
        pytest.skip("data/real not present")
    judge_speed.main(["--answers", "2", "--pooled", "8"])
    out = capsys.readouterr().out
    assert "pooled in batches of 8" in out and '"per_answer_s"' in out

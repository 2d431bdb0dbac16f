"""Receiver bearer tokens and TLS settings: token sources, constant-time checks, 401 counted and logged without it."""

from __future__ import annotations

import http.client
import os
import time

import pytest
from google.rpc import status_pb2
from prometheus_client import CollectorRegistry
from structlog.testing import capture_logs

from collector import auth as auth_mod
from collector.auth import TokenAuth
from collector.config import CollectorSettings
from collector.receiver import OtlpReceiver, ReceiverSettings
from collector.sink import MemorySink
from contract.errors import ConfigError
from tests.unit.test_receiver_limits import request_bytes, requests_count

OLD, NEW = "old-token-0123456789abcdef", "new-token-fedcba9876543210"


def test_token_file_lines_and_env_token_are_all_accepted(tmp_path):
    """A token file (comments, blank lines, two tokens for rotation) plus the env token: each one is accepted."""
    path = tmp_path / "tokens"
    path.write_text(f"# rotation\n{OLD}\n\n{NEW}\n")
    auth = TokenAuth.from_settings("env-token-0123456789abcdef", str(path))
    assert auth.enabled
    for token in (OLD, NEW, "env-token-0123456789abcdef"):
        assert auth.check(f"Bearer {token}") and auth.check(f"bearer  {token} ")
    for header in (None, "", f"Basic {OLD}", "Bearer", f"Bearer {OLD}x", f"Bearer {OLD[:-1]}", OLD):
        assert not auth.check(header), header


def test_no_token_means_no_authentication_and_bad_sources_are_config_errors(tmp_path):
    """No token: every request passes; a short token, a missing or empty file are ConfigErrors at start-up."""
    assert TokenAuth.from_settings(None, None).check(None)
    assert not TokenAuth.from_settings(" ", None).enabled
    with pytest.raises(ConfigError):
        TokenAuth.from_settings("short", None)
    with pytest.raises(ConfigError):
        TokenAuth.from_settings(None, str(tmp_path / "missing"))
    (tmp_path / "empty").write_text("# nothing\n\n")
    with pytest.raises(ConfigError):
        TokenAuth.from_settings(None, str(tmp_path / "empty"))


def test_tls_needs_both_files(tmp_path):
    """A certificate without a key (or the reverse) refuses to start with a ConfigError."""
    (tmp_path / "c.pem").write_text("x")
    with pytest.raises(ConfigError):
        OtlpReceiver(
            ReceiverSettings(tls_cert_file=str(tmp_path / "c.pem")), sink=MemorySink(), registry=CollectorRegistry()
        )


def test_401_without_the_token_is_counted_and_logged_without_it(monkeypatch):
    """Missing or wrong token: 401 + WWW-Authenticate + UNAUTHENTICATED status, counted, logged; the token never logged."""
    monkeypatch.setenv("CLAIMWATCH_RECEIVER_AUTH_TOKEN", NEW)
    receiver = OtlpReceiver(
        ReceiverSettings(host="127.0.0.1", port=0), CollectorSettings(), sink=MemorySink(), registry=CollectorRegistry()
    ).start()
    try:
        with capture_logs() as logs:
            answers = []
            for auth in (None, f"Bearer {OLD}", f"Bearer {NEW}"):
                conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
                headers = {"Content-Type": "application/x-protobuf", **({"Authorization": auth} if auth else {})}
                conn.request("POST", "/v1/traces", body=request_bytes(), headers=headers)
                resp = conn.getresponse()
                answers.append((resp.status, resp.getheader("WWW-Authenticate"), resp.read()))
                conn.close()
        assert [a[0] for a in answers] == [401, 401, 200]
        assert answers[0][1].startswith("Bearer") and status_pb2.Status.FromString(answers[0][2]).code == 16
        assert requests_count(receiver, 401) == 2 and requests_count(receiver, 200) == 1
        refused = [e for e in logs if e.get("reason") == "unauthenticated"]
        assert len(refused) == 2
        assert not any(OLD in str(e) or NEW in str(e) for e in logs)
        assert NEW not in repr(receiver.settings)
    finally:
        receiver.shutdown(0.2)


def _post(receiver: OtlpReceiver, token: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=5)
    try:
        headers = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {token}"}
        conn.request("POST", "/v1/traces", body=request_bytes(), headers=headers)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def _replace(path, text: str) -> None:
    """Write ``text`` to a new file and rename it over ``path`` (atomic, as a Secret volume update)."""
    tmp = path.with_suffix(".new")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_token_file_rotation_takes_effect_while_the_receiver_runs(tmp_path):
    """Token file rotated in place (add new, then remove old): within a second new is accepted and old refused."""
    path = tmp_path / "tokens"
    path.write_text(f"{OLD}\n")
    receiver = OtlpReceiver(
        ReceiverSettings(host="127.0.0.1", port=0, auth_token_file=str(path)),
        CollectorSettings(),
        sink=MemorySink(),
        registry=CollectorRegistry(),
    ).start()
    try:
        assert (_post(receiver, OLD), _post(receiver, NEW)) == (200, 401)
        _replace(path, f"{OLD}\n{NEW}\n")  # step 1: add the new token
        time.sleep(auth_mod.RELOAD_INTERVAL_S + 0.1)
        assert (_post(receiver, OLD), _post(receiver, NEW)) == (200, 200)
        _replace(path, f"# rotated\n{NEW}\n")  # step 3 (clients moved): remove the old one
        time.sleep(auth_mod.RELOAD_INTERVAL_S + 0.1)
        assert (_post(receiver, OLD), _post(receiver, NEW)) == (401, 200)
        assert receiver.auth.reloads == 2
    finally:
        receiver.shutdown(0.2)


def test_unusable_token_file_keeps_the_previous_tokens_with_a_rate_limited_warning(tmp_path):
    """A rotated file that is missing, empty or holds a short token keeps the previous tokens; warned once a minute."""
    now = [0.0]
    path = tmp_path / "tokens"
    path.write_text(f"{OLD}\n")
    auth = TokenAuth.from_settings(None, str(path), clock=lambda: now[0])
    with capture_logs() as logs:
        for bad in (None, "# nothing\n", "short\n"):
            if bad is None:
                path.unlink()
            else:
                _replace(path, bad)
            now[0] += auth_mod.RELOAD_INTERVAL_S
            assert auth.check(f"Bearer {OLD}") and not auth.check(f"Bearer {NEW}")
        _replace(path, f"{NEW}\n")
        assert auth.check(f"Bearer {OLD}")  # checked at most once per interval: not re-read yet
        now[0] += auth_mod.RELOAD_INTERVAL_S
        assert auth.check(f"Bearer {NEW}") and not auth.check(f"Bearer {OLD}")
    warnings = [e for e in logs if e.get("warning") == "receiver_token_file"]
    assert len(warnings) == 1 and warnings[0]["kept_tokens"] == 1  # the next two were suppressed (same minute)
    assert not any(OLD in str(e) or NEW in str(e) for e in logs)

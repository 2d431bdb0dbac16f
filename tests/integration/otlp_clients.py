"""Helpers for the real-client receiver tests: a test CA + server certificate, the Node.js OTel app, a RAG trace.

Not a test module: ``test_js_sdk.py`` and ``test_receiver_grpc.py`` import it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

JS_APP = Path(__file__).resolve().parents[1] / "js" / "otlp-app"
TOKEN = "cw-test-token-0123456789abcdef"


def make_certs(directory: Path) -> dict[str, str]:
    """A CA and a server certificate for 127.0.0.1 / localhost (openssl CLI); paths of ca, cert, key."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl CLI not found: cannot make test certificates")
    ca_key, ca, key, csr, cert = (
        str(directory / n) for n in ("ca.key", "ca.pem", "server.key", "server.csr", "server.pem")
    )
    ext = directory / "ext.cnf"
    ext.write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
    )

    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

    run(
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        ca_key,
        "-out",
        ca,
        "-days",
        "2",
        "-subj",
        "/CN=claimwatch-test-ca",
    )
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    run(
        "x509",
        "-req",
        "-in",
        csr,
        "-CA",
        ca,
        "-CAkey",
        ca_key,
        "-CAcreateserial",
        "-out",
        cert,
        "-days",
        "2",
        "-extfile",
        str(ext),
    )
    return {"ca": ca, "cert": cert, "key": key}


def js_app_ready() -> Path:
    """The Node.js app with its locked dependencies installed (``npm ci --offline``, else ``npm ci``)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        reason = "node/npm not installed: the OTel JS SDK rows need Node.js 18+"
        if os.environ.get("CI"):  # as tests/conformance's need(): CI must run these rows, not skip them
            pytest.fail(f"CI is set and {reason}: install Node.js and npm on the CI machine")
        pytest.skip(f"{reason} (CI has it)")
    if not (JS_APP / "node_modules" / "@opentelemetry" / "exporter-trace-otlp-proto").is_dir():
        for extra in (["--offline"], []):
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", *extra],
                cwd=JS_APP,
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode == 0:
                break
        else:
            raise RuntimeError(f"npm ci failed in {JS_APP}: {done.stderr[-2000:]}")
    return JS_APP


def run_js_app(
    endpoint: str, protocol: str, n: int = 10, token: str = "", ca: str | None = None, docs: int = 2, gzip: bool = False
) -> dict[str, Any]:
    """Run the Node.js app (official OTel JS SDK, OTLP/HTTP ``proto`` or ``json``); its JSON summary line."""
    env = {
        **os.environ,
        "CW_ENDPOINT": endpoint,
        "CW_PROTOCOL": protocol,
        "CW_N": str(n),
        "CW_TOKEN": token,
        "CW_DOCS": str(docs),
        "CW_GZIP": "1" if gzip else "",
    }
    if ca:
        env["NODE_EXTRA_CA_CERTS"] = ca
    done = subprocess.run(["node", "app.js"], cwd=js_app_ready(), env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def js_question(i: int) -> str:
    """The question of the app's request ``i`` (tests/js/otlp-app/app.js)."""
    return f"Question {i}: how long do refunds take for order {i}? (退款 €{i}, Grüße)"


def js_answer(i: int) -> str:
    return f"Refunds for order {i} take {i + 1} days (退款, €{i}, Müller)."


def js_chunks(i: int) -> list[str]:
    return [f"Refunds are paid within {i + 1} days. 退款 {i}", f"A fee of €{i} applies. Grüße"]

"""TLS for the OTLP receiver: the server certificate and key (PEM files), for HTTP and gRPC alike."""

from __future__ import annotations

import ssl
from pathlib import Path

from contract.errors import ConfigError


def check_pair(cert_file: str | None, key_file: str | None) -> bool:
    """True when TLS is on (both files set); ConfigError when only one is set or a file is unreadable."""
    if not cert_file and not key_file:
        return False
    if not (cert_file and key_file):
        raise ConfigError("TLS needs both CLAIMWATCH_RECEIVER_TLS_CERT_FILE and CLAIMWATCH_RECEIVER_TLS_KEY_FILE")
    for path in (cert_file, key_file):
        if not Path(path).is_file():
            raise ConfigError(f"TLS file not found: {path}")
    return True


def server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """An SSL context for the HTTP server (TLS 1.2 or newer)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(cert_file, key_file)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"cannot load the TLS certificate/key: {exc}") from exc
    return ctx


def grpc_credentials(cert_file: str, key_file: str) -> object:
    """``grpc.ssl_server_credentials`` for the gRPC server."""
    import grpc  # type: ignore[import-untyped]

    return grpc.ssl_server_credentials([(Path(key_file).read_bytes(), Path(cert_file).read_bytes())])

"""How both sides reach a Kafka cluster: bootstrap servers, client id, TLS and SASL.

Passed straight through to kafka-python (``client_kwargs``); the collector's producer,
the worker's consumer and producer, and the tools all build their clients from it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, SecretStr


class KafkaConnection(BaseModel):
    """How to reach a Kafka cluster (any: Apache Kafka, Redpanda, MSK, Confluent)."""

    bootstrap_servers: str = "127.0.0.1:9092"
    client_id: str = "claimwatch"
    security_protocol: str = "PLAINTEXT"  # PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl_mechanism: str | None = None  # PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 | OAUTHBEARER
    sasl_plain_username: str | None = None
    sasl_plain_password: SecretStr | None = None
    ssl_cafile: str | None = None
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None
    ssl_check_hostname: bool = True
    request_timeout_ms: int = 30_000

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for kafka-python clients (secrets unwrapped here only)."""
        kw: dict[str, Any] = {
            "bootstrap_servers": [s.strip() for s in self.bootstrap_servers.split(",") if s.strip()],
            "client_id": self.client_id,
            "security_protocol": self.security_protocol,
            "request_timeout_ms": self.request_timeout_ms,
        }
        if self.sasl_mechanism:
            kw["sasl_mechanism"] = self.sasl_mechanism
        if self.sasl_plain_username:
            kw["sasl_plain_username"] = self.sasl_plain_username
        if self.sasl_plain_password is not None:
            kw["sasl_plain_password"] = self.sasl_plain_password.get_secret_value()
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
            value = getattr(self, name)
            if value:
                kw[name] = value
        if self.security_protocol in ("SSL", "SASL_SSL"):
            kw["ssl_check_hostname"] = self.ssl_check_hostname
        return kw

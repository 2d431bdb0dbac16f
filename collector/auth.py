"""Bearer-token authentication of the OTLP receiver (HTTP ``Authorization`` header, gRPC ``authorization`` metadata).

Tokens come from ``CLAIMWATCH_RECEIVER_AUTH_TOKEN`` (one token) and/or ``CLAIMWATCH_RECEIVER_AUTH_TOKEN_FILE``
(one token per line, ``#`` comments and blank lines ignored: several lines let a token be rotated without a gap).
No token configured means no authentication. A presented token is compared with every configured token in
constant time (``hmac.compare_digest``), so neither a match nor a mismatch leaks through timing which token or how
much of it matched. Tokens are never logged.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from contract.errors import ConfigError

#: shortest accepted token (a guessable token is no authentication)
MIN_TOKEN_CHARS = 16


class TokenAuth:
    """The configured bearer tokens; :meth:`check` tells whether a request's credentials are among them."""

    def __init__(self, tokens: list[str]) -> None:
        for token in tokens:
            if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
                raise ConfigError(f"receiver auth tokens need at least {MIN_TOKEN_CHARS} characters and no spaces")
        self._tokens = [t.encode("utf-8") for t in tokens]

    @classmethod
    def from_settings(cls, token: str | None, token_file: str | None) -> "TokenAuth":
        """Tokens from the env value and the file (either may be unset)."""
        tokens = [token.strip()] if token and token.strip() else []
        if token_file:
            try:
                text = Path(token_file).read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot read the receiver token file {token_file}: {exc.strerror}") from exc
            lines = [line.strip() for line in text.splitlines()]
            found = [line for line in lines if line and not line.startswith("#")]
            if not found:
                raise ConfigError(f"the receiver token file {token_file} holds no token")
            tokens += found
        return cls(tokens)

    @property
    def enabled(self) -> bool:
        """Whether requests must carry a token."""
        return bool(self._tokens)

    def check(self, authorization: str | None) -> bool:
        """True when auth is off, or ``authorization`` is ``Bearer <one of the tokens>``."""
        if not self._tokens:
            return True
        if not authorization:
            return False
        scheme, _, presented = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        given = presented.strip().encode("utf-8", "replace")
        matched = False
        for token in self._tokens:  # every token is compared: the time does not depend on which one matched
            matched |= hmac.compare_digest(given, token)
        return matched

"""Bearer-token authentication of the OTLP receiver (HTTP ``Authorization`` header, gRPC ``authorization`` metadata).

Tokens come from ``CLAIMWATCH_RECEIVER_AUTH_TOKEN`` (one token) and/or ``CLAIMWATCH_RECEIVER_AUTH_TOKEN_FILE``
(one token per line, ``#`` comments and blank lines ignored: several lines let a token be rotated without a gap).
No token configured means no authentication. A presented token is compared with every configured token in
constant time (``hmac.compare_digest``), so neither a match nor a mismatch leaks through timing which token or how
much of it matched. Tokens are never logged.

Rotation without a restart: the token file is re-read when it changes (its modification time, size or inode: a
Kubernetes Secret volume swaps a symlink), checked at most once per ``RELOAD_INTERVAL_S`` on the request path (one
``stat``). So: add the new token, move the clients to it, remove the old one; each step takes effect within about a
second (plus the kubelet's Secret sync). A file that cannot be read, or holds no valid token, keeps the previous
tokens and logs a rate-limited warning (``receiver_token_file_unusable``).
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from pathlib import Path
from typing import Callable

from contract.errors import ConfigError
from contract.logs import get_logger
from contract.ratelog import RateLimitedLog

log = get_logger(__name__)

#: shortest accepted token (a guessable token is no authentication)
MIN_TOKEN_CHARS = 16
#: seconds between two checks of the token file for changes
RELOAD_INTERVAL_S = 1.0

_Stamp = tuple[int, int, int]


def _validate(tokens: list[str]) -> None:
    for token in tokens:
        if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
            raise ConfigError(f"receiver auth tokens need at least {MIN_TOKEN_CHARS} characters and no spaces")


def _stamp(path: str) -> _Stamp:
    st = os.stat(path)  # follows symlinks: a swapped Secret volume shows as a new inode / mtime
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _read_tokens(path: str) -> list[str]:
    """The tokens of a token file; OSError when unreadable, ConfigError when it holds no valid token."""
    text = Path(path).read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines()]
    found = [line for line in lines if line and not line.startswith("#")]
    if not found:
        raise ConfigError(f"the receiver token file {path} holds no token")
    _validate(found)
    return found


class TokenAuth:
    """The configured bearer tokens; :meth:`check` tells whether a request's credentials are among them."""

    def __init__(
        self,
        tokens: list[str],
        *,
        token_file: str | None = None,
        file_tokens: list[str] | None = None,
        file_stamp: _Stamp | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``tokens``: fixed tokens (the env token); ``file_tokens``: those read from ``token_file`` (re-read when
        its ``file_stamp``, taken before that read, changes)."""
        _validate(tokens + (file_tokens or []))
        self._fixed = [t.encode("utf-8") for t in tokens]
        self._file = token_file
        self._clock = clock
        self._stamp = file_stamp
        self._tokens = self._fixed + [t.encode("utf-8") for t in file_tokens or []]
        self._next_check = clock() + RELOAD_INTERVAL_S
        self._reloading = threading.Lock()
        self._warn = RateLimitedLog(logger=__name__)
        self.reloads = 0

    @classmethod
    def from_settings(
        cls, token: str | None, token_file: str | None, *, clock: Callable[[], float] = time.monotonic
    ) -> "TokenAuth":
        """Tokens from the env value and the file (either may be unset); the file is re-read when it changes."""
        tokens = [token.strip()] if token and token.strip() else []
        file_tokens: list[str] | None = None
        stamp: _Stamp | None = None
        if token_file:
            try:
                stamp = _stamp(token_file)  # before the read: a change during it is seen at the next check
                file_tokens = _read_tokens(token_file)
            except OSError as exc:
                raise ConfigError(f"cannot read the receiver token file {token_file}: {exc.strerror}") from exc
        return cls(tokens, token_file=token_file or None, file_tokens=file_tokens, file_stamp=stamp, clock=clock)

    @property
    def enabled(self) -> bool:
        """Whether requests must carry a token."""
        return bool(self._tokens)

    def _maybe_reload(self) -> None:
        """Re-read the token file when it changed; at most one ``stat`` per RELOAD_INTERVAL_S, never raises."""
        now = self._clock()
        if self._file is None or now < self._next_check or not self._reloading.acquire(blocking=False):
            return
        try:
            self._next_check = now + RELOAD_INTERVAL_S
            try:
                stamp = _stamp(self._file)
                if stamp == self._stamp:
                    return
                found = _read_tokens(self._file)
            except (OSError, ConfigError, UnicodeDecodeError) as exc:
                detail = exc.strerror if isinstance(exc, OSError) else str(exc)
                self._warn.warn(
                    "receiver_token_file",
                    "receiver_token_file_unusable",
                    path=self._file,
                    error=type(exc).__name__,
                    detail=detail,
                    kept_tokens=len(self._tokens),
                )
                return
            self._stamp = stamp
            self._tokens = self._fixed + [t.encode("utf-8") for t in found]  # one assignment: readers see old or new
            self.reloads += 1
            log.info("receiver_tokens_reloaded", path=self._file, tokens=len(self._tokens))
        finally:
            self._reloading.release()

    def check(self, authorization: str | None) -> bool:
        """True when auth is off, or ``authorization`` is ``Bearer <one of the tokens>``."""
        self._maybe_reload()
        tokens = self._tokens
        if not tokens:
            return True
        if not authorization:
            return False
        scheme, _, presented = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return False
        given = presented.strip().encode("utf-8", "replace")
        matched = False
        for token in tokens:  # every token is compared: the time does not depend on which one matched
            matched |= hmac.compare_digest(given, token)
        return matched

"""The judge id's text form, shared by the worker that writes it and the tools that read it.

``judge_id = kind[:model[+model]]@digest`` (``evaluator_worker.judges.identity`` computes it): the judge's registry
name, the models it calls or runs (verifier model first), and 8 hex characters of a digest of everything that changes
its verdicts. Records and workers from before judge ids carry only the kind: a bare name is read as a kind without
models.
"""

from __future__ import annotations

import functools
import re

__all__ = ["format_judge_id", "judge_kind", "judge_models"]

_ID = re.compile(r"^(?P<kind>[^:@]+)(?::(?P<models>[^@]*))?@(?P<digest>[0-9a-f]+)$")


def format_judge_id(kind: str, models: tuple[str, ...], digest: str) -> str:
    """``kind[:model[+model]]@digest``."""
    model = "+".join(models)
    return f"{kind}{':' + model if model else ''}@{digest}"


def judge_kind(judge_id: str) -> str:
    """The kind of a judge id (``anthropic`` of ``anthropic:claude-x@0b7e41aa``); a name that is not an id is its own
    kind."""
    m = _ID.match(judge_id or "")
    return m.group("kind") if m else (judge_id or "")


@functools.lru_cache(maxsize=256)
def judge_models(judge_id: str) -> tuple[str, ...]:
    """The models named in a judge id (none for a judge without a model, or a bare name); cached: the worker asks for
    every answer it counts, and a worker has one or two judge ids."""
    m = _ID.match(judge_id or "")
    return tuple(x for x in (m.group("models") or "").split("+") if x) if m else ()

"""What a judge's identity is computed from: its fingerprint and the digests of code, files and maps
(:mod:`evaluator_worker.judges.identity` turns them into the ``judge_id``). A leaf module: judges import it for
their ``fingerprint()`` without importing the identity's risk map."""

from __future__ import annotations

import hashlib
import inspect
import json
from dataclasses import asdict, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping, Protocol, runtime_checkable

__all__ = [
    "Fingerprinted",
    "confidence_map_fields",
    "digest",
    "dir_digest",
    "files_digest",
    "fingerprint_of",
    "models_of",
    "source_digest",
]


@runtime_checkable
class Fingerprinted(Protocol):
    """A judge that says what changes its verdicts (JSON-able values; no secrets)."""

    def fingerprint(self) -> Mapping[str, Any]: ...


def _canonical(value: Any) -> Any:
    """``value`` as plain JSON data: dataclasses and pydantic models as dicts, sets sorted, enums by value."""
    if is_dataclass(value) and not isinstance(value, type):
        return _canonical(asdict(value))
    if hasattr(value, "model_dump"):
        return _canonical(value.model_dump(mode="json"))
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(_canonical(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, Enum):
        return _canonical(value.value)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def digest(value: Any) -> str:
    """SHA-256 (hex) of ``value``'s canonical JSON (keys sorted)."""
    text = json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def files_digest(paths: Iterable[Path | str]) -> str:
    """SHA-256 (hex) over the names and bytes of ``paths`` (in sorted name order; missing files named as such)."""
    h = hashlib.sha256()
    for path in sorted(Path(p) for p in paths):
        h.update(path.name.encode("utf-8") + b"\0")
        if not path.is_file():
            h.update(b"<missing>\0")
            continue
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def dir_digest(directory: Path | str, pattern: str = "*") -> str:
    """:func:`files_digest` of the files under ``directory`` matching ``pattern`` (not recursive)."""
    d = Path(directory)
    return files_digest(p for p in d.glob(pattern) if p.is_file()) if d.is_dir() else digest(f"<no dir {d.name}>")


def source_digest(*objects: Any) -> str:
    """SHA-256 (hex) of the source files of the modules or packages ``objects`` live in (a package: all its ``.py``)."""
    files: set[Path] = set()
    for obj in objects:
        module = inspect.getmodule(obj) if not inspect.ismodule(obj) else obj
        source = getattr(module, "__file__", None)
        if not source:
            continue
        path = Path(source)
        if path.name == "__init__.py":
            files.update(path.parent.glob("*.py"))
        else:
            files.add(path)
    return files_digest(files)


def fingerprint_of(judge: Any) -> Mapping[str, Any]:
    """The judge's ``fingerprint()``, else its class and the source of its module (module docstring)."""
    if isinstance(judge, Fingerprinted):
        return judge.fingerprint()
    cls = type(judge)
    return {"class": f"{cls.__module__}.{cls.__qualname__}", "source": source_digest(cls)}


def models_of(judge: Any) -> tuple[str, ...]:
    """The models a judge calls or runs, in the order it names them (``judge.models()``; none when it has none)."""
    models = getattr(judge, "models", None)
    if not callable(models):
        return ()
    return tuple(dict.fromkeys(str(m) for m in models() if m))


def confidence_map_fields(cmap: Any) -> dict[str, Any]:
    """What of a confidence map changes a confidence: its knots (not its metadata)."""
    return {"x": list(getattr(cmap, "x", ())), "y": list(getattr(cmap, "y", ()))}

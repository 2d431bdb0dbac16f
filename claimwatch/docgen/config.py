"""Markdown reference of every ``CLAIMWATCH_*`` setting, generated from the settings models.

``python -m claimwatch.docgen.config`` prints the reference;
``python -m claimwatch.docgen.config --write docs/configuration.md``
replaces the generated block of that file (between :data:`BEGIN_MARKER` and
:data:`END_MARKER`) so the committed docs never drift from the code.

Descriptions come, in order of preference, from ``Field(description=...)``, an
attribute docstring, ``#:`` comments above the field, a trailing ``# ...``
comment on the field's line, and finally :data:`FALLBACK_DESCRIPTIONS` (kept
here so the shared ``config.py`` files stay untouched). Nested models are walked
with the ``__`` delimiter that pydantic-settings uses. Secret fields
(``SecretStr``) are flagged and their values are never printed.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import io
import sys
import textwrap
import tokenize
import types
import typing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from pydantic import BaseModel, SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from collector.config import CollectorSettings
from evaluator_worker.config import WorkerSettings
from evaluator_worker.judges.table import TABLE

BEGIN_MARKER = "<!-- BEGIN GENERATED: python -m claimwatch.docgen.config -->"
END_MARKER = "<!-- END GENERATED -->"
ENV_PREFIX = "CLAIMWATCH_"
NESTED_DELIMITER = "__"

#: descriptions for fields that carry none in code, keyed ``ModelClass.field``
FALLBACK_DESCRIPTIONS: dict[str, str] = {
    "ReceiverSettings.host": "Address the OTLP/HTTP receiver binds.",
    "ReceiverSettings.port": "Port of the OTLP/HTTP receiver (4318 is the OTLP/HTTP default).",
    "ReceiverSettings.path": "Path that accepts trace exports.",
    "BridgeSettings.group_id": "Consumer group of the bridge processes.",
    "BridgeSettings.auto_offset_reset": "Where a new bridge group starts reading the Collector's topic (earliest | latest).",
    "BridgeSettings.session_timeout_ms": "Consumer session timeout; short values make failover fast.",
    "BridgeSettings.heartbeat_interval_ms": "Consumer heartbeat interval (about a third of the session timeout or less).",
    "BridgeSettings.max_poll_interval_ms": "Longest pause between polls before the group evicts the bridge.",
    "BridgeSettings.max_poll_records": "Span batches handled per poll.",
    "BridgeSettings.poll_timeout_ms": "How long one poll waits for messages.",
    "TraceExportSettings.headers": "Extra HTTP headers for the OTLP endpoint (e.g. authorization for a SaaS backend).",
    "TraceExportSettings.service_name": "service.name of the evaluation spans.",
    "TraceExportSettings.timeout_s": "OTLP export timeout in seconds.",
    "TraceExportSettings.max_claim_events": "Per-claim evaluation events per span at most; the rest are counted, not sent.",
    # KafkaConnection
    "KafkaConnection.bootstrap_servers": "Comma-separated `host:port` list of Kafka brokers.",
    "KafkaConnection.client_id": "Kafka client id (shows up in broker logs and quotas).",
    "KafkaConnection.sasl_plain_username": "SASL username (PLAIN and SCRAM mechanisms).",
    "KafkaConnection.sasl_plain_password": "SASL password (PLAIN and SCRAM mechanisms).",
    "KafkaConnection.ssl_cafile": "PEM file of the CA that signed the brokers' certificates.",
    "KafkaConnection.ssl_certfile": "PEM client certificate (mutual TLS).",
    "KafkaConnection.ssl_keyfile": "PEM private key of the client certificate (mutual TLS).",
    "KafkaConnection.ssl_check_hostname": "Verify that the broker certificate matches its host name (SSL, SASL_SSL).",
    "KafkaConnection.request_timeout_ms": "Kafka client request timeout.",
    # ConsumerTuning
    "ConsumerTuning.group_id": "Consumer group shared by all worker replicas; partitions are split among its members.",
    "ConsumerTuning.session_timeout_ms": "A worker that sends no heartbeat for this long leaves the group and its partitions move.",
    "ConsumerTuning.heartbeat_interval_ms": "Heartbeat period (keep it well under the session timeout).",
    "ConsumerTuning.max_poll_interval_ms": "Longest time between polls before the worker is considered stuck; must exceed the slowest judge call on a batch.",
    "ConsumerTuning.max_poll_records": "Records fetched per poll.",
    "ConsumerTuning.auto_offset_reset": "Where a group with no committed offset starts: `earliest` or `latest`.",
    "ConsumerTuning.poll_timeout_ms": "How long one poll waits for records.",
    # AnthropicSettings
    "AnthropicSettings.api_key": "Anthropic API key; when unset the SDK reads `ANTHROPIC_API_KEY`.",
    "AnthropicSettings.base_url": "Override the Anthropic API URL (proxies, gateways, tests).",
    # CascadeSettings
    "CascadeSettings.first": "Cheap first judge (a judge name).",
    "CascadeSettings.second": "Expensive second judge for low-confidence claims (a judge name).",
    # WorkerSettings
    "WorkerSettings.topic": "Input topic of `RagTrace` records.",
    "WorkerSettings.results_topic": "Topic for per-answer results (JSON); `null` (or `none`, `off`) disables it.",
    "WorkerSettings.dead_letter_topic": "Topic for records that cannot be decoded or evaluated, with the reason.",
    "WorkerSettings.judge": "`heuristic`, `anthropic`, `nli`, `cascade`, or `package.module:factory`.",
    "WorkerSettings.nli_model": "Hugging Face id or local directory of the model used by the `nli` judge.",
    "WorkerSettings.metrics_host": "Address the Prometheus metrics server binds to.",
    "WorkerSettings.metrics_port": "Prometheus metrics port (`/metrics`); -1 disables the server.",
    "WorkerSettings.slice_labels": "Slice labels put on quality metrics (JSON list).",
    "WorkerSettings.slice_values": "Allow-list of values per slice label (JSON object); others become `other`.",
    "WorkerSettings.max_values_per_label": "Without an allow-list, distinct values kept per slice label before `other`.",
    "WorkerSettings.dedupe_window": "Trace ids remembered to skip redelivered records.",
    "WorkerSettings.log_level": "`DEBUG`, `INFO`, `WARNING`, `ERROR`.",
    # SamplingSettings
    "SamplingSettings.ratio": "Share of traces kept (deterministic on the trace id).",
    "SamplingSettings.burst": "Token bucket burst size (records).",
    "SamplingSettings.always_keep_errors": "Keep traces with an error status regardless of the ratio.",
    # CollectorSettings
    "CollectorSettings.topic": "Topic the collector produces `RagTrace` records to.",
    "CollectorSettings.release": "Release label of this process (else read from `service.version`).",
    "CollectorSettings.environment": "Environment label of this process (else read from `deployment.environment`).",
    "CollectorSettings.static_slices": "Extra constant slice labels of this process (JSON object).",
    "CollectorSettings.slice_attributes": "Slice name -> span/resource attribute it is read from (JSON object).",
    "CollectorSettings.late_span_wait_s": "Wait after the root span ends for late children.",
    "CollectorSettings.trace_ttl_s": "An incomplete trace is dropped after this long without a new span (idle time: "
    "a long agent turn whose spans keep arriving is kept).",
    "CollectorSettings.max_buffered_traces": "Traces buffered at once; the oldest are evicted past it.",
    "CollectorSettings.max_spans_per_trace": "Spans kept per trace.",
    "CollectorSettings.max_contexts": "Retrieved contexts kept per record.",
    "CollectorSettings.max_text_chars": "Characters kept per text field.",
    "CollectorSettings.max_record_bytes": "Record size limit (stays under Kafka's 1 MB default); contexts are trimmed to fit.",
    "CollectorSettings.queue_max_bytes": "Bytes of serialised records the sink may hold while Kafka is slow or down; past it records are dropped (memory bound).",
    "CollectorSettings.queue_size": "Records queued for the producer thread; past it records are dropped (never blocks the app).",
    "CollectorSettings.acks": "Producer acks: `0`, `1` or `all`.",
    "CollectorSettings.compression_type": "Producer compression: `gzip`, `zstd`, or null.",
    "CollectorSettings.linger_ms": "Producer batching delay.",
    "CollectorSettings.retries": "Producer retries.",
    "CollectorSettings.max_block_ms": "Longest the producer may block on metadata or a full buffer.",
    "CollectorSettings.flush_timeout_s": "Time allowed to deliver buffered records on shutdown.",
    "CollectorSettings.redact_emails": "Mask e-mail addresses before records leave the process.",
    "CollectorSettings.redact_phones": "Mask phone numbers before records leave the process.",
    "CollectorSettings.redact_cards": "Mask payment card numbers before records leave the process.",
    "CollectorSettings.redact_patterns": "Extra regular expressions to mask (JSON list).",
    "CollectorSettings.metrics_port": "Serve the collector's own metrics on this port; null when the app already exposes its registry.",
}


#: the settings classes documented, with the section title
def _extra_settings() -> tuple[tuple[str, type[BaseModel]], ...]:
    from collector.otlp_bridge import BridgeSettings
    from collector.receiver import ReceiverSettings
    from evaluator_worker.trace_export import TraceExportSettings

    return (
        (
            "OTLP receiver (`claimwatch receiver`; Kafka, topic and sampling from the collector's settings)",
            ReceiverSettings,
        ),
        ("Collector-topic bridge (`claimwatch bridge`)", BridgeSettings),
        ("Evaluations back into traces (worker; off until an endpoint is set)", TraceExportSettings),
    )


DOCUMENTED: tuple[tuple[str, type[BaseModel]], ...] = (
    ("Evaluator worker (`claimwatch worker`, `score`, `verify`)", WorkerSettings),
    ("Collector (`RagTraceProcessor` in the RAG app)", CollectorSettings),
    *_extra_settings(),
)


@dataclass(frozen=True)
class SettingDoc:
    """One environment variable: name, type, default (already rendered), description."""

    env: str
    type: str
    default: str
    description: str
    secret: bool
    group: str  # dotted path of the nested model ("" for top level)
    path: tuple[str, ...] = ()  # attribute path from the settings object, e.g. ("kafka", "bootstrap_servers")


# ---------------------------------------------------------------------------
# comments and docstrings from source
# ---------------------------------------------------------------------------


@lru_cache(maxsize=None)
def source_docs(cls: type) -> dict[str, str]:
    """Field name -> description found in the class source (docstring, ``#:`` lines, trailing comment)."""
    try:
        src = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = src.splitlines()
    trailing: dict[int, str] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(src).readline):
            if tok.type == tokenize.COMMENT and not tok.line.lstrip().startswith("#"):
                trailing[tok.start[0]] = tok.string.lstrip("#").strip()
    except (tokenize.TokenError, IndentationError):
        pass
    tree = ast.parse(src)
    node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    if node is None:
        return {}
    docs: dict[str, str] = {}
    body = node.body
    for i, stmt in enumerate(body):
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        nxt = body[i + 1] if i + 1 < len(body) else None
        if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
            docs[name] = inspect.cleandoc(nxt.value.value)
            continue
        above: list[str] = []
        j = stmt.lineno - 2  # 0-based index of the line above
        while j >= 0 and lines[j].strip().startswith("#:"):
            above.insert(0, lines[j].strip()[2:].strip())
            j -= 1
        if above:
            docs[name] = " ".join(above)
        elif stmt.end_lineno in trailing:
            docs[name] = trailing[stmt.end_lineno]
    return docs


def _owner(model: type[BaseModel], name: str) -> type:
    """The class in the MRO that declares field ``name`` (so inherited fields find their comments)."""
    for klass in model.__mro__:
        if name in getattr(klass, "__annotations__", {}):
            return klass
    return model


def _judges() -> str:
    """The judge setting's description, from the judge table (evaluator_worker.judges.table)."""
    choices = "; ".join(f"`{e.name}`: {e.description}" for e in TABLE.values())
    return (
        "The judge, a deliberate choice (no default; `claimwatch worker` refuses to start without one): "
        f"{choices}; or `package.module:factory` for your own (docs/choosing-a-judge.md)"
    )


#: descriptions read from another declaration, ahead of everything else (the judge table names the judges)
DECLARED_DESCRIPTIONS: dict[str, Callable[[], str]] = {"WorkerSettings.judge": _judges}


def describe(model: type[BaseModel], name: str, info: FieldInfo) -> str:
    """Best description of one field (see the module docstring for the order), plus its bounds."""
    owner = _owner(model, name)
    declared = DECLARED_DESCRIPTIONS.get(f"{owner.__name__}.{name}")
    if declared is not None:
        text = declared()
    elif info.description:
        text = " ".join(info.description.split())
    else:
        text = source_docs(owner).get(name) or FALLBACK_DESCRIPTIONS.get(f"{owner.__name__}.{name}", "")
    text = text[:1].upper() + text[1:]
    bounds = constraints(info)
    if bounds:
        text = f"{text} ({bounds})" if text else f"({bounds})"
    return text


_BOUND_SYMBOLS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def constraints(info: FieldInfo) -> str:
    """Numeric bounds declared on a field, e.g. ``>= 0.0, <= 1.0``."""
    parts = []
    for meta in info.metadata:
        for attr, symbol in _BOUND_SYMBOLS:
            value = getattr(meta, attr, None)
            if value is not None:
                parts.append(f"{symbol} {value}")
    return ", ".join(parts)


# ---------------------------------------------------------------------------
# types and defaults
# ---------------------------------------------------------------------------


def _is_optional(annotation: Any) -> tuple[bool, Any]:
    """(True, inner) for ``X | None`` / ``Optional[X]``."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) < len(typing.get_args(annotation)) and len(args) == 1:
            return True, args[0]
    return False, annotation


def type_name(annotation: Any) -> str:
    """Readable type: ``int``, ``str | None``, ``list[str]``, ``secret``..."""
    optional, inner = _is_optional(annotation)
    if inner is SecretStr:
        base = "SecretStr"
    elif typing.get_origin(inner) is not None:
        origin = typing.get_origin(inner)
        args = ", ".join(type_name(a) for a in typing.get_args(inner))
        base = f"{getattr(origin, '__name__', str(origin))}[{args}]"
    elif isinstance(inner, type):
        base = inner.__name__
    else:
        base = str(inner).replace("typing.", "")
    return f"{base} | None" if optional else base


def _contains_secret(annotation: Any) -> bool:
    return _is_optional(annotation)[1] is SecretStr


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    optional, inner = _is_optional(annotation)
    if not optional and isinstance(inner, type) and issubclass(inner, BaseModel):
        return inner
    return None


def render_default(info: FieldInfo, secret: bool) -> str:
    """Default as the env var would spell it (JSON for lists/dicts); secrets never shown."""
    import json

    if info.default_factory is not None:
        value = info.get_default(call_default_factory=True, validated_data={})
    elif info.default is PydanticUndefined:
        return "*required*"
    else:
        value = info.default
    if value is None:
        return "*unset*"
    if secret or isinstance(value, SecretStr):
        return "*(secret, not shown)*"
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (list, dict, tuple)):
        text = json.dumps(value, separators=(",", ":"))
    else:
        text = str(value)
    return f"`{text}`" if text != "" else '`""`'


# ---------------------------------------------------------------------------
# walking and rendering
# ---------------------------------------------------------------------------


def iter_settings(
    model: type[BaseModel], prefix: str = ENV_PREFIX, group: str = "", path: tuple[str, ...] = ()
) -> Iterator[SettingDoc]:
    """Every leaf setting of ``model``, nested models expanded with ``__``."""
    for name, info in model.model_fields.items():
        env = f"{prefix}{(info.alias or name).upper()}"
        nested = _nested_model(info.annotation)
        if nested is not None:
            yield from iter_settings(
                nested, env + NESTED_DELIMITER, f"{group}.{name}" if group else name, (*path, name)
            )
            continue
        secret = _contains_secret(info.annotation)
        yield SettingDoc(
            env=env,
            type=type_name(info.annotation),
            default=render_default(info, secret),
            description=describe(model, name, info),
            secret=secret,
            group=group,
            path=(*path, name),
        )


def _cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("\n", " ").replace("|", "\\|")


def _table(rows: Sequence[SettingDoc]) -> list[str]:
    out = ["| Variable | Type | Default | Description |", "|---|---|---|---|"]
    for r in rows:
        desc = _cell(r.description) or "-"
        if r.secret:
            desc = f"**Secret.** {desc}"
        out.append(f"| `{r.env}` | {_cell(r.type)} | {_cell(r.default)} | {desc} |")
    return out


def env_prefix(model: type[BaseModel]) -> str:
    """The model's own ``env_prefix`` (``CLAIMWATCH_`` unless it says otherwise)."""
    return str(model.model_config.get("env_prefix") or "CLAIMWATCH_")


def render_markdown(documented: Sequence[tuple[str, type[BaseModel]]] = DOCUMENTED) -> str:
    """The whole reference: settings shared by every documented class first, then one section per class."""
    per_class = [(title, list(iter_settings(model, prefix=env_prefix(model)))) for title, model in documented]
    shared: list[SettingDoc] = []
    if len(per_class) > 1:
        # shared between the worker and the collector (the first two sections)
        first, second = per_class[0][1], set(per_class[1][1])
        shared = [r for r in first if r in second]
    shared_set = set(shared)
    lines: list[str] = []
    if shared:
        lines += ["### Shared by the worker and the collector", ""]
        lines += [
            "Both read these variables; set them once when the worker and the collector share an environment.",
            "",
        ]
        lines += _table(shared) + [""]
    for title, rows in per_class:
        own = [r for r in rows if r not in shared_set]
        lines += [f"### {title}", ""]
        groups: dict[str, list[SettingDoc]] = {"": []}
        for r in own:
            groups.setdefault(r.group, []).append(r)
        for group, members in groups.items():
            if not members:
                continue
            if group:
                lines += [f"#### `{group}`", ""]
            lines += _table(members) + [""]
    return "\n".join(lines).rstrip() + "\n"


def replace_generated(document: str, generated: str) -> str:
    """``document`` with the text between the markers replaced by ``generated``."""
    start = document.find(BEGIN_MARKER)
    end = document.find(END_MARKER)
    if start < 0 or end < start:
        raise ValueError(f"markers not found: {BEGIN_MARKER!r} ... {END_MARKER!r}")
    head = document[: start + len(BEGIN_MARKER)]
    return f"{head}\n\n{generated}\n{document[end:]}"


def extract_generated(document: str) -> str:
    """The text between the markers of a document (the inverse of :func:`replace_generated`)."""
    start = document.find(BEGIN_MARKER)
    end = document.find(END_MARKER)
    if start < 0 or end < start:
        raise ValueError(f"markers not found: {BEGIN_MARKER!r} ... {END_MARKER!r}")
    return document[start + len(BEGIN_MARKER) : end].strip("\n") + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reference, or ``--write FILE`` to refresh the generated block of FILE."""
    parser = argparse.ArgumentParser(prog="python -m claimwatch.docgen.config", description=__doc__.split("\n")[0])
    parser.add_argument(
        "--write", metavar="FILE", help="replace the generated block of FILE (e.g. docs/configuration.md)"
    )
    parser.add_argument("--check", metavar="FILE", help="exit 1 when the generated block of FILE is out of date")
    args = parser.parse_args(argv)
    generated = render_markdown()
    if args.write:
        path = Path(args.write)
        path.write_text(replace_generated(path.read_text(encoding="utf-8"), generated), encoding="utf-8")
        return 0
    if args.check:
        current = extract_generated(Path(args.check).read_text(encoding="utf-8"))
        if current != generated:
            print(
                f"{args.check} is out of date: run python -m claimwatch.docgen.config --write {args.check}",
                file=sys.stderr,
            )
            return 1
        return 0
    sys.stdout.write(generated)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())

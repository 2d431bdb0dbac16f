"""``claimwatch audit``: judge a file of answers through Anthropic's Message Batches API, at half price.

For release audits and backfills, where completeness matters more than freshness:
the same prompts and parsing as the online ``anthropic`` judge
(:meth:`ToolWire.extract_request` / ``verify_request`` as ``messages_params``), sent as Message Batches
(50% of the online price, results within 24 h), written like ``claimwatch score``.

Rounds: every round submits one batch with whatever is ready (claim extraction for
answers not extracted yet, verification for answers whose claims are known), waits for
it to end, and folds its results into the state. An item that comes back ``errored``,
``expired`` or ``canceled`` (or with malformed or cut output) is re-submitted in the next
round, up to ``max_attempts``; then that answer's claims are ERROR. Answers are written
as soon as they are complete.

Crash safety (the state file, rewritten atomically after every step):

- a batch is recorded *before* it is created (its custom ids and the creation time) and
  its id right after; a run that died in between adopts the batch it finds on the API
  with exactly that many requests created after that time, so nothing is submitted twice;
- an answer is in the output at most once: written answers are recorded in the state,
  and trace ids already in the output file are not written again;
- nothing is lost: an answer leaves the state only by being written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

from claimwatch.batch import parse_trace_line
from contract.errors import ConfigError
from contract.logs import get_logger
from contract.record import RagTrace
from evaluator_worker.judges import prompts
from evaluator_worker.judges.anthropic import AnthropicJudge, messages_params, tool_input
from evaluator_worker.judges.base import (
    Claim,
    ClaimVerdict,
    HedgePolicy,
    Usage,
    Verdict,
    apply_hedge_policy,
    complete_verdicts,
)
from evaluator_worker.judges.identity import identify
from evaluator_worker.judges.llm import LLMJudge
from evaluator_worker.judges.pricing import cost_usd
from evaluator_worker.judges.risk import risk_map
from evaluator_worker.scoring import AnswerResult, score

log = get_logger(__name__)

#: the judge name on the audit's results (its own row in claimwatch.gate.judge_fitness)
AUDIT_JUDGE = "anthropic-batch"

#: Message Batches are billed at this share of the online price
BATCH_PRICE_FACTOR = 0.5
#: requests per batch (the API allows 100,000 and 256 MB)
MAX_BATCH_REQUESTS = 10_000


@dataclass
class SubmittedBatch:
    """A batch this audit created (or is about to create: ``id`` None until the API answered)."""

    items: list[str]
    created_after: float
    id: str | None = None
    collected: bool = False


@dataclass
class AuditState:
    """Everything needed to resume; JSON on disk."""

    batches: list[SubmittedBatch] = field(default_factory=list)
    #: trace key -> [[claim text, sentence], ...]
    claims: dict[str, list[list[Any]]] = field(default_factory=dict)
    #: trace key -> {claim id: ClaimVerdict as JSON}
    verdicts: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    #: trace key -> why its claims are ERROR (extraction or verification gave up)
    failed: dict[str, str] = field(default_factory=dict)
    #: custom id -> attempts so far
    attempts: dict[str, int] = field(default_factory=dict)
    #: verification custom id -> the claim ids it carries
    parts: dict[str, list[str]] = field(default_factory=dict)
    #: trace key -> Usage as JSON (batch-priced)
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)
    written: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, path: Path) -> AuditState:
        if not path.exists():
            return cls()
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["batches"] = [SubmittedBatch(**b) for b in doc.get("batches", [])]
        return cls(**doc)

    def save(self, path: Path) -> None:
        """Atomically: a crash leaves the previous state or this one, never half of one."""
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(asdict(self), fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)

    def in_flight(self) -> set[str]:
        return {cid for b in self.batches if not b.collected for cid in b.items}


@dataclass
class AuditReport:
    answers: int
    written: int
    rounds: int
    batches: int
    cost_usd: float
    failed: int


def _key(i: int) -> str:
    return f"a{i}"


def _claims(state: AuditState, key: str) -> list[Claim]:
    return [Claim(id=f"c{j}", text=t, sentence=s) for j, (t, s) in enumerate(state.claims.get(key, []), start=1)]


class Audit:
    """One audit of ``traces`` with ``judge``'s prompts through ``client.messages.batches``."""

    def __init__(
        self,
        traces: list[RagTrace],
        judge: LLMJudge,
        client: Any,
        state_path: Path,
        out_path: Path,
        *,
        poll_s: float = 60.0,
        max_attempts: int = 3,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        publish: Callable[[AnswerResult], None] | None = None,
        hedge_policy: HedgePolicy = HedgePolicy.LENIENT,
    ) -> None:
        self.traces = {_key(i): t for i, t in enumerate(traces)}
        self.judge, self.client = judge, client
        self.state_path, self.out_path = state_path, out_path
        self.poll_s, self.max_attempts = poll_s, max_attempts
        self._sleep, self._clock = sleep, clock
        #: also send every written result on (e.g. to the results topic, where `report`/`claims` read it);
        #: it must return only once the result is durable there
        self._publish = publish
        self.state = AuditState.load(state_path)
        self.rounds = 0
        self.hedge_policy = HedgePolicy(hedge_policy)
        #: the online judge's identity when prompts, models, hedge policy and risk map are the same: counts of a
        #: re-judged baseline sample compare like with like with the live judge's (evaluator_worker.judges.identity)
        self.identity = identify(judge, hedge_policy=self.hedge_policy.value, risk=risk_map(AUDIT_JUDGE))

    # -- what is ready to submit ----------------------------------------------------------
    def _pending(self) -> dict[str, dict[str, Any]]:
        """custom id -> Messages params of every item that is ready and not in flight."""
        s, busy = self.state, self.state.in_flight()
        done = set(s.written) | set(s.failed)
        out: dict[str, dict[str, Any]] = {}
        for key, t in self.traces.items():
            if key in done:
                continue
            if key not in s.claims:
                cid = f"{key}-x"
                if cid not in busy:
                    out[cid] = messages_params(self.judge.wire.extract_request(t.answer, t.question))
                continue
            claims = _claims(s, key)
            got = s.verdicts.get(key, {})
            todo = [c for c in claims if c.id not in got]
            size = self.judge.options.max_claims_per_call
            for k in range(0, len(todo), size):
                part = todo[k : k + size]
                cid = f"{key}-v{part[0].id}"
                if cid not in busy:
                    s.parts[cid] = [c.id for c in part]
                    out[cid] = messages_params(
                        self.judge.wire.verify_request(
                            part,
                            [c.content for c in t.contexts],
                            t.question,
                            {c.id: c.id for c in part},
                            repair=cid in s.attempts,
                        )
                    )
        return dict(list(out.items())[:MAX_BATCH_REQUESTS])

    # -- one round -----------------------------------------------------------------------------
    def _submit(self, items: dict[str, dict[str, Any]]) -> SubmittedBatch:
        batch = SubmittedBatch(items=sorted(items), created_after=self._clock())
        self.state.batches.append(batch)
        self.state.save(self.state_path)  # the intent first: a crash now is resolved by _adopt
        created = self.client.messages.batches.create(
            requests=[{"custom_id": cid, "params": items[cid]} for cid in batch.items]
        )
        batch.id = created.id
        self.state.save(self.state_path)
        log.info("audit_batch_created", batch=batch.id, requests=len(batch.items))
        return batch

    def _adopt(self, batch: SubmittedBatch) -> None:
        """A batch recorded without its id (the run died inside create): find it on the API, or drop the intent."""
        for b in self.client.messages.batches.list(limit=100):
            created = getattr(b, "created_at", None)
            ts = created.timestamp() if isinstance(created, datetime) else 0.0
            counts = b.request_counts
            total = counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
            if total == len(batch.items) and ts >= batch.created_after - 5:
                batch.id = b.id
                log.info("audit_batch_adopted", batch=b.id)
                return
        self.state.batches.remove(batch)  # never created: its items are simply pending again
        log.info("audit_batch_intent_dropped", requests=len(batch.items))

    def _wait(self, batch: SubmittedBatch) -> None:
        assert batch.id is not None
        while self.client.messages.batches.retrieve(batch.id).processing_status != "ended":
            self._sleep(self.poll_s)

    def _collect(self, batch: SubmittedBatch) -> None:
        assert batch.id is not None
        seen = set()
        for item in self.client.messages.batches.results(batch.id):
            seen.add(item.custom_id)
            self._fold(item.custom_id, item.result)
        for cid in set(batch.items) - seen:  # not in the results at all: treat as errored
            self._retry_or_fail(cid, "missing from the batch results")
        batch.collected = True
        self.state.save(self.state_path)

    def _fold(self, cid: str, result: Any) -> None:
        key, _, what = cid.partition("-")
        t = self.traces.get(key)
        if t is None:
            return
        if getattr(result, "type", None) != "succeeded":
            self._retry_or_fail(cid, f"batch item {getattr(result, 'type', 'unknown')}")
            return
        message = result.message
        self._charge(key, message)
        if message.stop_reason == "max_tokens":
            self._retry_or_fail(cid, "output cut at max_tokens")
            return
        try:
            if what == "x":
                parsed = self.judge.wire.parse_extract(tool_input(message, prompts.EXTRACT_TOOL_NAME))
                self.state.claims[key] = [list(c) for c in self.judge.wire.extracted_claims(parsed)]
            else:
                by_id = {c.id: c for c in _claims(self.state, key)}
                contexts = [c.content for c in t.contexts]
                got = self.state.verdicts.setdefault(key, {})
                for w in self.judge.wire.parse_verdicts(tool_input(message, prompts.VERIFY_TOOL_NAME)):
                    claim = by_id.get(w.claim_id)
                    if claim is not None and claim.id not in got:
                        got[claim.id] = self.judge.wire.to_verdict(claim, w, contexts).model_dump(mode="json")
                if any(c not in got for c in self.state.parts.get(cid, [])):  # partly answered: the rest go again
                    self._retry_or_fail(cid, "verdicts missing")
        except Exception as exc:  # malformed output (the judge's _Malformed), validation errors
            self._retry_or_fail(cid, f"malformed output: {str(exc)[:120]}")

    def _retry_or_fail(self, cid: str, why: str) -> None:
        """Count an attempt; past ``max_attempts`` the item gives up (its claims, or the answer, become ERROR)."""
        n = self.state.attempts[cid] = self.state.attempts.get(cid, 0) + 1
        if n < self.max_attempts:
            return
        key, _, what = cid.partition("-")
        reason = f"batch audit: {why} after {n} attempts"
        log.warning("audit_item_failed", item=cid, reason=why, attempts=n)
        if what == "x":
            self.state.failed.setdefault(key, reason)
            return
        got = self.state.verdicts.setdefault(key, {})
        for claim_id in self.state.parts.get(cid, []):
            if claim_id not in got:
                got[claim_id] = ClaimVerdict(
                    claim_id=claim_id, verdict=Verdict.ERROR, confidence=0.0, reason=reason
                ).model_dump(mode="json")

    def _charge(self, key: str, message: Any) -> None:
        u = getattr(message, "usage", None)
        inp = int(getattr(u, "input_tokens", 0) or 0)
        out = int(getattr(u, "output_tokens", 0) or 0)
        cr = int(getattr(u, "cache_read_input_tokens", 0) or 0)
        cc = int(getattr(u, "cache_creation_input_tokens", 0) or 0)
        model = str(getattr(message, "model", "") or self.judge.options.model)
        cost = BATCH_PRICE_FACTOR * cost_usd(
            model,
            input_tokens=inp,
            output_tokens=out,
            cache_read_tokens=cr,
            cache_creation_tokens=cc,
            overrides=self.judge.options.prices,
        )
        prev = self.state.usage.get(key) or asdict(Usage(model=model))
        prev.update(
            calls=prev["calls"] + 1,
            input_tokens=prev["input_tokens"] + inp,
            output_tokens=prev["output_tokens"] + out,
            cache_read_tokens=prev["cache_read_tokens"] + cr,
            cache_creation_tokens=prev["cache_creation_tokens"] + cc,
            cost_usd=prev["cost_usd"] + cost,
        )
        self.state.usage[key] = prev

    # -- output ----------------------------------------------------------------------------------
    def _ready(self) -> list[str]:
        s = self.state
        out = []
        for key in self.traces:
            if key in s.written:
                continue
            if key in s.failed or (key in s.claims and all(c.id in s.verdicts.get(key, {}) for c in _claims(s, key))):
                out.append(key)
        return out

    def _result(self, key: str) -> AnswerResult:
        t, s = self.traces[key], self.state
        claims = _claims(s, key) if key in s.claims else [Claim(id="c0", text="")]
        got = {cid: ClaimVerdict.model_validate(v) for cid, v in s.verdicts.get(key, {}).items()}
        verdicts = complete_verdicts(claims, list(got.values()))
        error = s.failed.get(key)
        if error:
            for v in verdicts:
                v.reason = v.reason if v.verdict is not Verdict.ERROR or key in s.claims else error
        usage = Usage(**s.usage[key]) if key in s.usage else Usage()
        return score(
            t.trace_id,
            AUDIT_JUDGE,
            claims,
            apply_hedge_policy(verdicts, self.hedge_policy),
            slices=t.slices,
            question=t.question,
            answer=t.answer,
            usage=usage,
            error=error,
            judge_id=self.identity.judge_id,
        )

    def _write_ready(self) -> None:
        ready = self._ready()
        if not ready:
            return
        already = _trace_ids(self.out_path)
        results = {key: self._result(key) for key in ready}
        with open(self.out_path, "a", encoding="utf-8") as fh:
            for key, result in results.items():
                if self.traces[key].trace_id not in already:
                    fh.write(result.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if self._publish is not None:  # at least once: a crash before the state save publishes again
            for result in results.values():
                self._publish(result)
        self.state.written.extend(ready)
        self.state.save(self.state_path)

    # -- the loop ----------------------------------------------------------------------------------
    def run(self) -> AuditReport:
        """Rounds until every answer is written (resuming whatever the state file holds)."""
        for batch in list(self.state.batches):
            if batch.id is None:
                self._adopt(batch)
        self.state.save(self.state_path)
        while True:
            for batch in self.state.batches:
                if not batch.collected and batch.id is not None:
                    self._wait(batch)
                    self._collect(batch)
            self._write_ready()
            if len(self.state.written) >= len(self.traces):
                break
            pending = self._pending()
            if not pending:  # nothing can move: every remaining answer failed or waits on nothing
                for key in self.traces:
                    if key not in self.state.written and key not in self.state.failed:
                        self.state.failed[key] = "nothing left to submit"
                self._write_ready()
                break
            self.rounds += 1
            self._submit(pending)
        s = self.state
        return AuditReport(
            answers=len(self.traces),
            written=len(s.written),
            rounds=self.rounds,
            batches=len(s.batches),
            cost_usd=sum(u["cost_usd"] for u in s.usage.values()),
            failed=len(s.failed),
        )


def _trace_ids(path: Path) -> set[str]:
    if not path.exists():
        return set()
    ids = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            ids.add(json.loads(line)["trace_id"])
        except (ValueError, KeyError, TypeError):
            continue
    return ids


def traces_from_topic(bootstrap: str | None, topic: str, since: str, max_records: int) -> list[RagTrace]:
    """The RagTrace records of ``topic`` newer than ``since`` (e.g. a window of ``claimwatch.traces``)."""
    from claimwatch.claims_query import open_results, parse_since, read_results

    since_s = parse_since(since)
    consumer, _ = open_results(bootstrap, topic)
    out: dict[str, RagTrace] = {}
    try:
        for value, _ts in read_results(consumer, topic, since_s=since_s, from_offset=None, max_records=max_records):
            try:
                trace = RagTrace.model_validate(value)
            except ValueError:
                continue  # not a RagTrace (the worker dead-letters these; an audit skips them)
            out[trace.trace_id] = trace  # at-least-once topic: one audit per trace id
    finally:
        consumer.close()
    return list(out.values())


def kafka_publisher(bootstrap: str | None, topic: str) -> tuple[Callable[[AnswerResult], None], Callable[[], None]]:
    """(publish, close): each result sent to ``topic`` keyed by trace id, returning once the broker acknowledged it."""
    from kafka import KafkaProducer

    from evaluator_worker.config import WorkerSettings

    settings = WorkerSettings()
    if bootstrap:
        settings.kafka.bootstrap_servers = bootstrap
    producer = KafkaProducer(acks="all", enable_idempotence=False, **settings.kafka.client_kwargs())

    def publish(result: AnswerResult) -> None:
        producer.send(topic, key=result.trace_id.encode(), value=result.model_dump_json().encode()).get(timeout=60)

    return publish, lambda: producer.close(timeout=10)


def load_traces(path: str | Path) -> list[RagTrace]:
    """The input file's answers (``score``'s format); a bad line is a ConfigError naming it (an audit is all or nothing)."""
    out = []
    for lineno, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                out.append(parse_trace_line(line, lineno))
            except ValueError as exc:
                raise ConfigError(f"{path}:{lineno}: {str(exc).splitlines()[0][:200]}") from exc
    return out


def cmd_audit(args: argparse.Namespace) -> int:
    from evaluator_worker.config import WorkerSettings

    settings = WorkerSettings()
    if settings.anthropic.platform != "anthropic":
        raise ConfigError(
            "claimwatch audit uses Anthropic's Message Batches API: CLAIMWATCH_ANTHROPIC__PLATFORM=anthropic"
        )
    judge = AnthropicJudge(settings.anthropic)
    if args.from_topic:
        traces = traces_from_topic(args.bootstrap, args.from_topic, args.since, args.max_records)
    elif args.input:
        traces = load_traces(args.input)
    else:
        raise ConfigError("claimwatch audit needs an input file or --from-topic TOPIC")
    out = Path(args.out)
    state = Path(args.state or f"{args.out}.state.json")
    publish, close = kafka_publisher(args.bootstrap, args.to_topic) if args.to_topic else (None, lambda: None)
    try:
        report = Audit(
            traces,
            judge,
            judge.client,
            state,
            out,
            poll_s=args.poll_s,
            max_attempts=args.max_attempts,
            publish=publish,
            hedge_policy=settings.hedge_policy,
        ).run()
    finally:
        close()
    print(
        f"claimwatch audit: {report.written}/{report.answers} answers written to {out} in {report.rounds} rounds "
        f"({report.batches} batches), ${report.cost_usd:.4f} at batch prices, {report.failed} with ERROR claims",
        file=sys.stderr,
    )
    return 0 if report.written == report.answers else 1


def add_cli(sub: Any) -> None:
    p = sub.add_parser("audit", help="judge a file of answers with Claude via Message Batches (half price, resumable)")
    p.add_argument("input", nargs="?", help="RagTrace JSONL (the format `claimwatch score` reads)")
    p.add_argument("--from-topic", help="audit a window of this topic instead (e.g. claimwatch.traces)")
    p.add_argument("--since", default="24h", help="with --from-topic: records newer than this (30m, 2h, 1d)")
    p.add_argument("--max-records", type=int, default=200_000, help="with --from-topic: read at most this many")
    p.add_argument("--to-topic", help="also publish each result to this topic (e.g. claimwatch.results), acknowledged")
    p.add_argument("--bootstrap", help="Kafka bootstrap servers (default: CLAIMWATCH_KAFKA__BOOTSTRAP_SERVERS)")
    p.add_argument("--out", required=True, help="results JSONL (appended; answers already in it are not rewritten)")
    p.add_argument("--state", help="resume state (default: OUT.state.json); keep it until the audit finishes")
    p.add_argument("--poll-s", type=float, default=60.0, help="seconds between batch status checks")
    p.add_argument("--max-attempts", type=int, default=3, help="submissions per item before its claims are ERROR")
    p.set_defaults(func=cmd_audit)

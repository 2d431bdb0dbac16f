"""One record's path: admitted, judged, written, durable (or a duplicate, a dead letter, abandoned).

- decode + validate; a bad value -> dead-letter write (reason in headers);
- duplicate of a durable result (dedupe window) -> finished, no write; duplicate of an answer
  in flight -> a follower, finished when its leader's result is durable;
- judged -> result write (shrunk to fit the request limit), through the ``ResultWriter``;
- acknowledged -> metrics, dedupe window, trace export, ``on_result``; the offset is finished;
- no single record ends the worker: oversized results are shrunk, oversized keys hashed, a judge
  crash dead-letters its record; only a fatal judge error (401/403) or a ``ConfigError`` stops it,
  without committing past the record and without dead-lettering the backlog.

Runs on the poll loop under the worker's lock, except ``judge`` (on a judging thread).
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from contract.errors import ConfigError, RecordDecodeError
from contract.logs import get_logger
from contract.record import RagTrace
from evaluator_worker.config import WorkerSettings
from evaluator_worker.errors import EvaluationAbandoned, JudgeError
from evaluator_worker.jobs import Halt, Job, JobKind, JobState, JobTable, JudgePool
from evaluator_worker.metrics import trace_exemplar
from evaluator_worker.pipeline import Evaluator
from evaluator_worker.results import DedupeWindow, encode_result, fit_key, fit_value, record_budget
from evaluator_worker.seams import ResultHooks
from evaluator_worker.writer import ResultWriter

log = get_logger("evaluator_worker.consumer")

MAX_DLQ_ERROR_CHARS = 500


class Records:
    """Moves jobs through their states and owns the judge pool; a durable result is reported to ``hooks``."""

    def __init__(
        self,
        settings: WorkerSettings,
        evaluator: Evaluator,
        dedupe: DedupeWindow,
        table: JobTable,
        writer: ResultWriter,
        halt: Halt,
        stop: threading.Event,
        clock: Callable[[], float],
        hooks: ResultHooks,
    ) -> None:
        self.settings = settings
        self.evaluator = evaluator
        self.metrics = evaluator.metrics
        self.dedupe = dedupe
        self.table = table
        self.writer = writer
        self.halt = halt
        self.stop = stop
        self.clock = clock
        self.hooks = hooks
        self.pool: JudgePool | None = None
        self._budget = record_budget(settings.flow.producer_max_request_bytes)

    # -- in ------------------------------------------------------------------------------
    def admit(self, tp: Any, msg: Any, now: float) -> None:
        job = Job(tp, msg, now)
        try:
            self.table.track(job)
        except ValueError:  # a re-delivered offset after a seek we did not see: start the partition over
            self.forget_partition(tp)
            self.table.track(job)
        try:
            if msg.value is None:
                raise RecordDecodeError("record has no value", reason="empty")
            if len(msg.value) > self.settings.max_record_bytes:
                raise RecordDecodeError(
                    f"record of {len(msg.value)} bytes is over max_record_bytes={self.settings.max_record_bytes}",
                    reason="oversized",
                )
            job.trace = RagTrace.from_json_bytes(msg.value)
        except RecordDecodeError as exc:
            self._dead_letter(job, exc.reason, str(exc))
            return
        key = job.trace.record_key  # the trace id, or trace/call for one of several RAG calls in a trace
        if key in self.dedupe:
            self._duplicate(job)
            return
        leader = self.table.leader(key)
        if leader is not None and not leader.abandoned:
            leader.followers.append(job)  # finished when the leader's result is durable
            job.kind, job.state = JobKind.DUPLICATE, JobState.JUDGING
            return
        self._dispatch(job)

    def _dispatch(self, job: Job) -> None:
        assert job.trace is not None and self.pool is not None
        self.table.lead(job)
        job.kind, job.state = JobKind.RESULT, JobState.JUDGING
        self.table.judging += 1
        self.pool.submit(job)

    def judge(self, job: Job) -> None:
        """On a pool thread: evaluate; the poll loop picks the job up from ``done``."""
        assert job.trace is not None
        job.result = self.evaluator.evaluate(job.trace, cancelled=lambda: job.abandoned)

    # -- judged --------------------------------------------------------------------------
    def collect_judged(self) -> None:
        if self.pool is None:
            return
        while True:
            try:
                job = self.pool.done.get_nowait()
            except queue.Empty:
                return
            if job.abandoned or job.state is not JobState.JUDGING:
                continue  # abandoned: already accounted for
            self.table.judging -= 1
            job.state = JobState.JUDGED
            self._judged(job)

    def _judged(self, job: Job) -> None:
        exc = job.error
        if exc is not None:
            if isinstance(exc, EvaluationAbandoned):
                self.abandon(job)
                return
            if isinstance(exc, ConfigError) or (isinstance(exc, JudgeError) and exc.fatal):
                # misconfiguration (no key, bad key, no model): stop without committing past this record,
                # don't dead-letter the backlog
                if self.halt.set(exc):
                    log.error("judge_fatal_stopping", error=str(exc)[:300])
                self.abandon(job)
                return
            # a judge bug must not kill the worker or lose the record
            log.error(
                "worker_evaluation_crashed", trace_id=job.trace.trace_id if job.trace else None, error=repr(exc)[:300]
            )
            self._dead_letter(job, "evaluation_error", repr(exc))
            return
        assert job.result is not None
        if not self.settings.results_topic:
            self.durable(job)
            return
        key, value, headers, dropped = encode_result(job.result, self._budget)
        if dropped:
            log.warning(
                "worker_result_shrunk",
                trace_id=job.result.trace_id[:64],
                dropped=dropped,
                limit=self.settings.flow.producer_max_request_bytes,
            )
            self.metrics.results_shrunk.inc()
        job.topic, job.key, job.value, job.headers = self.settings.results_topic, key, value, headers
        self.writer.send(job)

    def _duplicate(self, job: Job) -> None:
        job.kind = JobKind.DUPLICATE
        self.metrics.records.labels("duplicate").inc()
        log.info("worker_duplicate_skipped", trace_id=job.trace.trace_id if job.trace else None)
        self.table.finish(job)

    def _dead_letter(self, job: Job, reason: str, error: str) -> None:
        msg = job.msg
        log.warning(
            "worker_record_dead_lettered",
            reason=reason,
            topic=msg.topic,
            partition=msg.partition,
            offset=msg.offset,
            error=error[:MAX_DLQ_ERROR_CHARS],
        )
        key, key_headers = fit_key(msg.key)
        headers = [
            ("claimwatch.reason", reason.encode()),
            ("claimwatch.error", error[:MAX_DLQ_ERROR_CHARS].encode("utf-8", "replace")),
            ("claimwatch.source", f"{msg.topic}/{msg.partition}/{msg.offset}".encode()),
            *key_headers,
        ]
        value, value_headers = fit_value(msg.value, self._budget - len(key or b"") - 1_024)
        job.kind, job.topic, job.key = JobKind.DEAD_LETTER, self.settings.dead_letter_topic, key
        job.value, job.headers = value, headers + value_headers
        job.result = job.error = None
        self.metrics.dead_letters.labels(reason).inc()
        self.writer.send(job)

    # -- out -----------------------------------------------------------------------------
    def durable(self, job: Job) -> None:
        """The job's write was acknowledged (or it needed none): count it and free its offset."""
        if job.kind is JobKind.RESULT and job.result is not None:
            result = job.result
            trace = job.trace
            self.metrics.observe(result, trace_exemplar(result.trace_id, trace.root_span_id if trace else None))
            self.dedupe.add(result.record_key)
            hooks = self.hooks
            hooks.processed += 1
            self.metrics.records.labels("processed").inc()
            self.metrics.evaluation_duration.observe(max(0.0, self.clock() - job.admitted))
            if hooks.exporter is not None and job.trace is not None:
                hooks.exporter.export(result, job.trace)
            if hooks.shadow is not None and job.trace is not None:
                hooks.shadow.offer(job.trace, result)  # a sampled share, judged again apart from the counts
            if hooks.on_result is not None:
                try:
                    hooks.on_result(result)
                except Exception as exc:
                    log.warning("worker_on_result_failed", error=str(exc)[:200])
        elif job.kind is JobKind.DEAD_LETTER:
            self.metrics.records.labels("dead_lettered").inc()
        if job.abandoned:
            job.state = JobState.DONE
            return
        self.table.finish(job)
        for f in self.table.unlead(job) or ():
            if not f.abandoned:
                self._duplicate(f)

    def abandon(self, job: Job) -> None:
        """Give the record up uncommitted (stop, revoke, fatal): the next owner replays it."""
        if job.abandoned or job.state is JobState.DONE:
            return
        job.abandoned = True
        if job.state is JobState.JUDGING and job.kind is JobKind.RESULT:
            self.table.judging -= 1
        self.metrics.records.labels("abandoned").inc()
        self.table.discard(job)
        for f in self.table.unlead(job) or ():  # a follower on a partition we still own becomes the leader
            if not f.abandoned and self.table.owns(f.tp) and self.halt.error is None and not self.stop.is_set():
                self._dispatch(f)
            else:
                self.abandon(f)

    def forget_partition(self, tp: Any) -> None:
        for job in self.table.jobs(tp):
            self.abandon(job)
        self.table.drop(tp)

    def abandon_all(self) -> None:
        for job in self.table.all_jobs():
            self.abandon(job)
        self.table.clear()

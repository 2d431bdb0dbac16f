"""Judge economy: LLM calls and tokens per answer, claimwatch's Anthropic judge vs the alternatives.

Everything goes through the real ``anthropic`` client to one local Messages-API
server (``tests/fakes/messages_server.py``: token counts estimated as
``len(text) // 4`` of what each request sends, prompt caching simulated), so
every pipeline's tokens are counted the same way. Pipelines, on the same
demo answers (made by the instrumented demo app through the real collector,
with injected faults):

- ``claimwatch``: ``AnthropicJudge`` (one extraction call + one batched verify call);
- ``single-call``: ``AnthropicJudge`` with ``single_call=True`` (one call that extracts
  the claims and judges them; the contexts are passed to ``extract_claims``);
- ``ragas-style``: one statement-extraction call + one NLI call over the joined
  context, prompts sized like Ragas' faithfulness prompts (see RAGAS_* below);
- ``per-claim``: claimwatch's extraction, then one verify call per claim
  (``AnthropicJudge`` with ``max_claims_per_call=1``: the same prompts, unbatched);
- ``cascade``: ``CascadeJudge(HeuristicJudge(), AnthropicJudge)``: the heuristic
  extracts and judges; only claims it is unsure of go to Claude, batched;
- ``batch-audit``: ``claimwatch audit`` (``claimwatch/audit.py``): the claimwatch prompts sent as
  Message Batches (billed at 50%), on a fresh server so its prompt cache starts as cold as the
  online run's.

Ragas prompt sizes. Ragas renders a prompt as instruction + output JSON schema
+ few-shot examples + the input as indented JSON
(``BasePrompt.to_string``, explodinggradients/ragas
``src/ragas/prompt/metrics/base_prompt.py`` @ 3c16b9ef). Rendering
``StatementGeneratorPrompt`` and ``NLIStatementPrompt``
(``src/ragas/metrics/collections/faithfulness/util.py`` @ 44ca4a24, the
successor of ``src/ragas/metrics/_faithfulness.py``) with an empty input gives
1,568 and 2,825 characters of fixed text. The comparison judge below sends
its own wording padded to exactly those sizes, followed by the real input
rendered the way Ragas renders it (``json`` with ``indent=4``). Older Ragas
versions (``_faithfulness.py`` @ a50d5ee2: three statement examples, two NLI
examples) had larger prompts, so this comparison is, if anything, kind to Ragas.

    python -m benchmarks.judge_economy [--answers 40]

Last line: ``input tokens per answer, claimwatch / ragas-style: X``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import warnings
from typing import Any, Sequence

import anthropic

from benchmarks._common import demo_traces, machine
from contract.logs import configure_logging
from evaluator_worker.config import AnthropicSettings, CascadeSettings
from evaluator_worker.judges import prompts
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Claim, ClaimVerdict, Extraction, JudgeBase, Usage, Verdict, Verification
from evaluator_worker.judges.cascade import CascadeJudge
from evaluator_worker.judges.heuristic import HeuristicJudge
from evaluator_worker.judges.pricing import cost_usd
from tests.fakes.messages_server import (
    MessagesServer,
    oracle_responder,
    request_answer,
    request_claims,
    request_contexts,
    text_response,
    tool_name,
    tool_response,
    user_text,
)

RAGAS_STATEMENT_FIXED_CHARS = 1568
RAGAS_NLI_FIXED_CHARS = 2825
_STATEMENT_MARK = "[ragas-style statement extraction]"
_NLI_MARK = "[ragas-style NLI]"
_INPUT = re.compile(r"\ninput: (\{.*\})\nOutput: $", re.S)
_SUPPORTED_REASON = "Stated verbatim in the context."
_UNSUPPORTED_REASON = "Not found in any context chunk."
_ABSTAIN = re.compile(r"\b(i don't know|i do not know|i cannot answer|i can't answer|no information|not sure)\b", re.I)


# --------------------------------------------------------------------------- the Ragas-style comparison judge


def ragas_style_prompt(mark: str, instruction: str, fixed_chars: int, inputs: dict) -> str:
    """Our own instruction, padded to Ragas' fixed prompt size, then the input as Ragas renders it."""
    tail = "\ninput: " + json.dumps(inputs, indent=4, ensure_ascii=False) + "\nOutput: "
    head = f"{mark} {instruction} Answer in JSON. Worked example follows."
    room = fixed_chars - len("\ninput: ") - len("\nOutput: ")
    filler = " (few-shot example text of the same size as Ragas' examples)"
    while len(head) < room:
        head += filler
    return head[:room] + tail


class RagasStyleJudge(JudgeBase):
    """Ragas' faithfulness shape: one statement-extraction call, one NLI call over the joined context."""

    name = "ragas-style"

    def __init__(self, client: anthropic.Anthropic, extract_model: str, model: str, max_tokens: int = 4096) -> None:
        self.client, self.extract_model, self.model, self.max_tokens = client, extract_model, model, max_tokens

    def _call(self, model: str, prompt: str, usage: Usage) -> dict:
        msg = self.client.messages.create(
            model=model, max_tokens=self.max_tokens, messages=[{"role": "user", "content": prompt}]
        )
        add_usage(usage, model, msg)
        text = "".join(getattr(b, "text", "") for b in msg.content)
        return json.loads(text)

    def extract_claims(self, answer: str, question: str | None = None) -> Extraction:
        usage = Usage(model=self.extract_model)
        prompt = ragas_style_prompt(
            _STATEMENT_MARK,
            "Break every answer sentence into standalone statements without pronouns.",
            RAGAS_STATEMENT_FIXED_CHARS,
            {"question": question or "", "answer": answer},
        )
        out = self._call(self.extract_model, prompt, usage)
        claims = [Claim(id=f"c{i}", text=t) for i, t in enumerate(out.get("statements", []), start=1)]
        return Extraction(claims=claims, usage=usage)

    def verify(self, claims: Sequence[Claim], contexts: Sequence[str], question: str | None = None) -> Verification:
        usage = Usage(model=self.model)
        if not claims:
            return Verification(verdicts=[], usage=usage)
        prompt = ragas_style_prompt(
            _NLI_MARK,
            "For each statement return verdict 1 if the context directly implies it, else 0.",
            RAGAS_NLI_FIXED_CHARS,
            {"context": "\n".join(contexts), "statements": [c.text for c in claims]},
        )
        out = self._call(self.model, prompt, usage)
        verdicts = [
            ClaimVerdict(
                claim_id=c.id,
                verdict=Verdict.SUPPORTED if item.get("verdict") else Verdict.UNSUPPORTED,
                reason=item.get("reason"),
            )
            for c, item in zip(claims, out.get("statements", []))
        ]
        return Verification(verdicts=verdicts, usage=usage)


def single_call_responder(request: dict) -> dict:
    """The substring oracle for the single-call tool: the oracle's extraction, then its verdicts, in one reply."""
    answer, contexts = request_answer(request), request_contexts(request)
    as_extract = {
        "model": request.get("model"),
        "tool_choice": {"type": "tool", "name": prompts.EXTRACT_TOOL_NAME},
        "messages": [{"role": "user", "content": prompts.render_extract_user(answer, None)}],
    }
    extracted = oracle_responder(as_extract)["content"][0]["input"]
    claims = [(f"c{i}", c["text"]) for i, c in enumerate(extracted["claims"], start=1)]
    as_verify = {
        "model": request.get("model"),
        "tool_choice": {"type": "tool", "name": prompts.VERIFY_TOOL_NAME},
        "messages": [{"role": "user", "content": prompts.render_verify_user(claims, contexts, None)}],
    }
    verdicts = oracle_responder(as_verify)["content"][0]["input"]["verdicts"] if claims else []
    items = []
    for c, v in zip(extracted["claims"], verdicts):
        items.append(
            {
                "text": c["text"],
                "sentence": c.get("sentence"),
                **{k: v[k] for k in ("verdict", "evidence", "context_index", "confidence", "reason")},
            }
        )
    return tool_response(
        prompts.SINGLE_TOOL_NAME,
        {"claims": items, "abstained": extracted["abstained"]},
        model=request.get("model", "fake-model"),
    )


def economy_responder(request: dict) -> dict:
    """The server's oracle for claimwatch's tool calls, and the same oracle in Ragas' JSON shapes."""
    if tool_name(request) in ("record_claims", "record_verdicts"):
        return oracle_responder(request)
    if tool_name(request) == prompts.SINGLE_TOOL_NAME:
        return single_call_responder(request)
    text = user_text(request)
    m = _INPUT.search(text)
    data = json.loads(m.group(1)) if m else {}
    if text.startswith(_STATEMENT_MARK):
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", data.get("answer", "").strip()) if s]
        statements = [s for s in sentences if not _ABSTAIN.search(s)]
        return text_response(json.dumps({"statements": statements}))
    if text.startswith(_NLI_MARK):
        ctx = data.get("context", "").lower()
        items = []
        for s in data.get("statements", []):
            hit = s.strip().rstrip(".").lower() in ctx
            items.append(
                {"statement": s, "reason": _SUPPORTED_REASON if hit else _UNSUPPORTED_REASON, "verdict": int(hit)}
            )
        return text_response(json.dumps({"statements": items}))
    return text_response("ok")


def add_usage(usage: Usage, model: str, message: Any) -> None:
    """Account one response's usage the way AnthropicJudge does."""
    u = message.usage
    inp, out = int(u.input_tokens or 0), int(u.output_tokens or 0)
    cr, cc = int(u.cache_read_input_tokens or 0), int(u.cache_creation_input_tokens or 0)
    usage.calls += 1
    usage.input_tokens += inp
    usage.output_tokens += out
    usage.cache_read_tokens += cr
    usage.cache_creation_tokens += cc
    usage.cost_usd += cost_usd(
        model, input_tokens=inp, output_tokens=out, cache_read_tokens=cr, cache_creation_tokens=cc
    )


# --------------------------------------------------------------------------- running


def run_pipeline(judge: Any, traces: list) -> dict:
    """Extract + verify every answer; totals of calls and tokens, claims judged."""
    total = Usage()
    claims_n = answers = 0
    for t in traces:
        contexts = [c.content for c in t.contexts]
        single = getattr(judge, "extract_sees_contexts", False)
        if single and hasattr(judge, "extract_and_verify"):  # one step: claims and verdicts
            ex, ver = judge.extract_and_verify(t.answer, t.question, contexts)
            total = total + ex.usage + ver.usage
        else:
            ex = (
                judge.extract_claims(t.answer, t.question, contexts=contexts)
                if single
                else judge.extract_claims(t.answer, t.question)
            )
            total = total + ex.usage
            if ex.claims:
                ver = judge.verify(ex.claims, contexts, t.question)
                total = total + ver.usage
        claims_n += len(ex.claims)
        answers += 1
    prompt = total.input_tokens + total.cache_read_tokens + total.cache_creation_tokens
    return {
        "answers": answers,
        "claims": claims_n,
        "calls": total.calls / answers,
        "full_price": (total.input_tokens + total.cache_creation_tokens) / answers,
        "input": total.input_tokens / answers,
        "prompt": prompt / answers,
        "cache_read": total.cache_read_tokens / answers,
        "output": total.output_tokens / answers,
        "cost_usd": total.cost_usd / answers,
    }


def run_batch_audit(traces: list) -> dict:
    """The same answers through ``claimwatch audit`` (Message Batches), on a fresh fake server."""
    import tempfile
    from pathlib import Path

    from claimwatch.audit import Audit

    with MessagesServer(economy_responder) as srv, tempfile.TemporaryDirectory() as tmp:
        judge = AnthropicJudge(AnthropicSettings(api_key="bench", base_url=srv.base_url, max_retries=0))
        report = Audit(
            list(traces), judge, judge.client, Path(tmp) / "state.json", Path(tmp) / "out.jsonl", poll_s=0.01
        ).run()
        rows = [json.loads(line) for line in (Path(tmp) / "out.jsonl").read_text().splitlines()]
    calls = sum(r["usage"].get("calls", 0) for r in rows if r.get("usage"))
    return {
        "answers": len(rows),
        "rounds": report.rounds,
        "calls": calls / len(rows),
        "cost_usd": report.cost_usd / len(rows),
    }


CASCADE_POLICIES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("raw confidence, escalate_below 0.8", "none", {"escalate_below": 0.8}),
    ("calibrated, escalate_below 0.8", "shipped", {"escalate_below": 0.8}),
    ("calibrated, escalate_share 0.1", "shipped", {"escalate_share": 0.1}),
    ("calibrated, escalate_share 0.2", "shipped", {"escalate_share": 0.2}),
    ("calibrated, escalate_share 0.3", "shipped", {"escalate_share": 0.3}),
    ("calibrated, escalate_share 0.5", "shipped", {"escalate_share": 0.5}),
)


def gold_responder(gold: dict[str, str]) -> Any:
    """A second judge that answers each claim's labelled verdict: the cascade's upper bound (Claude assumed
    right on every escalated claim), so what is measured is the first stage's routing, not Claude."""

    def respond(request: dict) -> dict:
        if tool_name(request) != prompts.VERIFY_TOOL_NAME:
            return oracle_responder(request)
        contexts = request_contexts(request)
        verdicts = [
            {
                "claim_id": cid,
                "verdict": gold.get(text.strip(), "UNSUPPORTED"),
                "evidence": contexts[0][:60] if contexts else None,
                "context_index": 0 if contexts else None,
                "confidence": 0.9,
                "reason": "labelled verdict",
            }
            for cid, text in request_claims(request)
        ]
        return tool_response(prompts.VERIFY_TOOL_NAME, {"verdicts": verdicts}, model=request.get("model", "fake-model"))

    return respond


def cascade_frontier(
    split: str = "dev", first_name: str = "heuristic", limit: int | None = None
) -> list[dict[str, Any]]:
    """Per escalation policy, on labelled claims: the share escalated, the share of the first stage's wrong
    verdicts that were escalated (what Claude gets a chance to fix), the first stage's accuracy on the claims
    it kept, and Claude's cost per 1,000 claims."""
    from claimwatch import calibration as cal
    from evaluator_worker.judges.registry import get_judge
    from evaluator_worker.judges.settings import JudgeSettings

    items = cal.load_labeled_claims(cal.data_path(split))[:limit]
    gold = {it.claim.strip(): it.label for it in items}
    rows = []
    with MessagesServer(gold_responder(gold)) as srv:
        settings = AnthropicSettings(api_key="bench", base_url=srv.base_url, max_retries=0)
        for name, mode, knobs in CASCADE_POLICIES:
            first = get_judge(first_name, JudgeSettings(confidence_calibration=mode))
            cascade = CascadeJudge(
                first, AnthropicJudge(settings), CascadeSettings(budget_usd_per_hour=1e9, agreement_sample=0.0, **knobs)
            )
            wrong = caught = escalated = kept_right = 0
            cost = 0.0
            for it in items:
                claim = Claim(id="c1", text=it.claim)
                first_verdict = first.verify([claim], list(it.context)).verdicts[0].verdict.value
                before = cascade.stats["second"]
                out = cascade.verify([claim], list(it.context))
                went = cascade.stats["second"] > before
                escalated += went
                cost += out.usage.cost_usd
                kept_right += not went and first_verdict == it.label
                if first_verdict != it.label:
                    wrong += 1
                    caught += went
            kept = len(items) - escalated
            rows.append(
                {
                    "policy": name,
                    "first": first_name,
                    "claims": len(items),
                    "escalated": escalated / len(items),
                    "first_errors": wrong,
                    "errors_caught": caught / wrong if wrong else None,
                    "kept_accuracy": kept_right / kept if kept else None,
                    "usd_per_1k_claims": cost / len(items) * 1000,
                }
            )
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--answers", type=int, default=40)
    ap.add_argument("--fault-rate", type=float, default=0.3)
    ap.add_argument(
        "--labelled", default="dev", help="labelled claims for the cascade frontier (dev; heldout once per version)"
    )
    ap.add_argument(
        "--frontier-claims", type=int, default=None, help="the first N labelled claims only (default: all; a smoke run)"
    )
    ap.add_argument(
        "--frontier-first",
        default="heuristic",
        help="first-stage judges for the cascade frontier, comma-separated (e.g. heuristic,offline)",
    )
    args = ap.parse_args(argv)
    configure_logging("ERROR")
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # model deprecation notices from the SDK
    started = time.monotonic()
    traces = demo_traces(args.answers, fault_rate=args.fault_rate)
    out: dict = {}
    names = ("claimwatch", "single-call", "ragas-style", "per-claim", "cascade")
    with MessagesServer(economy_responder) as srv:
        settings = AnthropicSettings(api_key="bench", base_url=srv.base_url, max_retries=0)
        client = anthropic.Anthropic(api_key="bench", base_url=srv.base_url, max_retries=0)
        per_claim = settings.model_copy(update={"max_claims_per_call": 1})
        single = settings.model_copy(update={"single_call": True})
        cascade = CascadeJudge(HeuristicJudge(), AnthropicJudge(settings), CascadeSettings(budget_usd_per_hour=1e9))
        pipelines = {
            "claimwatch": AnthropicJudge(settings),
            "single-call": AnthropicJudge(single),
            "ragas-style": RagasStyleJudge(client, settings.extract_model, settings.model),
            "per-claim": AnthropicJudge(per_claim),
            "cascade": cascade,
        }
        for name, judge in pipelines.items():
            out[name] = run_pipeline(judge, traces)
        st = cascade.stats
        judged = st["first"] + st["second"] + st["first_over_budget"] + st["first_fallback"]
        out["cascade_escalated_share"] = st["second"] / judged if judged else 0.0
        out["cascade_stats"] = dict(st)
    out["batch-audit"] = run_batch_audit(traces)
    cw, sc, rg, pc, cs = (out[k] for k in names)
    out["batch_cost_ratio"] = out["batch-audit"]["cost_usd"] / cw["cost_usd"]
    out["input_ratio_vs_ragas"] = cw["prompt"] / rg["prompt"]
    out["uncached_ratio_vs_ragas"] = cw["input"] / rg["input"]
    out["single_ratio_vs_ragas"] = sc["prompt"] / rg["prompt"]
    out["single_full_price_ratio_vs_ragas"] = sc["full_price"] / rg["full_price"]
    out["cascade_tokens_saved"] = 1 - (cs["prompt"] + cs["output"]) / (cw["prompt"] + cw["output"])
    print(
        f"machine: {machine()}; {len(traces)} demo answers (fault rate {args.fault_rate}), tokens = len/4 of what "
        f"is sent, {time.monotonic() - started:.0f} s"
    )
    print(
        "per answer; prompt = all input tokens; uncached = billed at full price; cache wr = billed at 1.25x; "
        "cache rd = billed at 0.1x"
    )
    print(
        f"{'pipeline':12} {'claims/ans':>10} {'calls/ans':>9} {'prompt tok':>10} {'uncached':>9} {'cache wr':>9} "
        f"{'cache rd':>9} {'output':>7} {'USD/1k ans':>10}"
    )
    for name in names:
        r = out[name]
        wr = r["full_price"] - r["input"]
        print(
            f"{name:12} {r['claims'] / r['answers']:10.2f} {r['calls']:9.2f} {r['prompt']:10.0f} {r['input']:9.0f} "
            f"{wr:9.0f} {r['cache_read']:9.0f} {r['output']:7.0f} {r['cost_usd'] * 1000:10.2f}"
        )
    print(
        f"claimwatch (two calls) vs ragas-style: prompt tokens x{out['input_ratio_vs_ragas']:.2f}, uncached (billed "
        f"at full price) x{out['uncached_ratio_vs_ragas']:.2f}, cost x{cw['cost_usd'] / rg['cost_usd']:.2f}; "
        f"vs per-claim: calls x{cw['calls'] / pc['calls']:.2f}, prompt tokens x{cw['prompt'] / pc['prompt']:.2f}"
    )
    print(
        f"single-call vs ragas-style: calls x{sc['calls'] / rg['calls']:.2f}, prompt tokens "
        f"x{out['single_ratio_vs_ragas']:.2f}, billed at full price (incl. cache writes) "
        f"x{out['single_full_price_ratio_vs_ragas']:.2f}, output x{sc['output'] / rg['output']:.2f}, "
        f"cost x{sc['cost_usd'] / rg['cost_usd']:.2f}; vs per-claim: calls x{sc['calls'] / pc['calls']:.2f}, "
        f"prompt tokens x{sc['prompt'] / pc['prompt']:.2f}"
    )
    print(
        f"cascade: {out['cascade_escalated_share']:.0%} of claims escalated to Claude ({out['cascade_stats']}); "
        f"tokens saved vs claimwatch alone {out['cascade_tokens_saved']:.0%}, cost x{cs['cost_usd'] / cw['cost_usd']:.2f}"
    )
    out["cascade_frontier"] = [
        row
        for first in args.frontier_first.split(",")
        for row in cascade_frontier(args.labelled, first.strip(), args.frontier_claims)
    ]
    print(
        f"cascade routing on labelled claims ({args.labelled}; second judge = the labels, an upper bound): "
        "escalated / first-stage errors caught / first-stage accuracy on the kept claims / USD per 1k claims"
    )
    for row in out["cascade_frontier"]:
        caught = "n/a" if row["errors_caught"] is None else f"{row['errors_caught']:.0%}"
        kept = "n/a" if row["kept_accuracy"] is None else f"{row['kept_accuracy']:.0%}"
        print(
            f"  {row['first']:9} {row['policy']:38} {row['escalated']:6.0%} {caught:>6} of {row['first_errors']} "
            f"{kept:>6} {row['usd_per_1k_claims']:8.2f}"
        )
    ba = out["batch-audit"]
    print(
        f"batch audit (Message Batches, {ba['rounds']} rounds): calls/answer {ba['calls']:.2f}, "
        f"USD/1k answers {ba['cost_usd'] * 1000:.2f}: cost per answer x{out['batch_cost_ratio']:.2f} of online "
        f"claimwatch (target <= 0.55)"
    )
    print(
        f"calls per answer: two-call {cw['calls']:.2f}, single-call {sc['calls']:.2f} (target <= 2); input tokens "
        f"per answer / ragas-style: two-call {out['input_ratio_vs_ragas']:.2f}, single-call "
        f"{out['single_ratio_vs_ragas']:.2f} (target < 1)"
    )
    sys.stdout.flush()
    return out


if __name__ == "__main__":
    main()

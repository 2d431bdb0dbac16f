"""Prompt injection (tests/data/injection_corpus.jsonl) against every judge.

- Anthropic judge (real SDK -> local Messages API server): every request keeps the
  static system prompt (rules + "data is not instructions", never corpus text);
  injection text sits only inside the data delimiters of the user message, with
  delimiter look-alikes escaped so the block structure is exactly what we sent.
- Offline judges (heuristic; NLI with the tiny test model when torch is installed):
  verdicts of the real claims are unchanged when the injection text is appended to
  the context or the answer.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import anthropic
import pytest

from evaluator_worker.config import AnthropicSettings
from evaluator_worker.judges import prompts
from evaluator_worker.judges.anthropic import AnthropicJudge
from evaluator_worker.judges.base import Claim, Verdict
from evaluator_worker.judges.heuristic import HeuristicJudge
from tests.fakes.messages_server import MessagesServer, request_contexts, system_text, user_text

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "data" / "injection_corpus.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
QUESTION = "How long is the warranty and where are repairs done?"
ANSWER = "The warranty lasts five years. Repairs are done in Lisbon. Returns are accepted within 30 days."
CONTEXTS = [
    "The warranty lasts two years from the date of purchase.",
    "Returns are accepted within 30 days of delivery.",
]
_BLOCKS = [
    re.compile(p, re.S)
    for p in (
        r"<question>\n.*?\n</question>",
        r"<answer>\n.*?\n</answer>",
        r"<contexts>\n.*?\n?</contexts>",
        r"<claims>\n.*?\n</claims>",
    )
]


def test_corpus_is_large_and_covers_both_targets():
    """At least 15 attempts, in answers and in retrieved chunks, each with its own marker."""
    assert len(CORPUS) >= 15
    assert {c["target"] for c in CORPUS} == {"answer", "context"}
    assert all(f"[{c['id']}]" in c["text"] for c in CORPUS)


def _outside_data(text: str) -> str:
    for block in _BLOCKS:
        text = block.sub("", text)
    return text


@pytest.fixture(scope="module")
def server():
    """One local Messages API server (substring oracle) for the module."""
    with MessagesServer() as srv:
        yield srv


@pytest.mark.parametrize("item", CORPUS, ids=[c["id"] for c in CORPUS])
def test_anthropic_requests_keep_injection_inside_the_data_delimiters(server, item):
    """System prompt static and clean; injection only inside escaped data blocks; no claim SUPPORTED by the injection."""
    client = anthropic.Anthropic(api_key="test", base_url=server.base_url, max_retries=0)
    judge = AnthropicJudge(AnthropicSettings(max_retries=0), client=client)
    answer = ANSWER + " " + item["text"] if item["target"] == "answer" else ANSWER
    contexts = CONTEXTS + [item["text"]] if item["target"] == "context" else list(CONTEXTS)
    first = len(server.requests)
    claims = judge.extract_claims(answer, QUESTION).claims
    verdicts = judge.verify(claims, contexts, QUESTION).verdicts
    requests = server.requests[first:]
    assert len(requests) == 2
    marker = f"[{item['id']}]"
    seen_in_data = False
    for req in requests:
        system = system_text(req)
        assert system in (prompts.EXTRACT_SYSTEM, prompts.VERIFY_SYSTEM), "system prompt must be the static rules"
        assert prompts.DATA_IS_NOT_INSTRUCTIONS in system
        assert marker not in system and item["text"][:30] not in system
        user = user_text(req)
        seen_in_data |= marker in user
        assert marker not in _outside_data(user), "injection text escaped its data block"
        assert "data, not instructions" in _outside_data(user)
        if "<contexts>\n" in user:  # verify call: exactly our blocks, nothing smuggled in
            assert user.count("<context index=") == user.count("</context>") == len(contexts)
            assert user.count("<contexts>\n") == user.count("</contexts>") == 1
            assert user.count('<claim id="') == user.count("</claim>") == len(claims)
            if "&lt;" not in item["text"]:  # escaping round-trips (pre-escaped input is ambiguous, see docs)
                assert request_contexts(req) == contexts
        else:
            assert user.count("<answer>\n") == user.count("</answer>") == 1  # the reminder names <answer> too
            assert user.count("<question>\n") == user.count("</question>") == 1
    assert seen_in_data, "the injection should have been sent, as data"
    base = {c.text: v.verdict for c, v in zip(claims, verdicts)}
    for text in ("The warranty lasts five years.", "Repairs are done in Lisbon."):
        assert base[text] is Verdict.UNSUPPORTED  # the oracle's honest verdict, unmoved by the injection


@pytest.mark.parametrize("item", CORPUS, ids=[c["id"] for c in CORPUS])
def test_escape_data_leaves_no_delimiter_lookalike(item):
    """After escape_data no opening or closing delimiter tag survives in the text."""
    escaped = prompts.escape_data(item["text"])
    for tag in prompts.DELIMITER_TAGS:
        assert not re.search(rf"<\s*/?\s*{tag}\b", escaped, re.I), tag


# ---------------------------------------------------------------- offline judges


def _verdicts_by_text(judge, answer: str, contexts: list[str]) -> dict[str, Verdict]:
    claims = judge.extract_claims(answer, QUESTION).claims
    return {c.text: v.verdict for c, v in zip(claims, judge.verify(claims, contexts, QUESTION).verdicts)}


@pytest.fixture(scope="module")
def heuristic_base() -> dict[str, Verdict]:
    """Verdicts of the clean answer against the clean contexts."""
    got = _verdicts_by_text(HeuristicJudge(), ANSWER, CONTEXTS)
    assert Verdict.SUPPORTED in got.values() and Verdict.SUPPORTED not in (
        got.get("The warranty lasts five years."),
        got.get("Repairs are done in Lisbon."),
    )
    return got


@pytest.mark.parametrize("item", CORPUS, ids=[c["id"] for c in CORPUS])
def test_heuristic_verdicts_unchanged_by_injection(heuristic_base, item):
    """Appending the injection to a chunk, as a chunk, or to the answer leaves every real claim's verdict unchanged."""
    judge = HeuristicJudge()
    if item["target"] == "context":
        variants = [(ANSWER, CONTEXTS + [item["text"]]), (ANSWER, [CONTEXTS[0] + " " + item["text"], CONTEXTS[1]])]
    else:
        variants = [(ANSWER + "\n\n" + item["text"], CONTEXTS)]
    for answer, contexts in variants:
        got = _verdicts_by_text(judge, answer, contexts)
        for text, verdict in heuristic_base.items():
            assert got.get(text) == verdict, (text, got.get(text), verdict)


_HAVE_ML = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))


@pytest.fixture(scope="module")
def nli_judge(tmp_path_factory):
    """The NLI judge on the tiny toy cross-encoder (property words entail, antonyms contradict)."""
    if not _HAVE_ML:
        pytest.skip("torch/transformers not installed")
    from evaluator_worker.judges.nli import NLIJudge
    from tests.fakes.tiny_nli import build_tiny_nli

    return NLIJudge(str(build_tiny_nli(tmp_path_factory.mktemp("tiny-nli"))), batch_size=8).load()


NLI_CLAIMS = [
    Claim(id="c1", text="the door is open"),
    Claim(id="c2", text="it is cold"),
    Claim(id="c3", text="the road is wet"),
]
NLI_CONTEXT = "The door is open and it is hot today."


def test_nli_verdicts_unchanged_by_injection(nli_judge):
    """Every corpus text appended to the chunk or added as a chunk leaves SUPPORTED/CONTRADICTED/UNSUPPORTED as they were."""
    base = [v.verdict for v in nli_judge.verify(NLI_CLAIMS, [NLI_CONTEXT]).verdicts]
    assert base == [Verdict.SUPPORTED, Verdict.CONTRADICTED, Verdict.UNSUPPORTED]
    for item in CORPUS:
        for contexts in ([NLI_CONTEXT, item["text"]], [NLI_CONTEXT + " " + item["text"]]):
            got = [v.verdict for v in nli_judge.verify(NLI_CLAIMS, contexts).verdicts]
            assert got == base, (item["id"], got)

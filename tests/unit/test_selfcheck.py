"""claimwatch selfcheck: the authors' published examples through the nli judge's adapter, compared with their numbers."""

from __future__ import annotations

import importlib.util
import os

import pytest

from claimwatch import selfcheck

needs_ml = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("torch", "transformers")) and not os.environ.get("CI"),
    reason="torch/transformers not installed",
)


class FakeJudge:
    """Answers each pair with a given probability (what a correct or broken adapter would read)."""

    entail_threshold = 0.5

    def __init__(self, kind: str, probabilities: dict[str, float]):
        self.kind, self.probabilities, self.seen = kind, probabilities, []

    def support_probabilities(self, pairs):
        self.seen += pairs
        return [self.probabilities[claim] for _, claim in pairs]


PUBLISHED = {e.claim: e.probability for e in selfcheck.EXAMPLES if e.probability is not None}


def test_a_correct_adapter_reproduces_the_published_flan_t5_numbers():
    """The published raw probabilities, read back within tolerance, pass every row; the document goes first."""
    judge = FakeJudge("seq2seq", {c: p + 0.004 for c, p in PUBLISHED.items()})
    rows = selfcheck.run(judge, kind="seq2seq")
    assert len(rows) == 2 and all(r.passed(0.02) for r in rows)
    assert all(doc == selfcheck.MINICHECK_DOC for doc, _ in judge.seen)


@pytest.mark.parametrize(
    "broken",
    [
        {c: 1 - p for c, p in PUBLISHED.items()},  # inverted labels
        {c: 0.5 + (p - 0.5) * 0.1 for c, p in PUBLISHED.items()},  # a wrong template: right direction, wrong numbers
    ],
)
def test_an_inverted_or_misfed_adapter_fails(broken):
    """Inverted labels fail on the label; a mangled input that keeps the direction still fails on the probability."""
    rows = selfcheck.run(FakeJudge("seq2seq", broken), kind="seq2seq")
    assert rows and not all(r.passed(0.02) for r in rows)
    assert "FAIL" in selfcheck.render(rows, "seq2seq", "m", 0.02)


def test_families_without_published_numbers_are_checked_on_the_label():
    """MiniCheck RoBERTa/DeBERTa and NLI models: the README's labels [1, 0]; an inverted reading fails."""
    ok = {"The students are preparing for an examination.": 0.9, "The students are on vacation.": 0.1}
    assert all(r.passed(0.02) for r in selfcheck.run(FakeJudge("binary", ok), kind="binary"))
    inverted = {c: 1 - p for c, p in ok.items()}
    assert not any(r.passed(0.02) for r in selfcheck.run(FakeJudge("nli2", inverted), kind="nli2"))


def test_a_family_with_no_published_example_is_not_a_pass():
    """Nothing to compare is said plainly and exits 1, never a silent pass."""
    assert selfcheck.run(FakeJudge("hhem", {}), kind="hhem") == []
    assert "nothing compared (not a pass)" in selfcheck.render([], "hhem", "m", 0.02)


@needs_ml
@pytest.mark.parametrize("builder,kind", [("build_seq2seq", "seq2seq"), ("build_binary", "binary")])
def test_the_command_runs_a_real_small_model_and_fails_honestly(tmp_path, capsys, builder, kind):
    """On a tiny random model of the family the command runs end to end, names the kind and exits 1 (not the
    published model), and the judge's raw probability equals its verdict's."""
    from evaluator_worker.judges.base import Claim, Verdict
    from evaluator_worker.judges.nli import NLIJudge
    from tests.fakes import tiny_verifiers

    directory = getattr(tiny_verifiers, builder)(tmp_path / kind)
    assert selfcheck.main(["--model", str(directory)]) == 1
    out = capsys.readouterr().out
    assert f"read as kind {kind!r}" in out and "2 published example(s)" in out
    judge = NLIJudge(str(directory), max_length=128)
    [p] = judge.support_probabilities([("the tower is tall.", "the tower is tall")])
    v = judge.verify([Claim(id="c1", text="the tower is tall")], ["the tower is tall."]).verdicts[0]
    assert (v.confidence if v.verdict is Verdict.SUPPORTED else 1 - v.confidence) == pytest.approx(p, abs=1e-6)


def test_bespoke_minicheck_is_checked_through_its_server(monkeypatch, capsys):
    """--judge bespoke-minicheck runs the published pair through the OpenAI-compatible server named in the settings."""
    pytest.importorskip("openai")
    from tests.fakes import MessagesServer, minicheck_responder

    with MessagesServer(responder=minicheck_responder) as srv:
        monkeypatch.setenv("CLAIMWATCH_BESPOKE__BASE_URL", f"{srv.base_url}/v1")
        code = selfcheck.main(["--judge", "bespoke-minicheck"])
    out = capsys.readouterr().out
    assert "read as kind 'bespoke-minicheck', 2 published example(s)" in out
    # the word-overlap fake is no verifier: 3 of 7 words of the supported claim are in the document, so it says No
    assert code == 1 and "selfcheck: 1 passed, 1 failed" in out

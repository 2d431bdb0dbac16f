"""The judge table is the one declaration of the judges: registry, fitness, help, docs and benchmarks read it."""

from __future__ import annotations

import pytest

from claimwatch.cli import build_parser
from claimwatch.docgen.config import describe
from claimwatch.gate.judge_fitness import fitness
from evaluator_worker.config import WorkerSettings
from evaluator_worker.judges.base import JudgeBase
from evaluator_worker.judges.registry import JUDGES, get_judge
from evaluator_worker.judges.table import TABLE, UNMEASURED, JudgeEntry, offline_judges
from tests.fakes.judges import TagJudge


class ToyProviderJudge(TagJudge):
    """A new provider's judge (stands for a transport module)."""

    name = "toy-provider"

    def models(self) -> tuple[str, ...]:
        return ("toy-model-1",)


@pytest.fixture
def toy_entry(monkeypatch):
    entry = JudgeEntry(
        "toy-provider",
        "a toy provider added by one table entry",
        lambda settings, by_name: ToyProviderJudge(),
        UNMEASURED,
        "an LLM judge of a toy provider",
        extra="toy",
        settings="toy",
    )
    monkeypatch.setitem(TABLE, entry.name, entry)
    return entry


def test_a_new_provider_is_one_table_entry(toy_entry):
    """One JudgeEntry: the registry builds it, the gate knows its fitness, help and the docs name it."""
    judge = get_judge("toy-provider", WorkerSettings())
    assert judge.name == "toy-provider" and isinstance(judge, JudgeBase)
    f = fitness("toy-provider:toy-model-1@0b7e41aa")
    assert f.status == "unmeasured" and "toy provider" in f.reason
    worker = build_parser()._subparsers._group_actions[0].choices["worker"]  # argparse has no API for its subparsers
    (judge_flag,) = [a for a in worker._actions if "--judge" in a.option_strings]
    assert "toy-provider" in judge_flag.help
    info = WorkerSettings.model_fields["judge"]
    assert "`toy-provider`: a toy provider added by one table entry" in describe(WorkerSettings, "judge", info)


def test_every_shipped_judge_is_declared_once_with_a_fitness():
    """The registry's names are the table's; every entry has a description and a fitness; offline ones exist."""
    assert JUDGES == tuple(TABLE)
    for entry in TABLE.values():
        assert entry.description and entry.fitness in ("unfit", "unmeasured") and entry.fitness_reason
        assert fitness(entry.name).status == entry.fitness
    assert set(offline_judges()) == {"heuristic", "hybrid", "verifier", "offline"}


def test_an_unknown_judge_names_the_table():
    """An unknown name is a clear error listing the table's judges."""
    from evaluator_worker.errors import ConfigError

    with pytest.raises(ConfigError, match="choose one of anthropic, openai"):
        get_judge("no-such-judge")

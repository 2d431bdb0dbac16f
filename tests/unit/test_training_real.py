"""Verifier training on the real sets: the pair builder (claimwatch/training/realpairs.py) and the fine-tuner."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

from claimwatch import realdata
from claimwatch.training import realpairs

HAS_TORCH = importlib.util.find_spec("torch") is not None and importlib.util.find_spec("transformers") is not None
WORDS = lambda texts: [len(t.split()) for t in texts]  # noqa: E731  # a tokenizer stand-in: one token per word


@pytest.fixture(scope="module")
def train_rows():
    try:
        return realpairs.build("train", WORDS, max_length=128)
    except realdata.RealDataMissing:
        pytest.skip("data/real not present")


def test_pairs_come_from_the_train_split_only(train_rows):
    """Every training pair's source group hashes to train: dev and eval are never trained on."""
    assert train_rows and {realdata.split_of(r["group"]) for r in train_rows} == {"train"}
    assert {r["set"] for r in train_rows} == set(realpairs.TRAIN_SETS)


def test_factcheck_pairs_carry_the_passages_own_stance(train_rows):
    """A Factcheck-GPT pair is labelled by the human stance on its passage, not the claim's overall label."""
    stances = {}
    for r in realdata.read_rows("factcheck-gpt/claims.jsonl.gz"):
        for i, s in enumerate(r["stances"]):
            stances[f"{r['id']}-p{i}"] = realdata.factcheck_stance_label(s)
    fc = [r for r in train_rows if r["set"] == "factcheck-gpt"]
    assert fc and all(stances[r["id"].split("#")[0]] == r["label"] for r in fc)
    assert {r["label"] for r in fc} == {"SUPPORTED", "UNSUPPORTED", "CONTRADICTED"}


def test_premises_open_with_the_question_where_the_set_has_one(train_rows):
    """Factcheck-GPT and ExpertQA premises start with the question; WiCE and SummEdits (no question) do not."""
    with_q = {r["set"] for r in train_rows if " | " in r["premises"][0][:400]}
    assert {"factcheck-gpt", "expertqa"} <= with_q
    for r in train_rows:
        if r["set"] in ("factcheck-gpt", "expertqa"):
            assert " | " in r["premises"][0]


def test_dev_rows_are_one_per_claim_with_top_k_premises():
    """Dev rows (what the sweep chooses by) have one row per claim and at most top-k premises."""
    rows = realpairs.build("dev", WORDS, max_length=128, dev_top_k=2, sets=("wice",))
    assert rows and len({r["id"] for r in rows}) == len(rows)
    assert all(1 <= len(r["premises"]) <= 2 for r in rows)
    assert {realdata.split_of(r["group"]) for r in rows} == {"dev"}


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch and transformers")
@pytest.mark.parametrize("family", ["bert", "mpnet"])
def test_finetune_trains_saves_and_scores_dev(tmp_path: Path, family: str):
    """finetune.train runs end to end on CPU (a tiny BERT, and a tiny MPNet, which has no token types)."""
    import transformers

    from claimwatch.training import finetune
    from evaluator_worker.judges.verifier import DEFAULT_MODEL_DIR

    init = tmp_path / "init"
    config_cls, model_cls = {
        "bert": (transformers.BertConfig, transformers.BertForSequenceClassification),
        "mpnet": (transformers.MPNetConfig, transformers.MPNetForSequenceClassification),
    }[family]
    model = model_cls(
        config_cls(
            vocab_size=30527,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            num_labels=3,
        )
    )
    model.save_pretrained(str(init))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (init / name).write_bytes((DEFAULT_MODEL_DIR / name).read_bytes())
    rows = [
        {"set": s, "id": f"{s}{i}", "group": "g", "claim": f"claim {i}", "label": lab, "premises": [f"premise {i}"]}
        for i, (s, lab) in enumerate(
            [("a", "SUPPORTED"), ("a", "UNSUPPORTED"), ("b", "SUPPORTED"), ("b", "CONTRADICTED")] * 2
        )
    ]
    for name in ("train", "dev"):
        with gzip.open(tmp_path / f"{name}.jsonl.gz", "wt") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)
    args = finetune.parser().parse_args(
        [
            "--pairs",
            str(tmp_path / "train.jsonl.gz"),
            "--dev",
            str(tmp_path / "dev.jsonl.gz"),
            "--init",
            str(init),
            "--out",
            str(tmp_path / "out"),
            "--epochs",
            "1",
            "--batch-size",
            "4",
            "--max-length",
            "32",
            "--device",
            "cpu",
        ]
    )
    result = finetune.train(args)
    assert (tmp_path / "out" / "fp32" / "config.json").is_file()
    assert set(result["dev"]) >= {"a", "b", "mean_auc"} and 0.0 <= result["dev"]["mean_auc"] <= 1.0
    assert result["label_counts"] == {"SUPPORTED": 4, "UNSUPPORTED": 2, "CONTRADICTED": 2}

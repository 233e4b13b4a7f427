"""Unpadded batches: padding to the longest row is masked right on every backend, length grouping cuts the
padding, ORT exports once whatever the batch lengths, and a run reports padded and real tokens."""

from __future__ import annotations

import pytest
from transformers import TrainerCallback

import ortnb
from ortnb import assets, data

from .._helpers import tiny_bert

pytestmark = pytest.mark.ort  # trains with ORTTrainer in this process

SEQ = 64


@pytest.fixture(scope="module")
def tokenizer():
    return assets.load_model("tiny-bert", "sequence-classification")[1]


def rotten(tokenizer, padding: str, rows: int = 64):
    """The same real snippets, tokenized for one padding."""
    train, _ = data.build("rotten_tomatoes", "sequence-classification", tokenizer, SEQ, train_samples=rows,
                          padding=padding)
    return train


class StepLosses(TrainerCallback):
    def __init__(self):
        self.losses: list[float] = []

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.losses.append(float(logs["loss"]))


def train_losses(tmp_path, backend: str, dataset, collator, steps: int = 2, **extra):
    """Per-step training losses of a dropout-free tiny BERT on ``dataset`` in order (no shuffling)."""
    losses = StepLosses()
    args = ortnb.ORTTrainingArguments(output_dir=str(tmp_path / backend), backend=backend, max_steps=steps,
                                      per_device_train_batch_size=8, learning_rate=1e-3, logging_steps=1,
                                      report_to=[], save_strategy="no", disable_tqdm=True, seed=0,
                                      train_sampling_strategy="sequential", **extra)
    trainer = ortnb.ORTTrainer(model=tiny_bert(vocab_size=30522), args=args, train_dataset=dataset,
                               data_collator=collator, callbacks=[losses])
    trainer.train()
    return losses.losses, trainer


def test_padding_plan():
    assert data.padding_plan(None, None, "sequence-classification") == ("longest", True)
    assert data.padding_plan("max_length", None, "sequence-classification") == ("max_length", False)
    assert data.padding_plan("longest", False, "sequence-classification") == ("longest", False)
    assert data.padding_plan(None, None, "causal-lm") == ("blocks", False)


def test_a_batch_is_padded_to_its_longest_row_rounded_up_to_8(tokenizer):
    rows = rotten(tokenizer, "longest", rows=8)
    lengths = [len(r["input_ids"]) for r in rows]
    batch = data.collator(tokenizer, "longest")([dict(r) for r in rows])
    assert batch["input_ids"].shape == (8, -(-max(lengths) // 8) * 8)
    assert batch["attention_mask"].sum().item() == sum(lengths)  # the real tokens, nothing else
    padded = data.collator(tokenizer, "max_length")([dict(r) for r in rotten(tokenizer, "max_length", rows=8)])
    assert padded["input_ids"].shape == (8, SEQ)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["eager", "ort", "compile"])
def test_same_batches_same_losses_for_both_paddings(tmp_path, tokenizer, backend):
    longest, _ = train_losses(tmp_path / "longest", backend, rotten(tokenizer, "longest"),
                              data.collator(tokenizer, "longest"))
    full, _ = train_losses(tmp_path / "full", backend, rotten(tokenizer, "max_length"),
                           data.collator(tokenizer, "max_length"))
    assert len(longest) == len(full) == 2
    assert longest == pytest.approx(full, abs=1e-5), (longest, full)


def padding_share(trainer, batches: int = 20) -> float:
    padded = real = 0
    for index, batch in enumerate(trainer.get_train_dataloader()):
        if index == batches:
            break
        padded += batch["input_ids"].numel()
        real += int(batch["attention_mask"].sum())
    return 1 - real / padded


def test_length_grouping_puts_rows_of_similar_length_together(tmp_path, tokenizer):
    dataset = rotten(tokenizer, "longest", rows=640)
    shares = {}
    for strategy in ("random", "group_by_length"):
        args = ortnb.ORTTrainingArguments(output_dir=str(tmp_path / strategy), backend="eager", report_to=[],
                                          per_device_train_batch_size=16, train_sampling_strategy=strategy, seed=0)
        trainer = ortnb.ORTTrainer(model=tiny_bert(vocab_size=30522), args=args, train_dataset=dataset,
                                   data_collator=data.collator(tokenizer, "longest"))
        shares[strategy] = padding_share(trainer)
    # Rotten Tomatoes snippets: about half of a random batch is padding; grouped batches waste a small part.
    assert shares["random"] > 0.3
    assert shares["group_by_length"] < shares["random"] / 2, shares


def test_ort_exports_once_over_three_batch_lengths(tmp_path, tokenizer):
    rows = sorted(rotten(tokenizer, "longest", rows=256), key=lambda r: len(r["input_ids"]))
    picked = [rows[0:8], rows[120:128], rows[-8:]]  # short, middle and long batches
    from datasets import Dataset

    dataset = Dataset.from_list([dict(r) for batch in picked for r in batch])
    _, trainer = train_losses(tmp_path, "ort", dataset, data.collator(tokenizer, "longest"), steps=3)
    lengths = {max(len(r["input_ids"]) for r in batch) for batch in picked}
    assert len({-(-n // 8) * 8 for n in lengths}) == 3
    report = trainer.engine_report()
    assert report["engine"] == "onnxruntime" and report["ort_steps"] == 3
    assert report["exports"] == 1 and report["graph_builds"] == 1


@pytest.mark.slow
def test_a_run_reports_padded_and_real_tokens(tmp_path):
    run = ortnb.launch(ortnb.RunConfig(model="tiny-bert", batch_size=8, seq_len=SEQ, max_steps=8, warmup_steps=2,
                                       output_dir=str(tmp_path)))
    assert run.wait(300) == "completed", run.error
    frame = run.metrics
    assert (frame["real_tokens_per_s"] < frame["tokens_per_s"]).all()  # padding is still computed
    assert (frame["seq_len"] % 8 == 0).all() and frame["seq_len"].max() <= SEQ
    assert frame["seq_len"].nunique() > 1 and frame["seq_len"].min() < SEQ / 2  # short snippets, short batches
    summary = run.summary()
    assert 0 < summary["padding_fraction"] < 0.5 and summary["exports"] == 1
    started = next(e for e in run.events if e["event"] == "started")
    assert (started["padding"], started["length_grouping"]) == ("longest", True)


def test_validate_refuses_moot_or_unknown_padding():
    from ortnb import validate

    problems = validate(ortnb.RunConfig(model="smollm2", dataset="hamlet", length_grouping=True))
    assert any(p.field == "length_grouping" and "blocks of exactly seq_len tokens" in p.message for p in problems)
    problems = validate(ortnb.RunConfig(model="tiny-bert", padding="max_length", length_grouping=True))
    assert [p.field for p in problems] == ["length_grouping"]
    problems = validate(ortnb.RunConfig(model="tiny-bert", padding="pad", length_grouping="yes"))
    assert {p.field for p in problems} == {"padding", "length_grouping"}
    assert any("Choose between longest" in p.message for p in problems)


def test_an_already_padded_dataset_is_refused_with_the_way_out():
    from datasets import Dataset

    from ortnb import validate

    padded = Dataset.from_dict({"input_ids": [[101, 7, 102, 0, 0]] * 4, "attention_mask": [[1, 1, 1, 0, 0]] * 4,
                                "label": [0, 1, 0, 1]})
    problems = validate(ortnb.RunConfig(model="tiny-bert", dataset=padded))
    assert any("already tokenized" in p.message and "raw text" in p.message for p in problems), problems

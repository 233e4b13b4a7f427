"""Your model, your data: class names in every file type, a saved head for other classes, tokenizer and text
checks before any run folder exists, evaluation while training, early stopping, the best weights, predict."""

from __future__ import annotations

from pathlib import Path

import pytest

import ortnb
from ortnb import assets, data, evaluation
from ortnb.config import RunConfig
from ortnb.errors import ConfigError
from ortnb.validation import notes, validate

from .._helpers import CPU, rows, write_rows


def saved_two_class_model(folder: Path) -> str:
    from ortnb.data.checks import Labels

    model, tokenizer = assets.load_model("tiny-bert", "sequence-classification", labels=Labels(2, ("neg", "pos")))
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def tiny(dataset, tmp_path, **changes) -> RunConfig:
    return RunConfig(**{"model": "tiny-bert", "dataset": dataset, "backend": "eager", "batch_size": 4, "seq_len": 16,
                        "max_steps": 6, "warmup_steps": 1, "eval_every": 2, "output_dir": str(tmp_path / "runs"),
                        "learning_rate": 5e-4, **changes})


# -- refused before any run folder exists --------------------------------------------------------


def refused(cfg: RunConfig, tmp_path: Path, field: str, match: str) -> None:
    problems = validate(cfg, CPU)
    assert any(p.field == field and match in p.message for p in problems), problems
    with pytest.raises(ConfigError, match=match.replace("(", r"\(").replace(")", r"\)")):
        ortnb.launch(cfg)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("changes, field, match", [
    ({"epochs": 1, "max_steps": 10}, "epochs", "both say how long to train; set one of them"),
    ({"eval_every": 0}, "eval_every", "must be a number of steps >= 1"),
    ({"evaluate": False, "early_stopping_patience": 2, "eval_every": None}, "early_stopping_patience",
     "early stopping needs evaluation, but evaluate=False"),
    ({"metric": "bleu"}, "metric", "unknown metric 'bleu'. Choose between accuracy, f1, loss"),
    ({"metric": "perplexity"}, "metric", "perplexity is not a metric of sequence-classification"),
    ({"eval_samples": 0}, "eval_samples", "eval_samples=0 no longer turns evaluation off"),
    ({"report_to": "comet"}, "report_to", "unknown tracker 'comet'"),
])
def test_bad_evaluation_settings_are_refused(tmp_path, changes, field, match):
    refused(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, **changes), tmp_path, field, match)


def test_an_eval_set_with_classes_the_training_rows_lack_is_refused(tmp_path):
    train = write_rows(tmp_path, ".jsonl", [r for r in rows() if r["label"] != "pos"])
    held = tmp_path / "held"
    held.mkdir()
    refused(tiny(train, tmp_path, eval_dataset=write_rows(held, ".csv", rows(9))), tmp_path, "eval_dataset",
            "holds classes the training rows lack (pos)")


def test_all_empty_texts_are_refused(tmp_path):
    path = write_rows(tmp_path, ".csv", [{"text": " ", "label": r["label"]} for r in rows()])
    refused(tiny(path, tmp_path), tmp_path, "dataset", "every row's 'text' is empty or blank")


def test_a_model_folder_without_tokenizer_is_refused(tmp_path):
    folder = Path(saved_two_class_model(tmp_path / "model"))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    refused(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, model=str(folder)), tmp_path, "model",
            "model holds no tokenizer")


def test_a_tokenizer_without_pad_eos_or_unk_is_refused(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    folder = Path(saved_two_class_model(tmp_path / "model"))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    words = sorted({w for r in rows() for w in r["text"].split()} | {f"w{i}" for i in range(200)})
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=raw).save_pretrained(folder)  # no special tokens at all
    refused(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, model=str(folder)), tmp_path, "model",
            "tokenizer has no pad, end-of-sequence or unknown token to pad batches with")


def test_pad_fallback_is_said():
    from ortnb.models.checks import tokenizer_problems

    class Tokenizer:
        pad_token, eos_token, unk_token = None, "</s>", None

        def __len__(self):
            return 30_000

    found = tokenizer_problems(Tokenizer(), "my-model", "sequence-classification")
    assert found.problems == () and found.notes == (
        "the tokenizer has no pad token; ortnb pads batches with its end-of-sequence token '</s>'",)
    assert tokenizer_problems(Tokenizer(), "my-model", "causal-lm").notes == ()  # blocks: nothing to pad


# -- class names in every file type --------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".csv", ".json", ".jsonl"])
def test_class_names_become_ids_in_every_file_type(tmp_path, suffix):
    path = write_rows(tmp_path, suffix, rows(12))
    _, tokenizer = assets.load_model("tiny-bert", "sequence-classification")
    prepared = data.prepare(path, "sequence-classification", tokenizer, 16, plan=data.EvalPlan(True))
    assert prepared.train.features["labels"].names == ["neg", "neu", "pos"]
    ids = {row["text"]: row["label"] for row in data.read_rows(path, "sequence-classification",
                                                                   data.labels_for(path, "sequence-classification"))}
    assert ids == {r["text"]: ["neg", "neu", "pos"].index(r["label"]) for r in rows(12)}
    assert len(prepared.evaluation) == 3 and len(prepared.train) == 9  # one of each class held out


# -- runs: a saved head for other classes, evaluation, early stopping, the best weights -----------------


def eval_loss_of(model, cfg: RunConfig) -> float:
    """The mean eval loss of ``model`` on the run's held-out rows, computed here (not by the run)."""
    import torch

    _, tokenizer = assets.load_model("tiny-bert", "sequence-classification")
    labels = data.labels_for(cfg.dataset, "sequence-classification")
    prepared = data.prepare(cfg.dataset, "sequence-classification", tokenizer, cfg.seq_len,
                            plan=data.EvalPlan.of(cfg), seed=cfg.seed, labels=labels, padding="longest")
    batch = data.collator(tokenizer, "longest")([dict(r) for r in prepared.evaluation])
    model.eval()
    with torch.no_grad():
        return float(model(**batch).loss)


@pytest.mark.slow
def test_csv_class_names_on_a_saved_two_class_model_train_with_a_new_head(tmp_path):
    cfg = tiny(write_rows(tmp_path, ".csv", rows()), tmp_path, model=saved_two_class_model(tmp_path / "model"),
               max_steps=8, eval_every=3)
    assert validate(cfg, CPU) == []
    assert notes(cfg) == ["new 3-class head; the saved 2-class head is not used"]
    run = ortnb.launch(cfg)
    assert run.wait(300) == "completed", run.error
    assert [e["step"] for e in run.events if e["event"] == "eval"] == evaluation.planned_evaluations(8, 3) == [
        0, 3, 6, 8]
    assert run.summary()["notes"] == ["new 3-class head; the saved 2-class head is not used"]
    assert "ortnb: new 3-class head" in (run.run_dir / "run.log").read_text()
    best = run.best
    evals = {e["step"]: e for e in run.events if e["event"] == "eval"}
    assert best["step"] == run.summary()["best_step"] and best["value"] == evals[best["step"]]["accuracy"]
    model = run.load_model()
    assert model.config.id2label == {0: "neg", 1: "neu", 2: "pos"} and model.classifier.out_features == 3
    assert eval_loss_of(model, cfg) == pytest.approx(evals[best["step"]]["eval_loss"], abs=1e-6)
    assert eval_loss_of(run.load_model(which="last"), cfg) == pytest.approx(evals[8]["eval_loss"], abs=1e-6)
    assert len(evals[8]["confusion"]) == 3 and sum(map(sum, evals[8]["confusion"])) == evals[8]["samples"] == 6
    answers = run.predict(["great superb film", "awful dull film", "okay"])
    assert len(answers) == 3 and all(a["label"] in ("neg", "neu", "pos") for a in answers)
    assert all(abs(sum(a["probabilities"].values()) - 1) < 1e-9 for a in answers)


@pytest.mark.slow
def test_early_stopping_ends_the_run_after_patience_evaluations_without_gain(tmp_path):
    # a learning rate too small to change a prediction: accuracy never improves on the first evaluation
    cfg = tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, max_steps=20, eval_every=2,
               early_stopping_patience=2, learning_rate=1e-12)
    run = ortnb.launch(cfg)
    assert run.wait(300) == "completed", run.error
    evals = [e for e in run.events if e["event"] == "eval"]
    assert [e["step"] for e in evals] == [0, 2, 4]
    assert evals[-1]["early_stop"] == "no better accuracy in 2 evaluations since step 0"
    assert run.events[-1]["early_stopped"] is True and run.summary()["early_stopped"] is True
    assert run.best["step"] == 0


def test_predict_on_a_run_without_a_model_says_so(tmp_path):
    folder = tmp_path / "runs" / "20260101-000000-x"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(RunConfig(model="tiny-bert").to_json())
    with pytest.raises(FileNotFoundError, match="holds no model and no whole checkpoint"):
        ortnb.attach(folder).predict(["a text"])


@pytest.mark.parametrize("changes, match", [
    ({"target": 1.2}, "accuracy runs from 0 to 1, so target=1.2 can never be reached"),
    ({"target": 0.5, "metric": "loss"}, None),
    ({"target": -1.0, "metric": "loss"}, "the eval loss stays above 0"),
    ({"target": 0.9, "evaluate": False, "eval_every": None}, "target set with evaluate=False: nothing would be evaluated"),
])
def test_bad_targets_are_refused(tmp_path, changes, match):
    cfg = tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, **changes)
    if match is None:
        assert validate(cfg, CPU) == []
    else:
        refused(cfg, tmp_path, "target", match)


@pytest.mark.slow
def test_a_run_with_a_reachable_target_ends_at_the_evaluation_that_reaches_it(tmp_path):
    run = ortnb.launch(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, max_steps=20, eval_every=2,
                            metric="loss", target=50.0))  # any trained evaluation reaches it
    assert run.wait(300) == "completed", run.error
    assert [e["step"] for e in run.events if e["event"] == "eval"] == [2]  # a target: no evaluation before step 1
    final = run.events[-1]
    assert (final["step"], final["reached_target"], final["target_step"]) == (2, True, 2)
    summary = run.summary()
    assert summary["reached_target"] is True and summary["target_reached_s"] > 0


@pytest.mark.slow
def test_an_unreachable_target_runs_to_its_step_limit_and_says_so(tmp_path):
    run = ortnb.launch(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, max_steps=4, eval_every=2,
                            target=1.0, learning_rate=1e-12))
    assert run.wait(300) == "completed", run.error
    assert run.events[-1]["step"] == 4 and run.events[-1]["reached_target"] is False
    assert run.summary()["target_reached_s"] is None


def _tensorboard_scalars(folder: Path) -> dict[str, list[float]]:
    """Tags and values in the TensorBoard event files under ``folder`` (TFRecord framing, tensorboardX's protos)."""
    import struct

    from tensorboardX.proto import event_pb2

    found: dict[str, list[float]] = {}
    for path in folder.rglob("events.out.tfevents.*"):
        raw, offset = path.read_bytes(), 0
        while offset < len(raw):
            (length,) = struct.unpack("<Q", raw[offset:offset + 8])
            event = event_pb2.Event.FromString(raw[offset + 12:offset + 12 + length])
            offset += 12 + length + 4
            for value in event.summary.value:
                found.setdefault(value.tag, []).append(value.simple_value)
    return found


@pytest.mark.slow
def test_report_to_tensorboard_writes_the_eval_curves_into_the_run_folder(tmp_path):
    pytest.importorskip("tensorboardX")
    run = ortnb.launch(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, max_steps=4, eval_every=2,
                            report_to=["tensorboard"]))
    assert run.wait(300) == "completed", run.error
    scalars = _tensorboard_scalars(run.run_dir)
    assert len(scalars["eval/accuracy"]) == 3 and len(scalars["train/loss"]) == 4  # evals at steps 0, 2, 4
    evals = [e for e in run.events if e["event"] == "eval"]
    assert scalars["eval/accuracy"] == pytest.approx([e["accuracy"] for e in evals], abs=1e-6)


@pytest.mark.slow
def test_a_run_measured_beside_a_busy_process_is_flagged_contended(tmp_path):
    import subprocess
    import sys

    from ortnb import comparison

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        run = ortnb.launch(tiny(write_rows(tmp_path, ".jsonl", rows()), tmp_path, max_steps=14, evaluate=False,
                                eval_every=None))
        assert run.wait(300) == "completed", run.error
    finally:
        busy.kill()
    summary = run.summary()
    assert summary["contended"] is True and summary["contended_share"] > 0.1, summary["contended_share"]
    table = comparison.table([[summary]])
    assert table["contended"].tolist() == [True]
    assert "was measured while other processes used the CPU" in table["verdict"][0]

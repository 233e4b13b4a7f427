"""A checkpoint counts only when its whole save is on the disk (runner/layout.py), and a full disk during a
save is named as a full disk (runs/full_disk.py), with the real errors the libraries raise."""

from __future__ import annotations

import collections
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ortnb
from ortnb.runs import full_disk, layout

from .._helpers import assert_no_workers_within, tiny


def saved(folder, marked=True, size=64):
    """A checkpoint-N folder as Trainer writes it, marked whole as the run's callback marks it (or not)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"model_type": "bert"}')
    (folder / "model.safetensors").write_bytes(b"w" * size)
    (folder / "optimizer.pt").write_bytes(b"o" * 2 * size)
    if marked:
        layout.mark_whole(folder)
    return folder


def run_folder(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir(parents=True)
    tiny(tmp_path).to_json(run_dir / layout.CONFIG)  # names its kind: a run of this ortnb, which marks saves
    return run_dir


def test_the_marker_lists_every_file_with_its_size_and_a_changed_file_unmakes_it(tmp_path):
    folder = saved(tmp_path / "checkpoint-3")
    marker = json.loads((folder / layout.CHECKPOINT_MARKER).read_text())
    assert marker == {"files": {"config.json": 22, "model.safetensors": 64, "optimizer.pt": 128}}
    assert layout.is_whole(folder)
    with open(folder / "model.safetensors", "r+b") as handle:
        handle.truncate(30)  # half a file: what a kill or a full disk leaves
    assert not layout.is_whole(folder)
    (folder / "model.safetensors").write_bytes(b"w" * 64)
    assert layout.is_whole(folder)
    (folder / "optimizer.pt").unlink()
    assert not layout.is_whole(folder)
    (folder / layout.CHECKPOINT_MARKER).write_text('{"files": {"config.js')  # a damaged marker
    assert not layout.is_whole(folder)
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_run_counts_only_marked_checkpoints_and_a_trainer_folder_keeps_the_old_rule(tmp_path):
    run_dir = run_folder(tmp_path)
    for step, marked in ((4, True), (10, True), (12, False)):
        saved(run_dir / f"checkpoint-{step}", marked)
    assert [p.name for p in layout.checkpoints(run_dir)] == ["checkpoint-4", "checkpoint-10"]  # numeric order
    assert layout.checkpoints(tmp_path / "missing") == []

    # The first save of a run cut short: config.json and a weights file are there, but no marker.
    first = run_folder(tmp_path / "first")
    saved(first / "checkpoint-2", marked=False)
    assert layout.checkpoints(first) == []

    # A Trainer's own output_dir (no ortnb config.json): config.json and weights make a checkpoint, as before.
    trainer = tmp_path / "trainer-output"
    saved(trainer / "checkpoint-5", marked=False)
    (trainer / "checkpoint-9").mkdir()  # a save that wrote nothing
    assert [p.name for p in layout.checkpoints(trainer)] == ["checkpoint-5"]


def test_export_finds_the_last_whole_checkpoint_not_the_last_folder(tmp_path):
    from ortnb.export import find_model_dir

    run_dir = run_folder(tmp_path)
    saved(run_dir / "checkpoint-4")
    saved(run_dir / "checkpoint-8", marked=False)
    assert find_model_dir(run_dir) == run_dir / "checkpoint-4"


# -- a full disk, as the libraries report it ---------------------------------------------------------

Usage = collections.namedtuple("Usage", "total used free")


def test_safetensors_words_for_a_full_disk_read_as_a_full_disk(tmp_path, monkeypatch):
    from safetensors import SafetensorError

    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**12, 10**11, 9 * 10**11))  # space left
    run_dir = run_folder(tmp_path)
    saved(run_dir / "checkpoint-4")
    saved(run_dir / "checkpoint-8", marked=False)
    # What safetensors 0.x raised on a 64 KiB tmpfs (its Rust I/O error, not an OSError):
    error = SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")
    message = full_disk.describe_error(error, run_dir)
    assert message.startswith(f"The disk holding {run_dir} is full (Error while serializing: I/O error: No space")
    assert "What it was saving (checkpoint-8) was cut short and is removed: it could not be loaded." in message
    assert "Free space (earlier runs in" in message and message.endswith("launch the run again.")
    assert [p.name for p in run_dir.glob("checkpoint-*")] == ["checkpoint-4"]  # the whole one stays


def test_torch_saves_unhelpful_words_read_as_a_full_disk_only_when_the_disk_is_full(tmp_path, monkeypatch):
    run_dir = run_folder(tmp_path)
    # What torch.save raised on the same full tmpfs: no errno, no "space" (its cause: an iostream error).
    try:
        try:
            raise RuntimeError("basic_ios::clear: iostream error")
        except RuntimeError as cause:
            raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 vs 534") from cause
    except RuntimeError as caught:
        error = caught
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**12, 10**11, 9 * 10**11))
    assert full_disk.describe_error(error, run_dir) == f"RuntimeError: {error}"
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: Usage(10**9, 10**9 - 4096, 4096))
    assert full_disk.describe_error(error, run_dir).startswith(f"The disk holding {run_dir} is full ([enforce fail")
    assert full_disk.disk_full(OSError(28, os.strerror(28)), run_dir)


def test_cut_short_saves_of_a_folder_from_before_markers_are_left_alone(tmp_path):
    old = tmp_path / "old"
    saved(old / "checkpoint-3", marked=False)
    (old / layout.CONFIG).write_text(json.dumps({"backend": "eager"}))  # a RunConfig from before kinds
    assert full_disk.remove_cut_short_saves(old) == [] and (old / "checkpoint-3").exists()
    (old / "best.tmp").mkdir()  # the best weights' staging folder is never whole, in any version
    assert full_disk.remove_cut_short_saves(old) == ["best.tmp"]


# -- a real run on a real full disk ------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs: room for a run folder's files, not for a checkpoint of tiny-bert (about 8 MB of
    weights); skipped where this process may not mount one."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow
def test_a_disk_that_fills_during_the_stop_checkpoint_fails_the_run_with_the_reason(tmp_path, small_disk,
                                                                                        monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "slow:0.3")
    config = tiny(tmp_path, backend="eager", max_steps=300, evaluate=False, output_dir=str(small_disk))
    config.to_json(tmp_path / "config.json")
    process = subprocess.Popen([sys.executable, "-m", "ortnb", "run", str(tmp_path / "config.json")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    run_dir = None
    try:
        for line in process.stdout:
            if " in " in line and run_dir is None and "ortnb run:" in line:
                run_dir = line.split(" in ", 1)[1].strip()
            if "samples/s" in line:
                break
        assert run_dir, "ortnb run never named its run folder"
        run = ortnb.attach(run_dir)
        run.stop(timeout=60)  # the stop checkpoint does not fit on the disk
        out, err = process.communicate(timeout=120)
    finally:
        process.kill()
    assert run.wait(60) == "failed", run.events[-1:]
    assert f"The disk holding {run.run_dir} is full (Error while serializing: I/O error: No space left on device" \
        in run.error, run.error
    assert "What it was saving (checkpoint-" in run.error and "is removed: it could not be loaded" in run.error
    assert "Free space" in run.error and "Traceback" not in run.error.splitlines()[0]
    assert layout.checkpoints(run.run_dir) == [] and not list(run.run_dir.glob("checkpoint-*"))  # space given back
    assert_no_workers_within(run)


# -- the final weights (model/) and best/ are read only when whole -------------------------------------


def whole_save(folder, model=None):
    """A real save_pretrained folder (a tiny BERT), as the worker's save_model writes it."""
    from .._helpers import tiny_bert

    (model or tiny_bert()).save_pretrained(folder)
    return folder


def cut(path, keep=0.5):
    with open(path, "r+b") as handle:
        handle.truncate(int(path.stat().st_size * keep))


def test_model_counts_only_when_whole_and_an_old_folder_without_the_marker_still_reads(tmp_path):
    run_dir = run_folder(tmp_path)
    whole_save(run_dir / layout.MODEL)
    assert layout.final_model(run_dir) == run_dir / layout.MODEL  # no marker, whole files (an older ortnb)
    layout.mark_whole(run_dir / layout.MODEL)
    assert layout.final_model(run_dir) == run_dir / layout.MODEL
    assert layout.kept_text(run_dir).startswith("model/ (the final weights)")
    cut(run_dir / layout.MODEL / "model.safetensors")
    assert layout.final_model(run_dir) is None  # the marker's sizes no longer hold
    (run_dir / layout.MODEL / layout.CHECKPOINT_MARKER).unlink()
    assert layout.final_model(run_dir) is None  # nor does the file's own header
    assert layout.kept_text(run_dir) == (f"nothing to load: the run wrote no evaluation's weights, no final model and "
                                         f"no whole checkpoint ({run_dir / 'model'} is not whole (a save cut short by "
                                         "a kill or a full disk))")
    lone = run_folder(tmp_path / "lone")
    (lone / layout.MODEL).mkdir()
    (lone / layout.MODEL / "config.json").write_text('{"model_type": "bert"}')  # a lone config.json
    assert layout.final_model(lone) is None


class SavingTrainer:
    """What save_final_model needs of a Trainer; ``dies`` ends the save half-way, as a kill or a full disk."""

    def __init__(self, dies=False):
        from types import SimpleNamespace

        self.args, self.dies = SimpleNamespace(should_save=True), dies

    def save_model(self, folder):
        whole_save(folder)
        if self.dies:
            cut(Path(folder) / "model.safetensors")
            raise OSError(28, "No space left on device")


def test_the_final_save_is_renamed_into_place_whole_and_a_cut_save_leaves_no_model(tmp_path):
    from ortnb.export import find_model_dir
    from ortnb.runner.worker import save_final_model

    run_dir = run_folder(tmp_path)
    with pytest.raises(OSError):
        save_final_model(SavingTrainer(dies=True), run_dir)
    assert not (run_dir / layout.MODEL).exists() and (run_dir / "model.tmp").is_dir()
    with pytest.raises(FileNotFoundError, match=r"holds no whole model: the final save in .*model.tmp never finished "
                                                r"\(a kill or a full disk\)"):
        find_model_dir(run_dir)
    assert full_disk.remove_cut_short_saves(run_dir) == ["model.tmp"]
    save_final_model(SavingTrainer(), run_dir)
    assert layout.is_whole(run_dir / layout.MODEL) and not (run_dir / "model.tmp").exists()
    assert find_model_dir(run_dir) == run_dir / layout.MODEL
    cut(run_dir / layout.MODEL / "model.safetensors")
    with pytest.raises(FileNotFoundError, match=r"holds no whole model: .*model is not whole \(a save cut short by a "
                                                r"kill or a full disk\), and no whole checkpoint-\*/; launch the run "
                                                r"again, or pass another run"):
        find_model_dir(run_dir)
    saved(run_dir / "checkpoint-6")
    assert find_model_dir(run_dir) == run_dir / "checkpoint-6"  # the cut model/ is passed over


def test_a_kill_between_the_two_renames_of_best_leaves_best_old_which_readers_use(tmp_path):
    run_dir = run_folder(tmp_path)
    old = whole_save(run_dir / "best.old")
    (old / layout.BEST_MARKER).write_text(json.dumps({"step": 4, "metric": "accuracy", "value": 0.75}))
    whole_save(run_dir / "best.tmp")  # the newer best, not yet renamed: never read
    found = layout.best(run_dir)
    assert found["step"] == 4 and found["folder"] == str(old)
    assert layout.kept_text(run_dir).startswith("best/ (step 4, accuracy 0.75)")
    from ortnb.export import find_model_dir

    assert find_model_dir(run_dir) == old
    staging = whole_save(run_dir / "best.tmp2")
    (staging / layout.BEST_MARKER).write_text(json.dumps({"step": 8, "metric": "accuracy", "value": 0.8}))
    layout.put_in_place(staging, run_dir / layout.BEST)
    assert layout.best(run_dir)["step"] == 8 and not old.exists()


def test_load_model_names_a_cut_or_foreign_weights_file(tmp_path):
    from ortnb.errors import WeightsError
    from ortnb.models.predict import load_folder

    folder = whole_save(tmp_path / "m")
    cut(folder / "model.safetensors")
    with pytest.raises(WeightsError, match=rf"^{folder / 'model.safetensors'} is cut short: [\d,]+ of its [\d,]+ bytes "
                                           r"are there \(a save interrupted by a kill or a full disk\); save the model "
                                           r"again with model.save_pretrained\(folder\)"):
        load_folder(folder)
    (folder / "model.safetensors").write_bytes(os.urandom(4096))
    with pytest.raises(WeightsError, match=r"model.safetensors is not a safetensors file \(its first bytes are no "
                                           r"safetensors header"):
        load_folder(folder)


def test_weights_that_turned_nan_are_refused_naming_the_tensors_and_what_is_kept(tmp_path):
    import torch

    from ortnb.runner.worker import refuse_broken_weights

    from .._helpers import tiny_bert

    run_dir = run_folder(tmp_path)
    model = tiny_bert()
    refuse_broken_weights(model, 3, run_dir)  # finite weights: nothing to say
    with torch.no_grad():
        model.bert.embeddings.word_embeddings.weight[0, 0] = float("nan")
    best = whole_save(run_dir / layout.BEST)
    (best / layout.BEST_MARKER).write_text(json.dumps({"step": 2, "metric": "accuracy", "value": 0.5}))
    with pytest.raises(FloatingPointError, match=r"^The weights became NaN or infinite by step 3 \(1 of 41 tensors: "
                                                 r"bert.embeddings.word_embeddings.weight\), after the last loss was "
                                                 r"taken. model/ was not written: such weights predict nothing. Kept: "
                                                 r"best/ \(step 2, accuracy 0.5\): load_model\(\), Try it and export "
                                                 r"use it.*lower learning_rate"):
        refuse_broken_weights(model, 3, run_dir)


def test_an_evaluation_of_nan_weights_never_becomes_best(tmp_path):
    from types import SimpleNamespace

    from ortnb.runner.evaluation import EvalCallback

    callback = EvalCallback(tmp_path, None, metric="accuracy", patience=None, interval=2, samples=8,
                            metrics=SimpleNamespace(details={}))
    state, control = SimpleNamespace(global_step=2, epoch=1.0, max_steps=4), SimpleNamespace()
    callback.on_evaluate(None, state, control, metrics={"eval_loss": 0.7, "eval_accuracy": 0.5})
    state.global_step = 4
    # NaN logits: argmax picks class 0 everywhere, which can score a better accuracy than trained weights
    callback.on_evaluate(None, state, control, metrics={"eval_loss": float("nan"), "eval_accuracy": 0.6})
    assert callback.tracker.best_step == 2 and callback.tracker.best_value == 0.5


@pytest.mark.slow
def test_a_run_whose_weights_turn_nan_at_its_last_step_fails_and_offers_best(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_FAULT", "nan:4")  # after the last step's loss: no loss ever shows it
    run = ortnb.launch(tiny(tmp_path, backend="eager", max_steps=4, warmup_steps=0, eval_every=2))
    assert run.wait(300) == "failed", run.error
    message = run.error.splitlines()[0]  # the worker's traceback tail follows it
    assert message.startswith("FloatingPointError: The weights became NaN or infinite by step 4 (1 of "), message
    assert "Kept: best/ (step " in message and "lower learning_rate" in message
    assert not (run.run_dir / layout.MODEL).exists() and layout.best(run.run_dir)["step"] in (0, 2)
    assert run.model_folder()[0] == run.run_dir / layout.BEST
    assert_no_workers_within(run)

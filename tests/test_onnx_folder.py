"""A run as an ONNX folder a user can ship: what goes in, from which weights, the parity figure, predict.py run for
real, and a destination holding a user's files refused (never deleted)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ortnb.onnx_folder import OnnxFolder, write_onnx_folder

pytestmark = pytest.mark.ort  # exports and checks a model in this process


class FinishedRun:
    """What write_onnx_folder reads of a Run: its folder and which weights it would load."""

    def __init__(self, run_dir: Path, weights: Path):
        self.run_dir, self.weights = run_dir, weights

    def model_folder(self, which="best"):
        return self.weights, "the best evaluation (step 2, accuracy 0.750)" if which == "best" else "the final weights"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from ortnb import assets

    torch.manual_seed(0)
    model, tokenizer = assets.load_model("tiny-bert", "sequence-classification")
    model.config.id2label, model.config.label2id = {0: "neg", 1: "pos"}, {"neg": 0, "pos": 1}
    run_dir = tmp_path_factory.mktemp("run")
    model.save_pretrained(run_dir / "best")
    tokenizer.save_pretrained(run_dir / "best")
    return FinishedRun(run_dir, run_dir / "best"), model.eval(), tokenizer


def test_the_folder_holds_what_inference_needs_and_says_where_the_weights_came_from(trained):
    run, model, tokenizer = trained
    shipped = write_onnx_folder(run)
    folder = run.run_dir / "onnx"
    assert shipped.folder == str(folder) and shipped.labels == ("neg", "pos")
    assert {"model.onnx", "config.json", "tokenizer.json", "export.json", "predict.py"} <= {p.name for p in folder.iterdir()}
    facts = json.loads((folder / "export.json").read_text())
    assert facts["source"] == "the best evaluation (step 2, accuracy 0.750)" and facts["labels"] == ["neg", "pos"]
    assert 0 <= facts["max_abs_diff"] <= 1e-4 and facts["task"] == "sequence-classification"
    assert json.loads((folder / "config.json").read_text())["id2label"] == {"0": "neg", "1": "pos"}
    assert shipped.text().startswith(f"exported the best evaluation (step 2, accuracy 0.750) to {folder}: model.onnx, "
                                     "the tokenizer, config.json and 2 class names; ONNX Runtime matches PyTorch "
                                     f"within {facts['max_abs_diff']:.1e}")

    # predict.py, run as a user would, labels texts as the PyTorch model does
    texts = ["a warm and funny delight", "flat and far too long"]
    printed = subprocess.run([sys.executable, str(folder / "predict.py"), *texts], capture_output=True, text=True,
                             check=True, timeout=120).stdout.splitlines()
    printed = [line for line in printed if "\t" in line]  # the training build of onnxruntime logs a DeepSpeed line
    with torch.no_grad():
        expected = [model.config.id2label[int(model(**tokenizer(t, return_tensors="pt")).logits.argmax())] for t in texts]
    assert printed == [f"{label}\t{text}" for label, text in zip(expected, texts)]


def test_a_folder_holding_the_users_files_is_refused_and_kept(trained, tmp_path):
    run, _, _ = trained
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("my notes")
    with pytest.raises(FileExistsError, match=r"holds files ortnb did not write \(notes.txt\)"):
        write_onnx_folder(run, mine)
    assert (mine / "notes.txt").read_text() == "my notes" and [p.name for p in mine.iterdir()] == ["notes.txt"]

    ours = tmp_path / "ours"
    write_onnx_folder(run, ours, which="last")
    assert json.loads((ours / "export.json").read_text())["source"] == "the final weights"
    write_onnx_folder(run, ours)  # our own export is replaced whole
    assert json.loads((ours / "export.json").read_text())["source"].startswith("the best evaluation")
    (ours / "weights-i-downloaded.bin").write_bytes(b"x")
    with pytest.raises(FileExistsError, match=r"files added to it \(weights-i-downloaded.bin\)"):
        write_onnx_folder(run, ours)
    assert (ours / "weights-i-downloaded.bin").exists() and not (tmp_path / "ours.tmp").exists()


def test_the_text_on_exact_values():
    shipped = OnnxFolder(folder="/r/onnx", source="the final weights", task="causal-lm", labels=(),
                         max_abs_diff=2.5e-6, providers=("CPUExecutionProvider",), notes=("a note",))
    assert shipped.text() == ("exported the final weights to /r/onnx: model.onnx, the tokenizer, config.json; ONNX "
                              "Runtime matches PyTorch within 2.5e-06 (largest difference of any output); try it: "
                              "python /r/onnx/predict.py \"a text\"; a note")


def test_the_dashboards_export_button_writes_the_latest_run_and_says_what(trained, monkeypatch):
    import ortnb
    from ortnb.display import Throttle

    from ._helpers import EVALS, FakeClock, FakeRun

    run, _, _ = trained

    class Exportable(FakeRun):
        def model_folder(self, which="best"):
            return run.model_folder(which)

    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    board = ortnb.Dashboard(ortnb.RunConfig(model="tiny-bert"), throttle=Throttle(0.5, FakeClock()), start=False)
    try:
        def tree(widget):
            yield widget
            for child in getattr(widget, "children", ()):
                yield from tree(child)

        assert any(widget is board.buttons["Export"] for widget in tree(board.widget))  # on the page, in its row
        training = Exportable(list(EVALS), status="running", run_dir=str(run.run_dir))
        board.track(training)
        board.refresh(force=True)
        assert board.buttons["Export"].disabled  # nothing finished to export while it trains
        assert board.export(wait=True) is None and "cannot export: a run is training" in board.status.value
        training._status = "completed"
        board.refresh(force=True)
        assert not board.buttons["Export"].disabled
        shipped = board.export(wait=True)
        assert shipped.folder == str(run.run_dir / "onnx") and (run.run_dir / "onnx" / "model.onnx").is_file()
        assert "exported the best evaluation (step 2, accuracy 0.750)" in board.status.value
        assert not board.buttons["Export"].disabled and not board.buttons["Run"].disabled
    finally:
        board.close()

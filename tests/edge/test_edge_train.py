"""ortnb.edge end to end on tiny-bert artifacts and real Rotten Tomatoes text: the loss falls in a process
without PyTorch, checkpoints round-trip with their optimizer state, a resumed run counts on, and the inference
model, the training API's eval mode and PyTorch agree."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest
import torch

from ortnb import assets
from ortnb.edge import batches, loop
from ortnb.edge.manifest import Manifest

from .._helpers import delete_until_gone, tiny_bert

pytestmark = pytest.mark.slow
api = pytest.importorskip("onnxruntime.training.api")


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(assets.MODELS["minilm"].locate())


@pytest.fixture(scope="module")
def model(tokenizer):
    return tiny_bert(vocab_size=tokenizer.vocab_size)  # dropout 0: parity is exact up to float error


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory, model, tokenizer):
    from ortnb.edge import export_artifacts

    folder = tmp_path_factory.mktemp("edge") / "all"
    result = export_artifacts(model, folder, trainable="all", tokenizer=tokenizer, seq_len=64)
    assert result.trainable_parameters == sum(p.numel() for p in model.parameters())
    assert result.frozen_parameters == 0
    return folder


@pytest.fixture(scope="module")
def rows():
    frame = assets.rotten_tomatoes_frame()
    return frame.iloc[:16].to_dict("records"), frame.iloc[1000:1064].to_dict("records")


@pytest.fixture(scope="module")
def run(artifacts, rows, tmp_path_factory):
    from ortnb.edge import train

    train_rows, held_out = rows
    return train(artifacts, train_rows, steps=20, batch_size=16, learning_rate=3e-3, eval_dataset=held_out,
                 save_every=10, output_dir=tmp_path_factory.mktemp("runs"))


def test_the_loss_falls_without_pytorch(run):
    assert run.status == "completed"
    losses = run.metrics["loss"].tolist()
    assert len(losses) == 20 and run.metrics["step"].tolist() == list(range(1, 21))
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses
    engine = run.summary()
    assert engine["engine"] == "onnxruntime-training-api" and engine["samples_per_s"] > 0
    report = [e for e in run.events if e["event"] == "engine"][-1]
    assert report["torch_loaded"] is False  # "torch" not in sys.modules at the end of the run
    assert "training_api_without_torch" in report["fixes"]  # the package was entered the torch-free way
    assert list(run.evaluations["step"]) == [0, 20]  # a DataFrame, as every run's


def test_an_edge_run_reads_like_any_run(run):
    import ortnb
    from ortnb import comparison, metrics

    again = ortnb.attach(run.run_dir)
    assert type(again).__name__ == "EdgeRun" and again.status == "completed"
    assert again.metrics["loss"].tolist() == run.metrics["loss"].tolist()
    table = comparison.table([[run.summary()]])
    assert table.loc[0, "engine"] == "onnxruntime-training-api" and table.loc[0, "status"] == "completed"
    # the same types and signatures as a trainer run's: evaluations a DataFrame, load_model(which, quiet), predict
    assert list(again.evaluations.columns) == list(metrics.EVAL_COLUMNS)
    assert again.evaluations["step"].tolist() == [0, 20]
    folder, what = again.model_folder("last")
    assert folder == again.checkpoint and what == f"the latest checkpoint ({folder.name})"
    assert "keeps no best evaluation's weights apart" in again.model_folder()[1]
    assert again.load_model("last", quiet=True).num_labels == 2
    [answer] = again.predict(["a warm, funny and moving film"])
    assert answer["label"] in answer["probabilities"] and len(answer["probabilities"]) == 2
    with pytest.raises(ValueError, match="which='final'"):
        again.model_folder("final")


def test_first_step_loss_equals_pytorch(run, artifacts, model, rows):
    """Step 1 ran on the untrained weights: PyTorch's loss on that same batch matches the recorded one."""
    info = Manifest.read(artifacts)
    encoded = batches.encode(rows[0], info, artifacts / info.tokenizer)
    inputs, labels = batches.Batches(encoded, 16, 0, info.pad_token_id).batch(1)
    with torch.no_grad():
        logits = model(input_ids=torch.from_numpy(inputs["input_ids"]),
                       attention_mask=torch.from_numpy(inputs["attention_mask"])).logits
        expected = torch.nn.functional.cross_entropy(logits, torch.from_numpy(labels)).item()
    assert run.metrics["loss"].iloc[0] == pytest.approx(expected, abs=1e-4)


def test_three_way_parity_after_training(run, artifacts, rows):
    """The exported inference model, the training API's eval mode and PyTorch with the trained weights
    copied back agree on logits within 1e-4."""
    import onnxruntime

    info = Manifest.read(artifacts)
    encoded = batches.encode(rows[1][:16], info, artifacts / info.tokenizer)
    inputs, labels = batches.Batches(encoded, 16, 0, info.pad_token_id).rows(np.arange(16))
    session = onnxruntime.InferenceSession(str(run.inference_model), providers=["CPUExecutionProvider"])
    inference = session.run(["logits"], inputs)[0]

    state = api.CheckpointState.load_checkpoint(str(run.checkpoint))
    module = api.Module(str(artifacts / "training_model.onnx"), state, str(artifacts / "eval_model.onnx"))
    module.eval()
    _, evaluated = module(inputs["input_ids"], inputs["attention_mask"], labels)

    trained = run.load_model()
    with torch.no_grad():
        pytorch = trained(**{k: torch.from_numpy(v) for k, v in inputs.items()}).logits.numpy()
    untrained = Manifest.read(artifacts)  # the weights did move: the agreement is not the trivial one
    assert untrained.trainable_parameters > 0
    assert np.abs(inference - evaluated).max() < 1e-4
    assert np.abs(inference - pytorch).max() < 1e-4
    assert np.abs(pytorch - _logits_of(artifacts, inputs)).max() > 1e-3


def _logits_of(artifacts, inputs):
    from ortnb.edge import to_pytorch

    with torch.no_grad():
        return to_pytorch(artifacts)(**{k: torch.from_numpy(v) for k, v in inputs.items()}).logits.numpy()


def test_checkpoint_round_trip(run, artifacts, tmp_path, rows):
    """Saved and loaded again: the same parameters, and the same next-step loss and update."""
    info = Manifest.read(artifacts)
    encoded = batches.encode(rows[0], info, artifacts / info.tokenizer)
    inputs, labels = batches.Batches(encoded, 8, 0, info.pad_token_id).batch(21)
    first = api.CheckpointState.load_checkpoint(str(run.checkpoint))
    api.CheckpointState.save_checkpoint(first, str(tmp_path / "again"), include_optimizer_state=True)
    second = api.CheckpointState.load_checkpoint(str(tmp_path / "again"))
    names = list(info.trainable)
    assert all(np.array_equal(first.parameters[n].data, second.parameters[n].data) for n in names)
    results = []
    for state in (first, second):
        session = loop.Session(api, state, api.Module(str(artifacts / "training_model.onnx"), state,
                                                      str(artifacts / "eval_model.onnx")), None, info, 20)
        session.optimizer = api.Optimizer(str(artifacts / "optimizer_model.onnx"), session.module)
        loss, _ = loop.train_step(session, inputs, labels, 1e-3)
        results.append((loss, state.parameters[names[-1]].data.copy()))
    assert results[0][0] == results[1][0]
    assert np.array_equal(results[0][1], results[1][1])  # the optimizer's moments came back too


def test_resume_counts_on_and_repeats_the_same_steps(run, artifacts, rows, tmp_path):
    """Resumed from the step-10 checkpoint, steps 11 to 20 are the first run's steps again: same batches,
    learning rates and optimizer state, so the same losses."""
    from ortnb.edge import train

    step10 = run.run_dir / loop.CHECKPOINTS / "step-10"
    assert step10.exists()
    resumed = train(artifacts, rows[0], steps=20, batch_size=16, learning_rate=3e-3, resume_from=step10,
                    output_dir=tmp_path)
    assert resumed.metrics["step"].tolist() == list(range(11, 21))
    np.testing.assert_allclose(resumed.metrics["loss"], run.metrics["loss"].iloc[10:], rtol=0, atol=2e-4)  # threads reorder sums
    assert resumed.checkpoint.name == "step-20"


@pytest.mark.parametrize("how", ["stop()", "SIGINT"])
def test_a_stopped_run_keeps_its_checkpoint_and_metrics(artifacts, rows, tmp_path, how):
    from ortnb.edge import train

    live = train(artifacts, rows[0], steps=100000, batch_size=4, learning_rate=1e-4, output_dir=tmp_path,
                 wait=False)
    deadline = time.monotonic() + 120
    while len(live.metrics) < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert live.status == "running"
    if how == "stop()":  # the Dashboard's Stop: the STOP file
        assert live.stop(timeout=60) == "stopped"
    else:  # Ctrl-C in a terminal: end after this step, with a checkpoint
        os.kill(live._process.pid, signal.SIGINT)
        assert live.wait(timeout=60) == "stopped"
    last = int(live.metrics["step"].iloc[-1])
    assert live.checkpoint.name == f"step-{last}"
    assert live.inference_model is not None and live.bad_lines == 0
    again = train(artifacts, rows[0], steps=last + 3, batch_size=4, learning_rate=1e-4, resume_from=live,
                  output_dir=tmp_path)
    assert again.metrics["step"].tolist() == [last + 1, last + 2, last + 3]


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_ortnb_edge_train_stops_with_a_checkpoint_and_leaves_no_process(artifacts, rows, tmp_path,
                                                                                   signum):
    import json
    import subprocess
    import sys

    import ortnb
    from ortnb.runs import layout

    from .._helpers import assert_none_left, signal_when, steps_in

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"text": r["text"], "label": r["label"]}) + "\n" for r in rows[0]))
    runs = tmp_path / "runs"
    process = subprocess.Popen([sys.executable, "-m", "ortnb", "edge", "train", str(artifacts), str(data),
                                "--steps", "100000", "--batch-size", "4", "--runs", str(runs)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed = signal_when(process, lambda: steps_in(runs) >= 3, signum)
    assert process.returncode == 128 + signum, printed
    assert "Traceback" not in printed and "ortnb edge train: stopped" in printed, printed
    run_dir = printed.split("ortnb edge train: ", 1)[1].splitlines()[0]  # its first line names the run folder
    run = ortnb.attach(run_dir)
    assert run.status == "stopped" and run.events[-1]["forced"] is False
    assert run.checkpoint.name == f"step-{int(run.metrics['step'].iloc[-1])}"
    assert json.loads((run.run_dir / layout.STATUS).read_text())["status"] == "stopped"
    assert_none_left(runs)


def test_the_dashboard_charts_and_compares_edge_runs(run, artifacts, rows, tmp_path, monkeypatch):
    """Two edge runs on the same artifacts and data: one bar each, engine named, the first the baseline."""
    import ortnb
    from ortnb.edge import train

    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    smaller = train(artifacts, rows[0], steps=20, batch_size=8, learning_rate=3e-3, output_dir=run.run_dir.parent,
                    name="batch 8")  # same rows, same folder of runs: the same stored data file
    dashboard = ortnb.Dashboard(start=False)
    try:
        for finished in (run, smaller):
            dashboard.track(finished)
            dashboard.refresh(force=True)
            assert dashboard.add_to_comparison(finished), dashboard.state.message
        table = dashboard.comparison()
        assert list(table["engine"]) == ["onnxruntime-training-api"] * 2
        assert len(table) == 2 and "step 20/20" in dashboard.status.value
        assert any(trace.name.endswith("[onnxruntime-training-api]") for trace in dashboard.figure.data)
    finally:
        dashboard.close()


def test_a_killed_run_reads_failed_and_keeps_its_last_whole_checkpoint(artifacts, rows, tmp_path):
    from ortnb.edge import train

    live = train(artifacts, rows[0], steps=100000, batch_size=4, learning_rate=1e-4, save_every=2,
                 output_dir=tmp_path, wait=False)
    deadline = time.monotonic() + 120
    while len(live.metrics) < 6 and time.monotonic() < deadline:
        time.sleep(0.2)
    os.kill(live._process.pid, signal.SIGKILL)  # no chance to checkpoint or write a final event
    assert live.wait(timeout=30) == "failed"
    assert "the writing rank" in live.error and "ended without writing a final event" in live.error, live.error
    assert live.bad_lines == 0 and len(live.metrics) >= 6
    kept = int(live.checkpoint.name.rpartition("-")[2])
    assert kept % 2 == 0 and kept >= 6 - 2  # the last whole one: a kill mid-save leaves only a .partial
    again = train(artifacts, rows[0], steps=kept + 2, batch_size=4, learning_rate=1e-4, resume_from=live,
                  output_dir=tmp_path)
    assert again.metrics["step"].tolist() == [kept + 1, kept + 2]


def test_deleting_an_edge_run_folder_mid_run_stops_it_and_it_stays_deleted(artifacts, rows, tmp_path):
    """The same protocol as a trainer run (runs/recorder.py): the worker sees the folder gone after a step,
    writes nothing more (no checkpoint, no inference model bringing the folder back) and ends."""
    from ortnb.edge import train

    live = train(artifacts, rows[0], steps=100000, batch_size=4, learning_rate=1e-4, output_dir=tmp_path,
                 wait=False)
    deadline = time.monotonic() + 120
    while len(live.metrics) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    delete_until_gone(live.run_dir)
    assert live.wait(timeout=60) == "failed"
    assert "the run folder was deleted while the run trained" in live.error, live.error
    assert live._process.wait(timeout=30) == 1  # the worker saw it after its next step
    time.sleep(1)  # a worker that carried on would recreate files by now
    assert not live.run_dir.exists()


def test_step_times_in_fresh_processes_name_their_engine(artifacts, model, rows, tmp_path):
    """The comparison the notebook shows: each configuration in its own process, the training API's without
    PyTorch; the engine that ran and each process's peak memory are reported."""
    from ortnb.edge import timing

    model.save_pretrained(tmp_path / "model")
    table = timing.compare_steps([timing.Configuration("api", "all", str(artifacts)),
                                  timing.Configuration("eager", "all", str(artifacts))],
                                 tmp_path / "model", rows[0][:8], steps=4, warmup=1)
    assert table["error"].isna().all(), table["error"].tolist()
    assert list(table["engine"]) == ["onnxruntime-training-api", "pytorch"]
    assert list(table["steps"]) == [3, 3] and (table["median_ms"] > 0).all()
    assert table.loc[0, "peak_rss_mb"] < table.loc[1, "peak_rss_mb"]  # no PyTorch in the API's process



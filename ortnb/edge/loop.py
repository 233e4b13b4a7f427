"""The device's training loop: ``onnxruntime.training.api`` and numpy only (no PyTorch, no transformers).

Each step writes the same metrics.jsonl record as an ORTTrainer run, so the Dashboard's charts, run
summaries and comparison tables read an edge run like any other; the engine is "onnxruntime-training-api".
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..runs import records
from ..memory import peak_rss_mb
from ..runs.layout import checkpoint_step
from . import batches, manifest, resume
from .config import EdgeConfig
from .manifest import Manifest

ENGINE = "onnxruntime-training-api"
CHECKPOINTS = "checkpoints"
INFERENCE_MODEL = "inference.onnx"
STEP_PROPERTY = "ortnb_step"  # the optimizer step a checkpoint holds, stored in the checkpoint itself
EVAL_BATCH = 16  # a device evaluates in small batches: activation memory grows with the batch


@dataclass
class Session:
    """ORT's training objects for one artifacts folder."""

    api: object
    state: object
    module: object
    optimizer: object
    info: Manifest
    step: int  # optimizer steps already taken (a resumed checkpoint's)


def checkpoint_path(run_dir: Path, step: int) -> Path:
    return Path(run_dir) / CHECKPOINTS / f"step-{step}"


def latest_checkpoint(folder: Path) -> Path | None:
    """The newest step-N checkpoint of an edge run folder (or the file itself)."""
    folder = Path(folder)
    if folder.is_file():
        return folder
    found = [p for p in (folder / CHECKPOINTS).glob("step-*")
             if checkpoint_step(p, "step") is not None and p.stat().st_size > 0]
    return max(found, key=lambda p: checkpoint_step(p, "step"), default=None)


def open_session(api, cfg: EdgeConfig) -> Session:
    folder = Path(cfg.artifacts_dir)
    info = Manifest.read(folder)
    if cfg.resume_from:  # a damaged file or other artifacts' weights: named here, not in ORT's C++ words
        state = resume.check(api, latest_checkpoint(Path(cfg.resume_from)), folder)
    else:
        state = api.CheckpointState.load_checkpoint(str(folder / manifest.CHECKPOINT))
    step = int(state.properties[STEP_PROPERTY]) if STEP_PROPERTY in state.properties else 0
    options = session_options(cfg.threads)
    module = api.Module(str(folder / manifest.TRAINING_MODEL), state, str(folder / manifest.EVAL_MODEL),
                        device="cpu", session_options=options)
    optimizer = api.Optimizer(str(folder / manifest.OPTIMIZER_MODEL), module)
    return Session(api, state, module, optimizer, info, step)


def session_options(threads: int | None):
    from onnxruntime import SessionOptions

    options = SessionOptions()
    options.intra_op_num_threads = threads or os.cpu_count() or 1
    options.log_severity_level = 3  # "Removing initializer ..." for every dropout constant: not news to a user
    return options


def learning_rate(cfg: EdgeConfig, step: int) -> float:
    """Linear decay from the peak at step 1 to 0 after the last step (as ORTTrainer's runs decay)."""
    return cfg.learning_rate * max(0.0, 1.0 - (step - 1) / cfg.steps)


def train_step(session: Session, inputs: dict, labels: np.ndarray, lr: float) -> tuple[float, np.ndarray]:
    """One optimizer step; returns (loss, logits)."""
    session.module.train()
    session.optimizer.set_learning_rate(lr)
    loss, logits = session.module(*[inputs[name] for name in session.info.inputs], labels)
    session.optimizer.step()
    session.module.lazy_reset_grad()
    return float(loss), logits


def evaluate(session: Session, data: batches.Batches) -> dict:
    """Loss and accuracy of the eval model over every row, in batches of EVAL_BATCH."""
    session.module.eval()
    total_loss, correct, count = 0.0, 0, len(data.data)
    for start in range(0, count, EVAL_BATCH):
        chosen = np.arange(start, min(count, start + EVAL_BATCH))
        inputs, labels = data.rows(chosen)
        loss, logits = session.module(*[inputs[name] for name in session.info.inputs], labels)
        total_loss += float(loss) * len(chosen)
        correct += int((np.asarray(logits).argmax(-1) == labels).sum())
    return {"eval_loss": total_loss / count, "accuracy": correct / count, "samples": count}


def save(session: Session, run_dir: Path, step: int) -> Path:
    """Checkpoint weights and optimizer state; written to a temporary name first, so a kill mid-save leaves
    the previous checkpoint as the latest whole one."""
    path = checkpoint_path(run_dir, step)
    path.parent.mkdir(exist_ok=True)
    session.state.properties[STEP_PROPERTY] = step
    partial = path.with_name(path.name + ".partial")
    session.api.CheckpointState.save_checkpoint(session.state, str(partial), include_optimizer_state=True)
    os.replace(partial, path)
    return path


def step_record(step: int, step_time: float, inputs: dict, loss: float, lr: float) -> dict:
    mask = inputs["attention_mask"]
    rows, width = mask.shape
    return records.step(step, step_time=step_time, samples=rows, padded_tokens=rows * width,
                        real_tokens=int(mask.sum()), seq_len=width, loss=loss, learning_rate=lr,
                        peak_rss_mb=[peak_rss_mb()])


def run(run_dir: Path, cfg: EdgeConfig, writer, api, fixes: list[str], stop, after_step=None) -> str:
    """Train to ``cfg.steps``; returns "completed" or "stopped". ``stop()`` says a stop was asked for
    (the STOP file, SIGTERM or SIGINT): the loop ends after the step in progress, with a checkpoint.
    ``after_step(step)`` runs before anything of a step is written and may raise to end the run
    (Recorder.check_folder: the folder was deleted under it)."""
    run_dir = Path(run_dir)
    writer.event("phase", phase=records.LOADING_MODEL)
    started = time.perf_counter()
    session = open_session(api, cfg)
    info = session.info
    writer.event("phase", phase=records.TOKENIZING)
    tokenizer = Path(cfg.artifacts_dir) / info.tokenizer if info.tokenizer else None
    train_rows = batches.encode(batches.read_rows(cfg.dataset), info, tokenizer, "dataset")
    data = batches.Batches(train_rows, cfg.batch_size, cfg.seed, info.pad_token_id)
    held_out = None
    if cfg.eval_dataset:
        held_out = batches.Batches(batches.encode(batches.read_rows(cfg.eval_dataset), info, tokenizer,
                                                  "eval_dataset"), EVAL_BATCH, cfg.seed, info.pad_token_id)
    writer.event("started", label=cfg.label, world_size=1, rank=0, task=info.task, train_samples=len(train_rows),
                 max_steps=cfg.steps, first_step=session.step + 1, padding="longest", length_grouping=False,
                 parameters=info.trainable_parameters + info.frozen_parameters,
                 trainable_parameters=info.trainable_parameters)
    if held_out is not None:
        writer.write(records.evaluation(session.step, metric="accuracy", **evaluate(session, held_out)))
    writer.event("phase", phase=records.FIRST_STEP)
    outcome, step, first_step_s = records.COMPLETED, session.step, None
    while step < cfg.steps:
        if stop():
            outcome = records.STOPPED
            break
        step += 1
        inputs, labels = data.batch(step)
        lr = learning_rate(cfg, step)
        began = time.perf_counter()
        loss, _ = train_step(session, inputs, labels, lr)
        took = time.perf_counter() - began
        if after_step is not None:
            after_step(step)
        writer.write(step_record(step, took, inputs, loss, lr))
        if first_step_s is None:
            first_step_s = time.perf_counter() - started
            writer.event("engine", **engine_report(info, fixes, first_step_s))
        if not np.isfinite(loss):
            raise FloatingPointError(f"The loss became {loss} at step {step}. Training stopped: lower learning_rate.")
        if cfg.save_every and step % cfg.save_every == 0:
            save(session, run_dir, step)
        if held_out is not None and cfg.eval_every and step % cfg.eval_every == 0 and step < cfg.steps:
            writer.write(records.evaluation(step, metric="accuracy", **evaluate(session, held_out)))
    saved = save(session, run_dir, step)
    if held_out is not None and outcome == records.COMPLETED:
        writer.write(records.evaluation(step, metric="accuracy", **evaluate(session, held_out)))
    session.module.export_model_for_inferencing(str(run_dir / INFERENCE_MODEL), [info.output])
    writer.event("engine", **engine_report(info, fixes, first_step_s))
    writer.event(outcome, step=step, checkpoint=str(saved), inference_model=str(run_dir / INFERENCE_MODEL),
                 **({"forced": False} if outcome == records.STOPPED else {}))
    return outcome


def engine_report(info: Manifest, fixes: list[str], first_step_s: float | None) -> dict:
    import sys

    import onnxruntime

    return {"engine": ENGINE, "fallback": False, "exports": 0, "time_to_first_step_s": first_step_s,
            "onnxruntime": onnxruntime.__version__, "torch_loaded": "torch" in sys.modules,
            "trainable": len(info.trainable), "trainable_parameters": info.trainable_parameters,
            "fixes": list(info.fixes) + list(fixes)}

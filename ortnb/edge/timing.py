"""Step time of ONNX Runtime's training API next to ORTModule and eager PyTorch, on the same batch and the
same trainable weights, in one process. Engines are alternated round by round, warm-up steps are left out,
and each row says which engine really ran (ORTModule can fall back to PyTorch)."""

from __future__ import annotations

import copy
import statistics
import time
from pathlib import Path

import numpy as np

from . import manifest, trainable as trainable_names

API = "onnxruntime-training-api"


def api_stepper(artifacts_dir, inputs: dict, labels: np.ndarray, learning_rate: float):
    """One training-API step on the artifacts' initial weights, as a function; and the engine's name."""
    from onnxruntime.training import api

    from .loop import Session, _session_options, train_step

    folder = Path(artifacts_dir)
    info = manifest.Manifest.read(folder)
    state = api.CheckpointState.load_checkpoint(str(folder / manifest.CHECKPOINT))
    module = api.Module(str(folder / manifest.TRAINING_MODEL), state, str(folder / manifest.EVAL_MODEL),
                        session_options=_session_options(None))
    session = Session(api, state, module, api.Optimizer(str(folder / manifest.OPTIMIZER_MODEL), module), info, 0)
    return (lambda: train_step(session, inputs, labels, learning_rate)[0]), (lambda: API)


def torch_stepper(model, trainable, inputs: dict, labels: np.ndarray, learning_rate: float, engine: str):
    """One PyTorch step (eager, or through ortnb's ORT engine) training only ``trainable``."""
    import torch

    model = copy.deepcopy(model).train()
    names = set(trainable_names.resolve(trainable, [n for n, _ in model.named_parameters()]))
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name in names)
    if engine == "ort":
        import ortnb

        model = ortnb.ort_model(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=learning_rate, eps=1e-8)
    feeds = {k: torch.from_numpy(v) for k, v in inputs.items()}
    target = torch.from_numpy(labels)

    def step() -> float:
        loss = torch.nn.functional.cross_entropy(model(**feeds).logits, target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    def engine_name() -> str:
        if engine != "ort":
            return "pytorch"
        import ortnb

        return ortnb.engine_report(model)["engine"]

    return step, engine_name


def step_times(steppers: dict, steps: int = 10, warmup: int = 3, rounds: int = 2):
    """{label: (step, engine_name)} -> DataFrame of median and IQR step time (ms) per label, engines alternated
    ``rounds`` times, ``warmup`` steps of each left out first."""
    import pandas as pd

    times = {label: [] for label in steppers}
    for label, (step, _) in steppers.items():
        for _ in range(warmup):
            step()
    per_round = max(1, steps // rounds)
    for _ in range(rounds):
        for label, (step, _) in steppers.items():
            for _ in range(per_round):
                began = time.perf_counter()
                step()
                times[label].append(time.perf_counter() - began)
    rows = []
    for label, (_, engine_name) in steppers.items():
        values = times[label]
        quartiles = statistics.quantiles(values, n=4) if len(values) >= 4 else [None, None, None]
        rows.append({"configuration": label, "engine": engine_name(), "median_ms": 1000 * statistics.median(values),
                     "iqr_ms": 1000 * (quartiles[2] - quartiles[0]) if quartiles[0] is not None else None,
                     "steps": len(values)})
    return pd.DataFrame(rows)

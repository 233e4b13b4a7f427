"""Step time of ONNX Runtime's training API next to ORTModule and eager PyTorch, on the same batch and the
same trainable weights. Each configuration runs in a fresh process, configurations alternated: in one
process the thread pools of earlier ONNX Runtime sessions keep spinning and take the cores from whichever
engine runs next (in-process medians swung by 2x on 2 cores). Warm-up steps are left out, medians and IQR are
reported, and each row says which engine really ran (ORTModule can fall back to PyTorch).

    python -m ortnb.edge.timing ENGINE TRAINABLE ARTIFACTS_DIR MODEL ROWS_JSONL STEPS LEARNING_RATE
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import stats
from ..vocabulary import Task
from . import manifest
from . import trainable as trainable_names

ENGINES = {"api": "onnxruntime-training-api", "ort": "onnxruntime", "eager": "pytorch"}
NAMES = {"api": "training API", "ort": "ORTModule", "eager": "PyTorch eager"}


@dataclass(frozen=True)
class Configuration:
    """One row of the comparison: an engine (api, ort or eager) training ``trainable`` of the model. ``api``
    reads the artifacts made for that selection; the PyTorch engines freeze the other weights themselves."""

    engine: str
    trainable: str
    artifacts_dir: str
    learning_rate: float = 1e-4

    @property
    def label(self) -> str:
        return f"{NAMES[self.engine]}, {self.trainable}"


# -- one step, as a function ----------------------------------------------------------------------------

def api_stepper(artifacts_dir, inputs: dict, labels: np.ndarray, learning_rate: float):
    """One training-API step on the artifacts' initial weights, as a function; and the engine's name."""
    from .loop import Session, session_options, train_step
    from .notorch import import_training_api

    api, _ = import_training_api()
    folder = Path(artifacts_dir)
    info = manifest.Manifest.read(folder)
    state = api.CheckpointState.load_checkpoint(str(folder / manifest.CHECKPOINT))
    module = api.Module(str(folder / manifest.TRAINING_MODEL), state, str(folder / manifest.EVAL_MODEL),
                        session_options=session_options(None))
    session = Session(api, state, module, api.Optimizer(str(folder / manifest.OPTIMIZER_MODEL), module), info, 0)
    return (lambda: train_step(session, inputs, labels, learning_rate)[0]), (lambda: ENGINES["api"])


def torch_stepper(model, trainable, inputs: dict, labels: np.ndarray, learning_rate: float, engine: str):
    """One PyTorch step (eager, or through ortnb's ORT engine) training only ``trainable``."""
    import torch

    model = copy.deepcopy(model).train()
    names = set(trainable_names.resolve(trainable, [n for n, _ in model.named_parameters()]))
    for name, parameter in model.named_parameters():
        parameter.requires_grad_(name in names)
    if engine == "ort":
        from ..custom_loop import ort_model

        model = ort_model(model)
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
            return ENGINES["eager"]
        from ..custom_loop import engine_report

        return engine_report(model)["engine"]

    return step, engine_name


# -- a fresh process per configuration ------------------------------------------------------------------

def child(engine: str, trainable: str, artifacts_dir: str, model: str, rows_path: str, steps: int,
          learning_rate: float) -> dict:
    """Time ``steps`` steps of one configuration in this (fresh) process; the training API's with PyTorch
    hidden first, as on a device."""
    import time

    if engine == "api":
        from .notorch import hide_torch

        hide_torch()
    from ..memory import peak_rss_mb
    from .batches import batch_of

    rows = [json.loads(line) for line in Path(rows_path).read_text().splitlines() if line.strip()]
    inputs, labels = batch_of(artifacts_dir, rows)
    if engine == "api":
        step, engine_name = api_stepper(artifacts_dir, inputs, labels, learning_rate)
    else:
        step, engine_name = torch_stepper(_load(model), trainable, inputs, labels, learning_rate, engine)
    times = []
    for _ in range(steps):
        began = time.perf_counter()
        step()
        times.append(time.perf_counter() - began)
    ran = engine_name()
    result = {"step_times": times, "engine": ran, "peak_rss_mb": peak_rss_mb(), "torch_loaded": "torch" in sys.modules,
              "batch_shape": list(map(int, inputs["input_ids"].shape))}
    if ran != ENGINES[engine]:  # ORTModule fell back to PyTorch: these are not ONNX Runtime's times
        result["not_counted"] = f"{ran} ran instead of {ENGINES[engine]}"
    return result


def _load(model: str):
    from ..models import builtin
    from ..progress import without_progress_bars

    with without_progress_bars():
        if model in builtin.MODELS:
            return builtin.load_model(model, Task.SEQUENCE_CLASSIFICATION)[0]
        from transformers import AutoModelForSequenceClassification

        from ..export import find_model_dir

        return AutoModelForSequenceClassification.from_pretrained(find_model_dir(Path(model)))


def run_child(configuration: Configuration, model: str, rows_path: str, steps: int, timeout: float = 900) -> dict:
    """One configuration's run in a fresh process: its result, or {"error": ...} (never raised: one failed
    configuration must not hide the others)."""
    command = [sys.executable, "-m", "ortnb.edge.timing", configuration.engine, configuration.trainable,
               configuration.artifacts_dir, model, rows_path, str(steps), repr(configuration.learning_rate)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode or not lines:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:500]}
    return json.loads(lines[-1])


def compare_steps(configurations: list[Configuration], model, rows: list[dict], *, steps: int = 12,
                  warmup: int = 3, repeats: int = 1):
    """Time each configuration in fresh processes, alternated ``repeats`` times; a DataFrame with the median
    and IQR step time after ``warmup`` steps, the engine that ran and each process's peak memory.
    ``model``: a built-in model name, a save_pretrained folder or an ortnb run (the PyTorch engines' model)."""
    model = str(getattr(model, "run_dir", model))
    times = {c.label: [] for c in configurations}
    results = {c.label: [] for c in configurations}
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as handle:
        handle.write("".join(json.dumps(row) + "\n" for row in rows))
    try:
        for _ in range(repeats):
            for configuration in configurations:
                result = run_child(configuration, model, handle.name, steps)
                results[configuration.label].append(result)
                if "not_counted" not in result:
                    times[configuration.label] += result.get("step_times", [])[warmup:]
    finally:
        Path(handle.name).unlink(missing_ok=True)
    return _table(configurations, times, results)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else 1000 * seconds


def _table(configurations, times, results):
    import pandas as pd

    rows = []
    for configuration in configurations:
        values, runs = times[configuration.label], results[configuration.label]
        errors = [r.get("error") or r.get("not_counted") for r in runs if "error" in r or "not_counted" in r]
        engines = sorted({r["engine"] for r in runs if "engine" in r})
        rows.append({"configuration": configuration.label, "engine": "/".join(engines) or "failed",
                     "median_ms": _ms(stats.median(values)), "iqr_ms": _ms(stats.iqr(values)),
                     "steps": len(values), "peak_rss_mb": max((r["peak_rss_mb"] for r in runs if "peak_rss_mb" in r),
                                                               default=None),
                     "error": errors[0] if errors else None})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> int:
    engine, trainable, artifacts_dir, model, rows_path, steps, learning_rate = (argv or sys.argv[1:])[:7]
    print(json.dumps(child(engine, trainable, artifacts_dir, model, rows_path, int(steps), float(learning_rate))),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The worker's side of a profile: a Trainer callback that runs torch.profiler over a window of whole steps
after warm-up, and (on ORT) ONNX Runtime's own session profiler for ORTModule's graphs, and writes what they saw
to the run folder as plain data (``profile.json``), for parse.py and profile.py to read.

The window starts when step ``warmup`` has ended and stops when step ``warmup + steps`` has ended: ``steps``
whole cycles of the training loop, with the batches' loading and every callback's work in them, timed with
the same clock as the run's step records.

ONNX Runtime 1.19.2 under ORTModule: ORTModule builds its session options in
``GraphExecutionManager._get_session_config`` and offers no profiling switch, so ``enable_ort_profiling``
wraps that method to set ``enable_profiling`` and ``profile_file_prefix`` on them. The session writes its
JSON trace when it is destroyed (or asked to end profiling): the trace holds every node of every run of the
session (warm-up included), each event with its start in microseconds since the session's profiling began;
the window's own events are told apart by the wall-clock times recorded here.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from transformers import TrainerCallback

from .. import files

PROFILE = "profile.json"  # in the run folder
ORT_TRACE_PREFIX = "ort-profile"  # ONNX Runtime writes <prefix>_<date>.json in the run folder
REQUEST = "profile-request.json"  # {"warmup": W, "steps": S}: asks the worker for a profile


def requested(run_dir: Path) -> dict | None:
    """The profile a run was asked for ({warmup, steps}), or None."""
    return files.read_json_object(Path(run_dir) / REQUEST)


class ProfileCallback(TrainerCallback):
    """torch.profiler over steps ``warmup + 1`` .. ``warmup + steps``; the writing rank writes PROFILE."""

    def __init__(self, run_dir: Path, warmup: int, steps: int, writes: bool, ort: bool = False):
        self.run_dir, self.warmup, self.steps, self.writes, self.ort = Path(run_dir), warmup, steps, writes, ort
        self.profiler = None
        self.window: dict | None = None
        self.written = False

    def on_step_end(self, args, state, control, model=None, **kwargs):
        if state.global_step == self.warmup and self.profiler is None and not self.written:
            self._start()
        elif self.profiler is not None and state.global_step == self.warmup + self.steps:
            self._stop(state.global_step, model)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        if self.profiler is not None:  # the run ended (or was stopped) inside the window: profile what ran
            self._stop(state.global_step, model)

    def _start(self) -> None:
        import torch

        self.profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True)
        self.profiler.__enter__()
        self.window = {"began_wall": time.time(), "began": time.perf_counter(), "first_step": self.warmup + 1}

    def _stop(self, last_step: int, model) -> None:
        profiler, self.profiler = self.profiler, None
        ended, ended_wall = time.perf_counter(), time.time()
        profiler.__exit__(None, None, None)
        traces = end_ort_profiles(model) if self.ort and model is not None else []  # the steps after it run unprofiled
        window = {**self.window, "ended_wall": ended_wall, "last_step": last_step,
                  "wall_ms": (ended - self.window["began"]) * 1000.0}
        window.pop("began")
        self.written = True
        if not self.writes:
            return
        from .parse import torch_ops

        steps = last_step - window["first_step"] + 1
        events = profiler.events()
        record = {"steps": steps, "window": window, "ort_traces": traces,
                  "torch_ops": torch_ops(events), "top_ops": torch_ops(events, shapes=True, top=15)}
        files.write_atomic(self.run_dir / PROFILE, json.dumps(record))


def enable_ort_profiling(run_dir: Path) -> None:
    """Make every ORTModule session of this process profile itself into the run folder (see the docstring)."""
    from ..backends.ort_compat import load_ortmodule

    load_ortmodule()  # ORTModule imports on this torch only with ortnb's fixes applied first
    from onnxruntime.training.ortmodule._graph_execution_manager import GraphExecutionManager

    original = GraphExecutionManager._get_session_config
    if getattr(original, "ortnb_profiling", None) == str(run_dir):
        return
    original = getattr(original, "ortnb_original", original)
    prefix = str(Path(run_dir) / ORT_TRACE_PREFIX)

    def profiled_session_config(self):
        session_options, providers, provider_options = original(self)
        session_options.enable_profiling = True
        session_options.profile_file_prefix = prefix
        return session_options, providers, provider_options

    profiled_session_config.ortnb_profiling = str(run_dir)
    profiled_session_config.ortnb_original = original
    GraphExecutionManager._get_session_config = profiled_session_config


def disable_ort_profiling() -> None:
    import sys

    manager = sys.modules.get("onnxruntime.training.ortmodule._graph_execution_manager")
    if manager is None:  # ORTModule was never imported here: nothing was switched on
        return
    GraphExecutionManager = manager.GraphExecutionManager
    original = getattr(GraphExecutionManager._get_session_config, "ortnb_original", None)
    if original is not None:
        GraphExecutionManager._get_session_config = original


def end_ort_profiles(model) -> list[dict]:
    """End the profiling of the ORT training session that runs ``model``: [{path, origin_ns}], the trace file it
    wrote and when its clock began (ns since the epoch), so its events can be placed in the window; [] where
    ORTModule fell back to PyTorch (no session)."""
    from ..backends.ortmodule import engine_of

    engine = engine_of(model)
    ort = getattr(engine, "_ort", None)
    if ort is None or not hasattr(ort._torch_module, "_execution_manager"):  # fell back to PyTorch: no session
        return []
    agent = getattr(ort._torch_module._execution_manager(True), "_execution_agent", None)  # the training graph's
    session = getattr(agent, "_inference_session", None)
    if session is None:
        return []
    origin = session.get_profiling_start_time_ns()
    return [{"path": session.end_profiling(), "origin_ns": origin}]

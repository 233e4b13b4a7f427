"""ortnb.profile(): where a training step goes, op by op, for each configuration in a fresh run, PyTorch's and
ONNX Runtime's ops in the same categories (categories.py).

Each run trains ``warmup`` steps, then ``steps`` profiled steps (torch.profiler, and on ORT the session's own
profiler: collect.py), then ``steps`` more unprofiled, whose median step time says what profiling itself cost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import files, metrics, stats
from ..config import RunConfig
from ..errors import ConfigError
from ..runs import layout
from . import categories, collect, fusions, parse
from .matmul import achieved

DEFAULT_STEPS, DEFAULT_WARMUP = 5, 3
SKEW = 0.05  # ops may add up to 5% more than the step before the profile says its clocks disagree


@dataclass
class Profile:
    """``table``: one row per (configuration, category): label, engine, category, ms_per_step, share of the
    step. ``top_ops``: the longest ops of each, with shapes. ``step_ms``: the profiled ms per step by label;
    ``unprofiled_step_ms``: the same steps' time without the profiler. ``notes``: what a reader must know (a
    fallback to PyTorch, clocks that disagree). ``profiled_steps``: label -> the profiled steps as the judge reads
    a run's speed (judge.py's summary fields) with each step's ms: what tells a difference from noise."""

    table: object
    top_ops: object
    step_ms: dict[str, float]
    unprofiled_step_ms: dict[str, float | None]
    engines: dict[str, str]
    notes: dict[str, list[str]] = field(default_factory=dict)
    runs: dict[str, str] = field(default_factory=dict)
    matmul: dict[str, dict] = field(default_factory=dict)  # label -> {gflops, peak_gflops, of_peak}
    fusions: dict[str, dict] = field(default_factory=dict)  # ORT runs: label -> fusions.summary (what ORT fused)
    profiled_steps: dict[str, dict] = field(default_factory=dict)  # label -> profiled_steps() of its run

    def profiler_cost(self, label: str) -> float | None:
        """How much longer a profiled step took than an unprofiled one (0.1: 10% longer)."""
        plain = self.unprofiled_step_ms.get(label)
        return self.step_ms[label] / plain - 1.0 if plain else None

    def to_dict(self) -> dict:
        return {"table": self.table.to_dict(orient="records"), "top_ops": self.top_ops.to_dict(orient="records"),
                "step_ms": self.step_ms, "unprofiled_step_ms": self.unprofiled_step_ms, "engines": self.engines,
                "notes": self.notes, "runs": self.runs, "matmul": self.matmul, "fusions": self.fusions,
                "profiled_steps": self.profiled_steps,
                "profiler_cost": {label: self.profiler_cost(label) for label in self.step_ms}}

    def save(self, folder: str | Path) -> dict[str, Path]:
        """Write profile.json and profile.html (a stacked bar per configuration, the top ops) into ``folder``."""
        import json

        from .views import page_html

        folder = Path(folder).expanduser()
        folder.mkdir(parents=True, exist_ok=True)
        written = {"json": folder / "profile.json", "html": folder / "profile.html"}
        import time

        from ..report import machine, strict_json, versions

        record = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(), "versions": versions(),
                  **self.to_dict()}  # the host and versions every figure belongs to
        files.write_atomic(written["json"], json.dumps(strict_json(record), indent=1, default=str))
        files.write_atomic(written["html"], page_html(self))
        return written


def profile(configs, *, steps: int = DEFAULT_STEPS, warmup: int = DEFAULT_WARMUP,
            on_run: Callable | None = None) -> Profile:
    """Profile each configuration (a RunConfig or a list of them) in a fresh run; every argument and
    configuration is checked first, and each problem named in one ConfigError."""
    from ..runner import launch
    from ..runner.ending import ended_after

    configs = [configs] if isinstance(configs, RunConfig) else list(configs)
    prepared = _checked(configs, steps, warmup)
    runs = {}
    for cfg in prepared:
        run = launch(cfg, requests={collect.REQUEST: {"warmup": warmup, "steps": steps}})
        with ended_after(run):  # a stalled run, an error or Ctrl-C: nothing of it is left training
            if on_run is not None:
                on_run(run)
            status = run.wait()
        if status != "completed":
            raise RuntimeError(f"profile: the run of {cfg.label} ended {status}: {run.error or 'see ' + str(run.run_dir)}")
        runs[cfg.label] = run
    return build({label: (run.run_dir, run.records(), run.config) for label, run in runs.items()}, warmup, steps)


def _checked(configs: list, steps, warmup) -> list[RunConfig]:
    from ..validation import validate

    problems = []
    for name, value, least in (("steps", steps, 1), ("warmup", warmup, 1)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            problems.append(f"{name}={value!r}: give a whole number of steps >= {least} ({name}="
                            f"{DEFAULT_STEPS if name == 'steps' else DEFAULT_WARMUP} by default).")
    if not configs:
        problems.append("no configuration to profile: give a RunConfig or a list of them.")
    labels = []
    for index, cfg in enumerate(configs):
        if not isinstance(cfg, RunConfig):
            problems.append(f"configuration {index}: expected a RunConfig, got {type(cfg).__name__}.")
            continue
        labels.append(cfg.label)
        for problem in validate(cfg):
            problems.append(f"{cfg.label}: {problem}")
    if len(set(labels)) < len(labels):
        problems.append("two configurations have the same label; give them distinct name= values.")
    if problems:
        raise ConfigError(problems)
    total = warmup + 2 * steps
    return [cfg.replace(max_steps=total, epochs=None, warmup_steps=warmup, evaluate=False, eval_every=None,
                        metric=None, early_stopping_patience=None, target=None, report_to=None, name=cfg.label)
            for cfg in configs]


# -- from the run folders to the tables (pure but for reading the profilers' files) --------------------


def build(found: dict[str, tuple], warmup: int, steps: int) -> Profile:
    """The Profile of finished runs: label -> (run_dir, records, config)."""
    import pandas as pd

    rows, top, step_ms, plain, engines, notes, folders, matmul, fused, judged = [], [], {}, {}, {}, {}, {}, {}, {}, {}
    for label, (run_dir, records, cfg) in found.items():
        recorded = files.read_json_object(Path(run_dir) / collect.PROFILE)
        if recorded is None:
            raise parse.ProfileUnreadable(f"the run of {label} wrote no readable profile ({Path(run_dir) / collect.PROFILE})")
        summary = metrics.summarize(records, warmup)
        engine = summary.get("engine") or "unknown"
        one = breakdown_of(recorded, layout.run_peak(Path(run_dir)),
                           transposes=fusions.transposes(Path(run_dir) / "onnx") if recorded.get("ort_traces") else None)
        step_ms[label], engines[label], folders[label], matmul[label] = one["step_ms"], engine, str(run_dir), one["matmul"]
        plain[label] = unprofiled_ms(records, warmup + recorded["steps"])
        judged[label] = profiled_steps(records, warmup, recorded["steps"])
        notes[label] = one["notes"] + _fallback_note(cfg, engine) + _contention_note(summary)
        if engine == "onnxruntime":
            graphs = fusions.summary(Path(run_dir) / "onnx")
            if graphs is not None:
                fused[label] = graphs
        rows += [{"label": label, "engine": engine, **row} for row in one["rows"]]
        top += [{"label": label, "engine": engine, **row} for row in one["top"]]
    return Profile(pd.DataFrame(rows), pd.DataFrame(top), step_ms, plain, engines, notes, folders, matmul, fused,
                   judged)


def breakdown_of(recorded: dict, peak_flops: float | None = None, top_n: int = 10,
                 transposes: dict | None = None) -> dict:
    """One run's categories (rows), its top ops, its profiled ms per step, what its matrix products achieved
    (against ``peak_flops``, the run's measured peak) and notes, from profile.json."""
    steps, window = recorded["steps"], recorded["window"]
    step_ms = window["wall_ms"] / steps
    self_ms: dict[str, float] = {}
    products = {"flops": 0.0, "ms": 0.0}
    top = []
    for op in recorded["torch_ops"]:
        if parse.is_ort_wrapper(op["name"]) or op["name"].startswith("ProfilerStep"):
            continue
        self_ms[op["name"]] = self_ms.get(op["name"], 0.0) + op["self_ms"]
        _count_product(products, op["name"], op["self_ms"], op.get("flops"))
    for op in recorded.get("top_ops") or []:
        if not parse.is_ort_wrapper(op["name"]):
            top.append({"op": op["name"], "engine_of_op": "pytorch", "category": categories.category(op["name"]),
                        "ms_per_step": op["self_ms"] / steps, "calls_per_step": op["calls"] / steps,
                        "shapes": op.get("shapes") or []})
    for trace in recorded.get("ort_traces") or []:
        events = parse.read_trace(trace["path"])
        start = (window["began_wall"] * 1e9 - trace["origin_ns"]) / 1e3
        end = (window["ended_wall"] * 1e9 - trace["origin_ns"]) / 1e3
        for node in parse.ort_nodes(events, start, end, transposes):
            self_ms[node["op"]] = self_ms.get(node["op"], 0.0) + node["self_ms"]
            _count_product(products, node["op"], node["self_ms"], node.get("flops"))
            top.append({"op": f"{node['op']} ({node['name']})", "engine_of_op": "onnxruntime",
                        "category": categories.category(node["op"]), "ms_per_step": node["self_ms"] / steps,
                        "calls_per_step": node["calls"] / steps, "shapes": node["shapes"]})
    rows = categories.breakdown(self_ms, steps, step_ms)
    counted = sum(self_ms.values()) / steps
    notes = []
    if counted > step_ms * (1 + SKEW):
        notes.append(f"the ops add up to {counted:.1f} ms a step, more than the {step_ms:.1f} ms the step took: the "
                     "profilers' clocks disagree (threads counted twice, or a trace placed off the window); read "
                     "the shares, not the sum")
    top.sort(key=lambda r: -r["ms_per_step"])
    return {"rows": rows, "top": top[:top_n], "step_ms": step_ms, "notes": notes,
            "matmul": achieved(products["flops"], products["ms"], peak_flops)}


def _count_product(products: dict, name: str, ms: float, flops: float | None) -> None:
    """Add an op's time and FLOPs to the matrix products' totals when it is one whose FLOPs are known."""
    if flops and categories.category(name) == categories.MATMUL:
        products["flops"] += flops
        products["ms"] += ms


def unprofiled_ms(records: list[dict], after_step: int) -> float | None:
    """Median step time (ms) of the steps after the profiled window."""
    times = [s["step_time"] * 1000.0 for s in metrics.steps(records) if s.get("step", 0) > after_step
             and isinstance(s.get("step_time"), (int, float)) and math.isfinite(s["step_time"])]
    return stats.median(times) if times else None


# What judge.doubt reads of a run's summary (metrics.summarize), kept for the profiled steps alone.
JUDGED = ("samples_per_s", "samples_per_s_iqr", "tokens_per_s", "tokens_per_s_iqr", "steps_measured", "contended",
          "contended_share")


def profiled_steps(records: list[dict], warmup: int, steps: int) -> dict:
    """The ``steps`` profiled steps after ``warmup`` as the judge reads a run (metrics.summarize's JUDGED fields:
    how many, their median speed and its spread, whether other work shared the CPU) and each one's time in ms.
    The categories' times exist only summed over these steps, so the steps' own spread is the noise a difference
    between two profiles must stand out of."""
    window = [r for r in records if r.get("kind") != "step" or r.get("step", 0) <= warmup + steps]
    summary = metrics.summarize(window, warmup)
    times = [s["step_time"] * 1000.0 for s in metrics.steps(window) if s.get("step", 0) > warmup
             and isinstance(s.get("step_time"), (int, float)) and math.isfinite(s["step_time"])]
    return {**{key: summary.get(key) for key in JUDGED}, "step_ms": times}


def _contention_note(summary: dict) -> list[str]:
    """A run measured while other processes used the CPU says so: on 2 cores its ms are not this machine's."""
    if not summary.get("contended"):
        return []
    share = summary.get("contended_share")
    part = f" ({share:.0%} of its steps)" if isinstance(share, (int, float)) else ""
    return [f"measured while other processes used the CPU{part}: its times are inflated; profile again on a quiet "
            "machine before reading them as this machine's"]


def _fallback_note(cfg: RunConfig, engine: str) -> list[str]:
    if getattr(cfg, "backend", None) == "ort" and engine != "onnxruntime":
        return [f"ORT was asked for but {engine} ran the steps (ORTModule fell back): this is PyTorch's profile"]
    return []

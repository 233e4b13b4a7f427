"""What the benchmark scripts share: fresh-process variants alternated over repeats, their statistics,
the roofline of this machine, and the bare training loop that does Trainer's default math.

Not a measurement itself; ``trainer_vs_ort.py`` and ``ort_levers.py`` import it (they run as
``python benchmarks/<script>.py``, so this directory is on ``sys.path``).

Protocol between a script and its child processes: the child prints one JSON object as the last line
of its stdout (``emit``), holding at least ``step_times`` (seconds of every step, in order, warm-up
included). A child may add ``"not_counted": "<reason>"`` (an ORT run that fell back to PyTorch, a lever
that did not apply): the run is recorded with its reason and its times are left out of the medians. A
child that exits non-zero, times out, or whose last stdout line is not such an object is a failed run:
recorded with its reason and the tail of its stderr, never silently skipped.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

STDERR_TAIL = 3000  # characters of a failed child's stderr kept in the output JSON
MODEL, TASK, DATASET = "minilm", "sequence-classification", "rotten_tomatoes"
SEED = 0  # the seed ortnb's runner uses by default (RunConfig.seed): same head weights and rows everywhere

# --- child side ------------------------------------------------------------------------------------


def emit(result: dict) -> None:
    """Print a child's result: one JSON line, the last thing on stdout."""
    sys.stdout.flush()
    print(json.dumps(result), flush=True)


# --- parent side: alternate variants in fresh processes ---------------------------------------------


@dataclass
class Outcome:
    times: dict[str, list[float]]  # per variant: post-warm-up step times of its counted runs, pooled
    runs: list[dict] = field(default_factory=list)  # every run in order: variant, repeat, status, result/reason
    aborted: str | None = None  # set when stop_on_failure ended the loop early

    def results(self, variant: str) -> list[dict]:
        """The JSON of each counted run of ``variant``."""
        return [r["result"] for r in self.runs if r["variant"] == variant and r["status"] == "ok"]

    def failures(self) -> dict[str, list[dict]]:
        """Runs that failed or were not counted, by variant, with their reasons."""
        found: dict[str, list[dict]] = {}
        for run in self.runs:
            if run["status"] != "ok":
                entry = {k: v for k, v in run.items() if k not in ("variant", "result")}
                found.setdefault(run["variant"], []).append(entry)
        return found


def alternate(variants: list[str], repeats: int, command_for: Callable[[str], list[str]], warmup: int, *,
              env_for: Callable[[str], dict | None] | None = None, stop_on_failure: bool = False,
              timeout: float | None = None) -> Outcome:
    """Run every variant ``repeats`` times, each in a fresh process, alternating (A B C A B C ...).

    ``command_for(variant)`` is the child's argv; ``env_for(variant)`` adds environment variables to that
    child only (set before its interpreter starts). The first ``warmup`` steps of each run are dropped.
    A failure is printed with its stderr tail and recorded; with ``stop_on_failure`` the loop ends there.
    """
    outcome = Outcome(times={v: [] for v in variants})
    width = max(len(v) for v in variants)
    for repeat in range(repeats):
        for variant in variants:
            env = {**os.environ, "HF_HUB_OFFLINE": "1", **((env_for(variant) if env_for else None) or {})}
            env.setdefault("TOKENIZERS_PARALLELISM", "false")
            run = _run_child(command_for(variant), env, warmup, timeout)
            run.update(variant=variant, repeat=repeat)
            outcome.runs.append(run)
            where = f"{variant:>{width}} [{repeat + 1}/{repeats}]"
            if run["status"] == "ok":
                kept = run["result"]["step_times"][warmup:]
                outcome.times[variant].extend(kept)
                print(f"{where}: median {statistics.median(kept) * 1000:.0f} ms/step over {len(kept)} steps "
                      f"(first step {run['result']['step_times'][0]:.1f} s)", flush=True)
                continue
            print(f"{where}: {run['status'].upper().replace('_', ' ')}: {run['reason']}", flush=True)
            if run.get("stderr_tail"):
                print("    " + run["stderr_tail"][-1500:].replace("\n", "\n    "), flush=True)
            if stop_on_failure and run["status"] == "failed":
                outcome.aborted = f"{variant} (repeat {repeat + 1}) failed: {run['reason']}"
                return outcome
    return outcome


def _run_child(argv: list[str], env: dict, warmup: int, timeout: float | None) -> dict:
    started = time.perf_counter()
    try:
        done = subprocess.run(argv, check=False, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr
        return {"status": "failed", "reason": f"timed out after {timeout} s",
                "stderr_tail": (stderr or "")[-STDERR_TAIL:]}
    wall = time.perf_counter() - started
    if done.returncode:
        return {"status": "failed", "returncode": done.returncode, "reason": _last_error(done.stderr),
                "stderr_tail": done.stderr[-STDERR_TAIL:], "wall_s": wall}
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1])
        assert isinstance(result, dict) and isinstance(result.get("step_times"), list)
    except (IndexError, ValueError, AssertionError):
        return {"status": "failed", "returncode": 0, "reason": "the last stdout line is not a JSON result",
                "stdout_tail": done.stdout[-STDERR_TAIL:], "stderr_tail": done.stderr[-STDERR_TAIL:], "wall_s": wall}
    if len(result["step_times"]) <= warmup:
        return {"status": "failed", "returncode": 0, "result": result, "wall_s": wall,
                "reason": f"{len(result['step_times'])} steps, none left after {warmup} warm-up steps"}
    if result.get("not_counted"):
        return {"status": "not_counted", "reason": result["not_counted"], "result": result, "wall_s": wall}
    return {"status": "ok", "result": result, "wall_s": wall}


def _last_error(stderr: str) -> str:
    """The exception line of a traceback (the last line that names an error), else the last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for line in reversed(lines):
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception", "Exit", "Interrupt")) or head.startswith("AssertionError"):
            return line[:600]
    return lines[-1][:600] if lines else "no output on stderr"


def summary(times: list[float]) -> dict:
    """Median and interquartile range (None below 4 samples) of step times, in seconds."""
    if not times:
        return {"n": 0, "median_s": None, "q1_s": None, "q3_s": None, "iqr_s": None}
    quartiles = statistics.quantiles(times, n=4) if len(times) >= 4 else None
    return {"n": len(times), "median_s": statistics.median(times),
            "q1_s": quartiles[0] if quartiles else None, "q3_s": quartiles[2] if quartiles else None,
            "iqr_s": quartiles[2] - quartiles[0] if quartiles else None}


# --- roofline -----------------------------------------------------------------------------------------


PEAK_SAMPLES = 5  # measure_peak calls; the peak is the best of them (each call is the fastest of 5 products)


def roofline(batch: int, seq: int) -> dict:
    """This machine's fp32 matmul peak, measured now (not ortnb's cache), and MiniLM's model FLOPs per step.
    Run it in the parent before any child starts, so nothing else competes for the cores.

    A peak is a maximum, and one ``measure_peak`` call varies by tens of percent on a shared 2-core VM
    (34 to 70 GFLOP/s seen back to back), so it is called PEAK_SAMPLES times and the best is used; all
    samples are recorded."""
    import torch

    from ortnb import assets, flops

    threads = os.cpu_count() or 1
    samples = [flops.measure_peak("fp32", threads) for _ in range(PEAK_SAMPLES)]
    peak = max(samples)
    model, _ = assets.load_model(MODEL, TASK)
    per_step = flops.flops_per_step(model, batch, seq)
    del model
    return {"dtype": "fp32", "peak_flops": peak, "peak_samples_flops": samples,
            "peak_method": f"max of {PEAK_SAMPLES} ortnb.flops.measure_peak('fp32', {threads}) calls, fresh",
            "peak_threads": threads, "torch_threads": torch.get_num_threads(),
            "flops_per_step": per_step, "lower_bound_step_s": per_step / peak,
            "flops_formula": "6N + 12LdT per token (ortnb.flops.flops_per_step), N non-embedding parameters"}


def mfu(roof: dict, step_s: float | None) -> float | None:
    return roof["flops_per_step"] / step_s / roof["peak_flops"] if step_s else None


def announce(roof: dict) -> None:
    print(f"roofline: {roof['flops_per_step'] / 1e9:.1f} GFLOP/step, fp32 matmul peak "
          f"{roof['peak_flops'] / 1e9:.1f} GFLOP/s -> at least {roof['lower_bound_step_s'] * 1000:.0f} ms/step",
          flush=True)


def record(options, kind: str, names: list[str], outcome: "Outcome") -> tuple[dict, dict]:
    """The part of a results file both scripts share: what ran, how, and each variant's step statistics.
    Returns the record and the medians (seconds, variants that measured any step)."""
    stats = {name: summary(outcome.times[name]) for name in names}
    medians = {name: s["median_s"] for name, s in stats.items() if s["median_s"]}
    head = {
        "command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "model": MODEL, "dataset": DATASET, "batch": options.batch, "seq": options.seq,
        "steps": options.steps, "warmup": options.warmup, "repeats": options.repeats, kind: names,
        "median_step_s": medians, "iqr_step_s": {name: s["iqr_s"] for name, s in stats.items()},
        "steps_measured": {name: s["n"] for name, s in stats.items()},
        "samples_per_s": {name: options.batch / m for name, m in medians.items()},
    }
    return head, medians


# --- the workload and the bare loop (child side) ------------------------------------------------------


def trainer_defaults() -> dict:
    """transformers.Trainer's defaults that the bare loops copy: optimizer, learning rate, clipping."""
    from transformers import TrainingArguments

    with tempfile.TemporaryDirectory() as folder:
        args = TrainingArguments(output_dir=folder, use_cpu=True)
    return {"optim": str(getattr(args.optim, "value", args.optim)), "learning_rate": args.learning_rate,
            "max_grad_norm": args.max_grad_norm, "weight_decay": args.weight_decay,
            "lr_scheduler_type": str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type))}


def load_workload(batch: int, seq: int, steps: int):
    """MiniLM-L6 with a sequence-classification head and ``batch * steps`` tokenized Rotten Tomatoes rows."""
    from transformers import set_seed

    from ortnb import assets, data

    set_seed(SEED)
    model, tokenizer = assets.load_model(MODEL, TASK)
    train, _ = data.build(DATASET, TASK, tokenizer, seq, seed=SEED, train_samples=batch * steps)
    return model, train.with_format("torch")


def batches(train, batch: int, steps: int):
    for step in range(steps):
        rows = train[step * batch:(step + 1) * batch]
        yield {k: rows[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels") if k in rows}


ADAMW_KINDS = {"fused": {"fused": True}, "foreach": {"foreach": True}, "default": {}}


def adamw_kind(optim: str) -> str:
    """The torch.optim.AdamW implementation behind a transformers optimizer name: adamw_torch_fused is
    fused=True; adamw_torch passes neither flag, which on CPU tensors is torch's single-tensor for-loop
    (torch picks foreach by default only on CUDA-like devices)."""
    return "fused" if optim == "adamw_torch_fused" else "default"


def bare_loop(runner, model, train, batch: int, steps: int, kind: str, defaults: dict,
              loss_of: Callable = lambda output: output.loss) -> list[float]:
    """Trainer's default step without Trainer: forward, backward, clip_grad_norm_(max_grad_norm), AdamW
    (``kind``: a key of ADAMW_KINDS; lr and weight decay as Trainer's, betas and eps torch's = Trainer's), the
    linear learning-rate schedule, zero_grad. Times forward to zero_grad, like Trainer's step callbacks."""
    import torch
    from transformers import get_linear_schedule_with_warmup

    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=defaults["learning_rate"], weight_decay=defaults["weight_decay"],
                                  **ADAMW_KINDS[kind])
    schedule = get_linear_schedule_with_warmup(optimizer, 0, steps)
    times = []
    for inputs in batches(train, batch, steps):
        started = time.perf_counter()
        loss_of(runner(**inputs)).backward()
        if defaults["max_grad_norm"] and defaults["max_grad_norm"] > 0:
            torch.nn.utils.clip_grad_norm_(parameters, defaults["max_grad_norm"])
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - started)
    return times


def ort_fallback(ortmodule) -> str | None:
    """Why a bare ORTModule ran PyTorch instead of ONNX Runtime, or None if ORT ran it."""
    inner = ortmodule._torch_module
    if type(inner).__name__ == "TorchModulePytorch":
        return "ORTModule switched to PyTorch at initialisation (TorchModulePytorch)"
    exception = inner._execution_manager(True)._fallback_manager._exception
    return None if exception is None else f"{type(exception).__name__}: {exception}"[:600]


def write(path: str, result: dict) -> None:
    from ortnb.report import machine, versions

    result.update(machine=machine(), versions=versions())
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=2))
    print(f"wrote {path}", flush=True)

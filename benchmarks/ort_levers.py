"""ORT's own levers, one at a time, on a bare ORTModule training loop (MiniLM, batch 16 x 128, fp32, CPU).

Each lever runs in a fresh process, alternating over repeats; medians of step times after warm-up;
every ratio is against the default ORT settings measured in the same invocation.

    python benchmarks/ort_levers.py --steps 25 --warmup 5 --repeats 2 --out benchmarks/results/ort-levers.json

Levers:
  default            ortnb's defaults (ORTModule defaults + the compat layer)
  threads-1 / -N     the ORT session's intra-op thread count (default: one per physical core)
  mem-pattern        SessionOptions.enable_mem_pattern / enable_mem_reuse on (ORTModule turns both off)
  memopt-1           ORT memory optimizer level 1 (layer-wise recompute)
  no-compute-opt     ORTMODULE_ENABLE_COMPUTE_OPTIMIZER=0 (FLOP reduction by upstreaming slicing ops)
  module-with-loss   the loss computed inside the graph, the graph returns only the loss
  fused-adamw        torch.optim.AdamW(fused=True) instead of the default foreach AdamW
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

LEVERS = ("default", "threads-1", "mem-pattern", "memopt-1", "no-compute-opt", "module-with-loss", "fused-adamw")


def _session_patch(lever: str) -> None:
    """Change the SessionOptions ORTModule builds, for the levers that live there."""
    from onnxruntime.training.ortmodule import _graph_execution_manager as manager

    original = manager.GraphExecutionManager._get_session_config

    def patched(self):
        options, providers, provider_options = original(self)
        if lever.startswith("threads-"):
            options.intra_op_num_threads = int(lever.split("-")[1])
        if lever == "mem-pattern":
            options.enable_mem_pattern = True
            options.enable_mem_reuse = True
        return options, providers, provider_options

    manager.GraphExecutionManager._get_session_config = patched


def measure(lever: str, batch: int, seq: int, steps: int) -> list[float]:
    import torch

    from ortnb import assets, data
    from ortnb.backends import ort_compat

    if lever == "no-compute-opt":
        os.environ["ORTMODULE_ENABLE_COMPUTE_OPTIMIZER"] = "0"
    ortmodule = ort_compat.load_ortmodule()
    _session_patch(lever)
    model, tokenizer = assets.load_model("minilm", "sequence-classification")
    train, _ = data.build("rotten_tomatoes", "sequence-classification", tokenizer, seq, train_samples=batch * steps)
    train = train.with_format("torch")
    model.set_attn_implementation("eager")
    model.train()

    class LossOnly(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, **inputs):
            return self.inner(**inputs).loss

    wrapped = ortmodule.ORTModule(LossOnly(model) if lever == "module-with-loss" else model)
    if lever == "memopt-1":
        for training in (True, False):
            wrapped._torch_module._execution_manager(training)._runtime_options.memory_optimization_level = 1
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, fused=lever == "fused-adamw")
    times = []
    for step in range(steps):
        rows = train[step * batch:(step + 1) * batch]
        inputs = {k: rows[k] for k in ("input_ids", "attention_mask", "token_type_ids", "labels") if k in rows}
        started = time.perf_counter()
        output = wrapped(**inputs)
        (output if lever == "module-with-loss" else output.loss).backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--levers", default=",".join(LEVERS))
    parser.add_argument("--out", default="benchmarks/results/ort-levers.json")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(measure(options.one, options.batch, options.seq, options.steps)))
        return
    levers = options.levers.split(",")
    samples: dict[str, list[float]] = {lever: [] for lever in levers}
    for _ in range(options.repeats):
        for lever in levers:
            command = [sys.executable, __file__, "--one", lever, "--steps", str(options.steps), "--batch",
                       str(options.batch), "--seq", str(options.seq)]
            done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
            if done.returncode:
                print(f"{lever} failed: {done.stderr[-1500:]}", flush=True)
                continue
            times = json.loads(done.stdout.strip().splitlines()[-1])[options.warmup:]
            samples[lever].extend(times)
            print(f"{lever:>17}: median {statistics.median(times) * 1000:.0f} ms/step", flush=True)
    medians = {lever: statistics.median(t) for lever, t in samples.items() if t}
    base = medians.get("default")
    result = {"command": "python " + " ".join(sys.argv), "batch": options.batch, "seq": options.seq,
              "median_step_s": medians,
              "speedup_vs_default": {lever: base / m for lever, m in medians.items()} if base else {}}
    from ortnb.report import machine, versions

    result.update(machine=machine(), versions=versions())
    Path(options.out).parent.mkdir(parents=True, exist_ok=True)
    Path(options.out).write_text(json.dumps(result, indent=2))
    print(json.dumps(result["speedup_vs_default"], indent=2))


if __name__ == "__main__":
    main()

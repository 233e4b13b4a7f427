"""What the session's warm worker buys a Dashboard user: seconds from pressing Run (``ortnb.launch``) to the end of
the first training step, for a run launched cold (a supervisor and a worker process of its own: an interpreter,
torch and transformers imported) against the same run launched warm (``ortnb.launch(cfg, warm=True)``, the
Dashboard's default: the worker that trained the previous run of this kind trains it).

    python benchmarks/warm_start.py --repeats 3 --out benchmarks/results/warm-start.json

MiniLM-L6 on Rotten Tomatoes, batch 16, 2 steps, no evaluation, for each engine given (default: eager bf16 where
the CPU has bf16 units, and ORT fp32); cold and warm alternated in each repeat, after one warm run that starts the
worker and one cold run that fills the token cache and the OS's file cache (warm-up, not counted). Medians, with
each value and the 1-minute load before each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path


def first_step_after(run, launched_at: float) -> float:
    """Seconds from the launch call to the end of the run's first step (its record's wall clock)."""
    run.wait(600)
    steps = [r for r in run.records() if r.get("kind") == "step"]
    if run.status != "completed" or not steps:
        raise RuntimeError(f"{run.config.label}: {run.status}: {run.error}")
    return steps[0]["wall_time"] - launched_at


def measure(config, warm: bool) -> dict:
    import ortnb

    load = os.getloadavg()[0]
    launched_at = time.time()
    run = ortnb.launch(config, warm=warm)
    seconds = first_step_after(run, launched_at)
    summary = run.summary()
    return {"seconds": round(seconds, 3), "warm_run": summary.get("warm_run"), "engine": summary.get("engine"),
            "startup_s": summary.get("startup_s"), "load_1min": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import ortnb
    from ortnb.runner import warm

    caps = ortnb.capabilities()
    engines = [("eager", "bf16")] if caps.bf16_cpu_native else [("eager", "no")]
    engines.append(("ort", "no"))
    runs_dir = tempfile.mkdtemp(prefix="ortnb-warm-start-")
    results = {"host": ortnb.hardware.cpu_info().signature, "cores": caps.cpu_cores, "repeats": args.repeats,
               "engines": {}}
    try:
        for backend, precision in engines:
            config = ortnb.RunConfig(model="minilm", dataset="rotten_tomatoes", backend=backend, precision=precision,
                                     batch_size=16, max_steps=2, warmup_steps=0, evaluate=False, output_dir=runs_dir)
            measure(config, warm=False)  # warm-up: token cache and file cache
            measure(config, warm=True)  # warm-up: starts the worker (its first run is a cold start)
            rows = {"cold": [], "warm": []}
            for _ in range(args.repeats):
                for mode in ("cold", "warm"):
                    rows[mode].append(measure(config, warm=mode == "warm"))
            medians = {mode: statistics.median(r["seconds"] for r in found) for mode, found in rows.items()}
            results["engines"][config.label] = {
                "median_s": medians, "speedup": round(medians["cold"] / medians["warm"], 2), "runs": rows}
            print(f"{config.label}: cold {medians['cold']:.2f} s, warm {medians['warm']:.2f} s "
                  f"({medians['cold'] / medians['warm']:.2f}x sooner)", flush=True)
    finally:
        warm.close_session(60)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

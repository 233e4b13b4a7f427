"""Watching a model get better: the Dashboard's default run (MiniLM, Rotten Tomatoes, ONNX Runtime, fp32,
batch 16, sequence length 128) with evaluation on, held-out accuracy against wall time on the fixed
1,000-snippet validation split, and the time to first reach a target accuracy (the run stops there).

    python benchmarks/eval_while_training.py --out benchmarks/results/eval-while-training.json
    python benchmarks/eval_while_training.py --from-run RUN_DIR   # the figures of a run already trained

One run, launched as the Dashboard launches it (``ortnb.launch``); the clock is the run's own (seconds since its
first event, so model load, tokenization and ORT's export are included). Evaluation time is part of the wall
time, as a user waits for it too. The CPU share other processes took while it trained is recorded beside the
figures (``other_cpu``): on 2 cores a busy neighbour can slow eager and ORT steps several-fold.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="at most this many steps (the target ends it first)")
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--target", type=float, default=0.80)
    parser.add_argument("--out", default=str(HERE / "results" / "eval-while-training.json"))
    parser.add_argument("--from-run", help="summarize this run folder (a run of this script, stopped or ended)")
    options = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import ortnb
    from ortnb import metrics
    from ortnb.report import machine, versions

    load_before = os.getloadavg()
    if options.from_run:
        run = ortnb.attach(options.from_run)
        config = run.config
        options.steps, options.eval_every, options.target = config.max_steps, config.eval_every, config.target
        status = run.status
    else:
        config = ortnb.RunConfig(max_steps=options.steps, eval_every=options.eval_every, target=options.target,
                                 output_dir=tempfile.mkdtemp(prefix="ortnb-eval-bench-"))
        run = ortnb.launch(config)
        status = run.wait()
    records = run.records()
    summary = run.summary()
    frame = metrics.evaluations_frame(records)
    evaluations = [{"step": int(r.step), "wall_s": round(float(r.wall_s), 1), "accuracy": round(float(r.accuracy), 4),
                    "f1": round(float(r.f1), 4), "eval_loss": round(float(r.eval_loss), 4),
                    "eval_time_s": round(float(r.eval_time_s), 1) if r.eval_time_s == r.eval_time_s else None}
                   for r in frame.itertuples()]
    result = {
        "command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "config": {"model": config.model, "dataset": config.dataset, "backend": config.backend,
                   "batch_size": config.batch_size, "seq_len": config.seq_len, "learning_rate": config.learning_rate,
                   "max_steps": options.steps, "eval_every": options.eval_every, "target": options.target},
        "status": status, "engine": summary.get("engine"), "evaluations": evaluations,
        "reached_target": summary.get("reached_target"), "target_step": summary.get("target_step"),
        "target_reached_s": summary.get("target_reached_s"), "best_accuracy": summary.get("best_value"),
        "samples_per_s": summary.get("samples_per_s"), "median_step_s": summary.get("step_time_s"),
        "first_step_s": summary.get("first_step_s"),
        "other_cpu_median": summary.get("contended_share"), "contended": summary.get("contended"),
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "run_dir": str(run.run_dir),
        "machine": machine(), "versions": versions(),
    }
    Path(options.out).parent.mkdir(parents=True, exist_ok=True)
    Path(options.out).write_text(json.dumps(result, indent=2))
    print("| step | wall time (s) | held-out accuracy | macro-F1 | eval loss |\n|---|---|---|---|---|")
    for e in evaluations:
        print(f"| {e['step']} | {e['wall_s']} | {e['accuracy']:.3f} | {e['f1']:.3f} | {e['eval_loss']:.3f} |")
    last = evaluations[-1]["step"] if evaluations else 0
    reached = (f"reached {options.target} at step {result['target_step']} after {result['target_reached_s']:.0f} s"
               if result["reached_target"] else f"{options.target} not reached by step {last}")
    print(f"{status}, engine {result['engine']}: {reached}; other processes' CPU share "
          f"{result['other_cpu_median']}; wrote {options.out}")
    return 0 if status in ("completed", "stopped") else 1


if __name__ == "__main__":
    sys.exit(main())

"""On-device training next to ORTModule and eager PyTorch, MiniLM on 16 Rotten Tomatoes snippets.

    python benchmarks/edge.py [--steps 20] [--warmup 5] [--repeats 3]

Nine configurations (ONNX Runtime's training API, ORTModule through ortnb.ort_model, eager PyTorch; each
training the classification head, the last layer, or every weight) on the same batch, each run in a fresh
process (``python -m ortnb.edge.timing``, the same child the notebook's comparison uses), alternated over
``--repeats`` by harness.alternate: in one process the spinning thread pools of earlier ONNX Runtime sessions
take the cores from whichever engine runs next. Warm-up steps left out; medians and IQR; each run's engine
recorded (a fallback to PyTorch is not counted). Memory: each child's peak RSS (VmHWM) after its steps; the
training-API child hides PyTorch first, as ortnb.edge.train's process does. MFU for the all-weights rows
(6N + attention FLOPs per token, ortnb.flops). Writes benchmarks/results/edge.json.
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
TRAINABLE = {"head": "head", "last layer": "last_layers:1", "all": "all"}
LEARNING_RATE = {"head": 1e-3, "last layer": 1e-4, "all": 5e-5}
BATCH = 16


def snippets(count: int) -> list[dict]:
    from ortnb import assets

    train, _ = assets.rotten_tomatoes()
    return train.shuffle(seed=0).select(range(count)).to_list()


def export_all(folder: Path) -> dict:
    from ortnb import assets
    from ortnb.edge import export_artifacts

    model, tokenizer = assets.load_model("minilm", "sequence-classification")
    made = {}
    for name, spec in TRAINABLE.items():
        began = time.perf_counter()
        result = export_artifacts(model, folder / name.replace(" ", "-"), trainable=spec, tokenizer=tokenizer)
        made[name] = {"folder": result.folder, "export_s": time.perf_counter() - began, "files_bytes": result.files,
                      "trainable_parameters": result.trainable_parameters, "fixes": list(result.fixes)}
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="steps per run, warm-up included")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="how many times the nine configurations alternate")
    parser.add_argument("--out", default=str(HERE / "results" / "edge.json"))
    options = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(HERE))
    import harness

    from ortnb.edge.timing import NAMES, Configuration

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as scratch:
        made = export_all(Path(scratch))
        rows_path = Path(scratch) / "rows.jsonl"
        rows_path.write_text("".join(json.dumps(row) + "\n" for row in snippets(BATCH)))
        configurations = {c.label: c for c in (Configuration(engine, spec, made[name]["folder"], LEARNING_RATE[name])
                                               for name, spec in TRAINABLE.items() for engine in NAMES)}

        def command_for(label: str) -> list[str]:
            c = configurations[label]
            return [sys.executable, "-m", "ortnb.edge.timing", c.engine, c.trainable, c.artifacts_dir, "minilm",
                    str(rows_path), str(options.steps), repr(c.learning_rate)]

        outcome = harness.alternate(list(configurations), options.repeats, command_for, options.warmup, timeout=900)
    roof = roofline()
    results = {label: outcome.results(label) for label in configurations}
    shape = next(r[0]["batch_shape"] for r in results.values() if r)
    full_flops = full_step_flops(shape[1])
    rows = []
    for label, configuration in configurations.items():
        stats = harness.summary(outcome.times[label])
        median = stats["median_s"]
        rows.append({"configuration": label, "engine": sorted({r["engine"] for r in results[label]}),
                     "median_ms": median and 1000 * median, "iqr_ms": stats["iqr_s"] and 1000 * stats["iqr_s"],
                     "steps_measured": stats["n"],
                     "peak_rss_mb": max((r["peak_rss_mb"] for r in results[label]), default=None),
                     "torch_loaded": sorted({r["torch_loaded"] for r in results[label]}),
                     "mfu": full_flops / median / roof["peak_flops"] if configuration.trainable == "all" and median
                     else None})
    medians = {row["configuration"]: row["median_ms"] for row in rows}
    ratios = {}
    for name, spec in TRAINABLE.items():
        api = medians[f"training API, {spec}"]
        ratios[name] = {f"{engine} / training API": medians[f"{engine}, {spec}"] / api
                        for engine in ("ORTModule", "PyTorch eager") if api and medians[f"{engine}, {spec}"]}
    for row in rows:
        print(f"{row['configuration']:<32} {'/'.join(row['engine']):<26} {row['median_ms'] or 0:8.1f} ms  IQR "
              f"{row['iqr_ms'] or 0:7.1f}  peak RSS {row['peak_rss_mb'] or 0:6.0f} MB"
              + (f"  MFU {row['mfu']:.1%}" if row["mfu"] else ""))
    harness.write(options.out, {
        "command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "model": "minilm", "batch": BATCH, "batch_shape": shape, "steps": options.steps, "warmup": options.warmup,
        "repeats": options.repeats, "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "artifacts": {name: {k: v for k, v in info.items() if k != "folder"} for name, info in made.items()},
        "rows": rows, "step_time_ratios": ratios, "roofline": roof, "failures": outcome.failures(),
        "runs": outcome.runs})


def roofline() -> dict:
    from ortnb import flops

    samples = [flops.measure_peak("fp32", os.cpu_count() or 1) for _ in range(5)]
    return {"peak_flops": max(samples), "peak_samples": samples, "method": "max of 5 ortnb.flops.measure_peak"}


def full_step_flops(seq: int) -> float:
    from ortnb import assets, flops

    model, _ = assets.load_model("minilm", "sequence-classification")
    return flops.flops_per_step(model, BATCH, seq)


if __name__ == "__main__":
    main()

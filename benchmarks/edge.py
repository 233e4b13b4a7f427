"""On-device training next to ORTModule and eager PyTorch, MiniLM on 16 Rotten Tomatoes snippets.

    python benchmarks/edge.py [--steps 20] [--warmup 5] [--rounds 4]

One invocation. Step times: every configuration (ONNX Runtime's training API, ORTModule through
ortnb.ort_model, eager PyTorch; each training the head, the last layer, or every weight) runs in this
process on the same batch, alternated round by round, warm-up steps left out, medians and IQR reported,
with the engine that really ran. Memory: each engine trains the last layer in a fresh process and reports
its peak RSS; the training-API process is the one ortnb.edge.train starts, with PyTorch hidden.
Writes benchmarks/results/edge.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRAINABLE = {"head": "head", "last layer": "last_layers:1", "all": "all"}
LEARNING_RATE = {"head": 1e-3, "last layer": 1e-4, "all": 5e-5}
BATCH = 16


def snippets(count: int, start: int = 0) -> list[dict]:
    from ortnb import assets

    train, _ = assets.rotten_tomatoes()
    return train.shuffle(seed=0).select(range(start, start + count)).to_list()


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
    return made, model


def step_table(made: dict, model, steps: int, warmup: int, rounds: int):
    from ortnb.edge import batches, timing

    inputs, labels = batches.batch_of(made["all"]["folder"], snippets(BATCH))
    steppers = {}
    for name, spec in TRAINABLE.items():
        steppers[f"training API, {name}"] = timing.api_stepper(made[name]["folder"], inputs, labels,
                                                               LEARNING_RATE[name])
        steppers[f"ORTModule, {name}"] = timing.torch_stepper(model, spec, inputs, labels, LEARNING_RATE[name], "ort")
        steppers[f"PyTorch eager, {name}"] = timing.torch_stepper(model, spec, inputs, labels, LEARNING_RATE[name],
                                                                   "eager")
    table = timing.step_times(steppers, steps=steps, warmup=warmup, rounds=rounds)
    return table, inputs["input_ids"].shape


def roofline(model, seq: int) -> dict:
    from ortnb import flops

    samples = [flops.measure_peak("fp32", os.cpu_count() or 1) for _ in range(3)]
    return {"peak_flops": max(samples), "peak_samples": samples,
            "full_step_flops": flops.flops_per_step(model, BATCH, seq)}


# -- memory: one fresh process per engine ------------------------------------------------------------

def child_pytorch(engine: str, steps: int) -> None:
    """Train the last layer for ``steps`` steps on the batch; print the process's peak RSS (MB) as JSON."""
    from ortnb import assets
    from ortnb.edge import timing
    from ortnb.edge.batches import pad
    from ortnb.memory import peak_rss_mb

    model, tokenizer = assets.load_model("minilm", "sequence-classification")
    rows = snippets(BATCH)
    encoded = tokenizer([r["text"] for r in rows], truncation=True, max_length=128)
    import numpy as np

    ids, mask = pad([np.asarray(x) for x in encoded["input_ids"]], tokenizer.pad_token_id)
    labels = np.asarray([r["label"] for r in rows])
    step, engine_name = timing.torch_stepper(model, "last_layers:1", {"input_ids": ids, "attention_mask": mask},
                                             labels, 1e-4, engine)
    for _ in range(steps):
        step()
    print(json.dumps({"peak_rss_mb": peak_rss_mb(),
                      "engine": engine_name(), "torch_loaded": "torch" in sys.modules}))


def memory(made: dict, steps: int) -> dict:
    from ortnb.edge import train

    found = {}
    with tempfile.TemporaryDirectory() as runs:
        run = train(made["last layer"]["folder"], snippets(BATCH * 4), steps=steps, batch_size=BATCH,
                    learning_rate=1e-4, output_dir=runs)
        engine = [e for e in run.events if e["event"] == "engine"][-1]
        found["training API"] = {"peak_rss_mb": run.summary()["peak_rss_mb"], "engine": engine["engine"],
                                 "torch_loaded": engine["torch_loaded"]}
    for engine in ("eager", "ort"):
        done = subprocess.run([sys.executable, __file__, "--child", engine, "--steps", str(steps)],
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            found[engine] = {"failed": done.stderr[-2000:]}
            continue
        found["PyTorch eager" if engine == "eager" else "ORTModule"] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=4, help="how many times the configurations alternate")
    parser.add_argument("--child", choices=("eager", "ort"), help=argparse.SUPPRESS)
    parser.add_argument("--out", default=str(HERE / "results" / "edge.json"))
    options = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if options.child:
        child_pytorch(options.child, options.steps)
        return
    sys.path.insert(0, str(HERE))
    import harness

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        made, model = export_all(Path(folder))
        table, shape = step_table(made, model, options.steps, options.warmup, options.rounds)
        roof = roofline(model, int(shape[1]))
        for row in table.itertuples():
            if row.configuration.endswith(", all"):  # every weight trains: the full 6N FLOPs per token
                table.loc[row.Index, "mfu"] = roof["full_step_flops"] / (row.median_ms / 1000) / roof["peak_flops"]
        used = memory(made, options.steps)
    print(table.round(3).to_string(index=False))
    print(json.dumps(used, indent=1))
    medians = dict(zip(table["configuration"], table["median_ms"]))
    ratios = {name: {"eager_over_api": medians[f"PyTorch eager, {name}"] / medians[f"training API, {name}"],
                     "ortmodule_over_api": medians[f"ORTModule, {name}"] / medians[f"training API, {name}"]}
              for name in TRAINABLE}
    harness.write(options.out, {
        "command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "model": "minilm", "batch": BATCH, "batch_shape": list(map(int, shape)), "steps": options.steps,
        "warmup": options.warmup, "rounds": options.rounds, "load_average_before": load_before,
        "load_average_after": os.getloadavg(), "artifacts": made, "step_times": table.to_dict("records"),
        "ratios_vs_training_api": ratios, "roofline": roof, "memory_last_layer": used})


if __name__ == "__main__":
    main()

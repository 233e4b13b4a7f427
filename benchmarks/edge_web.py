"""On-device training in a browser tab next to the Python training API and eager PyTorch: MiniLM with its last
layer, pooler and head trainable, 16 Rotten Tomatoes snippets (padded to the longest, as ortnb.edge pads).

    python benchmarks/edge_web.py [--steps 20] [--warmup 5] [--repeats 2]

Four configurations on the same batch, alternated over ``--repeats``: the bundle's page in headless Chromium
on one thread (a plain static server) and with threads (served cross-origin isolated: up to 4, so 2 on a
2-core machine), each a fresh browser (ortnb.edge.web_browser.train_in_browser); the Python training API and
eager PyTorch, each in a fresh process (``python -m ortnb.edge.timing``, as benchmarks/edge.py). Warm-up steps
left out, medians and IQR; each row names the engine that ran. Also the bundle's size and the time from page
load to the first step. Writes benchmarks/results/edge-web.json.
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
BATCH, LEARNING_RATE, TRAINABLE = 16, 1e-4, "last_layers:1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="steps per run, warm-up included")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "results" / "edge-web.json"))
    options = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.path.insert(0, str(HERE))
    import harness

    from ortnb import assets, stats
    from ortnb.edge import export_artifacts, web_bundle
    from ortnb.edge.timing import Configuration, run_child
    from ortnb.edge.web_browser import chromium, train_in_browser

    load_before = os.getloadavg()
    train, _ = assets.rotten_tomatoes()
    rows = train.shuffle(seed=0).select(range(BATCH)).to_list()
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        model, tokenizer = assets.load_model("minilm", "sequence-classification")
        began = time.perf_counter()
        artifacts = export_artifacts(model, scratch / "artifacts", trainable=TRAINABLE, tokenizer=tokenizer)
        export_s = time.perf_counter() - began
        began = time.perf_counter()
        bundle = web_bundle(artifacts.folder, scratch / "web", data=rows, steps=options.steps, batch_size=BATCH,
                            learning_rate=LEARNING_RATE)
        bundle_s = time.perf_counter() - began
        rows_path = scratch / "rows.jsonl"
        rows_path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        labels = ["Chromium, 1 thread", "Chromium, isolated (threads)", "training API (Python)", "PyTorch eager"]
        times = {label: [] for label in labels}
        runs = {label: [] for label in labels}
        for _ in range(options.repeats):
            for label in labels:
                if label.startswith("Chromium"):
                    state = train_in_browser(bundle, isolated="isolated" in label)
                    result = {"engine": f"onnxruntime-web {state.get('threads')} thread(s)", "error": state["error"],
                              "step_times": [ms / 1000 for ms in state["timings"]["step_ms"]],
                              "threads": state["threads"], "isolated": state["isolated"],
                              "ready_ms": state["timings"]["ready_ms"],
                              "first_step_ms": state["timings"]["first_step_ms"], "losses": state["losses"]}
                else:
                    engine = "api" if label.startswith("training API") else "eager"
                    result = run_child(Configuration(engine, TRAINABLE, artifacts.folder, LEARNING_RATE), "minilm",
                                       str(rows_path), options.steps)
                runs[label].append(result)
                if not result.get("error"):
                    times[label] += result["step_times"][options.warmup:]
                print(f"{label}: {result.get('engine')} "
                      f"{1000 * (stats.median(result.get('step_times', [])[options.warmup:]) or 0):.0f} ms", flush=True)
    medians = {label: stats.median(values) for label, values in times.items()}
    table = [{"configuration": label, "engines": sorted({r.get("engine", "failed") for r in runs[label]}),
              "median_ms": medians[label] and 1000 * medians[label],
              "iqr_ms": stats.iqr(times[label]) and 1000 * stats.iqr(times[label]), "steps_measured": len(times[label]),
              "errors": [r["error"] for r in runs[label] if r.get("error")]} for label in labels]
    api = medians["training API (Python)"]
    ratios = {f"{label} / training API": medians[label] / api for label in labels if api and medians[label]}
    browser_runs = [r for label in labels[:2] for r in runs[label] if not r.get("error")]
    for row in table:
        print(f"{row['configuration']:<30} {'/'.join(row['engines']):<30} {row['median_ms'] or 0:8.1f} ms  IQR "
              f"{row['iqr_ms'] or 0:6.1f}")
    harness.write(options.out, {
        "command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "host": _host(), "chromium": chromium(), "model": "minilm", "trainable": TRAINABLE, "batch": BATCH,
        "steps": options.steps, "warmup": options.warmup, "repeats": options.repeats,
        "load_average_before": load_before, "load_average_after": os.getloadavg(),
        "export_s": export_s, "bundle_s": bundle_s, "bundle_bytes": bundle.total_bytes,
        "bundle_files": bundle.files, "rows": table, "step_time_ratios": ratios,
        "ready_ms": [r["ready_ms"] for r in browser_runs], "first_step_ms": [r["first_step_ms"] for r in browser_runs],
        "runs": runs})


def _host() -> str:
    from ortnb.hardware import cpu_info

    return cpu_info().signature


if __name__ == "__main__":
    main()

"""What the tokenized-data cache (ortnb/token_cache.py) buys at the start of a run: the data phase of MiniLM on
Rotten Tomatoes, tokenized (a cache miss: an empty cache folder) against read from the cache (a hit), each in a
fresh process, alternated over repeats, medians reported. Two sizes: a whole epoch with the 1,000 held-out
snippets (what a run with epochs=1 and evaluation tokenizes), and the 960 rows a default 60-step run reads.

    python benchmarks/startup.py --repeats 5 --out benchmarks/results/startup.json

A child imports what a run's worker has imported by its data phase (ORTTrainer, hence transformers' Trainer and
datasets), then prints one JSON object: the seconds of the data phase and whether it hit. The machine's load
(1-minute load average) is recorded beside each child.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys, time
from transformers import AutoTokenizer
from ortnb.training import ORTTrainer  # as the worker does before its data phase (it imports datasets too)
from ortnb import assets, data, token_cache
root, rows = sys.argv[1], None if sys.argv[2] == "epoch" else int(sys.argv[2])
tokenizer = AutoTokenizer.from_pretrained(str(assets.MODELS["minilm"].locate()))
plan = data.EvalPlan(enabled=rows is None)
labels = data.labels_for("rotten_tomatoes", "sequence-classification")
found = token_cache.prepare("rotten_tomatoes", "sequence-classification", tokenizer, 128, plan=plan, seed=0,
                            train_samples=rows, labels=labels, padding="longest", root=root)
print(json.dumps({"seconds": found.seconds, "hit": found.hit, "train_rows": len(found.prepared.train)}))
"""


def child(root: str, size: str) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "HF_DATASETS_DISABLE_PROGRESS_BARS": "1"}
    load = os.getloadavg()[0]
    done = subprocess.run([sys.executable, "-c", CHILD, root, size], capture_output=True, text=True, env=env,
                          timeout=600, check=True)
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load_1min": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/startup.json"))
    options = parser.parse_args()
    results: dict = {"command": " ".join(["python", *sys.argv]), "host": os.uname().nodename,
                     "cpus": os.cpu_count(), "created": time.strftime("%Y-%m-%d %H:%M:%S"), "sizes": {}}
    for size in ("epoch", "960"):
        runs = {"tokenized": [], "from the cache": []}
        for _ in range(options.repeats):  # alternated: a miss in an empty folder, then a hit in the same one
            with tempfile.TemporaryDirectory() as root:
                miss, hit = child(root, size), child(root, size)
            assert not miss["hit"] and hit["hit"], (miss, hit)
            runs["tokenized"].append(miss)
            runs["from the cache"].append(hit)
        medians = {name: statistics.median(r["seconds"] for r in found) for name, found in runs.items()}
        results["sizes"][size] = {"train_rows": runs["tokenized"][0]["train_rows"], "median_s": medians,
                                  "ratio": medians["tokenized"] / medians["from the cache"], "runs": runs}
        print(f"{size}: tokenized {medians['tokenized']:.2f} s, from the cache {medians['from the cache']:.2f} s "
              f"({results['sizes'][size]['ratio']:.1f}x)", flush=True)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()

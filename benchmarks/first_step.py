"""How soon a run's first training step ends, the first time and again: MiniLM on Rotten Tomatoes with the
ORT backend (the Dashboard's default), from the launch call to the end of step 1, with each phase's seconds.

    python benchmarks/first_step.py --repeats 3 --out benchmarks/results/first-step.json

Three ways, alternated within each repeat, in one invocation:
- ``first``: ``ortnb.launch`` with an empty tokenized-data cache (the first run of this model and data);
- ``again``: ``ortnb.launch`` once more, the cache filled (a later run from the Dashboard or ``compare``);
- ``warm``: the second run of a warm worker (``runner/warm.py``, what ``tune`` measures its candidates in):
  no interpreter start, no imports, no process group.
Each repeat gets a fresh cache folder ($ORTNB_CACHE) holding only the machine's peak and ORT's built extension
(links to the real ones): nothing else carries over. Medians reported; the 1-minute load beside each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = ("ort-extensions", "peak.json")  # what every way may reuse: built once per machine, not per run


def fresh_cache() -> Path:
    from ortnb.backends.ort_extensions import cache_root

    real = cache_root()  # $ORTNB_CACHE, else ~/.cache/ortnb: where every run looks
    folder = Path(tempfile.mkdtemp(prefix="ortnb-first-step-cache-"))
    for name in SHARED:
        if (real / name).exists():
            (folder / name).symlink_to(real / name)
    return folder


def timed(launch, config) -> dict:
    """Launch, wait for the run to end, and read when its first step ended and its phases."""
    from ortnb import metrics

    started = time.time()
    run = launch(config)
    run.wait(900)
    records = run.records()
    steps = metrics.steps(records)
    if run.status != "completed" or not steps:
        raise RuntimeError(f"{config.name}: the run ended {run.status}: {run.error}")
    summary = metrics.summarize(records, 1)
    return {"seconds_to_first_step": steps[0]["wall_time"] - started, "phases": metrics.startup_phases(records),
            "engine": summary["engine"], "load_1min": os.getloadavg()[0], "run_dir": str(run.run_dir)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backend", default="ort")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "first-step.json")
    options = parser.parse_args(argv)

    import ortnb
    from ortnb.report import machine, strict_json, versions
    from ortnb.runner.warm import WarmWorker

    runs_dir = Path(tempfile.mkdtemp(prefix="ortnb-first-step-runs-"))
    base = ortnb.RunConfig(model="minilm", dataset="rotten_tomatoes", backend=options.backend, max_steps=3,
                           warmup_steps=1, evaluate=False, output_dir=str(runs_dir))
    found: dict[str, list[dict]] = {"first": [], "again": [], "warm": []}
    for repeat in range(options.repeats):
        os.environ["ORTNB_CACHE"] = str(fresh_cache())  # the runs' processes inherit it
        found["first"].append(timed(ortnb.launch, base.replace(name=f"first-{repeat}")))
        found["again"].append(timed(ortnb.launch, base.replace(name=f"again-{repeat}")))
        with WarmWorker(runs_dir) as warm:
            timed(warm.launch, base.replace(name=f"warm-start-{repeat}"))  # starts the worker: not counted
            found["warm"].append(timed(warm.launch, base.replace(name=f"warm-{repeat}")))
        print(repeat, {way: round(rows[-1]["seconds_to_first_step"], 2) for way, rows in found.items()}, flush=True)

    medians = {way: statistics.median(r["seconds_to_first_step"] for r in rows) for way, rows in found.items()}
    phases = {way: {name: statistics.median(r["phases"].get(name, 0.0) for r in rows)
                    for name in dict.fromkeys(n for r in rows for n in r["phases"])} for way, rows in found.items()}
    record = {"command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "machine": machine(), "versions": versions(), "config": base.replace(output_dir="runs").to_dict(),
              "median_seconds_to_first_step": medians, "median_phases_s": phases,
              "first_over_again": medians["first"] / medians["again"], "first_over_warm": medians["first"] / medians["warm"],
              "runs": found}
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(strict_json(record), indent=2, allow_nan=False))
    print(json.dumps({k: record[k] for k in ("median_seconds_to_first_step", "median_phases_s", "first_over_again",
                                              "first_over_warm")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Does ``ortnb tune`` keep its promises? Its default search (MiniLM on Rotten Tomatoes, 180 s) against an
exhaustive ``compare`` of the same grid, in one invocation:

    python benchmarks/tune_check.py --out benchmarks/results/tune-check.json

Records the search's wall clock against its budget (+10% allowed), its winner, and the winner's samples/s in
the exhaustive table against the best row there (within 5% asked). The exhaustive pass measures every
runnable candidate once in a fresh run (``--steps`` steps, the first ``--warmup`` not counted), in the
order ``candidate_configs`` gives; it takes about 25 s a candidate with MiniLM on 2 cores. ``agreement``: each
candidate's rung-1 figure against the same steps measured again, in the exhaustive pass and (for rung-2
candidates) in the search's rung-2 run: the ratio and how many agree within 10%.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--dataset", default="rotten_tomatoes")
    parser.add_argument("--budget", type=float, default=180.0)
    parser.add_argument("--steps", type=int, default=None,
                        help="steps of each exhaustive run (default: a rung-1 run's, warm-up and measured)")
    parser.add_argument("--warmup", type=int, default=None, help="of which not counted (default: tune's)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "tune-check.json")
    options = parser.parse_args(argv)

    import ortnb
    from ortnb.report import machine, strict_json, versions
    from ortnb.tuning import candidate_configs
    from ortnb.tuning.space import RUNG1_STEPS, WARMUP_STEPS

    options.warmup = WARMUP_STEPS if options.warmup is None else options.warmup
    options.steps = options.warmup + RUNG1_STEPS if options.steps is None else options.steps

    started = time.perf_counter()
    result = ortnb.tune(options.model, options.dataset, budget_s=options.budget, refresh=True,
                        on_progress=lambda e: print(ortnb.tuning.format_progress(e), flush=True))
    search_s = time.perf_counter() - started
    print(result.describe(), flush=True)

    runs = tempfile.mkdtemp(prefix="ortnb-tune-check-")
    configs = [c.replace(max_steps=options.steps, warmup_steps=options.warmup, evaluate=False, output_dir=runs)
               for c in candidate_configs(options.model, options.dataset)]
    print(f"exhaustive compare: {len(configs)} candidates", flush=True)
    exhaustive_started = time.perf_counter()
    table = ortnb.compare(configs, on_run=lambda run: print(f"  {run.config.label}", flush=True))
    exhaustive_s = time.perf_counter() - exhaustive_started

    done = table[table["status"] == "completed"].sort_values("samples_per_s", ascending=False)
    best = done.iloc[0]
    winner_label = result.best.label if result.best is not None else None
    winner_rows = done[done["label"] == _candidate_label(result)]
    winner_speed = float(winner_rows["samples_per_s"].iloc[0]) if len(winner_rows) else None
    record = {
        "command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": machine(), "versions": versions(), "model": options.model, "dataset": options.dataset,
        "budget_s": options.budget, "search_wall_s": search_s, "search_within_budget_plus_10pct":
            search_s <= options.budget * 1.1,
        "tune": {"winner": winner_label, "winner_config": result.best.to_dict() if result.best else None,
                 "complete": result.complete, "ended": result.ended, "counts": result.counts,
                 "table": json.loads(result.table.to_json(orient="records"))},
        "exhaustive": {"candidates": len(configs), "steps": options.steps, "warmup": options.warmup,
                       "wall_s": exhaustive_s, "best": best["label"], "best_samples_per_s": float(best["samples_per_s"]),
                       "table": json.loads(table.to_json(orient="records"))},
        "agreement": agreement(result.candidates, table),
        "winner_in_exhaustive_samples_per_s": winner_speed,
        "winner_over_best": winner_speed / float(best["samples_per_s"]) if winner_speed else None,
    }
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(strict_json(record), indent=2, allow_nan=False))
    print(json.dumps({k: record[k] for k in ("search_wall_s", "search_within_budget_plus_10pct", "agreement",
                                              "winner_in_exhaustive_samples_per_s", "winner_over_best")}, indent=2))
    print(f"tune's winner: {winner_label}; exhaustive best: {best['label']} ({best['samples_per_s']:.2f} samples/s)")
    return 0


def agreement(candidates, exhaustive) -> dict:
    """Whether a candidate measured again gives the same figure. ``exhaustive``: each candidate's rung-1 figure
    (its first run: the same batches, the RUNG1_STEPS steps after warm-up) against its run in the exhaustive pass (the same steps, in a
    fresh process), the ratio per candidate and how many agree within 10%. ``in_search``: for candidates the
    search measured again in rung 2, rung 1's figure against the same steps of the rung-2 run (both warm)."""
    from ortnb import stats
    from ortnb.tuning.space import RUNG1_STEPS

    again = {row["label"]: row["samples_per_s"] for _, row in exhaustive.iterrows() if row["status"] == "completed"}

    def first(candidate, rung):
        runs = [r for r in candidate.measured_runs() if r["rung"] == rung]
        return stats.median(runs[0]["samples_per_s"][:RUNG1_STEPS]) if runs else None

    def summary(ratios: dict) -> dict:
        within = [label for label, ratio in ratios.items() if abs(ratio - 1.0) <= 0.10]
        return {"ratios": ratios, "candidates": len(ratios), "within_10pct": len(within),
                "median_abs_deviation": stats.median(abs(r - 1.0) for r in ratios.values())}

    rungs = {c.label: (first(c, 1), first(c, 2)) for c in candidates if c.measured_runs()}
    return {"exhaustive": summary({label: one / again[label] for label, (one, _) in rungs.items()
                                   if one and again.get(label)}),
            "in_search": summary({label: one / two for label, (one, two) in rungs.items() if one and two})}


def _candidate_label(result) -> str | None:
    """The winner's name in the candidate list (candidate_configs names each config by its candidate label)."""
    measured = result.table[result.table["status"] == "measured"]
    return str(measured.iloc[0]["label"]) if len(measured) else None


if __name__ == "__main__":
    sys.exit(main())

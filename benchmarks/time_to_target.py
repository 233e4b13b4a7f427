"""Time to a good model, v3: wall clock until a run first reaches a target accuracy on the fixed 1,000-snippet
Rotten Tomatoes validation split, evaluated on one schedule counted in samples, for five ways to train MiniLM-L6,
and the accuracy of each variant's stopping model on a test split that no stop decision saw.

    python benchmarks/time_to_target.py --target 0.80 --repeats 3 --out benchmarks/results/time-to-target.json

The rows: the validation split is the first 1,000 snippets (as ``rotten_tomatoes`` holds them out), the test split
the last 1,000, and every variant trains on the 10,808 between. Variants, each in a fresh process, alternated
(a b c d e a b c d e ...):
  (a) baseline  Optimum's published baseline: transformers Trainer, fp32, AdamW, every row padded to 128, batch 16
  (b) careful   a careful Trainer user: per-batch padding (to a multiple of 8) + length-grouped batches, fused
                AdamW, bf16 autocast where the CPU has bf16 units, batch 16
  (c) defaults  the Dashboard's untuned defaults on this machine (``RunConfig()`` with the engine and precision
                ``ortnb.tuning.defaults.choose`` picks here, learning rate 5e-5), launched with ``target=``
  (d) tuned     ortnb's throughput winner (``ortnb.tune``, from its cache when present; its search time apart),
                its learning rate sqrt-scaled from (a)'s by its global batch
  (e) raced     the winner of ortnb's race to the target (``ortnb.tune_to_target``, Optuna; warmup-stable-decay;
                its first trial the machine's engine at ``--lr``), the race's own time recorded apart and in a total
  (f) raced_linear  the same winner with Trainer's linear decay instead of warmup-stable-decay: what the schedule
                buys, measured in the same alternation
(a), (b) and (d) train at ``--lr`` (1e-4, linear decay over ``--max-samples``); all evaluate every ``--eval-every``
training samples, stop at the first evaluation at or above ``--target`` and otherwise end after ``--max-samples``
(an epoch by default). (a) and (b) stop through a 10-line callback, as a Trainer user would write it; (c), (d) and
(e) through ``RunConfig.target``. The clock runs from the start of the child's work (model load, tokenization,
ORT's export included) to the end of the evaluation that reached the target; the evaluations' own time is
included and reported apart. Then the stopping model (the one that reached the target, else the last) is scored
on the test split, the same code for every variant. The machine's 1-minute load is recorded beside each run.
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from time_to_accuracy import DATASET, MODEL, SEQ  # noqa: E402  (the same model and data)

VARIANTS = ("baseline", "careful", "defaults", "tuned", "raced", "raced_linear")
TEST_ROWS = 1000  # the last snippets: no variant trains on them and no stop decision sees them


def splits(max_samples: int):
    """(train, validation, test) as datasets.Dataset: validation the first 1,000 snippets, test the last
    TEST_ROWS, train the first ``max_samples`` of those between."""
    from datasets import Dataset

    from ortnb.data.builtin import ROTTEN_TOMATOES_VALIDATION, rotten_tomatoes_frame

    frame = rotten_tomatoes_frame()
    validation, test = frame.iloc[:ROTTEN_TOMATOES_VALIDATION], frame.iloc[-TEST_ROWS:]
    train = frame.iloc[ROTTEN_TOMATOES_VALIDATION:-TEST_ROWS].iloc[:max_samples]
    return tuple(Dataset.from_pandas(part, preserve_index=False) for part in (train, validation, test))


def data_files(work: str, max_samples: int) -> tuple[str, str]:
    """The train and validation rows as CSV files for the ortnb variants (a launched run reads files)."""
    train, validation, _ = splits(max_samples)
    paths = []
    for name, rows in (("train", train), ("validation", validation)):
        path = Path(work) / f"rotten-tomatoes-{name}-{len(rows)}.csv"
        if not path.exists():
            rows.to_pandas().to_csv(path, index=False)
        paths.append(str(path))
    return paths[0], paths[1]


def test_accuracy(model, tokenizer, max_samples: int) -> float:
    """The share of the test split a model classifies right: batches of 64 sorted by length, in inference mode;
    a class id maps to its label through the model's own label names when it has them (ortnb's CSV runs)."""
    import torch

    _, _, test = splits(max_samples)
    texts, labels = list(test["text"]), list(test["label"])
    names = getattr(model.config, "id2label", None) or {}
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    right = 0
    model.eval()
    with torch.inference_mode():
        for start in range(0, len(order), 64):
            batch = order[start:start + 64]
            encoded = tokenizer([texts[i] for i in batch], truncation=True, max_length=SEQ, padding=True,
                                return_tensors="pt")
            predicted = model(**encoded).logits.argmax(-1).tolist()
            for i, label_id in zip(batch, predicted):
                name = str(names.get(label_id, label_id))
                right += int((int(name) if name.lstrip("-").isdigit() else label_id) == labels[i])
    return right / len(texts)


# --- child side: one variant, timed ------------------------------------------------------------------


def trainer_variant(name: str, options) -> dict:
    """(a) and (b): transformers' own Trainer, with the evaluation schedule and a stop-at-target callback."""
    import numpy as np
    import torch
    from transformers import DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments

    from ortnb import assets, capabilities

    started = time.perf_counter()
    careful = name == "careful"
    bf16 = careful and capabilities().bf16_cpu_native
    model, tokenizer = assets.load_model(MODEL, "sequence-classification")
    train, validation, _ = splits(options.max_samples)
    padding = {} if careful else {"padding": "max_length"}

    def tokenize(rows):
        return rows.map(lambda b: tokenizer(b["text"], truncation=True, max_length=SEQ, **padding), batched=True,
                        remove_columns=["text"])

    train, validation = tokenize(train), tokenize(validation)
    reached: dict = {}

    class StopAtTarget(TrainerCallback):  # what a Trainer user writes to train until good
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            if state.global_step > 0 and (metrics or {}).get("eval_accuracy", 0.0) >= options.target and not reached:
                reached.update(step=state.global_step, accuracy=metrics["eval_accuracy"],
                               seconds=time.perf_counter() - started)
                control.should_training_stop = True

    def accuracy(prediction):
        return {"accuracy": float((np.argmax(prediction.predictions, -1) == prediction.label_ids).mean())}

    every = max(1, options.eval_every // options.batch)
    args = TrainingArguments(
        output_dir=str(Path(options.work) / name), per_device_train_batch_size=options.batch,
        per_device_eval_batch_size=64, max_steps=-(-options.max_samples // options.batch), learning_rate=options.lr,
        seed=0, optim="adamw_torch_fused" if careful else "adamw_torch", bf16=bf16, eval_strategy="steps",
        eval_steps=every, eval_on_start=False, train_sampling_strategy="group_by_length" if careful else "random",
        save_strategy="no", report_to=[], disable_tqdm=True, logging_steps=50, use_cpu=not torch.cuda.is_available(),
        dataloader_pin_memory=False)
    collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8 if careful else None)
    trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=validation, data_collator=collator,
                      processing_class=tokenizer, compute_metrics=accuracy, callbacks=[StopAtTarget()])
    result = trainer.train()
    wall = time.perf_counter() - started
    evaluations = [r for r in trainer.state.log_history if "eval_accuracy" in r]
    return {"seconds_to_target": reached.get("seconds"), "reached": bool(reached), "target_step": reached.get("step"),
            "wall_s": wall, "steps": result.global_step,
            "test_accuracy": test_accuracy(trainer.model, tokenizer, options.max_samples),
            "samples": result.global_step * options.batch, "eval_s": sum(r["eval_runtime"] for r in evaluations),
            "evaluations": [{"step": r["step"], "accuracy": r["eval_accuracy"]} for r in evaluations],
            "precision": "bf16" if bf16 else "fp32", "engine": "pytorch", "batch": options.batch}


def ortnb_variant(name: str, options) -> dict:
    """(c) and (d): launched through ortnb as a user would, with ``target``."""
    import ortnb
    from ortnb import metrics

    started, launched_at = time.perf_counter(), time.time()
    train, validation = data_files(options.work, options.max_samples)
    if kind(name) == "tuned":
        winner = ortnb.RunConfig.from_json(options.winner)
        global_batch = winner.batch_size * winner.num_processes
        config = winner.replace(learning_rate=options.lr * (global_batch / options.batch) ** 0.5, name="tuned winner")
    elif kind(name) == "raced":
        config = ortnb.RunConfig.from_json(options.raced).replace(name="raced winner")
    elif kind(name) == "raced_linear":
        config = ortnb.RunConfig.from_json(options.raced).replace(name="raced winner, linear", lr_schedule="linear")
    else:
        from ortnb.tuning.defaults import choose

        choice = choose(MODEL, DATASET)  # what the Dashboard starts from on this machine
        config = ortnb.RunConfig(name=name, backend=choice.backend, precision=choice.precision)
    config = config.replace(**overrides(name))
    global_batch = config.batch_size * config.num_processes
    steps = -(-options.max_samples // global_batch)
    config = config.replace(model=MODEL, dataset=train, seq_len=SEQ, evaluate=True, eval_dataset=validation,
                            max_steps=steps, warmup_steps=min(config.warmup_steps, steps - 1), epochs=None, seed=0,
                            eval_every=max(1, options.eval_every // global_batch), target=options.target,
                            metric="accuracy", early_stopping_patience=None,
                            output_dir=str(Path(options.work) / f"{name}-runs"))
    run = ortnb.launch(config)
    status = run.wait()
    wall = time.perf_counter() - started
    if status != "completed":
        raise RuntimeError(f"the {name} run ended {status}: {run.error}")
    summary = run.summary()
    evaluations = metrics.evaluations(run.records())
    final = metrics.final_event(run.records()) or {}
    reached_at = final.get("target_wall_time")
    from transformers import AutoTokenizer

    model = run.load_model("best", quiet=True)  # the evaluation that reached the target
    tokenizer = AutoTokenizer.from_pretrained(run.model_folder("best")[0])
    return {"test_accuracy": test_accuracy(model, tokenizer, options.max_samples),"seconds_to_target": reached_at - launched_at if final.get("reached_target") and reached_at else None,
            "reached": bool(final.get("reached_target")), "target_step": final.get("target_step"), "wall_s": wall,
            "steps": (metrics.steps(run.records()) or [{}])[-1].get("step"), "eval_s": sum(e.get("eval_time_s") or 0.0 for e in evaluations),
            "evaluations_count": len(evaluations), "screens": summary.get("screens") or 0,
            "screen_s": summary.get("screen_total_s") or 0.0,
            "evaluations": [{"step": e["step"], "accuracy": e.get("accuracy")} for e in evaluations],
            "engine": summary["engine"], "config": config.to_dict(), "median_samples_per_s": summary["samples_per_s"],
            "startup_s": summary.get("startup_s"), "run_dir": str(run.run_dir)}


def overrides(name: str) -> dict:
    """The settings a variant's name adds to its kind's: "defaults+learning_rate=1e-4+lr_schedule=wsd" is (c) at
    1e-4 with warmup-stable-decay (values read as JSON where they parse, else as text)."""
    pairs = [part.split("=", 1) for part in name.split("+")[1:]]
    return {key: _value(value) for key, value in pairs}


def _value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def kind(name: str) -> str:
    return name.split("+")[0]


def child(options) -> None:
    result = (trainer_variant(options.child, options) if kind(options.child) in ("baseline", "careful")
              else ortnb_variant(options.child, options))
    print(json.dumps(result), flush=True)


# --- parent side: the winner, then the variants alternated ------------------------------------------------


def tuned_winner(options) -> tuple[Path, dict]:
    import ortnb

    started = time.perf_counter()
    result = ortnb.tune(MODEL, DATASET, budget_s=options.budget)
    path = Path(options.work) / "winner.json"
    result.best.to_json(path)
    return path, {"label": result.best.label, "config": result.best.to_dict(), "from_cache": result.from_cache,
                  "complete": result.complete, "search_s": result.elapsed_s, "call_s": time.perf_counter() - started}


def raced_winner(options) -> tuple[Path, dict]:
    """ortnb's race to the target on the same rows (validation for its decisions, never the test split)."""
    import ortnb
    from ortnb.tuning.quality import tune_to_target

    from ortnb.tuning.defaults import choose

    train, validation = data_files(options.work, options.max_samples)
    choice = choose(MODEL, DATASET)  # the race's first trial: the Dashboard's engine here, at --lr with WSD
    base = ortnb.RunConfig(model=MODEL, dataset=train, eval_dataset=validation, seq_len=SEQ, learning_rate=options.lr,
                           backend=choice.backend, precision=choice.precision, lr_schedule="wsd", metric="accuracy",
                           output_dir=str(Path(options.work) / "race-runs"))
    started = time.perf_counter()
    result = tune_to_target(base=base, target=options.target, trials=options.trials,
                            max_samples=options.max_samples, timeout_s=options.race_budget,
                            storage=f"sqlite:///{Path(options.work) / 'race.sqlite3'}")
    elapsed = time.perf_counter() - started
    best = result.best
    if best is None:
        raise RuntimeError(f"the race found no configuration reaching {options.target} in {elapsed:.0f} s")
    settings = {k: v for k, v in best.items() if k not in ("seconds_to_target", "trial")}
    path = Path(options.work) / "raced.json"
    winner = base.replace(**settings)
    winner.to_json(path)
    return path, {"label": winner.label, "settings": settings, "trials": len(result.study.trials),
                  "race_s": elapsed, "race_seconds_to_target": best["seconds_to_target"]}


def stolen_s() -> float:
    """CPU seconds the hypervisor gave other guests (/proc/stat's steal, all cores): a slower host shows here, not in
    the load average."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def run_child(name: str, options) -> dict:
    argv = [sys.executable, __file__, "--child", name, "--target", str(options.target), "--lr", str(options.lr),
            "--batch", str(options.batch), "--eval-every", str(options.eval_every), "--max-samples",
            str(options.max_samples), "--work", options.work, "--winner", str(options.winner or ""),
            "--raced", str(options.raced or "")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    load, stolen = os.getloadavg()[0], stolen_s()
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    host = {"load_1min_before": load, "process_s": time.perf_counter() - started,
            "cpu_stolen_s": round(stolen_s() - stolen, 2)}
    if done.returncode:
        return {"status": "failed", "stderr_tail": done.stderr[-3000:], **host}
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1]), **host}


def summarize(runs: list[dict], variants: list[str]) -> dict:
    """Median seconds to the target per variant (only runs that reached it), and the ratios the issue asks for."""
    def median(name, key):
        values = [r[key] for r in runs if r["variant"] == name and r["status"] == "ok" and r.get(key) is not None]
        return statistics.median(values) if values else None

    seconds = {name: median(name, "seconds_to_target") for name in variants}
    reached = {name: sum(1 for r in runs if r["variant"] == name and r.get("reached")) for name in variants}

    def ratio(a, b):
        return seconds[a] / seconds[b] if seconds.get(a) and seconds.get(b) else None

    return {"seconds_to_target": seconds, "eval_s": {name: median(name, "eval_s") for name in variants},
            "test_accuracy": {name: median(name, "test_accuracy") for name in variants},
            "runs_that_reached": reached, "baseline_over_tuned": ratio("baseline", "tuned"),
            "baseline_over_defaults": ratio("baseline", "defaults"), "careful_over_tuned": ratio("careful", "tuned"),
            "careful_over_raced": ratio("careful", "raced"), "careful_over_defaults": ratio("careful", "defaults"),
            "linear_over_wsd": ratio("raced_linear", "raced")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=float, default=0.80, help="validation accuracy to reach")
    parser.add_argument("--eval-every", type=int, default=1024, help="training samples between evaluations")
    parser.add_argument("--max-samples", type=int, default=10808, help="give up after this many (default: an epoch)")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=16, help="batch size of (a) and (b)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--budget", type=float, default=180.0, help="ortnb.tune's budget for (d)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--winner", help="a RunConfig JSON to use for (d) instead of ortnb.tune")
    parser.add_argument("--raced", help="a RunConfig JSON to use for (e) instead of racing")
    parser.add_argument("--trials", type=int, default=12, help="the race's most trials for (e)")
    parser.add_argument("--race-budget", type=float, default=900.0, help="no trial of the race starts after this")
    parser.add_argument("--work", default="/tmp/ortnb-time-to-target")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "time-to-target.json")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    Path(options.work).mkdir(parents=True, exist_ok=True)
    if options.child:
        child(options)
        return 0
    from ortnb.report import machine, versions

    variants = options.variants.split(",")
    unknown = sorted({kind(name) for name in variants} - set(VARIANTS))
    if unknown:
        parser.error(f"--variants: {', '.join(unknown)} is not one of {', '.join(VARIANTS)} (a name may add "
                     "settings: defaults+learning_rate=1e-4)")
    record = {"command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "model": MODEL, "dataset": DATASET, "target": options.target, "eval_every_samples": options.eval_every,
              "max_samples": options.max_samples, "lr": options.lr, "batch_a_b": options.batch,
              "repeats": options.repeats, "machine": machine(), "versions": versions(), "runs": []}
    kinds = {kind(name) for name in variants}
    if "tuned" in kinds and not options.winner:
        options.winner, record["tune"] = tuned_winner(options)
        print(f"tuned winner: {record['tune']['label']} (search {record['tune']['search_s']:.0f} s, "
              f"from cache: {record['tune']['from_cache']})", flush=True)
    if {"raced", "raced_linear"} & kinds and not options.raced:
        options.raced, record["race"] = raced_winner(options)
        print(f"raced winner: {record['race']['label']} (race {record['race']['race_s']:.0f} s, "
              f"{record['race']['trials']} trials)", flush=True)
    for repeat in range(options.repeats):
        for name in variants:
            result = {"variant": name, "repeat": repeat, **run_child(name, options)}
            record["runs"].append(result)
            if result["status"] != "ok":
                shown = "FAILED\n" + result["stderr_tail"][-1500:]
            elif result["reached"]:
                shown = (f"{result['seconds_to_target']:.0f} s to accuracy {options.target} (step "
                         f"{result['target_step']}, evaluations {result['eval_s']:.0f} s of it); test accuracy "
                         f"{result['test_accuracy']:.3f}")
            else:
                shown = f"did not reach {options.target} in {options.max_samples} samples ({result['wall_s']:.0f} s)"
            print(f"{name:>8} [{repeat + 1}/{options.repeats}]: {shown}", flush=True)
            options.out.parent.mkdir(parents=True, exist_ok=True)  # kept after each run: a cut-short record stays
            options.out.write_text(json.dumps({**record, "summary": summarize(record["runs"], variants),
                                               "complete": False}, indent=2))
    record["summary"] = summarize(record["runs"], variants)
    record["complete"] = True
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(record, indent=2))
    print(json.dumps(record["summary"], indent=2))
    return 0 if all(r["status"] == "ok" for r in record["runs"]) else 1


if __name__ == "__main__":
    sys.exit(main())

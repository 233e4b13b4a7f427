"""Minutes to a good model: the same Rotten Tomatoes samples trained three ways, wall clock to the end of
training, and accuracy on the fixed 1,000-snippet validation split.

    python benchmarks/time_to_accuracy.py --out benchmarks/results/time-to-accuracy.json

Variants, each in a fresh process, alternated (a b c a b c ...):
  (a) baseline  the published baseline: plain transformers Trainer, fp32, AdamW (adamw_torch), every row
                padded to 128 tokens, random batches (Optimum's examples);
  (b) careful   what a careful Trainer user does: DataCollatorWithPadding (each batch to its longest row,
                rounded to 8) + length-grouped batches, fused AdamW, bf16 autocast where the CPU has bf16
                units (AVX512-BF16 / AMX), else fp32;
  (c) ortnb     ortnb's tuned winner (``ortnb.tune``, read from its cache when present; the search's own
                time is recorded apart) launched as a user would: ``ortnb.launch(winner)``, its learning rate
                scaled with the square root of its global batch over (a)'s (``--winner-lr``).
All three train MiniLM-L6 on the same training snippets, one pass: by default the whole training split
(11,808 snippets: one epoch; ``--samples N`` takes the first N of the fixed shuffle when an epoch of the
baseline would take over 25 minutes), learning rate ``--lr`` with linear decay, seed 0. The clock runs from the start of the child
process's work (model load, tokenization, ORT's export all included) to the end of training; the
evaluation that follows is not timed and is the same code for all three (PyTorch, batch 64).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL, DATASET, SEQ = "minilm", "rotten_tomatoes", 128
VARIANTS = ("baseline", "careful", "ortnb")


# --- child side: one variant, timed ------------------------------------------------------------------


def training_rows(samples: int):
    from ortnb import assets

    train, validation = assets.rotten_tomatoes()
    return train.select(range(min(samples, len(train)))), validation


def trainer_variant(name: str, options) -> dict:
    """(a) and (b): transformers' own Trainer, as its users write it."""
    import torch
    from transformers import DataCollatorWithPadding, Trainer, TrainingArguments

    from ortnb import assets, capabilities

    started = time.perf_counter()
    careful = name == "careful"
    bf16 = careful and capabilities().bf16_cpu_native
    model, tokenizer = assets.load_model(MODEL, "sequence-classification")
    train, _ = training_rows(options.samples)
    padding = {} if careful else {"padding": "max_length"}
    train = train.map(lambda b: tokenizer(b["text"], truncation=True, max_length=SEQ, **padding), batched=True,
                      remove_columns=["text"])
    args = TrainingArguments(
        output_dir=str(Path(options.work) / name), per_device_train_batch_size=options.batch, num_train_epochs=1,
        learning_rate=options.lr, seed=0, optim="adamw_torch_fused" if careful else "adamw_torch", bf16=bf16,
        train_sampling_strategy="group_by_length" if careful else "random", save_strategy="no", report_to=[],
        disable_tqdm=True, logging_steps=50, use_cpu=not torch.cuda.is_available(), dataloader_pin_memory=False)
    collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8 if careful else None)
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collator, processing_class=tokenizer)
    result = trainer.train()
    wall = time.perf_counter() - started
    return {"wall_s": wall, "steps": result.global_step, "precision": "bf16" if bf16 else "fp32",
            "optim": str(args.optim.value), "padding": "longest" if careful else "max_length",
            "length_grouping": careful, "engine": "pytorch", "batch": options.batch,
            "accuracy": accuracy(trainer.model, tokenizer), "final_train_loss": result.training_loss}


def ortnb_variant(options) -> dict:
    """(c): the tuned winner, launched through ortnb like a user would (worker processes, metrics stream)."""
    import ortnb

    winner = ortnb.RunConfig.from_json(options.winner)
    started = time.perf_counter()
    global_batch = winner.batch_size * winner.num_processes
    steps = -(-options.samples // global_batch)
    config = winner.replace(max_steps=steps, learning_rate=scaled_lr(options, global_batch),
                            warmup_steps=min(5, steps - 1), seed=0,
                            output_dir=str(Path(options.work) / "ortnb-runs"), name="tuned winner")
    run = ortnb.launch(config)
    status = run.wait()
    wall = time.perf_counter() - started
    if status != "completed":
        raise RuntimeError(f"the tuned run ended {status}: {run.error}")
    summary = run.summary()
    _, tokenizer = ortnb.assets.load_model(MODEL, "sequence-classification")
    return {"wall_s": wall, "steps": steps, "engine": summary["engine"], "config": config.to_dict(),
            "median_samples_per_s": summary["samples_per_s"], "padding_fraction": summary.get("padding_fraction"),
            "exports": summary.get("exports"), "accuracy": accuracy(run.load_model(), tokenizer),
            "final_train_loss": summary["final_loss"], "run_dir": str(run.run_dir)}


def scaled_lr(options, global_batch: int) -> float:
    """The learning rate for the winner's global batch: a larger batch makes fewer optimizer steps over the same
    samples, so with ``--winner-lr sqrt`` the rate grows with the square root of the batch ratio (against (a)
    and (b)'s batch), the usual rule for Adam; ``same`` keeps ``--lr``."""
    if options.winner_lr == "same":
        return options.lr
    return options.lr * (global_batch / options.batch) ** 0.5


def accuracy(model, tokenizer, batch: int = 64) -> float:
    """Accuracy on the fixed 1,000-snippet validation split (PyTorch, fp32, not timed)."""
    import torch

    _, validation = training_rows(0)
    model = model.float().eval()
    correct = 0
    for start in range(0, len(validation), batch):
        rows = validation[start:start + batch]
        inputs = tokenizer(rows["text"], truncation=True, max_length=SEQ, padding=True, return_tensors="pt")
        with torch.no_grad():
            predicted = model(**inputs).logits.argmax(-1)
        correct += int((predicted == torch.tensor(rows["label"])).sum())
    return correct / len(validation)


def child(options) -> None:
    result = ortnb_variant(options) if options.child == "ortnb" else trainer_variant(options.child, options)
    print(json.dumps(result), flush=True)


# --- parent side: the winner, then the variants alternated ------------------------------------------------


def tuned_winner(options) -> tuple[Path, dict]:
    """ortnb's winner for MiniLM on Rotten Tomatoes (the search is cached per machine; its time recorded)."""
    import ortnb

    started = time.perf_counter()
    result = ortnb.tune(MODEL, DATASET, budget_s=options.budget)
    path = Path(options.work) / "winner.json"
    result.best.to_json(path)
    record = {"label": result.best.label, "config": result.best.to_dict(), "from_cache": result.from_cache,
              "complete": result.complete, "search_s": result.elapsed_s, "call_s": time.perf_counter() - started,
              "table": json.loads(result.table.to_json(orient="records"))}
    return path, record


def run_child(name: str, options) -> dict:
    argv = [sys.executable, __file__, "--child", name, "--samples", str(options.samples), "--lr", str(options.lr),
            "--batch", str(options.batch), "--work", options.work, "--winner", str(options.winner or ""),
            "--winner-lr", options.winner_lr]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    if done.returncode:
        return {"status": "failed", "stderr_tail": done.stderr[-3000:], "process_s": time.perf_counter() - started}
    return {"status": "ok", **json.loads(done.stdout.strip().splitlines()[-1]),
            "process_s": time.perf_counter() - started}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=11808, help="training snippets, one pass (default: an epoch)")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--batch", type=int, default=16, help="batch size of (a) and (b)")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--budget", type=float, default=180.0, help="ortnb.tune's budget for (c)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--winner", help="a RunConfig JSON to use for (c) instead of ortnb.tune")
    parser.add_argument("--winner-lr", choices=("sqrt", "same"), default="sqrt",
                        help="(c)'s learning rate: scaled by sqrt(its global batch / --batch), or the same --lr")
    parser.add_argument("--work", default="/tmp/ortnb-time-to-accuracy")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "time-to-accuracy.json")
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    Path(options.work).mkdir(parents=True, exist_ok=True)
    if options.child:
        child(options)
        return 0
    from ortnb.report import machine, versions

    variants = options.variants.split(",")
    record = {"command": "python " + " ".join(sys.argv), "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
              "model": MODEL, "dataset": DATASET, "samples": options.samples, "lr": options.lr,
              "batch_a_b": options.batch, "winner_lr": options.winner_lr, "repeats": options.repeats,
              "machine": machine(), "versions": versions(),
              "runs": []}
    if "ortnb" in variants and not options.winner:
        options.winner, record["tune"] = tuned_winner(options)
        print(f"tuned winner: {record['tune']['label']} (search {record['tune']['search_s']:.0f} s, "
              f"from cache: {record['tune']['from_cache']})", flush=True)
    for repeat in range(options.repeats):
        for name in variants:
            result = {"variant": name, "repeat": repeat, **run_child(name, options)}
            record["runs"].append(result)
            shown = (f"{result['wall_s']:.0f} s to the end of training, accuracy {result['accuracy']:.3f}"
                     if result["status"] == "ok" else "FAILED\n" + result["stderr_tail"][-1500:])
            print(f"{name:>8} [{repeat + 1}/{options.repeats}]: {shown}", flush=True)
    record["summary"] = summarize(record["runs"], variants)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(record, indent=2))
    print(json.dumps(record["summary"], indent=2))
    return 0 if all(r["status"] == "ok" for r in record["runs"]) else 1


def summarize(runs: list[dict], variants: list[str]) -> dict:
    """Median wall clock and accuracy per variant, and the ratios the issue asks for."""
    import statistics

    def median(name, key):
        values = [r[key] for r in runs if r["variant"] == name and r["status"] == "ok"]
        return statistics.median(values) if values else None

    walls = {name: median(name, "wall_s") for name in variants}
    accuracies = {name: median(name, "accuracy") for name in variants}
    ratio = (lambda a, b: walls[a] / walls[b] if walls.get(a) and walls.get(b) else None)
    return {"wall_s": walls, "accuracy": accuracies,
            "baseline_over_ortnb": ratio("baseline", "ortnb"), "careful_over_ortnb": ratio("careful", "ortnb"),
            "baseline_over_careful": ratio("baseline", "careful"),
            "accuracy_points_ortnb_minus_baseline": (accuracies["ortnb"] - accuracies["baseline"]) * 100
            if accuracies.get("ortnb") is not None and accuracies.get("baseline") is not None else None}


if __name__ == "__main__":
    sys.exit(main())

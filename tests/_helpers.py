"""Helpers shared by test modules (a test module never imports another test module for these)."""
from __future__ import annotations

import ast
import csv
import dataclasses
import ipaddress
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import psutil
import torch

from ortnb.config import RunConfig
from ortnb.hardware import Capabilities
from ortnb.runner.launch import wait_for

PACKAGE = Path(__file__).resolve().parents[1] / "ortnb"


def delete_until_gone(folder, attempts: int = 50) -> None:
    """Delete a folder a process may still write into, as a user does: again until it is gone (one rmtree can
    meet a file the worker wrote meanwhile: "Directory not empty", which failed a test once on CI)."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.1)
    raise AssertionError(f"{folder} could not be deleted in {attempts} tries")


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in ``path``: at module level or inside a function, relative ones resolved,
    and importlib.import_module("...") with a literal name (the layer tests read these)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found


# -- models and data: tiny, built from configs, deterministic ----------------------------------------------

VOCAB = 1000
SEQ = 32


def tiny_bert(num_labels: int = 2, seed: int = 0, vocab_size: int = VOCAB):
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                        vocab_size=vocab_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                        num_labels=num_labels)
    return BertForSequenceClassification(config)


def classification_dataset(rows: int = 160, seq: int = SEQ, seed: int = 0):
    """Random token ids whose label is a function of the first token, so a model can learn it."""
    from datasets import Dataset

    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (rows, seq), generator=generator)
    return Dataset.from_dict({"input_ids": ids.tolist(), "attention_mask": [[1] * seq] * rows,
                              "labels": (ids[:, 0] % 2).tolist()})


def lm_dataset(rows: int = 32, seq: int = SEQ, seed: int = 0):
    from datasets import Dataset

    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, VOCAB, (rows, seq), generator=generator).tolist()
    return Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * seq] * rows, "labels": ids})


WORDS = {"neg": "awful bad boring dull", "neu": "fine okay average plain", "pos": "great wonderful superb fun"}


def rows(count: int = 48) -> list[dict]:
    """Text rows of three classes named by word (neg, neu, pos), each class told by its words."""
    names = list(WORDS)
    return [{"text": f"{WORDS[names[i % 3]].split()[i % 4]} film number {i}", "label": names[i % 3]}
            for i in range(count)]


def write_rows(folder: Path, suffix: str, items: list[dict]) -> str:
    """``items`` as folder/rows<suffix>: .csv as Excel writes it (with a BOM), .json, or JSON lines."""
    path = folder / f"rows{suffix}"
    if suffix == ".csv":
        with open(path, "w", newline="", encoding="utf-8-sig") as handle:
            writer = csv.DictWriter(handle, ["text", "label"])
            writer.writeheader()
            writer.writerows(items)
    elif suffix == ".json":
        path.write_text(json.dumps(items))
    else:
        path.write_text("".join(json.dumps(item) + "\n" for item in items))
    return str(path)


def edge_training_artifacts(folder: Path, opset: int, skip=frozenset()):
    """Tiny BERT's forward graph exported at ``opset``, ortnb.edge's fixes applied but ``skip``, and ONNX
    Runtime's training artifacts generated from it into ``folder``; returns the fixes applied (test_edge_fixes
    runs it in a fresh interpreter too, so it lives here rather than in a test module)."""
    from ortnb.edge import artifacts, fixes

    folder.mkdir()
    model = tiny_bert()
    graph, _ = artifacts._export_forward(model, 16, opset)
    applied = fixes.apply(fixes.BEFORE_GRADIENT, graph, skip)
    names = [n for n, _ in model.named_parameters()]
    artifacts._generate(graph, names, [], "cross_entropy", "adamw", folder)
    return applied


# -- the trainer --------------------------------------------------------------------------------------------

COMMON = dict(per_device_train_batch_size=8, per_device_eval_batch_size=16, logging_steps=1, report_to=[], seed=0,
              learning_rate=1e-3, disable_tqdm=True, save_strategy="no")


def ort_args(tmp_path, **overrides):
    from ortnb import ORTTrainingArguments

    return ORTTrainingArguments(output_dir=str(tmp_path / "out"), **{**COMMON, "max_steps": 2, **overrides})


def record_losses():
    """A TrainerCallback keeping every training loss the Trainer logs, in ``.losses``."""
    from transformers import TrainerCallback

    class RecordLosses(TrainerCallback):
        def __init__(self):
            self.losses = []

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))

    return RecordLosses()


class _StraightThroughRound(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ModelWithCustomFunction(torch.nn.Module):
    """A model whose forward calls a custom torch.autograd.Function (_StraightThroughRound): ORT cannot export it."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, x, labels=None):
        logits = self.linear(_StraightThroughRound.apply(x))
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


def custom_function_data():
    from datasets import Dataset

    generator = torch.Generator().manual_seed(0)
    return Dataset.from_dict({"x": torch.randn(16, 4, generator=generator).tolist(), "labels": [0, 1] * 8})


# -- machines and run configurations ----------------------------------------------------------------------

# A CPU machine like CI's: 2 cores, ORT training (CPU wheel) and DeepSpeed installed, no CUDA.
CPU = Capabilities(cuda=False, cpu_cores=2, bf16_cpu_native=True, ort_training="onnxruntime-training-cpu",
                   ort_version="1.19.2", ort_cuda=False, ort_extension_built=True, deepspeed=True, fused_adamw=True,
                   torch_compile=True, gguf=True)
BARE = dataclasses.replace(CPU, ort_training=None, ort_version=None, ort_extension_built=False, deepspeed=False,
                           torch_compile=False, gguf=False, fused_adamw=False)


def tiny(tmp_path, **overrides) -> RunConfig:
    """A tiny-bert run of 8 ORT steps into tmp_path/runs."""
    settings = dict(model="tiny-bert", dataset="rotten_tomatoes", backend="ort", batch_size=8, seq_len=32,
                    max_steps=8, warmup_steps=2, output_dir=str(tmp_path / "runs"))
    return RunConfig(**{**settings, **overrides})


# -- records and run folders made by hand -----------------------------------------------------------------

def step(n: int) -> dict:
    return {"kind": "step", "step": n, "wall_time": time.time(), "step_time": 0.1, "samples_per_s": 80.0,
            "tokens_per_s": 2560.0, "loss": 0.5}


def event(name: str, **data) -> dict:
    return {"kind": "event", "event": name, "time": 1.0, **data}


# A fine-tuning run's records: its labels, an evaluation before step 1 and a best one with its confusion matrix.
EVALS = [
    {"kind": "event", "event": "started", "time": 100.0, "labels": ["neg", "neu", "pos"], "max_steps": 40},
    {"kind": "event", "event": "eval", "step": 0, "eval_loss": 1.1, "accuracy": 0.31, "f1": 0.2, "metric": "accuracy",
     "wall_time": 101.0},
    {"kind": "step", "step": 1, "samples_per_s": 10.0, "loss": 1.0, "step_time": 0.5},
    {"kind": "event", "event": "eval", "step": 20, "eval_loss": 0.7, "accuracy": 0.75, "f1": 0.7, "metric": "accuracy",
     "wall_time": 130.0, "best": True, "confusion": [[8, 1, 1], [2, 5, 3], [0, 0, 10]],
     "wrong": [{"row": 4, "label": "neu", "predicted": "pos", "confidence": 0.93, "text": "<b>fine</b> I guess"}]},
]


def table_of_two_runs():
    """A comparison of two runs as ortnb.comparison.table returns it (a new frame each call)."""
    import pandas as pd

    return pd.DataFrame({"label": ["PyTorch + AdamW", "ORT + fused Adam"], "engine": ["pytorch", "onnxruntime"],
                         "status": ["completed", "completed"], "samples_per_s": [20.0, 31.0], "spread": [1.0, 2.5],
                         "speedup": [1.0, 1.55], "peak_rss_mb": [900.0, 1100.0], "optimizer_state_mb": [87.0, 87.0],
                         "final_loss": [0.6, 0.6], "mfu": [0.05, 0.0775], "first_step_s": [1.2, 7.4], "runs": [1, 1],
                         "steps_measured": [25, 25]})

PAYLOAD = ('<img src=x onerror=alert(1)>"><svg onload=alert(2)><a href="javascript:alert(3)">link</a>\''
           '<script>alert(4)</script>')


def payload_folder(tmp_path, payload: str = PAYLOAD):
    """A failed run whose every text field holds ``payload`` (the escaping tests draw every view from it; the
    browser test tracks one in a real Lab page)."""
    from ortnb.runs import layout

    run_dir = tmp_path / "runs" / "20260101-000000-ort-adamw"
    run_dir.mkdir(parents=True)
    config = tiny(tmp_path).to_dict()
    config["name"] = payload
    (run_dir / layout.CONFIG).write_text(json.dumps(config))
    wrong = [{"row": 3, "label": payload, "predicted": "b", "confidence": 0.9, "text": payload}]
    records = [
        event("phase", phase=payload),
        event("data", cached=False, note=payload, train_rows=8, eval_rows=4),
        event("started", label=payload, world_size=1, rank=0, task="sequence-classification", train_samples=8,
              max_steps=4, epochs=1, eval_every=2, metric="accuracy", labels=[payload, "b"]),
        event("eval", step=0, eval_loss=0.7, metric="accuracy", accuracy=0.5, confusion=[[1, 1], [1, 1]],
              wrong=wrong, samples=4, eval_time_s=0.1),
        event("engine", backend="ort", engine=payload, fallback=payload, attention=payload, optimizer=payload,
              precision=payload, providers=[payload], graphs=[], time_to_first_step_s=1.0, world_size=1),
        step(1), step(2),
        event("eval", step=2, eval_loss=0.6, metric="accuracy", accuracy=0.75, confusion=[[2, 0], [1, 1]],
              wrong=wrong, samples=4, eval_time_s=0.1),
        event("warning", message=payload, text=payload),
        event("failed", step=2, error=payload, traceback=payload),
    ]
    (run_dir / layout.METRICS).write_text("".join(json.dumps(r) + "\n" for r in records))
    (run_dir / "status.json").write_text(json.dumps({"status": "failed", "returncode": 1, "error": payload}))
    return run_dir


# -- fakes: a clock only the test moves, a run that holds given records, measured tune runs ----------------

class FakeClock:
    def __init__(self, now: float = 0.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


class FakeRun:
    """What the Dashboard reads of a Run, holding the records it is given."""

    def __init__(self, records, status="running", label="ort + AdamW", run_dir=None):
        self._records, self._status = records, status
        self.config = RunConfig(name=label, max_steps=10)
        self.run_dir = run_dir or f"/runs/{label}"
        self.error = "RuntimeError: boom\nTraceback ..." if status == "failed" else None

    def records(self):
        return self._records

    @property
    def events(self):
        return [r for r in self._records if r.get("kind") == "event"]

    @property
    def status(self):
        return self._status

    @property
    def done(self):
        return self._status in ("completed", "stopped", "failed")

    def summary(self):
        speeds = [r["samples_per_s"] for r in self._records if r.get("kind") == "step"]
        return {"label": self.config.label, "status": self._status, "run_dir": self.run_dir, "engine": None,
                "steps_measured": len(speeds), "samples_per_s": sorted(speeds)[len(speeds) // 2] if speeds else None,
                "samples_per_s_iqr": 1.0 if speeds else None}

    def stop(self):
        self._status = "stopped"


def fake_record(rung: int, speeds: list[float], samples: int, cost: float, overhead: float) -> dict:
    """What measure.record returns for a completed run measuring ``speeds`` (samples/s per step)."""
    from ortnb.tuning import space

    return {"rung": rung, "status": "completed", "ended": None, "steps": len(speeds) + space.WARMUP_STEPS,
            "measured_steps": len(speeds), "samples_per_s": speeds, "real_tokens_per_s": [s * 20 for s in speeds],
            "tokens_per_s": [s * 40 for s in speeds], "mfu": [0.25] * len(speeds),
            "step_time": [samples / s for s in speeds], "engine": "pytorch", "first_step_s": 1.5,
            "cost_s": round(cost, 2), "overhead_s": overhead, "note": None, "error": None}


def fake_measure(clock: FakeClock, speed, overhead: float = 15.0, log: list | None = None):
    """A measure(candidate, rung, steps, limits) whose run costs ``overhead`` plus its steps at ``speed(c)``."""
    from ortnb.tuning import space

    def measure(candidate, rung, steps, limits):
        limits.on_start(f"fake-run-{candidate.index}")
        rate = speed(candidate)
        samples = candidate.axes.get("batch_size", 16) * candidate.axes.get("num_processes", 1)
        cost = overhead + (space.WARMUP_STEPS + steps - 1) * samples / rate
        clock.now += cost
        if log is not None:
            log.append((candidate.label, rung, steps))
        return fake_record(rung, [rate] * steps, samples, cost, overhead + samples / rate)
    return measure


def cached_search_entry() -> dict:
    """A whole tune cache entry: one candidate measured at rung 1 (what cache.write stores for a finished search)."""
    from ortnb.tuning import result

    return {"format": result.FORMAT, "budget_s": 60.0, "elapsed_s": 30.0, "complete": True, "interrupted": False,
            "ended": "every candidate was measured", "grid": {"backend": ["eager"]},
            "candidates": [{"index": 0, "label": "eager", "axes": {"backend": "eager"}, "problems": [],
                            "runs": [fake_record(1, [10.0] * 4, 8, 28.0, 10.0)], "unreached": None}]}


# -- processes: the workers a run leaves, what listens, signals sent at the right moment ------------------

def workers_under(folder) -> list[psutil.Process]:
    """Processes whose command line names a path under ``folder`` (every run's supervisor and ranks do)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if str(folder) in " ".join(process.info["cmdline"] or []):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def assert_no_workers_within(run, seconds=60):
    assert wait_for(lambda: not workers_under(run.run_dir), seconds), [
        p.info["cmdline"] for p in workers_under(run.run_dir)]


def processes_of(folder) -> list[psutil.Process]:
    """Every process but this one whose command line or ORTNB_RUN_DIR names a path in ``folder``."""
    folder, found = str(folder), []
    for process in psutil.process_iter(["cmdline"]):
        try:
            named = any(folder in part for part in process.info["cmdline"] or [])
            named = named or folder in process.environ().get("ORTNB_RUN_DIR", "")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        if named and process.pid != os.getpid():
            found.append(process)
    return found


def assert_none_left(folder, seconds: float = 30) -> None:
    assert wait_for(lambda: not processes_of(folder), seconds), [p.cmdline() for p in processes_of(folder)]


def steps_in(folder: Path) -> int:
    """Step lines written so far in the run folders anywhere under ``folder``."""
    return sum(path.read_text().count('"kind": "step"') for path in Path(folder).rglob("metrics.jsonl"))


def signal_when(process: subprocess.Popen, ready, signum: int, timeout: float = 240) -> str:
    """Read the command's output; send ``signum`` once ``ready()`` holds; return all it printed."""
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stdout), daemon=True)
    reader.start()
    assert wait_for(lambda: ready() or process.poll() is not None, timeout), "".join(lines)
    assert process.poll() is None, "".join(lines)
    process.send_signal(signum)
    process.wait(timeout=120)
    reader.join(10)
    return "".join(lines)


def reachable_from_outside(ip: str) -> bool:
    """Whether a socket listening on ``ip`` accepts connections from another machine (anything but loopback)."""
    address = ipaddress.ip_address(ip.split("%")[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_loopback


def listeners() -> list[tuple[int, str, str, int]]:
    """(pid, program, address, port) of every listening TCP socket of this test's processes and their
    descendants (psutil reads /proc/<pid>/net/tcp{,6} and matches the fds' inodes)."""
    found = []
    for process in psutil.Process().children(recursive=True):
        try:
            for connection in process.net_connections(kind="tcp"):
                if connection.status == psutil.CONN_LISTEN:
                    found.append((process.pid, " ".join(process.cmdline()[1:4]), *connection.laddr))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def exposed_listeners() -> list[tuple[int, str, str, int]]:
    """The listeners() that another machine could reach: anything not on loopback."""
    return [found for found in listeners() if reachable_from_outside(found[2])]

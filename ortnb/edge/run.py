"""``ortnb.edge.train``: check everything, then train in a process of its own that never imports PyTorch.
The run folder is an ordinary ortnb run folder: ``ortnb.attach`` reads it, its metrics chart and compare."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from .. import files
from ..errors import ConfigError
from ..runs import layout, liveness
from ..runs.layout import checkpoint_step
from ..runs.run import Run
from ..runs.start import start_process
from . import batches, loop, manifest, resume
from .config import EdgeConfig


DATA_FOLDER = "edge-data"  # under output_dir: the rows edge runs trained on, one file per distinct set


class EdgeRun(Run):
    """A run of the edge kind: its steps ran on ``onnxruntime.training.api`` in a process without PyTorch. It is
    read through the same run-folder protocol as any run (status, metrics, evaluations, summary, stop, wait, with
    the same types); only where its weights live differs: ONNX Runtime checkpoints, not a PyTorch folder, so
    ``load_model``, ``predict`` and ``model_folder`` go through ``edge.weights.to_pytorch``."""

    config: EdgeConfig

    @property
    def checkpoint(self) -> Path | None:
        """The latest checkpoint (weights and optimizer state): pass the run as resume_from to go on."""
        return loop.latest_checkpoint(self.run_dir)

    @property
    def inference_model(self) -> Path | None:
        """The inference ONNX file the run exported when it ended (logits only; no training nodes)."""
        path = self.run_dir / loop.INFERENCE_MODEL
        return path if path.exists() else None

    def model_folder(self, which: str = "best") -> tuple[Path, str]:
        """(checkpoint, what it holds): an edge run keeps no best evaluation's weights apart, so ``best`` and
        ``last`` are both the latest checkpoint, and the text says so."""
        if which not in ("best", "last"):
            raise ValueError(f"which={which!r}: choose 'best' or 'last' (an edge run keeps its latest checkpoint).")
        checkpoint = self.checkpoint
        if checkpoint is None:
            raise FileNotFoundError(f"{self.run_dir} holds no checkpoint yet (status: {self.status}); an edge run "
                                    "writes one at its end, every save_every steps and when stopped.")
        kept = "" if which == "last" else "; an edge run keeps no best evaluation's weights apart"
        return checkpoint, f"the latest checkpoint ({checkpoint.name}{kept})"

    def load_model(self, which: str = "best", quiet: bool = False):
        """The trained weights as a PyTorch model (needs torch and transformers, unlike the run itself)."""
        from .weights import to_pytorch

        _, what = self.model_folder(which)
        if not quiet:
            print(f"ortnb: loading {what} from {self.run_dir}")
        return to_pytorch(self)

    def _predictor(self, which: str):
        from transformers import PreTrainedTokenizerFast

        from ..models.predict import Predictor

        checkpoint, what = self.model_folder(which)
        key = (str(checkpoint), checkpoint.stat().st_mtime_ns)
        if getattr(self, "_loaded", (None,))[0] != key:
            info = manifest.Manifest.read(Path(self.config.artifacts_dir))
            if not info.tokenizer:
                raise ValueError(f"{self.config.artifacts_dir} holds no tokenizer: predict() needs texts tokenized "
                                 "as the run's were; give its rows as input_ids to load_model()'s model instead")
            tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(Path(self.config.artifacts_dir) / info.tokenizer))
            model = self.load_model(which, quiet=True).eval()
            self._loaded = (key, Predictor(model, tokenizer, what))
        return self._loaded[1]


def train(artifacts_dir, dataset, *, steps: int, batch_size: int = 16, learning_rate: float = 1e-4,
          eval_dataset=None, eval_every: int = 0, save_every: int = 0, resume_from=None, seed: int = 0,
          warmup_steps: int = 2, threads: int | None = None, output_dir: str = "runs", name: str | None = None,
          wait: bool = True) -> EdgeRun:
    """Train the artifacts in ``artifacts_dir`` on ``dataset`` with ONNX Runtime's training API, in a new
    process that never imports PyTorch. Every problem is raised (ConfigError) before that process starts.

    ``dataset``/``eval_dataset``: a .jsonl/.json/.csv path, a list of dicts, a dict of columns or a DataFrame,
    with a text (or input_ids) column and a label column. ``resume_from``: an earlier edge run (or its folder,
    or a checkpoint file); ``steps`` then counts from the start of the first run. ``wait=False`` returns at once.

    Interrupted while it waits (Ctrl-C: KeyboardInterrupt), it stops the run after the step in progress, with
    a checkpoint, and raises the KeyboardInterrupt again (see Run.wait); ``ortnb.attach(folder)``, with the
    folder it prints, reads the stopped run, and ``resume_from=`` that run trains on.
    """
    resume = getattr(resume_from, "run_dir", resume_from)
    cfg = EdgeConfig(artifacts_dir=str(artifacts_dir), dataset="", steps=steps, batch_size=batch_size,
                     learning_rate=learning_rate, eval_every=eval_every, save_every=save_every, seed=seed,
                     warmup_steps=warmup_steps, threads=threads, output_dir=str(output_dir), name=name,
                     resume_from=str(Path(resume).expanduser().resolve()) if resume else None)
    cfg.check()
    folder = manifest.check_folder(cfg.artifacts_dir)
    info = manifest.Manifest.read(folder)
    cfg.name = cfg.name or f"ORT training API, {info.selection}"
    _resume_step(cfg, folder)
    tokenizer = folder / info.tokenizer if info.tokenizer else None
    rows, where, what = batches.read_named(dataset, "dataset")
    batches.encode(rows, info, tokenizer, what, where)  # columns, labels, texts, tokenizer: all checked here
    held_out = None
    if eval_dataset is not None:
        held_out, where, what = batches.read_named(eval_dataset, "eval_dataset")
        batches.encode(held_out, info, tokenizer, what, where)
    cfg.artifacts_dir, cfg.output_dir = str(folder), str(Path(cfg.output_dir).expanduser().resolve())
    store = Path(cfg.output_dir) / DATA_FOLDER
    # Stored before the run folder exists: a stored copy edited since it was written refuses the run with
    # no folder left behind (the worker reads only the stored file, so it would train on the edit).
    cfg.dataset = _store(rows, store, "dataset")
    cfg.eval_dataset = _store(held_out, store, "eval_dataset") if held_out is not None else None
    run_dir = layout.new_run_dir(cfg.output_dir, cfg.label)
    cfg.to_json(run_dir / layout.CONFIG)
    run = EdgeRun(cfg, run_dir, _start(run_dir))
    if wait:
        run.wait()
        if run.status == "failed":
            raise RuntimeError(f"the edge run failed ({run_dir}): {run.error}")
    return run


def _resume_step(cfg: EdgeConfig, folder: Path) -> int | None:
    if not cfg.resume_from:
        return None
    source = Path(cfg.resume_from)
    checkpoint = loop.latest_checkpoint(source) if source.exists() else None
    if checkpoint is None:
        raise ConfigError(f"resume_from={cfg.resume_from!r} holds no checkpoint: pass an edge run (or its folder) "
                          f"that saved one, or one of its {loop.CHECKPOINTS}/step-N files")
    from onnxruntime.training import api  # here as in load_browser_weights: this process may import torch

    resume.check(api, checkpoint, folder)  # before the run starts: a refused resume leaves no run folder
    step = checkpoint_step(checkpoint, "step") or 0
    if step >= cfg.steps:
        raise ConfigError(f"steps={cfg.steps}: the checkpoint {checkpoint.name} is at step {step} already; steps "
                          f"counts from the first run, so pass steps over {step} to train on")
    return step


def _store(rows: list[dict], folder: Path, what: str = "dataset") -> str:
    """The rows as JSON lines named by their content, beside the run folders: the worker reads only files, a
    run stays reproducible, and runs on the same rows name the same file (so they compare as one workload)."""
    text = "".join(json.dumps(row, default=_plain, sort_keys=True) + "\n" for row in rows)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.jsonl"
    if path.exists() and _edited(path, text):
        # The name promises these rows; a copy edited by hand since would be trained on instead of them.
        raise ConfigError(f"{what}: the stored copy of these rows, {path}, was edited after an edge run stored it "
                          "(its content no longer matches its name), so the run would train on the edited rows; "
                          "delete that file (train() stores the rows again), or pass the edited rows as the "
                          f"{what} from a file of your own")
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        files.write_atomic(path, text.encode("utf-8"))  # bytes as _edited compares them (no newline translation)
    return str(path)


def _edited(path: Path, text: str) -> bool:
    try:
        return path.read_bytes() != text.encode("utf-8")
    except OSError:
        return True


def _plain(value):
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _start(run_dir: Path) -> subprocess.Popen:
    # One process trains and writes: the one rank, recorded as the writer.
    return start_process([sys.executable, "-m", "ortnb.edge.worker", str(run_dir)], run_dir / layout.LOG,
                         name="ortnb-edge-reaper", run_dir=run_dir, role=liveness.WRITER,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))

"""launch(cfg) -> Run: start a run out of the kernel's process and watch it through its files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import metrics
from ..config import RunConfig
from ..validation import check
from . import layout


class Run:
    """A run in worker processes. Every property reads the run directory; nothing blocks."""

    def __init__(self, config: RunConfig, run_dir: Path, process: subprocess.Popen | None):
        self.config = config
        self.run_dir = Path(run_dir)
        self._process = process
        self._reader = metrics.MetricsReader(self.run_dir / layout.METRICS)

    # -- reading ----------------------------------------------------------------------------

    def records(self) -> list[dict]:
        """Every metrics line so far (steps and events), read incrementally."""
        self._reader.poll()
        return self._reader.records

    @property
    def metrics(self):
        """Per-step metrics as a pandas DataFrame; grows while the run trains."""
        return metrics.steps_frame(self.records())

    @property
    def events(self) -> list[dict]:
        return metrics.events(self.records())

    @property
    def status(self) -> str:
        """starting, running, completed, stopped or failed."""
        records = self.records()
        final = [e["event"] for e in metrics.events(records) if e["event"] in ("completed", "stopped", "failed")]
        if final:
            return final[-1]
        if self._process is not None and self._process.poll() is not None:
            return "failed"  # the supervisor died without a final event
        return "running" if metrics.events(records, "started") else "starting"

    @property
    def done(self) -> bool:
        return self.status in ("completed", "stopped", "failed")

    @property
    def error(self) -> str | None:
        """The worker's error and traceback tail, if the run failed."""
        failed = metrics.events(self.records(), "failed")
        if not failed:
            return None
        return f"{failed[-1].get('error', '')}\n{failed[-1].get('traceback', '')}".strip()

    def summary(self) -> dict:
        return {"label": self.config.label, "status": self.status, "run_dir": str(self.run_dir),
                **metrics.summarize(self.records(), self.config.warmup_steps)}

    def load_model(self):
        """The trained model (or the last checkpoint of a stopped run), as PyTorch."""
        from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification

        folder = self.run_dir / layout.MODEL
        if not folder.exists():
            checkpoints = sorted(self.run_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
            if not checkpoints:
                raise FileNotFoundError(f"{self.run_dir} holds no model yet (status: {self.status}).")
            folder = checkpoints[-1]
        config = json.loads((folder / "config.json").read_text())
        causal = any(a.endswith("ForCausalLM") for a in config.get("architectures", []))
        return (AutoModelForCausalLM if causal else AutoModelForSequenceClassification).from_pretrained(folder)

    # -- control ----------------------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> str:
        """Block until the run ends (or ``timeout`` seconds); returns the status."""
        if self._process is not None:
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        return self.status

    def stop(self, timeout: float = 30.0) -> str:
        """Ask the ranks to checkpoint and stop after their current step; force them after ``timeout``."""
        (self.run_dir / layout.STOP).touch()
        if self._process is None:
            return self.status
        try:
            self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGTERM)
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self._process.wait()
        return self.status

    def _signal(self, signum) -> None:
        try:
            os.killpg(self._process.pid, signum)
        except ProcessLookupError:
            pass

    def __repr__(self) -> str:  # deterministic: nbval compares it
        steps = len(metrics.steps(self.records()))
        return f"Run({self.config.label!r}, status={self.status!r}, steps={steps})"


def launch(cfg: RunConfig, launcher_args: list[str] | None = None) -> Run:
    """Check ``cfg`` (raising ConfigError with every problem), create a new run directory and start
    the run in a supervisor process. Returns at once."""
    check(cfg)
    run_dir = layout.new_run_dir(cfg.output_dir, cfg.label)
    stored = _store_dataset(cfg, run_dir)
    stored.to_json(run_dir / layout.CONFIG)
    command = [sys.executable, "-m", "ortnb.runner.supervise", str(run_dir), *(launcher_args or [])]
    with open(run_dir / layout.LOG, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   cwd=os.getcwd())
    return Run(cfg, run_dir, process)


def _store_dataset(cfg: RunConfig, run_dir: Path) -> RunConfig:
    """An in-memory datasets.Dataset goes to disk so the worker processes can read it."""
    if isinstance(cfg.dataset, str):
        return cfg
    target = run_dir / "dataset"
    cfg.dataset.save_to_disk(str(target))
    return cfg.replace(dataset=str(target))


def attach(run_dir: str | Path) -> Run:
    """A Run for an existing run directory (for example one started from the shell)."""
    run_dir = Path(run_dir)
    return Run(RunConfig.from_json(run_dir / layout.CONFIG), run_dir, None)


def wait_for(predicate, timeout: float, interval: float = 0.2) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()

"""``Run``: a run as its folder shows it, in any process. Every property reads the run folder and nothing blocks,
so a Run from ``attach(run_dir)`` in a new kernel knows as much as the one ``launch`` returned; ``stop()`` asks the
ranks to stop through the folder (control.py) and ends them by force when they do not answer. Starting a run is
``runner/launch.py``'s; this class only holds the process it was handed, to reap it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .. import metrics
from . import control, layout, liveness, stall, status_file
from .control import SETTLE_S
from .records import FINAL_EVENTS
from .stream_write import append_event
from .summary import RunSummary

if TYPE_CHECKING:
    from ..config import RunConfig


FORCE_GRACE_S = 10.0  # after SIGTERM, how long the ranks get before SIGKILL
ENDING_POLL_S = 0.05  # wait()'s pause once the status is final and only the processes' exit is awaited


class Run:
    """A run in worker processes. Every property reads the run folder and nothing blocks, so a Run from
    ``attach(run_dir)`` in a new kernel knows as much as the one ``launch`` returned."""

    def __init__(self, config: RunConfig, run_dir: Path, process: subprocess.Popen | None,
                 serves_in_turn: bool = False):
        """``process``: the supervisor launched here, or (``serves_in_turn``) the warm worker that trains this run
        among others (runner/warm.py), which outlives it."""
        self.config = config
        self.run_dir = Path(run_dir).resolve()
        self._process = process
        self._serves_in_turn = serves_in_turn
        self._reader = metrics.MetricsReader(self.run_dir / layout.METRICS)
        self._processes: dict[str, dict] = {}  # kept in memory: they outlive a deleted run folder
        self._cpu = liveness.CpuLooks()  # the ranks' CPU time at the last look, for a run past its stall bound

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
    def bad_lines(self) -> int:
        """Complete lines of metrics.jsonl that were not JSON (skipped; a full disk leaves one)."""
        self._reader.poll()
        return self._reader.bad_lines

    @property
    def phase(self) -> str | None:
        """What the run does before its first step (see metrics.current_phase); None afterwards."""
        return metrics.current_phase(self.records())

    @property
    def status(self) -> str:
        """starting, running, stalled (no new step for longer than its bound: see stall.py), completed,
        stopped or failed."""
        return self._state()[0]

    @property
    def stall(self):
        """A stall.Stall (how long no step came, the bound, the last step, a stopped rank) while the run is
        stalled, else None; ``stall.text()`` says it in words."""
        status, found = self._state()
        return found if status == "stalled" else None

    @property
    def done(self) -> bool:
        return self.status in FINAL_EVENTS

    @property
    def alive(self) -> bool:
        """Whether any process of this run still runs (known from the run folder, see liveness.py)."""
        return liveness.check(self.run_dir, self._known_processes()).alive

    @property
    def error(self) -> str | None:
        """Why the run failed: the worker's error and traceback tail, or what the run folder tells."""
        status, error = self._state()
        return error if status == "failed" else None

    def summary(self) -> RunSummary:
        """The run's figures so far (runs/summary.py declares each key): speed after warm-up, memory, loss, the
        engine that really ran, evaluations and a target."""
        return {"label": self.config.label, "status": self.status, "run_dir": str(self.run_dir),
                **metrics.summarize(self.records(), self.config.warmup_steps)}

    @property
    def evaluations(self):
        """One row per evaluation while training (step, epoch, wall_s, eval_loss, accuracy, f1 or perplexity)."""
        return metrics.evaluations_frame(self.records())

    @property
    def best(self) -> dict | None:
        """The best evaluation: {step, metric, value, epoch, wall_time, folder}; None before one was saved."""
        return layout.best(self.run_dir)

    def model_folder(self, which: str = "best") -> tuple[Path, str]:
        """(folder, what it holds): the best evaluation's weights (``which="best"``, when the run evaluated),
        else the final model, else the last whole checkpoint of a stopped run."""
        if which not in ("best", "last"):
            raise ValueError(f"which={which!r}: choose 'best' (the best evaluation's weights) or 'last'.")
        best = self.best if which == "best" else None
        if best is not None:
            return Path(best["folder"]), f"the best evaluation (step {best['step']}, {layout.describe_value(best)})"
        if layout.final_model(self.run_dir) is not None:
            return self.run_dir / layout.MODEL, "the final weights"
        checkpoints = layout.checkpoints(self.run_dir)
        if not checkpoints:
            cut = layout.cut_final_model(self.run_dir)
            raise FileNotFoundError(f"{self.run_dir} holds no model and no whole checkpoint (status: "
                                    f"{self.status}{'; ' + cut if cut else ''}); a run saves its model when it "
                                    "completes and a checkpoint when stop() ends it between steps: launch it again.")
        return checkpoints[-1], f"the last checkpoint ({checkpoints[-1].name})"

    def load_model(self, which: str = "best", quiet: bool = False):
        """The trained model as PyTorch: the best evaluation's weights when the run evaluated (``which="last"``:
        the final ones), else the final model or the last whole checkpoint of a stopped run. Says which."""
        folder, what = self.model_folder(which)
        if not quiet:
            print(f"ortnb: loading {what} from {folder}")
        from ..models.predict import load_folder

        return load_folder(folder)

    def predict(self, texts, which: str = "best") -> list[dict]:
        """Per text, ``{"label": name, "probabilities": {name: p, ...}}`` from the trained (best) model."""
        from ..models import predict

        return predict.classify(self._predictor(which), texts)

    def generate(self, prompt: str, max_new_tokens: int = 40, which: str = "best") -> str:
        """A causal LM run's continuation of ``prompt`` (greedy, as the model learned it)."""
        from ..models import predict

        return predict.continue_text(self._predictor(which), prompt, max_new_tokens)

    def _predictor(self, which: str):
        from ..models import predict

        folder, what = self.model_folder(which)
        key = (str(folder), (folder / layout.BEST_MARKER).stat().st_mtime_ns if (folder / layout.BEST_MARKER).exists()
               else None)
        if getattr(self, "_loaded", (None,))[0] != key:
            self._loaded = (key, predict.Predictor.load(folder, what))
        return self._loaded[1]

    def _state(self) -> tuple[str, str | None]:
        """(status, error): the final event; else status.json; else alive or not, from the folder."""
        self._reap()
        final = metrics.final_event(self.records())
        if final is None:
            stored = status_file.read(self.run_dir) or {}
            if stored.get("status") in FINAL_EVENTS:
                return stored["status"], _error_text(stored)
            life = liveness.check(self.run_dir, self._known_processes())
            if life.alive or self._supervisor_running():
                if not metrics.events(self.records(), "started"):
                    return "starting", None
                found = self._stalled()
                return ("stalled", found) if found else ("running", None)
            final = metrics.final_event(self.records())  # it may have landed while we looked
            if final is None:
                return "failed", self._why_it_ended(life.reason)
        return final["event"], _error_text(final)

    def _stalled(self):
        records = self.records()
        found = stall.stalled(records, time.time(), getattr(self.config, "stall_timeout_s", None))
        if found is None or self._cpu.ranks_working(self._known_processes()):
            return None  # advancing, or slow: a rank computes, it only gets little of a loaded machine
        return stall.Stall(found.idle_s, found.bound_s, found.last_step, liveness.frozen_ranks(self._known_processes()))

    def _why_it_ended(self, reason: str | None) -> str:
        if not (self.run_dir / layout.CONFIG).exists():
            return (f"the run folder was deleted while the run trained ({self.run_dir}); its ranks stopped at "
                    "their next step and nothing of the run is left (metrics, checkpoints, model). Launch it again.")
        log = self.run_dir / layout.LOG
        tail = log.read_text(errors="replace")[-1500:].strip() if log.exists() else ""
        return f"{reason}\n--- end of run.log ---\n{tail}" if tail else str(reason)

    def _known_processes(self) -> dict[str, dict]:
        if len(self._processes) < len(liveness.ROLES):  # the ranks and the writer are recorded a bit later
            self._processes.update(liveness.read_processes(self.run_dir))
        return self._processes

    def _reap(self) -> None:
        if self._process is not None:
            self._process.poll()  # collects an ended supervisor, so no zombie stays under the kernel

    # -- control ----------------------------------------------------------------------------

    @property
    def launched_here(self) -> bool:
        """Whether this process launched the run (``launch``, ``edge.train``), as opposed to ``attach``."""
        return self._process is not None

    def follow(self, on_record: Callable[[dict], None], interval: float = 0.5,
               on_tick: Callable[[], None] | None = None, since: int = 0, stop_on_interrupt: bool = True) -> str:
        """Call ``on_record(record)`` for every metrics record (steps and events, in order, after the first
        ``since``) as it lands, until the run is done, and return its status. ``on_tick()`` runs between looks:
        it may stop the run (a deadline) or raise (an interrupt). What the terminal, the Dashboard's text mode
        and tuning use to watch a run. Interrupted, it stops a run launched here as wait() does, unless
        ``stop_on_interrupt`` is False (the caller stops it its own way), and raises again."""
        try:
            return self._follow(on_record, interval, on_tick, since)
        except KeyboardInterrupt:
            if stop_on_interrupt and self.launched_here:
                self._stop_on_interrupt()
            raise

    def _follow(self, on_record, interval: float, on_tick, since: int) -> str:
        seen = since
        while True:
            done = self.done  # looked at before the records: the last ones are handed on before returning
            records = self.records()
            for record in records[seen:]:
                on_record(record)
            seen = len(records)
            if done:
                return self.status
            if on_tick is not None:
                on_tick()
            time.sleep(interval)

    def wait(self, timeout: float | None = None, interval: float = 0.2) -> str:
        """Block until the run ends and its processes have exited (or ``timeout`` seconds pass); returns
        the status. Works the same for a run from attach(): it polls the run folder. It also returns when the
        run stalls (``"stalled"``: no new step for longer than its bound, see ``run.stall``), which it may
        never recover from by itself: ``run.stop()`` ends it.

        Interrupted while it blocks (Ctrl-C, or SIGTERM/SIGHUP in an ``ortnb`` command: a KeyboardInterrupt),
        it stops a run this process launched the way stop() does, after the step in progress and with a
        checkpoint, and then raises the KeyboardInterrupt again: nothing is left training unwatched, and
        ``ortnb.attach(run_dir)`` reads the stopped run. A run from attach() was started elsewhere and is
        left as it is."""
        try:
            return self._wait(timeout, interval)
        except KeyboardInterrupt:
            if self.launched_here:
                self._stop_on_interrupt()
            raise

    def _wait(self, timeout: float | None, interval: float = 0.2, through_stall: bool = False) -> str:
        deadline = None if timeout is None else time.monotonic() + timeout
        ended = None
        while True:
            status = self.status
            if status == "stalled" and not through_stall:
                break  # it may never end by itself: the caller decides (stop() ends it)
            if status in FINAL_EVENTS:
                ended = ended or time.monotonic()
                if not self._any_process_alive() or time.monotonic() - ended > SETTLE_S:
                    break
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                break
            # Once the status is final only the processes' exit is awaited: a few hundredths of a second.
            pause = ENDING_POLL_S if ended else interval
            time.sleep(pause if remaining is None else min(pause, remaining))
        return self.status

    def _stop_on_interrupt(self) -> None:
        from .. import interrupts

        if self.done:
            return
        interrupts.say(f"ortnb: interrupted; stopping {self.config.label} after the step in progress, with a "
                       "checkpoint...", sys.stderr)
        with interrupts.deferred(lambda signum: interrupts.say(
                f"ortnb: {interrupts.name(signum)} while the run stops; the stop goes on", sys.stderr)):
            status = self.stop()
        interrupts.say(f"ortnb: the run is {status}; ortnb.attach({str(self.run_dir)!r}) reads it", sys.stderr)

    def stop(self, timeout: float = 30.0) -> str:
        """Ask the ranks to checkpoint and stop after their current step. If the run has not ended after
        ``timeout`` s (a step longer than that), end it by force: SIGTERM, then SIGKILL after 10 s. The
        stream then ends with a ``stopped`` event that has ``forced: True`` and a ``reason``."""
        if self.done or not self.run_dir.exists():
            return self.status
        control.request_stop(self.run_dir, timeout)
        if self._wait(timeout, through_stall=True) in FINAL_EVENTS:
            return self.status
        self._force()
        return self.status

    def _force(self) -> None:
        processes = self._known_processes()
        supervisor = processes.get(liveness.SUPERVISOR)
        if supervisor and liveness.process_alive(supervisor):
            control.signal_group(supervisor["pid"], signal.SIGTERM)  # it ends the ranks and records why
        else:
            for role in (liveness.RANKS, liveness.WRITER):
                if role in processes:
                    control.kill_tree(processes[role], signal.SIGTERM)
        if not self._processes_end_within(FORCE_GRACE_S):
            for role in (liveness.RANKS, liveness.WRITER):  # the supervisor lives on to write the final event
                if role in processes:
                    control.kill_tree(processes[role], signal.SIGKILL)
            if not self._processes_end_within(5.0) and supervisor:
                control.kill_tree(supervisor, signal.SIGKILL)
                self._processes_end_within(5.0)
        self._reap()
        if metrics.final_event(self.records()) is None and (self.run_dir / layout.CONFIG).exists():
            self._record_forced_stop()  # the supervisor was gone (or killed) before it could

    def _record_forced_stop(self) -> None:
        fields = {"forced": True, "reason": control.forced_stop_reason(self.run_dir)}
        steps = metrics.steps(self.records())
        fields["step"] = steps[-1].get("step") if steps else None
        try:
            append_event(self.run_dir / layout.METRICS, "stopped", **fields)
        except OSError:
            pass  # a full disk: status.json, reserved when the run started, still records it
        status_file.write(self.run_dir, status="stopped", **fields)

    def _any_process_alive(self) -> bool:
        self._reap()
        return self._supervisor_running() or any(liveness.process_alive(entry)
                                                 for entry in self._known_processes().values())

    def _supervisor_running(self) -> bool:
        """Whether the supervisor this process launched has not exited. Our own unreaped child cannot be another
        program, so this needs no pid file: it holds where reading /proc does not (a CI sandbox under load once
        saw every recorded process as ended while the run trained, and wait() returned "failed" for a run that
        then completed). Every supervisor writes a final event before it exits."""
        if self._process is None or self._process.poll() is not None:
            return False
        # a warm worker lives on after this run: it counts only until the run's final status is written
        return not (self._serves_in_turn and liveness.run_ended(self.run_dir))

    def _processes_end_within(self, seconds: float) -> bool:
        return wait_for(lambda: not self._any_process_alive(), seconds, interval=0.1)

    def __repr__(self) -> str:  # deterministic: nbval compares it
        steps = len(metrics.steps(self.records()))
        return f"Run({self.config.label!r}, status={self.status!r}, steps={steps})"


def _error_text(record: dict) -> str | None:
    """The error of a failed event or status.json: message and traceback tail."""
    if record.get("event", record.get("status")) != "failed":
        return None
    text = f"{record.get('error') or ''}\n{record.get('traceback') or ''}".strip()
    return text or "the run failed and recorded no reason; see run.log in the run folder."


def wait_for(predicate, timeout: float, interval: float = 0.2) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()

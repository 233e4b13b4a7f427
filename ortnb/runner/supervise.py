"""The supervisor: one process per run, outside the kernel. It records its pid and beats a heartbeat
(liveness.py), measures the machine's peak once, starts the ranks (directly, or through torchrun for
several), waits, and makes sure the stream ends with a final event and status.json holds the outcome
even if a rank was killed, the stop had to be forced, or the disk filled up.

    python -m ortnb.runner.supervise RUN_DIR
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from .. import interrupts
from ..config import RunConfig
from ..metrics import final_event, steps
from ..runs import control, layout, liveness, status_file
from . import torchrun
from ..runs.stream_write import append_event

GRACE_S = 30.0  # a supervisor told to end lets the ranks finish their step and checkpoint, as stop() does


def worker_command(cfg: RunConfig, run_dir: Path, launcher_args: list[str] | None = None) -> list[str]:
    worker = ["-m", "ortnb.runner.worker", str(run_dir)]
    if cfg.num_processes == 1 and not launcher_args:
        return [sys.executable, *worker]
    # Several ranks: torchrun starts them and tears all down if one dies, its stores bound to loopback (or, across
    # nodes, to the address in launcher_args: --nnodes/--node_rank/--rdzv_endpoint), see torchrun.py.
    return torchrun.command(cfg.num_processes, worker, launcher_args)


def worker_environment(cfg: RunConfig, launcher_args: list[str] | None = None) -> dict:
    """The ranks' environment. Nothing here imports torch: the supervisor starts the ranks at once (the ranks
    tell DeepSpeed about a machine without an accelerator themselves, worker.run)."""
    env = torchrun.environment(dict(os.environ), single_machine=not launcher_args)
    threads = cfg.threads or max(1, (os.cpu_count() or 1) // cfg.num_processes)
    env.update(OMP_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    return env


def read_records(run_dir: Path) -> list[dict]:
    from ..runs.stream_read import MetricsReader

    reader = MetricsReader(run_dir / layout.METRICS)
    reader.poll()
    return reader.records


def error_tail(run_dir: Path) -> str:
    """The first rank's traceback, else the end of the launcher's log."""
    for path in sorted(run_dir.glob("error-rank*.txt")):
        return path.read_text(errors="replace")[-3000:]
    log = run_dir / layout.LOG
    return log.read_text(errors="replace")[-3000:] if log.exists() else "no output"


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        name = signal.Signals(-returncode).name if -returncode in signal.valid_signals() else str(-returncode)
        hint = " (the system's out-of-memory killer sends it; see `dmesg`)" if name == "SIGKILL" else ""
        return f"the ranks were killed by {name}{hint}"
    return f"the ranks exited with code {returncode}"


def supervise(run_dir: Path, launcher_args: list[str] | None = None) -> int:
    run_dir = Path(run_dir).resolve()
    liveness.record_process(run_dir, liveness.SUPERVISOR, os.getpid())
    status_file.reserve(run_dir)  # room for the final status even if the disk fills up later
    heartbeat = liveness.start_heartbeat(run_dir)
    cfg = RunConfig.from_json(run_dir / layout.CONFIG)
    started: list[subprocess.Popen] = []
    terminated: list[int] = []

    def terminate_ranks():
        for ranks in started:
            control.signal_group(ranks.pid, signal.SIGTERM)
            control.signal_group(ranks.pid, signal.SIGCONT)  # a SIGSTOPped rank acts on SIGTERM once continued

    # Told to end without a stop request (kill, a shutdown): stop as stop() does, after the step in progress
    # with a checkpoint, and terminate the ranks only if that takes longer than GRACE_S. stop() escalates with
    # SIGTERM after its own wait, with its stop request already written: then the ranks go at once.
    grace = threading.Timer(GRACE_S, terminate_ranks)
    grace.daemon = True

    def on_signal(signum, _frame):
        terminated.append(signum)
        if control.stop_requested(run_dir) or grace.is_alive():
            terminate_ranks()
            return
        try:
            control.request_stop(run_dir, GRACE_S)
        except OSError:  # the folder is gone or the disk is full: no graceful stop to ask for
            terminate_ranks()
            return
        grace.start()

    for signum in interrupts.ALL:  # before the ranks start, so that no signal can orphan them
        signal.signal(signum, on_signal)
    with open(run_dir / layout.LOG, "ab") as log:
        ranks = subprocess.Popen(worker_command(cfg, run_dir, launcher_args),
                                 env=worker_environment(cfg, launcher_args),
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    started.append(ranks)
    liveness.record_process(run_dir, liveness.RANKS, ranks.pid)
    if terminated and not grace.is_alive():  # a signal came while they were being started
        terminate_ranks()
    returncode = ranks.wait()
    grace.cancel()
    status = finish(run_dir, returncode, terminated=bool(terminated))
    heartbeat.set()
    return 0 if status != "failed" else 1


def finish(run_dir: Path, returncode: int, terminated: bool = False) -> str:
    """Make sure the run ends with a final event and status.json; returns the final status."""
    if not (run_dir / layout.CONFIG).exists():  # writing now would recreate a folder the user deleted
        print(f"ortnb supervisor: the run folder {run_dir} was deleted while the run trained; nothing was "
              "written.", file=sys.stderr, flush=True)
        return "failed"
    records = read_records(run_dir)
    final = final_event(records)
    if final is not None:
        status_file.write(run_dir, status=final["event"], returncode=returncode, error=final.get("error"))
        return final["event"]
    if terminated and (run_dir / layout.STOP).exists():
        fields = {"status": "stopped", "forced": True, "reason": control.forced_stop_reason(run_dir),
                  "step": _last_step(records)}
    elif returncode == 0:
        fields = {"status": "completed", "step": _last_step(records)}
    else:
        worker = status_file.read(run_dir) or {}  # a rank that could not write the stream left its error here
        ended = ("the supervisor was sent SIGTERM (not by stop()) and ended the ranks" if terminated
                 else describe_exit(returncode))
        fields = {"status": "failed", "error": worker.get("error") or ended,
                  "traceback": worker.get("traceback") or error_tail(run_dir)}
    _write_final(run_dir, fields, returncode)
    return fields["status"]


def _write_final(run_dir: Path, fields: dict, returncode: int) -> None:
    event = {key: value for key, value in fields.items() if key != "status"}
    try:
        append_event(run_dir / layout.METRICS, fields["status"], **event)
    except OSError as error:  # a full disk: status.json (reserved at the start) still carries the outcome
        print(f"ortnb supervisor: could not append the final event to {layout.METRICS}: {error}", file=sys.stderr)
    if not status_file.write(run_dir, **fields, returncode=returncode):
        print(f"ortnb supervisor: could not write {layout.STATUS}; the run ended {fields['status']}: "
              f"{fields.get('error') or fields.get('reason') or ''}", file=sys.stderr)


def _last_step(records: list[dict]) -> int | None:
    found = steps(records)
    return found[-1].get("step") if found else None


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    return supervise(Path(args[0]), args[1:] or None)


if __name__ == "__main__":
    sys.exit(main())

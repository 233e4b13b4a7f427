"""The supervisor: one process per run, outside the kernel. It measures the machine's peak once,
starts the ranks (directly, or through torchrun for several), waits, and makes sure the stream
ends with a final event even if a rank was killed.

    python -m ortnb.runner.supervise RUN_DIR
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..config import RunConfig
from . import layout
from .stream import MetricsWriter

FINAL_EVENTS = ("completed", "stopped", "failed")


def worker_command(cfg: RunConfig, run_dir: Path, launcher_args: list[str] | None = None) -> list[str]:
    worker = ["-m", "ortnb.runner.worker", str(run_dir)]
    if cfg.num_processes == 1 and not launcher_args:
        return [sys.executable, *worker]
    # Several ranks: torchrun starts them and tears all down if one dies. Multi-node runs pass
    # --nnodes/--node_rank/--rdzv_endpoint through launcher_args instead of --standalone.
    where = launcher_args or ["--standalone"]
    return [sys.executable, "-m", "torch.distributed.run", *where, f"--nproc_per_node={cfg.num_processes}", *worker]


def worker_environment(cfg: RunConfig) -> dict:
    import torch

    env = dict(os.environ)
    threads = cfg.threads or max(1, (os.cpu_count() or 1) // cfg.num_processes)
    env.update(OMP_NUM_THREADS=str(threads), TOKENIZERS_PARALLELISM="false", PYTHONUNBUFFERED="1")
    if not torch.cuda.is_available():
        env["DS_ACCELERATOR"] = "cpu"
    return env


def record_peak(cfg: RunConfig, run_dir: Path) -> None:
    from .. import flops

    dtype = "bf16" if cfg.precision == "bf16" else "fp16" if cfg.precision == "fp16" else "fp32"
    peak = flops.machine_peak(dtype)
    (run_dir / layout.PEAK).write_text(json.dumps({"dtype": dtype, "flops": peak}))


def last_event(run_dir: Path) -> str | None:
    from ..metrics import MetricsReader, events

    reader = MetricsReader(run_dir / layout.METRICS)
    reader.poll()
    found = [e["event"] for e in events(reader.records) if e["event"] in FINAL_EVENTS]
    return found[-1] if found else None


def error_tail(run_dir: Path) -> str:
    """The first rank's traceback, else the end of the launcher's log."""
    for path in sorted(run_dir.glob("error-rank*.txt")):
        return path.read_text()[-3000:]
    log = run_dir / layout.LOG
    return log.read_text(errors="replace")[-3000:] if log.exists() else "no output"


def supervise(run_dir: Path, launcher_args: list[str] | None = None) -> int:
    cfg = RunConfig.from_json(run_dir / layout.CONFIG)
    record_peak(cfg, run_dir)
    with open(run_dir / layout.LOG, "ab") as log:
        ranks = subprocess.Popen(worker_command(cfg, run_dir, launcher_args), env=worker_environment(cfg),
                                 stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def forward(signum, _frame):  # stop() escalates with SIGTERM: take the ranks down with us
        os.killpg(ranks.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    returncode = ranks.wait()
    final = last_event(run_dir)
    if final is None:
        status = "failed" if returncode else "completed"
        if returncode:
            MetricsWriter(run_dir / layout.METRICS).event("failed", error=f"workers exited with code {returncode}",
                                                          traceback=error_tail(run_dir))
    else:
        status = final
    (run_dir / layout.STATUS).write_text(json.dumps({"status": status, "returncode": returncode}))
    return 0 if status != "failed" else 1


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    return supervise(Path(args[0]), args[1:] or None)


if __name__ == "__main__":
    sys.exit(main())

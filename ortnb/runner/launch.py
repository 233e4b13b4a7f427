"""launch(cfg) -> Run: start a run out of the kernel's process. The Run it returns (watching the run through its
folder) is ``ortnb.runs.run.Run``, importable from here as before."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .. import files
from ..config import RunConfig
from ..runs import layout, liveness
from ..runs.start import start_process
# Run and its helpers moved to ortnb/runs/run.py (issue 35); importable from here for one release.
from ..runs.control import SETTLE_S  # noqa: F401
from ..runs.run import FORCE_GRACE_S, Run, _error_text, wait_for  # noqa: F401
from ..validation import check


def launch(cfg: RunConfig, launcher_args: list[str] | None = None, *, requests: dict[str, dict] | None = None,
           warm: bool = False) -> Run:
    """Check ``cfg`` (raising ConfigError with every problem), create a new run directory and start
    the run in a supervisor process. Returns at once. ``launcher_args`` are torchrun's node arguments
    (``--nnodes 2 --node_rank 0 --rdzv_backend c10d --rdzv_endpoint host:port``) for a run across nodes.
    ``requests``: file name -> JSON written into the run folder before anything starts (a profile request).

    ``warm``: train in this session's warm worker for the output folder (runner/warm.py), started by the first
    such run and kept until this process ends (or ``ortnb.runner.warm.close_session()``): from the second run of
    the same number of processes on, no interpreter start and no imports. The run's card and summary say how it
    started (``warm_run``). Runs a warm worker does not take start cold as before: with DeepSpeed (ZeRO), across
    nodes, with a profile request, or on an in-memory dataset."""
    if warm and not launcher_args and not requests:
        from .warm import WarmWorker, session_worker

        if WarmWorker.serves(cfg) is None:
            return session_worker(cfg.output_dir).launch(cfg)  # checks cfg as below
    check(cfg, nodes=nodes(launcher_args))  # across nodes ZeRO shards over every node's processes
    # Absolute, so that a later os.chdir in the kernel does not lose the run or its model.
    cfg = cfg.replace(output_dir=str(Path(cfg.output_dir).expanduser().resolve()))
    run_dir = layout.new_run_dir(cfg.output_dir, cfg.label)
    stored = _store_dataset(cfg, run_dir)
    stored.to_json(run_dir / layout.CONFIG)
    for name, body in (requests or {}).items():
        files.write_atomic(run_dir / name, json.dumps(body))
    command = [sys.executable, "-m", "ortnb.runner.supervise", str(run_dir), *(launcher_args or [])]
    # pid-supervisor.json now, though the supervisor records itself too: a Stop in the next instant finds it.
    process = start_process(command, run_dir / layout.LOG, name="ortnb-reaper", run_dir=run_dir, role=liveness.SUPERVISOR)
    return Run(cfg, run_dir, process)


def nodes(launcher_args: list[str] | None) -> int:
    """The most nodes torchrun's ``--nnodes N`` (or ``MIN:MAX``) allows; 1 without it."""
    args = list(launcher_args or [])
    for index, arg in enumerate(args):
        name, _, value = arg.partition("=")
        if name.replace("_", "-") == "--nnodes":
            value = value or (args[index + 1] if index + 1 < len(args) else "1")
            try:
                return int(value.split(":")[-1])
            except ValueError:
                return 1
    return 1


def _store_dataset(cfg: RunConfig, run_dir: Path) -> RunConfig:
    """An in-memory datasets.Dataset goes to disk so the worker processes can read it."""
    if isinstance(cfg.dataset, str):
        return cfg
    from ..progress import without_progress_bars

    target = run_dir / "dataset"
    with without_progress_bars():  # "Flattening the indices", "Saving the dataset": not what the user waits for
        cfg.dataset.save_to_disk(str(target))
    return cfg.replace(dataset=str(target))

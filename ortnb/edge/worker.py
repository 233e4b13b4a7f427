"""The process an edge run trains in, started by ``ortnb.edge.train``. It hides torch before anything else
(see notorch.py), so it trains exactly as a device without PyTorch would.

    python -m ortnb.edge.worker RUN_DIR
"""

from __future__ import annotations

import os
import signal
import sys
import traceback
from pathlib import Path

from .notorch import hide_torch


def main(argv: list[str] | None = None) -> int:
    hide_torch()  # first: nothing below may reach for PyTorch
    from ..runner import control, liveness, status_file
    from ..runner.layout import CONFIG, METRICS
    from ..runner.stream import MetricsWriter
    from ..runner.worker import describe_error
    from . import loop
    from .config import EdgeConfig
    from .notorch import import_training_api

    run_dir = Path((argv or sys.argv[1:])[0]).resolve()
    liveness.record_process(run_dir, "writer", os.getpid())
    status_file.reserve(run_dir)
    heartbeat = liveness.start_heartbeat(run_dir)
    signalled: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # end after the step in progress, with a checkpoint
        signal.signal(signum, lambda number, _frame: signalled.append(number))
    writer = MetricsWriter(run_dir / METRICS)
    try:
        cfg = EdgeConfig.from_json(run_dir / CONFIG)
        api, fixes = import_training_api()
        outcome = loop.run(run_dir, cfg, writer, api, fixes,
                           stop=lambda: bool(signalled) or control.stop_requested(run_dir))
        status_file.write(run_dir, status=outcome)
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure must reach the notebook
        tail = traceback.format_exc()[-4000:]
        message = describe_error(error, run_dir)
        try:
            writer.event("failed", rank=0, error=message, traceback=tail)
        except OSError:
            pass
        status_file.write(run_dir, status="failed", error=message, traceback=tail)
        return 1
    finally:
        heartbeat.set()
        writer.close()


if __name__ == "__main__":
    sys.exit(main())

"""The process an edge run trains in, started by ``ortnb.edge.train``. It hides torch before anything else
(see notorch.py), so it trains exactly as a device without PyTorch would.

    python -m ortnb.edge.worker RUN_DIR
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from .notorch import hide_torch


def main(argv: list[str] | None = None) -> int:
    hide_torch()  # first: nothing below may reach for PyTorch
    from .. import interrupts
    from ..runs import control
    from ..runs.layout import CONFIG
    from ..runs.recorder import Recorder
    from . import loop
    from .config import EdgeConfig
    from .notorch import import_training_api

    run_dir = Path((argv or sys.argv[1:])[0]).resolve()
    # No supervisor above this process: it owns the run's status.json
    recorder = Recorder.open(run_dir, owns_status=True)
    signalled: list[int] = []
    for signum in interrupts.ALL:  # end after the step in progress, with a checkpoint
        signal.signal(signum, lambda number, _frame: signalled.append(number))
    try:
        cfg = EdgeConfig.from_json(run_dir / CONFIG)
        api, fixes = import_training_api()
        outcome = loop.run(run_dir, cfg, recorder.writer, api, fixes,
                           stop=lambda: bool(signalled) or control.stop_requested(run_dir),
                           after_step=recorder.check_folder)
        recorder.finish(outcome)
        return 0
    except BaseException as error:  # noqa: BLE001 - every failure must reach the notebook
        recorder.fail(error)
        return 1
    finally:
        recorder.close()


if __name__ == "__main__":
    sys.exit(main())

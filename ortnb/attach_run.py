"""A run folder, whatever trained it. Its config.json names its ``kind``: "trainer" (a RunConfig, started by
``ortnb.launch`` and trained by transformers' Trainer) or "edge" (an EdgeConfig, started by ``ortnb.edge.train``
and trained by ONNX Runtime's training API). ``attach`` reads that and hands back the Run for the kind.

It sits above ``runner/`` and ``edge/`` so that neither imports the other to open a folder; the config.json
reader they share is ``runs/layout.py``, below all three.
"""

from __future__ import annotations

from pathlib import Path

from .errors import ConfigError, RunFolderError
from .runs.layout import CONFIG, EDGE, read_config


def attach(run_dir: str | Path):
    """A Run for an existing run folder (one started from the shell, by another kernel, or before a restart):
    a trainer run or an edge run, as its config.json says."""
    run_dir = Path(run_dir).expanduser().resolve()
    kind, data = read_config(run_dir)
    try:
        if kind == EDGE:
            from .edge.config import EdgeConfig
            from .edge.run import EdgeRun

            return EdgeRun(EdgeConfig.from_dict(data), run_dir, None)
        from .config import RunConfig
        from .runs.run import Run

        return Run(RunConfig.from_dict(data), run_dir, None)
    except ConfigError as error:  # fields this ortnb does not know: a newer one wrote them
        raise RunFolderError(f"{run_dir / CONFIG}: {error}") from None


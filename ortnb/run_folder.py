"""Reading a run folder's config.json, for every kind of run: its ``kind`` ("trainer": a RunConfig run of
``ortnb.launch``; "edge": an EdgeConfig run of ``ortnb.edge.train``) and its settings. Below ``runner/``,
``edge/`` and ``runs.py`` (which hands back the Run for the kind), so that each may read a folder without
importing the others. A config.json that cannot be read (cut short by a crash, edited by hand, written by a
newer ortnb) is named with its path and what to do, never a bare JSONDecodeError.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import RunFolderError

CONFIG = "config.json"
TRAINER, EDGE = "trainer", "edge"
KINDS = (TRAINER, EDGE)


def read_config(run_dir: str | Path) -> tuple[str, dict]:
    """(kind, the config's fields without the kind) of a run folder. FileNotFoundError when it is not a run
    folder; RunFolderError when its config.json is damaged or of a kind this ortnb does not know."""
    path = Path(run_dir) / CONFIG
    if not path.exists():
        raise FileNotFoundError(f"{Path(run_dir)} is not a run folder: it holds no {CONFIG}. Pass a folder that "
                                "launch() or `ortnb run` created (it prints it; run.run_dir holds it).")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise RunFolderError(f"{path} is damaged: it is not text (byte {error.start}). {_WAY_OUT}") from None
    except ValueError as error:
        raise RunFolderError(f"{path} is damaged: it is not JSON ({error.msg}: line {error.lineno} column "
                             f"{error.colno}; a write cut short, or an edit). {_WAY_OUT}") from None
    except OSError as error:
        raise RunFolderError(f"{path} cannot be read: {error.strerror or error}.") from None
    if not isinstance(data, dict):
        raise RunFolderError(f"{path} is damaged: it holds a JSON {type(data).__name__}, not the run's settings. "
                             f"{_WAY_OUT}")
    kind = data.pop("kind", TRAINER)  # ortnb before kinds wrote none: every such folder is a trainer run
    if kind not in KINDS:
        raise RunFolderError(f"{path} is a run of kind {kind!r}, which this ortnb ({_version()}) does not know (it "
                             f"reads {', '.join(map(repr, KINDS))}): a newer ortnb wrote it; upgrade ortnb to read it.")
    return kind, data


_WAY_OUT = ("The run's settings are lost with it, so the folder cannot be read as a run: its metrics.jsonl and "
            "checkpoints are still there to copy, and launching the run again starts afresh.")


def _version() -> str:
    from . import __version__

    return __version__


def checkpoint_step(path: str | Path, prefix: str) -> int | None:
    """The step of a checkpoint named ``<prefix>-N`` (a trainer run's checkpoint-N folders, an edge run's
    checkpoints/step-N files); None for any other name (checkpoint-N.tmp, step-latest, a stray file)."""
    head, dash, tail = Path(path).name.partition("-")
    return int(tail) if head == prefix and dash and tail.isdigit() else None

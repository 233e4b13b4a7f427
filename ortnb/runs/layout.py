"""Where a run keeps its files, and its config.json: one directory per run, never reused.

config.json names the run's ``kind`` ("trainer": a RunConfig run of ``ortnb.launch``; "edge": an EdgeConfig run
of ``ortnb.edge.train``) beside its settings. Every kind writes it through ``write_config`` (atomically) and reads
it through ``read_config``, here, below ``runner/``, ``edge/`` and ``attach``, so that each may read a folder
without importing the others. A config.json that cannot be read (cut short by a crash, edited by hand, written by
a newer ortnb) is named with its path and what to do, never a bare JSONDecodeError.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from .. import files
from ..errors import RunFolderError

CONFIG = "config.json"
TRAINER, EDGE = "trainer", "edge"  # config.json's "kind"
KINDS = (TRAINER, EDGE)
METRICS = "metrics.jsonl"
STOP = "STOP"
STATUS = "status.json"
LOG = "run.log"
PEAK = "peak.json"
MODEL = "model"  # the final weights, written to STAGING beside it, marked whole, then renamed (worker.py)
BEST = "best"  # the weights of the best evaluation (runner/evaluation.py)
STAGING = ".tmp"  # model.tmp/, best.tmp/: a save under way (or cut short); never read
REPLACED = ".old"  # best.old/: the previous best/ for the moment between two renames; read when best/ is gone
BEST_MARKER = "ortnb-best.json"  # written last into best/: step, metric, value
CHECKPOINT_MARKER = "ortnb-whole.json"  # written last into checkpoint-N/: every file of the save and its size
HEARTBEAT = "heartbeat"  # touched every few seconds by the supervisor and the writing rank


def error_file(run_dir: Path, rank: int) -> Path:
    return Path(run_dir) / f"error-rank{rank}.txt"


def process_file(run_dir: Path, role: str) -> Path:
    """pid-supervisor.json, pid-ranks.json, pid-writer.json: which processes run this run (see liveness.py)."""
    return Path(run_dir) / f"pid-{role}.json"


def checkpoints(run_dir: Path) -> list[Path]:
    """The checkpoint-N folders that hold a whole save, oldest first. A run of this version marks each one
    whole after the save returned on every rank (``mark_whole``): a folder without the marker, or whose files
    no longer have the sizes it lists, was cut short (a kill, a full disk) and does not count. In folders
    from before markers (a Trainer's output_dir, an ortnb run whose config.json names no kind) a checkpoint
    counts when it holds a config.json and weights."""
    found = [p for p in Path(run_dir).glob("checkpoint-*")
             if p.is_dir() and checkpoint_step(p, "checkpoint") is not None]
    if marks_checkpoints(run_dir) or any((p / CHECKPOINT_MARKER).exists() for p in found):
        complete = [p for p in found if is_whole(p)]
    else:
        complete = [p for p in found if (p / "config.json").exists()
                    and (any(p.glob("model*.safetensors")) or any(p.glob("pytorch_model*.bin")))]
    return sorted(complete, key=lambda p: checkpoint_step(p, "checkpoint"))


def marks_checkpoints(run_dir: Path) -> bool:
    """Whether the run folder was written by an ortnb that marks whole checkpoints: its config.json names
    the run's kind (both arrived in the same version)."""
    return "kind" in (files.read_json_object(Path(run_dir) / CONFIG) or {})


def mark_whole(folder: Path) -> None:
    """Certify a finished save: list every file in ``folder`` with its size in CHECKPOINT_MARKER, written
    last, flushed to the disk and atomically (files.write_atomic), so the marker never outlives what it lists."""
    folder = Path(folder)
    listed = {str(p.relative_to(folder)): p.stat().st_size for p in sorted(folder.rglob("*"))
              if p.is_file() and p.name != CHECKPOINT_MARKER and not p.name.endswith(".tmp")}
    files.write_atomic(folder / CHECKPOINT_MARKER, json.dumps({"files": listed}, indent=1), durable=True)


def is_whole(folder: Path) -> bool:
    """Whether ``folder`` has a readable marker and every file it lists is there with the size it lists."""
    try:
        listed = json.loads((Path(folder) / CHECKPOINT_MARKER).read_text())["files"]
        return bool(listed) and all((Path(folder) / name).stat().st_size == size for name, size in listed.items())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def put_in_place(staging: Path, target: Path) -> None:
    """Rename a whole save ``staging`` to ``target``, replacing what was there: the old one is first renamed
    aside (``<target>.old``), so a kill between the two renames leaves one whole folder that readers find
    (``best()`` reads best.old/ when best/ is missing), then removed."""
    import shutil

    old = target.with_name(target.name + REPLACED)
    if target.exists():
        shutil.rmtree(old, ignore_errors=True)  # a leftover of an earlier kill: target itself is whole
        target.rename(old)
    staging.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def best(run_dir: Path) -> dict | None:
    """The best evaluation's marker ({step, metric, value, ...}, with ``folder``) when best/ is whole; else None.
    A run killed between ``best -> best.old`` and ``best.tmp -> best`` (put_in_place) has only best.old/: the
    previous best, whole, which is read instead."""
    for folder in (Path(run_dir) / BEST, Path(run_dir) / (BEST + REPLACED)):
        marker = files.read_json_object(folder / BEST_MARKER)
        if marker is not None:
            return {**marker, "folder": str(folder)}
        if folder.exists():
            return None  # a best/ without its marker is not whole, and best.old/ is then older than it
    return None


def final_model(run_dir: Path) -> Path | None:
    """model/ when it holds the whole final save: marked whole (this version writes the marker before renaming
    model.tmp/ into place) or, without a marker (a folder from before it, or one saved by hand), whole by
    inspection (config.json readable, every safetensors file as long as its header says). Else None."""
    folder = Path(run_dir) / MODEL
    if (folder / CHECKPOINT_MARKER).exists():
        return folder if is_whole(folder) else None
    from ..models import weights

    return folder if weights.is_whole_save(folder) else None


def cut_final_model(run_dir: Path) -> str | None:
    """What a final save cut short left (model/ that is not whole, or model.tmp/), named for an error; else None."""
    folder = Path(run_dir) / MODEL
    if folder.exists() and final_model(run_dir) is None:
        return f"{folder} is not whole (a save cut short by a kill or a full disk)"
    if folder.with_name(MODEL + STAGING).exists() and not folder.exists():
        return f"the final save in {folder.with_name(MODEL + STAGING)} never finished (a kill or a full disk)"
    return None


def describe_value(best: dict) -> str:
    """'accuracy 0.812' for a best marker or eval summary."""
    from ..evaluation import METRIC_NAMES

    value = best.get("value")
    shown = f"{value:.4g}" if isinstance(value, (int, float)) else "?"
    return f"{METRIC_NAMES.get(best.get('metric'), best.get('metric'))} {shown}"


def kept_text(run_dir: Path) -> str:
    """What a run folder holds to load, in the order load_model(), Try it and export read it (best/, model/, the
    last whole checkpoint), and the checkpoint a resume starts from: what a stopped run's card and a forced
    stop's reason say (the stop once said "nothing to load" while best/ was there)."""
    run_dir = Path(run_dir)
    found, model, saved = best(run_dir), final_model(run_dir) is not None, checkpoints(run_dir)
    if found is not None:
        used = f"best/ (step {found.get('step')}, {describe_value(found)})"
    elif model:
        used = "model/ (the final weights)"
    elif saved:
        used = f"{saved[-1].name} (the last whole checkpoint)"
    else:
        cut = cut_final_model(run_dir)
        return ("nothing to load: the run wrote no evaluation's weights, no final model and no whole checkpoint"
                + (f" ({cut})" if cut else ""))
    resume = f"; resume from {saved[-1].name}" if saved else "; no whole checkpoint to resume from"
    return f"{used}: load_model(), Try it and export use it{resume}"


def run_peak(run_dir: Path) -> float | None:
    """The peak FLOP/s the supervisor recorded for this run (PEAK); None when the file is missing or damaged."""
    value = (files.read_json_object(Path(run_dir) / PEAK) or {}).get("flops")
    return value if isinstance(value, (int, float)) and value > 0 else None


# A run folder is "<YYYYmmdd-HHMMSS>-<slug of the label>[-N]" and one file name holds at most 255 bytes on Linux,
# macOS and Windows file systems: 16 bytes of time, up to 4 of suffix; NAME_LIMIT is what is left for the slug.
STARTED = "%Y%m%d-%H%M%S"
NAME_LIMIT = 255 - len("20260101-120000-") - len("-999")


def slug(label: str) -> str:
    """The label as a run folder names it: lower-case letters and digits, each other run of characters one "-"."""
    return re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")


def new_run_dir(output_dir: str | Path, label: str) -> Path:
    """A fresh directory under output_dir: <time>-<label>, with -2, -3 ... if that exists already."""
    base = Path(output_dir).expanduser().resolve() / f"{time.strftime(STARTED)}-{slug(label) or 'run'}"
    for attempt in range(1, 1000):
        candidate = base if attempt == 1 else base.with_name(f"{base.name}-{attempt}")
        try:
            candidate.mkdir(parents=True, exist_ok=False)
            return candidate
        except FileExistsError:
            continue
    raise RuntimeError(f"Could not create a new run directory under {output_dir}")


def config_text(kind: str, settings: dict) -> str:
    """config.json's text: the run's ``kind`` first, then its settings."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r}: a run folder's kind is one of {', '.join(map(repr, KINDS))}")
    return json.dumps({"kind": kind, **settings}, indent=2)


def write_config(path: str | Path, kind: str, settings: dict) -> str:
    """Write a run's config.json at ``path`` atomically (files.write_atomic), so a reader never finds half of it:
    a crash or a full disk leaves the old file or none. Returns its text. Every kind's config writes through here."""
    text = config_text(kind, settings)
    files.write_atomic(path, text)
    return text


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
    from .. import __version__

    return __version__


def checkpoint_step(path: str | Path, prefix: str) -> int | None:
    """The step of a checkpoint named ``<prefix>-N`` (a trainer run's checkpoint-N folders, an edge run's
    checkpoints/step-N files); None for any other name (checkpoint-N.tmp, step-latest, a stray file)."""
    head, dash, tail = Path(path).name.partition("-")
    return int(tail) if head == prefix and dash and tail.isdigit() else None

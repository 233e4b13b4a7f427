"""What an edge run is: ``EdgeConfig``, stored as the run folder's config.json. Torch-free."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from ..runs.layout import EDGE, write_config
from ..vocabulary import Task

KIND = EDGE  # config.json's "kind": tells an edge run folder from a RunConfig one (runs/layout.py)


@dataclass
class EdgeConfig:
    artifacts_dir: str
    """The folder export_artifacts wrote (training, eval and optimizer models, checkpoint, ortnb-edge.json)."""
    dataset: str
    """Training rows: a .jsonl/.json/.csv file with a text (or input_ids) column and a label column."""
    steps: int = 20
    """Optimizer steps to train (a resumed run counts on from its checkpoint's step)."""
    batch_size: int = 16
    """Rows per step."""
    learning_rate: float = 1e-4
    """Peak learning rate, decayed linearly to 0 at the last step."""
    eval_dataset: str | None = None
    """Held-out rows, evaluated with the eval model before the first step and at the end."""
    eval_every: int = 0
    """Also evaluate every N steps (0: only before and after)."""
    save_every: int = 0
    """Checkpoint every N steps (0: only at the end or when stopped)."""
    resume_from: str | None = None
    """An earlier edge run folder or one of its checkpoint files: weights, optimizer state and step go on."""
    seed: int = 0
    """Seed for the order of the rows."""
    warmup_steps: int = 2
    """First steps left out of the throughput statistics."""
    threads: int | None = None
    """CPU threads for ONNX Runtime; None: all cores."""
    output_dir: str = "runs"
    """Where run folders are created."""
    name: str | None = None
    """A label for charts and tables."""

    @property
    def label(self) -> str:
        return str(self.name) if self.name else "ORT training API"

    # What the Dashboard and comparison tables read of any run's config (RunConfig's names).
    @property
    def max_steps(self) -> int:
        return self.steps

    @property
    def model(self) -> str:
        return self.artifacts_dir  # the artifacts are the model here: same folder, same workload

    @property
    def task(self) -> str:
        return self._manifest().get("task", Task.SEQUENCE_CLASSIFICATION)

    @property
    def seq_len(self) -> int | None:
        return self._manifest().get("seq_len")

    def _manifest(self) -> dict:
        try:
            return json.loads((Path(self.artifacts_dir) / "ortnb-edge.json").read_text())
        except (OSError, ValueError):
            return {}

    def problems(self) -> list[str]:
        """Every problem with the numbers, each naming the field and the way out."""
        found = []
        for field, least in (("steps", 1), ("batch_size", 1), ("eval_every", 0), ("save_every", 0),
                             ("warmup_steps", 0)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                found.append(f"{field}={value!r}: a whole number, {least} or more")
        if isinstance(self.learning_rate, bool) or not isinstance(self.learning_rate, (int, float)) \
                or not 0 < self.learning_rate < 1:
            found.append(f"learning_rate={self.learning_rate!r}: a number between 0 and 1 (e.g. 1e-4; 1e-3 for "
                         "a head alone)")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            found.append(f"threads={self.threads!r}: a whole number of CPU threads, or None for all cores")
        return found

    def check(self) -> None:
        found = self.problems()
        if found:
            raise ConfigError(found)

    def to_json(self, path: Path) -> None:
        """Write the run folder's config.json, atomically (runs.layout.write_config, as every kind does)."""
        write_config(path, KIND, dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: dict) -> "EdgeConfig":
        """An EdgeConfig from field: value pairs (a ``kind`` of "edge" allowed); ConfigError for unknown fields."""
        data = dict(data)
        if data.pop("kind", KIND) != KIND:
            raise ConfigError(f"kind: an EdgeConfig is of kind {KIND!r}; this one is not an edge run's config.")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(map(str, data)) - names)
        if unknown:
            raise ConfigError(f"Unknown EdgeConfig field(s): {', '.join(unknown)}. Known: {', '.join(sorted(names))}.")
        missing = sorted(f.name for f in dataclasses.fields(cls)
                         if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
                         and f.name not in data)
        if missing:
            raise ConfigError(f"EdgeConfig field(s) missing: {', '.join(missing)}.")
        return cls(**data)

    @classmethod
    def from_json(cls, path: Path) -> "EdgeConfig":
        """The config.json of an edge run folder (or its file), read as ortnb.attach reads it."""
        from ..runs.layout import CONFIG, read_config

        path = Path(path)
        _kind, data = read_config(path.parent if path.name == CONFIG else path)
        return cls.from_dict(data)

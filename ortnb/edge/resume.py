"""Whether a checkpoint can resume training on an artifacts folder, said in words before ONNX Runtime says it in
C++: a file cut short (a copy or a save that did not finish) and a checkpoint saved from other artifacts are
refused naming the file, why, and the way out. Used by ``train()`` before the run starts and by the worker when it
opens the checkpoint. Torch-free."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from . import manifest

SHOWN = 3  # weight names in a refusal before "and N more"


def load_checkpoint(api, path: Path):
    """ORT's CheckpointState of ``path``, or ConfigError naming the file when ORT cannot read it."""
    try:
        return api.CheckpointState.load_checkpoint(str(path))
    except Exception as error:  # noqa: BLE001 - ORT raises its own C++ error types for a damaged file
        said = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise ConfigError(f"the checkpoint {path} cannot be read ({path.stat().st_size:,} bytes; ONNX Runtime says: "
                          f"{said}): it is cut short or damaged, as a copy or a save that did not finish leaves it. "
                          "Resume from an earlier checkpoint of that run (its checkpoints/step-N files), or start "
                          "again without resume_from") from None


def weights(state) -> dict[str, tuple]:
    """Each weight a CheckpointState holds: name -> (shape, whether it trains)."""
    return {name: (tuple(parameter.data.shape), bool(parameter.requires_grad))
            for name, parameter in dict(state.parameters).items()}


def mismatch(found: dict[str, tuple], expected: dict[str, tuple]) -> list[str]:
    """How a checkpoint's weights (name -> (shape, trains)) differ from the artifacts' it should resume, in words."""
    extra = sorted(set(found) - set(expected))
    absent = sorted(set(expected) - set(found))
    differ = sorted(name for name in set(found) & set(expected) if found[name] != expected[name])
    problems = []
    if absent:
        problems.append(f"it lacks {_some(absent)}")
    if extra:
        problems.append(f"it holds {_some(extra)}, which the artifacts do not")
    if differ:
        problems.append("weights differ: " + ", ".join(f"{name} {_words(found[name])} here, {_words(expected[name])} "
                                                        "in the artifacts" for name in differ[:SHOWN])
                        + (f" and {len(differ) - SHOWN} more" if len(differ) > SHOWN else ""))
    return problems


def _words(weight: tuple) -> str:
    shape, trains = weight
    return f"{list(shape)} {'trained' if trains else 'frozen'}"


def check(api, checkpoint: Path, artifacts: Path):
    """The checkpoint's state when it can resume training on ``artifacts``; ConfigError otherwise."""
    state = load_checkpoint(api, checkpoint)
    expected = weights(load_checkpoint(api, artifacts / manifest.CHECKPOINT))
    problems = mismatch(weights(state), expected)
    if problems:
        raise ConfigError(f"the checkpoint {checkpoint} was not saved from the artifacts in {artifacts} "
                          f"({'; '.join(problems)}): resume it with the artifacts its run trained (the run's "
                          "config.json names them in artifacts_dir), or start again on these artifacts without "
                          "resume_from")
    return state


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return f"{len(names)} weights ({shown}{' ...' if len(names) > SHOWN else ''})"

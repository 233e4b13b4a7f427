"""From the device back to PyTorch: a transformers model holding the weights of an edge checkpoint."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from . import browser_weights, loop, manifest


def to_pytorch(run_or_checkpoint, artifacts_dir=None):
    """The source model's architecture (from the artifacts' config.json) with every weight the checkpoint
    holds: an EdgeRun, an edge run folder, a checkpoint file, an artifacts folder (untrained weights) or the
    weights file a web bundle's page downloads (with ``artifacts_dir``, the artifacts the bundle was made from)."""
    source = Path(getattr(run_or_checkpoint, "run_dir", run_or_checkpoint)).expanduser()
    _check_artifacts_dir(source, artifacts_dir)
    import tempfile

    import numpy as np
    import torch
    from onnxruntime.training.api import CheckpointState
    from transformers import AutoConfig, AutoModelForSequenceClassification

    if browser_weights.is_browser_weights(source):
        if artifacts_dir is None:
            raise ValueError(f"{source} holds weights trained in a browser: pass artifacts_dir, the artifacts "
                             "folder the web bundle was made from")
        with tempfile.TemporaryDirectory(prefix="ortnb-browser-") as scratch:
            checkpoint = browser_weights.load_browser_weights(artifacts_dir, source, Path(scratch) / "checkpoint")
            return to_pytorch(checkpoint, artifacts_dir)
    checkpoint, artifacts_dir = _locate(source, artifacts_dir)
    from ..progress import without_progress_bars

    with without_progress_bars():
        config = AutoConfig.from_pretrained(artifacts_dir / manifest.MODEL_CONFIG)
        model = AutoModelForSequenceClassification.from_config(config)
    state = CheckpointState.load_checkpoint(str(checkpoint))
    names = dict(model.named_parameters())
    stored = {name for name in names if name in state.parameters}
    missing = sorted(set(names) - stored)
    if missing:
        raise ValueError(f"the checkpoint {checkpoint} lacks {len(missing)} of the model's weights "
                         f"({', '.join(missing[:3])}...): it was not made from these artifacts")
    values = {name: np.array(state.parameters[name].data) for name in stored}
    bad = browser_weights.non_finite(values)
    if bad:
        raise ConfigError(browser_weights.non_finite_words(f"the checkpoint {checkpoint}", bad))
    with torch.no_grad():
        for name in stored:
            names[name].copy_(torch.from_numpy(values[name]))
    return model.eval()


def _check_artifacts_dir(source: Path, artifacts_dir) -> None:
    """Refuse an artifacts_dir that is no artifacts folder before anything loads. Given in load_browser_weights'
    order, to_pytorch(artifacts_dir, downloaded) would otherwise load the artifacts' own untrained weights, since
    an artifacts folder as the first argument is a valid source, and never look at the download."""
    if artifacts_dir is None:
        return
    folder = Path(artifacts_dir).expanduser()
    if (folder / manifest.FILE).is_file():
        return
    given = f"the first argument is {browser_weights.describe(source)} and artifacts_dir is " \
            f"{browser_weights.describe(folder)}"
    if (source / manifest.FILE).is_file():
        raise ConfigError(f"to_pytorch got its two paths the other way round: {given}. The first argument is what to "
                          "load (an edge run, a checkpoint, or the weights file a page downloaded), artifacts_dir the "
                          "artifacts folder it was trained from (load_browser_weights takes them in the other "
                          f"order): call to_pytorch({str(folder)!r}, {str(source)!r})")
    error = ConfigError if folder.exists() else FileNotFoundError
    raise error(f"to_pytorch: {given}, but artifacts_dir must be the artifacts folder the weights were trained "
                f"from (the one holding {manifest.FILE}): pass that folder, or leave artifacts_dir out for an "
                "edge run, which names its own")


def _locate(source: Path, artifacts_dir) -> tuple[Path, Path]:
    if (source / manifest.FILE).exists():  # an artifacts folder: its initial checkpoint
        return source / manifest.CHECKPOINT, source
    checkpoint = loop.latest_checkpoint(source)
    if checkpoint is None:
        raise FileNotFoundError(f"{source} holds no edge checkpoint (checkpoints/step-N)")
    if artifacts_dir is None:
        from .config import EdgeConfig

        run_dir = source if source.is_dir() else source.parent.parent
        artifacts_dir = EdgeConfig.from_json(run_dir / "config.json").artifacts_dir
    return checkpoint, Path(artifacts_dir)

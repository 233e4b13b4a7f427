"""From the device back to PyTorch: a transformers model holding the weights of an edge checkpoint."""

from __future__ import annotations

from pathlib import Path

from . import browser_weights, loop, manifest


def to_pytorch(run_or_checkpoint, artifacts_dir=None):
    """The source model's architecture (from the artifacts' config.json) with every weight the checkpoint
    holds: an EdgeRun, an edge run folder, a checkpoint file, an artifacts folder (untrained weights) or the
    weights file a web bundle's page downloads (with ``artifacts_dir``, the artifacts the bundle was made from)."""
    import tempfile

    import numpy as np
    import torch
    from onnxruntime.training.api import CheckpointState
    from transformers import AutoConfig, AutoModelForSequenceClassification

    source = Path(getattr(run_or_checkpoint, "run_dir", run_or_checkpoint))
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
    with torch.no_grad():
        for name in stored:
            names[name].copy_(torch.from_numpy(np.array(state.parameters[name].data)))
    return model.eval()


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

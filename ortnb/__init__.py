"""ortnb: fine-tune Hugging Face Transformers with ONNX Runtime training, from a notebook.

The migration from transformers is two renames::

    from ortnb import ORTTrainer, ORTTrainingArguments   # was: Trainer, TrainingArguments

On-device training without PyTorch is ``ortnb.edge`` (export_artifacts, train).

Names are loaded on first use: ``import ortnb`` imports neither transformers nor onnxruntime,
deepspeed, plotly or ipywidgets.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "ORTTrainer": "ortnb.training",
    "ORTSeq2SeqTrainer": "ortnb.training",
    "ORTTrainingArguments": "ortnb.training",
    "ORTSeq2SeqTrainingArguments": "ortnb.training",
    "ort_model": "ortnb.custom_loop",
    "engine_report": "ortnb.custom_loop",
    "export_onnx": "ortnb.export",
    "RunConfig": "ortnb.config",
    "validate": "ortnb.validation",
    "capabilities": "ortnb.hardware",
    "launch": "ortnb.runner",
    "attach": "ortnb.attach_run",
    "Run": "ortnb.runner",
    "compare": "ortnb.comparison",
    "tune": "ortnb.tuning",
    "TuneResult": "ortnb.tuning",
    "tune_to_target": "ortnb.tuning",
    "profile": "ortnb.profiling",
    "Profile": "ortnb.profiling",
    "Dashboard": "ortnb.ui.dashboard",
    "ConfigPanel": "ortnb.ui.panel",
    "LiveCallback": "ortnb.ui.live",
    "ConfigError": "ortnb.errors",
    "Problem": "ortnb.validation",
    "OrtFallbackError": "ortnb.errors",
    "MissingDependencyError": "ortnb.errors",
    "ExportParityError": "ortnb.errors",
    "OrtnbWarning": "ortnb.errors",
    "RunFolderError": "ortnb.errors",
}

# Subpackages reached as attributes (``ortnb.edge.train``) without an import of their own.
_SUBPACKAGES = ("edge",)

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"ortnb.{name}")
    raise AttributeError(f"module 'ortnb' has no attribute {name!r}")


def __dir__():
    return __all__

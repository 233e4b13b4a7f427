"""On-device training: a fine-tuned model becomes ONNX Runtime training artifacts, and training goes on
with ``onnxruntime.training.api`` alone, in a process that never imports PyTorch.

Offline, with PyTorch (``export_artifacts``)::

    artifacts = ortnb.edge.export_artifacts(run.run_dir, "edge/minilm", trainable="head")

On the device, without PyTorch (``train``; the run streams the same metrics.jsonl as any other run)::

    run = ortnb.edge.train("edge/minilm", "reviews.jsonl", steps=50, batch_size=16, learning_rate=1e-3)

Files: ``artifacts.py`` (the offline half), ``fixes.py`` (what onnx 1.23 and torch 2.13 break in ORT
1.19.2's artifact generation), ``trainable.py`` (which weights train), ``manifest.py`` (what the device
needs to know about the graphs); the torch-free half: ``notorch.py`` (hiding torch, entering the training
package without it), ``batches.py``, ``loop.py``, ``worker.py`` (the process that trains), ``config.py``
(EdgeConfig); ``run.py`` (train() and EdgeRun), ``weights.py`` (back to PyTorch), ``timing.py`` (step time
next to ORTModule and eager, each in a fresh process), ``cli.py`` (``ortnb edge export | train | web``).

In a browser tab (``web_bundle``): ``web/`` (the page: index.html, app.js, tokenizer.js, chart.js),
``web_runtime.py`` (ONNX Runtime Web's training build from the npm registry), ``web_tokenizer.py`` (which
tokenizer.json files the page reads), ``web_schedule.py`` (the learning rate, in the optimizer graph),
``web_build.py`` (``web_bundle``, the static folder: a module named web_bundle.py would replace the function on
this package once imported), ``web_folder.py`` (which files of a bundle's folder are ortnb's), ``web_server.py``
(a loopback server, isolated for threads), ``resume.py`` (a checkpoint that can resume, or why not),
``browser_weights.py`` (the page's downloaded weights, back into a checkpoint and PyTorch)::

    bundle = ortnb.edge.web_bundle("edge/minilm", "edge/minilm-web", data="reviews.jsonl", steps=20)
    server = bundle.serve()   # server.url: open it; server.stop()
"""

from __future__ import annotations

import importlib

_LAZY = {
    "export_artifacts": "ortnb.edge.artifacts",
    "Artifacts": "ortnb.edge.artifacts",
    "train": "ortnb.edge.run",
    "EdgeRun": "ortnb.edge.run",
    "EdgeConfig": "ortnb.edge.run",
    "to_pytorch": "ortnb.edge.weights",
    "Manifest": "ortnb.edge.manifest",
    "web_bundle": "ortnb.edge.web_build",
    "WebBundle": "ortnb.edge.web_build",
    "serve": "ortnb.edge.web_server",
    "load_browser_weights": "ortnb.edge.browser_weights",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ortnb.edge' has no attribute {name!r}")


def __dir__():
    return __all__

"""ortnb/runs/ is the run-folder protocol, the layer below every kind of run: nothing in it imports runner/, edge/,
ui/, tuning/ or profiling/ (at any level, a function's import included); config.json's name and the run kinds are
defined once, there; and every kind's config.json is written through its one atomic writer (pure: no training)."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from ortnb import files
from ortnb.config import RunConfig
from ortnb.edge.config import EdgeConfig
from ortnb.runs import layout

from .._helpers import imported, module_name

ROOT = Path(__file__).resolve().parents[2] / "ortnb"
ABOVE = ("ortnb.runner", "ortnb.edge", "ortnb.ui", "ortnb.tuning", "ortnb.profiling")


def test_the_resolver_sees_every_kind_of_import(monkeypatch):
    package = ROOT / "runs"
    sample = ("import ortnb.ui.dashboard\nfrom ..edge import run\nfrom . import layout\n"
              "def f():\n    from ..runner.launch import launch\n    importlib.import_module('ortnb.tuning')\n")
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: sample)
    modules = [module for _, module in imported(package / "sample.py")]
    assert modules == ["ortnb.ui.dashboard", "ortnb.edge.run", "ortnb.runs.layout", "ortnb.runner.launch.launch",
                       "ortnb.tuning"]


def test_nothing_in_runs_imports_a_layer_above_it():
    paths = sorted((ROOT / "runs").rglob("*.py"))
    assert len(paths) >= 10, paths  # the package is there, and read
    upward = [f"{path.relative_to(ROOT.parent)}:{line} imports {module}" for path in paths
              for line, module in imported(path) if module.startswith(tuple(f"{above}." for above in ABOVE))
              or module in ABOVE]
    assert upward == [], upward


def _module_level_constants(value: str) -> list[str]:
    """module.NAME for every module-level name in ortnb/ defined as the string ``value`` (``NAME = value``, or one
    name of ``A, B = value, other``): a definition, not a use (a tuple of file names that holds it is a use)."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.parse(path.read_text(), str(path)).body:
            if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                pairs = (zip(target.elts, node.value.elts) if isinstance(target, ast.Tuple)
                         and isinstance(node.value, ast.Tuple) else [(target, node.value)])
                found += [f"{module_name(path)}.{ast.unparse(name)}" for name, leaf in pairs
                          if isinstance(leaf, ast.Constant) and leaf.value == value]
    return found


def test_config_json_and_the_run_kinds_are_defined_once():
    # edge/manifest.MODEL_CONFIG is transformers' config.json of the exported model, another file of that name.
    assert _module_level_constants("config.json") == ["ortnb.edge.manifest.MODEL_CONFIG", "ortnb.runs.layout.CONFIG"]
    assert _module_level_constants("trainer") == ["ortnb.runs.layout.TRAINER"]
    assert _module_level_constants("edge") == ["ortnb.runs.layout.EDGE"]
    assert layout.KINDS == (layout.TRAINER, layout.EDGE) == ("trainer", "edge")


def _edge_config(tmp_path) -> EdgeConfig:
    return EdgeConfig(artifacts_dir=str(tmp_path / "artifacts"), dataset=str(tmp_path / "rows.jsonl"), steps=3)


@pytest.mark.parametrize("kind", ["trainer", "edge"])
def test_every_kind_writes_config_json_through_the_one_atomic_writer(tmp_path, monkeypatch, kind):
    written = []
    real = files.write_atomic
    monkeypatch.setattr(files, "write_atomic",
                        lambda path, text, **k: written.append(Path(path)) or real(path, text, **k))
    config = RunConfig(model="tiny-bert", output_dir=str(tmp_path)) if kind == "trainer" else _edge_config(tmp_path)
    config.to_json(tmp_path / layout.CONFIG)
    assert written == [tmp_path / layout.CONFIG]
    assert json.loads((tmp_path / layout.CONFIG).read_text())["kind"] == kind
    assert layout.read_config(tmp_path)[0] == kind


def test_a_config_write_cut_short_leaves_the_previous_file(tmp_path, monkeypatch):
    path = tmp_path / layout.CONFIG
    _edge_config(tmp_path).to_json(path)
    before = path.read_text()

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space left"):
        RunConfig(model="tiny-bert", output_dir=str(tmp_path)).to_json(path)
    assert path.read_text() == before and [p.name for p in tmp_path.iterdir()] == [layout.CONFIG]


def test_an_unknown_kind_is_refused_by_the_writer(tmp_path):
    with pytest.raises(ValueError, match="kind='quantum': a run folder's kind is one of 'trainer', 'edge'"):
        layout.write_config(tmp_path / layout.CONFIG, "quantum", {})


def test_every_key_of_a_run_summary_is_declared_in_RunSummary():
    """metrics.summarize's keys (and the few Run.summary and the Dashboard add) are RunSummary's: a new figure is
    declared, with what it means, before any reader can read it by name."""
    import re

    from ortnb import metrics
    from ortnb.runs.summary import FIELDS

    step = {"kind": "step", "samples_per_s": 10.0, "tokens_per_s": 1280.0, "real_tokens_per_s": 900.0,
            "step_time": 1.6, "loss": 0.6, "peak_rss_mb": [900.0], "optimizer_state_mb": [80.0], "mfu": 0.2,
            "other_cpu": 0.01}
    records = ([{"kind": "event", "event": "engine", "engine": "onnxruntime", "time": 0.0}]
               + [dict(step, step=n) for n in range(1, 8)]
               + [{"kind": "event", "event": "eval", "step": 7, "metric": "accuracy", "accuracy": 0.8,
                   "eval_loss": 0.5, "best": True, "time": 9.0},
                  {"kind": "event", "event": "note", "text": "a note"},
                  {"kind": "event", "event": "completed", "target": 0.75, "reached_target": True, "target_step": 7,
                   "target_wall_time": 9.0, "time": 10.0}])
    produced = set(metrics.summarize(records, warmup_steps=2))
    assert {"samples_per_s", "eval_metric", "target_reached_s", "mfu", "contended"} <= produced  # it saw them all
    assert produced - FIELDS == set()
    read = set()
    for path in ROOT.rglob("*.py"):
        read |= set(re.findall(r'summary(?:\(\))?(?:\["|\.get\(")([a-z_0-9]+)"', path.read_text()))
    assert read and read - FIELDS == set()

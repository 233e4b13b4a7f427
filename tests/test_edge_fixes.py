"""Each of ortnb.edge's fixes is needed: leaving it out breaks on-device training on today's stack."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import onnx
import pytest

from ortnb.edge import artifacts, fixes, manifest

from .conftest import tiny_bert

api = pytest.importorskip("onnxruntime.training.api")


def generate(folder: Path, opset: int, skip=frozenset()):
    folder.mkdir()
    model = tiny_bert()
    graph, _ = artifacts._export_forward(model, 16, opset)
    applied = fixes.apply(fixes.BEFORE_GRADIENT, graph, skip)
    names = [n for n, _ in model.named_parameters()]
    artifacts._generate(graph, names, [], "cross_entropy", "adamw", folder)
    return applied


GENERATE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from tests.test_edge_fixes import generate
    folder, opset, skip = Path(sys.argv[1]), int(sys.argv[2]), frozenset(sys.argv[3:])
    try:
        print("APPLIED", generate(folder, opset, skip))
    except RuntimeError as error:
        print("FAILED", str(error)[-300:])
""")


def generate_fresh(folder: Path, opset: int, *skip: str) -> str:
    """In a fresh interpreter: once ORTModule has trained in a process, it has registered its own export
    symbolic for layer_norm, which writes all three outputs; exports there no longer need the fix (needed()
    says so), and the test would not see what a user's first export meets."""
    done = subprocess.run([sys.executable, "-c", GENERATE, str(folder), str(opset), *skip], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_layer_norm_outputs_are_needed_from_opset_17(tmp_path):
    without = generate_fresh(tmp_path / "without", 17, "layer_norm_saved_outputs")
    assert without.startswith("FAILED") and "i < node_->OutputDefs().size()" in without, without
    assert generate_fresh(tmp_path / "with", 17) == "APPLIED ['layer_norm_saved_outputs']"
    assert generate_fresh(tmp_path / "opset15", 15) == "APPLIED []"  # one node per op below 17: nothing to mend


def test_the_optimizer_model_needs_its_ir_version_clamped(tmp_path):
    tmp_path = tmp_path / "artifacts"
    generate(tmp_path, 15)
    optimizer_model = onnx.load(str(tmp_path / manifest.OPTIMIZER_MODEL))
    assert fixes._ir_too_new(optimizer_model)  # onnx >= 1.19 writes a newer IR than ORT 1.19.2 reads
    state = api.CheckpointState.load_checkpoint(str(tmp_path / manifest.CHECKPOINT))
    module = api.Module(str(tmp_path / manifest.TRAINING_MODEL), state, str(tmp_path / manifest.EVAL_MODEL))
    with pytest.raises(Exception, match="IR version"):
        api.Optimizer(str(tmp_path / manifest.OPTIMIZER_MODEL), module)
    assert artifacts._fix_written(tmp_path) == ["ir_version_clamp (optimizer_model.onnx)"]
    api.Optimizer(str(tmp_path / manifest.OPTIMIZER_MODEL), module)  # loads now


IMPORT_WITHOUT_TORCH = textwrap.dedent("""
    import sys
    from ortnb.edge.notorch import hide_torch, import_training_api
    hide_torch()
    if sys.argv[1] == "plain":
        import onnxruntime.training.api
    else:
        api, applied = import_training_api()
        print("APPLIED", applied, api.Module.__name__)
    print("TORCH", "torch" in sys.modules)
""")


def test_the_training_api_needs_a_way_in_without_torch():
    plain = subprocess.run([sys.executable, "-c", IMPORT_WITHOUT_TORCH, "plain"], capture_output=True, text=True,
                           timeout=120)
    assert plain.returncode != 0 and "No module named 'torch'" in plain.stderr  # onnxruntime.training/__init__
    mended = subprocess.run([sys.executable, "-c", IMPORT_WITHOUT_TORCH, "fixed"], capture_output=True, text=True,
                            timeout=120)
    assert mended.returncode == 0, mended.stderr[-2000:]
    assert "APPLIED ['training_api_without_torch'] Module" in mended.stdout and "TORCH False" in mended.stdout

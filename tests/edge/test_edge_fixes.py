"""Each of ortnb.edge's fixes is needed: leaving it out breaks on-device training on today's stack."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch

from ortnb.edge import artifacts, fixes, manifest

from .._helpers import edge_training_artifacts, tiny_bert

api = pytest.importorskip("onnxruntime.training.api")

pytestmark = pytest.mark.ort  # exports tiny BERT and generates its training artifacts in this process


GENERATE = textwrap.dedent("""
    import sys
    from pathlib import Path
    from tests._helpers import edge_training_artifacts
    folder, opset, skip = Path(sys.argv[1]), int(sys.argv[2]), frozenset(sys.argv[3:])
    try:
        print("APPLIED", edge_training_artifacts(folder, opset, skip))
    except RuntimeError as error:
        print("FAILED", str(error)[-300:])
""")


def generate_fresh(folder: Path, opset: int, *skip: str) -> str:
    """In a fresh interpreter: once ORTModule has trained in a process, it has registered its own export
    symbolic for layer_norm, which writes all three outputs; exports there no longer need the fix (needed()
    says so), and the test would not see what a user's first export meets."""
    done = subprocess.run([sys.executable, "-c", GENERATE, str(folder), str(opset), *skip], capture_output=True,
                          text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_layer_norm_outputs_are_needed_from_opset_17(tmp_path):
    without = generate_fresh(tmp_path / "without", 17, "layer_norm_saved_outputs")
    assert without.startswith("FAILED") and "i < node_->OutputDefs().size()" in without, without
    assert generate_fresh(tmp_path / "with", 17) == "APPLIED ['layer_norm_saved_outputs', 'symbolic_shapes']"
    # One node per op below 17: nothing to mend there (symbolic_shapes is about broadcasts, below)
    assert generate_fresh(tmp_path / "opset15", 15) == "APPLIED ['symbolic_shapes']"


POSITION_GRADIENT = "bert.embeddings.position_embeddings.weight_grad"


def test_broadcast_gradients_need_symbolic_shapes(tmp_path):
    """onnx's inference names BERT's [1, seq, 64] position embeddings and the [batch, seq, 64] sum they are
    added to with symbols of their own, and ORT 1.19.2's gradient builder takes different symbols as equal:
    without the fix the position embeddings' gradient skips the ReduceSum over the batch, and GatherGrad then
    writes past its buffer (so that graph is never run here). With it, one SGD step at learning rate 1 moves
    every weight by exactly PyTorch's gradient."""
    model = tiny_bert()
    names = [n for n, _ in model.named_parameters()]
    graph, _ = artifacts._export_forward(model, 16, 15)
    assert "/model/bert/embeddings/Add_1" in fixes.ambiguous_broadcasts(graph)
    (tmp_path / "without").mkdir()
    artifacts._generate(graph, names, [], "cross_entropy", "sgd", tmp_path / "without")
    assert _producer(tmp_path / "without", POSITION_GRADIENT, 2) == "Identity"

    assert fixes.apply(fixes.BEFORE_GRADIENT, graph) == ["symbolic_shapes"]
    assert fixes.ambiguous_broadcasts(graph) == []
    (tmp_path / "with").mkdir()
    artifacts._generate(graph, names, [], "cross_entropy", "sgd", tmp_path / "with")
    artifacts._fix_written(tmp_path / "with")
    assert _producer(tmp_path / "with", POSITION_GRADIENT, 2) == "ReduceSum"

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 1000, (4, 24), generator=generator)
    labels = torch.tensor([0, 1, 1, 0])
    moved = _one_sgd_step(tmp_path / "with", names, ids.numpy(), labels.numpy())
    torch.nn.functional.cross_entropy(model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits,
                                      labels).backward()
    for name, parameter in model.named_parameters():
        np.testing.assert_allclose(moved[name], parameter.grad.numpy(), rtol=1e-3, atol=2e-6, err_msg=name)


def _producer(folder: Path, name: str, index: int) -> str:
    """The op type of the node that computes input ``index`` of the node writing ``name``."""
    graph = onnx.load(str(folder / manifest.TRAINING_MODEL)).graph
    made_by = {output: node for node in graph.node for output in node.output}
    return made_by[made_by[name].input[index]].op_type


def _one_sgd_step(folder: Path, names, ids, labels) -> dict:
    """Each weight before minus after one SGD step at learning rate 1: the gradient ONNX Runtime computed."""
    state = api.CheckpointState.load_checkpoint(str(folder / manifest.CHECKPOINT))
    before = {n: np.array(state.parameters[n].data) for n in names}
    module = api.Module(str(folder / manifest.TRAINING_MODEL), state, str(folder / manifest.EVAL_MODEL))
    optimizer = api.Optimizer(str(folder / manifest.OPTIMIZER_MODEL), module)
    optimizer.set_learning_rate(1.0)
    module.train()
    module(ids, np.ones_like(ids), labels)
    optimizer.step()
    return {n: before[n] - np.array(state.parameters[n].data) for n in names}


def test_the_optimizer_model_needs_its_ir_version_clamped(tmp_path):
    tmp_path = tmp_path / "artifacts"
    edge_training_artifacts(tmp_path, 15)
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

"""ortnb.ort_model: ONNX Runtime for a hand-written training loop, with the engine report and the same fallback
policy as ORTTrainer; every kind of bad input refused before anything is exported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ortnb
from ortnb.backends import ortmodule
from ortnb.custom_loop import release
from ortnb.errors import ConfigError, OrtFallbackError, OrtnbWarning

from ._helpers import ModelWithCustomFunction, classification_dataset, tiny_bert

pytestmark = pytest.mark.ort  # trains with ort_model in this process

WORKER = Path(__file__).parent / "workers" / "custom_loop_ranks.py"


def batches(steps: int = 3, rows: int = 8):
    data = classification_dataset(rows=rows * steps)
    for step in range(steps):
        chunk = data[step * rows:(step + 1) * rows]
        yield {key: torch.tensor(chunk[key]) for key in ("input_ids", "attention_mask", "labels")}


def train(model: torch.nn.Module, steps: int = 3) -> list[float]:
    """The loop a user writes: train mode, AdamW, forward, backward, step."""
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for batch in batches(steps):
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_the_one_line_change_trains_through_onnxruntime_with_eager_losses():
    eager = train(tiny_bert())
    model = ortnb.ort_model(tiny_bert())
    ort = train(model)
    np.testing.assert_allclose(ort, eager, atol=1e-4, rtol=0)
    report = ortnb.engine_report(model)
    assert (report["backend"], report["engine"], report["fallback"]) == ("ort", "onnxruntime", None)
    assert (report["ort_steps"], report["pytorch_steps"], report["exports"], report["graph_builds"]) == (3, 0, 1, 1)
    assert report["providers"] == ["CPUExecutionProvider"] and report["model"] == "BertForSequenceClassification"
    assert report["attention"] == "eager (switched from sdpa)"  # ORT cannot differentiate transformers' SDPA
    assert 0 < report["first_forward_s"] < report["time_to_first_step_s"]
    assert "packed_sequence_check_export" in report["compat_fixes"] and report["world_size"] == 1
    json.dumps(report)  # plain data, as ORTTrainer's engine_report.json


def test_eval_mode_runs_pytorch_and_release_gives_the_model_back():
    model = ortnb.ort_model(tiny_bert())
    train(model, steps=1)
    model.eval()
    batch = next(batches(1))
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape == (8, 2) and ortnb.engine_report(model)["ort_steps"] == 1  # evaluation is not a step
    assert release(model) is model and "forward" not in vars(model)
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(ValueError, match=r"not given to ortnb.ort_model.*model = ortnb.ort_model\(model\)"):
        ortnb.engine_report(model)


def test_a_backward_through_an_eval_mode_model_is_never_silent():
    """A from_pretrained model is in eval mode; a loop that forgets model.train() would train in PyTorch."""
    model = ortnb.ort_model(tiny_bert().eval())
    batch = next(batches(1))
    with pytest.warns(OrtnbWarning, match=r"eval mode: ONNX Runtime trains only in train mode. Call model.train\(\)"):
        model(**batch).loss.backward()
    report = ortnb.engine_report(model)
    assert (report["engine"], report["pytorch_steps"], report["ort_steps"], report["eval_mode_backwards"]) == \
        ("pytorch", 1, 0, 1)
    model.train()  # the fix the warning names: the next step runs in ONNX Runtime, reported as such
    model(**batch).loss.backward()
    report = ortnb.engine_report(model)
    assert (report["engine"], report["ort_steps"], report["pytorch_steps"]) == ("onnxruntime", 1, 1)
    assert report["providers"] == ["CPUExecutionProvider"] and report["first_forward_s"] > 0


def test_calling_ort_model_again_is_a_no_op_with_the_same_options_and_an_error_with_others():
    model = ortnb.ort_model(tiny_bert())
    engine = ortmodule.engine_for(model)
    assert ortnb.ort_model(model) is model and ortmodule.engine_for(model) is engine
    with pytest.raises(ConfigError, match=r"already trains through ONNX Runtime with other options "
                                          r"\(memory_optimizer_level=0, now 1\).*release\(model\)"):
        ortnb.ort_model(model, memory_optimizer_level=1)


def test_options_are_checked_all_at_once_in_ort_models_words():
    model = tiny_bert()
    with pytest.raises(ConfigError) as caught:
        ortnb.ort_model(model, fallback="maybe", log_level="LOUD", memory_optimizer_level=5, opset=11, onnx_prefix=3)
    problems = caught.value.problems
    assert len(problems) == 5, problems
    assert "Unknown fallback: 'maybe'. Choose between error, allow." in problems
    assert any(p.startswith("opset=11 is outside what ORTModule supports") for p in problems)
    assert any(p.startswith("memory_optimizer_level=5") for p in problems)
    assert not ortmodule.is_attached(model)  # refused before anything was wrapped


def test_save_onnx_dir_dumps_the_graphs(tmp_path):
    model = ortnb.ort_model(tiny_bert(), save_onnx_dir=tmp_path / "onnx", onnx_prefix="loop")
    train(model, steps=1)
    graphs = ortnb.engine_report(model)["graphs"]
    assert graphs and all(Path(g).name.startswith("loop") and g.endswith(".onnx") for g in graphs)


@pytest.mark.parametrize("wrap, match", [
    (torch.nn.DataParallel, r"DataParallel, whose per-device replicas .* use DistributedDataParallel"),
    (torch.compile, r"compiled by torch.compile.*Pass the model before torch.compile"),
    (lambda m: m.to(torch.bfloat16), r"bfloat16 parameters: .*no bfloat16 MatMul kernel. Use model.float\(\)"),
], ids=["DataParallel", "torch.compile", "bf16"])
def test_wrappers_and_dtypes_ort_cannot_train_are_refused_up_front(wrap, match):
    model = tiny_bert()
    with pytest.raises(ConfigError, match=match):
        ortnb.ort_model(wrap(model))
    assert not ortmodule.is_attached(model)


def test_gradient_checkpointing_is_refused_with_orts_own_recompute_as_the_way_out():
    model = tiny_bert()
    model.activation_checkpointing_enable()
    with pytest.raises(ConfigError, match=r"checkpointing on, which ORTModule cannot trace.*memory_optimizer_level=1"):
        ortnb.ort_model(model)


def test_not_a_module():
    with pytest.raises(TypeError, match=r"ort_model needs a torch.nn.Module, got function"):
        ortnb.ort_model(tiny_bert().forward.__func__)


def test_a_custom_autograd_function_is_a_clear_error_in_ort_models_words():
    model = ortnb.ort_model(ModelWithCustomFunction().train())
    with pytest.raises(OrtFallbackError, match=r"(?s)custom torch.autograd.Function .*_StraightThroughRound.*"
                                               r"fallback='error' forbids.*fallback='allow'"):
        model(torch.randn(4, 4), labels=torch.tensor([0, 1, 0, 1]))


def test_an_allowed_fallback_runs_pytorch_and_says_so():
    model = ortnb.ort_model(ModelWithCustomFunction().train(), fallback="allow")
    model(torch.randn(4, 4), labels=torch.tensor([0, 1, 0, 1]))["loss"].backward()
    report = ortnb.engine_report(model)
    assert report["engine"] == "pytorch" and report["pytorch_steps"] == 1
    assert "_StraightThroughRound" in report["fallback"]


class _ReturnsAnObject(torch.nn.Module):
    class Prediction:
        def __init__(self, loss):
            self.loss = loss

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)

    def forward(self, x):
        return self.Prediction(self.linear(x).square().mean())


class _NormWithoutWeights(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.norm = torch.nn.GroupNorm(2, 4, affine=False)

    def forward(self, x):
        return self.norm(self.linear(x)).square().mean()


class _AttentionWithBoolMask(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        q = self.linear(x).view(2, 4, 2, 4).transpose(1, 2)
        mask = torch.ones(4, 4, dtype=torch.bool).tril()
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=mask).square().mean()


@pytest.mark.parametrize("model, match", [
    (_ReturnsAnObject, r"the model's forward takes or returns a .*Prediction, which ORTModule cannot pass through an ONNX graph.*"
                       r"return those"),
    (_NormWithoutWeights, r"the ONNX operator InstanceNormalization \(node \S+\) has no gradient in ONNX "
                          r"Runtime.*affine=True"),
    (_AttentionWithBoolMask, r"the Where node \S+ failed ONNX Runtime's shape inference .*scaled_dot_product_attention "
                             r"with a boolean attn_mask.*additive float mask"),
], ids=["non-tensor-output", "norm-without-gradient", "attention-bool-mask"])
def test_what_ort_cannot_train_is_named_with_the_way_out(model, match):
    model = ortnb.ort_model(model().train())
    with pytest.raises(OrtFallbackError, match=rf"(?s)could not train {type(model).__name__}: {match}.*fallback='allow'"):
        model(torch.randn(2, 4, 8) if not isinstance(model, _ReturnsAnObject) else torch.randn(3, 4))
    assert ortnb.engine_report(model)["engine"] is None  # nothing trained, in either engine


@pytest.mark.slow
def test_accelerate_and_ddp_on_two_cpu_ranks(tmp_path):
    """Two real ranks (torchrun, gloo): accelerator.prepare(ort_model(model)) and ort_model(DDP(model)) give the
    losses of plain DDP on each rank, gradients stay synchronised, and ONNX Runtime ran everywhere."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(WORKER),
               str(tmp_path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{rank}.json").read_text()) for rank in range(2)]
    for rank in ranks:
        assert rank["world_size"] == 2
        for variant in ("accelerate", "ddp_then_ort_model"):
            run = rank[variant]
            assert run["wrapper"] == "DistributedDataParallel" and run["engine"] == "onnxruntime", run
            np.testing.assert_allclose(run["losses"], rank["eager_ddp"]["losses"], atol=1e-4, rtol=0)
            np.testing.assert_allclose(run["parameters"], rank["eager_ddp"]["parameters"], atol=1e-4, rtol=1e-6)
    assert not np.allclose(ranks[0]["eager_ddp"]["losses"], ranks[1]["eager_ddp"]["losses"])  # different data
    for variant in ("eager_ddp", "accelerate", "ddp_then_ort_model"):  # synchronised gradients
        np.testing.assert_array_equal(ranks[0][variant]["parameters"], ranks[1][variant]["parameters"])

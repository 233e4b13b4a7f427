"""Each compatibility fix is needed: leaving it out breaks ORTModule on this torch.

Each case runs in a fresh interpreter, because the fixes patch modules process-wide.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ortnb.backends import ort_compat

pytestmark = pytest.mark.ort  # trains ORTModule a step per case (each in a fresh interpreter)

TRAIN_ONE_STEP = textwrap.dedent("""
    import sys, torch
    from ortnb.backends import ort_compat
    skip = frozenset(a for a in sys.argv[1:] if a and not a.startswith("--"))
    print("NEEDED", ",".join(f.name for f in ort_compat.FIXES if f.needed()))
    ortmodule = ort_compat.load_ortmodule(skip=skip)
    print("APPLIED", ",".join(ort_compat.applied_fixes()))
    torch.manual_seed(0)

    class PackedSequenceCheck(torch.nn.Module):  # what transformers' masks do in training: diff, then a bool cumsum
        def forward(self, x):
            positions = torch.arange(x.shape[-1]).expand(x.shape[0], -1)
            packed = (torch.diff(positions, prepend=positions[:, :1] - 1, dim=-1) != 1).cumsum(-1)
            return x + packed.unsqueeze(1).to(x.dtype)

    # A convolution too: its export goes through symbolic helpers that moved (ViT's patch embedding).
    model = torch.nn.Sequential(PackedSequenceCheck(), torch.nn.Conv1d(2, 4, 3, padding=1), torch.nn.Flatten(),
                                torch.nn.Linear(32, 16), torch.nn.GELU(), torch.nn.Linear(16, 1)).train()
    ort = ortmodule.ORTModule(model)
    from onnxruntime.training.ortmodule._fallback import _FallbackPolicy
    ort._fallback_manager.policy = _FallbackPolicy.FALLBACK_DISABLE  # fail instead of quietly running PyTorch
    if "--no-fileno" in sys.argv:  # like pytest's capsys or a notebook front-end without descriptors
        import io
        real = sys.stdout
        sys.stdout = io.StringIO()
        try:
            loss = ort(torch.randn(4, 2, 8)).square().mean()
        finally:
            sys.stdout = real
    else:
        loss = ort(torch.randn(4, 2, 8)).square().mean()
    loss.backward()
    assert model[1].weight.grad is not None and model[-1].weight.grad is not None
    print("TRAINED", type(ort._torch_module).__name__)
""")


def run_with(skip: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    flags = ["--no-fileno"] if "stream_suppression_without_fileno" in skip else []
    return subprocess.run([sys.executable, "-c", TRAIN_ONE_STEP, *skip, *flags], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("flags", [(), ("--no-fileno",)], ids=["console", "stdout-without-fileno"])
def test_all_fixes_train_with_onnxruntime(flags):
    done = subprocess.run([sys.executable, "-c", TRAIN_ONE_STEP, *flags], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "TRAINED TorchModuleORT" in done.stdout
    applied = done.stdout.split("APPLIED ")[1].split()[0].split(",")
    needed = done.stdout.split("NEEDED ")[1].split()[0].split(",")
    assert applied == needed  # measured in the fresh interpreter: this one may have applied them already


# What each fix prevents, as seen on torch 2.13 with onnxruntime-training 1.19.2.
SYMPTOMS = {
    "torchscript_exporter_aliases": r"cannot import name 'jit_utils'",
    "exporter_shim_names": r"cannot import name '_convolution'",
    "export_dynamo_false": r"onnxscript|dynamo|torch\.export|ExportedProgram",  # the dynamo exporter ran
    "cpp_extension_from_cache": r"extensions were not detected",
    "forget_missing_extension_error": r"extensions were not detected",
    "nvtx_noop_without_cuda": r"NVTX functions not installed",
    "stream_suppression_without_fileno": r"fileno|'NoneType' object cannot be interpreted as an integer",
    "packed_sequence_check_export": r"Exporting the operator 'aten::diff' to ONNX opset version 17 is not supported",
}


def test_every_fix_has_a_symptom():
    assert set(SYMPTOMS) == {fix.name for fix in ort_compat.FIXES}


@pytest.mark.parametrize("name", sorted(SYMPTOMS))
def test_fix_is_needed(name):
    # Leaving out the extension loader also leaves out what depends on it.
    skip = (name, "forget_missing_extension_error") if name == "cpp_extension_from_cache" else (name,)
    done = run_with(skip)
    if name not in done.stdout.split("NEEDED ")[1].split()[0].split(","):
        pytest.skip(f"{name} is not needed with these versions")
    assert done.returncode != 0, f"training worked without {name}:\n{done.stdout}"
    assert "TRAINED" not in done.stdout
    import re

    assert re.search(SYMPTOMS[name], done.stdout + done.stderr), (done.stdout + done.stderr)[-3000:]

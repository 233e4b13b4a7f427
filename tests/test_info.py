"""`ortnb info` says what this machine can run: cores, bf16, engines and precisions (validate()'s own rules),
DeepSpeed, Chromium and ONNX Runtime Web, as lines from plain facts (pure, exact values)."""

from __future__ import annotations

import dataclasses

import pytest

from ortnb import cli, info
from ortnb.validation import engine_precisions

from ._helpers import CPU

FP16_CPU = "fp16 training needs a CUDA GPU; on this CPU use precision='bf16'."
ORT_HALF = ("{0} with backend='ort' needs the CUDA execution provider: ONNX Runtime's CPU provider has no {0} MatMul "
            "kernel. Use backend='eager' for {0}, or precision='no'.")
NO_ORT = ("backend='ort' needs ONNX Runtime training, which is not installed: pip install 'ortnb[ort]' (CPU) or "
          "onnxruntime-training==1.19.2 (CUDA).")
NO_BF16 = ("this CPU has no bf16 instructions (AVX512-BF16 or AMX): bf16 would be emulated, tens of times slower "
           "than fp32. Use precision='no' here.")


def facts(**changes) -> dict:
    found = {"cpu": "AMD EPYC (family 25 model 17; avx2 avx512_bf16)", "cores": 2, "bf16_native": True, "cuda": False,
             "python": "3.11.7", "torch": "2.13.0+cpu", "onnxruntime_training": "onnxruntime-training-cpu",
             "onnxruntime_version": "1.19.2", "ort_extension": "/cache/aten_op_executor.so",
             "engines": engine_precisions(CPU), "deepspeed": {"version": "0.19.8", "error": None},
             "chromium": "/usr/bin/chromium", "playwright": True, "onnxruntime_web": "/cache/onnxruntime-web/1.19.2",
             "onnxruntime_web_version": "1.19.2"}
    return {**found, **changes}


def test_engine_precisions_are_validates_own_rules():
    assert engine_precisions(CPU) == {"eager": {"no": None, "bf16": None, "fp16": FP16_CPU},
                                      "ort": {"no": None, "bf16": ORT_HALF.format("bf16"),
                                              "fp16": ORT_HALF.format("fp16")},
                                      "compile": {"no": None, "bf16": None, "fp16": FP16_CPU}}
    bare = dataclasses.replace(CPU, bf16_cpu_native=False, ort_training=None, ort_version=None, torch_compile=False)
    table = engine_precisions(bare)
    assert table["ort"] == {"no": NO_ORT, "bf16": NO_ORT, "fp16": NO_ORT}
    assert table["eager"]["bf16"] == NO_BF16 and table["compile"]["no"].startswith("backend='compile' needs a C++")


def test_info_lines_on_a_cpu_machine_with_everything_installed():
    assert info.lines(facts()) == [
        "cpu                   AMD EPYC (family 25 model 17; avx2 avx512_bf16)",
        "cores                 2",
        "bf16 on this CPU      native (AVX512-BF16 or AMX): CPU runs may use precision='bf16'",
        "cuda                  no",
        "python                3.11.7",
        "torch                 2.13.0+cpu",
        "onnxruntime training  onnxruntime-training-cpu 1.19.2",
        "ort extension         /cache/aten_op_executor.so",
        "engines               eager, ort, compile",
        "precisions            eager: fp32, bf16; ort: fp32; compile: fp32, bf16",
        f"refused here          eager + fp16: {FP16_CPU}",
        f"                      ort + bf16: {ORT_HALF.format('bf16')}",
        f"                      ort + fp16: {ORT_HALF.format('fp16')}",
        f"                      compile + fp16: {FP16_CPU}",
        "deepspeed             0.19.8, importable: ZeRO-1 can run (with 2 or more processes)",
        "chromium              /usr/bin/chromium: the browser tests and web bundles trained headless "
        "(ortnb.edge.train_in_browser) can run",
        "onnxruntime web       1.19.2 in /cache/onnxruntime-web/1.19.2",
    ]


def test_info_lines_on_a_bare_machine_say_what_is_missing_and_what_to_do():
    bare = dataclasses.replace(CPU, bf16_cpu_native=False, ort_training=None, ort_version=None, torch_compile=False)
    lines = info.lines(facts(bf16_native=False, onnxruntime_training=None, onnxruntime_version=None,
                             ort_extension=None, engines=engine_precisions(bare),
                             deepspeed={"version": None, "error": None}, chromium=None, onnxruntime_web=None))
    assert lines[2] == ("bf16 on this CPU      emulated (no AVX512-BF16 or AMX): bf16 would be tens of times slower "
                        "than fp32, so CPU runs refuse precision='bf16'")
    assert lines[6].startswith("onnxruntime training  not installed: pip install 'ortnb[ort]'")
    assert not any(line.startswith("ort extension") for line in lines)  # nothing to build without ORT
    assert lines[7:12] == [
        "engines               eager",
        "precisions            eager: fp32",
        f"refused here          eager + bf16: {NO_BF16}",
        "                      eager + fp16: fp16 training needs a CUDA GPU; on this CPU use precision='no' (this CPU "
        "has no bf16 units either).",
        f"                      ort: {NO_ORT}",
    ]
    assert lines[12].startswith("                      compile: backend='compile' needs a C++ compiler")
    assert lines[13:] == [
        "deepspeed             not installed: pip install 'ortnb[deepspeed]' (ZeRO-1 needs it)",
        "chromium              not found: the browser tests and web bundles trained headless "
        "(ortnb.edge.train_in_browser) skip; apt-get install chromium, or set ORTNB_CHROMIUM to a Chromium executable",
        "onnxruntime web       1.19.2 not fetched (`ortnb setup --web`; `ortnb edge web` needs it)",
    ]


def test_info_names_a_deepspeed_that_is_installed_but_does_not_import_and_a_browser_without_playwright():
    lines = info.lines(facts(deepspeed={"version": "0.19.8", "error": "ImportError: libcudart.so.12: cannot open"},
                             playwright=False))
    assert lines[-3] == ("deepspeed             0.19.8 installed, but `import deepspeed` fails (ImportError: "
                         "libcudart.so.12: cannot open): ZeRO-1 runs would fail; reinstall it with pip install "
                         "'ortnb[deepspeed]'")
    assert lines[-2] == ("chromium              /usr/bin/chromium, but playwright is not installed, so the browser "
                         "tests and web bundles trained headless (ortnb.edge.train_in_browser) skip: pip install "
                         "playwright")


def test_the_info_command_prints_the_lines_and_json_prints_the_facts(monkeypatch, capsys):
    monkeypatch.setattr(info, "facts", facts)
    assert cli.main(["info"]) == 0
    assert capsys.readouterr().out == "\n".join(info.lines(facts())) + "\n"
    assert cli.main(["info", "--json"]) == 0
    assert '"cores": 2' in capsys.readouterr().out


def test_deepspeed_import_is_tried_in_a_child_and_its_last_error_line_kept(monkeypatch):
    import subprocess

    from ortnb import _imports

    monkeypatch.setattr(_imports, "is_deepspeed_available", lambda: False)
    assert _imports.deepspeed_import() == {"version": None, "error": None}
    monkeypatch.setattr(_imports, "is_deepspeed_available", lambda: True)
    monkeypatch.setattr(_imports, "_version", lambda name: "0.19.8")
    failed = subprocess.CompletedProcess([], 1, "", "Traceback (most recent call last):\n  ...\nImportError: no cuda\n")
    monkeypatch.setattr(_imports.subprocess, "run", lambda *args, **kwargs: failed)
    assert _imports.deepspeed_import() == {"version": "0.19.8", "error": "ImportError: no cuda"}


@pytest.mark.ort  # loads ORTModule in a child process
def test_loading_ortmodule_prints_nothing_of_deepspeeds_on_a_machine_without_a_gpu():
    """onnxruntime-training imports DeepSpeed, which printed 'Setting accelerator to CPU ...' on stdout of every
    command and cell that touched ORT; ortnb makes DeepSpeed's own choice explicit instead (a user's
    DS_ACCELERATOR is kept)."""
    import os
    import subprocess
    import sys

    import torch

    if torch.cuda.is_available():
        pytest.skip("DeepSpeed detects the GPU here")
    environment = {k: v for k, v in os.environ.items() if k != "DS_ACCELERATOR"}
    done = subprocess.run([sys.executable, "-c", "from ortnb.backends import ort_compat; ort_compat.load_ortmodule();"
                           "import os; print('chosen', os.environ['DS_ACCELERATOR'])"],
                          capture_output=True, text=True, timeout=300, env=environment)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["chosen cpu"], done.stdout

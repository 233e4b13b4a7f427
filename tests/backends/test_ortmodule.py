"""The ORT backend's own reports: the phases of ORTModule's first forward as they begin, and a fallback to
PyTorch told in one line with the whole error kept in the engine report."""

from __future__ import annotations

import logging

import pytest

from ortnb import ORTTrainer
from ortnb.backends import ortmodule

from .._helpers import ModelWithCustomFunction, classification_dataset, custom_function_data, ort_args, tiny_bert

pytestmark = pytest.mark.ort  # trains with ORTModule in this process


def test_phase_listeners_hear_ortmodule_begin_export_and_graph_build(tmp_path):
    heard = []

    def broken(_phase):  # a listener that fails must not read as an ORT failure (no fallback, no error)
        raise OSError("disk full")

    removers = [ortmodule.add_phase_listener(heard.append), ortmodule.add_phase_listener(broken)]
    try:
        trainer = ORTTrainer(model=tiny_bert(), args=ort_args(tmp_path), train_dataset=classification_dataset())
        trainer.train()
    finally:
        for remove in removers:
            remove()
    assert heard == ["ONNX export", "graph build", "first step"]  # once: later steps reuse the session
    assert trainer.engine_report()["engine"] == "onnxruntime" and trainer.engine_report()["fallback"] is None
    assert ortmodule._PHASE_LISTENERS == []


def test_an_allowed_fallback_prints_one_line_and_keeps_the_traceback_in_the_report(tmp_path, capfd, caplog):
    trainer = ORTTrainer(model=ModelWithCustomFunction(), args=ort_args(tmp_path, ort_fallback="allow"),
                         train_dataset=custom_function_data())
    with caplog.at_level(logging.WARNING):
        trainer.train()
    printed = capfd.readouterr()
    shown = printed.out + printed.err + caplog.text
    assert "See details below" not in shown and "Traceback" not in shown  # ORT's 60-line warning is gone
    ours = [r.getMessage() for r in caplog.records if "PyTorch runs it instead" in r.getMessage()]
    assert len(ours) == 1 and "\n" not in ours[0]
    assert ours[0].startswith("ortnb: ONNX Runtime could not train ModelWithCustomFunction (The model calls the "
                              "custom torch.autograd.Function")
    assert ours[0].endswith("Full error: the engine report's fallback_detail.")
    report = trainer.engine_report()
    assert report["engine"] == "pytorch" and "_StraightThroughRound" in report["fallback"]
    detail = report["fallback_detail"]
    assert "Traceback (most recent call last)" in detail and "ORTModuleONNXModelException" in detail
    assert detail.count("\n") > 20

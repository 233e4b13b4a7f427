"""The Dashboard's starting engine and precision: a conclusive search of this machine for the same model and data,
else a rule from what the machine has; each with the sentence the form and the card show."""

from __future__ import annotations

import json
import os

import pytest

from ortnb.tuning import cache, defaults
from ortnb.tuning.defaults import EngineChoice

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MACHINE = {"cpu": "AMD EPYC | family 25 model 17", "gpu": None, "torch": "2.13.0+cpu", "onnxruntime": "1.19.2"}


def test_the_rule_names_the_engine_and_precision_this_kind_of_machine_trains_fastest_and_why():
    assert defaults.by_rule(cuda=False, bf16_cpu_native=True, ort_cuda=False) == EngineChoice(
        "eager", "bf16", "eager bf16: this CPU has bf16 units and ONNX Runtime's CPU provider has no bf16 MatMul")
    no_bf16 = defaults.by_rule(cuda=False, bf16_cpu_native=False, ort_cuda=False)
    assert (no_bf16.backend, no_bf16.precision, no_bf16.label) == ("eager", "no", "eager fp32")
    assert no_bf16.why.startswith("eager fp32: with per-batch padding eager PyTorch took 444 ms a step and ORT 492")
    gpu = defaults.by_rule(cuda=True, bf16_cpu_native=True, ort_cuda=True)
    assert (gpu.label, gpu.why.endswith("(not verified here: ortnb's tests run on CPUs)")) == ("ORT fp16", True)
    assert defaults.by_rule(cuda=True, bf16_cpu_native=False, ort_cuda=False, gpu_bf16=True).why == (
        "eager bf16: this ONNX Runtime has no CUDA provider, so ORT could not use the GPU")
    assert defaults.by_rule(cuda=True, bf16_cpu_native=False, ort_cuda=False).precision == "fp16"


def entry(backend="ort", precision="no", conclusive=True, machine=MACHINE, model="minilm",
          dataset="rotten_tomatoes") -> dict:
    candidates = [{"runs": [{"samples_per_s": 1.0}]}, {"runs": [{"samples_per_s": 2.0}]}, {"runs": []}]
    return {"format": 1, "created": "2026-12-05T10:00:00", "conclusive": conclusive,
            "best_config": {"backend": backend, "precision": precision, "batch_size": 16},
            "candidates": candidates, "key": {**machine, "model": model, "dataset": dataset}}


def test_a_conclusive_search_answers_with_its_date_and_count_and_an_inconclusive_one_does_not():
    assert defaults.from_search(entry()) == EngineChoice(
        "ort", "no", "ORT fp32: the fastest in this machine's search of 2026-12-05 for this model and data "
                     "(2 configurations measured)")
    assert defaults.from_search(entry(conclusive=False)) is None
    assert defaults.from_search(entry(backend="tensorrt")) is None  # a value no form offers
    assert defaults.from_search({"conclusive": True}) is None


def write(folder, name, body, age_s=0):
    path = folder / name
    path.write_text(json.dumps(body))
    stamp = 1_800_000_000 - age_s
    os.utime(path, (stamp, stamp))


def test_only_this_machines_search_of_the_same_model_and_data_counts_the_newest_first(tmp_path):
    write(tmp_path, "other-machine.json", entry(machine={**MACHINE, "cpu": "Intel Xeon"}), age_s=0)
    write(tmp_path, "other-data.json", entry(dataset="imdb"), age_s=1)
    write(tmp_path, "inconclusive.json", entry(conclusive=False), age_s=2)
    (tmp_path / "damaged.json").write_text("{not json")
    write(tmp_path, "newer.json", entry(backend="eager", precision="bf16"), age_s=3)
    write(tmp_path, "older.json", entry(backend="ort"), age_s=4)
    found = defaults.searched(tmp_path, MACHINE, "minilm", "rotten_tomatoes")
    assert found.label == "eager bf16" and "search of 2026-12-05" in found.why
    assert defaults.searched(tmp_path, MACHINE, "minilm", "sst2") is None
    assert defaults.searched(tmp_path / "absent", MACHINE, "minilm", "rotten_tomatoes") is None


def test_choose_reads_this_machines_cache_and_falls_back_to_the_rule(tmp_path, monkeypatch):
    from ortnb.hardware import capabilities

    monkeypatch.setenv("ORTNB_CACHE", str(tmp_path))
    caps = capabilities()
    assert defaults.choose("minilm", "rotten_tomatoes") == defaults.by_rule(caps.cuda, caps.bf16_cpu_native,
                                                                            caps.ort_cuda)
    # A search tune() wrote for this machine, model and data: its key as tune writes it.
    (tmp_path / "tune").mkdir()
    key = cache.key(cache.RunConfig(model="minilm", dataset="rotten_tomatoes"), {"backend": ["ort"]}, 60)
    write(tmp_path / "tune", "entry.json", {**entry(backend="ort", precision="no"), "key": key})
    assert defaults.choose("minilm", "rotten_tomatoes").why.startswith("ORT fp32: the fastest in this machine's search")
    assert defaults.choose("minilm", "imdb") == defaults.by_rule(caps.cuda, caps.bf16_cpu_native, caps.ort_cuda)


def test_the_sentence_the_form_and_card_show_says_the_other_engine_is_one_toggle_away():
    eager = EngineChoice("eager", "bf16", "eager bf16: why")
    assert defaults.choice_text(eager) == "Chosen for this machine: eager bf16: why. ORT is one toggle away (Engine)."
    assert defaults.choice_text(EngineChoice("ort", "no", "ORT fp32: why")).endswith(
        "eager PyTorch is one toggle away (Engine).")

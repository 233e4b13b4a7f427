"""validate(): every bad configuration is refused up front, naming the field and the way out."""

from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from ortnb.config import RunConfig
from ortnb.errors import ConfigError
from ortnb.validation import check, choices, validate

from ._helpers import BARE, CPU

GPU = dataclasses.replace(CPU, cuda=True, ort_training="onnxruntime-training", ort_cuda=True, cpu_cores=16)


def good(**changes) -> RunConfig:
    return RunConfig(**{"model": "tiny-bert", "dataset": "rotten_tomatoes", **changes})


BAD = [  # (changes, capabilities, field, what the message must say)
    ({"backend": "ortx"}, CPU, "backend", r"unknown value 'ortx'. Choose between eager, ort, compile"),
    ({"optim": "adamw_fast"}, CPU, "optim", r"unknown value 'adamw_fast'"),
    ({"precision": "fp8"}, CPU, "precision", r"Choose between no, bf16, fp16"),
    ({"zero_stage": 3}, CPU, "zero_stage", r"ONNX Runtime cannot trace ZeRO-3's partitioned parameters.*"
                                           r"works with backend='eager'.*Choose zero_stage 0, 1 or 2"),
    ({"zero_stage": 4}, CPU, "zero_stage", r"unknown value 4. Choose between 0, 1, 2"),
    ({"precision": "bf16"}, CPU, "precision", r"bf16 with backend='ort' needs the CUDA execution provider.*"
                                              r"backend='eager'"),
    ({"precision": "fp16", "backend": "eager"}, CPU, "precision", r"fp16 training needs a CUDA GPU.*bf16"),
    ({"precision": "bf16", "backend": "eager"}, dataclasses.replace(CPU, bf16_cpu_native=False), "precision",
     r"no bf16 instructions.*emulated"),
    ({"optim": "adamw_ort_fused"}, CPU, "optim", r"FusedAdam, a CUDA kernel.*adamw_torch_fused"),
    ({"optim": "adamw_torch_fused"}, BARE, "optim", r"no fused AdamW"),
    ({"backend": "ort"}, BARE, "backend", r"needs ONNX Runtime training.*pip install 'ortnb\[ort\]'"),
    ({"zero_stage": 1, "num_processes": 2}, BARE, "zero_stage", r"ZeRO needs DeepSpeed"),
    ({"zero_stage": 1}, CPU, "zero_stage", r"num_processes=1 shards nothing"),
    ({"zero_stage": 2, "num_processes": 2, "backend": "compile"}, CPU, "zero_stage", r"backend='compile'"),
    ({"backend": "compile"}, BARE, "backend", r"C\+\+ compiler"),
    ({"num_processes": 0}, CPU, "num_processes", r">= 1"),
    ({"num_processes": 8}, CPU, "num_processes", r"8 processes on 2 CPU cores"),
    ({"batch_size": 0}, CPU, "batch_size", r"^0 is below 1; use 1 or more\.$"),
    ({"batch_size": "16"}, CPU, "batch_size", r"must be a whole number, 1 or more, got '16'"),
    ({"seq_len": 4}, CPU, "seq_len", r"^4 is below 8; use 8 to 8192 tokens\.$"),
    ({"seq_len": 9000}, CPU, "seq_len", r"^9000 is above 8192; use 8 to 8192 tokens\.$"),
    ({"seq_len": 1024}, CPU, "seq_len", r"tiny-bert reads at most 512 tokens"),
    ({"max_steps": 0}, CPU, "max_steps", r"^0 is below 1; use 1 or more\.$"),
    ({"warmup_steps": 10, "max_steps": 10}, CPU, "warmup_steps", r"leave none of the 10 steps"),
    ({"warmup_steps": -1}, CPU, "warmup_steps", r">= 0"),
    ({"learning_rate": 0.0}, CPU, "learning_rate", r"between 0 and 1"),
    ({"learning_rate": 5.0}, CPU, "learning_rate", r"between 0 and 1"),
    ({"seed": -3}, CPU, "seed", r">= 0"),
    ({"eval_samples": -1}, CPU, "eval_samples", r">= 1 or None"),
    ({"threads": 0}, CPU, "threads", r"None or >= 1"),
    ({"task": "translation"}, CPU, "task", r"unknown task 'translation'"),
    ({"task": "causal-lm"}, CPU, "task", r"encoder \(BERT\) and cannot be a causal LM"),
    ({"model": "gpt-17"}, CPU, "model", r"unknown built-in model 'gpt-17'"),
    ({"model": "/no/such/folder"}, CPU, "model", r"^no such folder /no/such/folder \(looked for /no/such/folder\); "
                                                 r"check the path"),
    ({"model": "smollm2", "dataset": "hamlet"}, dataclasses.replace(CPU, gguf=False),
     "model", r"pip install gguf"),
    ({"dataset": "imdb_reviews"}, CPU, "dataset", r"not a built-in name"),
    ({"dataset": "hamlet"}, CPU, "dataset", r"causal-lm data but the task is sequence-classification"),
    ({"output_dir": "/etc/hostname/runs"}, CPU, "output_dir", r"/etc/hostname is a file, so /etc/hostname/runs "
                                                              r"cannot be created"),
    ({"output_dir": None}, CPU, "output_dir", r"must be a folder path \(str or pathlib.Path\), got None"),
    ({"output_dir": 7}, CPU, "output_dir", r"must be a folder path .*got 7"),
    ({"output_dir": "/tmp/" + "d" * 300}, CPU, "output_dir", r"is 300 bytes; file systems allow 255"),
    ({"name": "x" * 236}, CPU, "name", r"is 236 characters as a folder name.*at most 235 letters and digits"),
    ({"name": 42}, CPU, "name", r"must be text or None, got int 42"),
    ({"task": ["causal-lm"]}, CPU, "task", r"unknown task \['causal-lm'\]"),
    ({"model": ["tiny-bert"]}, CPU, "model", r"must be a name or path, got \['tiny-bert'\]"),
]


@pytest.mark.parametrize("changes, caps, field, message", BAD, ids=[f"{i}-{b[2]}" for i, b in enumerate(BAD)])
def test_bad_configuration_is_refused(changes, caps, field, message):
    problems = validate(good(**changes), caps)
    matching = [p for p in problems if p.field == field]
    assert matching, problems
    assert any(re.search(message, p.message) for p in matching), matching


def test_the_battery_covers_at_least_20_distinct_cases():
    distinct = {(json.dumps(changes, sort_keys=True), field) for changes, _, field, _ in BAD}
    assert len(distinct) >= 20 and len({field for *_, field, _ in BAD}) >= 15


def test_good_configurations_pass(tmp_path):
    assert validate(good(), CPU) == []
    assert validate(good(name="x" * 235, output_dir=tmp_path / "new" / "runs"), CPU) == []  # a Path works too
    assert validate(good(backend="eager", precision="bf16"), CPU) == []
    assert validate(good(num_processes=2, zero_stage=1), CPU) == []
    assert validate(RunConfig(model="smollm2", dataset="hamlet", seq_len=256), CPU) == []
    assert validate(good(precision="bf16", optim="adamw_ort_fused"), GPU) == []


def test_every_problem_at_once():
    problems = validate(good(batch_size=0, max_steps=0, precision="bf16", optim="adamw_ort_fused"), CPU)
    assert {p.field for p in problems} >= {"batch_size", "max_steps", "precision", "optim"}
    with pytest.raises(ConfigError, match=r"(?s)problems:.*batch_size:.*max_steps:"):
        check(good(batch_size=0, max_steps=0), CPU)


def test_choices_drive_the_disabled_states():
    table = choices(good(), CPU)
    assert table["backend"] == {"eager": None, "ort": None, "compile": None}
    assert table["precision"]["no"] is None and table["precision"]["bf16"].startswith("bf16 with backend='ort'")
    assert "CUDA kernel" in table["optim"]["adamw_ort_fused"] and table["optim"]["adamw_torch_fused"] is None
    assert "shards nothing" in table["zero_stage"][1]
    eager = choices(good(backend="eager", num_processes=2), CPU)
    assert eager["precision"]["bf16"] is None and eager["zero_stage"][1] is None


def test_run_config_round_trips_through_json(tmp_path):
    cfg = RunConfig(model="minilm", backend="eager", precision="bf16", zero_stage=1, num_processes=2, name="x")
    assert RunConfig.from_json(cfg.to_json()) == cfg
    cfg.to_json(tmp_path / "c.json")
    assert RunConfig.from_json(tmp_path / "c.json") == cfg
    with pytest.raises(ValueError, match=r"Unknown RunConfig field\(s\): colour"):
        RunConfig.from_dict({"colour": "red"})


def test_field_help_comes_from_the_docstrings():
    assert RunConfig.help("backend").startswith("What runs the training steps: ort (ONNX Runtime)")
    assert "ZeRO" in RunConfig.help("zero_stage")
    from ortnb.config import fields

    assert all(RunConfig.help(name) for name in fields())


def test_output_dir_without_permission(tmp_path, monkeypatch):
    # the suite may run as root, for whom every folder is writable: stand in for a read-only folder
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path and real_access(path, mode))
    problems = validate(good(output_dir=str(tmp_path / "runs")), CPU)
    assert [p.field for p in problems] == ["output_dir"]
    assert re.search(rf"{re.escape(str(tmp_path))} is not writable for this user, so .*runs cannot be created; "
                     r"choose another output_dir", problems[0].message)


def test_path_fields_are_written_as_text(tmp_path):
    cfg = good(output_dir=tmp_path / "runs")
    assert json.loads(cfg.to_json())["output_dir"] == str(tmp_path / "runs")


def test_from_dict_refuses_what_is_not_a_mapping():
    with pytest.raises(ConfigError, match=r"a RunConfig is a mapping of field: value .*got a list"):
        RunConfig.from_dict(["model", "minilm"])


def test_label_of_a_hand_written_config_never_raises():
    assert good(num_processes="2", optim=["x"]).label == "ort + ['x']"


def test_a_path_or_a_hub_id_is_told_apart_sensibly(tmp_path, monkeypatch):
    from ortnb.models.checks import looks_like_path

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    paths = ["./nope", "../nope", "/abs/nope", "~/nope", ".hidden/nope", "models/nope", "a/b/c"]
    hub_ids = ["org/name", "bert-base-uncased", "nope/models"]
    assert [looks_like_path(m) for m in paths] == [True] * len(paths)
    assert [looks_like_path(m) for m in hub_ids] == [False] * len(hub_ids)


INSTEAD = ("pass the folder save_pretrained() wrote (the one holding config.json), a Hub id (org/name) or one of "
           "minilm, smollm2, tiny-bert, tiny-llama.")


def test_a_mistyped_local_model_path_reads_no_such_folder_not_a_hub_id(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    (tmp_path / "models" / "minilm-ft").mkdir(parents=True)
    (tmp_path / "weights.bin").write_bytes(b"")

    def model_problems(model):
        return [p.message for p in validate(good(model=model), CPU) if p.field == "model"]

    assert model_problems("models/nope") == [
        f"no such folder models/nope (looked for {tmp_path}/models/nope); check the path, or {INSTEAD}"]
    assert model_problems("models/minilmft") == [
        f"no such folder models/minilmft (looked for {tmp_path}/models/minilmft); did you mean models/minilm-ft? "
        f"Or {INSTEAD}"]
    assert model_problems("./weights.bin") == [f"./weights.bin is a file, not a folder; {INSTEAD}"]
    assert model_problems("org/name") == [  # no folder org/ here: still a Hub id
        "org/name is a Hub id but HF_HUB_OFFLINE=1; use a local folder or a built-in model."]


# -- the model folder's weights and tokenizer, before the run ---------------------------------------


@pytest.fixture(scope="module")
def saved_bert(tmp_path_factory):
    """A tiny BERT classifier saved with MiniLM's real tokenizer (30522 tokens), as a user's folder."""
    from transformers import AutoTokenizer

    from ortnb import assets

    from ._helpers import tiny_bert

    folder = tmp_path_factory.mktemp("models") / "bert"
    tokenizer = AutoTokenizer.from_pretrained(assets.MODELS["minilm"].locate())
    tiny_bert(vocab_size=len(tokenizer)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def copied(saved_bert, tmp_path, edit=None):
    import shutil

    folder = tmp_path / "model"
    shutil.copytree(saved_bert, folder)
    if edit:
        edit(folder)
    return folder


def model_problems(folder, tmp_path) -> list[str]:
    return [p.message for p in validate(good(model=str(folder), output_dir=str(tmp_path / "runs")), CPU)
            if p.field == "model"]


def test_a_whole_model_folder_passes(saved_bert, tmp_path):
    assert model_problems(saved_bert, tmp_path) == []


def test_a_config_naming_another_architecture_than_the_weights_is_refused(saved_bert, tmp_path):
    def roberta(folder):
        config = json.loads((folder / "config.json").read_text())
        config.update(model_type="roberta", architectures=["RobertaForSequenceClassification"])
        (folder / "config.json").write_text(json.dumps(config))

    folder = copied(saved_bert, tmp_path, roberta)
    [problem] = model_problems(folder, tmp_path)
    assert problem.startswith(f"{folder / 'config.json'} names RobertaForSequenceClassification, but "
                              f"{folder / 'model.safetensors'} does not hold its weights: 37 of the model's 41 weights "
                              "are missing from the file and 41 of the file's 41 have no place in the model (e.g. "
                              "roberta.embeddings.LayerNorm.bias")
    assert "Training would start the missing ones from random values" in problem and "save_pretrained" in problem


@pytest.mark.parametrize("damage, words", [
    (lambda path: os.truncate(path, path.stat().st_size // 2), r"is cut short: [\d,]+ of its [\d,]+ bytes are there"),
    (lambda path: path.write_bytes(os.urandom(5000)), r"is not a safetensors file"),
])
def test_a_cut_or_random_weights_file_is_refused_naming_it(saved_bert, tmp_path, damage, words):
    folder = copied(saved_bert, tmp_path, lambda f: damage(f / "model.safetensors"))
    [problem] = model_problems(folder, tmp_path)
    assert re.match(rf"{re.escape(str(folder / 'model.safetensors'))} {words}", problem), problem
    assert problem.endswith("save the model again with model.save_pretrained(folder), or copy the folder again from "
                            "where it came from.")


def test_a_tokenizer_with_more_tokens_than_the_embeddings_is_refused(saved_bert, tmp_path):
    from ._helpers import tiny_bert

    folder = copied(saved_bert, tmp_path, lambda f: tiny_bert(vocab_size=1000).save_pretrained(f))
    assert model_problems(folder, tmp_path) == [
        "model's tokenizer has 30522 tokens but the model's embeddings hold 1000 (config.json's vocab_size): a text "
        "with a token numbered 1000 or above would stop the run with 'index out of range'. Save the tokenizer the "
        "model was trained with beside it, or grow the embeddings to fit: model.resize_token_embeddings("
        "len(tokenizer)); model.save_pretrained('model')."]


def test_tied_and_base_model_weights_fit_their_heads(tmp_path):
    """No false refusals: a causal LM whose head is tied to its embeddings (saved once), a base model under a
    new head, a head model read as a base model."""
    import transformers

    from ortnb import weights

    from ._helpers import tiny_bert

    small = dict(vocab_size=120, n_positions=64, n_embd=32, n_layer=1, n_head=2)
    transformers.GPT2LMHeadModel(transformers.GPT2Config(**small)).save_pretrained(tmp_path / "gpt2")
    llama = transformers.LlamaConfig(vocab_size=120, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                     num_attention_heads=2, num_key_value_heads=2, tie_word_embeddings=True)
    transformers.LlamaForCausalLM(llama).save_pretrained(tmp_path / "llama")
    tiny_bert().bert.save_pretrained(tmp_path / "base")
    for name, task in (("gpt2", "causal-lm"), ("llama", "causal-lm"), ("llama", "sequence-classification"),
                       ("base", "sequence-classification")):
        found = weights.fit(tmp_path / name, task)
        assert found is not None and found.fits, (name, task, found)

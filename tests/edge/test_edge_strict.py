"""ortnb.edge.train takes input as strictly as runs do: texts that are null, numbers or lists, rows without
the text column, all-empty texts, an edited stored data file and damaged artifacts are each refused with a
ConfigError in the words validate() uses, before any worker process starts or any run folder exists."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from ortnb import data_checks
from ortnb.edge import manifest
from ortnb.edge import run as edge_run
from ortnb.errors import ConfigError

pytest.importorskip("onnxruntime.training.api")

GOOD = [{"text": "a fine film", "label": 1}, {"text": "a dull film", "label": 0}]


class Started(Exception):
    """Raised by the stand-in launcher: train() got as far as starting a worker."""


@pytest.fixture
def launches(monkeypatch):
    """Every worker launch train() attempts; the stand-in starts no process."""
    seen = []

    def launch(run_dir):
        seen.append(run_dir)
        raise Started(run_dir)

    monkeypatch.setattr(edge_run, "_start", launch)
    return seen


def refused(tmp_path, launches, artifacts_dir, dataset=GOOD, **kwargs) -> str:
    runs = tmp_path / "runs"
    with pytest.raises(ConfigError) as caught:
        edge_run.train(artifacts_dir, dataset, output_dir=runs, **{"steps": 3, **kwargs})
    assert launches == [], "a worker was launched before the input was checked"
    run_folders = [p for p in runs.iterdir() if p.name != edge_run.DATA_FOLDER] if runs.exists() else []
    assert run_folders == [], "a run folder was created before the input was checked"
    return str(caught.value)


def test_good_rows_reach_the_launcher(tmp_path, launches, edge_artifacts):
    # The stand-in launcher is what the refusals below are measured against: good input reaches it.
    with pytest.raises(Started):
        edge_run.train(edge_artifacts, GOOD, steps=3, output_dir=tmp_path / "runs")
    assert len(launches) == 1


@pytest.mark.parametrize("dataset, message", [
    ([{"text": None, "label": 1}, {"text": "ok", "label": 0}],
     "dataset row 1 has no text (empty, null or NA); every row needs a string in 'text'."),
    ([{"text": "ok", "label": 1}, {"text": 5, "label": 0}],
     "dataset row 2 has a number as text (5); every row needs a string in 'text'."),
    ([{"text": ["a", "b"], "label": 1}, {"text": ["c"], "label": 0}, {"text": "ok", "label": 0}],
     "dataset row 1 (and 1 more rows) has a list as text (['a', 'b']); every row needs a string in 'text'."),
    ([{"text": "ok", "label": 1}, {"sentence": "the column is sentence here", "label": 0}],
     "dataset row 2 has no text (empty, null or NA); every row needs a string in 'text'."),
    ([{"text": "", "label": 1}, {"text": "  ", "label": 0}],
     "dataset: every row's 'text' is empty or blank, so the model would train on nothing but special tokens; put "
     "the text in the 'text' column."),
    ({"text": ["ok", None], "label": [1, 0]},
     "dataset row 2 has no text (empty, null or NA); every row needs a string in 'text'."),
], ids=["null", "number", "lists", "missing-column", "all-empty", "dict-of-columns"])
def test_bad_texts_are_refused_by_row(tmp_path, launches, edge_artifacts, dataset, message):
    assert refused(tmp_path, launches, edge_artifacts, dataset) == message


def test_a_bad_eval_text_is_named_as_eval_dataset(tmp_path, launches, edge_artifacts):
    message = refused(tmp_path, launches, edge_artifacts, eval_dataset=[{"text": None, "label": 0}])
    assert message == "eval_dataset row 1 has no text (empty, null or NA); every row needs a string in 'text'."


@pytest.mark.parametrize("name, content, message", [
    ("rows.jsonl", '{"text": "ok", "label": 1}\n{"text": null, "label": 0}\n',
     "rows.jsonl line 2 has no text (empty, null or NA); every row needs a string in 'text'."),
    ("rows.csv", "text,label\nok,1\n12,0\n",
     "rows.csv line 3 has a number as text (12); every row needs a string in 'text'."),
    ("rows.csv", 'text,label\n"",1\nNA,0\n',
     "rows.csv line 2 (and 1 more rows) has no text (empty, null or NA); every row needs a string in 'text'."),
    ("rows.json", '[{"text": " ", "label": 1}, {"text": "", "label": 0}]',
     "rows.json: every row's 'text' is empty or blank, so the model would train on nothing but special tokens; "
     "put the text in the 'text' column."),
    ("rows.jsonl", '{"text": "ok", "label": 1}\n{"text": "fine", "label": null}\n',
     "rows.jsonl line 2 has no label; give every row a 'label' or remove the rows without one."),
    ("rows.csv", "text,label\nok,1\nfine,0.0\n",
     "rows.csv line 3: label 0.0 is not a whole number; labels are class ids 0..K-1 (write 1, not 1.0) or class "
     "names."),
], ids=["jsonl-null", "csv-number", "csv-empty", "json-all-empty", "jsonl-no-label", "csv-float-label"])
def test_a_file_is_refused_in_the_words_validate_uses(tmp_path, launches, edge_artifacts, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    # validate() reports data_checks' problem under the field name: "dataset: <problem>"
    assert data_checks.look(str(path), "sequence-classification").problems == (message,)
    assert refused(tmp_path, launches, edge_artifacts, path) == f"dataset: {message}"


def test_an_eval_file_is_named_as_eval_dataset(tmp_path, launches, edge_artifacts):
    assert refused(tmp_path, launches, edge_artifacts, eval_dataset=tmp_path / "none.jsonl") == (
        f"eval_dataset: no file {str(tmp_path / 'none.jsonl')!r}.")
    bad = tmp_path / "held.jsonl"
    bad.write_text('{"text": "ok", "label": 1}\n{"text": 3, "label": 0}\n')
    assert refused(tmp_path, launches, edge_artifacts, eval_dataset=bad) == (
        "eval_dataset: held.jsonl line 2 has a number as text (3); every row needs a string in 'text'.")


def test_a_file_label_is_named_by_its_line(tmp_path, launches, edge_artifacts):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"text": "ok", "label": 1}\n\n{"text": "fine", "label": 7}\n')
    assert refused(tmp_path, launches, edge_artifacts, path) == ("dataset: rows.jsonl line 3 has label 7; the model's "
                                                            "labels are LABEL_0, LABEL_1")


def test_an_edited_stored_data_file_is_refused(tmp_path, launches, edge_artifacts):
    store = tmp_path / "runs" / edge_run.DATA_FOLDER
    stored = edge_run._store(GOOD, store)  # what an earlier train() on GOOD left beside its run folder
    with open(stored, "a") as handle:
        handle.write('{"label": 0, "text": null}\n')
    message = refused(tmp_path, launches, edge_artifacts, GOOD)
    assert message == (f"dataset: the stored copy of these rows, {stored}, was edited after an edge run stored it "
                       "(its content no longer matches its name), so the run would train on the edited rows; "
                       "delete that file (train() stores the rows again), or pass the edited rows as the dataset "
                       "from a file of your own")
    # The edited copy itself, passed as the dataset, gets the checks any file gets.
    copy = tmp_path / "edited.jsonl"
    shutil.copy(stored, copy)
    assert refused(tmp_path, launches, edge_artifacts, copy) == (
        "dataset: edited.jsonl line 3 has no text (empty, null or NA); every row needs a string in 'text'.")
    # Deleted, as the message says: the rows are stored again and the run goes on.
    Path(stored).unlink()
    with pytest.raises(Started):
        edge_run.train(edge_artifacts, GOOD, steps=3, output_dir=tmp_path / "runs")
    assert Path(stored).read_text() == "".join(json.dumps(r, sort_keys=True) + "\n" for r in GOOD)


# -- artifacts: sizes and hashes in the manifest --------------------------------------------------

def test_the_manifest_holds_each_files_size_and_hash(edge_artifacts):
    info = manifest.Manifest.read(edge_artifacts)
    assert sorted(info.files) == sorted([*manifest.ARTIFACT_FILES, manifest.MODEL_CONFIG, manifest.TOKENIZER])
    for name, facts in info.files.items():
        assert facts["bytes"] == (edge_artifacts / name).stat().st_size and len(facts["sha256"]) == 64
    assert manifest.damaged_files(edge_artifacts, info) == []


@pytest.fixture
def copy(edge_artifacts, tmp_path):
    folder = tmp_path / "copy"
    shutil.copytree(edge_artifacts, folder)
    return folder


def test_a_truncated_artifact_is_named_before_training(tmp_path, launches, copy):
    path = copy / manifest.TRAINING_MODEL
    size = path.stat().st_size
    path.write_bytes(path.read_bytes()[:1000])
    assert refused(tmp_path, launches, copy) == (
        f"artifacts: {path.resolve()} is 1,000 bytes, but the export wrote {size:,} (cut short or overwritten); "
        "export the artifacts again with ortnb.edge.export_artifacts (or copy the whole folder again)")


def test_a_file_from_another_export_is_named_before_training(tmp_path, launches, copy):
    path = copy / manifest.CHECKPOINT
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, other bytes: weights of another export
    path.write_bytes(bytes(data))
    assert refused(tmp_path, launches, copy) == (
        f"artifacts: {path.resolve()} is not the file the export wrote (its sha256 differs: changed since, or "
        "copied in from another export); export the artifacts again with ortnb.edge.export_artifacts (or copy the "
        "whole folder again)")


def test_a_damaged_manifest_is_named(tmp_path, launches, copy):
    (copy / manifest.FILE).write_text('{"inputs": ["input_ids", "attention_mask"], "seq')
    message = refused(tmp_path, launches, copy)
    assert message.startswith(f"the artifacts folder {str(copy)!r} has a damaged {manifest.FILE} (")
    assert message.endswith("); export again with ortnb.edge.export_artifacts")


def test_artifacts_exported_before_hashes_still_train(tmp_path, launches, copy):
    data = json.loads((copy / manifest.FILE).read_text())
    del data["files"]
    (copy / manifest.FILE).write_text(json.dumps(data))
    with pytest.raises(Started):
        edge_run.train(copy, GOOD, steps=3, output_dir=tmp_path / "runs")


def test_the_cli_refuses_a_damaged_artifact_with_exit_2(tmp_path, launches, copy, capsys):
    from ortnb.cli import main

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in GOOD))
    path = copy / manifest.EVAL_MODEL
    path.write_bytes(b"")  # empty: the incomplete-folder check names it before the hashes are read
    assert main(["edge", "train", str(copy), str(data), "--steps", "3", "--runs", str(tmp_path / "runs")]) == 2
    assert "eval_model.onnx is missing or empty" in capsys.readouterr().err
    path.write_bytes(b"\x08\x07")  # two bytes of protobuf: what ONNX Runtime would fail to parse in C++
    assert main(["edge", "train", str(copy), str(data), "--steps", "3", "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert f"artifacts: {path.resolve()} is 2 bytes, but the export wrote" in err and "export the artifacts again" \
        in err
    assert launches == [] and not (tmp_path / "runs").exists()

"""Bad training data is refused by validate() before any run, naming the file and the line, row or column;
good data tells the run how many classes it has (and their names)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from ortnb import assets, data, data_checks
from ortnb.config import RunConfig
from ortnb.data.checks import Labels
from ortnb.errors import ConfigError
from ortnb.validation import choices, notes, validate

from .._helpers import CPU


def jsonl(*rows) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def write(tmp_path, name: str, content: str | bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def classifier(dataset, **changes) -> RunConfig:
    return RunConfig(**{"model": "tiny-bert", "dataset": dataset, "evaluate": False, **changes})


BAD_FILES = [  # (file name, content, what the one problem must say)
    ("rows.jsonl", "", r"^rows\.jsonl is empty; put the training rows in it\.$"),
    ("rows.jsonl", '{"text": "a", "label": 0}\n\n{"text": "b" "label": 1}\n',
     r"^rows\.jsonl line 3 is not valid JSON \(Expecting ',' delimiter: column 14\); fix or remove that line\.$"),
    ("rows.csv", b"text,label\ncaf\xe9,0\nb,1\n",
     r"^rows\.csv is not UTF-8 text: byte 14 \(line 2\) is 0xe9; re-encode it as UTF-8, e\.g\. iconv -f latin1"),
    ("rows.txt", b"To be\xff or not", r"^rows\.txt is not UTF-8 text: byte 5 \(line 1\) is 0xff"),
    ("rows.csv", "text,sentiment\nfine,pos\nbad,neg\n",
     r"^rows\.csv has no 'label' column for each row's class, an id 0\.\.K-1 or a name \(columns found: 'text', "
     r"'sentiment'\); set label_column='sentiment' \(in the Dashboard: the label column choice\), or name that "
     r"column 'label' in the file\.$"),
    ("rows.csv", 'text,label\n"abc,0\nx,1\n',
     r"^rows\.csv line 2 is not valid CSV \(unexpected end of data\); check the quotes that start there\.$"),
    ("rows.csv", "text,label\na,b,0\nc,1\n",
     r"^rows\.csv line 2 has 3 fields but the header has 2 \(text, label\); quote fields that contain commas\.$"),
    ("rows.csv", "text,label\n", r"^rows\.csv has a header \(text, label\) but no rows\.$"),
    ("rows.json", '[{"text": "a", "label": 0},\n {"text": "b"  "label": 1}]',
     r"^rows\.json is not valid JSON at line 2 column 16 \(Expecting ',' delimiter\); fix the file\.$"),
    ("rows.json", "[]", r"^rows\.json holds no rows\.$"),
    ("rows.json", '[{"text": "a", "label": 0}, ["b", 1]]',
     r"^rows\.json row 1 is a JSON list, not an object; write each row as \{\"text\": \.\.\., \"label\": \.\.\.\}\.$"),
    ("rows.jsonl", jsonl({"text": "a", "label": 0}, {"label": 1}, {"label": 0}),
     r"^rows\.jsonl line 2 \(and 1 more rows\) has no text \(empty, null or NA\); every row needs a string in "
     r"'text'\.$"),
    ("rows.csv", "text,label\nNA,0\nb,1\n", r"^rows\.csv line 2 has no text \(empty, null or NA\)"),
    ("rows.jsonl", jsonl({"text": 5, "label": 0}, {"text": "b", "label": 1}),
     r"^rows\.jsonl line 1 has a number as text \(5\)"),
    ("rows.csv", "text,label\na,0\nb,\n",
     r"^rows\.csv line 3 has no label; give every row a 'label' or remove the rows without one\.$"),
    ("rows.jsonl", jsonl({"text": "a", "label": True}, {"text": "b", "label": False}),
     r"^rows\.jsonl line 1: label True is a boolean; use class ids 0/1 or class names\.$"),
    ("rows.jsonl", jsonl({"text": "a", "label": 1.0}, {"text": "b", "label": 0}),
     r"^rows\.jsonl line 1: label 1\.0 is not a whole number; labels are class ids 0\.\.K-1 \(write 1, not 1\.0\)"),
    ("rows.jsonl", jsonl({"text": "a", "label": [0, 1]}, {"text": "b", "label": 0}),
     r"^rows\.jsonl line 1: label \[0, 1\] is a list; each row takes one class id or name\.$"),
    ("rows.jsonl", jsonl({"text": "a", "label": 0}, {"text": "b", "label": "pos"}),
     r"^rows\.jsonl: the 'label' column mixes numbers and names \(0 at line 1, 'pos' at line 2\); use class ids "
     r"0\.\.K-1 or class names, not both\.$"),
    ("rows.jsonl", jsonl({"text": "a", "label": "pos"}, {"text": "b", "label": "pos"}),
     r"^rows\.jsonl: every row has the label 'pos'; a classifier needs at least two classes\.$"),
    ("rows.csv", "text,label\na,0\nb,-1\nc,1\n",
     r"^rows\.csv line 3: label -1 is negative; class ids run 0\.\.K-1 \(rows without a class are often marked "
     r"-1: remove them\)\.$"),
    ("rows.jsonl", jsonl({"text": "a", "label": 0}, {"text": "b", "label": 1}, {"text": "c", "label": 5}),
     r"^rows\.jsonl line 3: label 5 is outside 0\.\.2: the 3 distinct labels \(0, 1, 5\) must be the class ids "
     r"0\.\.2; renumber them or use class names\.$"),
]


@pytest.mark.parametrize("name, content, message", BAD_FILES, ids=[f"{i}-{b[0]}" for i, b in enumerate(BAD_FILES)])
def test_bad_file_is_refused_naming_file_and_line(tmp_path, name, content, message):
    model = "tiny-llama" if name.endswith(".txt") else "tiny-bert"
    problems = validate(classifier(write(tmp_path, name, content), model=model), CPU)
    assert [p.field for p in problems] == ["dataset"], problems
    assert re.search(message, problems[0].message), problems[0].message


def test_every_problem_of_a_file_at_once(tmp_path):
    path = write(tmp_path, "rows.csv", "review,sentiment\nfine,pos\n")
    problems = validate(classifier(path, batch_size=0), CPU)
    assert [p.field for p in problems] == ["batch_size", "dataset", "dataset"]
    assert re.search(r"no 'text' column for the text to classify \(columns found: 'review', 'sentiment'\)",
                     problems[1].message)
    assert "no 'label' column" in problems[2].message


def test_many_bad_json_lines_are_counted_not_listed(tmp_path):
    path = write(tmp_path, "rows.jsonl", "{oops\n" * 6)
    messages = [p.message for p in validate(classifier(path), CPU)]
    assert len(messages) == 4 and messages[-1] == "rows.jsonl: 3 more lines are not valid JSON."


def test_string_labels_are_mapped_in_sorted_order(tmp_path):
    path = write(tmp_path, "rows.jsonl", jsonl(*({"text": t, "label": lab} for t, lab in
                                                  [("good", "pos"), ("bad", "neg"), ("meh", "neutral")])))
    assert validate(classifier(path), CPU) == []
    found = data_checks.look(path, "sequence-classification")
    assert found.labels == Labels(3, ("neg", "neutral", "pos"), mapped=True) and found.rows == 3
    assert found.labels.model_kwargs() == {"num_labels": 3, "id2label": {0: "neg", 1: "neutral", 2: "pos"},
                                           "label2id": {"neg": 0, "neutral": 1, "pos": 2}}


@pytest.mark.parametrize("name, content", [
    ("rows.csv", "text,label\n\"a, quoted\",2\nb,0\n\nc,1\n"),
    ("rows.json", '[{"text": "a", "label": 2}, {"text": "b", "label": 0}, {"text": "c", "label": 1}]'),
    ("rows.jsonl", "\ufeff" + jsonl({"text": "a", "label": 2}, {"text": "b", "label": 0}, {"text": "c", "label": 1})),
])
def test_integer_labels_give_the_number_of_classes(tmp_path, name, content):
    path = write(tmp_path, name, content)
    assert validate(classifier(path), CPU) == []
    assert data_checks.look(path, None).labels == Labels(3)
    assert data_checks.labels(path, "sequence-classification").model_kwargs() == {"num_labels": 3}


def test_causal_lm_data_needs_only_text(tmp_path):
    text = write(tmp_path, "play.txt", "To be, or not to be")
    rows = write(tmp_path, "rows.jsonl", jsonl({"text": "a"}, {"text": "b"}))
    assert validate(RunConfig(model="tiny-llama", dataset=text), CPU) == []
    assert validate(RunConfig(model="tiny-llama", dataset=rows), CPU) == []
    assert data_checks.labels(rows, "causal-lm") is None
    problems = validate(RunConfig(model="tiny-llama", dataset=write(tmp_path, "r.jsonl", jsonl({"body": "a"}))), CPU)
    assert re.search(r"r\.jsonl has no 'text' column for the text to learn from \(columns found: 'body'\)",
                     problems[0].message)


def test_held_out_rows_need_a_class_with_two_rows(tmp_path):
    path = write(tmp_path, "rows.jsonl", jsonl({"text": "a", "label": 0}, {"text": "b", "label": 1}))
    problems = validate(classifier(path, evaluate=True), CPU)
    assert [p.field for p in problems] == ["eval_fraction"]
    assert problems[0].message.startswith("the 2 rows have one per class, so none can be held out for evaluation")
    assert validate(classifier(path), CPU) == []  # evaluate=False


def test_a_saved_classifier_with_other_classes_gets_a_new_head_said_before_the_run(tmp_path):
    folder = tmp_path / "sentiment-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "id2label": {"0": "neg", "1": "pos"},
                                                    "architectures": ["BertForSequenceClassification"]}))
    _, tokenizer = assets.load_model("tiny-bert", "sequence-classification")
    tokenizer.save_pretrained(folder)
    path = write(tmp_path, "rows.jsonl", jsonl(*({"text": "x", "label": i} for i in range(3))))
    cfg = classifier(path, model=str(folder))
    assert validate(cfg, CPU) == []
    assert notes(cfg) == ["new 3-class head; the saved 2-class head is not used"]


# -- a datasets.Dataset, in memory or saved to disk ------------------------------------------------


def test_dataset_in_memory_is_checked_the_same_way():
    from datasets import Dataset, DatasetDict

    def problems(**columns):
        return [p.message for p in validate(classifier(Dataset.from_dict(columns)), CPU)]

    assert problems(sentence=["a", "b"], label=[0, 1]) == [
        "the Dataset has no 'text' column for the text to classify (columns found: 'sentence', 'label'); set "
        "text_column='sentence' (in the Dashboard: the text column choice), or name that column 'text' in the file."]

    assert problems(text=[], label=[]) == ["the Dataset has no rows."]
    assert problems(text=[1, 2], label=[0, 1]) == [
        "the Dataset: column 'text' holds int64, not strings; put the raw text in 'text' (ortnb tokenizes it)."]
    assert problems(text=["a", None, None], label=[0, 1, 0]) == [
        "the Dataset row 1 has no text (2 rows without it); fill or drop such rows."]
    outside = problems(text=["a", "b", "c"], label=[0, 1, 7])
    assert re.search(r"^the Dataset row 2: label 7 is outside 0\.\.2", outside[0])
    both = Dataset.from_dict({"text": ["a", "b"], "label": [0, 1]})
    assert [p.message for p in validate(classifier(DatasetDict(train=both, test=both)), CPU)] == [
        "the Dataset is a DatasetDict with splits train, test; pass one split, e.g. dataset['train']."]


def test_dataset_rows_are_named_in_their_selected_order():
    from datasets import Dataset

    rows = Dataset.from_dict({"text": list("abcd"), "label": [0, 1, -3, 1]}).select([2, 0, 1])
    assert re.search(r"^the Dataset row 0: label -3 is negative", data_checks.look(rows, None).problems[0])


def test_class_label_names_become_the_model_labels():
    from datasets import ClassLabel, Dataset, Features, Value

    features = Features({"text": Value("string"), "label": ClassLabel(names=["rotten", "fresh", "certified"])})
    rows = Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 2, 1]}, features=features)
    assert data_checks.labels(rows, None) == Labels(3, ("rotten", "fresh", "certified"))
    bad = Dataset.from_dict({"text": ["a", "b"], "label": [0, -1]}, features=features)
    assert data_checks.look(bad, None).problems == (
        "the Dataset row 1: label -1 is not a class of the ClassLabel feature (ids 0..2: rotten, fresh, certified); "
        "remove rows without a class.",)


def test_save_to_disk_folder_is_looked_into(tmp_path):
    from datasets import Dataset

    Dataset.from_dict({"text": ["a", "b"], "label": ["x", "y"]}).save_to_disk(str(tmp_path / "saved"))
    assert data_checks.labels(str(tmp_path / "saved"), None) == Labels(2, ("x", "y"), mapped=True)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "dataset_info.json").write_text("{}")
    problems = validate(classifier(str(tmp_path / "broken")), CPU)
    assert re.search(r"^broken cannot be read as a Dataset\.save_to_disk\(\) folder", problems[0].message)


def test_labels_raises_one_config_error_for_the_worker(tmp_path):
    path = write(tmp_path, "rows.jsonl", '{"text": "a", "label": 0}\nnot json\n')
    with pytest.raises(ConfigError, match=r"^dataset: rows\.jsonl line 2 is not valid JSON"):
        data_checks.labels(path, "sequence-classification")
    with pytest.raises(ConfigError, match=r"dataset: .*missing\.jsonl does not exist\."):
        data.build(str(tmp_path / "missing.jsonl"), "sequence-classification", tokenizer=None, seq_len=8)
    assert data_checks.look(3, None).problems == ("must be a name, a file path or a datasets.Dataset, got int.",)


# -- speed: validate() runs on every change of the dashboard's form ---------------------------------


def test_built_in_data_validates_well_under_50_ms():
    cfg = RunConfig(model="tiny-bert", dataset="rotten_tomatoes")
    validate(cfg, CPU)
    started = time.perf_counter()
    for _ in range(20):
        assert validate(cfg, CPU) == []
    assert (time.perf_counter() - started) / 20 < 0.010
    started = time.perf_counter()
    choices(cfg, CPU)  # 12 validations
    assert time.perf_counter() - started < 0.050


def test_a_file_is_read_once_until_it_changes(tmp_path):
    rows = [{"text": f"row {i}", "label": i % 3} for i in range(20_000)]
    path = write(tmp_path, "rows.jsonl", jsonl(*rows))
    first = data_checks.look(path, None)
    started = time.perf_counter()
    assert validate(classifier(path), CPU) == [] and data_checks.look(path, None) is first
    assert time.perf_counter() - started < 0.050
    write(tmp_path, "rows.jsonl", jsonl(*rows, {"text": "new", "label": 3}))
    assert data_checks.look(path, None).labels == Labels(4)


# -- what the worker does with the labels ------------------------------------------------------------


def test_build_maps_class_names_to_ids(tmp_path):
    path = write(tmp_path, "rows.jsonl", jsonl(*({"text": f"text {i}", "label": ["pos", "neg", "neutral"][i % 3]}
                                                  for i in range(12))))
    _, tokenizer = assets.load_model("tiny-bert", "sequence-classification")
    train, evaluation = data.build(path, "sequence-classification", tokenizer, seq_len=8,
                                   plan=data.EvalPlan(True))  # a tenth of each class: one row
    assert sorted(set(train["labels"]) | set(evaluation["labels"])) == [0, 1, 2]
    assert len(train) == 9 and len(evaluation) == 3 and len(train[0]["input_ids"]) == 8


def test_load_model_sizes_and_names_the_head():
    model, _ = assets.load_model("tiny-bert", "sequence-classification", labels=Labels(3, ("a", "b", "c"), True))
    assert model.classifier.out_features == 3
    assert model.config.id2label == {0: "a", 1: "b", 2: "c"} and model.config.label2id == {"a": 0, "b": 1, "c": 2}
    plain, _ = assets.load_model("tiny-bert", "sequence-classification", labels=Labels(4))
    assert plain.classifier.out_features == 4
    default, _ = assets.load_model("tiny-bert", "sequence-classification")
    assert default.classifier.out_features == 2


def test_no_evaluation_set_without_evaluation():
    train, evaluation = data.splits("rotten_tomatoes", "sequence-classification", data.NO_EVALUATION, seed=0)
    assert evaluation is None and len(train) == 11_808
    train, evaluation = data.splits("rotten_tomatoes", "sequence-classification", data.EvalPlan(True), seed=0)
    assert len(evaluation) == 1_000 and len(train) == 11_808  # the fixed held-out snippets


@pytest.mark.slow
def test_three_named_classes_train_through_launch(tmp_path):
    import ortnb

    words = {"pos": "great fine good", "neg": "awful bad poor", "neutral": "plain some okay"}
    rows = [{"text": f"{words[label]} {i}", "label": label} for i in range(16) for label in words]
    path = write(tmp_path, "rows.jsonl", jsonl(*rows))
    run = ortnb.launch(RunConfig(model="tiny-bert", dataset=path, backend="eager", batch_size=4, seq_len=16,
                                 max_steps=3, warmup_steps=1, output_dir=str(tmp_path / "runs")))
    assert run.wait(300) == "completed", run.error
    model = run.load_model()
    assert model.classifier.out_features == 3
    assert model.config.id2label == {0: "neg", 1: "neutral", 2: "pos"}


def test_unreadable_and_unsupported_files(tmp_path, monkeypatch):
    path = write(tmp_path, "rows.jsonl", jsonl({"text": "a", "label": 0}))

    def denied(self):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "read_bytes", denied)
    assert data_checks.look(path, None).problems == ("rows.jsonl cannot be read (Permission denied); check its "
                                                     "permissions.",)
    monkeypatch.undo()
    assert data_checks.look(write(tmp_path, "rows.parquet", "PAR1"), None).problems == (
        "rows.parquet: unsupported file type; use .csv, .json, .jsonl or .txt.",)

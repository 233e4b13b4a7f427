"""A user's own columns and spellings (data_columns, datafiles, data_checks): a file whose text and classes sit
in columns of other names trains once they are named (RunConfig.text_column/label_column, the CLI, the edge
reader); a header naming a used column twice, one class spelled several ways, a quoted number in the text and
evaluation ids against training names are each said before a run, naming the file, the place and the way out."""

from __future__ import annotations

import json

import pytest

from ortnb import data, data_checks, datafiles
from ortnb.config import RunConfig
from ortnb.data.columns import Columns, field_problems
from ortnb.errors import ConfigError
from ortnb.validation import validate

from .._helpers import CPU

TASK = "sequence-classification"
REVIEWS = "id,review,sentiment\n" + "".join(f"{i},\"{'good' if i % 2 else 'bad'} film {i}\",{'pos' if i % 2 else 'neg'}\n"
                                            for i in range(12))
MAPPED = {"text_column": "review", "label_column": "sentiment"}


def write(tmp_path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content)
    return str(path)


def classifier(dataset, **changes) -> RunConfig:
    return RunConfig(**{"model": "tiny-bert", "dataset": dataset, "evaluate": False, **changes})


def messages(cfg) -> list[str]:
    return [f"{p.field}: {p.message}" for p in validate(cfg, CPU)]


# -- 1. map my columns ----------------------------------------------------------------------------


def test_a_review_sentiment_file_trains_once_its_columns_are_named(tmp_path):
    path = write(tmp_path, "reviews.csv", REVIEWS)
    cfg = classifier(path, **MAPPED)
    assert messages(cfg) == []
    labels = data.labels_for(path, TASK, Columns.of(cfg))
    assert labels.names == ("neg", "pos") and labels.mapped
    rows = data.read_rows(path, TASK, labels, Columns.of(cfg))
    assert rows.column_names == ["text", "label"]
    assert rows["text"][:2] == ["bad film 0", "good film 1"] and rows["label"][:2] == [0, 1]


def test_without_the_names_the_message_says_which_field_to_set(tmp_path):
    path = write(tmp_path, "reviews.csv", REVIEWS)
    assert messages(classifier(path)) == [
        "dataset: reviews.csv has no 'text' column for the text to classify (columns found: 'id', 'review', "
        "'sentiment'); set text_column to one of 'id', 'review', 'sentiment' (in the Dashboard: the text column "
        "choice), or name that column 'text' in the file.",
        "dataset: reviews.csv has no 'label' column for each row's class, an id 0..K-1 or a name (columns found: "
        "'id', 'review', 'sentiment'); set label_column to one of 'id', 'review', 'sentiment' (in the Dashboard: "
        "the label column choice), or name that column 'label' in the file."]
    assert messages(classifier(path, text_column="review")) == [
        "dataset: reviews.csv has no 'label' column for each row's class, an id 0..K-1 or a name (columns found: "
        "'id', 'review', 'sentiment'); set label_column to one of 'id', 'sentiment' (in the Dashboard: the label "
        "column choice), or name that column 'label' in the file."]


def test_the_held_out_file_and_an_in_memory_dataset_are_read_through_the_same_names(tmp_path):
    from datasets import Dataset

    train = write(tmp_path, "reviews.csv", REVIEWS)
    held = write(tmp_path, "held.csv", "review,sentiment\nfine,pos\nawful,neg\n")
    cfg = classifier(train, evaluate=True, eval_dataset=held, **MAPPED)
    assert messages(cfg) == []
    labels = data.labels_for(train, TASK, Columns.of(cfg))
    _, evaluation = data.splits(train, TASK, data.EvalPlan.of(cfg), 0, labels, Columns.of(cfg))
    assert evaluation["text"] == ["fine", "awful"] and evaluation["label"] == [1, 0]
    rows = Dataset.from_dict({"review": ["a", "b"], "sentiment": ["pos", "neg"], "other": [1, 2]})
    assert messages(classifier(rows, **MAPPED)) == []
    read = data.read_rows(rows, TASK, data.labels_for(rows, TASK, Columns.of(cfg)), Columns.of(cfg))
    assert read.column_names == ["text", "label"] and read["label"] == [1, 0]
    swapped = Dataset.from_dict({"label": ["a", "b"], "text": ["pos", "neg"]})  # the names the other way round
    read = data.read_rows(swapped, TASK, None, Columns(text="label", label="text"))
    assert read["text"] == ["a", "b"] and read["label"] == ["pos", "neg"]


@pytest.mark.parametrize("changes, expected", [
    ({"text_column": ""}, ["text_column: '' does not name a column; give the column's header, e.g. "
                           "text_column='text'."]),
    ({"label_column": None}, ["label_column: None does not name a column; give the column's header, e.g. "
                              "label_column='label'."]),
    ({"text_column": "review", "label_column": "review"},
     ["label_column: 'review' is also the text_column; one column cannot hold both the text and the class: name "
      "the column of classes in label_column."]),
])
def test_column_fields_that_cannot_name_a_column_are_refused(tmp_path, changes, expected):
    assert messages(classifier(write(tmp_path, "reviews.csv", REVIEWS), **changes)) == expected


def test_a_built_in_dataset_with_other_column_names_is_refused():
    assert messages(classifier("rotten_tomatoes", text_column="review")) == [
        "dataset: rotten_tomatoes has no 'review' column: its columns are 'text', 'label'; leave text_column as "
        "'text'."]
    assert messages(classifier("rotten_tomatoes")) == []


def test_saved_configs_and_the_cli_carry_the_column_names():
    from ortnb.cli import _columns, build_parser

    cfg = RunConfig(dataset="reviews.csv", **MAPPED)
    again = RunConfig.from_json(cfg.to_json())
    assert (again.text_column, again.label_column) == ("review", "sentiment") and again == cfg
    assert RunConfig.from_dict({"dataset": "rows.csv"}).text_column == "text"  # configs saved before the fields
    assert RunConfig.help("text_column").startswith("The column of dataset (and eval_dataset) that holds")
    for command in ("compare", "tune", "profile"):
        options = build_parser().parse_args([command, "--dataset", "reviews.csv", "--text-column", "review",
                                             "--label-column", "sentiment"])
        assert _columns(options) == MAPPED
    assert _columns(build_parser().parse_args(["compare"])) == {"text_column": "text", "label_column": "label"}


def test_field_problems_is_pure():
    assert field_problems("text", "label") == []
    assert field_problems("a", "a")[0][0] == "label_column"


# -- 2. duplicate headers, one class spelled several ways, edge reads the same columns ----------------


def test_a_header_naming_the_label_column_twice_is_refused_with_both_positions(tmp_path):
    path = write(tmp_path, "rows.csv", "text,label,note,label\nfine,pos,x,neg\nbad,neg,y,pos\n")
    assert messages(classifier(path)) == [
        "dataset: rows.csv: the header names 'label' 2 times (columns 2 and 4), so which one holds the class is "
        "unclear; rename the others (e.g. 'label_2') or point label_column at the one to train on."]
    with pytest.raises(ConfigError, match=r"the header names 'label' 2 times \(columns 2 and 4\)"):
        datafiles.read_rows(path)
    unused = write(tmp_path, "notes.csv", "text,label,note,note\nfine,pos,x,y\nbad,neg,y,z\n")
    assert messages(classifier(unused)) == []  # a column no run reads may repeat


def test_class_names_that_differ_only_by_case_or_spaces_are_refused_naming_each_and_where(tmp_path):
    path = write(tmp_path, "rows.csv", "text,label\na,pos\nb,neg\nc, pos\nd,Pos\ne,neg\n")
    assert messages(classifier(path)) == [
        "dataset: rows.csv: the 'label' column spells one class in several ways ('pos' (first at line 2), ' pos' "
        "(first at line 4), 'Pos' (first at line 5)), which would train as separate classes; write each class one "
        "way in the file (e.g. every one of these as 'pos')."]
    assert data_checks.spelling_problem("f", [("pos", "row 0"), ("neg", "row 1")]) is None


def test_edge_reads_the_columns_runs_read(tmp_path):
    from ortnb.edge import batches
    from ortnb.edge.manifest import Manifest

    info = Manifest.__new__(Manifest)  # encode refuses the columns before it reads anything of the graph
    with pytest.raises(ConfigError) as caught:
        batches.encode([{"sentence": "fine", "label": 1}], info, None, "dataset")
    assert str(caught.value) == (
        "dataset has no 'text' column for the text to classify (columns found: 'sentence', 'label'); name that "
        "column 'text' in the file (runs and ortnb.edge read the same columns: 'text' and 'label'). Or give "
        "input_ids instead of text.")
    path = write(tmp_path, "reviews.csv", REVIEWS)
    rows, where, name = batches.read_named(path, "dataset", Columns(**{"text": "review", "label": "sentiment"}))
    assert rows[:2] == [{"text": "bad film 0", "label": "neg"}, {"text": "good film 1", "label": "pos"}]
    assert where[0] == "line 2" and name == "dataset: reviews.csv"
    with pytest.raises(ConfigError, match=r"reviews.csv has no 'body' column for the text to classify"):
        batches.read_named(path, "dataset", Columns(text="body", label="sentiment"))


# -- 3. a quoted number is text; evaluation ids against training names --------------------------------


def test_a_quoted_number_in_the_text_column_is_text_and_a_bare_one_is_still_refused(tmp_path):
    quoted = write(tmp_path, "films.csv", 'text,label\n"2001",1\nthe shining,0\n"1917","0"\n')
    assert messages(classifier(quoted)) == []
    rows = datafiles.read_rows(quoted)
    assert rows == [{"text": "2001", "label": 1}, {"text": "the shining", "label": 0},
                    {"text": "1917", "label": 0}]  # a quoted label stays the id it reads as
    bare = write(tmp_path, "bare.csv", "text,label\n2001,1\nthe shining,0\n")
    assert messages(classifier(bare)) == [
        "dataset: bare.csv line 2 has a number as text (2001); every row needs a string in 'text'."]
    mapped = write(tmp_path, "mapped.csv", 'title,label\n"2001",1\nthe shining,0\n')
    assert messages(classifier(mapped, text_column="title")) == []


def test_quoted_fields_follows_the_csv_records():
    text = 'a,b\n"1",2\n\n"x,""y""",3\r\n4,"5"\n'
    assert datafiles.quoted_fields(text) == [[False, False], [True, False], [], [True, False], [False, True]]


def test_evaluation_ids_against_training_names_say_so_and_the_way_out(tmp_path):
    train = write(tmp_path, "reviews.csv", REVIEWS)
    held = write(tmp_path, "held.csv", "review,sentiment\nfine,1\nawful,0\n")
    assert messages(classifier(train, evaluate=True, eval_dataset=held, **MAPPED)) == [
        "eval_dataset: held.csv gives its classes as ids (0..1) where the training file reviews.csv names them "
        "(neg, pos); write the names in held.csv too. If its ids follow the training classes in sorted order, that "
        "is 0 = 'neg', 1 = 'pos'."]
    ids = write(tmp_path, "ids.csv", "text,label\na,0\nb,1\nc,0\nd,1\n")
    names = write(tmp_path, "names.csv", "text,label\nfine,pos\nawful,neg\n")
    assert messages(classifier(ids, evaluate=True, eval_dataset=names)) == [
        "eval_dataset: names.csv names its classes (neg, pos) where the training file ids.csv gives them as ids "
        "0..1; write names.csv's labels as those ids too."]


# -- 4. a tune cache entry with wrong types -----------------------------------------------------------


def test_a_tune_cache_entry_with_wrong_types_is_a_miss_said_in_one_line_and_removed(tmp_path, capsys):
    from ortnb.tuning import cache, result
    from .._helpers import cached_search_entry

    key = {"model": "tiny-bert", "grid": {"backend": ["eager"]}}
    good = cached_search_entry()
    path = tmp_path / "entry.json"
    cache.write(path, good, key)
    assert cache.read(path, key) is not None
    for change, problem in [
            (lambda c: c["runs"][0].update(samples_per_s=["fast"] * 4),
             "candidate 0 has a run whose samples_per_s is ['fast', 'fast', 'fast', 'fast'], not a list of numbers"),
            (lambda c: c["runs"][0].update(cost_s="28"), "candidate 0 has a run whose cost_s is '28', not a number"),
            (lambda c: c.update(problems=[3]), "candidate 0 has a problem that is not text"),
            (lambda c: c["axes"].update(backend=3), "candidate 0 has backend=3, not one of the grid's values")]:
        broken = json.loads(json.dumps(good))
        change(broken["candidates"][0])
        if "grid's values" not in problem:  # the TypeError every later call met before: TuneResult read the entry as is
            with pytest.raises(TypeError):
                found = result.TuneResult.from_dict(broken, RunConfig(model="tiny-bert"))
                found.table, found.describe()
        cache.write(path, broken, key)
        assert cache.read(path, key) is None
        said = capsys.readouterr().err
        assert said == f"ortnb tune: the cache entry {path} is damaged ({problem}); measuring again and rewriting it\n"
        assert not path.exists()  # gone: the search writes it anew


def test_tunes_cache_key_keeps_old_keys_and_follows_a_column_mapping():
    from ortnb.tuning import cache

    base = RunConfig(model="tiny-bert", dataset="rotten_tomatoes")
    assert cache.data_identity(base) == "rotten_tomatoes"
    assert cache.data_identity(base.replace(**MAPPED)) == {"data": "rotten_tomatoes",
                                                          "columns": ["review", "sentiment"]}


@pytest.mark.slow
def test_a_review_sentiment_csv_trains_through_launch(tmp_path):
    import ortnb

    path = write(tmp_path, "reviews.csv", REVIEWS)
    run = ortnb.launch(RunConfig(model="tiny-bert", dataset=path, backend="eager", batch_size=4, seq_len=16,
                                 max_steps=3, warmup_steps=1, evaluate=True, output_dir=str(tmp_path / "runs"),
                                 **MAPPED))
    assert run.wait(300) == "completed", run.error
    assert run.load_model().config.id2label == {0: "neg", 1: "pos"}
    saved = RunConfig.from_json(run.run_dir / "config.json")
    assert (saved.text_column, saved.label_column) == ("review", "sentiment")

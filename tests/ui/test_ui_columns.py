"""The form's text and label column dropdowns (ui/columns.py): filled from the chosen file's header, defaults
text/label where the file has them, and a pick goes into the config the Run button runs and validate() checks."""

from __future__ import annotations

import pytest

from ortnb.config import RunConfig
from ortnb.ui.columns import ColumnChoices, choice, choices_for, config_changes, header_of

REVIEWS = "id,review,sentiment\n" + "".join(f"{i},{'good' if i % 2 else 'bad'} film {i},{'pos' if i % 2 else 'neg'}\n"
                                            for i in range(12))


@pytest.fixture
def reviews(tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text(REVIEWS)
    return str(path)


def test_the_header_of_each_kind_of_data(tmp_path, reviews):
    from datasets import Dataset

    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"body": "a", "stars": 1}\n{"body": "b", "stars": 2, "extra": 0}\n')
    plain = tmp_path / "play.txt"
    plain.write_text("To be")
    assert header_of(reviews) == ("id", "review", "sentiment")
    assert header_of(str(rows)) == ("body", "stars", "extra")
    assert header_of("rotten_tomatoes") == ("text", "label")
    assert header_of(Dataset.from_dict({"review": ["a"], "sentiment": [1]})) == ("review", "sentiment")
    assert header_of(str(plain)) is None and header_of(str(tmp_path / "missing.csv")) is None


def test_what_the_dropdowns_show_and_what_they_change(tmp_path, reviews):
    assert choice(("text", "label"), "review", "text") == "text"
    assert choice(("review", "label"), "review", "text") == "review"
    assert choice(("a", "b"), "review", "text") is None
    unmapped = RunConfig(model="tiny-bert", dataset=reviews)
    assert choices_for(unmapped) == ColumnChoices(("id", "review", "sentiment"), None, None, True, True)
    assert config_changes(unmapped, choices_for(unmapped)) == {}  # nothing chosen: validate() names the field
    mapped = unmapped.replace(text_column="review", label_column="sentiment")
    assert choices_for(mapped) == ColumnChoices(("id", "review", "sentiment"), "review", "sentiment", True, True)
    plain = tmp_path / "plain.csv"
    plain.write_text("text,label\na,0\nb,1\n")
    moved = mapped.replace(dataset=str(plain))  # another file, without the mapped columns: back to the defaults
    assert config_changes(moved, choices_for(moved)) == {"text_column": "text", "label_column": "label"}
    assert choices_for(RunConfig(model="smollm2", dataset="hamlet")).shown is True
    assert choices_for(RunConfig(model="smollm2", dataset="hamlet")).label_used is False


def test_the_dashboard_form_picks_the_columns_and_then_can_run(monkeypatch, reviews):
    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    import ortnb

    dashboard = ortnb.Dashboard(RunConfig(model="tiny-bert", dataset=reviews, evaluate=False), start=False)
    try:
        panel, picker = dashboard.panel, dashboard.columns
        children = list(panel.widget.children)
        assert children.index(picker.widget) == children.index(panel.more) - 1  # under the main rows
        text, label = picker.dropdowns["text_column"], picker.dropdowns["label_column"]
        assert list(text.options) == ["id", "review", "sentiment"] and text.value is None and label.value is None
        assert {p.field for p in panel.shown_problems} == {"dataset"}  # no 'text' column: the field to set is named
        text.value = "review"
        assert dashboard.buttons["Run"].disabled and "set label_column" in dashboard.state.form_problems[0]
        label.value = "sentiment"
        assert (panel.config.text_column, panel.config.label_column) == ("review", "sentiment")
        assert panel.shown_problems == []
        assert dashboard.state.form_problems == [] and not dashboard.buttons["Run"].disabled
        panel.controls["dataset"].value = "rotten_tomatoes"  # a file with text/label: the defaults again
        assert (panel.config.text_column, panel.config.label_column) == ("text", "label")
        assert (text.value, label.value) == ("text", "label")
    finally:
        dashboard.close()

"""`--vary FIELD=A,B` (ortnb compare, tune and profile) reads each value by its RunConfig field's declared type:
``length_grouping=true,false`` are booleans (they once reached tune() as the text "true", which validate() then
refused), a closed field takes one of its values, and a value the field cannot take is named with what it takes,
before anything runs (pure: nothing is measured)."""

from __future__ import annotations

import re

import pytest

import ortnb
from ortnb import cli
from ortnb.cli import parse_vary
from ortnb.errors import ConfigError
from ortnb.tuning import candidate_configs


def test_yes_no_values_are_booleans_and_closed_values_their_vocabulary():
    grid = parse_vary(["length_grouping=true,False", "padding=longest", "backend=eager,ort", "threads=none,2",
                       "precision=no"])
    assert grid == {"length_grouping": [True, False], "padding": ["longest"], "backend": ["eager", "ort"],
                    "threads": [None, 2], "precision": ["no"]}
    assert [type(v) for v in grid["length_grouping"]] == [bool, bool]
    assert [type(v) for v in grid["threads"]] == [type(None), int]


def test_a_tune_grid_of_booleans_is_measured_not_refused():
    grid = parse_vary(["padding=longest", "length_grouping=true,false"])
    candidates = candidate_configs(base=ortnb.RunConfig(model="tiny-bert", backend="eager"), grid=grid)
    assert [(c.padding, c.length_grouping) for c in candidates] == [("longest", True), ("longest", False)]


def test_every_value_a_field_cannot_take_is_named_with_what_it_takes():
    with pytest.raises(ConfigError) as raised:
        parse_vary(["length_grouping=true,maybe", "backend=tpu", "batch_size=big", "padding=short"])
    assert raised.value.problems == [
        "--vary 'length_grouping=true,maybe': length_grouping takes true or false (also yes/no, 1/0) or none, got "
        "'maybe'.",
        "--vary 'backend=tpu': backend takes one of eager, ort, compile, got 'tpu'.",
        "--vary 'batch_size=big': batch_size takes int values, got 'big'.",
        "--vary 'padding=short': padding takes one of longest, max_length or none, got 'short'."]


def test_ortnb_tune_hands_tune_the_typed_grid(tmp_path, monkeypatch, capsys):
    given = {}

    def fake_tune(**kwargs):
        given.update(kwargs)
        raise ConfigError("stopped here: the grid was read")

    monkeypatch.setattr("ortnb.tuning.tune", fake_tune)
    code = cli.main(["tune", "--model", "tiny-bert", "--vary", "padding=longest", "--vary",
                     "length_grouping=true,false", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path)])
    assert code == 2 and "stopped here" in capsys.readouterr().err
    assert given["grid"] == {"padding": ["longest"], "length_grouping": [True, False]}


def test_ortnb_tune_refuses_a_value_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("ortnb.tuning.tune", lambda **_k: pytest.fail("tune() was called"))
    code = cli.main(["tune", "--model", "tiny-bert", "--vary", "length_grouping=maybe", "--out",
                     str(tmp_path / "out"), "--cache-dir", str(tmp_path)])
    said = capsys.readouterr().err
    assert code == 2 and said.count("\n") == 1, said
    assert re.fullmatch(r"ortnb tune: --vary 'length_grouping=maybe': length_grouping takes true or false \(also "
                        r"yes/no, 1/0\) or none, got 'maybe'\.\n", said), said

"""The search that ranks by time to quality (tuning/quality.py): its projections on exact values, and a real Optuna
study (SQLite storage, successive-halving pruner) driven by a stand-in for the runs."""

from __future__ import annotations

import re

import pytest

from ortnb.config import RunConfig
from ortnb.errors import ConfigError
from ortnb.tuning import quality

pytest.importorskip("optuna")

BASE = RunConfig(model="tiny-bert", backend="eager", batch_size=16, learning_rate=5e-5)


def test_a_projection_is_the_seconds_so_far_over_the_share_of_the_way_to_the_target():
    assert quality.projected_s(40.0, 0.82, target=0.8, chance=0.5) == 40.0  # reached: the real figure
    assert quality.projected_s(40.0, 0.65, target=0.8, chance=0.5) == pytest.approx(80.0)  # half way: twice
    assert quality.projected_s(40.0, 0.74, target=0.8, chance=0.5) == pytest.approx(50.0)
    assert quality.projected_s(40.0, 0.5, target=0.8, chance=0.5) == quality.NEVER_S  # still at chance
    assert quality.projected_s(40.0, 0.41, target=0.8, chance=0.5) == quality.NEVER_S
    assert quality.projected_s(3.0, None, target=0.8, chance=0.5) == quality.NEVER_S  # no evaluation yet


def test_every_trial_evaluates_after_the_same_numbers_of_samples(tmp_path):
    assert quality.eval_every(BASE) == 32  # 512 samples at 16 a step
    assert quality.eval_every(BASE.replace(batch_size=32, num_processes=2)) == 8
    config = quality.trial_config(BASE, {"batch_size": 32, "learning_rate": 1e-4}, 0.8, 8192, tmp_path, 3)
    assert (config.max_steps, config.eval_every, config.target, config.name) == (256, 16, 0.8, "trial 3")
    assert config.evaluate and config.learning_rate == 1e-4 and config.output_dir == str(tmp_path)


def test_a_study_is_named_by_its_workload():
    assert quality.study_name(BASE, 0.8) == quality.study_name(BASE.replace(batch_size=32), 0.8)  # not a setting
    assert quality.study_name(BASE, 0.8) != quality.study_name(BASE, 0.85)
    assert quality.study_name(BASE, 0.8) != quality.study_name(BASE.replace(model="minilm"), 0.8)


def test_a_base_that_cannot_run_is_refused_before_any_trial(tmp_path):
    with pytest.raises(ConfigError, match="unknown built-in model 'tiny'"):
        quality.search(BASE.replace(model="tiny"), 0.8, storage=tmp_path / "s.db", train=lambda c, r: 1 / 0)


def test_the_storage_is_a_sqlite_file_in_the_cache_unless_given(tmp_path, monkeypatch):
    monkeypatch.setenv("ORTNB_CACHE", str(tmp_path / "cache"))
    assert quality.storage_url(None) == f"sqlite:///{tmp_path / 'cache' / quality.STUDIES_FILE}"
    assert quality.storage_url(tmp_path / "mine.db") == f"sqlite:///{tmp_path / 'mine.db'}"
    assert quality.storage_url("postgresql://host/db") == "postgresql://host/db"  # several machines, one study


def fake_train(log):
    """A stand-in for a run: the larger the learning rate (up to 2e-4) the sooner the target; four evaluations,
    each reporting its projection; a pruned trial stops at the evaluation where it is pruned."""
    def train(config, report):
        seconds = 30.0 * (2e-4 / min(config.learning_rate, 2e-4)) * (16 / config.batch_size) ** 0.5
        for rung in range(1, 5):
            log.append((config.name, rung))
            report(rung, seconds * (1 + 1 / rung))
        return seconds, True, "pytorch"

    return train


def test_a_search_races_trials_prunes_the_slow_and_resumes_from_its_database(tmp_path):
    log = []
    axes = [quality.Axis("batch_size", (16, 32)), quality.Axis("learning_rate", low=1e-5, high=2e-4)]
    found = quality.search(BASE, 0.8, trials=8, storage=tmp_path / "s.db", runs_dir=tmp_path, axes=axes,
                           train=fake_train(log))
    table = found.table()
    assert len(table) == 8 and set(table["state"]) <= {"complete", "pruned"}
    assert (table["state"] == "pruned").any()  # successive halving stopped some before their fourth evaluation
    complete = table[table["state"] == "complete"]
    best = found.best
    assert best["seconds_to_target"] == pytest.approx(complete["seconds"].min())
    assert best["learning_rate"] == complete.sort_values("seconds").iloc[0]["learning_rate"]
    again = quality.search(BASE, 0.8, trials=2, storage=tmp_path / "s.db", runs_dir=tmp_path, axes=axes,
                           train=fake_train(log))
    assert len(again.study.trials) == 10  # the same study, two trials more
    assert again.study.study_name == found.study.study_name


@pytest.mark.parametrize("changes, words", [
    ({"target": 80}, "target=80: the accuracy"),
    ({"trials": 0}, "trials=0"),
    ({"max_samples": 100}, "max_samples=100"),
])
def test_bad_arguments_are_refused_before_any_trial(tmp_path, changes, words):
    arguments = {"target": 0.8, "trials": 2, "max_samples": 4096} | changes
    with pytest.raises(ConfigError, match=words):
        quality.search(BASE, arguments.pop("target"), storage=tmp_path / "s.db", train=lambda c, r: 1 / 0,
                       **arguments)


def test_a_space_with_one_value_per_axis_and_a_damaged_study_file_are_refused_before_any_trial(tmp_path):
    one_each = [quality.Axis("batch_size", (16,)), quality.Axis("engine", ("eager no",))]
    with pytest.raises(ConfigError, match="every axis has one value .batch_size=16, engine='eager no'.") as refused:
        quality.search(BASE, 0.8, storage=tmp_path / "s.db", axes=one_each, train=lambda c, r: 1 / 0)
    assert "launch that one run with ortnb.launch" in str(refused.value)
    damaged = tmp_path / "studies.sqlite3"
    damaged.write_bytes(b"\x00" * 64 + b"half a database")
    with pytest.raises(ConfigError, match="is not an SQLite database") as refused:
        quality.search(BASE, 0.8, storage=damaged, train=lambda c, r: 1 / 0)
    assert str(damaged) in str(refused.value) and "move it aside" in str(refused.value)
    assert damaged.read_bytes().endswith(b"half a database")  # nothing of the user's overwritten


def test_a_new_study_races_the_users_own_settings_first(tmp_path):
    seen = []

    def train(config, report):
        seen.append((config.batch_size, config.learning_rate, config.backend, config.precision))
        return 10.0, True, "pytorch"

    axes = [quality.Axis("batch_size", (8, 16, 32)), quality.Axis("learning_rate", low=1e-5, high=2e-4),
            quality.Axis("engine", ("eager no", "eager bf16"))]
    quality.search(BASE.replace(precision="bf16"), 0.8, trials=2, storage=tmp_path / "s.db", runs_dir=tmp_path,
                   axes=axes, train=train)
    assert seen[0] == (16, 5e-5, "eager", "bf16")  # BASE's own batch, rate, engine and precision
    assert quality.own_settings(BASE.replace(learning_rate=1.0), axes) == {"batch_size": 16, "engine": "eager no"}


def test_a_falling_metric_is_refused():
    with pytest.raises(ConfigError, match="metric='loss'"):
        quality.search(BASE.replace(metric="loss"), 0.8, train=lambda c, r: 1 / 0)


def test_tune_to_target_takes_a_model_and_data_as_tune_does(tmp_path):
    seen = []

    def train(config, report):
        seen.append((config.model, config.dataset, config.target))
        return 10.0, True, "pytorch"

    found = quality.tune_to_target("tiny-bert", "rotten_tomatoes", target=0.75, trials=1, storage=tmp_path / "s.db",
                                   runs_dir=tmp_path, axes=[quality.Axis("batch_size", (16, 32))], train=train)
    assert seen == [("tiny-bert", "rotten_tomatoes", 0.75)] and found.best["seconds_to_target"] == 10.0


def test_ortnb_tune_target_runs_the_study_and_says_where_it_is(tmp_path, monkeypatch, capsys):
    import ortnb.tuning
    from ortnb.cli import main

    asked = {}

    def fake(**options):
        asked.update(options)
        return quality.search(options["base"], options["target"], trials=1, storage=tmp_path / "s.db",
                              runs_dir=tmp_path, axes=[quality.Axis("batch_size", (16, 32))],
                              train=lambda config, report: (42.0, True, "pytorch"))

    monkeypatch.setattr(ortnb.tuning, "tune_to_target", fake)
    assert main(["tune", "--model", "tiny-bert", "--target", "0.8", "--trials", "3"]) == 0
    out = capsys.readouterr().out
    assert asked["target"] == 0.8 and asked["trials"] == 3 and asked["base"].model == "tiny-bert"
    assert re.search(r"fastest to 0\.8: batch_size=(16|32), seconds_to_target=42\.0, trial=0", out), out
    assert f"the study: sqlite:///{tmp_path / 's.db'}" in out


def test_ortnb_tune_target_refuses_a_percentage(tmp_path, capsys):
    from ortnb.cli import main

    assert main(["tune", "--model", "tiny-bert", "--target", "80", "--storage", str(tmp_path / "s.db")]) == 2
    assert "target=80.0: the accuracy (or F1) the search races to, between 0 and 1" in capsys.readouterr().err


def test_the_axes_follow_what_this_machine_runs():
    names = lambda axes: [axis.name for axis in axes]  # noqa: E731
    assert names(quality.default_axes(BASE, bf16_native=False, ort_available=False)) == [
        "batch_size", "learning_rate", "freeze_embeddings", "dropout"]
    axes = quality.default_axes(BASE, bf16_native=True, ort_available=True)
    assert names(axes) == ["batch_size", "learning_rate", "engine", "freeze_embeddings", "dropout"]
    # engine and precision are one axis of the pairs a run can take: separately a trial drew ORT in bf16 on a CPU,
    # a run validation refuses, and the whole race ended on its ConfigError
    from ortnb.hardware import capabilities

    expected = ("eager no", "eager bf16", "ort no") + (("ort bf16",) if capabilities().cuda else ())
    assert axes[2].choices == expected
    assert quality.expand({"engine": "ort no", "batch_size": 8}) == {"batch_size": 8, "backend": "ort",
                                                                     "precision": "no"}
    assert quality.expand({"precision": "bf16"}) == {"precision": "bf16"}  # a study from before: as it was
    rate = axes[1]
    assert (rate.low, rate.high) == pytest.approx((5e-5 / 3, 3e-4))  # around the base's rate, log-uniform


def test_progress_is_heard_per_trial_and_stop_ends_the_search_keeping_what_ended(tmp_path):
    import threading

    stop, heard = threading.Event(), []

    def on_progress(event):
        heard.append((event["trial"], event["of"], event["best"] and event["best"]["seconds_to_target"]))
        if event["trial"] == 3:
            stop.set()  # Stop pressed while the third trial trains

    def train(config, report):
        report(1, 50.0)  # the third trial's report meets the stop
        return 20.0, True, "pytorch"

    found = quality.search(BASE, 0.8, trials=6, storage=tmp_path / "s.db", runs_dir=tmp_path,
                           axes=[quality.Axis("batch_size", (16, 32))], train=train, on_progress=on_progress,
                           stop=stop)
    assert heard == [(1, 6, None), (2, 6, 20.0), (3, 6, 20.0)]
    states = [t.state.name for t in found.study.trials]
    assert states == ["COMPLETE", "COMPLETE", "FAIL"] and found.best["seconds_to_target"] == 20.0


def test_a_rung_reads_an_evaluation_or_a_screen_and_nothing_else():
    from ortnb.tuning.quality import rung_value

    assert rung_value({"event": "eval", "step": 32, "accuracy": 0.71, "f1": 0.6}, "accuracy") == 0.71
    assert rung_value({"event": "eval", "step": 32, "accuracy": 0.71, "f1": 0.6}, "f1") == 0.6
    assert rung_value({"event": "screen", "step": 32, "value": 0.74, "metric": "accuracy"}, "accuracy") == 0.74
    assert rung_value({"event": "eval", "step": 32, "accuracy": None}, "accuracy") is None
    assert rung_value({"kind": "step", "step": 32, "loss": 0.3}, "accuracy") is None
    assert rung_value({"event": "schedule", "decay_step": 40}, "accuracy") is None

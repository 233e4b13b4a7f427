"""The Dashboard's fine-tuning half on exact values: the form reads what is typed, uploads are checked and
stored, the held-out panel and the card say how good the model got, Try it answers (no browser, no training)."""

from __future__ import annotations

import pytest

from ortnb import charts
from ortnb.config import RunConfig
from ortnb.display import Throttle
from ortnb.ui import form, present, quality, upload
from ortnb.ui.live import eval_record
from ortnb.ui.state import DashboardState

from .._helpers import CPU, EVALS, FakeClock, FakeRun


# -- the form ------------------------------------------------------------------------------------


def test_learning_rate_is_exact_and_a_typing_slip_is_a_problem_under_its_field():
    base = RunConfig(model="tiny-bert", learning_rate=5e-5)
    values = form.form_values(base)
    assert values["learning_rate"] == "5e-05" and form.config_from_form(values, base).learning_rate == 5e-5
    reading = form.read_form({**values, "learning_rate": "3e-5"}, base)
    assert reading.config.learning_rate == 3e-5 and reading.problems == []  # not 3.0118723362727227e-05
    reading = form.read_form({**values, "learning_rate": "3e-5x"}, base)
    assert [(p.field, p.message) for p in reading.problems] == [
        ("learning_rate", "'3e-5x' is not a number; type one such as 5e-5.")]
    assert reading.config.learning_rate == 5e-5  # the base's value stays until the field reads


def test_train_for_steps_or_epochs_and_blank_fields_mean_automatic():
    base = RunConfig(model="tiny-bert")
    values = form.form_values(base)
    assert (values["length"], values["length_unit"]) == ("60", "steps")  # max_steps None: the default 60
    assert form.config_from_form(values, base).max_steps is None  # unchanged stays automatic
    config = form.config_from_form({**values, "length": "1.5", "length_unit": "epochs"}, base)
    assert (config.max_steps, config.epochs) == (None, 1.5)
    reading = form.read_form({**values, "length": "ten"}, base)
    assert reading.problems[0].field == "max_steps" and "is not a whole number of steps" in reading.problems[0].message
    assert form.problems_by_control(reading.problems, {"length"}) == {
        "length": ["'ten' is not a whole number of steps such as 60."]}
    config = form.config_from_form({**values, "eval_every": "20", "early_stopping_patience": "2", "target": "0.8"},
                                   base)
    assert (config.eval_every, config.early_stopping_patience, config.target) == (20, 2, 0.8)
    off = form.config_from_form({**values, "evaluate": False, "eval_every": "20"}, base)
    assert off.evaluate is False and off.eval_every is None  # moot without evaluation
    assert {"eval_every", "metric", "target"} <= form.moot_fields(off)


def test_an_in_memory_dataset_is_named_in_the_form_and_runs_as_itself():
    from datasets import Dataset

    rows = Dataset.from_dict({"text": ["good", "bad", "fine"], "label": [1, 0, 1]})
    base = RunConfig(model="tiny-bert", dataset=rows)
    values = form.form_values(base)
    assert values["dataset"] == "in-memory Dataset (3 rows)"
    assert form.config_from_form(values, base, {"in-memory Dataset (3 rows)": rows}).dataset is rows


def test_form_messages_use_the_forms_words():
    assert form.humanize("eval_every=None with max_steps 10") == "evaluate every blank with steps 10"
    assert form.humanize("evaluate=False: seq_len 32") == "evaluate off: sequence length 32"
    assert form.humanize("budget_s=5 is too small; give budget_s >= 40") == (
        "a budget of 5 s is too small; give budget (s) >= 40")  # as the Find-fastest field says it


def test_a_number_out_of_range_is_kept_as_typed_and_named_in_the_forms_words():
    from ortnb.validation import validate


    base = RunConfig(model="tiny-bert", backend="eager")
    values = form.form_values(base)
    assert (values["batch_size"], values["seq_len"]) == ("16", "128")  # typed fields, as the form shows them
    reading = form.read_form({**values, "batch_size": "0", "seq_len": "5"}, base)
    assert (reading.config.batch_size, reading.config.seq_len) == (0, 5) and reading.problems == []  # not 1 and 8
    assert form.problem_lines(validate(reading.config, CPU)) == [
        "batch size: 0 is below 1; use 1 or more.", "sequence length: 5 is below 8; use 8 to 8192 tokens."]
    reading = form.read_form({**values, "batch_size": "1.5", "seq_len": ""}, base)
    assert form.problem_lines(reading.problems) == ["batch size: '1.5' is not a whole number; type one such as 16.",
                                                    "sequence length: is empty; type a value such as 128."]
    assert (reading.config.batch_size, reading.config.seq_len) == (16, 128)  # the base's until the fields read


def test_the_forms_problems_say_blank_where_the_config_says_none():
    from ortnb.validation import validate


    base = RunConfig(model="tiny-bert", backend="eager")
    values = form.form_values(base)

    def lines(**typed):
        reading = form.read_form({**values, **typed}, base)
        return form.problem_lines([*reading.problems, *validate(reading.config, CPU)])

    assert lines(threads="0") == ["threads: must be blank or >= 1, got 0."]
    assert lines(eval_every="0") == ["evaluate every: must be a number of steps >= 1, or blank for five evaluations "
                                     "spread over the run, got 0."]
    assert lines(early_stopping_patience="0") == ["early stopping: must be a number of evaluations >= 1, or blank, "
                                                  "got 0."]
    assert lines(eval_samples="-1") == ["held-out rows: must be a whole number >= 1 or blank, got -1."]
    assert lines(eval_dataset="rotten_tomatoes") == [
        "held-out data: rotten_tomatoes is a built-in training set; leave held-out data blank to use its own "
        "held-out split, or pass a file."]
    assert lines(report_to="none") == ["report to: report to='none': name the trackers (tensorboard, mlflow, wandb), "
                                       "or blank for none."]
    reading = form.read_form({**values, "threads": "0"}, base)
    assert form.problems_by_control(validate(reading.config, CPU), {"threads"}) == {
        "threads": ["must be blank or >= 1, got 0."]}
    assert "None" not in form.problems_html(validate(reading.config, CPU))
    assert form.humanize("TypeError: got None") == "TypeError: got None"  # a run's own error keeps Python's word


# -- uploads -------------------------------------------------------------------------------------


def test_uploads_are_checked_then_stored_without_overwriting(tmp_path):
    assert upload.check("rows.xlsx", b"x") == "rows.xlsx is a .xlsx file; upload a .csv, .json, .jsonl or .txt file."
    assert "uploads take at most 0.001 MB" in upload.check("rows.csv", b"x" * 2000, limit_mb=0.001)
    assert "UTF-8" in upload.check("rows.csv", "text,label\ncafé,1\n".encode("latin-1"))
    first = upload.store("../../evil name.csv", b"text,label\ngood,1\n", tmp_path)
    assert first.problem is None and first.path == str(tmp_path / "uploads" / "evil_name.csv")
    again = upload.store("evil name.csv", b"text,label\ngood,1\n", tmp_path)
    assert again.path == first.path and again.kept
    other = upload.store("evil name.csv", b"text,label\nbad,0\n", tmp_path)
    assert other.path == str(tmp_path / "uploads" / "evil_name-2.csv") and not other.kept
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == ["evil_name-2.csv", "evil_name.csv"]


# -- the held-out panel --------------------------------------------------------------------------


def test_eval_series_put_the_held_out_loss_on_the_loss_panel_and_the_metric_in_percent():
    series = charts.eval_series(EVALS)
    assert series == {"loss:eval": ([0, 20], [1.1, 0.7]), "eval_metric": ([0, 20], [31.0, 75.0])}
    assert charts.eval_title("accuracy") == "held-out accuracy (%)" and charts.eval_title("loss") == "held-out loss"
    chart = charts.LiveChart()
    chart.add_run("a", "ort + AdamW")
    new, _ = chart.updates("a", EVALS, "onnxruntime")
    held_out = [t for t in new if t["name"].endswith("held-out")]
    assert [(t["row"], t["col"], t["line"]["dash"]) for t in held_out] == [(1, 2, "dash"), (3, 1, "dash")]
    assert charts.panel_position("eval_metric") == (3, 1)


def test_the_held_out_panel_says_why_it_is_empty_and_draws_the_target():
    assert charts.eval_hint(RunConfig(evaluate=False), []).startswith("Evaluation is off for this run")
    assert charts.eval_hint(RunConfig(), []).startswith("The held-out metric appears here")
    assert charts.eval_hint(RunConfig(), EVALS) is None
    layout = charts.live_layout(2, empty=False, target=0.83, metric="accuracy")
    target = [s for s in layout["shapes"] if s.get("name") == "target"]
    assert [(s["y0"], s["yref"]) for s in target] == [(83.0, "y5")]
    assert layout["eval_title"] == "held-out accuracy (%)"
    figure = charts.live_figure()
    charts.set_live_layout(figure, 2, empty=False, target=0.83, metric="accuracy")
    assert [a.text for a in charts.subplot_titles(figure)][4:] == ["held-out accuracy (%)", "learning rate"]


def test_the_live_hint_follows_the_run():
    state = DashboardState()
    assert present.live_hint(None).startswith("Press Run")
    state.start("/runs/a", RunConfig(), now=0.0)
    state.observe("/runs/a", status="running", now=1.0,
                  records=[{"kind": "event", "event": "phase", "phase": "ONNX export", "time": 1.0}])
    assert present.live_hint(state.latest) == "ONNX export…: the charts start at the first step"
    state.observe("/runs/a", status="failed", records=[], now=2.0, error="boom")
    assert present.live_hint(state.latest) == "The run failed before its first step: the status above says why"


def test_trainer_eval_logs_become_eval_records():
    record = eval_record(10, {"eval_loss": 0.5, "eval_accuracy": 0.8, "epoch": 1.0})
    assert isinstance(record.pop("time"), float)  # an event as a run's worker writes it (records.evaluation)
    assert record == {"kind": "event", "event": "eval", "step": 10, "eval_loss": 0.5, "accuracy": 0.8,
                      "metric": "accuracy"}
    assert eval_record(10, {"eval_loss": 0.5}, "eval_loss")["metric"] == "loss"
    assert eval_record(10, {"eval_loss": 0.5, "eval_f1": 0.6, "eval_accuracy": 0.7}, "f1")["metric"] == "f1"


# -- the card ------------------------------------------------------------------------------------


def test_the_card_names_the_best_held_out_value_its_step_time_target_and_notes():
    state = DashboardState()
    state.start("/runs/a", RunConfig(max_steps=40), now=0.0)
    summary = {"eval_metric": "accuracy", "best_value": 0.8125, "best_step": 20, "best_reached_s": 72.0,
               "best_eval_loss": 0.41234, "last_eval_step": 20, "eval_loss": 0.41234, "target": 0.8, "reached_target": True, "target_step": 20, "target_reached_s": 72.0,
               "notes": ["new 3-class head; the saved 2-class head is not used"], "samples_per_s": None,
               "eval_evaluations": 2, "eval_total_s": 13.4}
    state.observe("/runs/a", status="completed", records=[], now=80.0, summary=summary)
    items = dict(present.summary_items(state.latest))
    assert items["best held-out accuracy"] == "0.812 at step 20 (1:12)"  # not "accuracy accuracy 0.812"
    assert items["evaluating"] == "2 evaluations in 0:13"  # their seconds, apart from training's
    assert items["its held-out loss"] == "0.4123" and items["target"] == "reached 0.8 at step 20 (1:12)"
    assert "last evaluation" not in items  # the best is the last: said once
    assert present.card_notes(state.latest) == ["new 3-class head; the saved 2-class head is not used"]
    assert "new 3-class head" in present.summary_card_html(state.latest)
    stopped = {"eval_metric": "loss", "best_value": 0.5, "best_step": 10, "early_stopped": True, "last_eval_step": 30,
               "eval_loss": 0.55, "early_stop": "no better eval loss in 2 evaluations since step 10",
               "kept": "best/ (step 10, eval loss 0.5): load_model(), Try it and export use it; resume from checkpoint-30",
               "contended": True, "contended_share": 0.42}
    state.start("/runs/b", RunConfig(max_steps=40), now=100.0)
    state.observe("/runs/b", status="stopped", records=[], now=130.0, summary=stopped)
    items = dict(present.summary_items(state.latest))
    assert items["best held-out eval loss"] == "0.5 at step 10" and "its held-out loss" not in items
    assert items["last evaluation"] == "eval loss 0.55 at step 30"  # the best is not the last: both, each named
    assert items["stopped early"] == "no better eval loss in 2 evaluations since step 10"
    assert items["kept"].startswith("best/ (step 10, eval loss 0.5): load_model(), Try it and export use it")
    assert present.card_notes(state.latest)[0].startswith("measured while other processes used the CPU (42%)")


def test_an_mfu_above_the_peak_is_named_as_an_error_not_a_value():
    state = DashboardState()
    state.start("/runs/a", RunConfig(), now=0.0)
    state.observe("/runs/a", status="completed", records=[], now=1.0,
                  summary={"mfu": None, "mfu_error": "a step reached 101% of the measured peak"})
    assert dict(present.summary_items(state.latest))["MFU"] == "– (a step reached 101% of the measured peak)"


# -- Try it --------------------------------------------------------------------------------------


def test_confusion_matrix_cells_are_counts_with_their_share_of_the_row():
    best_then_worse = [{"kind": "event", "event": "eval", "step": 16, "accuracy": 0.9, "best": True},
                       {"kind": "event", "event": "eval", "step": 40, "accuracy": 0.8, "best": False}]
    assert quality.tried_evaluation(best_then_worse)["step"] == 16  # the weights best/ holds, not the last's
    assert quality.tried_evaluation(best_then_worse[1:])["step"] == 40  # nothing marked best: the last
    names = quality.class_names(EVALS, 3)
    assert names == ["neg", "neu", "pos"] and quality.class_names(EVALS, 2) == ["0", "1"]
    data = charts.confusion_data([[8, 2], [0, 0]], ["<neg>", "pos"])
    assert data == {"z": [[0.8, 0.2], [0.0, 0.0]], "text": [["8<br>80%", "2<br>20%"], ["0<br>0%", "0<br>0%"]],
                    "x": ["&lt;neg&gt;", "pos"], "y": ["&lt;neg&gt;", "pos"]}
    figure = charts.confusion_figure(EVALS[-1]["confusion"], names, 20)
    assert figure.layout.title.text.startswith("Confusion matrix at step 20")
    assert list(figure.data[0].text[1]) == ["2<br>20%", "5<br>50%", "3<br>30%"] and figure.layout.yaxis.autorange == "reversed"
    wrong = quality.wrong_html(EVALS[-1]["wrong"])
    assert "&lt;b&gt;fine&lt;/b&gt; I guess" in wrong and "93%" in wrong  # the text is escaped


def test_a_prediction_lists_every_class_most_likely_first():
    shown = quality.prediction_html("great film", {"label": "pos", "probabilities": {"neg": 0.1, "pos": 0.9}},
                                    "the best evaluation (step 20, accuracy 0.812)")
    assert shown.index("pos") < shown.index("neg") and "90.0%" in shown and "10.0%" in shown
    assert "the best evaluation (step 20" in shown


class TriedRun(FakeRun):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = []

    def predict(self, texts, which="best"):
        self.asked.extend(texts)
        return [{"label": "pos", "probabilities": {"neg": 0.25, "pos": 0.75}} for _ in texts]

    def model_folder(self, which="best"):
        return self.run_dir, "the best evaluation (step 20, accuracy 0.75)"


@pytest.fixture
def dashboard(monkeypatch):
    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    import ortnb

    board = ortnb.Dashboard(ortnb.RunConfig(model="tiny-bert"), throttle=Throttle(0.5, FakeClock()), start=False)
    yield board
    board.close()


def test_try_it_answers_with_the_runs_best_model_and_shows_its_last_evaluation(dashboard):
    run = TriedRun(list(EVALS), status="running", run_dir="/runs/a")
    dashboard.track(run)
    dashboard.refresh(force=True)
    assert "is training: try its model once it has ended" in dashboard.try_it.hint.value
    assert dashboard.try_it.try_text("great") .startswith('<div class="ortnb-try-error"')
    run._status = "completed"
    dashboard.refresh(force=True)
    assert dashboard.try_it.hint.value == "" and "Most confidently wrong" in dashboard.try_it.evaluation.value
    heatmap = dashboard.try_it.confusion
    assert len(heatmap.widget.outputs) == 1  # one figure in the tab, drawn by JupyterLab's plotly renderer
    assert heatmap.layout.title.text.startswith("Confusion matrix at step 20") and heatmap.data[0].z[2][2] == 1.0
    dashboard.try_it.text.value = "a great film"
    dashboard.try_it.button.click()
    assert run.asked == ["a great film"] and "75.0%" in dashboard.try_it.answer.value
    # the held-out panel has its two points and the held-out loss is on the loss panel
    names = [t.name for t in dashboard.figure.data]
    assert names.count("ort + AdamW [engine ?] held-out") == 2


def test_run_brings_the_live_tab_forward_and_a_dataset_argument_fills_the_form(monkeypatch, tmp_path):
    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    import ortnb
    from ortnb.ui import dashboard as dashboard_module

    data = tmp_path / "rows.csv"
    data.write_text("text,label\n" + "".join(f"text {i},{'pos' if i % 2 else 'neg'}\n" for i in range(40)))
    board = ortnb.Dashboard(ortnb.RunConfig(model="tiny-bert", max_steps=10), dataset=str(data),
                            throttle=Throttle(0.5, FakeClock()), start=False)
    try:
        assert board.panel.controls["dataset"].value == str(data) and board.panel.config.dataset == str(data)
        started = []
        monkeypatch.setattr(dashboard_module, "launch",
                            lambda config, warm: started.append((config, warm)) or FakeRun([], run_dir=str(tmp_path / "r")))
        board.tabs.selected_index = 1
        assert board.run() is not None and board.tabs.selected_index == 0
        assert started[0][0].dataset == str(data)
        assert started[0][1] is True  # the Dashboard's runs train in the session's warm worker where they can
    finally:
        board.close()


def test_the_form_never_changes_a_number_silently(dashboard):
    panel = dashboard.panel
    panel.controls["batch_size"].value = "0"
    assert panel.config.batch_size == 0  # a bounded box made it 1 without a word
    assert panel.field_problems["batch_size"].value == (
        '<div class="ortnb-field-problem">0 is below 1; use 1 or more.</div>')
    assert dashboard.buttons["Run"].disabled
    assert dashboard.run() is None and "batch size: 0 is below 1; use 1 or more." in dashboard.status.value
    too_many = max(2, panel.controls["num_processes"].max) + 2
    panel.set_config(RunConfig(model="tiny-bert", batch_size=0, seq_len=5, num_processes=too_many))
    config = panel.config
    assert (config.batch_size, config.seq_len, config.num_processes) == (0, 5, too_many)  # shown as given
    assert "5 is below 8; use 8 to 8192 tokens." in panel.field_problems["seq_len"].value
    assert dashboard.buttons["Run"].disabled


def test_a_typing_slip_in_the_form_keeps_run_disabled_and_says_where(dashboard):
    dashboard.panel.controls["learning_rate"].value = "fast"
    assert "is not a number" in dashboard.panel.field_problems["learning_rate"].value
    assert dashboard.buttons["Run"].disabled
    assert dashboard.run() is None and "learning rate" in dashboard.status.value

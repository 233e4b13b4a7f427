"""The UI's pure parts on exact values, and the widgets driven without a browser."""

from __future__ import annotations

import pandas as pd
import pytest

from ortnb import charts
from ortnb.config import RunConfig
from ortnb.display import Throttle
from ortnb.errors import OrtnbWarning
from ortnb.ui import form

from .._helpers import CPU, FakeClock, FakeRun

STEPS = [
    {"kind": "step", "step": 1, "samples_per_s": 10.0, "loss": 0.7, "peak_rss_mb": [500.0, 510.0], "mfu": 0.02},
    {"kind": "event", "event": "engine", "engine": "onnxruntime"},
    {"kind": "step", "step": 2, "samples_per_s": 20.0, "loss": 0.6, "peak_rss_mb": [505.0, 512.0], "mfu": 0.04},
]


def test_step_series_per_panel_and_rank():
    series = charts.step_series(STEPS)
    assert series["samples_per_s"] == ([1, 2], [10.0, 20.0])
    assert series["loss"] == ([1, 2], [0.7, 0.6])
    assert series["mfu"] == ([1, 2], [2.0, 4.0])  # percent
    assert series["peak_rss_mb:rank0"] == ([1, 2], [500.0, 505.0])
    assert series["peak_rss_mb:rank1"] == ([1, 2], [510.0, 512.0])


def test_live_chart_adds_then_updates_traces_with_the_engine_in_the_legend():
    chart = charts.LiveChart()
    chart.add_run("a", "ort + AdamW")
    chart.add_run("b", "eager + AdamW")
    new, changed = chart.updates("a", STEPS[:1], None)
    assert [t["name"] for t in new if t["showlegend"]] == ["ort + AdamW [engine ?]"]
    # the 2x2 grid, the held-out panel (empty until the first evaluation) and the learning rate: plotly.js drops a
    # panel without a trace, and an update naming its axes was then refused whole
    assert {(t["row"], t["col"]) for t in new} == {(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)} and changed == []
    assert [(t["x"], t["name"]) for t in new if (t["row"], t["col"]) == (3, 1)] == [([], "ort + AdamW [engine ?] held-out")]
    new, changed = chart.updates("a", STEPS, "onnxruntime")
    assert new == [] and len(changed) == 7
    assert changed[0] == {"index": 0, "x": [1, 2], "y": [10.0, 20.0], "name": "ort + AdamW [onnxruntime]",
                          "legendgroup": "a", "showlegend": True, "line": {"color": charts.PALETTE[0],
                                                                            "dash": "solid"}}
    assert chart.runs["b"]["colour"] == charts.PALETTE[1]  # several runs, distinct colours


def test_comparison_bars_write_the_speedup_on_each_bar():
    table = pd.DataFrame({"label": ["eager + AdamW", "<a href='x'>ort</a>"], "engine": ["pytorch", "onnxruntime"],
                          "samples_per_s": [40.0, 60.0], "spread": [2.0, 4.0], "p25": [39.0, 50.0],
                          "p75": [41.0, 61.0], "speedup": [1.0, 1.5],
                          "verdict": ["baseline", "1.50x, not conclusive: this run is noisy"]})
    bars = charts.comparison_bars(charts.bars_from_table(table))
    # the speed-up sits under the bar (error bars crossed it on the bar); a name's tags are text, not links;
    # the error bar is p25 to p75 as it is: 10 below a median of 60, 1 above
    assert bars == {"x": ["eager + AdamW<br>[pytorch]<br><b>baseline</b>",
                          "&lt;a href='x'&gt;ort&lt;/a&gt;<br>[onnxruntime]<br><b>1.50x</b><br>not conclusive"],
                    "y": [40.0, 60.0], "text": ["baseline", "1.50x, not conclusive: this run is noisy"], "error_y": [1.0, 1.0], "error_y_minus": [1.0, 10.0],
                    "colours": charts.PALETTE[:2], "patterns": ["", ""]}


def test_warmup_band_on_every_panel_and_a_hint_while_empty():
    assert [a["text"] for a in charts.live_layout(5, empty=True)["annotations"]] == [charts.EMPTY_HINT]
    shapes = charts.live_layout(5, empty=False)["shapes"]
    assert [(s["xref"], s["x0"], s["x1"]) for s in shapes] == [("x", 0.5, 5.5), ("x2", 0.5, 5.5), ("x3", 0.5, 5.5),
                                                               ("x4", 0.5, 5.5)]
    figure = charts.live_figure()
    assert figure.layout.width is None and figure.layout.autosize is True  # follows its container
    xs = [figure.layout[name] for name in figure.layout if name.startswith("xaxis")]
    ys = [figure.layout[name] for name in figure.layout if name.startswith("yaxis")]
    assert len(xs) == len(ys) == 6  # empty: every panel in one frame, not plotly's guess per panel
    assert {tuple(a.range) for a in xs} == {(0, 10)} and {tuple(a.range) for a in ys} == {(0, 1)}
    charts.set_live_layout(figure, 5, empty=False)
    assert all(figure.layout[n].autorange is True for n in figure.layout if n[1:5] == "axis")  # data: each fits


def test_compare_table_ratios_and_engines():
    from ortnb.comparison import table

    runs = [[{"label": "base", "status": "completed", "engine": "pytorch", "samples_per_s": 40.0,
              "samples_per_s_iqr": 2.0, "peak_rss_mb": 900.0, "optimizer_state_mb": 80.0, "final_loss": 0.5,
              "mfu": 0.1, "steps_measured": 20}],
            [{"label": "ort", "status": "completed", "engine": "onnxruntime", "samples_per_s": 56.0,
              "samples_per_s_iqr": 3.0, "peak_rss_mb": 1000.0, "optimizer_state_mb": 80.0, "final_loss": 0.5,
              "mfu": 0.14, "steps_measured": 20},
             {"label": "ort", "status": "completed", "engine": "onnxruntime", "samples_per_s": 60.0,
              "samples_per_s_iqr": 5.0, "peak_rss_mb": 1000.0, "optimizer_state_mb": 80.0, "final_loss": 0.5,
              "mfu": 0.15, "steps_measured": 20}]]
    result = table(runs)
    assert list(result["speedup"]) == [1.0, 58.0 / 40.0] and list(result["runs"]) == [1, 2]
    assert list(result["engine"]) == ["pytorch", "onnxruntime"] and list(result["verdict"]) == ["baseline", "1.45x"]


def test_form_round_trip_and_zero1_toggle():
    cfg = RunConfig(model="minilm", backend="eager", precision="bf16", num_processes=2, zero_stage=1, seq_len=64)
    values = form.form_values(cfg)
    assert values["zero1"] is True and values["precision"] == "bf16" and "zero_stage" not in values
    assert form.config_from_form(values, cfg) == cfg
    assert form.config_from_form({**values, "zero1": False}, cfg).zero_stage == 0
    assert form.config_from_form({**values, "backend": "ort"}, cfg).backend == "ort"


def test_disabled_states_come_from_validate():
    from ortnb.validation import choices

    table = choices(RunConfig(model="tiny-bert"), CPU)
    tooltips = form.option_tooltips(table)
    assert tooltips["backend"] == ["PyTorch (eager)", "ONNX Runtime", "torch.compile"]
    assert tooltips["precision"][0] == "fp32"
    assert tooltips["precision"][1].startswith("unavailable here: bf16 with ONNX Runtime needs the CUDA")
    assert form.unavailable(table)["optim"] == ["adamw_ort_fused"]
    assert form.unavailable(table)["zero_stage"] == [1, 2]


def test_problems_html_names_field_and_fix():
    from ortnb.validation import Problem

    assert "ready to run" in form.problems_html([])
    text = form.problems_html([Problem("precision", "bf16 with backend='ort' needs ...")])
    assert "<b>precision</b>: bf16 with ONNX Runtime needs" in text  # the form's words, not field values


def test_throttle_with_an_injected_clock():
    clock = FakeClock()
    throttle = Throttle(0.5, clock)
    assert throttle.ready() and not throttle.ready()
    clock.now += 0.49
    assert not throttle.ready()
    clock.now += 0.02
    assert throttle.ready()


@pytest.fixture
def widget_dashboard(monkeypatch):
    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    import ortnb

    clock = FakeClock()
    # ortnb's library defaults (ORT, fp32): Dashboard() alone starts from this machine's choice (test below)
    dashboard = ortnb.Dashboard(ortnb.RunConfig(), throttle=Throttle(0.5, clock), start=False)
    yield dashboard, clock
    dashboard.close()


def test_without_settings_the_form_starts_from_this_machines_choice_says_why_and_the_card_repeats_it(monkeypatch):
    monkeypatch.setenv("ORTNB_WIDGETS", "1")
    import ortnb
    from ortnb.tuning import defaults
    from ortnb.ui import dashboard as dashboard_module

    choice = defaults.EngineChoice("eager", "bf16", "eager bf16: this CPU has bf16 units and ONNX Runtime's CPU "
                                                    "provider has no bf16 MatMul")
    monkeypatch.setattr(defaults, "choose", lambda model, dataset: choice)
    dashboard = ortnb.Dashboard(throttle=Throttle(0.5, FakeClock()), start=False)
    try:
        assert (dashboard.panel.config.backend, dashboard.panel.config.precision) == ("eager", "bf16")
        assert "Chosen for this machine: eager bf16: this CPU has bf16 units" in dashboard.panel.choice_note.value
        launched = []

        def fake_launch(config, warm):
            launched.append(config)
            run = FakeRun(list(STEPS))
            run.config = config
            return run

        monkeypatch.setattr(dashboard_module, "launch", fake_launch)
        run = dashboard.run()
        assert (launched[0].backend, launched[0].precision) == ("eager", "bf16")
        assert dashboard.state.runs[str(run.run_dir)].engine_note == defaults.choice_text(choice)
        dashboard.panel.controls["backend"].value = "ort"  # one toggle: the note says what the choice was
        dashboard.panel.controls["precision"].value = "no"
        assert "This machine's choice is eager bf16" in dashboard.panel.choice_note.value
        assert "the form now runs ORT fp32" in dashboard.panel.choice_note.value
    finally:
        dashboard.close()
    given = ortnb.Dashboard(ortnb.RunConfig(), throttle=Throttle(0.5, FakeClock()), start=False)
    try:  # settings given: nothing chosen, nothing said
        assert given.engine_choice is None and given.panel.choice_note.value == ""
    finally:
        given.close()


def test_dashboard_redraws_at_most_twice_a_second_in_batches(widget_dashboard):
    dashboard, clock = widget_dashboard
    run = FakeRun(list(STEPS[:1]))
    dashboard.track(run)
    clock.now += 0.5
    assert dashboard.refresh() is True
    assert len(dashboard.figure.data) == 7 and list(dashboard.figure.data[0].y) == [10.0]
    assert dashboard.refresh() is False  # no news
    run._records = list(STEPS)
    assert dashboard.refresh() is False  # news, but within 0.5 s of the last redraw
    clock.now += 0.5
    assert dashboard.refresh() is True
    assert list(dashboard.figure.data[0].y) == [10.0, 20.0]
    assert dashboard.figure.data[0].name == "ort + AdamW [onnxruntime]"
    assert "step 2/10" in dashboard.progress_text.value
    # one step count on screen while it trains: the status line (a separate widget, updated by its own message)
    # once showed a step behind the progress line
    assert "ort + AdamW: running<" in dashboard.status.value


def test_failed_run_shows_failed_with_the_error_and_the_panel_stays_usable(widget_dashboard):
    dashboard, _ = widget_dashboard
    run = FakeRun(list(STEPS), status="failed")
    dashboard.track(run)
    dashboard.refresh(force=True)
    assert "failed" in dashboard.status.value and "RuntimeError: boom" in dashboard.status.value
    dashboard.panel.controls["backend"].value = "eager"
    assert dashboard.panel.config.backend == "eager"
    assert repr(dashboard) == "Dashboard(runs=1, status='ort + AdamW: failed (step 2/10) - RuntimeError: boom')"


def test_bad_form_shows_the_reason_instead_of_starting(widget_dashboard):
    dashboard, _ = widget_dashboard
    dashboard.panel.controls["precision"].value = "bf16"
    assert dashboard.buttons["Run"].disabled  # the flags under the form say why
    assert "<b>precision</b>: bf16 with ONNX Runtime needs the CUDA" in dashboard.panel.flags.value
    assert dashboard.run() is None and dashboard.runs == {}
    assert "cannot start: precision: bf16 with ONNX Runtime needs the CUDA" in dashboard.status.value


def test_second_run_is_refused_while_one_trains_and_stop_reaches_it(widget_dashboard):
    dashboard, _ = widget_dashboard
    first = FakeRun([], run_dir="/runs/a")
    dashboard.track(first)
    assert dashboard.buttons["Run"].disabled and not dashboard.buttons["Stop"].disabled
    assert dashboard.run() is None and "one run at a time" in dashboard.status.value
    dashboard.stop()
    assert dashboard.state.runs["/runs/a"].stopping and dashboard.buttons["Stop"].disabled


def test_two_identical_runs_make_two_bars_and_a_table_row_can_go(widget_dashboard):
    dashboard, _ = widget_dashboard
    steps = [{"kind": "step", "step": n, "samples_per_s": 10.0 + n % 2, "step_time": 0.1, "loss": 0.5,
              "peak_rss_mb": [500.0]} for n in range(1, 11)]
    for name in ("/runs/a", "/runs/b"):
        dashboard.track(FakeRun(list(steps), status="completed", label="eager + AdamW", run_dir=name))
        dashboard.refresh(force=True)
        assert dashboard.add_to_comparison() is True
    bars = dashboard.comparison_figure.data[0]
    assert list(bars.x) == ["eager + AdamW<br>[none]<br><b>baseline</b>", "eager + AdamW #2<br>[none]<br><b>1.00x</b>"]
    assert list(bars.marker.color) == charts.PALETTE[:2]
    removes = [c for c in dashboard.table.children if "ortnb-remove" in c._dom_classes]
    assert len(removes) == 2
    removes[0].click()
    assert dashboard.state.compared == ["/runs/b"] and len(dashboard.comparison_figure.data[0].x) == 1


def test_without_widgets_one_warning_and_a_text_repr(monkeypatch):
    monkeypatch.setenv("ORTNB_WIDGETS", "0")
    import ortnb
    from ortnb import display

    monkeypatch.setattr(display, "_warned", False)
    with pytest.warns(OrtnbWarning, match="no widget frontend here"):
        dashboard = ortnb.Dashboard()
    assert repr(dashboard) == "Dashboard(runs=0, status='idle')"
    assert dashboard._repr_mimebundle_() == {"text/plain": "Dashboard(runs=0, status='idle')"}


@pytest.mark.ort  # trains with ORTTrainer in this process
def test_live_callback_in_text_mode_prints_progress(monkeypatch, tmp_path, capsys, bert, train_data):
    monkeypatch.setenv("ORTNB_WIDGETS", "0")
    monkeypatch.chdir(tmp_path)
    from ortnb import LiveCallback, ORTTrainer, ORTTrainingArguments, display

    monkeypatch.setattr(display, "_warned", False)
    callback = LiveCallback(label="tiny")
    args = ORTTrainingArguments(output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=8,
                                logging_steps=1, report_to=[], disable_tqdm=True, save_strategy="no")
    with pytest.warns(OrtnbWarning):
        ORTTrainer(model=bert, args=args, train_dataset=train_data, callbacks=[callback]).train()
    out = capsys.readouterr().out
    assert out.count("samples/s") == 3 and "chart written to" in out
    assert (tmp_path / "ortnb-run.html").exists()
    assert callback._engine == "onnxruntime" and repr(callback) == "LiveCallback(steps=3)"


def test_find_fastest_fills_the_table_and_load_winner_fills_the_form(widget_dashboard, monkeypatch):
    from types import SimpleNamespace

    import ortnb.tuning

    dashboard, _ = widget_dashboard
    winner = RunConfig(model="minilm", backend="ort", optim="adamw_torch_fused", batch_size=32, padding="longest",
                       length_grouping=True, max_steps=6)
    table = pd.DataFrame([{"rank": 1, "label": winner.label, "status": "completed", "samples_per_s": 40.5},
                          {"rank": None, "label": "ort + AdamW + bf16", "status": "refused",
                           "reason": "bf16 with backend='ort' needs the CUDA execution provider"}])
    asked = {}

    def fake_tune(model, dataset, budget_s, base, stop, on_progress, include_base):
        asked.update(model=model, dataset=dataset, budget_s=budget_s, include_base=include_base)
        on_progress({"candidate": 1, "of": 2, "elapsed_s": 3.0, "best": None})
        return SimpleNamespace(table=table, best=winner, conclusive=True)

    monkeypatch.setattr(ortnb.tuning, "tune", fake_tune)
    dashboard.budget.value = 45
    dashboard.find_fastest(wait=True)
    # the form's own settings are measured too: every speed-up is over them
    assert asked == {"model": "minilm", "dataset": "rotten_tomatoes", "budget_s": 45.0, "include_base": True}
    assert "Find fastest: every candidate" in dashboard.search_table.value
    assert "needs the CUDA execution provider" in dashboard.search_table.value
    assert not dashboard.buttons["Load winner"].disabled and dashboard.tabs.selected_index == 1
    dashboard.panel.controls["length"].value = "300"
    dashboard.buttons["Load winner"].click()
    config = dashboard.panel.config
    assert (config.backend, config.optim, config.batch_size, config.max_steps) == ("ort", "adamw_torch_fused", 32, 300)
    assert config.padding == "longest" and config.length_grouping is True


def test_with_a_target_in_the_form_find_fastest_races_to_it_and_load_winner_takes_the_raced_settings(
        widget_dashboard, monkeypatch, tmp_path):
    pytest.importorskip("optuna")
    import ortnb.tuning.quality as quality

    dashboard, _ = widget_dashboard
    real_search, asked = quality.search, {}

    def train(config, report):  # a stand-in for the runs: batch 32 at 2e-4 reaches the target soonest
        report(1, 90.0)
        return 60.0 * (2e-4 / config.learning_rate) ** 0.5 * (32 / config.batch_size), True, "pytorch"

    def search(base, target, **options):
        asked.update(target=target, timeout_s=options["timeout_s"], base_target=base.target)
        return real_search(base, target, trials=6, storage=tmp_path / "s.db", runs_dir=tmp_path, train=train,
                           axes=[quality.Axis("batch_size", (16, 32)), quality.Axis("learning_rate", (1e-4, 2e-4))],
                           on_progress=options["on_progress"], stop=options["stop"], timeout_s=options["timeout_s"])

    monkeypatch.setattr(quality, "search", search)
    dashboard.panel.set_config(dashboard.panel.config.replace(target=0.8))
    dashboard.budget.value = 60
    dashboard.find_fastest(wait=True)
    assert asked == {"target": 0.8, "timeout_s": 60.0, "base_target": None}  # the trials set the target themselves
    table = dashboard.search_table.value
    assert "Find fastest: every candidate, soonest to the target first" in table and "s to target" in table
    assert dashboard.search_figure.widget.outputs  # the study's optimisation history, drawn
    assert "reached the target" in dashboard.progress_text.value and dashboard.tabs.selected_index == 1
    dashboard.buttons["Load winner"].click()
    config = dashboard.panel.config
    assert (config.batch_size, config.learning_rate, config.target) == (32, 2e-4, 0.8)
    assert "the race chose its learning rate" in dashboard.status.value


def test_the_profile_button_profiles_the_form_beside_the_other_engine_and_fills_the_profile_tab(widget_dashboard,
                                                                                                monkeypatch):
    from types import SimpleNamespace

    import ortnb.profiling
    from ortnb.profiling import CATEGORIES, Profile

    dashboard, _ = widget_dashboard
    asked = []

    def fake_profile(configs, on_run):
        asked.extend(c.label for c in configs)
        for config in configs:
            on_run(SimpleNamespace(config=config, stop=lambda: None))
        rows = [{"label": c.label, "engine": e, "category": name, "ms_per_step": 1.0, "share": 1 / len(CATEGORIES)}
                for c, e in zip(configs, ("pytorch", "onnxruntime")) for name in CATEGORIES]
        top = [{"label": configs[1].label, "engine": "onnxruntime", "op": "FusedMatMul (/m)",
                "engine_of_op": "onnxruntime", "category": "matrix products", "ms_per_step": 1.0,
                "calls_per_step": 12.0, "shapes": [[16, 128, 384]]}]
        return Profile(pd.DataFrame(rows), pd.DataFrame(top), {c.label: 9.0 for c in configs},
                       {c.label: 8.5 for c in configs}, dict(zip((c.label for c in configs), ("pytorch", "onnxruntime"))))

    monkeypatch.setattr(ortnb.profiling, "profile", fake_profile)
    assert "Press Profile" in dashboard.profile_view.children[0].value
    dashboard.profile(wait=True)
    assert asked == ["eager + AdamW", "ort + AdamW"]  # the form's (ort by default) beside PyTorch's, PyTorch first
    shown, tables = dashboard.profile_view.children
    chart = dashboard.profile_tab.figure  # drawn by JupyterLab's plotly renderer from the Output's JSON
    assert shown is chart.widget and shown.outputs[0]["data"]["application/vnd.plotly.v1+json"]["data"][0]["x"] == [
        "eager + AdamW [pytorch]", "ort + AdamW [onnxruntime]"]
    assert [trace.name for trace in chart.data] == list(CATEGORIES)
    assert list(chart.data[0].x) == ["eager + AdamW [pytorch]", "ort + AdamW [onnxruntime]"]
    assert "FusedMatMul (/m)" in tables.value and "profiled 9.0 ms a step, 8.5 without the profiler" in tables.value
    assert dashboard.tabs.selected_index == 3 and dashboard.tabs.get_title(3) == "Profile"
    assert "Profile: done" in dashboard.progress_text.value
    assert "see the Profile tab" in dashboard.status.value
    dashboard.track(FakeRun(list(STEPS[:1])))  # while a run trains, Profile is refused and says why
    dashboard.render()
    assert dashboard.buttons["Profile"].disabled
    dashboard.profile(wait=True)
    assert "a run is training" in dashboard.status.value and len(asked) == 2


def test_the_learning_rate_schedule_is_chosen_in_more_settings(widget_dashboard):
    dashboard, _ = widget_dashboard
    control = dashboard.panel.controls["lr_schedule"]
    assert [label for label, _ in control.options] == ["linear decay (Trainer's)",
                                                       "warmup-stable-decay (near the target)"]
    assert control.value == "linear" and dashboard.panel.config.lr_schedule == "linear"
    control.value = "wsd"
    assert dashboard.panel.config.lr_schedule == "wsd" and dashboard.panel.config.label.endswith("+ WSD")
    dashboard.panel.set_config(dashboard.panel.config.replace(lr_schedule="linear"))
    assert control.value == "linear"

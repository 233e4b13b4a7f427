"""The Dashboard's pure model and what it shows, on exact values (no widgets, no processes, no clock)."""

from __future__ import annotations

import pytest

from ortnb import charts
from ortnb.config import RunConfig
from ortnb.ui import form, present
from ortnb.ui.state import DashboardState, unique_label
from ortnb.validation import Problem

EAGER = RunConfig(backend="eager", max_steps=30, warmup_steps=5)


def step(n, samples_per_s=10.0, step_time=0.5, loss=0.7):
    return {"kind": "step", "step": n, "samples_per_s": samples_per_s, "step_time": step_time, "loss": loss}


def summary(samples_per_s, spread=0.1, measured=20, engine="pytorch"):
    return {"samples_per_s": samples_per_s, "samples_per_s_iqr": spread, "steps_measured": measured,
            "engine": engine, "final_loss": 0.51234, "mfu": 0.4567, "peak_rss_mb": 1560.4,
            "tokens_per_s": 480.0, "real_tokens_per_s": 310.5,
            "optimizer_state_mb": 87.0, "first_step_s": 7.84, "run_dir": "/runs/x"}


def finished(state, run_id, config=EAGER, result=None, status="completed", now=10.0):
    state.start(run_id, config, now=0.0)
    state.observe(run_id, status=status, records=[step(1)], now=now, summary=result or summary(10.0))
    return state.runs[run_id]


def test_labels_are_unique_in_start_order():
    assert unique_label("eager + AdamW", []) == "eager + AdamW"
    assert unique_label("eager + AdamW", ["eager + AdamW"]) == "eager + AdamW #2"
    assert unique_label("eager + AdamW", ["eager + AdamW", "eager + AdamW #2"]) == "eager + AdamW #3"


def test_three_identical_runs_are_three_bars_with_their_own_colours():
    state = DashboardState()
    for index, speed in enumerate([2.97, 11.4, 11.4]):
        finished(state, f"/runs/{index}", result=summary(speed))
        assert state.add_to_comparison()
    rows = present.comparison_rows(state)
    assert [r["label"] for r in rows] == ["eager + AdamW", "eager + AdamW #2", "eager + AdamW #3"]
    bars = charts.comparison_bars(rows)
    assert bars["y"] == [2.97, 11.4, 11.4]
    assert len(set(bars["colours"])) == 3 and bars["colours"] == charts.PALETTE[:3]
    assert bars["text"] == ["baseline", "3.84x", "3.84x"]


def test_the_same_run_twice_is_refused():
    state = DashboardState()
    finished(state, "/runs/a")
    assert state.add_to_comparison() is True
    assert state.add_to_comparison() is False
    assert state.message.text == "eager + AdamW is already in the comparison" and state.message.level == "warning"
    assert state.compared == ["/runs/a"]
    assert state.buttons()["Add to comparison"] is False


def test_too_few_steps_are_marked_and_left_out_of_the_speedup():
    state = DashboardState()
    finished(state, "/runs/stopped", result=summary(3.0, spread=None, measured=2), status="stopped")
    finished(state, "/runs/a", result=summary(10.0))
    finished(state, "/runs/b", result=summary(15.0, spread=3.0))
    for run_id in state.runs:
        state.add_to_comparison(run_id)
    rows = present.comparison_rows(state)
    assert [r["too_few"] for r in rows] == [True, False, False]
    assert [r["speedup"] for r in rows] == [None, 1.0, 1.5]  # the first run with enough steps is the baseline
    assert [r["text"] for r in rows] == ["too few steps (2 measured)", "baseline",
                                         "1.50x, not conclusive: this run is noisy (spread 20% of its median, over 15%)"]
    assert [r["conclusive"] for r in rows] == [False, True, False]  # the judge compare and the report use
    assert charts.comparison_bars(rows)["patterns"] == ["/", "", ""]


def test_noise_warning_above_15_percent_of_the_median():
    state = DashboardState()
    finished(state, "/runs/a", result=summary(10.0, spread=1.5))
    finished(state, "/runs/b", result=summary(10.0, spread=1.51))
    for run_id in state.runs:
        state.add_to_comparison(run_id)
    assert [r["noisy"] for r in present.comparison_rows(state)] == [False, True]


def test_batches_of_varying_length_are_not_called_noisy_when_the_work_per_second_is_steady():
    state = DashboardState()
    steady = {**summary(10.0, spread=4.0), "tokens_per_s": 300.0, "tokens_per_s_iqr": 15.0}
    shaky = {**summary(10.0, spread=0.5), "tokens_per_s": 300.0, "tokens_per_s_iqr": 60.0}
    finished(state, "/runs/a", result=steady)
    finished(state, "/runs/b", result=shaky)
    for run_id in state.runs:
        state.add_to_comparison(run_id)
    assert [r["noisy"] for r in present.comparison_rows(state)] == [False, True]


def test_different_workloads_are_refused_with_the_reason():
    from ortnb.comparison import workload_problems

    state = DashboardState()
    finished(state, "/runs/a")
    finished(state, "/runs/b", config=EAGER.replace(seq_len=64))
    assert state.add_to_comparison("/runs/a", workload_problems)
    assert not state.add_to_comparison("/runs/b", workload_problems)
    assert state.message.level == "error" and state.message.text.startswith("seq_len differs")


def test_one_run_at_a_time_and_stop_reaches_every_active_run():
    state = DashboardState()
    state.start("/runs/a", EAGER, now=0.0)
    assert state.buttons() == {"Run": False, "Profile": False, "Find fastest": False, "Load winner": False,
                               "Stop": True, "Export": False, "Add to comparison": False, "Clear": False}
    assert "one run at a time" in state.why_run_is_disabled()
    with pytest.raises(RuntimeError, match="one run at a time"):
        state.start("/runs/b", EAGER, now=1.0)
    assert state.request_stop() == ["/runs/a"]
    assert state.request_stop() == []  # already stopping
    assert state.buttons()["Stop"] is False and "stopping eager + AdamW" in state.message.text
    state.observe("/runs/a", status="stopped", records=[], now=5.0, summary=summary(1.0, measured=0))
    assert state.message is None  # the stop message ends with the run
    assert state.buttons()["Run"] is True and state.buttons()["Export"] is True  # a stopped run keeps weights
    state.exporting = "/runs/a"  # an export is one thing at a time too
    assert not any(state.buttons()[name] for name in ("Run", "Profile", "Find fastest", "Export"))
    assert "ONNX export" in state.why_run_is_disabled()


def test_clear_never_orphans_a_running_run():
    state = DashboardState()
    finished(state, "/runs/done")
    state.add_to_comparison()
    state.start("/runs/live", EAGER, now=20.0)
    assert state.clear() == ["/runs/done"]
    assert list(state.runs) == ["/runs/live"] and state.compared == []
    assert state.buttons()["Stop"] is True
    # the run that stayed keeps its colour; the next run gets one never used before
    assert state.runs["/runs/live"].colour == charts.PALETTE[1]


def test_form_changes_clear_the_message_and_disable_run_when_invalid():
    state = DashboardState()
    state.say("cannot start: precision: ...", "error")
    state.form_changed(["precision: bf16 with ONNX Runtime needs ..."])
    assert state.message is None and state.buttons()["Run"] is False
    assert "cannot start" in state.why_run_is_disabled()


def test_progress_names_the_phase_then_counts_steps_with_an_eta():
    state = DashboardState()
    entry = state.start("/runs/a", EAGER, now=100.0)
    records = [{"kind": "event", "event": "started", "time": 1000.0},
               {"kind": "event", "event": "phase", "phase": "ONNX export", "time": 1003.0}]
    state.observe("/runs/a", status="running", records=records, now=104.0)
    shown = present.progress(entry, now=104.0, wall_clock=1005.0)
    assert shown.phase == "ONNX export" and shown.text == "ONNX export… (0:02) · 0:04 elapsed · step 0/30"
    records += [step(1, step_time=8.0), step(2, step_time=0.5), step(3, step_time=0.7), step(4, step_time=0.6)]
    state.observe("/runs/a", status="running", records=records, now=130.0)
    shown = present.progress(entry, now=130.0)
    assert (shown.step, shown.total, shown.eta_s) == (4, 30, 26 * 0.6)  # median of steps 2-4, first left out
    assert shown.text == "step 4/30 · 0:30 elapsed · ETA 0:16"
    state.observe("/runs/a", status="completed", records=records, now=150.0)
    assert present.progress(entry, now=999.0).text == "completed · 4/30 steps in 0:50"


def test_durations():
    assert [present.format_duration(s) for s in (0, 7.4, 62, 3723, None)] == ["0:00", "0:07", "1:02", "1:02:03", "?"]
    # a short span in seconds, where m:ss would read "0:00" (seen on the card: "5 evaluations in 0:00")
    from ortnb.views.numbers import format_span

    assert [format_span(s) for s in (0.43, 9.94, 9.96, 13.0, 3723, None)] == [
        "0.4 s", "9.9 s", "0:10", "0:13", "1:02:03", "?"]


def test_summary_card_has_what_a_user_asks_after_a_run():
    state = DashboardState()
    result = {**summary(12.345, spread=1.0), "samples_per_s_p25": 11.9, "samples_per_s_p75": 12.9}
    entry = finished(state, "/runs/a", result=result)
    # the spread as it is (p25 to p75), never a symmetric ± of half the IQR
    assert dict(present.summary_items(entry)) == {
        "final loss": "0.5123", "samples/s (median, p25–p75)": "12.3 (p25–p75: 11.9–12.9)",
        "tokens/s, real (padded)": "310 (480)", "MFU": "45.7%", "wall time": "0:10",
        "first step": "7.8 s", "start-up": "–",
        "started": "cold: new processes (interpreter started, torch and transformers imported)",
        "engine": "pytorch", "run folder": "/runs/x"}
    html = present.summary_card_html(entry)
    assert "eager + AdamW: completed" in html and "ortnb-summary" in html


def test_the_card_says_how_a_run_started_and_why_its_engine_when_it_is_this_machines_choice():
    assert present.started_text(1) == "cold, in a new warm worker: the next run of this kind starts warm"
    assert present.started_text(3) == "warm: the session's worker, its run 3 (no interpreter start or imports)"
    state = DashboardState()
    state.start("/runs/a", EAGER, now=0.0, engine_note="Chosen for this machine: eager bf16: why. ORT is one toggle "
                                                       "away (Engine).")
    state.observe("/runs/a", status="completed", records=[step(1)], now=3.0,
                  summary={**summary(12.0), "warm_run": 2})
    entry = state.latest
    assert dict(present.summary_items(entry))["started"] == (
        "warm: the session's worker, its run 2 (no interpreter start or imports)")
    assert present.card_notes(entry) == ["Chosen for this machine: eager bf16: why. ORT is one toggle away (Engine)."]
    assert "Chosen for this machine: eager bf16: why." in present.summary_card_html(entry)


def test_under_the_engine_row_the_form_says_why_and_what_the_choice_was_once_changed():
    from ortnb.tuning.defaults import EngineChoice
    from ortnb.ui import form

    choice = EngineChoice("eager", "bf16", "eager bf16: this CPU has bf16 units and ONNX Runtime's CPU provider "
                                           "has no bf16 MatMul")
    kept = form.choice_note_html(choice, EAGER.replace(precision="bf16"))
    assert "Chosen for this machine: eager bf16: this CPU has bf16 units" in kept
    assert "ORT is one toggle away (Engine)." in kept
    changed = form.choice_note_html(choice, EAGER.replace(backend="ort", precision="no"))
    assert ("This machine's choice is eager bf16 (this CPU has bf16 units and ONNX Runtime's CPU provider "
            "has no bf16 MatMul); the form now runs ORT fp32.") in changed
    assert form.choice_note_html(None, EAGER) == ""


def test_failed_run_card_and_status_carry_the_error():
    state = DashboardState()
    state.start("/runs/a", EAGER, now=0.0)
    state.observe("/runs/a", status="failed", records=[step(1)], now=3.0, error="OSError: No space left\nTraceback",
                  summary=summary(None, measured=0))
    assert present.status_text(state.latest) == "eager + AdamW: failed (step 1/30) - OSError: No space left"
    assert "OSError: No space left" in present.summary_card_html(state.latest)
    assert "#b00020" in present.status_html(state)


def test_comparison_table_says_numbers_plainly():
    state = DashboardState()
    finished(state, "/runs/a", result={**summary(1560.4, spread=31.2), "samples_per_s_p25": 1540.0,
                                       "samples_per_s_p75": 1571.2, "eval_metric": "accuracy", "best_value": 0.8125})
    finished(state, "/runs/b", result={**summary(1716.0, spread=None), "mfu": None, "first_step_s": None})
    for run_id in state.runs:
        state.add_to_comparison(run_id)
    rows = present.comparison_rows(state)
    assert [title for _, title in present.TABLE_COLUMNS] == [
        "run", "engine", "samples/s", "p25–p75", "speed-up", "best held-out", "real tokens/s", "MFU %",
        "peak memory (MB)", "optimizer state (MB)", "final loss", "first step (s)"]
    assert present.table_cells(rows[0]) == ["eager + AdamW", "pytorch", "1,560", "1,540–1,571", "baseline",
                                            "accuracy 0.812", "310", "45.7", "1,560", "87", "0.512", "7.84"]
    assert present.table_cells(rows[1])[2:8] == ["1,716", "–", "1.10x", "–", "310", "–"]
    assert present.table_cells(rows[1])[-1] == "–"


def test_messages_use_the_forms_words():
    text = ("bf16 with backend='ort' needs the CUDA execution provider. Use backend='eager' for bf16, or "
            "precision='no'; optim='adamw_torch_fused'; zero_stage=1 with num_processes=1.")
    assert form.humanize(text) == ("bf16 with ONNX Runtime needs the CUDA execution provider. Use PyTorch (eager) "
                                   "for bf16, or fp32; fused AdamW (torch); ZeRO-1 with 1 process.")
    assert form.problem_lines([Problem("backend", "x"), Problem("zero_stage", "y")]) == ["engine: x", "ZeRO-1: y"]


def test_unavailable_options_are_explained_without_hovering():
    table = {"precision": {"no": None, "bf16": "bf16 with backend='ort' needs CUDA. Use backend='eager'."},
             "zero_stage": {0: None}}
    notes = form.unavailable_notes(table)
    assert notes == {"precision": '<div class="ortnb-note">unavailable here: <b>bf16</b>: bf16 with ONNX Runtime '
                                  'needs CUDA</div>'}


def test_find_fastest_is_one_thing_at_a_time_and_its_progress_reads_plainly():
    state = DashboardState()
    search = state.start_search(180, now=0.0)
    assert state.buttons()["Run"] is False and state.buttons()["Find fastest"] is False
    assert "Find fastest is measuring" in state.why_run_is_disabled()
    with pytest.raises(RuntimeError):
        state.start("/runs/a", EAGER, now=1.0)
    state.search_progress({"candidate": 3, "of": 12, "phase": "rung 1", "elapsed_s": 45.0,
                           "best": {"label": "ort + fused AdamW", "samples_per_s": 45.12}})
    assert present.search_text(search, now=45.0) == ("Find fastest: rung 1, candidate 3 of 12 · 0:45 of 3:00 · "
                                                      "best so far: ort + fused AdamW, 45.1 samples/s")
    assert state.request_stop() == [] and search.stopping and state.buttons()["Stop"] is False
    winner = EAGER.replace(backend="ort", batch_size=32, padding="longest", length_grouping=True, max_steps=12)
    rows = [{"rank": 1, "label": "ort + AdamW", "status": "completed", "samples_per_s": 45.1, "mfu": 0.41},
            {"rank": None, "label": "ort + AdamW + bf16", "status": "refused",
             "reason": "bf16 with backend='ort' needs CUDA"},
            {"rank": None, "label": "ort + AdamW + bf16 x2", "status": "refused",
             "reason": "bf16 with backend='ort' needs CUDA"}]
    state.search_ended(rows, winner)
    assert state.buttons()["Load winner"] is True and state.buttons()["Run"] is True
    assert "fastest here: ort + AdamW" in state.message.text
    html = present.search_table_html(rows)
    # one row for the two refusals, in the form's words
    assert "bf16 with ONNX Runtime needs CUDA" in html and "41.0" in html and html.count("<tr>") == 3
    assert "2 candidates: ort + AdamW + bf16, ort + AdamW + bf16 x2" in html
    # the reported table: #1 at 70.1 above #2 at 77.7 under "fastest first"; the rung column and the words say why
    raced = [{"rank": 1, "rung": 2, "label": "eager bf16 x2", "status": "completed", "samples_per_s": 70.1},
             {"rank": 2, "rung": 1, "label": "ort fp32", "status": "completed", "samples_per_s": 77.7},
             {"rank": 3, "rung": 1, "label": "eager fp32", "status": "completed", "samples_per_s": 73.8}]
    shown = present.search_table_html(raced)
    assert "fastest first" not in shown and "ranked by the rung each reached, then speed" in shown
    assert '<th class="ortnb-cell ortnb-head">rung</th>' in shown and '<td class="ortnb-cell">2</td>' in shown
    assert present.search_order_text(rows) == "fastest first"  # one rung: the order is the speed
    partial = DashboardState()
    partial.start_search(28.0, now=0.0)
    partial.search_ended(rows[:1], winner, conclusive=False,
                         description="Best of 1 measured, not a search: ort + AdamW, 45.1 samples/s.")
    assert partial.message.level == "warning" and partial.message.text.startswith("Best of 1 measured, not a search")
    assert "fastest here" not in partial.message.text
    # the winner's settings, the user's steps, and the user's learning rate following the global batch
    loaded, rule = present.winner_for_form(winner, EAGER.replace(max_steps=500, learning_rate=1e-4))
    assert (loaded.backend, loaded.batch_size, loaded.padding, loaded.max_steps) == ("ort", 32, "longest", 500)
    assert loaded.learning_rate == 0.000141  # three figures, as the sentence says (not 0.0001414213562373095)
    assert rule == ("learning rate 0.0001 -> 0.000141: the global batch went from 16 to 32, and the rate "
                    "follows its square root")
    same, none = present.winner_for_form(winner.replace(batch_size=16), EAGER.replace(learning_rate=1e-4))
    assert same.learning_rate == 1e-4 and none is None
    state.clear()
    assert state.search is None


def test_the_form_shows_padding_as_the_run_uses_it_and_keeps_it_moot_for_a_causal_lm():
    classifier = RunConfig(model="tiny-bert")
    values = form.form_values(classifier)
    assert (values["padding"], values["length_grouping"]) == ("longest", True)
    assert form.config_from_form(values, classifier) == classifier  # unchanged defaults stay None
    full = form.config_from_form({**values, "padding": "max_length"}, classifier)
    assert (full.padding, full.length_grouping) == ("max_length", False)  # grouping padded rows would be moot
    ungrouped = form.config_from_form({**values, "length_grouping": False}, classifier)
    assert (ungrouped.padding, ungrouped.length_grouping) == ("longest", False)
    causal = RunConfig(model="smollm2", dataset="hamlet")
    back = form.config_from_form({**form.form_values(causal), "padding": "max_length"}, causal)
    assert (back.padding, back.length_grouping) == (None, None)


def test_profile_is_one_thing_at_a_time_and_says_where_it_is():
    from ortnb.ui.jobs.profile import profile_configs

    state = DashboardState()
    profiling = state.start_profile(["eager + AdamW", "ort + AdamW"], now=0.0)
    buttons = state.buttons()
    assert (buttons["Run"], buttons["Profile"], buttons["Find fastest"], buttons["Stop"]) == (False, False, False, True)
    assert state.why_run_is_disabled() == "a profile is measuring: one thing at a time (Stop it, or wait for it to end)"
    for start in (lambda: state.start("/runs/a", EAGER, now=1.0), lambda: state.start_search(60, now=1.0),
                  lambda: state.start_profile(["x"], now=1.0)):
        with pytest.raises(RuntimeError, match="a profile is measuring"):
            start()
    state.profile_progress("ort + AdamW")
    assert present.profile_text(profiling, now=75.0) == "Profile: ort + AdamW (2 of 2) · 1:15"
    assert state.request_stop() == [] and profiling.stopping and state.buttons()["Stop"] is False
    assert present.profile_text(profiling, now=76.0).startswith("stopping · Profile:")
    state.profile_ended(None, error="profile: the run of ort + AdamW ended stopped")
    assert state.message.level == "warning" and "was stopped" in state.message.text
    assert present.profile_text(profiling, now=80.0) == "Profile: stopped"
    assert state.buttons()["Profile"] is True and state.buttons()["Clear"] is True
    again = state.start_profile(["eager + AdamW"], now=90.0)
    state.profile_ended(None, error="ValueError: bad trace")
    assert state.message == state.message.__class__("Profile failed: ValueError: bad trace", "error")
    assert present.profile_text(again, now=95.0) == "Profile: failed"
    done = state.start_profile(["eager + AdamW", "ort + AdamW"], now=100.0)
    state.profile_ended({"step_ms": {}})
    assert state.message.text == "profiled eager + AdamW and ort + AdamW: see the Profile tab"
    assert present.profile_text(done, now=120.0) == "Profile: done · 2 configurations · see the Profile tab"
    state.clear()
    assert state.profiling is None
    # while a run trains, Profile is refused with the reason
    state.start("/runs/b", EAGER, now=130.0)
    assert state.buttons()["Profile"] is False
    with pytest.raises(RuntimeError, match="a run is training"):
        state.start_profile(["eager + AdamW"], now=131.0)
    # what the button profiles: the form beside the other engine, PyTorch first; or the compared runs
    ort = EAGER.replace(backend="ort")
    assert [c.label for c in profile_configs(EAGER, [])] == ["eager + AdamW", "ort + AdamW"]
    assert [c.label for c in profile_configs(ort, [])] == ["eager + AdamW", "ort + AdamW"]
    fused = EAGER.replace(optim="adamw_torch_fused")
    assert [c.label for c in profile_configs(ort, [EAGER, EAGER, fused])] == ["eager + AdamW", "eager + fused AdamW"]
    assert [c.label for c in profile_configs(ort, [EAGER, EAGER])] == ["eager + AdamW", "ort + AdamW"]  # one label
    bf16 = EAGER.replace(precision="bf16")  # its ORT twin is refused on a CPU: the form's alone
    assert [c.label for c in profile_configs(bf16, [])] == [bf16.label]

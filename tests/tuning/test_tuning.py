"""ortnb.tune(): the search driven by fake runs and a fake clock (exact and fast), then real tiny-bert runs for
what only real processes show: the budget kept, the cache, and Stop or KeyboardInterrupt leaving no worker."""

from __future__ import annotations

import json
import math
import os
import threading
import time

import psutil
import pytest

import ortnb
from ortnb.errors import ConfigError
from ortnb.hardware import Capabilities
from ortnb.runner.launch import wait_for
from ortnb.tuning import cache, default_grid, format_progress, result, search, space, tune
from ortnb.validation import validate

from .._helpers import FakeClock, cached_search_entry, fake_measure, fake_record, workers_under

# -- fakes: runs that take the seconds a cost model says, on a clock that only they move (tests/_helpers.py) --


def candidates_of(grid: dict) -> list[space.Candidate]:
    """The grid's product as candidates, without validate(): a pure search test needs no machine."""
    import itertools

    found = []
    for index, values in enumerate(itertools.product(*grid.values())):
        axes = dict(zip(grid, values))
        found.append(space.Candidate(index, " ".join(f"{k}={v}" for k, v in axes.items()), axes))
    return found


def multiplicative(effects: dict, level: float = 10.0):
    def speed(candidate):
        return level * math.prod(effects.get((k, v), 1.0) for k, v in candidate.axes.items())
    return speed


CPU = dict(cuda=False, cpu_cores=2, bf16_cpu_native=True, ort_training="onnxruntime-training-cpu", ort_version="1.19.2",
           ort_cuda=False, ort_extension_built=True, deepspeed=True, fused_adamw=True, torch_compile=True, gguf=True)


# -- the grid ------------------------------------------------------------------------------------------


def test_the_default_grid_holds_what_this_kind_of_machine_runs():
    base = ortnb.RunConfig(model="minilm")
    # a CPU: fused AdamW only (plain AdamW never led it), per-batch padding only (max_length computes padding)
    assert default_grid(base, Capabilities(**CPU)) == {
        "backend": ["ort", "eager"], "optim": ["adamw_torch_fused"], "precision": ["no", "bf16"],
        "num_processes": [1, 2], "batch_size": [16, 32]}
    # one core, no bf16 units, an old torch: those axes have one value left, so they are not varied
    small = Capabilities(**{**CPU, "cpu_cores": 1, "bf16_cpu_native": False, "fused_adamw": False})
    assert default_grid(base, small) == {"backend": ["ort", "eager"], "batch_size": [16, 32]}
    # with CUDA both optimizers (and ORT's FusedAdam) and both paddings: fixed shapes may pay on a GPU
    gpu = Capabilities(**{**CPU, "cuda": True, "ort_cuda": True})
    assert default_grid(base, gpu, cuda_devices=2) == {
        "backend": ["ort", "eager"], "optim": ["adamw_torch_fused", "adamw_torch", "adamw_ort_fused"],
        "precision": ["no", "bf16", "fp16"], "padding": ["longest", "max_length"], "num_processes": [1, 2],
        "batch_size": [16, 32]}
    # a causal LM trains full blocks: nothing to pad
    assert "padding" not in default_grid(ortnb.RunConfig(model="tiny-llama", dataset="hamlet"), gpu, cuda_devices=2)


BAD_ARGUMENTS = [  # (keyword arguments, the message)
    ({"budget_s": 0}, r"budget_s must be more than 0 seconds, got 0: it is the time the search may take; the "
                      r"default is 180\."),
    ({"budget_s": -5.0}, r"budget_s must be more than 0 seconds, got -5\.0"),
    ({"budget_s": "180"}, r"budget_s must be a number of seconds, got '180'; the default is 180 \(ortnb tune "
                          r"--budget 180\)\."),
    ({"budget_s": math.nan}, r"budget_s must be a number of seconds, got nan"),
    ({"budget_s": True}, r"budget_s must be a number of seconds, got True"),
    ({"grid": {"colour": ["red"]}}, r"grid: 'colour' is not an option tune\(\) can vary; choose among backend, optim"),
    ({"grid": {"batch_size": []}}, r"grid: batch_size has no values; give at least one \(e\.g\. \[1, 2\]\) or leave "
                                   r"batch_size out of the grid\."),
    ({"grid": {"batch_size": 16}}, r"grid: batch_size must be a list of values \(e\.g\. batch_size=\[1, 2\]\), got "
                                   r"int 16\."),
    ({"grid": {"batch_size": [16, 16]}}, r"grid: batch_size lists a value twice \(\[16, 16\]\); give each value once"),
    ({"grid": {"seq_len": [64, 128]}}, r"grid: seq_len changes the samples trained, so the speeds would not compare; "
                                       r"set it in base=RunConfig\(seq_len=\.\.\.\)\."),
    ({"grid": {}}, r"grid is empty: name at least one field with its values"),
    ({"grid": [("backend", ["ort"])]}, r"grid must be a dict of RunConfig field -> list of values"),
    ({"base": "minilm"}, r"base must be a RunConfig \(e\.g\. base=ortnb\.RunConfig\(seq_len=64\)\) or None, got str\."),
    ({"on_progress": 5}, r"on_progress must be a function taking one dict \(or None\), got int\."),
    ({"stop": True}, r"stop must be a threading\.Event \(or None\), got bool\."),
]


@pytest.fixture
def no_launch(monkeypatch):
    """Any run started fails the test: the checks must all come first."""
    def refuse(*_args, **_kwargs):
        raise AssertionError("a run was launched")
    monkeypatch.setattr("ortnb.runner.launch", refuse)
    monkeypatch.setattr("ortnb.runner.warm.WarmWorker.launch", refuse)


@pytest.mark.parametrize("arguments, message", BAD_ARGUMENTS, ids=[str(a) for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_are_refused_before_any_run(tmp_path, no_launch, arguments, message):
    with pytest.raises(ConfigError, match=message):
        tune("tiny-bert", cache_dir=tmp_path, **arguments)
    assert not any(tmp_path.iterdir())


def test_every_bad_argument_is_named_at_once(tmp_path, no_launch):
    with pytest.raises(ConfigError) as caught:
        tune("tiny-bert", budget_s=0, grid={"colour": ["red"], "batch_size": []}, cache_dir=tmp_path)
    assert len(caught.value.problems) == 3 and str(caught.value).startswith("3 problems:")


@pytest.mark.skipif(ortnb.capabilities().cuda, reason="fp16 runs on a CUDA machine")
def test_a_grid_with_nothing_runnable_lists_the_reasons(tmp_path, no_launch):
    with pytest.raises(ConfigError) as caught:
        tune("tiny-bert", grid={"backend": ["ort", "eager"], "precision": ["fp16"]}, cache_dir=tmp_path)
    # The advice follows this CPU: bf16 where it has bf16 units, no mixed precision where it has none.
    instead = ("precision='bf16'" if ortnb.capabilities().bf16_cpu_native
               else "precision='no' (this CPU has no bf16 units either)")
    assert caught.value.problems == [
        "grid: no candidate can run on this machine; 1 of 2 refused because precision: fp16 with backend='ort' needs "
        "the CUDA execution provider: ONNX Runtime's CPU provider has no fp16 MatMul kernel. Use backend='eager' for "
        "fp16, or precision='no'. Change grid= (or base=) to leave this out.",
        "grid: no candidate can run on this machine; 1 of 2 refused because precision: fp16 training needs a CUDA "
        f"GPU; on this CPU use {instead}. Change grid= (or base=) to leave this out."]


def test_a_budget_too_small_for_one_candidate_names_the_minimum(tmp_path, no_launch):
    with pytest.raises(ConfigError, match=r"budget_s=1 is too small for even one candidate: measuring the quickest "
                                          r"one with tiny-bert needs about 12 s on a machine like this .* give "
                                          r"budget_s >= 12 \(the default is 180; more measures more candidates\)\."):
        tune("tiny-bert", budget_s=1, cache_dir=tmp_path)


# -- the search, on fake runs ----------------------------------------------------------------------


GRID = {"backend": ["ort", "eager"], "optim": ["adamw_torch_fused", "adamw_torch"], "precision": ["no", "bf16"],
        "num_processes": [1, 2], "batch_size": [8, 16, 32]}
# Where the beliefs are wrong (ORT and bf16 slower here, small batches faster): measurements must win.
WRONG_BELIEFS = {("backend", "ort"): 0.7, ("precision", "bf16"): 0.6, ("num_processes", 2): 1.5,
                 ("batch_size", 8): 1.2, ("batch_size", 32): 0.9}


def test_the_search_finds_the_fastest_of_a_grid_its_budget_cannot_cover():
    candidates, clock, log = candidates_of(GRID), FakeClock(), []
    speed = multiplicative(WRONG_BELIEFS)
    found = search.Search(candidates, search.Budget(240.0, clock, 0.0), fake_measure(clock, speed, log=log),
                          {"model": "minilm"})
    ended = found.run()
    found.mark_unreached(interrupted=False)
    winner = search.ranked(candidates)[0]  # the optimizer makes no difference here: either one is the fastest
    assert speed(winner) == max(map(speed, candidates))
    assert {k: v for k, v in winner.axes.items() if k != "optim"} == {"backend": "eager", "precision": "no",
                                                                        "num_processes": 2, "batch_size": 8}
    assert ended == "the budget ran out before every candidate was measured"
    assert len(log) <= 8 < len(candidates) and clock.now <= 240.0  # 7 runs of 20 to 30 s: 15% of the grid
    unmeasured = [c for c in candidates if c.status == "not measured"]
    assert len(unmeasured) == len(candidates) - len({label for label, _, _ in log})
    assert all(c.reason.startswith("the budget ran out before it: ") for c in unmeasured)


def test_successive_halving_gives_the_faster_half_twice_the_steps():
    grid = {"batch_size": [8, 16, 32], "num_processes": [1, 2]}
    candidates, clock, log = candidates_of(grid), FakeClock(), []
    speeds = {c.index: 10.0 + c.index for c in candidates}  # the later in the product, the faster
    found = search.Search(candidates, search.Budget(10_000.0, clock, 0.0),
                          fake_measure(clock, lambda c: speeds[c.index], log=log), {"model": "minilm"})
    assert found.run() == "every candidate was measured and one remained"
    by_rung = {rung: sorted(label for label, r, _ in log if r == rung) for rung in (1, 2, 3)}
    assert len(by_rung[1]) == 6
    assert by_rung[2] == sorted(c.label for c in candidates if c.index >= 3)  # the faster half: 3 of 6
    assert by_rung[3] == sorted(c.label for c in candidates if c.index >= 4)  # then 2 of 3
    first = space.RUNG1_STEPS
    assert {steps for _, rung, steps in log} == {first, 2 * first, 4 * first} and len(log) == 6 + 3 + 2
    ranked = search.ranked(candidates)
    assert [c.index for c in ranked] == [5, 4, 3, 2, 1, 0] and [c.rung for c in ranked] == [3, 3, 2, 1, 1, 1]


def test_no_run_starts_that_the_remaining_budget_cannot_hold():
    candidates, clock, log = candidates_of({"batch_size": [8, 16, 32, 64]}), FakeClock(), []
    measure = fake_measure(clock, lambda c: 1e6, overhead=10.0, log=log)  # steps take no time: 10 s a run
    found = search.Search(candidates, search.Budget(35.0, clock, 0.0), measure, {"model": "tiny-bert"})
    assert found.run() == "the budget ran out before every candidate was measured"
    found.mark_unreached(interrupted=False)
    assert len(log) == 3 and clock.now == pytest.approx(30.0, abs=0.01)
    [left] = [c for c in candidates if c.status == "not measured"]
    # 5 s were left, less the second kept for stopping a run at the budget's end
    assert left.reason == "the budget ran out before it: 4 s were left and its run needs about 10 s"


def test_progress_events_are_plain_data_with_one_line_each():
    candidates, clock, events = candidates_of({"batch_size": [8, 16]}), FakeClock(), []
    found = search.Search(candidates, search.Budget(100.0, clock, 0.0),
                          fake_measure(clock, lambda c: 4.0 * c.axes["batch_size"], overhead=10.0),
                          {"model": "tiny-bert"},
                          notify=events.append)
    found.run()
    assert json.loads(json.dumps(events)) == events
    assert [(e["event"], e["candidate"], e["of"], e["phase"]) for e in events] == [
        ("candidate", 1, 2, "rung 1"), ("result", 1, 2, "rung 1"), ("candidate", 2, 2, "rung 1"),
        ("result", 2, 2, "rung 1")]
    assert events[2] == {"event": "candidate", "candidate": 2, "of": 2, "phase": "rung 1", "label": "batch_size=8",
                         "run_dir": "fake-run-0", "estimate_s": 11.2, "elapsed_s": 11.8, "budget_s": 100.0,
                         "best": {"label": "batch_size=16", "samples_per_s": 64.0}}
    assert format_progress(events[2]) == ("rung 1, candidate 2 of 2: batch_size=8 (about 11 s) | 12 s of 100 s | "
                                          "best so far: batch_size=16, 64.0 samples/s")
    assert format_progress(events[3]) == "rung 1, candidate 2 of 2: 32.0 samples/s, its run took 12 s"


def test_progress_words_are_exact():
    assert format_progress({"event": "start", "candidates": 96, "runnable": 72, "refused": 24, "resumed": 0,
                            "budget_s": 180.0}) == "96 candidates: 24 refused by validate(), 72 to measure within 180 s"
    assert format_progress({"event": "candidate", "candidate": 3, "of": 72, "phase": "rung 1", "label": "eager",
                            "estimate_s": 19.6, "elapsed_s": 41.7, "budget_s": 180.0, "best": None}) == (
        "rung 1, candidate 3 of 72: eager (about 20 s) | 42 s of 180 s | best so far: none yet")
    assert format_progress({"event": "result", "candidate": 3, "of": 72, "phase": "rung 1", "status": "failed",
                            "samples_per_s": None, "reason": "its run failed: ValueError: no"}) == (
        "rung 1, candidate 3 of 72: failed: its run failed: ValueError: no")
    assert format_progress({"event": "done", "elapsed_s": 177.2, "budget_s": 180.0, "measured": 9,
                            "ended": "the budget ran out before every candidate was measured",
                            "best": {"label": "eager x2", "samples_per_s": 41.04}}) == (
        "done in 177 s of 180 s (the budget ran out before every candidate was measured): 9 measured; best: "
        "eager x2, 41.0 samples/s")


# -- the result and the cache ------------------------------------------------------------------------


def test_the_table_ranks_every_candidate_and_round_trips_through_json():
    candidates = candidates_of({"backend": ["ort", "eager"], "batch_size": [8, 16]})
    slow, fast, failed, refused = candidates
    slow.runs = [fake_record(1, [20.0, 22.0, 21.0, 21.0], 8, 12.0, 10.0)]
    fast.runs = [fake_record(1, [30.0] * 4, 16, 12.0, 10.0), fake_record(2, [28.0] * 8, 16, 14.0, 10.0)]
    failed.runs = [{**fake_record(1, [], 8, 5.0, 5.0), "status": "failed", "note": "its run failed: OSError: disk"}]
    refused.problems = ["precision: no bf16 here."]
    base = ortnb.RunConfig(model="tiny-bert", max_steps=100)
    found = result.build(candidates, base, {"backend": ["ort", "eager"], "batch_size": [8, 16]}, budget_s=60.0,
                         elapsed_s=45.0, complete=True, interrupted=False, ended="every candidate was measured")
    table = found.table
    assert list(table["label"]) == [fast.label, slow.label, failed.label, refused.label]
    assert list(table["status"]) == ["measured", "measured", "failed", "refused"]
    assert list(table["samples_per_s"])[:2] == [28.0, 21.0]  # the median of every measured step of every run
    assert list(table["rung"])[:2] == [2, 1] and list(table["steps_measured"])[:2] == [12, 4]
    assert list(table["reason"])[2:] == ["its run failed: OSError: disk", "precision: no bf16 here."]
    assert found.best == base.replace(backend="ort", batch_size=16) and found.best.max_steps == 100
    assert found.learning_rate_rule is None and found.describe().endswith("of 60 s.")  # base's batch: its rate
    assert [c.name for c in found.configs] == [slow.label, fast.label, failed.label]
    assert repr(found) == ("TuneResult(best='backend=ort batch_size=16', measured=2 of 3, refused=1, complete=True, "
                           "from_cache=False)")
    again = result.TuneResult.from_dict(json.loads(json.dumps(found.to_dict())), base, from_cache=True)
    assert again.table.equals(table) and again.best == found.best and again.from_cache
    assert result.reason_lines(found) == ["failed (backend=eager batch_size=8): its run failed: OSError: disk",
                                          "refused (backend=eager batch_size=16): precision: no bf16 here."]


def test_the_winner_learning_rate_follows_its_global_batch_by_the_square_root_rule():
    candidates = candidates_of({"batch_size": [16, 32], "num_processes": [1, 2]})
    for candidate, speed in zip(candidates, (10.0, 20.0, 30.0, 40.0)):
        candidate.runs = [fake_record(1, [speed] * 4, 16, 12.0, 10.0)]
    base = ortnb.RunConfig(model="tiny-bert", learning_rate=4e-5)
    found = result.build(candidates, base, {"batch_size": [16, 32], "num_processes": [1, 2]}, budget_s=60.0,
                         elapsed_s=45.0, complete=True, interrupted=False, ended="every candidate was measured")
    assert (found.best.batch_size, found.best.num_processes) == (32, 2)  # global batch 64, four times base's
    assert found.best.learning_rate == pytest.approx(8e-5, rel=1e-12)  # 4e-5 x sqrt(4)
    assert found.learning_rate_rule == ("learning rate 4e-05 -> 8e-05: the global batch went from 16 to 64, and "
                                        "the rate follows its square root")
    assert found.describe().endswith("Its learning rate 4e-05 -> 8e-05: the global batch went from 16 to 64, "
                                     "and the rate follows its square root.")
    assert all(c.learning_rate == 4e-5 for c in found.configs)  # measured for speed: base's rate
    assert found.to_dict()["learning_rate_rule"] == found.learning_rate_rule
    again = result.TuneResult.from_dict(json.loads(json.dumps(found.to_dict())), base, from_cache=True)
    assert again.best == found.best and again.learning_rate_rule == found.learning_rate_rule


def test_the_cache_key_follows_the_data(tmp_path):
    data = tmp_path / "reviews.jsonl"
    data.write_text('{"text": "good", "label": 1}\n')
    base = ortnb.RunConfig(model="tiny-bert", dataset=str(data))
    first = cache.key(base, {"batch_size": [8]}, 30.0)
    assert first["dataset"]["files"][0][:2] == ["reviews.jsonl", data.stat().st_size]
    assert cache.key(base.replace(max_steps=500, name="x"), {"batch_size": [8]}, 30.0) == first  # not measured
    data.write_text('{"text": "good", "label": 1}\n{"text": "bad", "label": 0}\n')
    assert cache.key(base, {"batch_size": [8]}, 30.0) != first
    for other in ({"batch_size": [16]}, 31.0):
        changed = cache.key(base, other if isinstance(other, dict) else {"batch_size": [8]},
                            other if isinstance(other, float) else 30.0)
        assert cache.path_for(tmp_path, changed) != cache.path_for(tmp_path, first)
    from datasets import Dataset

    rows = Dataset.from_dict({"text": ["good"], "label": [1]})
    assert cache.identify(rows) == {"fingerprint": rows._fingerprint}
    assert cache.identify("rotten_tomatoes") == "rotten_tomatoes"


# -- real runs ----------------------------------------------------------------------------------------


def children() -> set[int]:
    return {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}


TINY_GRID = {"backend": ["ort", "eager"], "precision": ["no", "fp16"], "batch_size": [8, 16]}


@pytest.mark.slow
@pytest.mark.skipif(ortnb.capabilities().cuda, reason="fp16 is refused only without CUDA")
def test_tune_tiny_bert_within_30_s_then_from_the_cache(tmp_path, monkeypatch):
    events = []
    started = time.monotonic()
    found = tune("tiny-bert", budget_s=30, grid=TINY_GRID, cache_dir=tmp_path, on_progress=events.append)
    took = time.monotonic() - started
    assert took <= 33.0 and found.elapsed_s <= 33.0, took  # the budget, plus 10%
    table = found.table
    measured = table[table["status"] == "measured"]
    assert len(measured) >= 1 and list(measured["samples_per_s"]) == sorted(measured["samples_per_s"], reverse=True)
    assert set(measured["engine"]) <= {"onnxruntime", "pytorch"} and (measured["first_step_s"] > 0).all()
    # the winner is the first measured row, and it can run here
    first = table.iloc[0]
    batch = int(first["batch_size"])
    assert found.best == ortnb.RunConfig(model="tiny-bert", backend=first["backend"], batch_size=batch,
                                         learning_rate=5e-5 * (batch / 16) ** 0.5)  # the square-root rule
    assert validate(found.best) == []
    # every refused candidate carries validate()'s own words
    refused = table[table["status"] == "refused"]
    assert len(refused) == 4 and set(refused["precision"]) == {"fp16"}
    for _, row in refused.iterrows():
        config = ortnb.RunConfig(model="tiny-bert", backend=row["backend"], precision="fp16",
                                 batch_size=row["batch_size"])
        assert row["reason"] == "; ".join(str(p) for p in validate(config))
    assert set(table["status"]) <= {"measured", "not measured", "refused"}
    assert found.complete == (len(measured) == 4) and not found.interrupted and not found.from_cache
    # progress: plain data, from the start to the end
    assert events[0]["event"] == "start" and events[-1]["event"] == "done"
    assert {e["of"] for e in events if e["event"] == "candidate"} <= {4, 2, 1}
    json.dumps(events)
    # no worker left, and the temporary run folders are gone
    assert wait_for(lambda: not workers_under(tmp_path), 10), workers_under(tmp_path)
    assert not list(tmp_path.glob("runs-*"))

    def refuse(*_args, **_kwargs):
        raise AssertionError("a run was launched")

    monkeypatch.setattr("ortnb.runner.launch", refuse)
    monkeypatch.setattr("ortnb.runner.warm.WarmWorker.launch", refuse)
    before = children()
    started = time.monotonic()
    again = tune("tiny-bert", budget_s=30, grid=TINY_GRID, cache_dir=tmp_path)
    assert again.from_cache and time.monotonic() - started < 5.0 and children() <= before
    assert again.table.drop(columns="reason").equals(table.drop(columns="reason")) and again.best == found.best
    with pytest.raises(AssertionError, match="a run was launched"):  # refresh=True measures again
        tune("tiny-bert", budget_s=30, grid=TINY_GRID, cache_dir=tmp_path, refresh=True)


@pytest.mark.slow
def test_one_process_candidates_are_measured_in_one_warm_worker_and_tokenize_once(tmp_path):
    grid = {"backend": ["eager", "ort"], "batch_size": [8, 16]}
    events = []
    found = tune("tiny-bert", budget_s=60, grid=grid, cache_dir=tmp_path, on_progress=events.append)
    assert found.complete and list(found.table["status"]) == ["measured"] * 4
    [entry] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    runs = [r for c in entry["candidates"] for r in c["runs"]]
    assert len(runs) >= 4 and all(r["warm"] for r in runs)  # rung 2 measures the leaders again, warm too
    # the first candidate tokenized the data (unless an earlier test stored it); no other one did
    assert sum(not r["data_cached"] for r in runs) <= 1 and runs[-1]["data_cached"]
    assert wait_for(lambda: not workers_under(tmp_path), 10), workers_under(tmp_path)  # the worker is gone too


@pytest.mark.slow
def test_stop_ends_the_search_keeps_what_was_measured_and_is_resumed(tmp_path, monkeypatch):
    stop, runs = threading.Event(), []

    def progress(event):
        if event["event"] == "candidate":
            runs.append(event["run_dir"])
            if event["candidate"] == 2:
                stop.set()  # as the dashboard's Stop does, while the second candidate's run starts

    grid = {"backend": ["eager"], "batch_size": [8, 16]}
    found = tune("tiny-bert", budget_s=60, grid=grid, cache_dir=tmp_path, stop=stop, on_progress=progress)
    assert found.interrupted and not found.complete and found.ended == "stopped"
    assert list(found.table["status"]) == ["measured", "not measured"]
    assert found.table["reason"].iloc[1] == "the search was stopped while it ran"
    assert wait_for(lambda: not workers_under(tmp_path), 10), workers_under(tmp_path)
    assert len(runs) == 2 and not any(os.path.exists(run) for run in runs)
    [entry] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert entry["interrupted"] and not entry["complete"]
    # batch 16 was measured first (larger batches are believed faster), batch 8 was stopped while it started
    assert {c["label"]: bool(c["runs"]) for c in entry["candidates"]} == {
        "eager + AdamW (batch_size=16)": True, "eager + AdamW (batch_size=8)": False}
    # the same call resumes from the entry: the measured candidate is not measured again
    monkeypatch.setattr("ortnb.tuning.measure.start", lambda *_a, **_k: pytest.fail("resumed by launching"))
    events = []
    resumed = tune("tiny-bert", budget_s=60, grid=grid, cache_dir=tmp_path, stop=stop, on_progress=events.append)
    assert events[0]["resumed"] == 1 and not resumed.from_cache
    assert resumed.table["samples_per_s"].iloc[0] == found.table["samples_per_s"].iloc[0]


@pytest.mark.slow
def test_keyboard_interrupt_leaves_no_worker_and_an_incomplete_entry(tmp_path):
    runs = []

    def interrupt(event):
        if event["event"] == "candidate":
            runs.append(event["run_dir"])
            raise KeyboardInterrupt  # as Ctrl-C in the kernel, once the candidate's processes have started

    with pytest.raises(KeyboardInterrupt):
        tune("tiny-bert", budget_s=60, grid={"backend": ["eager"], "batch_size": [8, 16]}, cache_dir=tmp_path,
             on_progress=interrupt)
    assert wait_for(lambda: not workers_under(tmp_path), 10), workers_under(tmp_path)
    assert len(runs) == 1 and not os.path.exists(runs[0]) and not list(tmp_path.glob("runs-*"))
    [entry] = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert entry["interrupted"] and not entry["complete"] and entry["ended"] == "interrupted"
    assert {c["label"]: c["unreached"] for c in entry["candidates"]} == {
        "eager + AdamW (batch_size=16)": "the search was stopped while it ran",
        "eager + AdamW (batch_size=8)": "the search was stopped before it"}


def test_a_winner_from_one_measured_candidate_is_the_best_of_one_not_a_search():
    candidates = candidates_of({"backend": ["ort", "eager"], "batch_size": [8, 16]})
    candidates[0].runs = [fake_record(1, [20.0] * 4, 8, 28.0, 10.0)]
    for other in candidates[1:]:
        other.unreached = "the budget ran out before it: 28 s of 28 s used"
    found = result.build(candidates, ortnb.RunConfig(model="tiny-bert"), {"backend": ["ort", "eager"],
                         "batch_size": [8, 16]}, budget_s=28.0, elapsed_s=28.0, complete=False, interrupted=False,
                         ended="the budget ran out before every candidate was measured")
    assert found.conclusive is False and found.to_dict()["conclusive"] is False
    assert found.min_budget_s == 112  # 28 s a candidate, 4 runnable
    assert found.describe().startswith("Best of 1 measured, not a search: backend=ort batch_size=8, 20.0 samples/s")
    assert "measuring all 4 needs a budget of about 112 s. Its learning rate 5e-05 -> 3.54e-05" in found.describe()
    for other in candidates[1:]:
        other.runs = [fake_record(1, [10.0] * 4, 8, 28.0, 10.0)]
    complete = dict(budget_s=200.0, elapsed_s=120.0, complete=True, interrupted=False,
                    ended="every candidate was measured")
    first_rung_only = result.build(candidates, ortnb.RunConfig(model="tiny-bert"), {}, **complete)
    assert first_rung_only.searched and not first_rung_only.conclusive  # 4 measured steps: under the judge's 5
    assert first_rung_only.describe().startswith(
        "Fastest measured, not conclusive (the winner has too few measured steps (4, at least 5 needed)): ")
    candidates[0].runs.append(fake_record(2, [20.0] * 8, 8, 20.0, 10.0))
    found = result.build(candidates, ortnb.RunConfig(model="tiny-bert"), {}, **complete)
    assert found.conclusive and found.describe().startswith("Fastest here: backend=ort batch_size=8, 20.0 samples/s")


def test_tune_judges_its_figures_as_compare_does_noise_and_contention_make_the_winner_inconclusive():
    grid = {"backend": ["ort", "eager"]}
    complete = dict(budget_s=200.0, elapsed_s=120.0, complete=True, interrupted=False,
                    ended="every candidate was measured")

    def found_with(winner_speeds, other_cpu=None, runner_up_cpu=None):
        ort, eager = candidates_of(grid)
        ort.runs = [{**fake_record(1, winner_speeds, 8, 28.0, 10.0), "other_cpu": other_cpu}]
        eager.runs = [{**fake_record(1, [10.0] * 6, 8, 28.0, 10.0), "other_cpu": runner_up_cpu}]
        return result.build([ort, eager], ortnb.RunConfig(model="tiny-bert"), grid, **complete)

    steady = found_with([20.0] * 6)
    assert steady.conclusive and steady.doubt is None
    assert steady.table["p25"].tolist() == [20.0, 10.0] and steady.table["flag"].isna().all()
    noisy = found_with([10.0, 20.0, 30.0, 20.0, 10.0, 30.0])  # p25 10, p75 30 (as metrics.quartiles): 100%
    assert noisy.doubt == "the winner is noisy (spread 100% of its median, over 15%)" and not noisy.conclusive
    assert noisy.table["flag"].tolist()[0] == "noisy"
    loaded = found_with([20.0] * 6, other_cpu=[0.4] * 6)
    assert loaded.doubt == "the winner was measured while other processes used the CPU (40% of the CPU)"
    assert loaded.describe().endswith("; measure again on a quiet machine.")
    assert loaded.table["flag"].tolist()[0] == "under load" and loaded.table["contended_share"].tolist()[0] == 0.4
    slowed_runner_up = found_with([20.0] * 6, runner_up_cpu=[0.5] * 6)  # it might be the real winner
    assert slowed_runner_up.doubt == ("backend=eager measured while other processes used the CPU")
    assert not slowed_runner_up.conclusive and slowed_runner_up.to_dict()["conclusive"] is False


def test_a_cache_entry_with_the_right_key_and_a_broken_body_is_measured_again_not_a_crash(tmp_path, capsys):
    from ortnb.tuning import cache

    key = {"model": "tiny-bert"}
    good = cached_search_entry()
    path = tmp_path / "entry.json"
    cache.write(path, good, key)
    assert cache.read(path, key)["candidates"][0]["label"] == "eager"
    for broken, problem in [({k: v for k, v in good.items() if k != "candidates"},
                             "candidates is missing or not a list"),
                            ({**good, "candidates": [{"index": 0, "label": "eager"}]},
                             "candidate 0 has no valid axes"),
                            ({**good, "candidates": [{**good["candidates"][0], "runs": [{"status": "completed"}]}]},
                             "candidate 0 has a run without its rung")]:
        cache.write(path, broken, key)
        assert cache.read(path, key) is None
        assert f"the cache entry {path} is damaged ({problem}); measuring again" in capsys.readouterr().err


class WatchedRun:
    """A run whose status follows a script, watched through the real Run.follow (no processes)."""
    from ortnb.runner.launch import Run as _Run
    follow, _follow = _Run.follow, _Run._follow
    launched_here = False

    def __init__(self, statuses: list[str], clock: FakeClock):
        self.statuses, self.clock, self.halted = list(statuses), clock, False

    @property
    def status(self) -> str:
        return "stopped" if self.halted else (self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0])

    @property
    def done(self) -> bool:
        return self.status in ("completed", "stopped", "failed")

    def records(self) -> list[dict]:
        self.clock.now += 1.0  # each look costs a second of the budget
        return []

    def stop(self, timeout=None):
        self.halted = True

    def wait(self, timeout=None):
        return self.status

    alive = False


@pytest.mark.parametrize("statuses, deadline, why", [
    (["running", "running", "completed"], 100.0, None),
    (["running"], 3.0, "budget"),
    (["running", "stalled"], 100.0, "stalled"),
])
def test_a_measurement_ends_with_its_run_at_the_budget_or_at_a_stall(monkeypatch, statuses, deadline, why):
    from ortnb.tuning import measure

    monkeypatch.setattr(measure, "POLL_S", 0.0)
    clock = FakeClock()
    run = WatchedRun(statuses, clock)
    assert measure.follow(run, search.Limits(deadline, lambda _dir: None), None, clock) == why
    assert run.halted is (why is not None)
    assert measure.note(1, "stopped", "stalled", 0, None) == \
        "its run stalled before any step after warm-up was measured, and was stopped"


def test_a_set_stop_event_interrupts_the_measurement(monkeypatch):
    from ortnb.tuning import measure

    monkeypatch.setattr(measure, "POLL_S", 0.0)
    stop = threading.Event()
    stop.set()
    with pytest.raises(search.Interrupted):
        measure.follow(WatchedRun(["running"], FakeClock()), search.Limits(1e9, print), stop, FakeClock())


# -- Find fastest starts from your settings ------------------------------------------------------------


def test_your_settings_are_a_candidate_measured_first_and_every_speed_is_stated_against_them():
    grid = {"backend": ["ort", "eager"], "batch_size": [16, 32]}
    base = ortnb.RunConfig(model="tiny-bert", backend="ort", batch_size=8)
    candidates = space.with_yours(base, grid, candidates_of(grid), None)
    yours = candidates[-1]
    assert (yours.yours, yours.axes, yours.index, len(candidates)) == (True, {"backend": "ort", "batch_size": 8}, 4, 5)
    # base's values already in the grid: that candidate is yours, nothing is added
    inside = space.with_yours(base.replace(batch_size=16), grid, candidates_of(grid), None)
    assert len(inside) == 4 and [c.axes for c in inside if c.yours] == [{"backend": "ort", "batch_size": 16}]

    clock, log = FakeClock(), []
    speeds = {8: 10.0, 16: 15.0, 32: 25.0}
    found = search.Search(candidates, search.Budget(60.0, clock, 0.0),
                          fake_measure(clock, lambda c: speeds[c.axes["batch_size"]], log=log), {"model": "minilm"})
    found.run()
    assert log[0][0] == yours.label  # the reference is measured even when the budget covers little else
    outcome = result.build(candidates, base, grid, budget_s=60.0, elapsed_s=clock.now, complete=False,
                           interrupted=False, ended="the budget ran out")
    rows = {r["label"]: r for r in outcome.table.to_dict(orient="records")}
    assert rows[yours.label]["yours"] is True and rows[yours.label]["vs_yours"] == 1.0
    measured = [r for r in rows.values() if r["samples_per_s"] == r["samples_per_s"] and not r["yours"]]
    assert measured and all(r["vs_yours"] == round(r["samples_per_s"] / 10.0, 2) for r in measured)
    assert ", 2.50x the speed of your settings;" in outcome.describe()


def test_the_search_table_names_your_row_and_never_groups_it_away():
    from ortnb.ui import present

    rows = [{"rank": 1, "label": "eager + AdamW x32", "status": "measured", "samples_per_s": 25.0, "vs_yours": 2.5},
            {"rank": 2, "label": "ort + AdamW x8", "status": "measured", "samples_per_s": 10.0, "vs_yours": 1.0,
             "yours": True},
            {"rank": None, "label": "a", "status": "not measured", "reason": "the budget ran out before it"},
            {"rank": None, "label": "b", "status": "not measured", "reason": "the budget ran out before it"}]
    shown = present.search_table_rows(rows)
    assert [r["label"] for r in shown] == ["eager + AdamW x32", "ort + AdamW x8", "2 candidates: a, b"]  # one line
    assert [present.search_cell("vs_yours", r.get("vs_yours"), r) for r in shown] == ["2.50x", "your settings", "–"]
    assert present.search_cell("label", "ort + AdamW x8", shown[1]) == "ort + AdamW x8 (yours)"
    assert "vs your settings" in present.search_table_html(rows)
    assert "vs your settings" not in present.search_table_html([{**r, "yours": None} for r in rows])

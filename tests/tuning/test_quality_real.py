"""The race to a target with real runs (tuning/quality.py's default trainer): tiny BERT launched as a user's runs
are, evaluated at equal samples, and Optuna's successive-halving pruner stopping the trial that falls behind."""

from __future__ import annotations

import pytest

from ortnb.config import RunConfig
from ortnb.tuning import quality

WORDS = {"pos": ("great", "lovely", "superb", "wonderful"), "neg": ("awful", "dull", "boring", "terrible")}


@pytest.mark.slow  # two real runs of tiny BERT, launched and followed as the race does
def test_a_real_race_on_tiny_bert_prunes_the_worse_of_two_learning_rates(tmp_path):
    optuna = pytest.importorskip("optuna")
    data = tmp_path / "reviews.csv"
    data.write_text("text,label\n" + "".join(f"a {word} film take {n},{label}\n" for n in range(30)
                                              for label, words in WORDS.items() for word in words))
    base = RunConfig(model="tiny-bert", dataset=str(data), backend="eager", batch_size=8, seq_len=16,
                     learning_rate=1e-3, warmup_steps=1, output_dir=str(tmp_path / "runs"))
    storage = tmp_path / "race.sqlite3"
    # both trials queued, in this order: the good rate first, so the second is judged against it at its first rung
    study = optuna.create_study(study_name=quality.study_name(base, 0.9), storage=quality.storage_url(storage),
                                direction="minimize")
    for rate in (1e-3, 1e-9):
        study.enqueue_trial({"learning_rate": rate})
    found = quality.search(base, 0.9, trials=2, max_samples=1024, storage=storage, runs_dir=tmp_path / "race",
                           axes=[quality.Axis("learning_rate", (1e-3, 1e-9))])
    table = found.table()
    states = dict(zip(table["learning_rate"], table["state"]))
    assert states == {1e-3: "complete", 1e-9: "pruned"}, table.to_string()
    assert found.best["learning_rate"] == 1e-3 and found.best["seconds_to_target"] > 0
    assert bool(table.loc[table["learning_rate"] == 1e-3, "reached"].iloc[0])  # a real crossing, not a projection
    pruned = next(t for t in found.study.trials if t.params["learning_rate"] == 1e-9)
    assert list(pruned.intermediate_values) == [1]  # stopped at its first rung: 512 samples, not its cap of 1,024

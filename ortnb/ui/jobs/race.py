"""Find fastest to a target: when the form sets a target, Find fastest races configurations to it with
``ortnb.tune_to_target`` (an Optuna study of real runs) for the budget's seconds, instead of ranking them by
samples per second. The same Search in the state holds its progress and table; the table ranks by seconds to the
target, and the study's optimisation history is drawn beside it."""

from __future__ import annotations

from ...config import RunConfig
from ...tuning.quality import expand
from .. import present
from .search import SearchJob

MAX_TRIALS = 100  # the budget ends the race first: a trial is not started after it


class RaceJob(SearchJob):
    """Find fastest with a target: a SearchJob (its Search in the state, its stop, failure and progress line) whose
    work is the race and whose table ranks by seconds to the target."""

    def __init__(self, base: RunConfig, budget_s: float):
        super().__init__(base, budget_s)
        self.phase = f"racing to {present.target_text(base)}"

    def begin(self, state, now):
        super().begin(state, now)
        state.search.progress = {"phase": self.phase}

    def work(self, update):
        from ...tuning import quality

        return quality.search(self.base.replace(target=None), float(self.base.target), trials=MAX_TRIALS,
                              timeout_s=self.budget_s, stop=self._stop,
                              on_progress=lambda event: update(lambda state: state.search_progress(
                                  {"phase": self.phase, "candidate": event["trial"], "of": None,
                                   "best": event["best"]})))

    def ended(self, state, result):
        best = result.best
        winner = {k: v for k, v in best.items() if k not in ("seconds_to_target", "trial")} if best else None
        rows = race_rows(result, self.base)
        state.search_ended(rows, self.base.replace(**winner) if winner else None,
                           description=None if winner else no_winner_text(rows, present.target_text(self.base)))
        state.search.settings = winner
        state.search.figure = history_figure(result)


def race_rows(result, base: RunConfig) -> list[dict]:
    """The study's trials as the search table's rows: the ones that reached the target ranked by seconds, then the
    others with why they stopped (pruned at a rung, the cap reached first, failed)."""
    rows = []
    for trial in result.study.trials:
        reached = bool(trial.user_attrs.get("reached"))
        status = ("reached" if reached else "pruned" if trial.state.name == "PRUNED" else
                  "failed" if trial.state.name == "FAIL" else "not reached")
        reason = {"pruned": "fell behind the others at an evaluation", "not reached": "its sample cap came first",
                  "failed": "the run failed"}.get(status)
        rows.append({"label": base.replace(**expand(trial.params), name=None).label, "status": status,
                     "seconds_to_target": trial.value if reached else None, "engine": trial.user_attrs.get("engine"),
                     "reason": reason, "trial": trial.number})
    ranked = sorted((r for r in rows if r["status"] == "reached"), key=lambda r: r["seconds_to_target"])
    for rank, row in enumerate(ranked, 1):
        row["rank"] = rank
    return ranked + [r for r in rows if r["status"] != "reached"]


def no_winner_text(rows: list[dict], target: str) -> str:
    """Why a race ended without a winner, in the table's words, and what to do: 'No configuration reached accuracy
    0.80 (3 tried: 2 fell behind the others at an evaluation, 1 reached its sample cap first); see
    the table. A longer budget or a lower target gives the race a winner.'"""
    if not rows:
        return (f"No configuration reached {target}: the budget ended before the first trial did. A longer budget "
                "gives the race a winner.")
    counts = {status: sum(r["status"] == status for r in rows) for status in ("pruned", "not reached", "failed")}
    words = {"pruned": "fell behind the others at an evaluation", "not reached": "reached its sample cap first",
             "failed": "failed"}
    parts = ", ".join(f"{n} {words[status]}" for status, n in counts.items() if n)
    return (f"No configuration reached {target} ({len(rows)} tried: {parts}); see the table. "
            "A longer budget or a lower target gives the race a winner.")


def history_figure(result) -> dict | None:
    """Optuna's optimisation history (plotly) as JSON for the Comparison tab, or None when plotly is missing."""
    try:
        from optuna.visualization import plot_optimization_history
    except ImportError:
        return None
    import json

    figure = plot_optimization_history(result.study, target_name="seconds to the target (projection when pruned)")
    return json.loads(figure.to_json())

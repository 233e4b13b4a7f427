"""Find fastest: the job that runs ``ortnb.tune`` in the background from the form's settings (host.py runs it).

The search's progress and result live in ``state.Search``; ``present`` words them. Load winner, which puts the
result in the form, is the Dashboard's (it is not a job: it only reads the state).
"""

from __future__ import annotations

import threading

from ...config import RunConfig
from ...tuning.tuner import DEFAULT_BUDGET_S
from .. import present
from .host import Job

__all__ = ["DEFAULT_BUDGET_S", "SearchJob", "json_rows"]


class SearchJob(Job):
    name = "Find fastest"
    action = "start Find fastest"
    tab = 1  # the ranked table is on the Comparison tab

    def __init__(self, base: RunConfig, budget_s: float):
        self.base, self.budget_s = base, float(budget_s)
        self._stop = threading.Event()

    def begin(self, state, now):
        state.start_search(self.budget_s, now)

    def work(self, update):
        from ...tuning import tune

        base = self.base
        return tune(base.model, base.dataset, budget_s=self.budget_s, base=base, stop=self._stop,
                    include_base=True,  # the form's own settings measured first: speed-ups are over them
                    on_progress=lambda event: update(lambda state: state.search_progress(event)))

    def ended(self, state, result):
        conclusive = bool(result.conclusive)
        state.search_ended(json_rows(result.table), result.best, conclusive=conclusive,
                           description=None if conclusive else result.describe())

    def failed(self, state, error):
        state.search_ended([], None, error=error)

    def stop(self):
        self._stop.set()

    def progress_text(self, state, now):
        return present.search_text(state.search, now) if state.search is not None else None


def json_rows(table) -> list[dict]:
    """A DataFrame's rows as plain dicts (NaN as None), for the pure state."""
    import json

    return json.loads(table.to_json(orient="records")) if table is not None else []

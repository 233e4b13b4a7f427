"""Find fastest: the Dashboard's part that runs ``ortnb.tune`` in the background and shows it.

A mixin of Dashboard (it uses the dashboard's state, lock, widgets and render); kept apart so each file
owns one behaviour. The search's progress and result live in ``state.Search``; ``present`` words them.
"""

from __future__ import annotations

import threading

from ..config import RunConfig
from . import present

DEFAULT_BUDGET_S = 180


class FindFastest:
    def find_fastest(self, budget_s: float | None = None, wait: bool | None = None):
        """Measure the configurations this machine can run for the form's model and data (``ortnb.tune``)
        in the background; the ranked table goes to the Comparison tab and Load winner fills the form.
        ``wait`` (default: without widgets) blocks and returns the TuneResult."""
        from ..tuning import tune

        base = self.panel.config if self.widgets else self._config
        budget_s = float(budget_s if budget_s is not None else (self.budget.value if self.widgets else DEFAULT_BUDGET_S))
        with self._lock:
            if self.state.busy:  # a run, a search, a profile or an export (profiling was once forgotten here)
                self.state.say(self.state.why_run_is_disabled(), "warning")
                self._show_message()
                return None
            self.state.start_search(budget_s, self.clock())
            self._search_stop.clear()
        self.render()

        def search():
            try:
                result = tune(base.model, base.dataset, budget_s=budget_s, base=base, stop=self._search_stop,
                              include_base=True,  # the form's own settings measured first: speed-ups are over them
                              on_progress=self._search_progress)
            except Exception as error:  # noqa: BLE001 - shown on the dashboard, never a thread traceback
                with self._lock:
                    self.state.search_ended([], None, error=str(error).splitlines()[0])
                self.render()
                return None
            rows = json_rows(result.table)
            conclusive = bool(getattr(result, "conclusive", True))
            with self._lock:
                self.state.search_ended(rows, result.best, conclusive=conclusive,
                                        description=None if conclusive else result.describe())
            self._table_key = None
            self.render()
            if self.widgets:
                self.tabs.selected_index = 1
            return result

        if wait if wait is not None else not self.widgets:
            return search()
        threading.Thread(target=search, name="ortnb-find-fastest", daemon=True).start()
        return None

    def _search_progress(self, event: dict) -> None:
        with self._lock:
            self.state.search_progress(event)
        if not self.widgets:
            print(present.search_text(self.state.search, self.clock()), flush=True)

    def load_winner(self) -> RunConfig | None:
        """Put the search's winner into the form (steps, learning rate and output folder stay yours)."""
        search = self.state.search
        if search is None or search.best is None:
            return None
        current = self.panel.config if self.widgets else self._config
        config, rule = present.winner_for_form(search.best, current)
        if self.widgets:
            self.panel.set_config(config)
            self.settings.selected_index = 0
        else:
            self._config = config
        what = "the fastest configuration" if search.conclusive else "the best measured configuration (not conclusive)"
        with self._lock:
            self.state.say(f"the form now holds {what}: {config.label}" + (f"; {rule}" if rule else ""))
        self.render()
        return config

    def _render_search_progress(self, search) -> None:
        self.progress.layout.display = "flex"
        event = search.progress
        self.bar.max = max(1, int(event.get("of") or 1))
        self.bar.value = self.bar.max if search.done else min(int(event.get("candidate") or 0), self.bar.max)
        self.bar.bar_style = "danger" if search.error else "success" if search.done else "info"
        self.progress_text.value = present.progress_html(present.search_text(search, self.clock()))



def json_rows(table) -> list[dict]:
    """A DataFrame's rows as plain dicts (NaN as None), for the pure state."""
    import json

    return json.loads(table.to_json(orient="records")) if table is not None else []


"""TuneResult: every candidate ranked (measured ones by how far they got and their samples/s, then the failed,
not measured and refused ones with the reason), the winning RunConfig, and the words for progress.
Pure: tested on exact values."""

from __future__ import annotations

from dataclasses import dataclass

from .. import judge
from ..stats import quartiles
from ..config import RunConfig
from ..contention import CONTENDED_SHARE
from . import learning_rate
from .search import ranked
from .space import Candidate

FORMAT = 1  # of the cache entry and tune.json
COLUMNS = ["rank", "label", "status", "samples_per_s", "p25", "p75", "real_tokens_per_s", "tokens_per_s", "mfu",
           "engine", "first_step_s", "steps_measured", "rung", "cost_s", "contended_share", "flag", "doubt", "reason",
           "yours", "vs_yours"]
HEADERS = {"rank": "#", "label": "configuration", "status": "status", "samples_per_s": "samples/s",
           "p25": "p25", "p75": "p75",
           "real_tokens_per_s": "real tokens/s", "tokens_per_s": "tokens/s", "mfu": "MFU %", "engine": "engine",
           "first_step_s": "first step s", "steps_measured": "steps", "rung": "rung", "cost_s": "run s",
           "flag": "judged"}
STATUS_ORDER = ("measured", "failed", "not measured", "refused")


def order(candidates: list[Candidate]) -> list[Candidate]:
    """The table's order: measured (furthest rung, then fastest), then the others by status."""
    rest = [c for c in candidates if c.status != "measured"]
    rest.sort(key=lambda c: (STATUS_ORDER.index(c.status), c.index))
    return ranked(candidates) + rest


def judged(candidate: Candidate) -> dict:
    """A candidate's measurements as the summary ``ortnb.judge`` reads (every measured step of every rung)."""
    summary = {"label": candidate.label, "samples_per_s": candidate.samples_per_s,
               "steps_measured": len(candidate.values("samples_per_s"))}
    for key in ("samples_per_s", "tokens_per_s"):
        low, high = quartiles(candidate.values(key))
        summary[f"{key}_iqr"] = None if low is None else high - low
        summary[key] = candidate.median(key)
    share = candidate.median("other_cpu")
    return {**summary, "contended_share": share, "contended": share is not None and share > CONTENDED_SHARE}


def _flag(summary: dict) -> str:
    """The judge's doubt in a word or two, for a table column."""
    verdict = judge.judge([summary])[0]
    return "too few steps" if not verdict.usable else "under load" if verdict.contended else "noisy"


def versus(candidate: Candidate, yours: Candidate | None) -> float | None:
    """A candidate's median samples/s as a multiple of your settings' (None when either has no figure)."""
    mine = yours.samples_per_s if yours is not None else None
    theirs = candidate.samples_per_s
    return round(theirs / mine, 2) if mine and theirs is not None else None


def yours_of(candidates: list[Candidate]) -> Candidate | None:
    return next((c for c in candidates if c.yours), None)


def row(candidate: Candidate, rank: int, yours: Candidate | None = None) -> dict:
    runs = candidate.runs
    engines = [r["engine"] for r in runs if r.get("engine")]
    low, high = quartiles(candidate.values("samples_per_s"))
    summary = judged(candidate)
    doubt = judge.doubt(summary, "its speed") if candidate.measured_runs() else None
    return {"rank": rank, "label": candidate.label, "status": candidate.status,
            "samples_per_s": candidate.samples_per_s, "p25": low, "p75": high,
            "real_tokens_per_s": candidate.median("real_tokens_per_s"),
            "tokens_per_s": candidate.median("tokens_per_s"), "mfu": candidate.median("mfu"),
            "engine": engines[-1] if engines else None,
            "first_step_s": next((r["first_step_s"] for r in runs if r.get("first_step_s") is not None), None),
            "steps_measured": len(candidate.values("samples_per_s")) if runs else None,
            "rung": candidate.rung or None,
            "cost_s": round(sum(r.get("cost_s") or 0.0 for r in runs), 1) if runs else None,
            "contended_share": candidate.median("other_cpu"), "doubt": doubt, "flag": _flag(summary) if doubt else None,
            "reason": candidate.reason, "yours": candidate.yours or None, "vs_yours": versus(candidate, yours),
            **candidate.axes}


@dataclass
class TuneResult:
    """What tune() found. ``table``: every candidate, ranked; ``best``: the winning RunConfig (base's settings
    with the winner's options; None when nothing was measured); ``configs``: every runnable candidate as a
    RunConfig named by its label (``ortnb.compare(result.configs)`` measures the same grid exhaustively)."""

    candidates: list[Candidate]
    best: RunConfig | None
    configs: list[RunConfig]
    grid: dict
    budget_s: float
    elapsed_s: float
    complete: bool  # every runnable candidate was measured (or failed) and nothing interrupted it
    interrupted: bool  # Stop or KeyboardInterrupt ended it; the next call resumes from its cache entry
    ended: str  # why the search ended, in words
    from_cache: bool = False
    cache_path: str | None = None
    created: str = ""
    learning_rate_rule: str | None = None  # how best's learning rate follows its global batch (learning_rate.py)

    @property
    def counts(self) -> dict[str, int]:
        """How many candidates have each status."""
        statuses = [c.status for c in self.candidates]
        return {status: statuses.count(status) for status in STATUS_ORDER}

    @property
    def table(self):
        import pandas as pd

        yours = yours_of(self.candidates)
        rows = [row(c, rank, yours) for rank, c in enumerate(order(self.candidates), 1)]
        table = pd.DataFrame(rows, columns=COLUMNS + list(self.grid))
        return table.astype({"steps_measured": "Int64", "rung": "Int64"})  # whole numbers, missing where unmeasured

    @property
    def searched(self) -> bool:
        """Whether every runnable candidate was measured (or failed) at least once."""
        runnable = [c for c in self.candidates if c.runnable]
        return bool(ranked(self.candidates)) and all(c.status in ("measured", "failed") for c in runnable)

    @property
    def doubt(self) -> str | None:
        """Why the winner's lead is no fact though every candidate was measured (``ortnb.judge``'s words): its
        speed has too few steps, is noisy or was measured under load, or other candidates were measured under
        load (a candidate slowed by another job may be the real winner). None when nothing casts doubt."""
        leaders = ranked(self.candidates)
        if not leaders:
            return None
        own = judge.doubt(judged(leaders[0]), "the winner")
        if own:
            return own
        loaded = [c.label for c in leaders[1:] if judged(c)["contended"]]
        if loaded:
            which = loaded[0] if len(loaded) == 1 else f"{len(loaded)} candidates"
            return f"{which} measured while other processes used the CPU"
        return None

    @property
    def conclusive(self) -> bool:
        """Whether the winner may be called the fastest: every runnable candidate was measured (or failed) at
        least once and the judge finds no doubt in the figures. Otherwise it is only the best of those
        measured, and the result says why."""
        return self.searched and self.doubt is None

    @property
    def min_budget_s(self) -> float | None:
        """About how long measuring every runnable candidate once takes here: the measured runs' mean cost times
        the runnable candidates (None before any run)."""
        costs = [r.get("cost_s") for c in self.candidates for r in c.runs[:1] if r.get("cost_s")]
        runnable = sum(c.runnable for c in self.candidates)
        return round(sum(costs) / len(costs) * runnable) if costs else None

    @property
    def rungs(self) -> int:
        return max((c.rung for c in self.candidates), default=0)

    def describe(self) -> str:
        """The winner and its figures, how much of the grid was measured, in what time; then the learning
        rate the winner trains with where its global batch differs from base's."""
        verdict = self._verdict()
        rule = self.learning_rate_rule
        return f"{verdict} Its {rule}." if rule and self.best is not None else verdict

    def _verdict(self) -> str:
        runnable = sum(c.runnable for c in self.candidates)
        scope = (f"measured {self.counts['measured']} of {runnable} runnable candidates "
                 f"({self.counts['refused']} refused) in {self.elapsed_s:.0f} s of {self.budget_s:g} s"
                 f"{' (from the cache)' if self.from_cache else ''}")
        leaders = ranked(self.candidates)
        if not leaders:
            return f"No candidate was measured ({self.ended}); {scope}."
        top = row(leaders[0], 1, yours_of(self.candidates))
        mfu = f", MFU {top['mfu']:.1%}" if top["mfu"] is not None else ""
        figures = f"{top['label']}, {top['samples_per_s']:.1f} samples/s{mfu} ({top['engine']}){_against_yours(top)}"
        if not self.searched:
            need = (f"; measuring all {runnable} needs a budget of about {self.min_budget_s:.0f} s"
                    if self.min_budget_s else "")
            return (f"Best of {self.counts['measured']} measured, not a search: {figures}; {scope}{need}.")
        if self.doubt:
            advice = ("measure again on a quiet machine" if "other processes" in self.doubt
                      else "measure again with a larger budget (more steps per candidate)")
            return f"Fastest measured, not conclusive ({self.doubt}): {figures}; {scope}; {advice}."
        return f"Fastest here: {figures}; {scope}."

    def to_dict(self) -> dict:
        from .. import __version__

        leaders = ranked(self.candidates)
        return {"format": FORMAT, "ortnb": __version__, "created": self.created, "budget_s": self.budget_s,
                "elapsed_s": round(self.elapsed_s, 2), "complete": self.complete, "interrupted": self.interrupted,
                "ended": self.ended, "grid": self.grid, "best": leaders[0].label if leaders else None,
                "conclusive": self.conclusive, "learning_rate_rule": self.learning_rate_rule,
                "best_config": _config_dict(self.best), "candidates": [c.to_dict() for c in self.candidates]}

    @classmethod
    def from_dict(cls, data: dict, base: RunConfig, from_cache: bool = False,
                  cache_path: str | None = None) -> "TuneResult":
        candidates = [Candidate.from_dict(c) for c in data["candidates"]]
        return build(candidates, base, data["grid"], budget_s=data["budget_s"], elapsed_s=data["elapsed_s"],
                     complete=data["complete"], interrupted=data["interrupted"], ended=data["ended"],
                     from_cache=from_cache, cache_path=cache_path, created=data.get("created", ""))

    def __repr__(self) -> str:  # deterministic: no times, no addresses
        leaders = ranked(self.candidates)
        best = repr(leaders[0].label) if leaders else None
        runnable = sum(c.runnable for c in self.candidates)
        return (f"TuneResult(best={best}, measured={self.counts['measured']} of {runnable}, "
                f"refused={self.counts['refused']}, complete={self.complete}, from_cache={self.from_cache})")


def build(candidates: list[Candidate], base: RunConfig, grid: dict, **fields) -> TuneResult:
    """The result for these candidates: the winner applied to ``base`` (its learning rate following the
    winner's global batch), every runnable one as a RunConfig (measured for speed: base's rate)."""
    leaders = ranked(candidates)
    best, rule = None, None
    if leaders:
        best, rule = learning_rate.follow_batch(base, base.replace(**leaders[0].axes))
    configs = [base.replace(**c.axes, name=c.label) for c in candidates if c.runnable]
    return TuneResult(candidates, best, configs, grid, **fields, learning_rate_rule=rule)


def _against_yours(top: dict) -> str:
    """How the winner compares with the settings the search started from, when it measured them."""
    if top.get("yours"):
        return ": your own settings, nothing measured was faster"
    if top.get("vs_yours") is None:
        return ""
    return f", {top['vs_yours']:.2f}x the speed of your settings"


def _config_dict(config: RunConfig | None) -> dict | None:
    if config is None:
        return None
    try:
        return config.to_dict()
    except TypeError:  # an in-memory datasets.Dataset: everything but the data
        return {**{k: v for k, v in vars(config).items() if k != "dataset"}, "dataset": None}


# -- in words ------------------------------------------------------------------------------------------


def table_text(found: TuneResult) -> str:
    """The ranked table with human column names and MFU in percent (reasons are listed by reason_lines)."""
    shown = found.table[list(HEADERS)].rename(columns=HEADERS)
    shown["MFU %"] = shown["MFU %"] * 100
    for name, digits in _DIGITS.items():  # as text here: to_string's formatters never see missing values
        shown[name] = [_number(value, digits) for value in shown[name]]
    return shown.fillna("-").to_string(index=False)


_DIGITS = {"samples/s": 1, "p25": 1, "p75": 1, "real tokens/s": 0, "tokens/s": 0, "MFU %": 2, "first step s": 2, "steps": 0, "rung": 0,
           "run s": 1}


def _number(value, digits: int) -> str:
    import pandas as pd

    return "-" if pd.isna(value) else f"{value:.{digits}f}"


def reason_lines(found: TuneResult, named: int = 3) -> list[str]:
    """One line per distinct (status, reason), in the table's order, with the candidates it concerns (their
    labels up to ``named`` of them, else how many)."""
    groups: dict[tuple, list[str]] = {}
    for candidate in order(found.candidates):
        if candidate.reason:
            groups.setdefault((candidate.status, candidate.reason), []).append(candidate.label)
    lines = []
    for (status, reason), labels in groups.items():
        which = ", ".join(labels) if len(labels) <= named else f"{len(labels)} candidates"
        lines.append(f"{status} ({which}): {reason}")
    return lines


# -- progress, in words --------------------------------------------------------------------------------


def format_progress(event: dict) -> str:
    """One line for a progress event of tune(on_progress=...) (pure)."""
    kind = event.get("event")
    if kind == "start":
        resumed = f"; {event['resumed']} measured before, resumed" if event.get("resumed") else ""
        return (f"{event['candidates']} candidates: {event['refused']} refused by validate(), {event['runnable']} "
                f"to measure within {event['budget_s']:g} s{resumed}")
    if kind == "waiting":
        return (f"other processes use {event['share']:.0%} of the CPU; waiting up to {event['timeout_s']:g} s for "
                f"a quiet machine before measuring (not counted in the budget)")
    where = f"{event.get('phase')}, candidate {event.get('candidate')} of {event.get('of')}"
    if kind == "candidate":
        return (f"{where}: {event['label']} (about {event['estimate_s']:.0f} s) | {event['elapsed_s']:.0f} s of "
                f"{event['budget_s']:g} s | best so far: {_best(event.get('best'))}")
    if kind == "result":
        if event.get("samples_per_s") is not None:
            return f"{where}: {event['samples_per_s']:.1f} samples/s, its run took {event['cost_s']:.0f} s"
        return f"{where}: {event['status']}: {event.get('reason') or 'no reason recorded'}"
    if kind == "done":
        return (f"done in {event['elapsed_s']:.0f} s of {event['budget_s']:g} s ({event['ended']}): "
                f"{event['measured']} measured; best: {_best(event.get('best'))}")
    return str(event)


def _best(best: dict | None) -> str:
    return f"{best['label']}, {best['samples_per_s']:.1f} samples/s" if best else "none yet"

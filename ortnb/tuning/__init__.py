"""ortnb.tune(): the fastest configuration this machine can run for a model and dataset, measured within a
time budget.

The candidates are every combination of a grid of options (backend, optimizer, precision, padding, processes,
batch size: ``default_grid`` says which values make sense here). validate() refuses some before anything runs;
the others are measured in short fresh runs (``ortnb.launch``) by successive halving (search.py), and the
result is cached per machine, model, data, grid and budget (cache.py). Progress goes to ``on_progress`` as
plain dicts (``format_progress`` words them), and ``stop`` ends a search like KeyboardInterrupt does.

ortnb.tune_to_target() (quality.py) ranks by what a user waits for instead: the seconds real runs take to reach a
target on the held-out split, in an Optuna study that prunes slow trials and persists in a SQLite file.
"""

from .quality import QualityResult, tune_to_target
from .result import TuneResult, format_progress, reason_lines, table_text
from .space import default_grid
from .tuner import DEFAULT_BUDGET_S, candidate_configs, minimum_budget, tune

__all__ = ["DEFAULT_BUDGET_S", "QualityResult", "TuneResult", "candidate_configs", "default_grid", "format_progress",
           "minimum_budget", "reason_lines", "table_text", "tune", "tune_to_target"]

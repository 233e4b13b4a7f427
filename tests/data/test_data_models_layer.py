"""data/ and models/ are what concerns a user's data and model, below everything that trains or shows a run: they
import nothing of ui/, runner/, tuning/, edge/, profiling/ or views/ (at any level, a function's import included);
data/ sits below models/ and imports none of it; and the old module paths still answer, for one release."""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import ortnb

from .._helpers import imported

ROOT = Path(ortnb.__file__).parent
ABOVE = ("ortnb.ui", "ortnb.runner", "ortnb.tuning", "ortnb.edge", "ortnb.profiling", "ortnb.views")


def _imports(package: str, prefixes: tuple[str, ...]) -> list[str]:
    paths = sorted((ROOT / package).rglob("*.py"))
    assert len(paths) >= 5, paths  # the package is there, and read
    return [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in paths for line, module in imported(path)
            if module in prefixes or module.startswith(tuple(f"{prefix}." for prefix in prefixes))]


@pytest.mark.parametrize("package", ["data", "models"])
def test_data_and_models_import_nothing_above_them(package):
    assert _imports(package, ABOVE) == []


def test_data_sits_below_models():
    # Before the split data.py imported assets.py whole, load_model included; the datasets now have their own module.
    assert _imports("data", ("ortnb.models",)) == []


def test_data_reaches_into_no_backend():
    # The token cache once took the cache folder from backends/ort_extensions; the folder has an owner of its own
    # now (ortnb/cache_folder.py), below every user of it.
    found = [re.sub(r":\d+ ", " ", where) for where in _imports("data", ("ortnb.backends", "ortnb.training"))]
    assert found == []


@pytest.mark.parametrize("old, new", [
    ("ortnb.data_checks", "ortnb.data.checks"), ("ortnb.datafiles", "ortnb.data.readers"),
    ("ortnb.data_columns", "ortnb.data.columns"), ("ortnb.token_cache", "ortnb.data.token_cache"),
    ("ortnb.model_checks", "ortnb.models.checks"), ("ortnb.weights", "ortnb.models.weights"),
    ("ortnb.predict", "ortnb.models.predict"),
])
def test_an_old_module_path_is_the_moved_module(old, new):
    assert importlib.import_module(old) is importlib.import_module(new)


def test_ortnb_data_keeps_the_names_it_had_as_a_module():
    from ortnb import data
    from ortnb.data import columns, preparation

    for name in ("build", "prepare", "Prepared", "EvalPlan", "NO_EVALUATION", "labels_for", "read_rows", "splits",
                 "stratified_split", "keep_rows", "padding_plan", "collator", "tokenize_classification",
                 "tokenize_causal"):
        assert getattr(data, name) is getattr(preparation, name), name
    assert (data.Columns, data.DEFAULT, data.TEXT, data.LABEL) == (columns.Columns, columns.DEFAULT, "text", "label")


def test_assets_answers_with_both_halves():
    from ortnb import assets
    from ortnb.data import builtin as datasets
    from ortnb.models import builtin as models

    assert assets.load_model is models.load_model and assets.MODELS is models.MODELS
    assert assets.rotten_tomatoes is datasets.rotten_tomatoes and assets.DATASETS is datasets.DATASETS
    assert assets.Asset is datasets.Asset and assets.digits is datasets.digits
    assert {name for name in vars(assets) if not name.startswith("_")} == set(assets.__all__)

"""Tiers are declared on the tests themselves, and the pure tier keeps its promise: a test without a tier marker
that loads ORTModule in the test process fails, naming the marker it lacks (conftest's guard)."""

from __future__ import annotations

import pytest


def test_a_pure_test_that_loads_ortmodule_is_told_to_declare_its_tier():
    from ortnb.backends import ort_compat

    told = r"test_tiers\.py::.* loads ORTModule in the test process: declare its tier with @pytest.mark.ort"
    with pytest.raises(pytest.fail.Exception, match=told):
        ort_compat.load_ortmodule()


def test_ort_model_in_the_pure_tier_fails_before_it_builds_ortmodule():
    import ortnb

    from ._helpers import tiny_bert

    with pytest.raises(pytest.fail.Exception, match="declare its tier"):
        ortnb.ort_model(tiny_bert(), fallback="allow")  # even where a failure would fall back to PyTorch


@pytest.mark.ort
def test_a_declared_test_loads_ortmodule():
    from ortnb.backends import ort_compat

    assert ort_compat.load_ortmodule().__name__ == "onnxruntime.training.ortmodule"

"""Shared fixtures (the plain functions they build on are in tests/_helpers.py) and the tiers' hooks."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

# The Hub is unreachable on CI; fail fast instead of retrying downloads (set before transformers is imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The plain functions the fixtures below build on.
from ._helpers import classification_dataset, tiny_bert  # noqa: E402,F401


@pytest.fixture
def bert():
    return tiny_bert()


@pytest.fixture
def train_data():
    return classification_dataset()


@pytest.fixture
def eval_data():
    return classification_dataset(rows=48, seed=1)


@pytest.fixture(scope="session")
def edge_artifacts(tmp_path_factory) -> Path:
    """Tiny BERT (MiniLM's vocabulary) exported for on-device training, seq_len 32, the default trainable
    weights: what ortnb.edge.train starts from or refuses bad input with. Built once for the session and read
    only: a test that damages artifacts copies this folder first."""
    pytest.importorskip("onnxruntime.training.api")
    from transformers import AutoTokenizer

    from ortnb.assets import MODELS
    from ortnb.edge import export_artifacts

    tokenizer = AutoTokenizer.from_pretrained(MODELS["minilm"].locate())
    folder = tmp_path_factory.mktemp("edge") / "artifacts"
    export_artifacts(tiny_bert(vocab_size=tokenizer.vocab_size), folder, tokenizer=tokenizer, seq_len=32)
    return folder


@pytest.fixture
def artifacts(request, tmp_path) -> Path:
    """Where a test keeps what a person should open after the suite (the browser tests' screenshots):
    ``$ORTNB_ARTIFACTS/<test name>`` where it is set (.ci/run sets it outside the checkout and prints it), else the
    test's own temporary folder. Never inside the checkout."""
    root = os.environ.get("ORTNB_ARTIFACTS")
    folder = Path(root) / request.node.name if root else tmp_path / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Tiers (scripts/test.sh --fast runs the pure one) are declared on the tests themselves:
# `pytestmark = pytest.mark.ort` in a module that trains or exports a model in this process (ORTModule, Trainer,
# the training API), `@pytest.mark.ort` on one such test; "slow" and "browser" likewise. Only nbval's notebook
# cells are marked here ("notebook"): they hold no Python to carry a marker. The pure tier carries none of them.


def pytest_configure(config):
    # A suite started in the background by a non-interactive shell (`bash .ci/run &`, nohup) inherits SIGINT
    # ignored, as POSIX has it, and so does every ortnb command it starts: the Ctrl-C tests need SIGINT as a
    # terminal delivers it. Python catches it again here, so the commands the tests start get it back too
    # (exec resets a caught signal to its default; an ignored one would stay ignored).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


TIERS = ("ort", "slow", "browser", "notebook")


@pytest.fixture(autouse=True)
def _ortmodule_only_where_declared(request, monkeypatch):
    """A test of the pure tier that loads ORTModule in this process fails, naming the marker it lacks: a test
    moved or renamed out of its tier says so instead of slowing the fast tier down (tests/test_tiers.py)."""
    if any(request.node.get_closest_marker(tier) for tier in TIERS):
        return
    from ortnb.backends import ort_compat

    def refused(*_args, **_kwargs):  # pytest.fail: no `except Exception` on the way (a fallback) can swallow it
        pytest.fail(f"{request.node.nodeid} loads ORTModule in the test process: declare its tier with "
                    "@pytest.mark.ort (or pytestmark = pytest.mark.ort in its module)")

    monkeypatch.setattr(ort_compat, "load_ortmodule", refused)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.path.suffix == ".ipynb":
            item.add_marker(pytest.mark.notebook)

"""Packaging promises: a light import, the setup command, the extension built on first use."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

HEAVY = ("onnxruntime", "deepspeed", "plotly", "ipywidgets")


def test_import_ortnb_stays_light():
    code = ("import sys, ortnb; ortnb.__version__; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.ort  # a fresh interpreter imports the trainer and the exporter
def test_public_names_resolve_lazily():
    code = ("import sys, ortnb; from ortnb import ORTTrainer, ORTTrainingArguments, export_onnx; "
            f"print([m for m in {HEAVY!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # even the trainer waits for the first ORT use


@pytest.mark.ort  # `ortnb info` loads ONNX Runtime training in a child process
def test_info_reports_versions():
    done = subprocess.run([sys.executable, "-m", "ortnb", "info", "--json"], capture_output=True, text=True, check=True)
    facts = json.loads(done.stdout)
    assert facts["torch"].startswith("2.") and facts["onnxruntime_version"] == "1.19.2"


@pytest.mark.ort  # `ortnb setup` loads ORTModule and its extension
def test_setup_makes_ortmodule_usable():
    done = subprocess.run([sys.executable, "-m", "ortnb", "setup"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "extension ready at" in done.stdout and "ORTModule imports" in done.stdout


def test_extension_is_built_on_first_use_with_a_message(tmp_path, monkeypatch, capsys):
    """An empty cache triggers a build that says what it is doing (the compiler is stood in for here)."""
    from ortnb.backends import ort_extensions

    real = ort_extensions.built_extension()
    if real is None:
        pytest.skip("needs one real build to copy; `ortnb setup` makes it")
    monkeypatch.setenv("ORTNB_CACHE", str(tmp_path))
    calls = []

    def fake_compiler(command, cwd, capture_output, text):
        calls.append(command)
        target = command[command.index("--build-lib") + 1]
        shutil.copy(real, target)
        return subprocess.CompletedProcess(command, 0, "compiled", "")

    monkeypatch.setattr(ort_extensions.subprocess, "run", fake_compiler)
    path = ort_extensions.ensure_extension()
    assert path.parent == ort_extensions.extension_dir() and str(tmp_path) in str(path)
    assert "build_ext" in calls[0]
    out = capsys.readouterr().out
    assert "building ONNX Runtime's aten_op_executor extension" in out and "built aten_op_executor" in out
    assert ort_extensions.ensure_extension() == path and len(calls) == 1  # the second call reuses the build


def test_failed_build_says_what_is_missing(tmp_path, monkeypatch):
    from ortnb.backends import ort_extensions

    monkeypatch.setenv("ORTNB_CACHE", str(tmp_path))
    monkeypatch.setattr(ort_extensions.subprocess, "run",
                        lambda command, **_: subprocess.CompletedProcess(command, 1, "", "g++: not found"))
    with pytest.raises(RuntimeError, match=r"(?s)Building aten_op_executor failed.*C\+\+ compiler.*g\+\+: not found"):
        ort_extensions.ensure_extension(log=lambda _message: None)


def test_format_step_is_exact():
    from ortnb.terminal import format_step

    record = {"step": 12, "loss": 0.693147, "samples_per_s": 58.25, "step_time": 0.2747, "mfu": 0.0412}
    assert format_step(record) == "step    12  loss 0.6931      58.2 samples/s    274.7 ms/step mfu 4.1%"


def test_binder_pins_match_the_tested_versions():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pins = dict(line.split("==") for line in (root / "requirements/constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    binder = (root / "binder/requirements.txt").read_text()
    for name, pinned in pins.items():
        assert f"{name}=={pinned}" in binder, name
    post_build = (root / "binder/postBuild").read_text()
    assert "set -e" in post_build and "ortnb setup" in post_build and "requirements/assets.txt" in post_build


def test_public_functions_survive_importing_every_submodule():
    """A submodule named like a public function would replace it on the package when imported."""
    import importlib
    import pkgutil

    import ortnb

    for module in pkgutil.walk_packages(ortnb.__path__, "ortnb."):
        if not module.name.endswith(("__main__",)):
            importlib.import_module(module.name)
    for name in ortnb.__all__:
        if name != "__version__":
            assert not isinstance(getattr(ortnb, name), type(ortnb)), f"ortnb.{name} is a module"
    assert callable(ortnb.compare) and callable(ortnb.validate) and callable(ortnb.capabilities)


def _imported_modules(path, name: str, modules: set[str]) -> set[str]:
    """The ortnb modules one module imports, at any level (a function-level import counts too)."""
    import ast

    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names)
    # A module importing its own parent package (or the top package) runs that package's __init__: not a cycle.
    return {m for m in found if m in modules and m != "ortnb" and not name.startswith(m + ".")}


def test_no_module_imports_one_that_imports_it_back():
    # runner/ and edge/ once reached each other through attach(), and the CLIs through format_step: a cycle
    # makes import order matter and hides which layer a module belongs to.
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "ortnb"
    paths = {".".join(p.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): p
             for p in root.rglob("*.py")}
    graph = {name: _imported_modules(path, name, set(paths)) for name, path in paths.items()}

    def reaches(start: str, goal: str) -> list[str] | None:
        seen, stack = set(), [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in graph[node]:
                if nxt == goal:
                    return trail + [goal]
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append((nxt, trail + [nxt]))
        return None

    cycles = [" -> ".join(trail) for name in graph if (trail := reaches(name, name))]
    assert cycles == [], cycles[:3]


def test_no_function_is_over_60_lines():
    # A function that does not fit on a screen hides its parts; split it where a name explains each part.
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "ortnb"
    too_long = [f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
                for path in sorted(root.rglob("*.py")) for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno - node.lineno >= 60]
    assert too_long == [], too_long


def test_ortnb_imports_no_module_kept_only_as_an_old_path():
    # The modules moved by issue 35 (records.py -> runs/records.py, ...) stay one release as aliases for notebooks
    # and users; ortnb's own code reads the new homes, so the aliases can go without touching it.
    from pathlib import Path

    from ._helpers import PACKAGE, imported, module_name

    aliases = {module_name(path) for path in PACKAGE.rglob("*.py") if "sys.modules[__name__] = _moved" in path.read_text()}
    assert {"ortnb.records", "ortnb.datafiles", "ortnb.runner.layout"} <= aliases  # the walk sees them
    reached = [f"{path.relative_to(PACKAGE.parent)}:{line} {name}" for path in sorted(PACKAGE.rglob("*.py"))
               if module_name(path) not in aliases for line, name in imported(Path(path))
               if name in aliases or name.rpartition(".")[0] in aliases]
    assert reached == [], reached

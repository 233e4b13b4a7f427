"""Helpers shared by test modules (a test module never imports another test module for these)."""
from __future__ import annotations

import ast
import os
import shutil
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "ortnb"


def delete_until_gone(folder, attempts: int = 50) -> None:
    """Delete a folder a process may still write into, as a user does: again until it is gone (one rmtree can
    meet a file the worker wrote meanwhile: "Directory not empty", which failed a test once on CI)."""
    for _ in range(attempts):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.1)
    raise AssertionError(f"{folder} could not be deleted in {attempts} tries")


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def imported(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in ``path``: at module level or inside a function, relative ones resolved,
    and importlib.import_module("...") with a literal name (the layer tests read these)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and isinstance(node.args[0].value, str)):
            found.append((node.lineno, node.args[0].value))
    return found

"""A web bundle's folder and which of its files are ortnb's.

``bundle.json`` lists every file ``web_bundle`` wrote beside it, with its sha256 (``written``). Writing a bundle
again replaces exactly those files, and only while they are still what ortnb wrote; everything else in the folder
(a person's notes, a page of their own) stays. A non-empty folder that is not an ortnb bundle is refused, never
emptied, whatever a file in it is called. Torch-free, stdlib only.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from ..errors import ConfigError
from ..files import sha256_of

MANIFEST = "bundle.json"
FORMAT = "ortnb-web-bundle/2"
# ortnb-web-bundle/1 (ortnb before the `written` list) wrote these names and nothing else: its files are known
# by name only, as that version wrote them.
FORMAT_1 = "ortnb-web-bundle/1"
FORMAT_1_FILES = ("index.html", "app.js", "rows.js", "chart.js", "tokenizer.js", "page.css", "data.json",
                  "eval.json", "ort/ort.training.wasm.min.js", "ort/ort-training-wasm-simd-threaded.mjs",
                  "ort/ort-training-wasm-simd-threaded.wasm", "artifacts/training_model.onnx",
                  "artifacts/eval_model.onnx", "artifacts/optimizer_model.onnx", "artifacts/checkpoint",
                  "artifacts/tokenizer.json")
SHOWN = 6  # entries named in a refusal before "and N more"


def listing(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` but the manifest: relative path (with /) -> sha256."""
    return {path.relative_to(folder).as_posix(): sha256_of(path) for path in sorted(folder.rglob("*"))
            if path.is_file() and path.relative_to(folder).as_posix() != MANIFEST}


def owned(out: Path) -> dict[str, str | None] | None:
    """The files ortnb wrote in ``out`` by its bundle.json (relative path -> sha256, None where only the name is
    known), or None when ``out`` holds no ortnb bundle."""
    try:
        description = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(description, dict):
        return None
    if description.get("format") == FORMAT and isinstance(description.get("written"), dict):
        listed = {str(name): str(sha) for name, sha in description["written"].items()}
    elif description.get("format") == FORMAT_1:
        listed = dict.fromkeys(FORMAT_1_FILES)
    else:
        return None
    # ortnb writes plain relative names: a list reaching outside the folder is not one ortnb wrote.
    return listed if all(_inside(out, name) for name in listed) else None


def _inside(out: Path, name: str) -> bool:
    relative = Path(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        return False
    return (out / relative).resolve().is_relative_to(out.resolve())


def check_destination(out: Path, new_files) -> dict[str, str | None]:
    """What in ``out`` a new bundle with ``new_files`` (relative paths) replaces; ConfigError, before anything is
    written, naming what it would otherwise destroy: a folder ortnb did not write, a file of ortnb's changed since,
    a file of the person's where the bundle writes one."""
    if not out.is_dir() or not any(out.iterdir()):
        return {}
    old = owned(out)
    if old is None:
        raise ConfigError(f"out_dir {str(out)!r} holds {_names(sorted(p.name for p in out.iterdir()))}, and no "
                          f"{MANIFEST} ortnb wrote: ortnb replaces only a bundle it wrote, so give an empty or new "
                          "folder for the bundle")
    edited = [name for name, sha in old.items() if sha and (out / name).is_file() and sha256_of(out / name) != sha]
    theirs = [name for name in sorted(new_files) if _blocked(out, name, old)]
    problems = []
    if edited:
        problems.append(f"out_dir {str(out)!r}: {_names(edited)} changed after ortnb wrote {_it(edited)} (not the "
                        f"sha256 {MANIFEST} lists), so writing the bundle again would lose the change: move "
                        f"{_it(edited)} out of the folder, or give another folder")
    if theirs:
        problems.append(f"out_dir {str(out)!r}: {_names(theirs)} {'is' if len(theirs) == 1 else 'are'} not ortnb's "
                        f"(not in {MANIFEST}'s list), and the bundle writes {_it(theirs)}: move {_it(theirs)} out of "
                        "the folder, or give another folder")
    if problems:
        raise ConfigError(problems)
    return old


def place(scratch: Path, out: Path, old: dict) -> None:
    """Move the bundle written in ``scratch`` into ``out``: ortnb's old files go, the person's stay, and the
    manifest comes last, so it never lists a file that is not yet in place."""
    out.mkdir(parents=True, exist_ok=True)
    for name in old:
        if (out / name).is_file():
            (out / name).unlink()
    for path in sorted(scratch.rglob("*")):
        name = path.relative_to(scratch).as_posix()
        if path.is_file() and name != MANIFEST:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, out / name)
    _drop_empty_folders(out, old)
    os.replace(scratch / MANIFEST, out / MANIFEST)
    shutil.rmtree(scratch, ignore_errors=True)


def _blocked(out: Path, name: str, old: dict) -> bool:
    """Whether something not ortnb's is where the bundle writes ``name`` (the file, or a file where its folder
    goes)."""
    parts = Path(name).parts
    for depth in range(1, len(parts) + 1):
        partial = "/".join(parts[:depth])
        here = out / partial
        if depth < len(parts) and here.is_file():
            return True
        if depth == len(parts) and here.exists() and partial not in old:
            return True
    return False


def _drop_empty_folders(out: Path, old: dict) -> None:
    folders = {str(Path(name).parent) for name in old} - {"."}
    for folder in sorted(folders, key=len, reverse=True):
        path = out / folder
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:SHOWN])
    return shown + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")


def _it(names: list) -> str:
    return "it" if len(names) == 1 else "them"

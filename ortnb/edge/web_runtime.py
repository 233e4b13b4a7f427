"""ONNX Runtime Web's training build, fetched from the npm registry at the pinned version into ortnb's cache.

The three files a page needs (the JavaScript API, the Emscripten loader, the 12 MB WebAssembly binary) come
from the registry's own tarball, checked against the registry's sha512 integrity, so they are never copied by
hand into a repository. ``ortnb setup`` fetches them; ``web_bundle`` copies them into each bundle.

A cache is a folder anyone can write, so each file is checked against its own pinned sha512 every time it is
used (``located``: the bundle, ``ortnb info``; ``fetch``: ``ortnb setup``), not only when downloaded; the page
loads them with the same values as subresource integrity. Torch-free, stdlib only.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = "1.19.2"  # the last onnxruntime-web with a training build, the same release as onnxruntime-training
TARBALL = f"https://registry.npmjs.org/onnxruntime-web/-/onnxruntime-web-{VERSION}.tgz"
# The registry's "dist.integrity" for that tarball (`npm view onnxruntime-web@1.19.2 dist.integrity`).
INTEGRITY = "sha512-r0ok6KpTUXR4WA+rHvUiZn7JoH02e8iS7XE1p5bXk7q3E0UaRFfYvpMNUHqEPiTBMuIssfBxDCQjUihV8dDFPg=="
API_SCRIPT = "ort.training.wasm.min.js"
LOADER = "ort-training-wasm-simd-threaded.mjs"
WASM = "ort-training-wasm-simd-threaded.wasm"
FILES = (API_SCRIPT, LOADER, WASM)
FETCH_COMMAND = "ortnb setup --web"
REFETCH_COMMAND = "ortnb setup --web --force"
# Each file's sha512 inside that tarball, in the form a page's integrity attribute takes. Read from the tarball
# `npm pack onnxruntime-web@1.19.2` gave, whose sha512 matched INTEGRITY; test_edge_web checks that a fetch
# gives these.
FILE_INTEGRITY = {
    API_SCRIPT: "sha512-A0FBU16TxNwh+nLMnZWBnjC5kfBejCGDWjD6uXPbwLz7dN0Oz75H3huXYEO+U2dCYSVXkgYehxa4ZSEhP3dt6A==",
    LOADER: "sha512-9EK5ANrWwxCnd5cOkN404V4Q0lsHYjTHcsehJT0aWkrU0/L2oJzsL7dKNx+6FVGrS8yikapgvDXUZALQ2u43yg==",
    WASM: "sha512-Ca/NsIjJnE6pnVEnazS2ZVJmh9fuvzJg1SY1OzIDqEx2GsBU8LQd3MkNIAK1m714fvSlaqpHoAqzwYmARIgbqw==",
}


class WebRuntimeMissing(FileNotFoundError):
    """The ORT Web files are not in the cache: the message says the command that fetches them."""


class WebRuntimeChanged(ValueError):
    """A cached ORT Web file is not the one the pinned release holds: the message names it and the command
    that fetches it again."""


def folder() -> Path:
    from ..cache_folder import cache_root

    return Path(os.environ.get("ORTNB_WEB_RUNTIME") or cache_root() / "onnxruntime-web" / VERSION)


def missing(where: Path | None = None) -> list[str]:
    where = folder() if where is None else Path(where)
    return [name for name in FILES if not (where / name).is_file() or (where / name).stat().st_size == 0]


def sri(payload: bytes) -> str:
    """The subresource-integrity form of a payload's sha512 ("sha512-" and base64), as FILE_INTEGRITY pins it."""
    return "sha512-" + base64.b64encode(hashlib.sha512(payload).digest()).decode()


def changed(where: Path | None = None) -> list[str]:
    """The files present in ``where`` whose sha512 is not the pinned one (absent files are missing(), not this)."""
    where = folder() if where is None else Path(where)
    return [name for name in FILES
            if (where / name).is_file() and sri((where / name).read_bytes()) != FILE_INTEGRITY[name]]


def changed_words(where: Path, names: list[str]) -> str:
    """What a changed cache means and the way out, in one sentence (the bundle's refusal, ortnb info's line)."""
    return (f"{_differs(where, names)}, and a page would run it. Fetch the files again with `{REFETCH_COMMAND}`")


def refetch_note(where: Path | None = None) -> str | None:
    """What ``ortnb setup --web`` says before it replaces changed cached files (None when none changed)."""
    where = folder() if where is None else Path(where)
    different = changed(where)
    return f"{_differs(where, different)}: fetching the files again" if different else None


def _differs(where: Path, names: list[str]) -> str:
    return (f"{', '.join(names)} in {where} {'differs' if len(names) == 1 else 'differ'} from onnxruntime-web@"
            f"{VERSION}'s (sha512 not the pinned one: edited or damaged since it was fetched)")


def read_checked(where: Path, name: str) -> bytes:
    """One file's bytes, refused (WebRuntimeChanged) unless they are the pinned release's: a bundle copies
    exactly the bytes it checked."""
    payload = (Path(where) / name).read_bytes()
    if sri(payload) != FILE_INTEGRITY[name]:
        raise WebRuntimeChanged(changed_words(Path(where), [name]))
    return payload


def located() -> Path:
    """The folder holding the three files, each the pinned release's; otherwise WebRuntimeMissing naming what is
    absent, or WebRuntimeChanged naming what differs, and how to fetch it."""
    where = folder()
    absent = missing(where)
    if absent:
        raise WebRuntimeMissing(
            f"ONNX Runtime Web {VERSION}'s training build is not in {where} ({', '.join(absent)} missing). Fetch "
            f"it from the npm registry with `{FETCH_COMMAND}` (scripts/env.sh runs it as part of the set-up), or "
            f"point ORTNB_WEB_RUNTIME at a folder holding {', '.join(FILES)} from onnxruntime-web@{VERSION}'s dist/")
    different = changed(where)
    if different:
        raise WebRuntimeChanged(changed_words(where, different))
    return where


def fetch(force: bool = False, url: str = TARBALL, timeout: float = 120) -> Path:
    """Download the npm tarball, check its integrity, and keep the three files; returns their folder. Cached
    files that differ from the pinned ones are fetched again, as if ``force``."""
    where = folder()
    if not force and not missing(where) and not changed(where):
        return where
    with urllib.request.urlopen(url, timeout=timeout) as response:
        payload = response.read()
    check_integrity(payload)
    where.parent.mkdir(parents=True, exist_ok=True)
    # Unpacked beside the cache and renamed in one step: a fetch cut short never leaves half a runtime.
    scratch = Path(tempfile.mkdtemp(prefix=".partial-", dir=where.parent))
    os.chmod(scratch, 0o755)  # mkdtemp makes it private; the cache is as readable as the rest of ~/.cache
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as archive:
            for name in FILES:
                member = archive.getmember(f"package/dist/{name}")
                with archive.extractfile(member) as source, open(scratch / name, "wb") as target:
                    shutil.copyfileobj(source, target)
        different = changed(scratch)
        if different:  # the tarball passed its own check: the pins in this file are what is wrong
            raise ValueError(f"{', '.join(different)} in the onnxruntime-web {VERSION} tarball differ from "
                             "web_runtime.FILE_INTEGRITY: the pins are wrong; report this to ortnb")
        if where.exists():
            shutil.rmtree(where)
        os.replace(scratch, where)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return where


def check_integrity(payload: bytes, integrity: str | None = None) -> None:
    integrity = integrity or INTEGRITY
    algorithm, _, expected = integrity.partition("-")
    found = base64.b64encode(hashlib.new(algorithm, payload).digest()).decode()
    if found != expected:
        raise ValueError(f"the onnxruntime-web {VERSION} tarball does not match the npm registry's integrity "
                         f"({integrity[:24]}..., got {algorithm}-{found[:16]}...): a proxy changed it or the "
                         "download was cut short. Run it again")

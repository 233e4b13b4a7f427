"""ONNX Runtime Web's training build, fetched from the npm registry at the pinned version into ortnb's cache.

The three files a page needs (the JavaScript API, the Emscripten loader, the 12 MB WebAssembly binary) come
from the registry's own tarball, checked against the registry's sha512 integrity, so they are never copied by
hand into a repository. ``ortnb setup`` fetches them; ``web_bundle`` copies them into each bundle.
Torch-free, stdlib only.
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


class WebRuntimeMissing(FileNotFoundError):
    """The ORT Web files are not in the cache: the message says the command that fetches them."""


def folder() -> Path:
    from ..backends.ort_extensions import cache_root

    return Path(os.environ.get("ORTNB_WEB_RUNTIME") or cache_root() / "onnxruntime-web" / VERSION)


def missing(where: Path | None = None) -> list[str]:
    where = folder() if where is None else Path(where)
    return [name for name in FILES if not (where / name).is_file() or (where / name).stat().st_size == 0]


def located() -> Path:
    """The folder holding the three files, or WebRuntimeMissing naming what is absent and how to fetch it."""
    where = folder()
    absent = missing(where)
    if absent:
        raise WebRuntimeMissing(
            f"ONNX Runtime Web {VERSION}'s training build is not in {where} ({', '.join(absent)} missing). Fetch "
            f"it from the npm registry with `{FETCH_COMMAND}` (scripts/env.sh runs it as part of the set-up), or "
            f"point ORTNB_WEB_RUNTIME at a folder holding {', '.join(FILES)} from onnxruntime-web@{VERSION}'s dist/")
    return where


def fetch(force: bool = False, url: str = TARBALL, timeout: float = 120) -> Path:
    """Download the npm tarball, check its integrity, and keep the three files; returns their folder."""
    where = folder()
    if not force and not missing(where):
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

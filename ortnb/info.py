"""What ``ortnb info`` says: this machine's facts as plain data (``facts()``, which looks) and the lines
printed for them (``lines(facts)``, pure, tested on exact values).

Which engine runs which precision comes from validation.engine_precisions: the same rules validate() refuses
a run with, so this table and a refused run never disagree.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from . import _imports
from .edge.web_runtime import FETCH_COMMAND, changed_words

LABEL_WIDTH = 22  # the longest label, "onnxruntime training", and two spaces
PRECISION_WORDS = {"no": "fp32", "bf16": "bf16", "fp16": "fp16"}
BROWSER_USES = "the browser tests and web bundles trained headless (ortnb.edge.train_in_browser)"


def facts() -> dict:
    """Versions and what this machine can run, as plain data (``ortnb info --json`` prints it)."""
    import torch

    from .backends import ort_extensions
    from .edge import web_browser, web_runtime
    from .hardware import capabilities, cpu_info
    from .validation import engine_precisions

    caps = capabilities()
    built = ort_extensions.built_extension() if caps.ort_training else None
    return {
        "cpu": cpu_info().signature,
        "cores": caps.cpu_cores,
        "bf16_native": caps.bf16_cpu_native,
        "cuda": caps.cuda,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "onnxruntime_training": caps.ort_training,
        "onnxruntime_version": caps.ort_version,
        "ort_extension": str(built) if built else None,
        "engines": engine_precisions(caps),
        "deepspeed": _imports.deepspeed_import(),
        "chromium": web_browser.chromium(),
        "playwright": importlib.util.find_spec("playwright") is not None,
        "onnxruntime_web": None if web_runtime.missing() else str(web_runtime.folder()),
        "onnxruntime_web_version": web_runtime.VERSION,
        "onnxruntime_web_changed": web_runtime.changed(),
    }


def lines(found: dict) -> list[str]:
    """The lines ``ortnb info`` prints for ``facts()``: a label, then what it means for a run here."""
    rows = [("cpu", found["cpu"]), ("cores", str(found["cores"])), ("bf16 on this CPU", _bf16(found["bf16_native"])),
            ("cuda", "yes" if found["cuda"] else "no"), ("python", found["python"]), ("torch", found["torch"]),
            ("onnxruntime training", _ort(found))]
    if found["onnxruntime_training"]:
        rows.append(("ort extension", found["ort_extension"] or "not built (`ortnb setup` builds it, or the first "
                                                               "ORT run does)"))
    rows += _engine_rows(found["engines"])
    rows += [("deepspeed", _deepspeed(found["deepspeed"])), ("chromium", _chromium(found)),
             ("onnxruntime web", _web(found))]
    return [f"{label:<{LABEL_WIDTH}}{value}".rstrip() for label, value in rows]


def _bf16(native: bool) -> str:
    if native:
        return "native (AVX512-BF16 or AMX): CPU runs may use precision='bf16'"
    return "emulated (no AVX512-BF16 or AMX): bf16 would be tens of times slower than fp32, so CPU runs refuse " \
           "precision='bf16'"


def _ort(found: dict) -> str:
    if not found["onnxruntime_training"]:
        return f"not installed: {_imports.ORT_INSTALL_HINT}"
    return f"{found['onnxruntime_training']} {found['onnxruntime_version']}"


def _engine_rows(table: dict[str, dict[str, str | None]]) -> list[tuple[str, str]]:
    """Engines that run (with their precisions), then one row per refused engine or engine + precision."""
    usable = [engine for engine, states in table.items() if states["no"] is None]
    precisions = "; ".join(f"{engine}: {', '.join(PRECISION_WORDS[p] for p, why in table[engine].items() if not why)}"
                           for engine in usable)
    rows = [("engines", ", ".join(usable) or "none"), ("precisions", precisions or "none")]
    refused = []
    for engine, states in table.items():
        if states["no"] is not None:  # the engine itself cannot run: its precisions would repeat the reason
            refused.append(f"{engine}: {states['no']}")
            continue
        refused += [f"{engine} + {PRECISION_WORDS[p]}: {why}" for p, why in states.items() if why]
    return rows + [("refused here" if i == 0 else "", text) for i, text in enumerate(refused)]


def _deepspeed(state: dict) -> str:
    if state["version"] is None:
        return "not installed: pip install 'ortnb[deepspeed]' (ZeRO-1 needs it)"
    if state["error"]:
        return (f"{state['version']} installed, but `import deepspeed` fails ({state['error']}): ZeRO-1 runs would "
                "fail; reinstall it with pip install 'ortnb[deepspeed]'")
    return f"{state['version']}, importable: ZeRO-1 can run (with 2 or more processes)"


def _chromium(found: dict) -> str:
    if found["chromium"] is None:
        return (f"not found: {BROWSER_USES} skip; apt-get install chromium, or set ORTNB_CHROMIUM to a Chromium "
                "executable")
    if not found["playwright"]:
        return f"{found['chromium']}, but playwright is not installed, so {BROWSER_USES} skip: pip install playwright"
    return f"{found['chromium']}: {BROWSER_USES} can run"


def _web(found: dict) -> str:
    if found["onnxruntime_web"] is None:
        return f"{found['onnxruntime_web_version']} not fetched (`{FETCH_COMMAND}`; `ortnb edge web` needs it)"
    if found.get("onnxruntime_web_changed"):  # web_runtime checks the pinned sha512 of each file
        return f"refused: {changed_words(Path(found['onnxruntime_web']), found['onnxruntime_web_changed'])}"
    return f"{found['onnxruntime_web_version']} in {found['onnxruntime_web']}"

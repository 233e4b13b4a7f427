"""Comparison presets and the self-contained HTML/JSON report of a comparison."""

from __future__ import annotations

import json
import math
import platform
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .hardware import Capabilities, capabilities, cpu_info
from .config import RunConfig, Task
from .views.comparison_table import html_table, text_table  # noqa: F401 - text_table: ortnb compare prints it
from .views.markup import Markup, join, tag
from .validation import run_task

METHOD = (
    "Each configuration ran in fresh worker processes with the same model, data and seed. The first warm-up "
    "steps (graph export, allocator warm-up) are excluded; throughput is the median samples/s of the remaining "
    "steps, with the interquartile range as spread. With several repeats the configurations alternate "
    "(A B C A B C ...). Speed-ups are ratios of medians measured in this one invocation. The engine column is "
    "what really executed the training steps: an ORT run that fell back to PyTorch shows 'pytorch' and does not "
    "count as ORT. MFU is model FLOPs (6N + 12LdT per token) per second over this machine's measured matmul peak."
)
PACKAGES = ("torch", "transformers", "onnxruntime-training-cpu", "onnxruntime-training", "deepspeed", "accelerate")


def optimum_preset(base: RunConfig, caps: Capabilities | None = None) -> list[RunConfig]:
    """Optimum's published comparison, as far as this machine can run it.

    PyTorch + AdamW (baseline); PyTorch + fused AdamW (so the table shows what the engine buys apart
    from the optimizer); ORT + a fused optimizer (ORT's FusedAdam on CUDA, torch's fused AdamW on the CPU,
    each row named after the one that runs);
    ORT + ZeRO-1 over 2 processes; plus eager bf16 and torch.compile where supported. Rows are padded
    to ``seq_len`` as in Optimum's examples unless ``base.padding`` says otherwise.
    """
    caps = caps or capabilities()
    if run_task(base) != Task.CAUSAL_LM and base.padding is None:
        base = base.replace(padding="max_length")  # Optimum's examples padded every row to the sequence length
    # The ORT rows are named after the optimizer that really runs: ORT's FusedAdam is a CUDA kernel, so on a CPU
    # they use torch's fused AdamW (as the form words it).
    fused, fused_name = ("adamw_ort_fused", "fused Adam (ORT)") if caps.ort_cuda else \
        ("adamw_torch_fused", "fused AdamW (torch)")
    # PyTorch + fused AdamW separates what the engine buys from what the fused optimizer buys.
    configs = [base.replace(backend="eager", optim="adamw_torch", name="PyTorch + AdamW"),
               base.replace(backend="eager", optim="adamw_torch_fused", name="PyTorch + fused AdamW"),
               base.replace(backend="ort", optim=fused, name=f"ORT + {fused_name}")]
    if caps.deepspeed and (caps.cuda or caps.cpu_cores >= 2):
        configs.append(base.replace(backend="ort", optim=fused, zero_stage=1, num_processes=2,
                                    name=f"ORT + {fused_name} + ZeRO-1 x2"))
    if caps.cuda or caps.bf16_cpu_native:
        configs.append(base.replace(backend="eager", optim="adamw_torch", precision="bf16",
                                    name="PyTorch bf16 + AdamW"))
    if caps.torch_compile:
        configs.append(base.replace(backend="compile", optim="adamw_torch", name="torch.compile + AdamW"))
    return configs


def versions() -> dict:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    found["python"] = platform.python_version()
    return found


def machine() -> dict:
    caps = capabilities()
    cpu = cpu_info()
    return {"cpu": cpu.name, "cpu_signature": cpu.signature, "cores": caps.cpu_cores, "cuda": caps.cuda,
            "bf16_cpu_native": caps.bf16_cpu_native}


def results(table, configs: list[RunConfig], command: str, runs: list[list[dict]] | None = None,
            incomplete: str | None = None) -> dict:
    """Everything needed to read and reproduce a comparison, as plain data. ``incomplete``: why not every run
    was measured (an interrupted compare), else None."""
    from .comparison import describe_best, describe_quality

    return {"command": command, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "method": METHOD,
            "machine": machine(), "versions": versions(), "configs": [c.to_dict() for c in configs],
            "table": json.loads(table.to_json(orient="records")), "best": describe_best(table),
            "quality": describe_quality(table), "notes": list(table.attrs.get("notes") or []), "runs": runs or [],
            "incomplete": incomplete}


def strict_json(value):
    """NaN and infinities as null: results.json must parse with any JSON reader, not only Python's
    (a run stopped by a NaN loss has final_loss NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    return value


def write(table, configs: list[RunConfig], out_dir: str | Path, command: str,
          runs: list[list[dict]] | None = None, incomplete: str | None = None, profile=None) -> tuple[Path, Path]:
    """Write results.json and a self-contained report.html (plotly inlined: opens offline); ``incomplete`` says
    in both why not every run was measured. ``profile`` (a Profile, ``compare --profile``): where each
    configuration's step goes, in the page and as profile.json beside it."""
    from .charts import comparison_figure

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = results(table, configs, command, runs, incomplete)
    json_path = out / "results.json"
    json_path.write_text(json.dumps(strict_json(data), indent=2, allow_nan=False))
    figure = Markup(comparison_figure(table).to_html(full_html=False, include_plotlyjs=True,
                                                     config={"responsive": True, "displaylogo": False}))
    facts = (tag("li", tag("b", FACT_NAMES.get(k, k)), ": ", _fact(v))
             for k, v in {**data["machine"], **data["versions"]}.items())
    notes = [tag("li", n) for n in data["notes"]]
    profiled = _profile_section(profile, out) if profile is not None else ""
    body = tag("body", tag("h1", "ortnb comparison"),
               tag("p", tag("code", command), " \u2014 ", data["date"]),
               tag("p", tag("b", "Incomplete"), f": {incomplete}.") if incomplete else "",
               tag("p", tag("b", data["best"])),
               tag("p", tag("b", data["quality"])) if data["quality"] else "",
               tag("ul", *notes, class_="notes") if notes else "", figure, html_table(table), profiled,
               tag("h2", "Method"), tag("p", METHOD), tag("h2", "Machine and versions"), tag("ul", *facts),
               tag("p", "Every figure of every run is in ", tag("code", "results.json"), " beside this page."))
    head = tag("head", Markup("<meta charset='utf-8'><meta name='viewport' content='width=device-width'>"),
               tag("title", "ortnb comparison"), tag("style", Markup(REPORT_STYLE)))
    page = "<!doctype html>" + tag("html", head, body)
    html_path = out / "report.html"
    html_path.write_text(page)
    return json_path, html_path


def _profile_section(profile, out: Path) -> Markup:
    """The profile's stacked bars and top ops (plotly is already on the page), and profile.json beside it."""
    from .profiling import views

    data = profile.to_dict()
    (out / "profile.json").write_text(json.dumps(strict_json(data), indent=1, default=str))
    chart = Markup(views.figure(data).to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False}))
    return join([tag("h2", "Where a step goes"),
                 tag("p", "Each configuration profiled in a fresh run of its own after the measurements "
                          "(profile.json has every figure)."), chart, views.sections_html(data)])


# The page fits 1000 px: cells wrap between words, never inside a word or a number, and a table wider than
# the page scrolls in its own box rather than the page sideways (as in the Dashboard, ortnb/ui/style.py).
REPORT_STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:0 12px} "
                "code{overflow-wrap:anywhere} .table{overflow-x:auto} table{border-collapse:collapse} "
                "td,th{padding:4px 8px;vertical-align:top;text-align:left;word-break:normal;overflow-wrap:normal} "
                "td.number{text-align:right;white-space:nowrap} tr:nth-child(even){background:#f6f6f6} "
                ".notes{color:#8a5a00}")


FACT_NAMES = {"cpu": "CPU", "cpu_signature": "CPU features", "cores": "cores", "cuda": "CUDA GPU",
              "bf16_cpu_native": "native bf16 on the CPU"}


def _fact(value) -> str:
    return "yes" if value is True else "no" if value is False else str(value)


MARKDOWN_COLUMNS = [("label", "run"), ("engine", "engine"), ("samples_per_s", "samples/s (median)"),
                    ("p25", "p25–p75"), ("verdict", "speed-up"), ("peak_rss_mb", "peak memory (MB)"),
                    ("mfu", "MFU"), ("first_step_s", "first step (s)")]


def _known(value) -> bool:
    return isinstance(value, (int, float)) and value == value


def markdown_table(table) -> str:
    """The table as GitHub markdown (for README and benchmarks/): the spread as p25–p75 and the speed-up in the
    judge's words (a speed-up that is no fact says why), as the Dashboard and report.html show them."""
    header = ("| " + " | ".join(title for _, title in MARKDOWN_COLUMNS) + " |\n|" + "---|" * len(MARKDOWN_COLUMNS)
              + "\n")
    rows = []
    for record in table.to_dict(orient="records"):
        cells = []
        for column, _ in MARKDOWN_COLUMNS:
            value = record.get(column)
            if column == "p25":
                low, high = record.get("p25"), record.get("p75")
                value = f"{low:.1f}–{high:.1f}" if _known(low) and _known(high) else "–"
            elif column == "verdict" and not value:
                speedup = record.get("speedup")
                value = f"{speedup:.2f}x" if _known(speedup) else "–"
            elif isinstance(value, float):
                value = f"{value:.1%}" if column == "mfu" else f"{value:.1f}" if _known(value) else "–"
            cells.append(str(value if value is not None else "–").replace("|", "/"))
        rows.append("| " + " | ".join(cells) + " |")
    return header + "\n".join(rows) + "\n"

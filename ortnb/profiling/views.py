"""What a Profile looks like: a stacked bar per configuration (ms per step by category), the top ops with their
shapes, and the same in plain text for a terminal. The numbers come from pure functions of the profile's dict
(``Profile.to_dict()``), so a chart, a page and a test read the same values."""

from __future__ import annotations

from ..views.markup import Markup, escape, join, tag

from .. import judge, stats
from .categories import CATEGORIES

# One colour per category, the same in every view (matrix products, the usual bulk, in the strongest one).
COLOURS = dict(zip(CATEGORIES, ("#1f4e9c", "#7b3fa0", "#2a8a5a", "#d08a1a", "#8c564b", "#9aa3ad", "#c0392b",
                                "#17becf", "#e3e3e3")))


def bar_label(label: str, engine: str) -> str:
    """A bar's name says which engine really ran its steps (ORTModule can fall back to PyTorch)."""
    return f"{label} [{engine}]"


def stacked_bars(data: dict) -> list[dict]:
    """One trace per category: x = the configurations' bar labels, y = ms per step, text = share in percent
    (pure: the chart's numbers, tested on exact values)."""
    labels = list(data["step_ms"])
    cells = {(row["label"], row["category"]): row for row in data["table"]}
    traces = []
    for name in CATEGORIES:
        found = [cells.get((label, name)) for label in labels]
        traces.append({"name": name, "x": [bar_label(label, data["engines"][label]) for label in labels],
                       "y": [row["ms_per_step"] if row else 0.0 for row in found],
                       "text": [share_text(row["share"]) if row else "" for row in found],
                       "colour": COLOURS[name]})
    return traces


def share_text(share: float | None) -> str:
    return "" if share is None else f"{share * 100:.0f}%"


def cost_text(data: dict, label: str) -> str:
    """'profiled 41.2 ms a step, 38.0 without the profiler (+8%)' (pure)."""
    profiled, plain = data["step_ms"][label], data["unprofiled_step_ms"].get(label)
    if not plain:
        return f"profiled {profiled:.1f} ms a step (no unprofiled steps to compare with)"
    return f"profiled {profiled:.1f} ms a step, {plain:.1f} without the profiler ({profiled / plain - 1:+.0%})"


def matmul_text(data: dict, label: str) -> str:
    """'matrix products: 21.4 GFLOP/s, 25% of the measured peak (86.8 GFLOP/s)' (pure); '' when unknown."""
    found = (data.get("matmul") or {}).get(label) or {}
    if not found.get("gflops"):
        return ""
    words = f"matrix products: {found['gflops']:.1f} GFLOP/s"
    if found.get("of_peak"):
        words += f", {found['of_peak']:.0%} of the measured peak ({found['peak_gflops']:.1f} GFLOP/s)"
    return words


def fusion_lines(data: dict, label: str) -> list[str]:
    """What ORT's passes changed for an ORT run, in words (pure); [] for other runs."""
    found = (data.get("fusions") or {}).get(label)
    if not found:
        return []
    nodes = found["nodes"]
    lines = [f"ORT's graph: {nodes.get('torch_exported', 0)} nodes exported, {nodes.get('optimized_pre_grad', 0)} in the "
             f"optimized forward graph, {nodes.get('execution_model', 0)} in the training graph it runs"]
    for row in found["fused"]:
        how = ("one node already in the export" if row["exported"] else f"{row['where']}, replacing {row['replaces']}")
        lines.append(f"{row['op']}: {row['training']} in the training graph ({how})")
    if found["removed"]:
        lines.append("removed by the forward passes: " + ", ".join(f"{row['op']} {row['exported']} -> {row['forward']}"
                                                                  for row in found["removed"]))
    return lines


def figure(data: dict):
    import plotly.graph_objects as go

    fig = go.Figure()
    for trace in stacked_bars(data):
        fig.add_bar(name=trace["name"], x=[escape(x) for x in trace["x"]], y=trace["y"],  # run names: text
                    text=trace["text"], textposition="inside",
                    marker_color=trace["colour"], hovertemplate="%{x}<br>" + trace["name"] + ": %{y:.2f} ms (%{text})"
                                                                "<extra></extra>")
    fig.update_layout(barmode="stack", title="Where a training step goes (ms per step, profiled steps)",
                      yaxis_title="ms per step", legend_traceorder="normal", height=480, margin={"t": 60})
    return fig


def top_rows(data: dict, label: str) -> list[dict]:
    """The top ops of one configuration as display cells (pure)."""
    return [{"op": row["op"], "engine": row["engine_of_op"], "category": row["category"],
             "ms per step": f"{row['ms_per_step']:.2f}", "calls per step": f"{row['calls_per_step']:.1f}",
             "shapes": ", ".join(str(shape) for shape in row["shapes"][:3])}
            for row in data["top_ops"] if row["label"] == label]


def text(data: dict) -> str:
    """The profile for a terminal: per configuration, each category's ms and share, then the top 5 ops."""
    lines = []
    cells = {(row["label"], row["category"]): row for row in data["table"]}
    for label in data["step_ms"]:
        lines.append(f"{bar_label(label, data['engines'][label])}: {cost_text(data, label)}")
        if matmul_text(data, label):
            lines.append(f"  {matmul_text(data, label)}")
        for name in CATEGORIES:
            row = cells.get((label, name))
            if row and row["ms_per_step"] > 0:
                lines.append(f"  {name:<20} {row['ms_per_step']:8.2f} ms  {share_text(row['share']):>4}")
        for row in top_rows(data, label)[:5]:
            lines.append(f"    {row['ms per step']:>7} ms  {row['op']}  ({row['category']}; {row['shapes'] or 'no shapes'})")
        lines += [f"  {line}" for line in fusion_lines(data, label)]
        lines += [f"  note: {note}" for note in data["notes"].get(label, [])]
    labels = list(data["step_ms"])
    if len(labels) == 2:
        lines += ["side by side:", *(f"  {line}" for line in differences(data, *labels))]
    return "\n".join(lines)


STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:0 12px} .table{overflow-x:auto} "
         "table{border-collapse:collapse} td,th{padding:4px 8px;text-align:left;vertical-align:top} "
         "tr:nth-child(even){background:#f6f6f6} .notes{color:#8a5a00} code{overflow-wrap:anywhere}")


def sections_html(data: dict) -> Markup:
    """Per configuration: its step time and what profiling cost, its matrix products' rate, notes, the top ops
    table and what ORT fused (pure: HTML text; the page and the Dashboard's Profile tab both show it)."""
    sections = []
    labels = list(data["step_ms"])
    if len(labels) == 2:
        sections.append(tag("ul", *(tag("li", line) for line in differences(data, *labels)),
                            class_="ortnb-profile-differences"))
    for label in labels:
        sections.append(_section(data, label))
    return join(sections)


def _section(data: dict, label: str) -> Markup:
    rows = top_rows(data, label)
    head = tag("tr", *(tag("th", name) for name in (rows[0] if rows else {})))
    body = (tag("tr", *(tag("td", value) for value in row.values())) for row in rows)
    notes = data["notes"].get(label, [])
    matmul = matmul_text(data, label)
    return join([tag("h3", bar_label(label, data["engines"][label])),
                 tag("p", cost_text(data, label), f"; {matmul}" if matmul else "", "; run folder ",
                     tag("code", data["runs"].get(label, ""))),
                 tag("ul", *(tag("li", note) for note in notes), class_="notes") if notes else "",
                 tag("div", tag("table", head, *body), class_="table"),
                 *(tag("p", line) for line in fusion_lines(data, label))])


def page_html(profile) -> str:
    """A self-contained page (plotly inlined: it opens offline)."""
    data = profile.to_dict()
    chart = Markup(figure(data).to_html(full_html=False, include_plotlyjs=True, config={"displaylogo": False}))
    body = tag("body", tag("h1", "Where a training step goes"),
               tag("p", "Self time of every op in the profiled steps, in categories both engines share; framework "
                        "overhead is the step time no op accounts for."), chart, sections_html(data))
    head = tag("head", Markup("<meta charset='utf-8'>"), tag("title", "ortnb profile"), tag("style", Markup(STYLE)))
    return "<!doctype html>" + tag("html", head, body)


# Why ORT's time in a category can differ, when its passes fused that category's ops (fusions.REPLACES' types).
FUSED_IN = {"activations": ("Gelu", "FastGelu", "BiasGelu", "QuickGelu"),
            "normalisation": ("LayerNormalization", "SimplifiedLayerNormalization", "SkipLayerNormalization"),
            "matrix products": ("FusedMatMul", "FusedGemm"),
            "attention": ("BiasSoftmax", "Attention", "MultiHeadAttention"),
            "element-wise/other": ("BiasDropout", "BitmaskDropout", "SoftmaxCrossEntropyLossInternal")}


def differences(data: dict, first: str, second: str, top: int = 3, least_ms: float = 0.5) -> list[str]:
    """Where two profiled configurations differ most, in words (pure): 'ort + AdamW [onnxruntime] spends 12.3 ms
    less a step in activations than eager + AdamW [pytorch] (2.7 against 15.0 ms): its graph runs 6 Gelu
    kernels, each fused from Div, Erf, ...'. A difference is stated so only where the judge (judge.py) finds
    both configurations' profiled steps enough, quiet and measured on a quiet machine, and it is wider than
    those steps' spread; else its figures come with why they are no finding. Categories apart by less than
    ``least_ms`` are left out."""
    cells = {(row["label"], row["category"]): row["ms_per_step"] for row in data["table"]}
    names = {label: bar_label(label, data["engines"][label]) for label in (first, second)}
    doubt, noise = profile_doubt(data, names), step_noise_ms(data, names)
    gaps = []
    for category in CATEGORIES:
        a, b = cells.get((first, category), 0.0), cells.get((second, category), 0.0)
        if abs(a - b) >= least_ms:
            gaps.append((abs(a - b), category, a, b))
    lines = []
    for gap, category, a, b in sorted(gaps, reverse=True)[:top]:
        if doubt is None and gap > noise:
            less, more = (second, first) if b < a else (first, second)
            lines.append(f"{names[less]} spends {gap:.1f} ms less a step in {category} than {names[more]} "
                         f"({min(a, b):.1f} against {max(a, b):.1f} ms)" + _why(data, less, category))
        else:
            lines.append(f"{category}: {a:.1f} vs {b:.1f} ms a step ({names[first]} vs {names[second]})"
                         + _no_finding(doubt, noise))
    lines.append(_total_line(data, names, first, second, doubt, noise))
    return lines


def profile_doubt(data: dict, names: dict[str, str]) -> str | None:
    """Why the differences between these configurations' profiles are no finding, in the judge's words (too few
    profiled steps, noisy, measured while other work used the CPU), or None (pure). ``names``: label -> how
    the sentence names it."""
    judged = data.get("profiled_steps") or {}
    for label, name in names.items():
        steps = judged.get(label)
        if not steps:
            return f"this profile holds no per-step times of {name} (it was made before ortnb kept them): profile again"
        doubt = judge.doubt(steps, name)
        if doubt is None and stats.iqr(steps.get("step_ms") or []) is None:
            doubt = f"{name} has too few timed steps to know their spread"
        if doubt:
            return doubt
    return None


def step_noise_ms(data: dict, labels) -> float | None:
    """How far a step's time moves from step to step in these profiles: the wider of their profiled steps'
    interquartile ranges, in ms (pure; None where neither has enough steps). A category's time is known only
    summed over the profiled steps, so its own spread is not; a gap narrower than the steps' spread can be that
    spread landing in one category."""
    judged = data.get("profiled_steps") or {}
    spreads = [stats.iqr((judged.get(label) or {}).get("step_ms") or []) for label in labels]
    return max((spread for spread in spreads if spread is not None), default=None)


def _no_finding(doubt: str | None, noise: float | None) -> str:
    if doubt:
        return f", not conclusive: {doubt}"
    return f", within this profile's step-to-step noise (its step times spread {noise:.1f} ms between p25 and p75)"


def _total_line(data: dict, names: dict, first: str, second: str, doubt: str | None, noise: float | None) -> str:
    """The whole step's difference, under the same rule as the categories' (the profile's step time is the
    mean of its profiled steps, so their spread is its noise too)."""
    before, after = data["step_ms"][first], data["step_ms"][second]
    if doubt is None and abs(after - before) > noise:
        return (f"in all, a step of {names[second]} takes {abs(after - before):.1f} ms "
                f"{'more' if after > before else 'less'} ({after:.1f} against {before:.1f} ms, profiled)")
    return (f"in all: {before:.1f} vs {after:.1f} ms a step ({names[first]} vs {names[second]}, profiled)"
            + _no_finding(doubt, noise))


def _why(data: dict, label: str, category: str) -> str:
    """': its graph runs 6 Gelu kernels, each fused from ...' where ORT fused ops of this category."""
    found = (data.get("fusions") or {}).get(label)
    if not found:
        return ""
    fused = [row for row in found["fused"] if row["op"] in FUSED_IN.get(category, ()) and not row["exported"]]
    if not fused:
        return ""
    return ": its graph runs " + "; ".join(f"{row['training']} {row['op']} kernels, each from {row['replaces']}"
                                           for row in fused)

"""What the Try-it tab shows, as pure functions: a prediction's class probabilities, the examples the last
evaluation got most confidently wrong, a causal LM's continuation (the confusion matrix is a heatmap made by
``charts.confusion_figure``). Every number is tested on exact values."""

from __future__ import annotations

import html

from .. import metrics

def last_evaluation(records: list[dict]) -> dict | None:
    """The run's last evaluation (its confusion matrix and wrong rows describe the weights at that step)."""
    found = metrics.evaluations(records)
    return found[-1] if found else None


def tried_evaluation(records: list[dict]) -> dict | None:
    """The evaluation of the weights Try it predicts with: the best one (best/ holds its weights), else the last.
    Showing the last beside best/'s predictions put step 40's confusion matrix under step 16's model."""
    return metrics.best_evaluation(records) or last_evaluation(records)


def class_names(records: list[dict], count: int) -> list[str]:
    """The data's class names as the worker announced them, else 0, 1, 2 ..."""
    started = next((e for e in metrics.events(records, "started") if e.get("labels")), None)
    names = [str(n) for n in started["labels"]] if started else []
    return names if len(names) == count else [str(i) for i in range(count)]


def wrong_html(wrong: list[dict] | None) -> str:
    """The held-out examples the model got wrong with the highest confidence, most confident first."""
    if not wrong:
        return ""
    rows = "".join(f"<tr><td class='ortnb-cell'>{html.escape(_example(w))}</td>"
                   f"<td class='ortnb-cell'>{html.escape(str(w['label']))}</td>"
                   f"<td class='ortnb-cell'>{html.escape(str(w['predicted']))}</td>"
                   f"<td class='ortnb-cell ortnb-number'>{w['confidence']:.0%}</td></tr>" for w in wrong)
    return ("<div class='ortnb-wrong'><b>Most confidently wrong</b><table style='width:100%;border-collapse:collapse'>"
            "<tr><th class='ortnb-cell ortnb-head'>text</th><th class='ortnb-cell ortnb-head'>true</th>"
            "<th class='ortnb-cell ortnb-head'>predicted</th><th class='ortnb-cell ortnb-head'>confidence</th></tr>"
            f"{rows}</table></div>")


def _example(wrong: dict) -> str:
    return str(wrong["text"]) if wrong.get("text") is not None else f"held-out row {wrong.get('row')}"


def prediction_html(text: str, result: dict, source: str) -> str:
    """A prediction: the label, and every class's probability as a bar, most likely first."""
    ranked = sorted(result["probabilities"].items(), key=lambda item: -item[1])
    bars = "".join(
        f"<div class='ortnb-prob'><span class='ortnb-prob-name'>{html.escape(name)}</span>"
        f"<span class='ortnb-prob-bar' style='width:{max(1.0, p * 100):.0f}%'></span>"
        f"<span class='ortnb-prob-value'>{p:.1%}</span></div>" for name, p in ranked)
    return (f"<div class='ortnb-prediction'><div><b>{html.escape(result['label'])}</b> for "
            f"&ldquo;{html.escape(text[:200])}&rdquo;</div>{bars}"
            f"<div class='ortnb-source'>model: {html.escape(source)}</div></div>")


def continuation_html(prompt: str, continuation: str, source: str) -> str:
    """A causal LM's greedy continuation after its prompt."""
    return (f"<div class='ortnb-prediction'><pre class='ortnb-continuation'><b>{html.escape(prompt)}</b>"
            f"{html.escape(continuation)}</pre><div class='ortnb-source'>model: {html.escape(source)}</div></div>")


def try_hint(entry) -> str:
    """What the Try-it tab says before there is a model to try."""
    if entry is None:
        return "Train a run: its model can be tried here once it has ended."
    if not entry.done:
        return f"{entry.label} is training: try its model once it has ended."
    if entry.status == "failed":
        return f"{entry.label} failed: there is no model to try."
    return ""

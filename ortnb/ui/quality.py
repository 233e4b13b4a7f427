"""What the Try-it tab shows, as pure functions: a prediction's class probabilities, the examples the last
evaluation got most confidently wrong, a causal LM's continuation (the confusion matrix is a heatmap made by
``charts.confusion_figure``). Every number is tested on exact values."""

from __future__ import annotations

from .. import metrics
from ..views.markup import Markup, tag


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


def wrong_html(wrong: list[dict] | None) -> Markup:
    """The held-out examples the model got wrong with the highest confidence, most confident first."""
    if not wrong:
        return Markup()
    head = tag("tr", *(tag("th", title, class_="ortnb-cell ortnb-head") for title in ("text", "true", "predicted",
                                                                                       "confidence")))
    rows = (tag("tr", tag("td", _example(w), class_="ortnb-cell"), tag("td", w["label"], class_="ortnb-cell"),
                tag("td", w["predicted"], class_="ortnb-cell"),
                tag("td", f"{w['confidence']:.0%}", class_="ortnb-cell ortnb-number")) for w in wrong)
    return tag("div", tag("b", "Most confidently wrong"),
               tag("table", head, *rows, style="width:100%;border-collapse:collapse"), class_="ortnb-wrong")


def _example(wrong: dict) -> str:
    return str(wrong["text"]) if wrong.get("text") is not None else f"held-out row {wrong.get('row')}"


def prediction_html(text: str, result: dict, source: str) -> Markup:
    """A prediction: the label, and every class's probability as a bar, most likely first."""
    ranked = sorted(result["probabilities"].items(), key=lambda item: -item[1])
    bars = (tag("div", tag("span", name, class_="ortnb-prob-name"),
                tag("span", class_="ortnb-prob-bar", style=f"width:{max(1.0, p * 100):.0f}%"),
                tag("span", f"{p:.1%}", class_="ortnb-prob-value"), class_="ortnb-prob") for name, p in ranked)
    return tag("div", tag("div", tag("b", result["label"]), f" for \u201c{text[:200]}\u201d"), *bars,
               tag("div", f"model: {source}", class_="ortnb-source"), class_="ortnb-prediction")


def continuation_html(prompt: str, continuation: str, source: str) -> Markup:
    """A causal LM's greedy continuation after its prompt."""
    return tag("div", tag("pre", tag("b", prompt), continuation, class_="ortnb-continuation"),
               tag("div", f"model: {source}", class_="ortnb-source"), class_="ortnb-prediction")


def try_hint(entry) -> str:
    """What the Try-it tab says before there is a model to try."""
    if entry is None:
        return "Train a run: its model can be tried here once it has ended."
    if not entry.done:
        return f"{entry.label} is training: try its model once it has ended."
    if entry.status == "failed":
        return f"{entry.label} failed: there is no model to try."
    return ""

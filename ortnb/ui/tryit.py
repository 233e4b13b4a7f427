"""The Try-it tab: type a text and the latest run's model labels it (or continues it, for a causal LM); beside
it the confusion matrix and most confidently wrong examples of the evaluation whose weights it uses (the best).

The model runs in the kernel (``Run.predict`` / ``Run.generate`` load it once per folder); what is shown
comes from ``quality``'s pure functions.
"""

from __future__ import annotations

from .. import charts
from ..views.markup import tag
from ..validation import run_task
from ..vocabulary import Task
from . import quality
from .figure_view import FigureView
from .safe_html import SafeHTML


class TryIt:
    def __init__(self):
        import ipywidgets as w

        self.run = None
        self.hint = SafeHTML(tag("div", quality.try_hint(None), class_="ortnb-try-hint"))
        self.text = w.Textarea(placeholder="type a text to classify", layout=w.Layout(width="100%", height="64px"))
        self.button = w.Button(description="Predict", button_style="primary", icon="magic",
                               layout=w.Layout(width="auto"))
        self.button.on_click(lambda _b: self.try_text())
        self.answer = SafeHTML()
        self.evaluation = SafeHTML()  # the most confidently wrong examples
        self.confusion = FigureView(css_class="ortnb-confusion")  # a plotly heatmap, drawn once per evaluation
        self.inputs = w.VBox([self.text, self.button], layout=w.Layout(width="100%"))
        self.widget = w.VBox([self.hint, self.inputs, self.answer, self.confusion.widget, self.evaluation],
                             layout=w.Layout(width="100%"))
        self.widget.add_class("ortnb-tryit")
        self._shown = None
        self._answered_for = None
        self._confusion_key = None

    def show(self, run, entry) -> None:
        """Point the tab at ``run`` (the latest run, as ``entry`` observed it)."""
        hint = quality.try_hint(entry)
        key = (entry.id if entry else None, entry.status if entry else None, len(entry.records) if entry else 0)
        if key == self._shown:
            return
        self._shown = key
        self.run = run if entry is not None and not hint else None
        self.hint.value = tag("div", hint, class_="ortnb-try-hint") if hint else ""
        self.inputs.layout.display = "none" if self.run is None else "flex"
        if entry is None or entry.id != getattr(self, "_answered_for", None):
            self.answer.value = ""
        causal = entry is not None and run_task(entry.config) == Task.CAUSAL_LM
        self.button.description = "Continue" if causal else "Predict"
        self.text.placeholder = "type the start of a text to continue" if causal else "type a text to classify"
        last = quality.tried_evaluation(entry.records) if entry is not None else None
        if last is None or not last.get("confusion"):
            self.evaluation.value, self.confusion.widget.outputs, self._confusion_key = "", (), None
            return
        self.evaluation.value = quality.wrong_html(last.get("wrong"))
        key = (entry.id, last.get("step"))
        if key != self._confusion_key:
            self._confusion_key = key
            self.confusion.show(charts.confusion_figure(last["confusion"], quality.class_names(
                entry.records, len(last["confusion"])), last.get("step")))

    def try_text(self, text: str | None = None) -> str:
        """Label (or continue) ``text`` (default: what is typed) with the run's best model; returns the HTML shown."""
        text = self.text.value if text is None else text
        if self.run is None:
            return self._say("No finished run to try yet.")
        if not text.strip():
            return self._say("Type a text first.")
        self.button.disabled = True
        try:
            if run_task(self.run.config) == Task.CAUSAL_LM:
                continuation = self.run.generate(text)
                folder, source = self.run.model_folder()
                shown = quality.continuation_html(text, continuation, source)
            else:
                result = self.run.predict([text])[0]
                folder, source = self.run.model_folder()
                shown = quality.prediction_html(text, result, source)
        except Exception as error:  # noqa: BLE001 - a bad model folder must not take the Dashboard down
            return self._say(f"could not try the model: {error}")
        finally:
            self.button.disabled = False
        self._answered_for = str(self.run.run_dir)
        self.answer.value = shown
        return shown

    def _say(self, text: str) -> str:
        self.answer.value = tag("div", text, class_="ortnb-try-error", style="color:#b00020")
        return self.answer.value

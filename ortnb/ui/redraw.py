"""Redrawing a plotly FigureWidget so that the page shows what the kernel's figure holds, now and after a reload.

Two ways a FigureWidget's page silently parts from its kernel figure (both seen: the Dashboard's live charts kept
their empty axes and hints for a whole run while the kernel's figure was right):

- **A refused batch.** ``batch_update`` sends one ``Plotly.update`` with every edit made inside it. If it holds a
  container and one of its children (``annotations`` and ``annotations[4].text``), plotly.js refuses the whole
  update ("cannot set annotations.4.text and a parent attribute simultaneously"), traces and axes included.
  ``redraw`` replaces such a pair by the container's whole current value before the batch is sent.
- **A reload.** The browser rebuilds a widget from its synced state, and plotly.py sets ``_widget_data`` and
  ``_widget_layout`` only when the figure is displayed: a reloaded page showed the figure as it was at display
  time ("Press Run" over a finished run). ``redraw`` brings both up to date after each batch (the page's views
  ignore these two traits, so nothing is drawn twice).

These rely on plotly.py's private batch and sync attributes, which is why plotly is pinned in
requirements/constraints.txt and tests/ui/test_ui_redraw.py reads them on the installed version.
"""

from __future__ import annotations

import contextlib
import copy
import re

_INDEX = re.compile(r"\[(\d+)\]")


def path_parts(key: str) -> tuple[str, ...]:
    """``"annotations[4].text"`` and ``"annotations.4.text"`` -> ("annotations", "4", "text")."""
    return tuple(part for part in _INDEX.sub(r".\1", key).split(".") if part)


def conflicting_roots(keys) -> list[str]:
    """The outermost keys of every pair where one key is a parent of another (plotly.js refuses such a batch)."""
    parts = {key: path_parts(key) for key in keys}
    roots = []
    for key, mine in parts.items():
        for other, theirs in parts.items():
            if other != key and len(theirs) < len(mine) and mine[:len(theirs)] == theirs:
                break
        else:
            if any(o != key and len(t) > len(mine) and t[:len(mine)] == mine for o, t in parts.items()):
                roots.append(key)
    return roots


def merged_edits(edits: dict, current) -> dict:
    """``edits`` with every container that also has child edits sent whole, as ``current(key)`` gives it now
    (the kernel's final value, so the order of the edits does not matter); other edits unchanged."""
    roots = conflicting_roots(edits)
    if not roots:
        return dict(edits)
    root_parts = [path_parts(root) for root in roots]
    merged = {key: value for key, value in edits.items()
              if not any(path_parts(key)[:len(parts)] == parts for parts in root_parts)}
    for root in roots:
        merged[root] = current(root)
    return merged


def _current_layout_value(widget, key: str):
    value = widget.layout
    for part in path_parts(key):
        value = value[int(part)] if part.isdigit() else value[part]
    if isinstance(value, tuple):
        return [item.to_plotly_json() if hasattr(item, "to_plotly_json") else item for item in value]
    return value.to_plotly_json() if hasattr(value, "to_plotly_json") else value


@contextlib.contextmanager
def redraw(widget):
    """``with redraw(figure): ...``: plotly's ``batch_update``, sent as one update plotly.js accepts, and the
    widget's synced state brought up to date for a page reload. Nested use joins the outer batch."""
    if widget._in_batch_mode:
        yield
        return
    with widget.batch_update():
        yield
        edits = widget._batch_layout_edits
        fixed = merged_edits(edits, lambda key: _current_layout_value(widget, key))
        if fixed != dict(edits):
            edits.clear()
            edits.update(fixed)
    keep_for_reload(widget)


def keep_for_reload(widget) -> None:
    """What a reloaded page rebuilds the figure from: the kernel's traces and layout as they are now."""
    widget._widget_data = copy.deepcopy(widget._data)
    widget._widget_layout = copy.deepcopy(widget._layout_obj._props)

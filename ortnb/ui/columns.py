"""The form's text and label column choices (RunConfig.text_column/label_column): two dropdowns filled from the
chosen data's header, so a file whose text is in ``review`` and classes in ``sentiment`` trains by picking them,
not by renaming its columns.

What the dropdowns show is a pure function of the config (``choices_for``, tested on exact values); the widget
only assigns it and writes a pick back into the form's config. A column the file has keeps being chosen when the
file changes; otherwise ``text``/``label`` when the file has them, else nothing is chosen and validate() says
which field to set.
"""

from __future__ import annotations

import csv
import functools
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..data import checks as data_checks
from ..data import readers as datafiles
from ..config import RunConfig, Task
from ..data.columns import FIELDS, LABEL, TEXT, Columns
from ..validation import run_task

LABELS = {"text_column": "text column", "label_column": "label column"}  # as the form names them


@dataclass(frozen=True)
class ColumnChoices:
    """What the two dropdowns show: the data's columns, and the one chosen for each (None: none fits)."""

    columns: tuple[str, ...] = ()
    text: str | None = TEXT
    label: str | None = LABEL
    shown: bool = False  # False where there are no columns to choose (plain text, a file that cannot be read)
    label_used: bool = True  # False for a causal LM: it learns from the text alone


def header_of(dataset) -> tuple[str, ...] | None:
    """The columns of ``dataset`` (a built-in's, a data file's header, a Dataset's), or None where it has none
    to choose (plain text, a missing or unreadable file: validate() says why)."""
    if isinstance(dataset, str) and dataset in data_checks.BUILT_IN_COLUMNS:
        return tuple(data_checks.BUILT_IN_COLUMNS[dataset])
    if isinstance(dataset, (str, Path)):
        path = Path(dataset).expanduser()
        if not path.is_file() or path.suffix not in datafiles.ROW_SUFFIXES:
            return None
        stat = path.stat()
        return _file_header(str(path), stat.st_mtime_ns, stat.st_size)
    names = getattr(dataset, "column_names", None)
    return tuple(names) if isinstance(names, list) else None


@functools.lru_cache(maxsize=16)
def _file_header(path: str, _mtime_ns: int, _size: int) -> tuple[str, ...] | None:
    """Read once per file version: the form asks on every change."""
    text, problem = datafiles.read_text(Path(path))
    if problem:
        return None
    if path.endswith(".csv"):
        return tuple(next(csv.reader(io.StringIO(text)), []))
    try:  # the keys of the rows, in the order they first appear
        rows = json.loads(text) if text.lstrip().startswith("[") else [
            json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError:
        return None
    return tuple(dict.fromkeys(key for row in rows if isinstance(row, dict) for key in row))


def choice(columns: tuple[str, ...], current: str | None, default: str) -> str | None:
    """The column a dropdown shows: the config's when the data has it, else the default name when it has that,
    else None (nothing chosen)."""
    if current in columns:
        return current
    return default if default in columns else None


def choices_for(config: RunConfig) -> ColumnChoices:
    """What the dropdowns show for ``config``'s data."""
    columns = header_of(config.dataset)
    if not columns:
        return ColumnChoices()
    named = Columns.of(config)
    return ColumnChoices(columns, choice(columns, named.text, TEXT), choice(columns, named.label, LABEL), True,
                         run_task(config) != Task.CAUSAL_LM)


def config_changes(config: RunConfig, shown: ColumnChoices) -> dict:
    """Fields to set so the config reads the columns shown (a new file without the config's columns falls back
    to text/label); nothing where nothing is chosen, so validate() keeps naming the column the config asks for."""
    changes = {}
    for field, value in (("text_column", shown.text), ("label_column", shown.label)):
        if shown.shown and value is not None and value != getattr(config, field):
            changes[field] = value
    return changes


class ColumnPicker:
    """The two dropdowns, under the form's main rows; a pick goes into the panel's config (then ``on_change``)."""

    def __init__(self, panel, on_change: Callable[[], None] | None = None):
        import ipywidgets as w

        self.panel, self.on_change, self._setting = panel, on_change, False
        self.dropdowns = {field: w.Dropdown(options=[], layout=w.Layout(width="auto", flex="1 1 auto"),
                                            tooltip=RunConfig.help(field)) for field in FIELDS}
        rows = [w.HBox([_label(w, field), dropdown], layout=w.Layout(align_items="center", width="100%"))
                for field, dropdown in self.dropdowns.items()]
        self.widget = w.GridBox(rows, layout=w.Layout(
            grid_template_columns="repeat(auto-fit, minmax(min(100%, 480px), 1fr))", grid_gap="4px 24px",
            width="100%"))
        self.widget.add_class("ortnb-columns")
        for field, dropdown in self.dropdowns.items():
            dropdown.observe(lambda change, field=field: self._picked(field, change["new"]), names="value")
        panel.on_change(self.sync)
        # set_config (Load winner, a loaded config) changes the dataset without calling on_change
        panel.controls["dataset"].observe(lambda _change: self.sync(), names="value")
        _place(panel, self.widget)
        self.sync()

    def sync(self) -> None:
        """Show the columns of the form's data; a new file without the config's columns falls back to text/label."""
        if self._setting:
            return
        config = self.panel.config
        shown = choices_for(config)
        self._show(shown)
        changes = config_changes(config, shown)
        if changes:
            self._apply(config.replace(**changes))

    def _show(self, shown: ColumnChoices) -> None:
        self._setting = True
        try:
            self.widget.layout.display = None if shown.shown else "none"
            for field, value in (("text_column", shown.text), ("label_column", shown.label)):
                dropdown = self.dropdowns[field]
                if tuple(dropdown.options) != shown.columns:
                    dropdown.options = list(shown.columns)
                dropdown.value = value
            self.dropdowns["label_column"].disabled = not shown.label_used
        finally:
            self._setting = False

    def _picked(self, field: str, value) -> None:
        if self._setting or value is None or value == getattr(self.panel.config, field):
            return
        self._apply(self.panel.config.replace(**{field: value}))

    def _apply(self, config: RunConfig) -> None:
        self._setting = True
        try:
            self.panel.set_config(config)  # validate() runs again: the form's problems follow the pick
        finally:
            self._setting = False
        if self.on_change:
            self.on_change()


def _label(w, field: str):
    """The row's name as plain text (a Label: nothing here is HTML), with the field's help on hover."""
    label = w.Label(LABELS[field], tooltip=RunConfig.help(field), layout=w.Layout(width="120px", flex="0 0 120px"))
    label.add_class("ortnb-field-label")
    return label


def _place(panel, widget) -> None:
    """Right under the form's main rows (above "more settings"), where the dataset row is."""
    children = list(panel.widget.children)
    at = children.index(panel.more) if panel.more in children else len(children)
    panel.widget.children = tuple(children[:at] + [widget] + children[at:])

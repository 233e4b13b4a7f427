"""Which columns of the training data hold the text and the class: RunConfig's ``text_column`` and
``label_column`` (AutoTrain calls this column mapping). One reader for runs, ``validate()`` and ``ortnb.edge``:
each picks the two columns by these names and nothing else, so a file passes or fails the same way everywhere.

A file whose columns are named otherwise trains without renaming anything:
``RunConfig(dataset="reviews.csv", text_column="review", label_column="sentiment")``. The defaults are
``text`` and ``label``. Standard library only (the edge process imports it).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..vocabulary import Task

TEXT, LABEL = "text", "label"
CAUSAL_LM = Task.CAUSAL_LM
FIELDS = {"text_column": TEXT, "label_column": LABEL}  # RunConfig's fields and their defaults


@dataclass(frozen=True)
class Columns:
    """The column names that hold each row's text and class."""

    text: str = TEXT
    label: str = LABEL

    @classmethod
    def of(cls, cfg) -> "Columns":
        """The columns a RunConfig names (the defaults for anything without the fields, or with them blank)."""
        return cls(getattr(cfg, "text_column", None) or TEXT, getattr(cfg, "label_column", None) or LABEL)

    @property
    def mapped(self) -> bool:
        """True when either column is named otherwise than ``text``/``label``."""
        return (self.text, self.label) != (TEXT, LABEL)

    def needed(self, task: str | None) -> list[str]:
        """The columns a run of ``task`` reads: a causal LM only learns from text."""
        return [self.text] if task == CAUSAL_LM else [self.text, self.label]

    def field_of(self, column: str) -> str:
        """The RunConfig field that names ``column``."""
        return "text_column" if column == self.text else "label_column"


DEFAULT = Columns()


def field_problems(text_column, label_column) -> list[tuple[str, str]]:
    """(field, problem) for column names that cannot name a column: not text, blank, or one column for both."""
    found = []
    for name, value in (("text_column", text_column), ("label_column", label_column)):
        if not isinstance(value, str) or not value.strip():
            found.append((name, f"{value!r} does not name a column; give the column's header, e.g. "
                                f"{name}={FIELDS[name]!r}."))
    if not found and text_column == label_column:
        found.append(("label_column", f"{label_column!r} is also the text_column; one column cannot hold both the "
                                      "text and the class: name the column of classes in label_column."))
    return found


def missing_column(name: str, column: str, found: list[str], task: str | None, columns: Columns = DEFAULT,
                   mappable: bool = True) -> str:
    """Why ``name`` cannot train without ``column``, with the columns it does have and the field to set
    (``mappable``: the caller takes text_column/label_column; else the way out is the column's name)."""
    what = ("each row's class, an id 0..K-1 or a name" if column == columns.label else
            "the text to classify" if task != CAUSAL_LM else "the text to learn from")
    shown = ", ".join(repr(c) for c in found) or "none"
    if column == columns.text and "input_ids" in found:
        # Already tokenized, usually padded to one length: per-batch padding could not shorten those rows.
        return (f"{name} is already tokenized (columns {shown}) and has no {column!r} column; ortnb runs tokenize the "
                "text themselves, so batches can be padded to their longest row (padding='longest'): pass the raw "
                f"text in a {column!r} column instead of input_ids.")
    field = columns.field_of(column)
    others = [c for c in found if c not in (columns.text, columns.label)]
    if not mappable:
        return (f"{name} has no {column!r} column for {what} (columns found: {shown}); name that column {column!r} "
                f"in the file (runs and ortnb.edge read the same columns: {columns.text!r} and {columns.label!r}).")
    if not others:
        return f"{name} has no {column!r} column for {what} (columns found: {shown}); add one named {column!r}."
    choice = f"{field}={others[0]!r}" if len(others) == 1 else f"{field} to one of {', '.join(map(repr, others))}"
    return (f"{name} has no {column!r} column for {what} (columns found: {shown}); set {choice} (in the Dashboard: "
            f"the {field.replace('_', ' ')} choice), or name that column {column!r} in the file.")


def duplicate_problems(name: str, header: list[str], columns: Columns = DEFAULT) -> list[str]:
    """A header that names the text or label column twice: a row would keep the last one's value only, so which
    column trains would be an accident. Columns are counted from 1, as a spreadsheet shows them."""
    found = []
    for column in dict.fromkeys((columns.text, columns.label)):
        positions = [index + 1 for index, header_name in enumerate(header) if header_name == column]
        if len(positions) > 1:
            places = ", ".join(map(str, positions[:-1])) + f" and {positions[-1]}"
            found.append(f"{name}: the header names {column!r} {len(positions)} times (columns {places}), so which "
                         f"one holds the {'text' if column == columns.text else 'class'} is unclear; rename the others "
                         f"(e.g. {column + '_2'!r}) or point {columns.field_of(column)} at the one to train on.")
    return found


def pick(row: dict, columns: Columns = DEFAULT) -> dict:
    """A row with its text and class under the names the training code reads (``text``, ``label``)."""
    picked = {TEXT: row.get(columns.text)}
    if columns.label in row:
        picked[LABEL] = row.get(columns.label)
    return picked

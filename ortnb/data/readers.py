"""Reading training rows from files: the one code path for runs, ``validate()`` and ``ortnb.edge``.

Standard library only (the edge process has neither PyTorch nor datasets): a file is read as UTF-8
(a byte-order mark, as Excel writes, is dropped), CSV values are typed as pandas would type them
(numbers, booleans, the missing-value markers as None), JSON Lines and JSON lists of objects are
read as written. Every problem names the file and the 1-based line (or the 0-based row of a JSON
list) and the way out.

The text column (``columns.Columns``) is read knowing its role: a quoted number there (``"2001"``, a
film's title) is text, as pandas reads it in a column of texts; a header that names the text or label column
twice is refused with both positions, instead of the last column silently winning.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from ..errors import ConfigError
from .columns import DEFAULT, Columns, duplicate_problems

SUFFIXES = (".csv", ".json", ".jsonl", ".txt")
ROW_SUFFIXES = (".csv", ".json", ".jsonl")
_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?|[+-]?(nan|inf)", re.IGNORECASE)
_CSV_BOOLS = {"true": True, "false": False}
_CSV_MISSING = frozenset(['', '#N/A', '#N/A N/A', '#NA', '-1.#IND', '-1.#QNAN', '-NaN', '-nan', '1.#IND', '1.#QNAN',
                          '<NA>', 'N/A', 'NA', 'NULL', 'NaN', 'None', 'n/a', 'nan', 'null'])

Records = list[tuple[str, dict]]  # (where, row): "line 3" or "row 0", and the row's values


def read_text(file: Path) -> tuple[str, str | None]:
    """The file as text, or why it cannot be (unreadable, empty, not UTF-8)."""
    try:
        raw = Path(file).read_bytes()
    except OSError as error:
        return "", f"{file.name} cannot be read ({error.strerror}); check its permissions."
    return decode(raw, file.name)


def decode(raw: bytes, name: str) -> tuple[str, str | None]:
    """Bytes of a data file (read from disk or uploaded) as text, or why they are not usable text."""
    if not raw.strip():
        return "", f"{name} is empty; put the training rows in it."
    try:
        return raw.decode("utf-8-sig"), None  # a byte-order mark is not part of the first column's name
    except UnicodeDecodeError as error:
        line = raw[:error.start].count(b"\n") + 1
        return "", (f"{name} is not UTF-8 text: byte {error.start} (line {line}) is 0x{raw[error.start]:02x}; "
                    f"re-encode it as UTF-8, e.g. iconv -f latin1 -t utf-8 {name} > utf8-{name}.")


def records(text: str, name: str, suffix: str, columns: Columns = DEFAULT) -> tuple[Records, list[str]]:
    """(where, row) pairs of a .csv, .json or .jsonl file's text, and the problems that stop reading it."""
    if suffix == ".csv":
        return csv_records(text, name, columns)
    if suffix in (".json", ".jsonl"):
        return json_records(text, name)
    return [], [f"{name}: unsupported file type; use {', '.join(SUFFIXES[:-1])} or {SUFFIXES[-1]}."]


def read_records(path: str | Path, columns: Columns = DEFAULT) -> Records:
    """The rows of a .csv/.json/.jsonl file; ConfigError naming the file and line when it cannot be read."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise ConfigError(f"dataset: no file {str(file)!r}.")
    if file.suffix not in ROW_SUFFIXES:
        raise ConfigError(f"dataset: {file.name} is not a .csv, .json or .jsonl file of rows.")
    text, problem = read_text(file)
    if problem:
        raise ConfigError(f"dataset: {problem}")
    found, problems = records(text, file.name, file.suffix, columns)
    if problems:
        raise ConfigError([f"dataset: {p}" for p in problems])
    return found


def read_rows(path: str | Path, columns: Columns = DEFAULT) -> list[dict]:
    """The rows of a .csv/.json/.jsonl file as dicts (see ``read_records``)."""
    return [row for _, row in read_records(path, columns)]


def csv_records(text: str, name: str, columns: Columns = DEFAULT) -> tuple[Records, list[str]]:
    """(where, row) pairs of a CSV file with a header, values typed as pandas would read them; in the text
    column a quoted number stays text."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))  # pandas reads fields of any length
    # strict: an unclosed quote is an error (pandas: "EOF inside string"), not a field that swallows the file
    reader = csv.reader(io.StringIO(text), strict=True)
    found, problems, start = [], [], 1
    numbers = []  # (record, row, raw text) of text-column values typed as numbers: quoted ones are text
    try:
        header = next(reader)
        duplicates = duplicate_problems(name, header, columns)
        if duplicates:
            return [], duplicates
        start = reader.line_num + 1
        for record, fields in enumerate(reader, start=1):
            where, start = f"line {start}", reader.line_num + 1
            if not fields:
                continue  # pandas skips blank lines too
            if len(fields) != len(header):
                problems.append(f"{name} {where} has {len(fields)} fields but the header has {len(header)} "
                                f"({', '.join(header)}); quote fields that contain commas.")
                continue
            row = {k: csv_value(v) for k, v in zip(header, fields)}
            if not isinstance(row.get(columns.text, ""), (str, type(None))):
                numbers.append((record, row, fields[header.index(columns.text)]))
            found.append((where, row))
    except csv.Error as error:
        return [], [f"{name} line {start} is not valid CSV ({error}); check the quotes that start there."]
    if not found and not problems:
        problems.append(f"{name} has a header ({', '.join(header)}) but no rows.")
    _quoted_numbers_as_text(text, numbers, header.index(columns.text) if numbers else 0, columns.text)
    return found, problems[:3]


def _quoted_numbers_as_text(text: str, numbers: list, position: int, column: str) -> None:
    """Give back their text to the text column's numbers that the file quotes ("2001"): pandas reads them as
    text in a column of texts, and the quotes say so. Scanned only when there are such values (rarely)."""
    if not numbers:
        return
    quoted = quoted_fields(text)
    for record, row, raw in numbers:
        fields = quoted[record] if record < len(quoted) else []
        if position < len(fields) and fields[position]:
            row[column] = raw


def quoted_fields(text: str) -> list[list[bool]]:
    """For each record of a CSV text (header first, a blank line as []), whether each field starts with a quote:
    csv.reader does not say, and a quoted "2001" is text where 2001 is a number. Standard dialect (comma,
    double quote, "" for a quote inside quotes), records split where csv.reader splits them."""
    records: list[list[bool]] = []
    fields: list[bool] = []
    quoted = in_quotes = started = False
    at_start, index = True, 0
    while index < len(text):
        char = text[index]
        if in_quotes:
            if char == '"' and text.startswith('"', index + 1):
                index += 1  # "" inside quotes is one quote character
            elif char == '"':
                in_quotes = False
        elif char == '"' and at_start:
            in_quotes = quoted = started = True
            at_start = False
        elif char == ",":
            fields.append(quoted)
            quoted, at_start, started = False, True, True
        elif char in "\r\n":
            if char == "\r" and text.startswith("\n", index + 1):
                index += 1
            records.append([*fields, quoted] if started else [])
            fields, quoted, at_start, started = [], False, True, False
        else:
            at_start, started = False, True
        index += 1
    if started:
        records.append([*fields, quoted])
    return records


def csv_value(text: str):
    if text in _CSV_MISSING:
        return None
    if _INT.fullmatch(text.strip()):
        return int(text)
    if _FLOAT.fullmatch(text.strip()):
        return float(text)
    return _CSV_BOOLS.get(text.lower(), text)


def json_records(text: str, name: str) -> tuple[Records, list[str]]:
    """(where, row) pairs of a JSON Lines file, or of a JSON file holding a list of objects."""
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except json.JSONDecodeError as error:
            return [], [f"{name} is not valid JSON at line {error.lineno} column {error.colno} ({error.msg}); "
                        "fix the file."]
        pairs = [(f"row {i}", item) for i, item in enumerate(items)]
    else:
        pairs, problems = _json_lines(text, name)
        if problems:
            return [], problems
    if not pairs:
        return [], [f"{name} holds no rows."]
    bad = [(where, item) for where, item in pairs if not isinstance(item, dict)]
    if bad:
        where, item = bad[0]
        return [], [f"{name} {where} is a JSON {json_kind(item)}, not an object; write each row as "
                    '{"text": ..., "label": ...}.']
    return pairs, []


def _json_lines(text: str, name: str) -> tuple[list[tuple[str, object]], list[str]]:
    pairs, problems = [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue  # the JSON reader skips blank lines
        try:
            pairs.append((f"line {number}", json.loads(line)))
        except json.JSONDecodeError as error:
            problems.append(f"{name} line {number} is not valid JSON ({error.msg}: column {error.colno}); fix or "
                            "remove that line.")
    if len(problems) > 3:  # the first few say enough, the count says how many
        problems = problems[:3] + [f"{name}: {len(problems) - 3} more lines are not valid JSON."]
    return pairs, problems


def json_kind(value) -> str:
    return {list: "list", str: "string", bool: "boolean", int: "number", float: "number", dict: "object"}.get(
        type(value), "null")

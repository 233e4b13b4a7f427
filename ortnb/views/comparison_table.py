"""The comparison as a table, one model for every surface: the Dashboard's Comparison tab, report.html and the
terminal's `ortnb compare` show the same columns in the same words (the p25–p75 range, the judge's verdict, MFU
in percent: never a raw 0.4239 beside a 42.4% headline)."""
from __future__ import annotations

from .markup import Markup, tag
from .numbers import metric_text, number

COLUMNS = [("label", "run"), ("engine", "engine"), ("samples_per_s", "samples/s"), ("spread", "p25–p75"),
           ("speedup", "speed-up"), ("held_out", "best held-out"), ("real_tokens_per_s", "real tokens/s"),
           ("mfu", "MFU %"), ("peak_rss_mb", "peak memory (MB)"), ("optimizer_state_mb", "optimizer state (MB)"),
           ("final_loss", "final loss"), ("first_step_s", "first step (s)")]
TEXT_COLUMNS = ("label", "engine", "speedup", "held_out")


def cells(row: dict) -> list[str]:
    """A row's cells as text, in COLUMNS order (``row``: the Dashboard's comparison row, see record_row)."""
    found = []
    for key, _ in COLUMNS:
        value = row.get(key)
        if key in ("label", "engine", "held_out"):
            found.append(str(value))
        elif key == "speedup":
            found.append(row["text"])  # the judge's verdict
        elif key == "spread":
            known = row.get("p25") is not None and row.get("p75") is not None
            found.append(f"{number(row['p25'])}–{number(row['p75'])}" if known else "–")
        elif key == "mfu":
            found.append(f"{value * 100:.1f}" if value is not None else "–")
        else:
            found.append(number(value))
    return found


def record_row(record: dict) -> dict:
    """A compare() table record named as the Dashboard's comparison rows name their fields (NaN as missing)."""
    known = {k: (v if not (isinstance(v, float) and v != v) else None) for k, v in record.items()}
    return {**known, "text": known.get("verdict") or "–",
            "held_out": metric_text(known.get("metric"), known.get("best_value"))}


def table_view(table) -> tuple[list[tuple[str, bool]], list[list[str]]]:
    """(title, is a number) per shown column, and each run's cells, from a compare() DataFrame. A column no run
    has a value for (best held-out of a speed-only comparison) is left out, not shown empty."""
    rows = [cells(record_row(record)) for record in table.to_dict(orient="records")]
    shown = [i for i, (key, _) in enumerate(COLUMNS) if key == "label" or any(r[i] != "–" for r in rows)]
    columns = [(COLUMNS[i][1], COLUMNS[i][0] not in TEXT_COLUMNS) for i in shown]
    return columns, [[row[i] for i in shown] for row in rows]


def html_table(table) -> Markup:
    """report.html's table."""
    columns, rows = table_view(table)
    head = tag("thead", tag("tr", *(tag("th", title) for title, _ in columns)))
    body = tag("tbody", *(tag("tr", *(tag("td", cell, class_="number" if is_number else None)
                                      for cell, (_, is_number) in zip(row, columns))) for row in rows))
    return tag("div", tag("table", head, body), class_="table")


def text_table(table) -> str:
    """The terminal's table: aligned columns, numbers to the right (`ortnb compare` printed all 23 columns of the
    DataFrame, each run wrapped over several blocks of lines)."""
    columns, rows = table_view(table)
    widths = [max(len(title), *(len(row[i]) for row in rows)) for i, (title, _) in enumerate(columns)]

    def line(row):
        return "  ".join(cell.rjust(width) if is_number else cell.ljust(width)
                         for cell, width, (_, is_number) in zip(row, widths, columns)).rstrip()

    return "\n".join([line([title for title, _ in columns]), *(line(row) for row in rows)])

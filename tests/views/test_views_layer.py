"""views/ is the layer every surface draws with: it imports nothing of ui/, runner/, tuning/, edge/ or profiling/,
and report.py (a file format) no longer reaches into the notebook UI for its table."""
from __future__ import annotations

from pathlib import Path

import ortnb

from .._helpers import imported

ROOT = Path(ortnb.__file__).parent
ABOVE = ("ortnb.ui", "ortnb.runner", "ortnb.tuning", "ortnb.edge", "ortnb.profiling")


def test_views_import_nothing_above_them():
    paths = sorted((ROOT / "views").rglob("*.py"))
    assert len(paths) >= 4, paths
    upward = [f"{path.relative_to(ROOT)}:{line} imports {module}" for path in paths
              for line, module in imported(path) if module.startswith(ABOVE)]
    assert upward == []


def test_report_draws_with_views_not_the_notebook_ui():
    assert [module for _, module in imported(ROOT / "report.py") if module.startswith("ortnb.ui")] == []


def test_the_dashboard_the_report_and_the_terminal_show_one_table():
    from ortnb import report
    from ortnb.ui import present
    from ortnb.views import comparison_table

    from .._helpers import table_of_two_runs

    table = table_of_two_runs()
    assert present.TABLE_COLUMNS is comparison_table.COLUMNS and present.table_cells is comparison_table.cells
    columns, rows = comparison_table.table_view(table)
    header = report.text_table(table).splitlines()[0]
    assert [title for title, _ in columns] == [part.strip() for part in header.split("  ") if part.strip()]
    assert all(cell in report.html_table(table) for row in rows for cell in row)

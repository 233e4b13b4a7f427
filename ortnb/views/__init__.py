"""What every surface shows, as pure functions: the Dashboard (ui/), the CLI, report.html and profile.html.

A layer of its own: it reads records and summaries and returns text, numbers and HTML; it imports nothing of
ui/, runner/, tuning/ or edge/ (tests/views/test_views_layer.py walks its imports), so report.py no longer reaches
into the notebook UI for a table.

- ``markup``: the one way text reaches HTML (and plotly's text): ``escape``, ``tag``, ``join``, ``Markup``.
- ``numbers``: durations, plain numbers, a metric and its value, as a person reads them.
- ``comparison_table``: the comparison's columns and cells, shared by the Dashboard's table, report.html's and
  the terminal's (``ortnb compare``).
"""

"""The Dashboard's stylesheet: one <style> element shipped in an HTML widget (no front-end extension).

Why each rule exists: ipywidgets gives buttons and toggle buttons fixed widths (labels were cut with
an ellipsis), lays toggle buttons on one line (overflow on narrow outputs), and cannot disable single
options of a ToggleButtons, so options this machine cannot run are greyed by index classes.
"""

from __future__ import annotations

MAX_OPTIONS = 4

_OFF = ", ".join(f".ortnb-off-{i} button[value='{i}']" for i in range(MAX_OPTIONS))

CSS = f"""
.ortnb-form .widget-toggle-buttons > div {{ display: flex; flex-wrap: wrap; gap: 2px; }}
.ortnb-form .widget-toggle-button {{ width: auto !important; white-space: nowrap; padding: 0 10px; }}
{_OFF} {{ opacity: 0.45; text-decoration: line-through; }}
.ortnb-field-label {{ cursor: help; border-bottom: 1px dotted #888888; }}
.ortnb-inline-help {{ display: block; color: #444444; line-height: 1.35; }}  /* its own lines, not the row's 28 px */
.ortnb-note {{ font-size: 12px; line-height: 1.35; color: #8a5a00; margin: 0 0 4px 124px; white-space: normal; }}
.ortnb-dashboard .jupyter-button {{ width: auto; }}
.ortnb-dashboard .widget-html-content {{ white-space: normal; }}
.ortnb-status, .ortnb-message {{ line-height: 1.4; }}
/* The progress line wraps under its bar when the output is narrow (Find fastest's line was cut at 1000 px). */
.ortnb-progress {{ flex-wrap: wrap; row-gap: 2px; }}
.ortnb-progress .widget-hprogress {{ min-width: 160px; }}
.ortnb-progress .widget-html {{ flex: 0 1 auto; min-width: 0; }}
.ortnb-progress-text {{ font-variant-numeric: tabular-nums; white-space: normal; line-height: 1.4; }}
.ortnb-summary {{ padding: 6px 10px; margin: 4px 0; background: #f7f7f7; }}
.ortnb-card-title {{ font-weight: bold; margin-bottom: 4px; }}
.ortnb-card-error {{ color: #b00020; margin-bottom: 4px; }}
.ortnb-card-grid {{ display: flex; flex-wrap: wrap; gap: 2px 20px; line-height: 1.5; }}
.ortnb-card-item {{ max-width: 100%; }}
.ortnb-card-name {{ font-size: 11px; color: #555555; }}
.ortnb-card-value {{ overflow-wrap: anywhere; font-weight: 600; }}
/* Cells wrap between words only ("statu s", "onnxruntim e" were words cut in two); numbers never wrap. A table
   wider than the output scrolls inside its own box, never the page. */
.ortnb-table {{ overflow-x: auto; }}
.ortnb-cell {{ font-size: 12px; line-height: 1.3; padding: 2px 4px; white-space: normal; overflow-wrap: normal;
               word-break: normal; }}
.ortnb-cell.ortnb-head {{ font-weight: bold; border-bottom: 1px solid #999999; }}
.ortnb-cell.ortnb-label {{ white-space: nowrap; }}  /* a run's name on one line: the table scrolls instead */
.ortnb-cell.ortnb-number {{ text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }}
.ortnb-search {{ overflow-x: auto; }}
.ortnb-field-problem {{ font-size: 12px; line-height: 1.35; color: #b00020; margin: 0 0 4px 124px; white-space: normal; }}
.ortnb-upload-note {{ font-size: 12px; line-height: 1.35; color: #00703c; margin: 0 0 4px 124px; overflow-wrap: anywhere; }}
.ortnb-form-notes {{ font-size: 12px; line-height: 1.4; color: #1a1a1a; background: #eef5fb; padding: 2px 8px; }}
.ortnb-form-notes ul {{ margin: 2px 0; padding-left: 18px; }}
.ortnb-card-note {{ font-size: 12px; line-height: 1.35; color: #8a5a00; margin-bottom: 2px; }}
.ortnb-prediction {{ margin: 6px 0; max-width: 640px; }}
.ortnb-prob {{ display: flex; align-items: center; gap: 8px; font-size: 12px; line-height: 1.6; }}
.ortnb-prob-name {{ flex: 0 0 120px; overflow-wrap: anywhere; }}
.ortnb-prob-bar {{ display: inline-block; height: 10px; background: #0072B2; max-width: 60%; }}
.ortnb-prob-value {{ font-variant-numeric: tabular-nums; }}
.ortnb-source {{ font-size: 11px; color: #555555; margin-top: 2px; }}
.ortnb-continuation {{ white-space: pre-wrap; font-size: 12px; }}
.ortnb-confusion, .ortnb-wrong {{ margin: 8px 0; }}
/* ipywidgets writes "Upload (0)" into the button's own text; the count means nothing here (the note under the
   field names what was stored), so the button shows its words through ::after instead. */
.ortnb-upload {{ font-size: 0 !important; }}
.ortnb-upload i {{ font-size: var(--jp-widgets-font-size, 13px); }}
.ortnb-upload::after {{ content: "Upload a file"; font-size: var(--jp-widgets-font-size, 13px); margin-left: 4px; }}
.ortnb-swatch {{ display: inline-block; width: 10px; height: 10px; margin-right: 4px; }}
"""


def stylesheet_widget():
    import ipywidgets as w

    from ..views.markup import Markup, tag
    from .safe_html import SafeHTML

    return SafeHTML(tag("style", Markup(CSS)),  # CSS is this module's constant: no run's text is in it
                    layout=w.Layout(height="0px", margin="0px"))

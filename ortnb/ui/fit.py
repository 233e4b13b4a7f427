"""Charts that follow their container's width.

plotly's FigureWidget (an anywidget since plotly 6) sizes its plot once, when it is first drawn; a
plot drawn while detached or inside a hidden tab gets plotly's default 700 px and keeps it (empty space
on wide outputs, a horizontal scrollbar on narrow ones). ``responsive`` makes plotly.js re-fit on a
window resize; ``WidthWatcher`` is a hidden anywidget that watches the dashboard with a ResizeObserver
and raises that resize event whenever a visible plot's width no longer matches its container (tab
switches, side panels opening, the window changing).
"""

from __future__ import annotations

import anywidget

RESPONSIVE = {"responsive": True, "displaylogo": False}

_ESM = """
function mismatched(root) {
  return [...root.querySelectorAll('.js-plotly-plot')].some((plot) => {
    const svg = plot.querySelector('.main-svg');
    const box = plot.parentElement.getBoundingClientRect();
    return svg && box.width > 0 && Math.abs(svg.getBoundingClientRect().width - box.width) > 2;
  });
}
export default {
  render({ el }) {
    el.style.display = 'none';
    let timer = null;
    const check = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        const root = el.closest('.ortnb-dashboard');
        if (root && mismatched(root)) window.dispatchEvent(new Event('resize'));
      }, 100);
    };
    const observer = new ResizeObserver(check);
    const attach = () => {
      const root = el.closest('.ortnb-dashboard');
      if (!root) { setTimeout(attach, 200); return; }
      observer.observe(root);
      root.querySelectorAll('.ortnb-fit').forEach((box) => observer.observe(box));
      check();
    };
    attach();
    return () => observer.disconnect();
  },
};
"""


class WidthWatcher(anywidget.AnyWidget):
    _esm = _ESM


def responsive(figure_widget):
    """Let a FigureWidget fill its container and follow it."""
    figure_widget._config = {**(figure_widget._config or {}), **RESPONSIVE}
    figure_widget.layout.width = None
    figure_widget.layout.autosize = True
    figure_widget.add_class("ortnb-fit")
    return figure_widget

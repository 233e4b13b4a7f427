"""The notebook UI: ConfigPanel, Dashboard and LiveCallback (ipywidgets + plotly, with a text fallback)."""

"""The Dashboard's only HTML widget: it shows Markup (ortnb/views/markup.py) and refuses a plain string.

A plain string in an ipywidgets HTML widget is live HTML in the user's Jupyter page, with their token and kernel
within reach. Every view builds its HTML with markup.tag/escape; this widget makes forgetting that an error on the
first draw (caught by the tests), not a script from a tracked run folder running in the page.
"""
from __future__ import annotations

import ipywidgets as w
import traitlets

from ..views.markup import Markup


class SafeHTML(w.HTML):
    @traitlets.validate("value")
    def _markup_only(self, proposal):
        value = proposal["value"]
        if value and not isinstance(value, Markup):
            raise TypeError("an HTML widget was given a plain string: build it with ortnb.views.markup.tag or escape, "
                            f"so text from a run folder cannot become markup (got {value[:60]!r})")
        return value

"""Text into HTML, one way.

Everything a view shows may come from a run folder that someone else can write (a shared output_dir, a copied
run): a phase, an error, a run name, a class label, an example's text, a profiled op's name. So no view formats
text into HTML itself. Text reaches HTML only through `escape` (directly, or through `tag`, which escapes every
child and attribute that is not already `Markup`), and the Dashboard's HTML widgets refuse any value that is not
`Markup` (ui/safe_html.py): a view that forgets cannot ship, it fails on its first draw.

plotly draws a subset of HTML in its text (`<b>`, `<br>`, `<a href>` in legends, ticks, annotations and hover
labels) and decodes entities, so text bound for a figure goes through `escape` too.
"""
from __future__ import annotations

import html
import re

_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
_QUOTE = str.maketrans({'"': "&#34;"})  # tag() writes every attribute in double quotes


class Markup(str):
    """A string that is HTML already: built here from escaped text, never from a run's data directly."""

    __slots__ = ()


def escape(value) -> Markup:
    """Any value as text inside HTML or a plotly text; Markup stays as it is. The double quote becomes a numeric
    entity, so the text is safe in tag()'s attributes too (plotly decodes `&#34;` but shows `&quot;` as it is)."""
    if isinstance(value, Markup):
        return value
    return Markup(html.escape(str(value), quote=False).translate(_QUOTE))


def join(parts, separator: str = "") -> Markup:
    """Pieces side by side, each escaped unless it is Markup already."""
    return Markup(escape(separator).join(escape(part) for part in parts))


def tag(name: str, *children, **attributes) -> Markup:
    """`<name attributes>children</name>`: children and attribute values escaped unless Markup. Attribute names
    come from code (a trailing underscore is dropped, `class_` -> `class`; `data_x` -> `data-x`); a value of None
    or False leaves the attribute out, True writes it bare."""
    if not _NAME.match(name):
        raise ValueError(f"not a tag name: {name!r}")
    written = []
    for key, value in attributes.items():
        key = key.rstrip("_").replace("_", "-")
        if not _NAME.match(key):
            raise ValueError(f"not an attribute name: {key!r}")
        if value is None or value is False:
            continue
        written.append(f" {key}" if value is True else f' {key}="{escape(value)}"')
    return Markup(f"<{name}{''.join(written)}>{join(children)}</{name}>")


def br() -> Markup:
    """A line break (plotly's text and HTML alike)."""
    return Markup("<br>")

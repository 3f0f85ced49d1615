"""Render the report as one self-contained HTML file (jinja2 with autoescaping; no scripts, no fetches).

Everything that reaches the page is escaped by jinja2 unless it is a :class:`~markupsafe.Markup` made
by counterbench itself (the inline SVG charts, which escape their own text, and the stylesheet). A
Content-Security-Policy meta tag forbids scripts and any network access, as a second line of defence.
Every text value also has its control, bidi-override and zero-width characters shown as escapes
(``\\u202e``; see :mod:`counterbench.report.visible`), so model output cannot hide or reorder text.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup, escape

from counterbench.report.document import Section
from counterbench.report.visible import show_controls, template_environment

_CODE = re.compile(r"`([^`]+)`")


def inline_code(text: str) -> Markup:
    """Escape ``text`` and show its `backticked` parts as code."""
    parts = _CODE.split(show_controls(str(text)))
    return Markup("".join(str(escape(p)) if i % 2 == 0 else f"<code>{escape(p)}</code>" for i, p in enumerate(parts)))


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = template_environment("counterbench.report")
    env.filters["inline_code"] = inline_code
    return env


@lru_cache(maxsize=1)
def stylesheet() -> Markup:
    css = resources.files("counterbench.report").joinpath("assets/report.css").read_text(encoding="utf-8")
    if "</" in css:
        raise ValueError("report.css must not contain '</'")
    return Markup(css)


def toc(sections: list[Section]) -> list[tuple[str, list[tuple[str, str]]]]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for s in sections:
        groups.setdefault(s.group, []).append((s.key, s.title))
    return list(groups.items())


def render_html(page: dict[str, Any]) -> str:
    """Render the page model built by :func:`counterbench.report.api.page_model`."""
    template = environment().get_template("report.html.j2")
    return template.render(**page, css=stylesheet(), toc=toc(page["sections"]))

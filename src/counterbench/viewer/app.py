"""The viewer's web app: a small Starlette ASGI app over a :class:`~counterbench.viewer.catalog.Catalog`.

Pages (all GET, all server-rendered, no JavaScript at all):

* ``/`` — responses matching the filters (study, model, use case, language, axis, identifier,
  status, prompt variant) and a full-text search in the raw answers, a page at a time;
* ``/slots`` — the slots matching the filters, widest spread first (what a report cell links to); the spread
  is in the outcome kind's comparison (Δ% for amounts, percentage points for yes/no, points for scores);
* ``/slot`` — one slot: every identity's answer to the same prompt side by side (value, unit,
  parse status, raw text) and the slot's spread;
* ``/matrix`` — for one use case, model × identifier (or axis, language, profile, question variant, prompt
  variant), each cell the mean measure in the outcome kind's unit with its answer count, linked to the answers
  behind it; sorted server-side (``?sort=row`` or ``?sort=MODEL``, ``&order=desc``);
  ``/matrix.csv`` and ``/matrix.json`` download the same view (same query);
* ``/static/viewer.css`` — the only stylesheet.

Every filter value is shown with its number of responses.

Model text is untrusted: jinja2 escapes everything, control, bidi and zero-width characters are shown as
escapes exactly as in the report (:func:`counterbench.report.visible.show_controls`), a page number that
is not a whole number is a 404 and one past the end shows the last page, and every response carries a strict
Content-Security-Policy (no scripts, no inline styles, nothing fetched from elsewhere), plus
``TrustedHostMiddleware`` so only ``127.0.0.1``/``localhost`` host names are served (DNS rebinding).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from importlib import resources
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from counterbench.errors import UserError
from counterbench.outcomes import spec_from_answer_type
from counterbench.outcomes.units import GapUnit
from counterbench.report.links import query_string
from counterbench.report.visible import template_environment
from counterbench.viewer.catalog import FILTERS, PAGE_SIZE, SLOT_KEY, Answer, Catalog
from counterbench.viewer.matrix import LABEL, ROWS_BY, Matrix, as_csv, as_json, build

CSP = ("default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
       "frame-ancestors 'none'")
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}
LABELS = {"study": "Study", "model": "Model", "use_case": "Use case", "language": "Language", "axis": "Axis",
          "identifier": "Identifier", "status": "Status", "variant": "Prompt variant", "profile_id": "Profile",
          "question_variant": "Question variant"}


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.decode().lower() not in SECURITY_HEADERS]
                headers += [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = template_environment("counterbench.viewer")
    env.filters["num"] = fmt_value
    env.filters["pct"] = fmt_pct
    env.filters["gap"] = fmt_gap
    env.globals["answer_text"] = answer_text
    env.globals["answer_words"] = answer_words
    env.globals["answer_cells"] = answer_cells
    env.globals["link"] = link
    env.globals["slot_link"] = slot_link
    return env


@lru_cache(maxsize=1)
def stylesheet() -> str:
    return resources.files("counterbench.viewer").joinpath("assets/viewer.css").read_text(encoding="utf-8")


def fmt_value(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    number = float(value)
    return f"{number:,.0f}" if abs(number) >= 1000 else f"{number:,.4g}"


def fmt_pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"{float(value):.1f}%"


def fmt_gap(value: Any, unit: GapUnit) -> str:
    """A spread in its kind's unit: ``27.5%`` for amounts, ``100.0 pp`` for yes/no, ``2.0 points`` for scores."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return unit.format(float(value), signed=False)


def answer_text(answer: Answer) -> str:
    """An answer as its kind reads it: the amount with its unit, or the label it gave."""
    return answer_words(answer.value, answer.unit, answer.answer_type)


def answer_words(value: Any, unit: Any, answer_type: Any) -> str:
    """A stored answer in words: ``29,932 INR`` for a number, ``yes`` for a label or an option."""
    number, after = answer_cells(value, unit, answer_type)
    return f"{number} {after}".strip()


def answer_cells(value: Any, unit: Any, answer_type: Any) -> tuple[str, str]:
    """(the answer, its unit) as a table shows them: (``29,932``, ``INR``) for a number, (``yes``, ``""``) for
    a label or an option — whose stored value is only the label's position, never shown as ``0 yes``."""
    text = str(unit or "")
    if text and text in _labels_of(str(answer_type or "")):
        return text, ""
    return fmt_value(value), text


@lru_cache(maxsize=256)
def _labels_of(answer_type: str) -> tuple[str, ...]:
    """The labels an answer type's outcome declares (none for numbers, or a type this version cannot read)."""
    try:
        return tuple(spec_from_answer_type(answer_type).labels) if answer_type else ()
    except UserError:
        return ()


def link(path: str, params: dict[str, Any], **changes: Any) -> str:
    """``path`` with ``params`` (lists repeat) updated by ``changes`` as its query string."""
    merged = {**params, **changes}
    query = query_string({k: [str(x) for x in (v if isinstance(v, list | tuple) else [v])] for k, v in merged.items()})
    return f"{path}?{query}" if query else path


def slot_link(row: dict[str, Any], identifiers: list[str] | None = None) -> str:
    """The slot view of the slot ``row`` belongs to (``identifiers`` listed first)."""
    return link("/slot", {k: [str(row[k])] for k in SLOT_KEY}, identifier=list(identifiers or []))


def filters_of(request: Request) -> dict[str, list[str]]:
    params = request.query_params
    return {k: [v for v in params.getlist(k) if v] for k in (*FILTERS, "profile_id", "question_variant")}


#: the largest page number read from a URL (beyond the last page, the last page is shown)
MAX_PAGE = 10**12
_WHOLE = re.compile("[0-9]+")


def page_of(request: Request) -> int | None:
    """The ``page`` query parameter; ``None`` when it is not a whole number (the page is then a 404)."""
    text = request.query_params.get("page", "0").strip() or "0"
    if not _WHOLE.fullmatch(text):
        return None
    return MAX_PAGE if len(text) > 12 else min(int(text), MAX_PAGE)


def last_page(count: int) -> int:
    return (count - 1) // PAGE_SIZE if count else 0


def render(name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    html = environment().get_template(name).render(labels=LABELS, page_size=PAGE_SIZE, **context)
    return HTMLResponse(html, status_code=status_code)


def create_app(catalog: Catalog) -> Starlette:
    """The viewer app serving ``catalog`` (which the caller opened and closes)."""

    def common(request: Request) -> dict[str, Any]:
        catalog.refresh()
        filters = filters_of(request)
        return {"store": str(catalog.path), "options": catalog.options, "counts": catalog.counts, "filters": filters,
                "page": page_of(request), "total": catalog.total(), "path": request.url.path}

    def no_page(request: Request) -> Response:
        return render("missing.html.j2", status_code=404, **{**common(request), "page": 0}, search="",
                      message="the page number must be a whole number")

    async def index(request: Request) -> Response:
        ctx = common(request)
        if ctx["page"] is None:
            return no_page(request)
        search = request.query_params.get("q", "").strip()
        count, rows = catalog.responses(ctx["filters"], search=search, page=ctx["page"])
        if ctx["page"] > last_page(count):
            ctx["page"] = last_page(count)
            count, rows = catalog.responses(ctx["filters"], search=search, page=ctx["page"])
        return render("responses.html.j2", **ctx, search=search, count=count, rows=rows, slot_key=SLOT_KEY)

    async def slots(request: Request) -> Response:
        ctx = common(request)
        if ctx["page"] is None:
            return no_page(request)
        count, rows = catalog.slots(ctx["filters"], page=ctx["page"])
        if ctx["page"] > last_page(count):
            ctx["page"] = last_page(count)
            count, rows = catalog.slots(ctx["filters"], page=ctx["page"])
        return render("slots.html.j2", **ctx, search="", count=count, rows=rows, slot_key=SLOT_KEY)

    async def slot(request: Request) -> Response:
        ctx = common(request)
        key = {k: request.query_params.get(k, "") for k in SLOT_KEY}
        wanted = request.query_params.getlist("identifier")
        try:
            view = catalog.slot(key, wanted)
        except LookupError as err:
            return render("missing.html.j2", status_code=404, **ctx, search="", message=str(err))
        return render("slot.html.j2", **ctx, search="", view=view, wanted=wanted, slot_key=SLOT_KEY)

    def matrix_of(request: Request) -> tuple[dict[str, Any], Matrix]:
        ctx = common(request)
        params = request.query_params
        view = build(catalog, ctx["filters"], by=params.get("by", ROWS_BY[0]), sort=params.get("sort", ""),
                     descending=params.get("order") == "desc")
        return ctx, view

    async def matrix(request: Request) -> Response:
        ctx, view = matrix_of(request)
        query = {**view.filters, "by": [view.by], "sort": [view.sort] if view.sort else [],
                 "order": ["desc"] if view.descending else []}
        return render("matrix.html.j2", **ctx, search="", view=view, rows_by=ROWS_BY, label_key=LABEL,
                      query=query)

    async def matrix_csv(request: Request) -> Response:
        return Response(as_csv(matrix_of(request)[1]), media_type="text/csv; charset=utf-8",
                        headers={"content-disposition": 'attachment; filename="matrix.csv"'})

    async def matrix_json(request: Request) -> Response:
        return JSONResponse(as_json(matrix_of(request)[1]))

    async def css(request: Request) -> Response:
        return Response(stylesheet(), media_type="text/css")

    async def not_found(request: Request, exc: Exception) -> Response:
        return render("missing.html.j2", status_code=404, **{**common(request), "page": 0}, search="",
                      message="no such page")

    return Starlette(
        routes=[Route("/", index), Route("/slots", slots), Route("/slot", slot), Route("/matrix", matrix),
                Route("/matrix.csv", matrix_csv), Route("/matrix.json", matrix_json), Route("/static/viewer.css", css)],
        middleware=[Middleware(SecurityHeaders),
                    Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"])],
        exception_handlers={404: not_found},
    )

"""``/v1/report``: the administrators' report of the stored jobs (``iosets report``), one offline HTML page.

The service stores jobs, not site traces: the report's trace replay (the scheduler comparison and its model
check) is the one the ``[service] replay`` setting names, written by ``iosets replay-trace -o``.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, Response

from .._deps import AUTH_ERRORS, Reader, ServiceDep, errors

router = APIRouter(prefix="/v1", tags=["jobs"], dependencies=[Reader], responses=errors(*AUTH_ERRORS))

_HTML = {"text/html": {"schema": {"type": "string"}}}


@router.get(
    "/report",
    response_class=HTMLResponse,
    responses={**errors(409), 200: {"content": _HTML, "description": "One self-contained HTML page."}},
)
def get_report(service: ServiceDep) -> Response:
    """The report of the stored jobs under the current policy (``iosets report``): one offline HTML page, with the
    trace replay of the ``replay`` setting (its scheduler comparison and model check) when one is set."""
    from ...report import SERVED_CSP  # the report room loads on the first report, not at the service's start

    return HTMLResponse(service.report(), headers={"Content-Security-Policy": SERVED_CSP})

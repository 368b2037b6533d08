"""``/v1/policy``: the site's versioned policy (read, replace, history) and its export for the file system."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import Response

from .._deps import AUTH_ERRORS, Admin, Reader, ServiceDep, errors
from .._models import Policy, PolicyParams, PolicyVersions

router = APIRouter(prefix="/v1/policy", tags=["policy"], responses=errors(*AUTH_ERRORS))

_EXPORT_CONTENT = {"text/plain": {"schema": {"type": "string"}}, "application/json": {"schema": {"type": "object"}}}


@router.get("", dependencies=[Reader])
def get_policy(service: ServiceDep) -> Policy:
    """The current policy."""
    return Policy(**service.current_policy())


@router.put("", dependencies=[Admin])
def put_policy(service: ServiceDep, body: PolicyParams) -> Policy:
    """Store a new policy version (the previous ones are kept) and answer with it from now on."""
    return Policy(**service.put_policy(body.model_dump()))


@router.get("/versions", dependencies=[Reader])
def policy_versions(service: ServiceDep) -> PolicyVersions:
    """Every policy version, oldest first."""
    return PolicyVersions(policies=[Policy(**row) for row in service.policies()])


@router.get("/export", dependencies=[Reader], responses={**errors(409), 200: {"content": _EXPORT_CONTENT}})
def export_policy(
    service: ServiceDep,
    format: Annotated[Literal["agios", "tbf", "cgroup", "json", "lua"], Query(description="Export format.")],
    active: Annotated[str | None, Query(description="tbf: comma-separated job ids running now.")] = None,
    rpc_capacity: Annotated[
        float | None, Query(gt=0, le=1e12, allow_inf_nan=False, description="tbf: RPC/s of a partition.")
    ] = None,
) -> Response:
    """The file ``iosets export`` writes for the stored jobs under the current policy (agios: wfq.conf)."""
    running = None if active is None else [name for name in active.split(",") if name]
    text = service.export(format, active=running, rpc_capacity=rpc_capacity)
    return Response(text, media_type="application/json" if format == "json" else "text/plain; charset=utf-8")

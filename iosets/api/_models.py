"""Wire models: what the service accepts and answers, so that its OpenAPI schema is exact.

The job models are built from :data:`iosets.schemas.JOBS`, so the wire format follows the jobs table.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import polars as pl
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    create_model,
    field_validator,
    model_validator,
)

from ..schemas import JOBS

INT64_MAX = 2**63 - 1
AGIOS_MAX_WEIGHT = 2**31 - 1  # iosets.recommender.AGIOS_MAX_WEIGHT, without importing the recommender
_MAPPING = re.compile(r"gmm|set-(\d+(?:\.\d+)?)")
NAME_MAX = 256
"""Characters of a name: a job id, a user, an app (an executable's basename is at most 255 bytes)."""
TEXT_MAX = 4096
"""Characters of any other text field of a job (a path is at most 4095 bytes)."""
_NAMES = ("job_id", "user", "app")


def storable_text(value: str) -> str:
    """``value`` if both stores keep it as sent: no NUL character (PostgreSQL's text refuses it, SQLite keeps it).

    The other text PostgreSQL refuses, invalid Unicode (a lone surrogate), pydantic refuses first. The same
    rule on both stores makes them answer the same (422).
    """
    if "\x00" in value:
        raise ValueError(f"text holds a NUL character at {value.index(chr(0))}")
    return value


def bounded_text(max_length: int) -> Any:
    """The type of a text field of at most ``max_length`` characters that both stores keep as sent."""
    return Annotated[str, StringConstraints(max_length=max_length), AfterValidator(storable_text)]


Name = Annotated[str, StringConstraints(max_length=NAME_MAX), AfterValidator(storable_text)]
"""A job id, a user or an app: at most :data:`NAME_MAX` characters, storable (:func:`storable_text`)."""


class PolicyParams(BaseModel):
    """The parameters of a policy: the recommender's mapping and enforcement settings."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mapping: str = Field(default="set-10", description="set-10, set-<b> (b > 1, e.g. set-2) or gmm.")
    bandwidth: float | None = Field(
        default=None, gt=0, le=1e18, allow_inf_nan=False, description="File system bandwidth (bytes/s), for RBFQ."
    )
    safety: float = Field(default=1.5, gt=0, le=1e6, allow_inf_nan=False, description="RBFQ reservation factor.")
    limit: float | None = Field(
        default=None, gt=0, le=1, allow_inf_nan=False, description="RBFQ limit per job, a fraction of bandwidth."
    )
    max_request: int = Field(
        default=1 << 20, ge=1, le=AGIOS_MAX_WEIGHT, description="WFQ weight of the lowest priority."
    )
    min_confidence: float = Field(
        default=0.5, ge=0, le=1, allow_inf_nan=False, description="Below this w_iter confidence: the conservative set."
    )

    @field_validator("mapping")
    @classmethod
    def _known_mapping(cls, value: str) -> str:
        match = _MAPPING.fullmatch(value)
        if match is None or (match.group(1) is not None and not float(match.group(1)) > 1):
            raise ValueError(f"expected set-10, set-<b> with b > 1 or gmm, got {value!r}")
        return value

    @model_validator(mode="after")
    def _limit_needs_bandwidth(self) -> PolicyParams:
        if self.limit is not None and self.bandwidth is None:
            raise ValueError("limit is a fraction of the bandwidth: give a bandwidth too")
        return self


class Policy(PolicyParams):
    """A stored policy: its parameters, version and creation date (s since the epoch)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    created_at: float


class PolicyVersions(BaseModel):
    """Every stored policy, oldest first."""

    policies: list[Policy]


class Query(BaseModel):
    """A job about to start, as a batch-scheduler hook describes it."""

    model_config = ConfigDict(extra="forbid")

    app: Name = Field(min_length=1, description="Application (executable basename or job name).")
    user: Name = Field(min_length=1, description="User (uid or name).")
    nprocs: int | None = Field(default=None, ge=1, le=INT64_MAX, description="Processes.")
    requested_time: float | None = Field(
        default=None, gt=0, le=1e12, allow_inf_nan=False, description="Time limit (s)."
    )
    job_id: Name | None = Field(default=None, description="The scheduler's job id, echoed.")


class Queries(BaseModel):
    """Jobs about to start (at most 1000)."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[Query] = Field(max_length=1000)


class Recommendation(BaseModel):
    """The set, priority and enforcement parameters of a job about to start, and where its estimate came from."""

    app: str
    user: str
    nprocs: int | None
    requested_time: float | None
    job_id: str | None
    set: int
    priority: float
    conservative: bool
    wfq_weight: int
    rbfq_reservation: float | None
    rbfq_weight: float
    rbfq_limit: float | None
    w_iter: float | None
    w_iter_confidence: float
    source: Literal["history", "model", "default"] = Field(
        description="history: the app's or pair's past jobs; model: the estimator's model; default: nothing known."
    )
    policy_version: int


class Recommendations(BaseModel):
    """One recommendation per job asked, in order."""

    recommendations: list[Recommendation]


_WIRE_TYPES: dict[Any, Any] = {pl.String: str, pl.Int64: int, pl.Float64: float, pl.Boolean: bool}


def _job_field(column, required: bool, *, incoming: bool = True) -> tuple[Any, Any]:
    kind = _WIRE_TYPES[column.dtype]
    limits: dict[str, Any] = {"description": column.doc}
    if kind is str and incoming:  # an answer holds what the store holds
        kind = bounded_text(NAME_MAX if column.name in _NAMES else TEXT_MAX)
    if kind is int:
        limits.update(ge=-INT64_MAX, le=INT64_MAX)
    if kind is float:
        limits["allow_inf_nan"] = False
    if required:
        return kind, Field(..., min_length=1, **limits)
    return kind | None, Field(default=None, **limits)


_REQUIRED = ("job_id", "user", "app")
JobIn = create_model(  # type: ignore[call-overload]
    "JobIn",
    __config__=ConfigDict(extra="forbid"),
    __doc__="A finished job: a jobs-table row (job_id, user and app required; values checked as the table's).",
    **{c.name: _job_field(c, c.name in _REQUIRED) for c in JOBS.columns},
)
LoggedJob = create_model(  # type: ignore[call-overload]
    "LoggedJob",
    __doc__="The jobs-table row of an uploaded Darshan log: its text checked as a posted row's.",
    **{c.name: _job_field(c, False) for c in JOBS.columns},
)
UPLOAD_COLUMNS = ("job_id", "nodes")
"""The jobs-table columns a Darshan log's upload may give beside the log (text fields): what the log cannot know."""
UploadFields = create_model(  # type: ignore[call-overload]
    "UploadFields",
    __config__=ConfigDict(extra="forbid"),
    __doc__="The text fields of a Darshan log's upload, typed as a posted row's columns; any other field refused.",
    **{name: _job_field(JOBS[name], False) for name in UPLOAD_COLUMNS},
)
Job = create_model(  # type: ignore[call-overload]
    "Job",
    __doc__="A stored job: its jobs-table row and when the service received it (s since the epoch).",
    **{c.name: _job_field(c, False, incoming=False) if c.name != "job_id" else (str, ...) for c in JOBS.columns},
    received_at=(float, Field(description="When the service stored the job (s since the epoch).")),
)


class JobPage(BaseModel):
    """A page of jobs ordered by (start, job_id); ``next_cursor`` fetches the next page (null: the last one)."""

    jobs: list[Job]  # type: ignore[valid-type]
    next_cursor: str | None


class AppSummary(BaseModel):
    """An app's history and its current recommendation."""

    app: str
    n_jobs: int
    users: list[str]
    first_seen: float | None
    last_seen: float | None
    w_iter_median: float | None
    alpha_io_median: float | None
    recommendation: Recommendation


class Status(BaseModel):
    """Liveness."""

    status: Literal["ok"]


class Readiness(BaseModel):
    """Readiness: the store answers and the recommender is fitted."""

    status: Literal["ready"]
    jobs: int
    policy_version: int


class ErrorDetail(BaseModel):
    """An error: one line naming the field or file and what was wrong."""

    detail: str

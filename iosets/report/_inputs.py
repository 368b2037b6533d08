"""Read and validate the report's inputs: files (with their companions) or frames, into one :class:`ReportInputs`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from .._io import read_frame
from ..errors import InputError
from ..schemas import (
    JOBS,
    RECOMMENDATION,
    RECOMMENDED_JOBS,
    REQUEST_CLASSES,
    REQUEST_RESULTS,
    SITE_REQUESTS,
    TRACE_REPLAY_JOBS,
    TRACE_REPLAY_PHASES,
    TRACE_REPLAY_SCHEDULERS,
    TRACE_REPLAY_SHARES,
    TUNE_RANKING,
    TableSchema,
)
from ._document import ReportInputs

if TYPE_CHECKING:
    from .._results import Tables
    from ..validate import Validation

TableSource = str | os.PathLike | pl.DataFrame
"""A table given as a ``.parquet``/``.csv`` path or as a Polars frame."""

REPLAY_PARTS = (
    ("replay_jobs", "jobs", TRACE_REPLAY_JOBS),
    ("replay_phases", "phases", TRACE_REPLAY_PHASES),
    ("replay_schedulers", "schedulers", TRACE_REPLAY_SCHEDULERS),
    ("replay_shares", "shares", TRACE_REPLAY_SHARES),
)
"""A trace replay's tables: field of ReportInputs, key of a mapping (and name of the companion file), schema."""

REQUEST_PARTS = (
    ("requests", "requests", REQUEST_RESULTS),
    ("request_classes", "classes", REQUEST_CLASSES),
)
"""A request replay's tables, in the same form."""

DETAIL_PARTS = (("modules", "modules"), ("job_detail", "detail"), ("job_sizes", "sizes"), ("job_activity", "activity"))
"""The analyzer's tables beside the jobs table (each job's detail): field of ReportInputs, table of an Analysis."""


def read_inputs(
    jobs: TableSource,
    *,
    recommendation: TableSource | None = None,
    site: TableSource | None = None,
    replay: Any = None,
    tune: TableSource | None = None,
    requests: Any = None,
    validation: Any = None,
) -> ReportInputs:
    """Read the report's tables and check each against its schema.

    Parameters
    ----------
    jobs : path, polars.DataFrame or Analysis
        The jobs table (``iosets analyze -o``); a recommended jobs table (``iosets recommend -o``) is also
        the recommendation when ``recommendation`` is not given. The analyzer's tables beside it (``.modules``,
        ``.detail``, ``.sizes``, ``.activity``: each job's detail) are read when they exist, or taken from an
        ``Analysis``.
    recommendation : path or polars.DataFrame, default=None
        The recommended jobs table (``iosets recommend -o``).
    site : path or polars.DataFrame, default=None
        The site trace (``iosets ingest --site -o``).
    replay : path, polars.DataFrame or mapping, default=None
        The per-job table of a trace replay (``iosets replay-trace -o PERJOB``). From a path, the result is read
        by :meth:`iosets.replay.SchedulerComparison.read_tables` (its side tables when they exist). A mapping
        (or an object with these attributes, such as the result of ``compare_schedulers``) gives the tables
        ``jobs``, ``phases``, ``schedulers`` and ``shares``.
    tune : path or polars.DataFrame, default=None
        The tuning ranking (``iosets tune -o``, read by :meth:`iosets.replay.Tuning.read_tables`).
    requests : path, polars.DataFrame or mapping, default=None
        The per-request table of a request replay (``iosets replay-requests -o RESULT``); from a path, read by
        :meth:`iosets.replay.RequestResults.read_tables` (its per-class table when it exists); a mapping or
        an object (a ``RequestResults``) gives ``requests`` and ``classes``; a ``RequestReplay`` its results.
    validation : path, mapping or Validation, default=None
        Real runs against the phase engine (``iosets validate -o validation.json``): from a path, read by
        :func:`iosets.validate.read_validation`; a mapping is the file's JSON form; a ``Validation`` is taken as it is.

    Returns
    -------
    ReportInputs
        Every table with its schema's types and every optional column (nulls where absent); None where
        not given. A missing companion file is None too: the section that needs it says what to run.

    Raises
    ------
    InputError
        A file cannot be read, or a table breaks its schema: the message names the file, the row and the
        column (the validation file: the key). The jobs table holds no job, or a job id twice.

    Examples
    --------
    >>> import polars as pl
    >>> inputs = read_inputs(pl.DataFrame({"job_id": ["a", "b"], "w_iter": [10.0, None]}))
    >>> inputs.jobs.height, inputs.recommendation is None
    (2, True)
    """
    sources: dict[str, str] = {}
    details = _job_detail(jobs, sources)
    jobs = getattr(jobs, "jobs", jobs)  # an Analysis: its jobs table
    jobs_frame = _frame(jobs, "jobs", None, sources)
    is_recommended = recommendation is None and all(name in jobs_frame.columns for name in RECOMMENDATION.required)
    jobs_frame = (RECOMMENDED_JOBS if is_recommended else JOBS).validate(jobs_frame, source=sources.get("jobs"))
    if jobs_frame.height == 0:
        raise InputError(f"{sources.get('jobs', 'jobs')}: no job; the report needs at least one")
    _check_unique(jobs_frame, sources.get("jobs", "jobs"))
    from ..recommender import Recommendation

    rec_frame = (
        jobs_frame
        if is_recommended
        else _table(_main_table(recommendation, Recommendation), "recommendation", RECOMMENDED_JOBS, sources)
    )
    if rec_frame is not None:
        _check_unique(rec_frame, sources.get("recommendation", "recommendation"))
    if is_recommended and "jobs" in sources:
        sources["recommendation"] = sources["jobs"]
    from ..analyzer import SiteTrace
    from ..replay import RequestReplay, RequestResults, SchedulerComparison, Tuning

    if isinstance(requests, RequestReplay):
        requests = requests.results
    return ReportInputs(
        jobs=jobs_frame,
        recommendation=rec_frame,
        site=_table(_main_table(site, SiteTrace), "site", SITE_REQUESTS, sources),
        tune=_table(_main_table(tune, Tuning), "tune", TUNE_RANKING, sources),
        **_group(replay, REPLAY_PARTS, SchedulerComparison, sources),
        **_group(requests, REQUEST_PARTS, RequestResults, sources),
        validation=_validation(validation, sources),
        **details,
        sources=sources,
    )


def _job_detail(jobs: Any, sources: dict[str, str]) -> dict[str, Any]:
    """The analyzer's tables beside a jobs table file, those that exist (each checked), or an Analysis' tables."""
    from .._results import read_table
    from ..analyzer import Analysis

    if isinstance(jobs, Analysis):
        return {field: getattr(jobs, name) for field, name in DETAIL_PARTS}
    if not isinstance(jobs, str | os.PathLike):
        return {}
    paths, parts = Analysis.paths(jobs), {part.name: part for part in Analysis.PARTS}
    found: dict[str, pl.DataFrame | None] = {}
    for field, name in DETAIL_PARTS:
        if paths[name].is_file():
            found[field] = read_table(paths[name], parts[name].schema, what=parts[name].what)
            sources[field] = str(paths[name])
    return found


def _main_table(given: Any, result: type[Tables]) -> Any:
    """A result's main table read from its file by the result's room (with its path kept for messages)."""
    if not isinstance(given, str | os.PathLike):
        return given
    frame = result.read_tables(given, partial=True)[result.PARTS[0].name]
    assert frame is not None  # a result's main table is never optional
    return _Read(str(given), frame)


@dataclass(frozen=True)
class _Read:
    """A table a room read from ``path`` and checked against its schema."""

    path: str
    frame: pl.DataFrame


def _table(given: Any, name: str, schema: TableSchema, sources: dict[str, str]) -> pl.DataFrame | None:
    """``given`` read (when a path) and validated against ``schema``; None when not given."""
    return None if given is None else _frame(given, name, schema, sources)


def _frame(given: Any, name: str, schema: TableSchema | None, sources: dict[str, str]) -> pl.DataFrame:
    """``given`` read (when a path, its name recorded in ``sources``) and validated against ``schema`` (when given)."""
    if isinstance(given, _Read):  # read and checked by its room, against the same schema
        sources[name] = given.path
        return given.frame
    if isinstance(given, str | os.PathLike):
        sources[name] = str(given)
        strings = {c.name: pl.String for c in (schema or RECOMMENDED_JOBS).columns if c.dtype == pl.String}
        given = read_frame(given, what=f"{name.replace('_', ' ')} table", schema_overrides=strings)
    elif not isinstance(given, pl.DataFrame):
        raise InputError(f"{name}: expected a .parquet or .csv path or a polars DataFrame, got {type(given).__name__}")
    return given if schema is None else schema.validate(given, source=sources.get(name))


def _group(
    given: Any, parts: tuple[tuple[str, str, TableSchema], ...], result: type[Tables], sources: dict[str, str]
) -> dict:
    """The ReportInputs fields of a result's tables: read by its room from a path, a frame, a mapping or an object."""
    if given is None:
        return {}
    if isinstance(given, str | os.PathLike):
        paths = result.paths(given)
        read = result.read_tables(given, partial=True)
        given = {key: None if frame is None else _Read(str(paths[key]), frame) for key, frame in read.items()}
    elif isinstance(given, pl.DataFrame):
        given = {parts[0][1]: given}
    elif not isinstance(given, Mapping):
        given = {key: getattr(given, key) for _, key, _ in parts if hasattr(given, key)}
    return {field: _table(given.get(key), field, schema, sources) for field, key, schema in parts}


def _validation(given: Any, sources: dict[str, str]) -> Validation | None:
    """The validation runs: read and checked by the validate room from a path or a mapping; None when not given."""
    if given is None:
        return None
    from ..validate import Validation, read_validation

    if isinstance(given, Validation):
        return given
    if isinstance(given, str | os.PathLike):
        sources["validation"] = str(given)
        return read_validation(given)
    if isinstance(given, Mapping):
        return Validation.from_dict(given)
    raise InputError(
        f"validation: expected a validation.json path, its JSON mapping or a Validation, got {type(given).__name__}"
    )


def _check_unique(frame: pl.DataFrame, where: str) -> None:
    """Raise InputError when a job_id appears twice in ``frame``."""
    repeated = frame.filter(pl.col("job_id").is_duplicated())["job_id"]
    if repeated.len():
        raise InputError(f"{where}: job_id {repeated[0]!r} appears more than once")

"""The registry of trace formats and the one entry that reads any of them into the requests table."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Literal, overload

import polars as pl

from ..._validation import check_choice
from ...errors import InputError
from ...schemas import REQUESTS
from . import _blkparse, _darshan, _msr, _ops, _spc
from ._base import Ingester, SkipReport
from ._text import first_line

INGESTERS: dict[str, Ingester] = {
    ingester.name: ingester
    for ingester in (  # sniffing tries them in this order
        _darshan.INGESTER,
        _blkparse.INGESTER,
        _ops.INGESTER,
        _msr.INGESTER,
        _spc.INGESTER,
    )
}
"""Every format :func:`ingest` reads, by name."""

BLOCK_FORMATS = ("blkparse", "msr", "spc", "ops")
"""The formats :func:`read_blocktrace` reads."""

_HEAD_BYTES = 4096


def sniff_format(path: str | os.PathLike) -> str:
    """Name the format of a trace file from its suffix, else from its first bytes.

    Examples
    --------
    >>> from importlib import resources
    >>> sniff_format(resources.files("iosets.datasets.data") / "sample.msr.csv")
    'msr'
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    for ingester in INGESTERS.values():
        if path.suffix in ingester.suffixes:
            return ingester.name
    with open(path, "rb") as fh:
        head = fh.read(_HEAD_BYTES)
    for ingester in INGESTERS.values():
        if ingester.sniff is not None and ingester.sniff(head):
            return ingester.name
    raise InputError(
        f"{path}: cannot tell the trace format from its first line {first_line(head)[:80]!r}; "
        f"pass format={'|'.join(repr(name) for name in INGESTERS)}"
    )


@overload
def ingest(
    path: str | os.PathLike,
    *,
    format: str = ...,
    class_by: str | None = ...,
    errors: str = ...,
    return_report: Literal[False] = ...,
) -> pl.DataFrame: ...


@overload
def ingest(
    path: str | os.PathLike,
    *,
    format: str = ...,
    class_by: str | None = ...,
    errors: str = ...,
    return_report: Literal[True],
) -> tuple[pl.DataFrame, SkipReport]: ...


def ingest(
    path: str | os.PathLike,
    *,
    format: str = "auto",
    class_by: str | None = None,
    errors: str = "raise",
    return_report: bool = False,
) -> pl.DataFrame | tuple[pl.DataFrame, SkipReport]:
    """Read a trace of any registered format into the requests table.

    Parameters
    ----------
    path : str or Path
        The trace file.
    format : {'auto', 'darshan', 'blkparse', 'ops', 'msr', 'spc'}, default='auto'
        A name of :data:`INGESTERS`; 'auto' asks :func:`sniff_format`.
    class_by : str, default=None
        What becomes ``job_id``, one of the format's ``class_by`` (None: its first).
        'darshan': 'job'. 'blkparse': 'device' ('8,0') or 'process' ('name:pid' of the
        queueing process). 'msr': 'device' ('host_disk') or 'host'. 'spc': 'device' or 'asu'
        (both the ASU). 'ops': 'device' (the table's own ``job_id``).
    errors : {'raise', 'skip'}, default='raise'
        'raise': the first malformed line (or row) raises ``InputError`` naming the file and
        line. 'skip': malformed lines are left out and a warning says how many.
    return_report : bool, default=False
        Also return the :class:`SkipReport` of the lines left out (empty with 'raise').

    Returns
    -------
    pl.DataFrame, or (pl.DataFrame, SkipReport) with ``return_report``
        The requests table (:data:`iosets.schemas.REQUESTS`): ``job_id``, ``rank``, ``op``, ``offset``,
        ``size``, ``start``, ``end``, ``file``, and the extra columns of a requests table.

    Examples
    --------
    >>> from importlib import resources
    >>> ops = ingest(resources.files("iosets.datasets.data") / "sample.spc.csv")
    >>> ops.columns, ops.height
    (['job_id', 'rank', 'op', 'offset', 'size', 'start', 'end', 'file'], 400)
    """
    check_choice(format, "format", ("auto", *INGESTERS))
    ops, report = _read(Path(path), format, class_by, errors)
    return (ops, report) if return_report else ops


def _read(path: Path, format: str, class_by: str | None, errors: str) -> tuple[pl.DataFrame, SkipReport]:
    """The checked requests table of a trace and the report of the lines left out; warns when it left some."""
    if class_by is not None:
        check_choice(class_by, "class_by", dict.fromkeys(c for i in INGESTERS.values() for c in i.class_by))
    check_choice(errors, "errors", ("raise", "skip"))
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    ingester = INGESTERS[sniff_format(path) if format == "auto" else format]
    class_by = class_by or ingester.class_by[0]
    if class_by not in ingester.class_by:
        raise InputError(
            f"class_by={class_by!r} does not apply to format {ingester.name!r}; "
            f"expected one of {', '.join(ingester.class_by)}"
        )
    report = SkipReport(str(path))
    ops = REQUESTS.validate(ingester.read(path, class_by, errors, report), source=str(path))
    if report.n_skipped:
        warnings.warn(
            f"{path}: skipped {report.n_skipped} malformed lines; first: {report.messages[0]}",
            stacklevel=3,  # the caller of ingest or read_blocktrace
        )
    return ops, report


@overload
def read_blocktrace(
    path: str | os.PathLike,
    *,
    format: str = ...,
    class_by: str = ...,
    errors: str = ...,
    return_report: Literal[False] = ...,
) -> pl.DataFrame: ...


@overload
def read_blocktrace(
    path: str | os.PathLike, *, format: str = ..., class_by: str = ..., errors: str = ..., return_report: Literal[True]
) -> tuple[pl.DataFrame, SkipReport]: ...


def read_blocktrace(
    path: str | os.PathLike,
    *,
    format: str = "auto",
    class_by: str = "device",
    errors: str = "raise",
    return_report: bool = False,
) -> pl.DataFrame | tuple[pl.DataFrame, SkipReport]:
    """Read a block trace (blkparse, MSR, SPC) or a requests table into the requests table.

    :func:`ingest` restricted to :data:`BLOCK_FORMATS`, with the same parameters.

    One row per request, sorted by ``start`` (requests tables keep their order and columns); ``rank``
    is the device (disk number, ASU, or the Linux dev_t ``major << 20 | minor``); ``start`` and
    ``end`` are seconds since the trace's first request (``end`` null for SPC). blkparse: one
    request per completion ``C``, issued at its ``Q`` (else ``D``, else the completion).

    Examples
    --------
    >>> from importlib import resources
    >>> path = resources.files("iosets.datasets.data") / "sample.spc.csv"
    >>> read_blocktrace(path).columns
    ['job_id', 'rank', 'op', 'offset', 'size', 'start', 'end', 'file']
    """
    check_choice(format, "format", ("auto", *BLOCK_FORMATS))
    path = Path(path)
    if format == "auto" and path.is_file():
        format = sniff_format(path)
        if format not in BLOCK_FORMATS:
            raise InputError(f"{path}: a {INGESTERS[format].description}, not a block trace; read it with ingest()")
    ops, report = _read(path, format, class_by, errors)
    return (ops, report) if return_report else ops


def read_requests(path: str | os.PathLike) -> pl.DataFrame:
    """Read a requests table (``.csv`` or ``.parquet``) and check it against :data:`iosets.schemas.REQUESTS`.

    A row that breaks the schema raises ``InputError`` naming the file, the CSV line (or
    Parquet row), the column, the rule and the value; ``end`` and ``file`` are added as
    nulls when absent, extra columns are kept.
    """
    return _read(Path(path), "ops", None, "raise")[0]

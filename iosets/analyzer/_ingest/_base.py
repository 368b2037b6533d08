"""What every ingester shares: its registry record and the report of the lines it left out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from ...schemas import REQUESTS

OPS_COLUMNS = tuple(c.name for c in REQUESTS.columns if c.filled)
"""The columns of every ingested requests table, in schema order (``phase`` only where a source has it)."""


@dataclass
class SkipReport:
    """Malformed records that ``errors="skip"`` left out: their numbers and messages.

    Numbers are 1-based line numbers of text files, or 0-based row numbers of Parquet
    tables (as :meth:`iosets.schemas.TableSchema.validate` counts them).
    """

    path: str
    lines: list[int] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    @property
    def n_skipped(self) -> int:
        """Number of skipped records."""
        return len(self.lines)


Reader = Callable[[Path, str, str, SkipReport], pl.DataFrame]
"""``reader(path, class_by, errors, report) -> requests table``; ``errors="skip"`` records bad lines in ``report``."""


@dataclass(frozen=True)
class Ingester:
    """One trace format: how to recognise a file of it and how to read it into the requests table.

    Parameters
    ----------
    name : str
        The format's name (``format=`` of :func:`ingest`).
    description : str
        One line for help texts.
    read : callable
        ``read(path, class_by, errors, report) -> requests table`` that passes ``REQUESTS.validate``.
    class_by : tuple of str
        What may become ``job_id``; the first is the default.
    suffixes : tuple of str, default=()
        File suffixes that name the format without opening the file.
    sniff : callable, default=None
        ``sniff(head) -> bool``: True when the file's first 4 KiB are this format.
    """

    name: str
    description: str
    read: Reader
    class_by: tuple[str, ...]
    suffixes: tuple[str, ...] = ()
    sniff: Callable[[bytes], bool] | None = None

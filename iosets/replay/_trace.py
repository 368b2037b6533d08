"""Requests tables turned into the arrays the request engine takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import polars as pl

from ..errors import InputError
from ..schemas import REQUESTS, SITE_REQUESTS


class EngineRequests(TypedDict):
    """The requests' arrays and counts under the names the C request engines take them."""

    size: np.ndarray
    offset: np.ndarray
    cls: np.ndarray
    stream: np.ndarray
    server: np.ndarray
    phase: np.ndarray
    op: np.ndarray
    n_classes: int
    n_streams: int
    n_servers: int
    n_phases: int


@dataclass(frozen=True)
class RequestArrays:
    """Requests sorted by arrival, with dense class, stream, server and phase ids.

    Attributes
    ----------
    arrival, size : numpy.ndarray (float64)
    offset : numpy.ndarray (int64)
    cls, stream, server, phase : numpy.ndarray (int32); phase is -1 where unknown
    op : numpy.ndarray (int8), 0 read, 1 write
    classes : numpy.ndarray
        Label of each class id (the values of the ``class_by`` column).
    n_streams, n_servers, n_phases : int
    order : numpy.ndarray (int64)
        Row of the source requests table of each request.
    class_by : str or None
        Column the classes are the values of (``"set"``: the classes are IO-SETS sets); None when they come
        from elsewhere (a mapping).
    no_rank, no_offset : int
        Requests of a site trace standing in for what its source did not record (:meth:`from_site`): with
        rank -1 (one stream per job) and with no offset (each pays the device's seek).
    """

    arrival: np.ndarray
    size: np.ndarray
    offset: np.ndarray
    cls: np.ndarray
    stream: np.ndarray
    server: np.ndarray
    phase: np.ndarray
    op: np.ndarray
    classes: np.ndarray
    n_streams: int
    n_servers: int
    n_phases: int
    order: np.ndarray
    class_by: str | None = None
    no_rank: int = 0
    no_offset: int = 0

    @property
    def n(self) -> int:
        """Number of requests."""
        return self.arrival.size

    def engine_arrays(self) -> EngineRequests:
        """The request arrays and counts by the names ``_engine.replay_requests`` and ``replay_trace`` take
        them (``arrival`` aside: only the open loop takes it)."""
        return {
            "size": self.size,
            "offset": self.offset,
            "cls": self.cls,
            "stream": self.stream,
            "server": self.server,
            "phase": self.phase,
            "op": self.op,
            "n_classes": int(self.classes.size),
            "n_streams": self.n_streams,
            "n_servers": self.n_servers,
            "n_phases": self.n_phases,
        }

    @classmethod
    def from_ops(
        cls,
        ops: pl.DataFrame,
        *,
        class_by: str = "job_id",
        stream_by: str | None = None,
        server_by: str | None = None,
        phase_gap: float | None = None,
    ) -> RequestArrays:
        """Build from a requests table (:data:`iosets.schemas.REQUESTS`).

        Parameters
        ----------
        ops : polars.DataFrame
            Columns job_id, rank, op, offset, size, start (end and file optional).
        class_by : str, default="job_id"
            Column whose values are the scheduler's classes (a set, job, rank, device...).
        stream_by : str, default=None
            Column that defines sequential streams for the seek model and per-file
            queues; ``file`` when present, else ``rank``.
        server_by : str, default=None
            Column naming the server of each request; one server when None.
        phase_gap : float, default=None
            With a ``phase`` column absent, a job's requests start a new I/O phase
            after an idle gap longer than this (s); None leaves phases unknown.
        """
        named = (class_by, stream_by, server_by)
        _check_present(ops, named, table="requests table")
        frame = _check_filled(REQUESTS.validate(ops, source="ops"), named, rows="ops")
        frame = frame.sort("start", maintain_order=True)
        if stream_by is None:  # a request's stream: its file where known, else its rank
            frame = frame.with_columns(
                pl.coalesce(pl.lit("file:") + pl.col("file"), pl.lit("rank:") + pl.col("rank").cast(pl.String)).alias(
                    "_stream"
                )
            )
            stream_by = "_stream"
        if "phase" in frame.columns:
            phase = _dense(frame, ["job_id", "phase"])
        elif phase_gap is not None:
            phase = _phases_by_gap(frame, phase_gap)
        else:
            phase = np.full(frame.height, -1, dtype=np.int32)
        return cls._of(frame, class_by=class_by, stream=_dense(frame, [stream_by]), server_by=server_by, phase=phase)

    @classmethod
    def from_site(
        cls, site_requests: pl.DataFrame, *, class_by: str = "job_id", server_by: str | None = None
    ) -> RequestArrays:
        """Build from a site trace (:data:`iosets.schemas.SITE_REQUESTS`, ``iosets ingest --site``), stand-ins
        included.

        A request synthesised from a job's Darshan HEATMAP bins records neither rank (-1) nor offset
        (null); the request engine then reads them as the closed loop (``replay_trace``) does:

        - stream: the request's file where known, else its job and rank, so that a job's synthesised
          requests are one stream of their own (never another job's);
        - offset: none, so the request continues nothing and the device charges it a seek (one bin's bytes
          in one request: at most one seek per bin, where the recorded requests may have paid many);
        - phase: a request outside every phase (null) is a phase of its own.

        :attr:`no_rank` and :attr:`no_offset` count them.

        Parameters
        ----------
        site_requests : polars.DataFrame
            Columns of :data:`iosets.schemas.SITE_REQUESTS` (``end`` may be null: the open loop does not read it).
        class_by : str, default="job_id"
            Column whose values are the scheduler's classes.
        server_by : str, default=None
            Column naming the server of each request; one server when None.
        """
        named = (class_by, server_by)
        _check_present(site_requests, named, table="site trace")
        frame = SITE_REQUESTS.validate(site_requests, source="site trace")
        frame = _check_filled(frame, named, rows="site trace").sort("start", maintain_order=True)
        by_job = pl.lit("rank:") + pl.col("job_id") + ":" + pl.col("rank").cast(pl.String)
        frame = frame.with_columns(pl.coalesce(pl.lit("file:") + pl.col("file"), by_job).alias("_stream"))
        phase = np.empty(frame.height, dtype=np.int32)
        known = frame["phase"].is_not_null().to_numpy()
        phase[known] = _dense(frame.filter(known), ["job_id", "phase"])
        phase[~known] = int(phase[known].max(initial=-1)) + 1 + np.arange(int((~known).sum()), dtype=np.int32)
        return cls._of(
            frame,
            class_by=class_by,
            stream=_dense(frame, ["_stream"]),
            server_by=server_by,
            phase=phase,
            no_rank=int((frame["rank"] == -1).sum()),
            no_offset=frame["offset"].null_count(),
        )

    @classmethod
    def _of(
        cls,
        frame: pl.DataFrame,
        *,
        class_by: str,
        stream: np.ndarray,
        server_by: str | None,
        phase: np.ndarray,
        no_rank: int = 0,
        no_offset: int = 0,
    ) -> RequestArrays:
        """The arrays of checked rows sorted by start (``_row``: their row in the source)."""
        server = _dense(frame, [server_by]) if server_by else np.zeros(frame.height, np.int32)
        return cls(
            arrival=frame["start"].cast(pl.Float64).to_numpy(),
            size=frame["size"].cast(pl.Float64).to_numpy(),
            offset=frame["offset"].fill_null(-1).cast(pl.Int64).to_numpy(),  # -1 continues no request
            cls=_dense(frame, [class_by]),
            stream=stream,
            server=server,
            phase=phase,
            op=(frame["op"] == "write").cast(pl.Int8).to_numpy(),
            classes=frame[class_by].unique().sort().to_numpy(),
            n_streams=int(stream.max(initial=-1)) + 1,
            n_servers=int(server.max(initial=-1)) + 1,
            n_phases=int(phase.max(initial=-1)) + 1,
            order=frame["_row"].cast(pl.Int64).to_numpy(),
            class_by=class_by,
            no_rank=no_rank,
            no_offset=no_offset,
        )


def _check_present(frame: pl.DataFrame, columns: tuple[str | None, ...], *, table: str) -> None:
    """Raise unless ``frame`` has the ``columns`` that name classes, streams and servers (None: not asked for)."""
    missing = [c for c in columns if c is not None and c not in frame.columns]
    if missing:
        raise InputError(f"{table}: missing columns {missing}; has {frame.columns}")


def _check_filled(frame: pl.DataFrame, columns: tuple[str | None, ...], *, rows: str) -> pl.DataFrame:
    """``frame`` with its row numbers (``_row``), once ``columns`` are known to hold no null."""
    for column in columns:
        if column is not None and frame[column].null_count():
            row = int(frame[column].is_null().arg_true()[0])
            raise InputError(
                f"{rows} row {row}: {column}: expected a value (it names a class, stream or server), got null"
            )
    return frame.with_row_index("_row")


def _dense(frame: pl.DataFrame, columns: list[str]) -> np.ndarray:
    """Dense 0-based ids of the distinct values of ``columns``, in sorted order."""
    if len(columns) == 1:  # a hash lookup among the few distinct values, not a sort of every row
        values = frame[columns[0]]
        distinct = values.unique().sort()
        ids = np.arange(distinct.len(), dtype=np.int32)
        return values.replace_strict(distinct, ids, return_dtype=pl.Int32).cast(pl.Int32).to_numpy()
    return frame.select(pl.struct(columns).rank("dense").cast(pl.Int32) - 1).to_series().to_numpy()


def _phases_by_gap(frame: pl.DataFrame, gap: float) -> np.ndarray:
    """Per job, a new phase after an idle gap longer than ``gap`` between request starts."""
    numbered = (
        frame.select("_row", "job_id", "start")
        .sort("job_id", "start", maintain_order=True)
        .with_columns(
            (pl.col("start").diff().over("job_id").fill_null(0) > gap).cum_sum().over("job_id").alias("_phase")
        )
    )
    keyed = frame.select("_row").join(numbered.select("_row", "job_id", "_phase"), on="_row", how="left")
    return _dense(keyed, ["job_id", "_phase"])

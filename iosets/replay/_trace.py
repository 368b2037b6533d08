"""Requests tables turned into the arrays the request engine takes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import polars as pl

from ..errors import InputError
from ..schemas import REQUESTS


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
        missing = [c for c in (class_by, stream_by, server_by) if c is not None and c not in ops.columns]
        if missing:
            raise InputError(f"requests table: missing columns {missing}; has {ops.columns}")
        frame = REQUESTS.validate(ops, source="ops").with_row_index("_row")
        for column in (class_by, stream_by, server_by):
            if column is not None and frame[column].null_count():
                row = int(frame[column].is_null().arg_true()[0])
                raise InputError(
                    f"ops row {row}: {column}: expected a value (it names a class, stream or server), got null"
                )
        frame = frame.sort("start", maintain_order=True)
        if stream_by is None:  # a request's stream: its file where known, else its rank
            frame = frame.with_columns(
                pl.coalesce(pl.lit("file:") + pl.col("file"), pl.lit("rank:") + pl.col("rank").cast(pl.String)).alias(
                    "_stream"
                )
            )
            stream_by = "_stream"
        classes = frame[class_by].unique().sort()
        if "phase" in frame.columns:
            phase = _dense(frame, ["job_id", "phase"])
        elif phase_gap is not None:
            phase = _phases_by_gap(frame, phase_gap)
        else:
            phase = np.full(frame.height, -1, dtype=np.int32)
        server = _dense(frame, [server_by]) if server_by else np.zeros(frame.height, np.int32)
        stream = _dense(frame, [stream_by])
        return cls(
            arrival=frame["start"].cast(pl.Float64).to_numpy(),
            size=frame["size"].cast(pl.Float64).to_numpy(),
            offset=frame["offset"].cast(pl.Int64).to_numpy(),
            cls=_dense(frame, [class_by]),
            stream=stream,
            server=server,
            phase=phase,
            op=(frame["op"] == "write").cast(pl.Int8).to_numpy(),
            classes=classes.to_numpy(),
            n_streams=int(stream.max(initial=-1)) + 1,
            n_servers=int(server.max(initial=-1)) + 1,
            n_phases=int(phase.max(initial=-1)) + 1,
            order=frame["_row"].cast(pl.Int64).to_numpy(),
        )


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

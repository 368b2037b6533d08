"""Types of the C core, iosets.replay._engine (iosets/replay/src/_engine.c).

Every replay entry takes keyword arguments only, each checked by name: arrays are 1-d
C-contiguous buffers of the dtypes below and of the length their name's rule gives
(n_requests, n_jobs, n_phases, n_classes or the scheduler's parameters); outputs are
preallocated by the caller, writable, and filled in place. A bad argument raises
TypeError (a positional, missing or unknown argument, a wrong dtype or type) or
ValueError (a wrong length, layout or value, a read-only output), its message naming
the argument; an optional array (default None) may be left out. Errors in the data
raise iosets.errors.ReplayError. The engines check for signals every 64 k units of
work: Ctrl-C raises KeyboardInterrupt within milliseconds (the outputs are then
incomplete).
"""

import numpy as np
from numpy.typing import NDArray

from ._device import Device

def replay_phases(
    *,
    release: NDArray[np.float64],
    sets: NDArray[np.int64],
    priority: NDArray[np.float64],
    phase_ptr: NDArray[np.int64],
    t_cpu: NDArray[np.float64],
    io_bytes: NDArray[np.float64],
    bandwidth: float,
    window: tuple[float, float],
    cpu_start: NDArray[np.float64],
    cpu_end: NDArray[np.float64],
    io_start: NDArray[np.float64],
    io_end: NDArray[np.float64],
) -> tuple[int, float, float, float]:
    """Replay a phase-level workload; returns (n_events, utilization, io_slowdown, max_stretch), NaN where undefined."""

def phase_metrics(
    *,
    phase_ptr: NDArray[np.int64],
    io_bytes: NDArray[np.float64],
    cpu_start: NDArray[np.float64],
    cpu_end: NDArray[np.float64],
    io_start: NDArray[np.float64],
    io_end: NDArray[np.float64],
    remaining_begin: NDArray[np.float64],
    remaining_end: NDArray[np.float64],
    bandwidth: float,
    window: tuple[float, float],
) -> tuple[float, float, float]:
    """Window metrics of a phase timeline: (utilization, io_slowdown, max_stretch)."""

def replay_requests(
    *,
    scheduler: str,
    arrival: NDArray[np.float64],
    size: NDArray[np.float64],
    offset: NDArray[np.int64],
    cls: NDArray[np.int32],
    stream: NDArray[np.int32],
    server: NDArray[np.int32],
    phase: NDArray[np.int32],
    op: NDArray[np.int8],
    n_classes: int,
    n_streams: int,
    n_servers: int,
    n_phases: int,
    device: Device,
    weight: NDArray[np.float64],
    reservation: NDArray[np.float64],
    limit: NDArray[np.float64],
    params: NDArray[np.float64],
    dispatch: NDArray[np.float64],
    complete: NDArray[np.float64],
    unit: NDArray[np.int64],
) -> int:
    """Replay a request trace through one scheduler; returns the number of dispatched units."""

def scheduler_params() -> dict[str, list[tuple[str, float, str, str]]]:
    """{scheduler: [(name, default, allowed, doc), ...]} in registry order."""

def replay_trace(
    *,
    scheduler: str,
    size: NDArray[np.float64],
    offset: NDArray[np.int64],
    cls: NDArray[np.int32],
    stream: NDArray[np.int32],
    server: NDArray[np.int32],
    phase: NDArray[np.int32],
    op: NDArray[np.int8],
    n_classes: int,
    n_streams: int,
    n_servers: int,
    n_phases: int,
    gate: NDArray[np.int64],
    think: NDArray[np.float64],
    prev: NDArray[np.int32],
    gap: NDArray[np.float64],
    job: NDArray[np.int32],
    first: NDArray[np.int64] | None = None,
    client_rate: NDArray[np.float64] | None = None,
    device: Device,
    weight: NDArray[np.float64],
    reservation: NDArray[np.float64],
    limit: NDArray[np.float64],
    params: NDArray[np.float64],
    release: NDArray[np.float64],
    dispatch: NDArray[np.float64],
    complete: NDArray[np.float64],
    unit: NDArray[np.int64],
    phase_start: NDArray[np.float64],
    phase_end: NDArray[np.float64],
    served: NDArray[np.float64] | None = None,
) -> int:
    """Replay request chains in a closed loop through one scheduler; returns the number of dispatched units.

    ``first`` (each part's first part) splits requests into parts, ``client_rate`` (bytes/s per job label)
    limits each job's client link; ``served`` is filled with each request's service-slot date.
    """

def chain_gates(
    *,
    group: NDArray[np.int32],
    n_groups: int,
    start: NDArray[np.float64],
    end: NDArray[np.float64],
    gate: NDArray[np.int64],
) -> None:
    """The closed loop's gates of recorded requests in start order: the request of the group depth requests earlier."""

"""The device model of the request-level engine, and its JSON file."""

import json
import os
from dataclasses import asdict, dataclass, fields
from typing import Any

from .._validation import check_count, check_positive
from ..errors import InputError

MAX_QUEUE_DEPTH = 2**31 - 1
"""The engine counts outstanding units in 32 bits."""

MAX_CONCURRENCY = 65536
"""Service slots of a target (the engine keeps the last ``concurrency`` completions of each target)."""

MAX_TARGETS = 65536
"""Storage targets of a device (the alone replay gives each job its own copy of them)."""

_INTEGER_BOUNDS = {
    "queue_depth": MAX_QUEUE_DEPTH,
    "targets": MAX_TARGETS,
    "concurrency": MAX_CONCURRENCY,
    "stripe_size": 2**63 - 1,
    "stripe_count": 2**31 - 1,
    "ranks_per_node": 2**31 - 1,
}
"""The integer fields and their largest value (all are >= 1)."""

_STORAGE_FIELDS = (
    "targets",
    "concurrency",
    "stripe_size",
    "stripe_count",
    "client_bandwidth",
    "ranks_per_node",
    "rate",
    "burst",
    "slice",
)
"""The fields of the parallel storage model and its token buckets, after the one-device model's five."""


DEVICE_UNITS = {
    "bandwidth": ("bandwidth", 1e-6, " MB/s"),
    "overhead": ("overhead", 1e6, " us"),
    "seek": ("seek", 1e3, " ms"),
    "queue_depth": ("queue depth", 1, ""),
    "iops": ("iops", 1, " /s"),
    "targets": ("targets", 1, ""),
    "concurrency": ("concurrency", 1, ""),
    "stripe_size": ("stripe size", 2**-20, " MiB"),
    "stripe_count": ("stripe count", 1, ""),
    "client_bandwidth": ("client bandwidth", 1e-6, " MB/s"),
    "ranks_per_node": ("ranks per node", 1, ""),
    "rate": ("rate", 1e-6, " MB/s"),
    "burst": ("burst", 1e-6, " MB"),
    "slice": ("slice", 1e3, " ms"),
}
"""Per Device field: its label, the factor to its unit, and the unit (a count has none)."""


@dataclass(frozen=True)
class Device:
    """The storage model of the request engine: ``targets`` storage targets (a Lustre OST each).

    A target serves the units (single or aggregated requests) it was given in dispatch
    order with ``concurrency`` service slots: overheads and seeks of up to ``concurrency``
    units overlap, their bytes go through the target's bandwidth one unit after the other.
    A target always accepts ``concurrency`` units; ``queue_depth`` is the scheduler's
    window beyond that, so a deeper queue leaves the scheduler less control. Files are
    striped over the targets (``stripe_size``, ``stripe_count``) and a request split at
    stripe boundaries completes when its last part does; a job's requests leave its
    nodes no faster than ``client_bandwidth`` per node. With ``rate`` > 0 a target is
    rate-limited by a token bucket (blk-throttle, Lustre's TBF): it moves ``burst`` bytes
    at its bandwidth after idling, then ``rate`` bytes/s on average; a unit starts once
    the bucket holds its bytes. With ``slice`` > 0 the budget comes per slice, as Linux's
    blk-throttle grants it: ``rate`` x ``slice`` bytes for the slice a unit that finds the
    target idle opens, as much more at each slice boundary, and a unit beyond the budget
    waits for the boundary. Bandwidth, overhead, seek, queue_depth, concurrency,
    rate, burst and slice are per target. ``Device()`` is one target serving one unit at a time.

    Parameters
    ----------
    queue_depth : int, default=1
        The scheduler's window: units in service or queued at a target at once, 1 to
        2^31 - 1; a target always accepts ``concurrency``, so the window is
        max(queue_depth, concurrency).
    bandwidth : float, default=1e9
        Bytes per second, per target.
    overhead : float, default=5e-5
        Seconds per unit (per-request cost, paid once by an aggregated unit), per target.
    seek : float, default=2e-3
        Seconds added when a unit does not continue the previous one of its target on the same stream.
    iops : float, default=0.0
        If > 0, fixed-IOPS mode: every unit costs 1 / iops, whatever its size
        (the IOPS examples of the RBFQ paper); units then follow each other, whatever the concurrency.
    targets : int, default=1
        Storage targets, 1 to 65536: the trace replay's servers (the request replay takes its
        servers from ``server_by``). Striping and the client link are the trace replay's too.
    concurrency : int, default=1
        Units a target serves at once, 1 to 65536.
    stripe_size : int, default=1048576
        Bytes per stripe: the site default for files the trace has no layout for.
    stripe_count : int, default=1
        Targets a file is striped over (at most ``targets``): the site default.
    client_bandwidth : float, default=0.0
        Bytes per second one client node's link carries; 0: no client limit.
    ranks_per_node : int, default=1
        Ranks per client node: a job's nodes are ceil(its distinct ranks in the trace / ranks_per_node).
    rate : float, default=0.0
        Bytes per second a target moves on average (its token bucket's refill); 0: no limit, its bandwidth only.
    burst : float, default=0.0
        Bytes a target's bucket holds, full at the start: what it moves at its bandwidth after idling.
        With ``rate`` > 0 and burst 0, every byte waits for its token (a plain rate limit).
    slice : float, default=0.0
        Seconds: with ``rate`` > 0, the budget ``rate`` x ``slice`` comes at slice boundaries (blk-throttle's
        100 ms slice), not continuously; ``burst`` must then be 0. 0: the continuous bucket.
    """

    queue_depth: int = 1
    bandwidth: float = 1e9
    overhead: float = 5e-5
    seek: float = 2e-3
    iops: float = 0.0
    targets: int = 1
    concurrency: int = 1
    stripe_size: int = 1048576
    stripe_count: int = 1
    client_bandwidth: float = 0.0
    ranks_per_node: int = 1
    rate: float = 0.0
    burst: float = 0.0
    slice: float = 0.0

    def __post_init__(self):
        for name, largest in _INTEGER_BOUNDS.items():
            check_count(getattr(self, name), f"device {name}", minimum=1, maximum=largest)
        check_positive(self.bandwidth, "device bandwidth")
        check_positive(self.overhead, "device overhead", strict=False)
        check_positive(self.seek, "device seek", strict=False)
        check_positive(self.iops, "device iops", strict=False)
        check_positive(self.client_bandwidth, "device client_bandwidth", strict=False)
        check_positive(self.rate, "device rate", strict=False)
        check_positive(self.burst, "device burst", strict=False)
        check_positive(self.slice, "device slice", strict=False)
        if self.slice > 0 and not (self.rate > 0 and self.burst == 0):
            raise InputError(
                f"device slice: a slice ({self.slice:g} s) grants rate x slice bytes per slice, so it needs a rate "
                f"> 0 and burst 0, got rate {self.rate:g} and burst {self.burst:g}"
            )

    @classmethod
    def from_strings(cls, items: list[str]) -> "Device":
        """Build from ``key=value`` strings (the CLI's ``--device``)."""
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or key not in known:
                raise InputError(f"--device: expected key=value with key in {', '.join(known)}, got {item!r}")
            integer = key in _INTEGER_BOUNDS
            try:
                values[key] = int(value) if integer else float(value)
            except ValueError:
                expected = "an integer" if integer else "a number"
                raise InputError(f"--device {key}: expected {expected}, got {value!r}") from None
        return cls(**values)

    def describe(self) -> str:
        """Every field of the device's file (:meth:`to_dict`: the storage model's where they differ from their
        defaults) with its unit, in the order of :data:`DEVICE_UNITS`.

        Examples
        --------
        >>> Device(bandwidth=2.5e9, overhead=4e-5, seek=0.0).describe()
        'bandwidth 2500 MB/s, overhead 40 us, seek 0 ms, queue depth 1, iops 0 /s'
        >>> Device(targets=4, rate=2e8, burst=2e7).describe().partition("iops 0 /s, ")[2]
        'targets 4, rate 200 MB/s, burst 20 MB'
        """
        values = self.to_dict()
        return ", ".join(
            f"{label} {values[name] * factor:.4g}{unit}"
            for name, (label, factor, unit) in DEVICE_UNITS.items()
            if name in values
        )

    def to_dict(self) -> dict:
        """The parameters as a dict: the first five always, the storage model's (``targets`` on) where they
        differ from their defaults, so that a one-target device writes the file it wrote before them."""
        default = Device()
        return {
            name: value
            for name, value in asdict(self).items()
            if name not in _STORAGE_FIELDS or value != getattr(default, name)
        }

    @classmethod
    def from_dict(cls, values: dict, *, source: str = "device") -> "Device":
        """Build from :meth:`to_dict`'s dict; missing keys take their defaults, unknown keys are an error."""
        if not isinstance(values, dict):
            raise InputError(f"{source}: expected an object of device parameters, got {type(values).__name__}")
        known = {f.name for f in fields(cls)}
        for key, value in values.items():
            if key not in known:
                raise InputError(f"{source}: unknown field {key!r}; expected some of {', '.join(sorted(known))}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"{source}: {key}: expected a number, got {value!r}")
        try:
            return cls(**values)
        except InputError as error:
            raise InputError(f"{source}: {error}") from None


def read_device(path: str | os.PathLike) -> Device:
    """Read a device saved as ``json.dumps(device.to_dict())`` (``iosets calibrate -o``).

    Examples
    --------
    >>> import json, tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    ...     _ = f.write(json.dumps({"bandwidth": 2e9, "seek": 0.0}))
    >>> read_device(f.name).bandwidth
    2000000000.0
    """
    try:
        with open(path, encoding="utf-8") as handle:
            values = json.load(handle)
    except OSError as error:
        raise InputError(f"{path}: cannot read the device: {error.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a device JSON file: {error}") from None
    return Device.from_dict(values, source=str(path))

"""The device model of the request-level engine, and its JSON file."""

import json
import os
from dataclasses import asdict, dataclass, fields
from numbers import Integral
from typing import Any

from .._validation import check_positive
from ..errors import InputError

MAX_QUEUE_DEPTH = 2**31 - 1
"""The engine counts outstanding units in 32 bits."""


@dataclass(frozen=True)
class Device:
    """A storage device behind each server.

    The device serves the units (single or aggregated requests) it was given in
    dispatch order, one at a time; the scheduler may keep up to ``queue_depth``
    units outstanding at the device, so a deeper queue leaves it less control.

    Parameters
    ----------
    queue_depth : int, default=1
        Units in service or queued at the device at once, 1 to 2^31 - 1.
    bandwidth : float, default=1e9
        Bytes per second.
    overhead : float, default=5e-5
        Seconds per unit (per-request cost, paid once by an aggregated unit).
    seek : float, default=2e-3
        Seconds added when a unit does not continue the previous one on the same stream.
    iops : float, default=0.0
        If > 0, fixed-IOPS mode: every unit costs 1 / iops, whatever its size
        (the IOPS examples of the RBFQ paper).
    """

    queue_depth: int = 1
    bandwidth: float = 1e9
    overhead: float = 5e-5
    seek: float = 2e-3
    iops: float = 0.0

    def __post_init__(self):
        depth = self.queue_depth
        if isinstance(depth, bool) or not isinstance(depth, Integral) or not 1 <= depth <= MAX_QUEUE_DEPTH:
            raise InputError(f"device queue_depth must be an integer in [1, {MAX_QUEUE_DEPTH}], got {depth!r}")
        check_positive(self.bandwidth, "device bandwidth")
        check_positive(self.overhead, "device overhead", strict=False)
        check_positive(self.seek, "device seek", strict=False)
        check_positive(self.iops, "device iops", strict=False)

    @classmethod
    def from_strings(cls, items: list[str]) -> "Device":
        """Build from ``key=value`` strings (the CLI's ``--device``)."""
        known = {f.name: f.type for f in fields(cls)}
        values: dict[str, Any] = {}
        for item in items:
            key, sep, value = item.partition("=")
            if not sep or key not in known:
                raise InputError(f"--device: expected key=value with key in {', '.join(known)}, got {item!r}")
            try:
                values[key] = int(value) if key == "queue_depth" else float(value)
            except ValueError:
                raise InputError(f"--device {key}: expected a number, got {value!r}") from None
        return cls(**values)

    def to_dict(self) -> dict:
        """The parameters as a dict."""
        return asdict(self)

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

"""One-line texts of the replay room's results: a device with its units, a fraction in per cent."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..replay import Device

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
}
"""Per Device field: its label, the factor to its unit, and the unit (a count has none)."""


def describe_device(device: Device) -> str:
    """Every field of ``device``'s file (:meth:`Device.to_dict`: the storage model's where they differ
    from their defaults) with its unit, in the order of :data:`DEVICE_UNITS`.

    Examples
    --------
    >>> from iosets.replay import Device
    >>> describe_device(Device(bandwidth=2.5e9, overhead=4e-5, seek=0.0))
    'bandwidth 2500 MB/s, overhead 40 us, seek 0 ms, queue depth 1, iops 0 /s'
    >>> describe_device(Device(targets=4, rate=2e8, burst=2e7)).partition("iops 0 /s, ")[2]
    'targets 4, rate 200 MB/s, burst 20 MB'
    """
    values = device.to_dict()
    parts = []
    for name, (label, factor, unit) in DEVICE_UNITS.items():
        if name in values:
            parts.append(f"{label} {values[name] * factor:.4g}{unit}")
    return ", ".join(parts)


def percent(value: float | None) -> str:
    """A fraction in per cent as the project writes it (``"4.9 %"``); ``"undefined"`` for None or NaN.

    Examples
    --------
    >>> percent(0.049), percent(0.25), percent(float("nan"))
    ('4.9 %', '25 %', 'undefined')
    """
    if value is None or not math.isfinite(value):
        return "undefined"
    return f"{value * 100:.3g} %"
